"""Passes over a client's whole training set inside local training (``epoch_start``, ``local_final``'s data)."""
import math

import numpy as np
import pytest
import torch
from torch import nn

from fedkit.algorithms import FedAvg, Settings
from fedkit.engine import ClientInput, FlatModel, SequentialEngine, VectorizedEngine, evaluate, make_plan
from fedkit.optim import SGD

EPOCHS = 3  # the probe records at most this many epoch starts


class Probe(FedAvg):
    """Records, at every epoch start, the accuracy and loss of the current local model on the client's data, and
    uploads the summed-loss gradient over that data at the final local model."""

    def local_init(self, c):
        w, opt = super().local_init(c)
        return w, {**opt, "acc": torch.zeros(EPOCHS), "loss": torch.zeros(EPOCHS), "epochs": torch.zeros(())}

    def epoch_start(self, w, local, c, data):
        loss, acc = data.evaluate(w, c)
        slot = (torch.arange(EPOCHS) == local["epochs"]).float()
        return {**local, "acc": local["acc"] + slot * acc, "loss": local["loss"] + slot * loss,
                "epochs": local["epochs"] + 1}

    def local_final(self, w, local, c, data):
        up = {"delta": w - c.w0, "grad": data.gradient(w, c), "acc": local["acc"], "loss": local["loss"],
              "epochs": local["epochs"]}
        return up, {}


def setup(sizes=(23, 9, 40), batch=8, epochs=2):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3))
    fm = FlatModel(module)
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(sum(sizes), 5, generator=g), torch.randint(0, 3, (sum(sizes),), generator=g)
    bounds = np.cumsum((0, *sizes))
    parts = [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
    rng = np.random.default_rng(0)
    plans = [make_plan(i, p, batch, epochs * math.ceil(len(p) / batch), rng) for i, p in enumerate(parts)]
    n = len(parts)
    clients = ClientInput(fm.flat().expand(n, -1), {}, {}, torch.tensor([float(p.steps) for p in plans]), 0.3, 1)
    algorithm = Probe(Settings(num_clients=n, optimizer=SGD(lr=0.3)))
    return fm, x, y, parts, plans, clients, algorithm


def test_epoch_starts_and_the_final_gradient_are_passes_over_the_clients_own_data():
    fm, x, y, parts, plans, clients, algorithm = setup()
    result = SequentialEngine(fm, algorithm, "classification", x, y).train(clients, plans, {}, trace=True)
    ups = result.uploads
    for j, (part, plan) in enumerate(zip(parts, plans)):
        assert ups["epochs"][j] == 2  # epochs at steps 0 and ⌈n_i / B⌉
        path = result.paths[j]
        for e, k in enumerate((0, plan.per_epoch)):
            acc, loss = evaluate(fm, path[k], x[part], y[part], "classification")
            assert ups["acc"][j, e].item() == pytest.approx(acc)
            assert ups["loss"][j, e].item() == pytest.approx(loss, rel=1e-6)
        w = (fm.flat() + ups["delta"][j]).requires_grad_(True)
        summed = nn.functional.cross_entropy(fm(w, x[part]), y[part], reduction="sum")
        (expected,) = torch.autograd.grad(summed, w)
        torch.testing.assert_close(ups["grad"][j], expected, rtol=1e-5, atol=1e-6)


def test_vectorized_engine_passes_each_client_over_its_own_data_at_its_own_epoch_starts():
    """Epoch lengths differ (3, 2 and 5 steps): the hook runs for the clients starting an epoch only."""
    fm, x, y, parts, plans, clients, algorithm = setup()
    seq = SequentialEngine(fm, algorithm, "classification", x, y).train(clients, plans, {})
    vec = VectorizedEngine(fm, algorithm, "classification", x, y).train(clients, plans, {})
    for key in ("delta", "grad", "acc", "loss", "epochs"):
        torch.testing.assert_close(vec.uploads[key], seq.uploads[key], rtol=1e-5, atol=1e-5)


def test_data_pass_chunks_do_not_change_it():
    fm, x, y, parts, plans, clients, algorithm = setup()
    from fedkit.engine import ClientData

    c = clients._replace(rows=torch.as_tensor(parts[2]))
    w = clients.w0[0]
    whole, chunked = ClientData(fm, "classification", x, y), ClientData(fm, "classification", x, y, chunk=7)
    torch.testing.assert_close(whole.gradient(w, c), chunked.gradient(w, c))
    torch.testing.assert_close(torch.stack(whole.evaluate(w, c)), torch.stack(chunked.evaluate(w, c)))
    with pytest.raises(ValueError, match="rows"):
        whole.evaluate(w, clients._replace(rows=None))
