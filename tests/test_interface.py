"""The v2 hooks, each shown working by a toy algorithm on the quadratic federation or a tiny network:
a batch- and feature-aware objective, client state kept between rounds, a per-client start with local BatchNorm,
layout selections, a server step on root data, the simulated clock, learning-rate schedules and the tailored
wrapper. Expected values are hand-written recursions or plain PyTorch loops."""
import copy
from typing import Annotated

import numpy as np
import pytest
import torch
from test_algorithms import W0, client_problem, final_weights, local_gd, toy_config
from torch import nn

from fedkit import Config, ConfigError, run
from fedkit.algorithms import ALGORITHMS, Algorithm
from fedkit.federation import Federation
from fedkit.layout import Layout
from fedkit.models import MODELS, build_model

ENGINES = ["sequential", "vectorized"]


def register(monkeypatch, cls):
    monkeypatch.setitem(ALGORITHMS, cls.name, cls)


def tiny(input_shape, num_classes, norm: bool = False):
    """Flatten → 8 units (→ BatchNorm) → tanh → output layer."""
    width = int(np.prod(input_shape))
    return nn.Sequential(nn.Flatten(), nn.Linear(width, 8), *([nn.BatchNorm1d(8)] if norm else []), nn.Tanh(),
                         nn.Linear(8, num_classes))


@pytest.fixture(autouse=True)
def tiny_model(monkeypatch):
    monkeypatch.setitem(MODELS, "tiny", tiny)


# ---- a local objective that sees the batch and the model's features
class FeaturePull(Algorithm):
    """Data loss + (ρ/2)·mean_b ‖φ(x_b; w) − φ(x_b; w0)‖²: φ is the input of the output layer (MOON-like)."""

    name = "toy-features"
    needs_features = True

    def __init__(self, run, rho: float = 0.5):
        super().__init__(run)
        self.rho = rho

    def objective(self, data, w, c, batch):
        _, anchor = batch.model(c.w0)
        return data + 0.5 * self.rho * batch.mean(((batch.features - anchor) ** 2).sum(1))


@pytest.mark.parametrize("engine", ENGINES)
def test_feature_objective_matches_a_plain_pytorch_loop(monkeypatch, engine):
    register(monkeypatch, FeaturePull)
    cfg = Config(dataset="digits", partition="iid", partition_args={}, num_clients=2, model="tiny",
                 algorithm="toy-features", algorithm_args={"rho": 0.5}, rounds=1,
                 local_steps=3, batch_size=16, lr=0.2, engine=engine)
    fed = Federation(cfg)
    rnd = next(fed.rounds())
    for j, plan in enumerate(rnd.plans):
        net, anchor = copy.deepcopy(fed.fm.module), copy.deepcopy(fed.fm.module)
        opt = torch.optim.SGD(net.parameters(), lr=0.2)
        for k in range(plan.steps):
            rows = plan.indices[k][plan.mask[k] > 0]
            x, y = fed.x_train[rows], fed.y_train[rows]
            phi, phi0 = net[:-1](x), anchor[:-1](x).detach()
            loss = nn.functional.cross_entropy(net[-1](phi), y) + 0.25 * ((phi - phi0) ** 2).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        expected = torch.cat([p.detach().reshape(-1) for p in net.parameters()]) - fed.fm.flat()
        torch.testing.assert_close(rnd.uploads["delta"][j], expected, rtol=1e-4, atol=1e-6)


# ---- client state kept between a client's rounds (not traffic)
class KeptMomentum(Algorithm):
    """Local heavy ball whose momentum m_i survives the client's rounds: m ← β m + g, w ← w − η m."""

    name = "toy-kept-momentum"

    def __init__(self, run, beta: float = 0.5):
        super().__init__(run)
        self.beta = beta

    def client_init(self, w0):
        return {"m": torch.zeros_like(w0), "visits": w0.new_zeros(())}

    def local_init(self, c):
        return c.w0, {"m": c.kept["m"]}

    def local_step(self, w, local, c, grad_at):
        g, loss = grad_at(w)
        m = self.beta * local["m"] + g
        return w - c.lr * m, {"m": m}, loss

    def keep(self, w, local, c):
        return {"m": local["m"], "visits": c.kept["visits"] + 1}


@pytest.mark.parametrize("engine", ENGINES)
def test_kept_state_survives_between_a_clients_rounds_and_is_not_uploaded(monkeypatch, engine):
    register(monkeypatch, KeptMomentum)
    cfg = toy_config(engine=engine, algorithm="toy-kept-momentum", clients_per_round=2, rounds=4)
    b, a, sampled = client_problem(cfg)
    w, m = np.array(W0), np.zeros((4, 2))
    for clients in sampled:
        deltas = []
        for i in clients:
            y = w.copy()
            for _ in range(3):
                m[i] = 0.5 * m[i] + a[i] @ (y - b[i])
                y = y - 0.15 * m[i]
            deltas.append(y - w)
        w = w + np.mean(deltas, axis=0)
    fed = Federation(cfg)
    rounds = list(fed.rounds())
    s = rounds[-1].after
    np.testing.assert_allclose(s.w.double().numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.kept["m"].double().numpy(), m, rtol=1e-5, atol=1e-6)
    visits = np.bincount(np.concatenate(sampled), minlength=4)
    np.testing.assert_array_equal(s.kept["visits"].numpy(), visits)
    assert all(rnd.uploads.keys() == {"delta"} for rnd in rounds)  # kept state is not traffic
    h = run(cfg, cache=False, progress=False)
    assert (h.clients["bytes_up"] == 4 * 2).all()


# ---- a per-client start model and BatchNorm kept local (FedBN-like)
class LocalNorm(Algorithm):
    """FedBN-like toy: BatchNorm affine parameters and statistics stay with each client; the rest is FedAvg."""

    name = "toy-local-norm"
    buffers = "local"

    def init(self, w0, layout):
        self.norm = layout.mask("batchnorm", w0.device)
        return {}

    def client_init(self, w0):
        return {"own": w0.clone()}

    def local_init(self, c):
        w = torch.where(self.norm, c.kept["own"], c.w0)  # global shared layers, the client's own BatchNorm
        return w, self.optimizer.init(w)

    def keep(self, w, local, c):
        return {"own": w}

    def aggregate(self, w, state, ups, rnd):
        mean = self.weights(rnd.sizes) @ ups["delta"]
        return w + torch.where(self.norm, torch.zeros_like(mean), mean), state, {}


def test_local_batchnorm_start_and_statistics_follow_each_client(monkeypatch):
    register(monkeypatch, LocalNorm)
    cfg = Config(dataset="digits", partition="iid", partition_args={}, num_clients=2, model="tiny",
                 model_args={"norm": True},
                 algorithm="toy-local-norm", rounds=2, local_steps=3, batch_size=16, lr=0.2, engine="sequential")
    fed = Federation(cfg)
    norm = fed.fm.layout.mask("batchnorm")
    nets = [copy.deepcopy(fed.fm.module).train() for _ in range(2)]  # each client's own network in plain PyTorch
    s = fed.initial()
    for rnd in fed.rounds(s):
        w_global = rnd.after.w_prev
        for j, plan in enumerate(rnd.plans):
            net = nets[rnd.clients[j]]
            own = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
            start = torch.where(norm, own, w_global)
            torch.nn.utils.vector_to_parameters(start, net.parameters())
            opt = torch.optim.SGD(net.parameters(), lr=0.2)
            for k in range(plan.steps):
                rows = plan.indices[k][plan.mask[k] > 0]
                opt.zero_grad()
                nn.functional.cross_entropy(net(fed.x_train[rows]), fed.y_train[rows]).backward()
                opt.step()
        s = rnd.after
    for i, net in enumerate(nets):
        trained = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        torch.testing.assert_close(s.kept["own"][i][norm], trained[norm], rtol=1e-5, atol=1e-6)
        for name, value in net.named_buffers():
            if value.is_floating_point():
                torch.testing.assert_close(s.buffers[name][i], value, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(s.w[norm], fed.fm.flat()[norm])  # the server never moves BatchNorm


# ---- layout selections
def test_layout_selects_tensors_by_position_type_and_name():
    layout = Layout(build_model("cnn", (1, 28, 28), 10))
    names = lambda spec: [t.name for t in layout.select(spec)]  # noqa: E731
    assert names("output") == ["classifier.4.weight", "classifier.4.bias"]
    assert names("head") == [f"classifier.{i}.{p}" for i in (0, 2, 4) for p in ("weight", "bias")]
    assert names("last:2") == ["classifier.2.weight", "classifier.2.bias", "classifier.4.weight", "classifier.4.bias"]
    assert names(["features.0.*", "output"]) == ["features.0.weight", "features.0.bias", "classifier.4.weight",
                                                 "classifier.4.bias"]
    assert int(layout.mask("output").sum()) == 84 * 10 + 10 and layout.mask("all").all()
    assert layout.mask("output")[-850:].all() and not layout.mask("output")[:-850].any()  # flat order
    resnet = Layout(build_model("resnet18", (3, 32, 32), 10))
    norms = [t.name for t in resnet.select("batchnorm")]  # by module type: shortcut BatchNorms have no "bn" in name
    assert len(norms) == 40 and "blocks.2.shortcut.1.weight" in norms and not any("bn" in n for n in norms)
    assert all(t.kind is nn.BatchNorm2d for t in resnet.select("batchnorm"))
    with pytest.raises(ConfigError, match="'fc9.*' matches no parameter tensor"):
        layout.select("fc9.*")
    with pytest.raises(ConfigError, match="last:N"):
        layout.select("last:0")


# ---- a server step on root data
class RootOnly(Algorithm):
    """The server ignores the clients and applies its own update on its root data (FLTrust's g_0 in isolation)."""

    name = "toy-root"
    root_samples = 1

    def aggregate(self, w, state, ups, rnd):
        return w + rnd.root_delta, state, {}


def test_the_server_trains_on_its_root_data_with_the_clients_procedure(monkeypatch):
    register(monkeypatch, RootOnly)
    cfg = toy_config(algorithm="toy-root", rounds=2)
    fed = Federation(cfg)
    row = fed.x_train[fed.root[0]].double().numpy()  # the root sample is one client's problem [b, vec(A)]
    b, a = row[:2], row[2:].reshape(2, 2)
    w = np.array(W0)
    for _ in range(2):
        w = local_gd(w, b, a, 3, 0.15)
    np.testing.assert_allclose(final_weights(cfg), w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ConfigError, match="root_samples=99 exceeds"):
        monkeypatch.setattr(RootOnly, "root_samples", 99)
        Federation(cfg)


# ---- the simulated clock
def test_simulated_clock_adds_traffic_over_the_link_to_compute():
    cfg = toy_config(algorithm="scaffold", rounds=2, step_seconds=0.5, link_mbps=2.0)
    h = run(cfg, cache=False, progress=False)
    # down: x_t and c (2 floats each), up: Δy_i and Δc_i; 3 steps of 0.5 s; 2 Mbit/s = 2·2^20 bit/s
    expected = 3 * 0.5 + 8 * (16 + 16) / (2 * 2**20)
    np.testing.assert_allclose(h.rounds["sim_seconds"].iloc[1:], expected)
    measured = run(cfg.replace(step_seconds=None), cache=False, progress=False).rounds.iloc[1:]
    np.testing.assert_allclose(measured["sim_seconds"], measured["client_seconds_max"] + 8 * 32 / (2 * 2**20))


# ---- learning-rate schedules live in the client optimizer
@pytest.mark.parametrize("engine", ENGINES)
def test_step_schedule_changes_the_local_learning_rate_per_round(engine):
    cfg = toy_config(engine=engine, rounds=3, lr_schedule="step", lr_schedule_args={"every": 2, "gamma": 0.5})
    b, a, _ = client_problem(cfg)
    w = np.array(W0)
    for lr in (0.15, 0.15, 0.075):  # η_l · 0.5^⌊(t − 1)/2⌋
        w = w + np.mean([local_gd(w, b[i], a[i], 3, lr) - w for i in range(4)], axis=0)
    np.testing.assert_allclose(final_weights(cfg), w, rtol=1e-5, atol=1e-6)


def test_cosine_schedule_goes_from_lr_to_its_floor():
    opt = toy_config(rounds=4, lr_schedule="cosine", lr_schedule_args={"floor": 0.2}).settings().optimizer
    lrs = [opt.lr_at(t) for t in range(1, 6)]  # round T + 1 = 5 would be the first at the floor
    assert lrs[0] == pytest.approx(0.15) and np.all(np.diff(lrs) < 0)
    assert lrs[2] == pytest.approx(0.15 * (0.2 + 0.8 * 0.5))  # round 3 of 4 is halfway: cos(π/2) = 0
    assert lrs[4] == pytest.approx(0.15 * 0.2)


# ---- TACO's tailored coefficient as a wrapper of any base method
@pytest.mark.parametrize("engine", ENGINES)
def test_tailored_fedprox_first_round_uses_mu_times_one_minus_alpha0(engine):
    mu, alpha0 = 0.7, 0.3
    cfg = toy_config(engine=engine, algorithm="tailored",
                     algorithm_args={"base": "fedprox", "mu": mu, "alpha0": alpha0})
    b, a, _ = client_problem(cfg)
    w0 = np.array(W0)
    scaled = mu * (1 - alpha0)
    expected = w0 + np.mean([local_gd(w0, b[i], a[i], 3, 0.15, lambda y: scaled * (y - w0)) - w0
                             for i in range(4)], axis=0)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-5, atol=1e-6)


# ---- hyper-parameters: typed and range-checked (the bad ones are rows of tests/test_bad_inputs.py)
def test_numbers_in_every_yaml_spelling_are_accepted():
    alg = toy_config(algorithm="fedprox", algorithm_args={"mu": "1e-3"}, optimizer_args={"momentum": "0.5"})
    assert alg.build_algorithm().mu == 1e-3 and alg.settings().optimizer.momentum == 0.5
    with pytest.raises(ConfigError, match="optimizer 'adam': eps must be finite, got nan"):
        toy_config(optimizer="adam", optimizer_args={"eps": float("nan")})


# ---- README's worked example, checked against its recursion
class LinearMemory(Algorithm):
    name = "linear-memory"

    def __init__(self, run, alpha: Annotated[float, "(0, inf)"] = 0.01):
        super().__init__(run, "uniform")
        self.alpha = alpha

    def client_init(self, w0):
        return {"grad_memory": w0.new_zeros(w0.shape)}

    def objective(self, data, w, c, batch):
        return data - (c.kept["grad_memory"] * w).sum() + 0.5 * self.alpha * ((w - c.w0) ** 2).sum()

    def keep(self, w, local, c):
        return {"grad_memory": c.kept["grad_memory"] - self.alpha * (w - c.w0)}


@pytest.mark.parametrize("engine", ENGINES)
def test_readme_worked_example_keeps_each_clients_gradient_memory(monkeypatch, engine):
    register(monkeypatch, LinearMemory)
    alpha = 0.3
    cfg = toy_config(engine=engine, algorithm="linear-memory", algorithm_args={"alpha": alpha},
                     clients_per_round=2, rounds=4)
    b, a, sampled = client_problem(cfg)
    w, h = np.array(W0), np.zeros((4, 2))
    for clients in sampled:
        ys = []
        for i in clients:
            anchor = w.copy()
            y = local_gd(w, b[i], a[i], 3, 0.15, lambda v, i=i, anchor=anchor: -h[i] + alpha * (v - anchor))
            h[i] = h[i] - alpha * (y - anchor)
            ys.append(y)
        w = np.mean(ys, axis=0)
    s = list(Federation(cfg).rounds())[-1].after
    np.testing.assert_allclose(s.w.double().numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.kept["grad_memory"].double().numpy(), h, rtol=1e-5, atol=1e-6)
