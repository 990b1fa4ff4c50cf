"""fedkit.analysis.landscape and .gradnorms against closed forms and direct PyTorch computations."""
import copy

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fedkit import Config
from fedkit.analysis import (
    client_gradient_norms,
    data_subset,
    filter_normalized_direction,
    layer_gradient_norms,
    loss_surface_1d,
    loss_surface_2d,
    sharpness,
    update_norms,
)
from fedkit.engine import FlatModel, evaluate
from fedkit.federation import Federation


def conv_model() -> FlatModel:
    torch.manual_seed(0)
    return FlatModel(nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                                   nn.Linear(64, 8), nn.LayerNorm(8), nn.Tanh(), nn.Linear(8, 3)))


def conv_data(n=24):
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, 1, 6, 6, generator=g), torch.randint(0, 3, (n,), generator=g)


def mlp() -> FlatModel:
    torch.manual_seed(0)
    return FlatModel(nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 3)))


def test_direction_is_zero_on_biases_and_norm_layers_and_matches_filter_norms():
    fm = conv_model()
    w = fm.flat()
    d = filter_normalized_direction(fm, w, torch.Generator().manual_seed(0))
    assert d.shape == w.shape
    kinds = {t.name: t.kind for t in fm.layout.tensors}
    assert kinds["1.weight"] is nn.BatchNorm2d and kinds["5.weight"] is nn.LayerNorm
    directed = []
    for t in fm.layout.tensors:
        part, ref = d[t.slice].view(t.shape), w[t.slice].view(t.shape)
        if len(t.shape) == 1 or t.name.startswith(("1.", "5.")):
            assert torch.all(part == 0), t.name
            continue
        directed.append(t.name)
        for i in range(t.shape[0]):  # filter i: one output channel / unit
            assert part[i].norm().item() == pytest.approx(ref[i].norm().item(), rel=1e-5)
        assert not torch.allclose(part / part.norm(), ref / ref.norm())  # random, not w itself
    assert directed == ["0.weight", "4.weight", "7.weight"]


def test_directions_are_deterministic_given_the_seed():
    fm, (x, y) = conv_model(), conv_data()
    w = fm.flat()
    draw = lambda seed: filter_normalized_direction(fm, w, torch.Generator().manual_seed(seed))
    assert torch.equal(draw(3), draw(3)) and not torch.allclose(draw(3), draw(4))
    alphas = [-0.5, 0.0, 0.5]
    a, b = (loss_surface_1d(fm, w, x, y, "classification", alphas, seed=7) for _ in range(2))
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    c = loss_surface_1d(fm, w, x, y, "classification", alphas, seed=8)
    assert not np.allclose(a["loss"], c["loss"])
    # the 2-D surface's two directions: the seed's first and second draws
    g = torch.Generator().manual_seed(7)
    d1, d2 = filter_normalized_direction(fm, w, g), filter_normalized_direction(fm, w, g)
    assert not torch.allclose(d1, d2)
    s2 = loss_surface_2d(fm, w, x, y, "classification", alphas, seed=7)
    pd.testing.assert_frame_equal(s2, loss_surface_2d(fm, w, x, y, "classification", alphas,
                                                      directions=(d1, d2)), check_exact=True)
    along_alpha = s2[s2["beta"] == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(along_alpha[["alpha", "loss", "accuracy"]], a, rtol=1e-6)


def test_surface_centre_is_the_model_itself():
    fm, (x, y) = conv_model(), conv_data()
    w = fm.flat() * 1.5  # not the module's own parameters
    acc, loss = evaluate(fm, w, x, y, "classification")
    one = loss_surface_1d(fm, w, x, y, "classification", [-1, 0, 1], chunk=5)
    assert list(one.columns) == ["alpha", "loss", "accuracy"] and len(one) == 3
    assert one.loc[1, "loss"] == pytest.approx(loss, rel=1e-6) and one.loc[1, "accuracy"] == acc
    two = loss_surface_2d(fm, w, x, y, "classification", [-1, 0, 1], betas=[0, 2])
    assert list(two.columns) == ["alpha", "beta", "loss", "accuracy"] and len(two) == 6
    centre = two[(two["alpha"] == 0) & (two["beta"] == 0)]
    assert centre["loss"].item() == pytest.approx(loss, rel=1e-6)


class Quadratic(nn.Module):
    """Objective model: per-sample loss ||W x − 1||² (the output is the loss itself)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3, bias=False)

    def forward(self, x):
        return ((self.lin(x) - 1) ** 2).sum(1)


def test_1d_surface_of_a_quadratic_matches_the_closed_form():
    torch.manual_seed(0)
    fm = FlatModel(Quadratic())
    x = torch.randn(10, 4, dtype=torch.float64)
    fm.module.double()
    w = fm.flat()
    d = filter_normalized_direction(fm, w, torch.Generator().manual_seed(0))
    W, D = w.view(3, 4), d.view(3, 4)
    r, s = x @ W.T - 1, x @ D.T
    # mean ||r + α s||² = mean ||r||² + 2α mean <r, s> + α² mean ||s||²
    a0, a1, a2 = (r ** 2).sum(1).mean(), 2 * (r * s).sum(1).mean(), (s ** 2).sum(1).mean()
    alphas = np.linspace(-2, 2, 9)
    frame = loss_surface_1d(fm, w, x, torch.zeros(10), "objective", alphas, seed=0, chunk=3)
    np.testing.assert_allclose(frame["loss"], [(a0 + a1 * a + a2 * a * a).item() for a in alphas], rtol=1e-10)
    assert frame["accuracy"].isna().all()


def test_1d_surface_of_logistic_regression_by_hand():
    torch.manual_seed(2)
    fm = FlatModel(nn.Linear(4, 3))
    x, y = torch.randn(12, 4), torch.randint(0, 3, (12,))
    w = fm.flat()
    d = filter_normalized_direction(fm, w, torch.Generator().manual_seed(5))
    W, b, D = w[:12].view(3, 4), w[12:], d[:12].view(3, 4)
    assert torch.all(d[12:] == 0)
    for row in loss_surface_1d(fm, w, x, y, "classification", [-1.0, 0.3, 2.0], seed=5).itertuples():
        logits = x @ (W + row.alpha * D).T + b
        assert row.loss == pytest.approx(F.cross_entropy(logits, y).item(), rel=1e-5)
        assert row.accuracy == (logits.argmax(1) == y).sum().item() / len(y)


def test_sharpness_by_hand():
    flat = pd.DataFrame({"alpha": [-1.0, 0.0, 1.0], "loss": [1.5, 1.0, 2.5]})
    assert sharpness(flat) == pytest.approx((0.5 + 1.5) / 2)
    grid = pd.DataFrame({"alpha": [0.0, 0.0, 1.0, 1.0], "beta": [0.0, 1.0, 0.0, 1.0], "loss": [2.0, 3.0, 5.0, 2.0]})
    assert sharpness(grid) == pytest.approx((1 + 3 + 0) / 3)
    with pytest.raises(ValueError, match="centre"):
        sharpness(flat[flat["alpha"] != 0])


def test_data_subset():
    x, y = torch.arange(20.0)[:, None], torch.arange(20)
    xs, ys = data_subset(x, y, 5, seed=1)
    assert len(xs) == 5 and torch.equal(xs[:, 0].long(), ys) and len(set(ys.tolist())) == 5
    assert torch.equal(data_subset(x, y, 5, seed=1)[1], ys) and not torch.equal(data_subset(x, y, 5, seed=2)[1], ys)
    assert data_subset(x, y, 50)[0] is x


def direct_norms(fm, w, x, y, reduction):
    module = copy.deepcopy(fm.module).eval()
    with torch.no_grad():
        for p, t in zip(module.parameters(), w.split(fm.numels)):
            p.copy_(t.view_as(p))
    F.cross_entropy(module(x), y, reduction=reduction).backward()
    return {n: p.grad.norm().item() for n, p in module.named_parameters()}


@pytest.mark.parametrize("make,data", [(mlp, lambda: (torch.randn(20, 5), torch.randint(0, 3, (20,)))),
                                       (conv_model, conv_data)])
def test_gradient_norms_match_autograd_and_ignore_chunking(make, data):
    fm = make()
    torch.manual_seed(3)
    x, y = data()
    w = fm.flat() + 0.1 * torch.randn(fm.dim)
    total = layer_gradient_norms(fm, w, x, y, "classification")
    assert list(total.columns) == ["tensor", "layer", "norm"] and list(total["tensor"]) == fm.names
    assert list(total["layer"]) == [t.layer for t in fm.layout.tensors]
    expected = direct_norms(fm, w, x, y, "sum")
    np.testing.assert_allclose(total["norm"], [expected[n] for n in fm.names], rtol=1e-5)
    mean = layer_gradient_norms(fm, w, x, y, "classification", reduction="mean")
    np.testing.assert_allclose(mean["norm"] * len(x), total["norm"], rtol=1e-5)
    expected = direct_norms(fm, w, x, y, "mean")
    np.testing.assert_allclose(mean["norm"], [expected[n] for n in fm.names], rtol=1e-5)
    chunked = layer_gradient_norms(fm, w, x, y, "classification", chunk=7)
    np.testing.assert_allclose(chunked["norm"], total["norm"], rtol=1e-5)
    assert fm.module.training  # the mode is restored
    with pytest.raises(ValueError, match="reduction"):
        layer_gradient_norms(fm, w, x, y, "classification", reduction="max")


def test_update_norms_by_hand():
    fm = mlp()  # tensors 0.weight [7, 5], 0.bias [7], 2.weight [3, 7], 2.bias [3]
    deltas = torch.zeros(2, fm.dim)
    deltas[0, :35] = 1.0  # ||·|| = √35 on 0.weight
    deltas[1, 35:42] = 2.0  # ||·|| = 2√7 on 0.bias
    deltas[1, -3:] = torch.tensor([3.0, 0.0, 4.0])  # 5 on 2.bias
    frame = update_norms(fm, deltas, clients=[4, 9])
    assert list(frame.columns) == ["client", "tensor", "layer", "norm"] and len(frame) == 8
    table = frame.set_index(["client", "tensor"])["norm"]
    assert table[4, "0.weight"] == pytest.approx(35 ** 0.5) and table[4, "2.bias"] == 0
    assert table[9, "0.bias"] == pytest.approx(2 * 7 ** 0.5) and table[9, "2.bias"] == pytest.approx(5)
    assert list(update_norms(fm, deltas)["client"].unique()) == [0, 1]


def test_client_gradient_norms_use_each_clients_own_data():
    cfg = Config(dataset="digits", partition="dirichlet", partition_args={"phi": 0.3, "min_size": 5},
                 num_clients=4, clients_per_round=2, model="mlp", model_args={"hidden": [16]}, rounds=1,
                 local_steps=1, batch_size=16, lr=0.1, seed=1)
    fed = Federation(cfg)
    w = fed.fm.flat()
    frame = client_gradient_norms(fed, w, [2, 0], chunk=50)
    assert list(frame.columns) == ["client", "tensor", "layer", "norm"]
    assert list(frame["client"].unique()) == [2, 0]
    for i in (2, 0):
        idx = torch.as_tensor(fed.parts[i])
        alone = layer_gradient_norms(fed.fm, w, fed.x_train[idx], fed.y_train[idx], fed.task)
        np.testing.assert_allclose(frame.loc[frame["client"] == i, "norm"], alone["norm"], rtol=1e-5)
    assert not np.allclose(frame.loc[frame["client"] == 2, "norm"], frame.loc[frame["client"] == 0, "norm"])
