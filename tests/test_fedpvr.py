"""FedPVR: SCAFFOLD's correction on the selected tensors V only, the optimizer's momentum elsewhere."""
import numpy as np
import pytest
import torch
from test_algorithms import ENGINES, client_problem, final_weights, scaffold_reference, toy_config
from torch import nn

from fedkit import ConfigError
from fedkit.algorithms import Settings, make_algorithm
from fedkit.engine import ClientInput, FlatModel
from fedkit.optim import SGD, Adam


@pytest.mark.parametrize("engine", ENGINES)
def test_all_tensors_in_v_is_scaffold(engine):
    cfg = toy_config(engine=engine, algorithm="fedpvr", algorithm_args={"layers": "all"}, clients_per_round=2,
                     rounds=4)
    b, a, sampled = client_problem(cfg)
    expected, _, _ = scaffold_reference(b, a, sampled, 4, 3, 0.15, 1.0)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-4, atol=1e-5)


def test_one_local_step_and_the_new_variate_by_hand():
    fm = FlatModel(nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 2)))  # 8 + 6 entries; V = the output
    pvr = make_algorithm("fedpvr", Settings(optimizer=SGD(lr=0.1, momentum=0.9), layout=fm.layout),
                         layers="output")
    v = torch.tensor([0.0] * 8 + [1.0] * 6)
    d = fm.dim
    g, c_server, c_i, m = (torch.linspace(-1, 1, d) * s for s in (1.0, 0.3, -0.2, 0.5))
    w = torch.linspace(0, 2, d)
    c = ClientInput(w, {"c": c_server}, {"c_i": c_i}, torch.tensor(1.0), 0.1, 1)
    w_new, local, _ = pvr.local_step(w, {"m": m}, c, lambda _: (g, torch.tensor(0.0)))
    corrected = g + v * (c_server - c_i)  # the correction on V only
    momentum = 0.9 * m + corrected
    expected = w - 0.1 * torch.where(v.bool(), corrected, momentum)  # no momentum on V
    torch.testing.assert_close(w_new, expected)
    torch.testing.assert_close(local["m"], momentum)
    c_new = pvr.keep(w_new, local, c)["c_i"]
    torch.testing.assert_close(c_new, v * (c_i - c_server + (w - w_new) / 0.1))
    ups = pvr.upload(w_new, local, c)
    assert pvr.bytes_up({k: t[None] for k, t in ups.items()}).tolist() == [4 * (d + 6)]


def test_needs_the_layout_and_sgd():
    with pytest.raises(ConfigError, match="layout"):
        make_algorithm("fedpvr").mask(torch.zeros(3))
    with pytest.raises(ConfigError, match="fedpvr"):
        toy_config(algorithm="fedpvr", optimizer_args={"weight_decay": 0.1})


@pytest.mark.parametrize("placement", ["in_optimizer", "after_step"])
def test_with_adam_the_correction_is_placed_on_v_only(placement):
    fm = FlatModel(nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 2)))
    pvr = make_algorithm("fedpvr", Settings(optimizer=Adam(lr=0.1), layout=fm.layout), layers="output",
                         correction_at=placement)
    v = torch.tensor([0.0] * 8 + [1.0] * 6)
    g, c_server, c_i = (torch.linspace(-1, 1, 14) * s for s in (1.0, 0.3, -0.2))
    w = torch.linspace(0, 2, 14)
    c = ClientInput(w, {"c": c_server}, {"c_i": c_i}, torch.tensor(1.0), 0.1, 1)
    _, local = pvr.local_init(c)
    w_new, _, _ = pvr.local_step(w, local, c, lambda _: (g, torch.tensor(0.0)))
    h = v * (c_server - c_i)
    if placement == "in_optimizer":  # Adam on the corrected direction
        expected, _ = Adam(lr=0.1).step(w, g + h, Adam().init(w), 0.1)
    else:  # Adam on g, then the correction
        expected = Adam(lr=0.1).step(w, g, Adam().init(w), 0.1)[0] - 0.1 * h
    torch.testing.assert_close(w_new, expected)
