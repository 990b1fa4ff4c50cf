"""The vectorized engine's static steps (a done client masked, not dropped) and their CUDA-graph capture."""
import functools

import numpy as np
import pandas as pd
import pytest
import torch
from test_run import client_results, digits_config, results
from torch import nn

import fedkit.engine.engines as engines
from fedkit import ConfigError, run
from fedkit.algorithms import FedAvg, Settings, make_algorithm
from fedkit.engine import ENGINES, ClientInput, FlatModel, SequentialEngine, VectorizedEngine, make_plan
from fedkit.models import build_model
from fedkit.optim import SGD

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("algorithm,args", [("fedavg", {}), ("fedprox", {"mu": 0.1}), ("scaffold", {}),
                                            ("feddual", {})])
def test_static_steps_give_the_history_of_the_shrinking_stack(algorithm, args, monkeypatch):
    """Every client its own K_i (local_epochs), so clients finish at different steps and are masked; FedDUAL runs
    its epoch_start hook between static steps."""
    cfg = digits_config(algorithm=algorithm, algorithm_args=args, local_steps=None, local_epochs=1,
                        engine="vectorized")
    shrinking = run(cfg, cache=False, progress=False)
    monkeypatch.setitem(ENGINES, "vectorized", functools.partial(VectorizedEngine, static=True))
    static = run(cfg, cache=False, progress=False)
    assert shrinking.clients["steps"].nunique() > 1
    pd.testing.assert_frame_equal(results(shrinking), results(static), rtol=1e-5, atol=1e-6)
    pd.testing.assert_frame_equal(client_results(shrinking), client_results(static), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(shrinking.weights.numpy(), static.weights.numpy(), rtol=1e-5, atol=1e-6)


def cnn_round(device, lr=0.05, seed=0):
    """A round of the NIID-Bench CNN for 3 clients of 2, 3 and 4 steps (momentum: a done client's state must
    stay put, not decay), on random 28×28 data."""
    torch.manual_seed(seed)
    fm = FlatModel(build_model("cnn", (1, 28, 28), 10).to(device))
    g = torch.Generator().manual_seed(4)
    x, y = torch.rand(90, 1, 28, 28, generator=g).to(device), torch.randint(0, 10, (90,), generator=g).to(device)
    parts = [np.arange(0, 20), np.arange(20, 50), np.arange(50, 90)]
    rng = np.random.default_rng(seed)
    plans = [make_plan(i, parts[i], 8, steps, rng) for i, steps in enumerate([2, 3, 4])]
    clients = ClientInput(fm.flat().expand(3, -1), {}, {}, torch.tensor([2.0, 3.0, 4.0], device=device), lr, 1)
    make = lambda: make_algorithm("fedavg", Settings(optimizer=SGD(lr=lr, momentum=0.9)))  # noqa: E731
    return fm, x, y, plans, clients, make


def test_static_steps_equal_the_sequential_engine_on_the_cnn():
    fm, x, y, plans, clients, make = cnn_round(torch.device("cpu"))
    static = VectorizedEngine(fm, make(), "classification", x, y, static=True).train(clients, plans, {})
    alone = SequentialEngine(fm, make(), "classification", x, y).train(clients, plans, {})
    torch.testing.assert_close(static.uploads["delta"], alone.uploads["delta"], rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(static.train_loss, alone.train_loss, rtol=1e-5, atol=1e-6)


def test_cuda_graphs_are_off_on_a_cpu_and_refused_there():
    x, y = torch.randn(10, 4), torch.randint(0, 2, (10,))
    fm = FlatModel(nn.Sequential(nn.Linear(4, 2)))
    engine = VectorizedEngine(fm, make_algorithm("fedavg"), "classification", x, y)
    assert not engine.cuda_graphs and not engine.static
    with pytest.raises(ConfigError, match="CUDA"):
        VectorizedEngine(fm, make_algorithm("fedavg"), "classification", x, y, cuda_graphs=True)


def test_the_cpu_engine_keeps_freed_memory_for_the_next_step():
    """Set once per process where the C library is glibc (returns False elsewhere, where nothing is changed, and
    with FEDKIT_KEEP_FREED_MEMORY=0)."""
    import os
    import platform

    glibc = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert engines.keep_freed_memory() is (glibc and os.environ.get("FEDKIT_KEEP_FREED_MEMORY") != "0")


class Uncapturable(FedAvg):
    """A local step that copies a host tensor to the device (from pageable memory: a synchronisation, which a
    capture refuses); it runs eagerly."""

    def local_step(self, w, local, c, grad_at):
        g, loss = grad_at(w)
        return w - c.lr * g * torch.tensor(1.0).to(w.device), local, loss


class ReplayedEagerly:
    """Stands in for a CUDA graph on a CPU: "captures" the static step and runs it on its own buffers at every
    replay, so the engine's handling of the captured state (loading a round, epoch_start between replays,
    reusing the graph in the next round) is tested without a GPU."""

    def __init__(self, step, state, inputs, key):
        from types import SimpleNamespace

        self.key, self.state, self.inputs = key, [t.clone() for t in state], [t.clone() for t in inputs]

        def replay():
            for buffer, t in zip(self.state, step(self.state, self.inputs)):
                buffer.copy_(t)
        self.graph = SimpleNamespace(replay=replay)

    load = engines._CapturedStep.load
    replay = engines._CapturedStep.replay


@pytest.mark.parametrize("algorithm", ["fedavg", "feddual"])
def test_the_captured_state_is_handled_like_the_eager_one(algorithm, monkeypatch):
    """With the capture replaced by an eager stand-in (no GPU here), the engine's replay path gives the eager
    static path's round, twice (the second round replays the kept graph from its first step), FedDUAL's
    epoch_start hook changing the local state between replays."""
    monkeypatch.setattr(engines, "_CapturedStep", ReplayedEagerly)
    fm, x, y, plans, clients, make = cnn_round(torch.device("cpu"))
    if algorithm == "feddual":
        from fedkit.optim import Adam

        make = lambda: make_algorithm("feddual", Settings(optimizer=Adam(lr=0.01), layout=fm.layout))  # noqa: E731
    replayed = VectorizedEngine(fm, make(), "classification", x, y, static=True)
    replayed.cuda_graphs = True
    eager = VectorizedEngine(fm, make(), "classification", x, y, static=True)
    for round_ in range(2):
        a, b = replayed.train(clients, plans, {}), eager.train(clients, plans, {})
        assert replayed.graph_error is None and replayed.replays == (3 if round_ == 0 else 7)
        for key in b.uploads:
            torch.testing.assert_close(a.uploads[key], b.uploads[key], rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(a.train_loss, b.train_loss)
        clients = clients._replace(w0=clients.w0 + a.uploads["delta"].mean(0))


def test_a_captured_step_is_kept_for_the_next_round_unless_it_may_read_the_round(monkeypatch):
    """A new round t is captured anew, unless the program says its local_step does not read t."""
    monkeypatch.setattr(engines, "_CapturedStep", ReplayedEagerly)
    fm, x, y, plans, clients, make = cnn_round(torch.device("cpu"))
    for reads, kept in ((True, False), (False, True)):
        program = make()
        if not reads:
            program.reads_round_in_step = False
        engine = VectorizedEngine(fm, program, "classification", x, y, static=True)
        engine.cuda_graphs = True
        engine.train(clients, plans, {})
        first = engine.graph
        engine.train(clients._replace(t=2), plans, {})
        assert (engine.graph is first) is kept and engine.replays == (3 + 4 if kept else 3 + 3)


@cuda
def test_a_captured_step_equals_the_eager_static_and_shrinking_steps():
    """On CUDA the static step is captured after the round's first step and replayed; the next round of the same
    shapes and η_l replays the same graph from its first step. A step the capture refuses runs eagerly."""
    device = torch.device("cuda")
    fm, x, y, plans, clients, make = cnn_round(device)
    graphed = VectorizedEngine(fm, make(), "classification", x, y)
    assert graphed.cuda_graphs and graphed.static
    eager_static = VectorizedEngine(fm, make(), "classification", x, y, cuda_graphs=False, static=True)
    shrinking = VectorizedEngine(fm, make(), "classification", x, y, cuda_graphs=False, static=False)
    alone = SequentialEngine(fm, make(), "classification", x, y)
    for round_ in range(2):
        replays = graphed.replays
        a = graphed.train(clients, plans, {})
        assert graphed.graph_error is None
        assert graphed.replays - replays == (3 if round_ == 0 else 4)  # round 1: the first step warms up
        b = eager_static.train(clients, plans, {})
        c = shrinking.train(clients, plans, {})
        d = alone.train(clients, plans, {})
        torch.testing.assert_close(a.uploads["delta"], b.uploads["delta"], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(a.train_loss, b.train_loss, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(a.uploads["delta"], c.uploads["delta"], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(a.uploads["delta"], d.uploads["delta"], rtol=1e-4, atol=1e-5)
        clients = clients._replace(w0=clients.w0 + a.uploads["delta"].mean(0))

    _, x, y, plans, clients, _ = cnn_round(device)
    refused = VectorizedEngine(fm, Uncapturable(Settings(optimizer=SGD(lr=0.05))), "classification", x, y)
    out = refused.train(clients, plans, {})
    assert refused.graph_error is not None and refused.replays == 0
    expected = SequentialEngine(fm, Uncapturable(Settings(optimizer=SGD(lr=0.05))), "classification", x, y)
    torch.testing.assert_close(out.uploads["delta"], expected.train(clients, plans, {}).uploads["delta"],
                               rtol=1e-4, atol=1e-5)


@cuda
def test_a_new_learning_rate_is_captured_anew():
    device = torch.device("cuda")
    fm, x, y, plans, clients, make = cnn_round(device)
    engine = VectorizedEngine(fm, make(), "classification", x, y)
    engine.train(clients, plans, {})
    first = engine.graph
    engine.train(clients._replace(lr=0.01), plans, {})
    assert engine.graph is not first and engine.graph_error is None
