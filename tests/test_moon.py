"""MOON's model-contrastive loss (eqs. 3–4) against a direct PyTorch computation, and its special cases."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_algorithms import final_weights, toy_config
from torch import nn
from torch.func import functional_call, vmap

from fedkit.algorithms import Settings, make_algorithm
from fedkit.engine import ClientInput, FlatModel, make_client_step
from fedkit.models import build_model
from fedkit.optim import SGD


def reference_loss(module, params, x, y, w_glob, w_prev, mu, tau):
    """CE + μ·mean(−log softmax([cos(z, z_glob), cos(z, z_prev)] / τ)[0]), z = the last Linear layer's input."""
    trunk = nn.Sequential(*list(module)[:-1])
    head = module[-1]
    split = lambda p: ({k: v for k, v in p.items() if not k.startswith("2.")},  # noqa: E731  trunk: "0.*"
                       {k[2:]: v for k, v in p.items() if k.startswith("2.")})  # head: "weight", "bias"
    trunk_p, head_p = split(params)
    z = functional_call(trunk, trunk_p, (x,))
    out = functional_call(head, head_p, (z,))
    z_glob = functional_call(trunk, split(w_glob)[0], (x,))
    z_prev = functional_call(trunk, split(w_prev)[0], (x,))
    pos = F.cosine_similarity(z, z_glob, dim=-1) / tau
    neg = F.cosine_similarity(z, z_prev, dim=-1) / tau
    contrastive = -torch.log(torch.exp(pos) / (torch.exp(pos) + torch.exp(neg)))
    return F.cross_entropy(out, y) + mu * contrastive.mean()


@pytest.mark.parametrize("vectorized", [False, True])
def test_one_local_step_equals_a_direct_computation(vectorized):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    fm = FlatModel(module)
    moon = make_algorithm("moon", Settings(optimizer=SGD(lr=0.1)), mu=2.0, tau=0.5)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(6, 3, generator=g), torch.randint(0, 2, (6,), generator=g)
    w0 = fm.flat()
    prev, w = w0 + 0.3 * torch.randn(fm.dim, generator=g), w0 + 0.2 * torch.randn(fm.dim, generator=g)
    c = ClientInput(w0, {}, {"prev": prev}, torch.tensor(1.0), 0.1, 1)
    step = make_client_step(fm, moon, "classification", vectorized)
    if vectorized:
        dims = ClientInput(0, 0, 0, 0, None, None)
        stack = lambda t: t[None]  # noqa: E731
        c1 = ClientInput(stack(w0), {}, {"prev": stack(prev)}, torch.ones(1), 0.1, 1)
        w_new = vmap(step, in_dims=(0, 0, dims, 0, 0, 0, None))(stack(w), {}, c1, stack(x), stack(y),
                                                                 torch.ones(1, 6), {})[0][0]
    else:
        w_new = step(w, {}, c, x, y, torch.ones(6), {})[0]

    named = lambda v: fm.unflatten(v)  # noqa: E731
    v = w.clone().requires_grad_(True)
    loss = reference_loss(module, named(v), x, y, named(w0), named(prev), 2.0, 0.5)
    (grad,) = torch.autograd.grad(loss, v)
    torch.testing.assert_close(w_new, w - 0.1 * grad, rtol=1e-5, atol=1e-6)


def test_previous_model_equal_to_the_global_one_adds_no_gradient():
    # z_prev = z_glob: ℓ_con = log 2 for every sample, whatever z is; MOON's step is FedAvg's
    torch.manual_seed(0)
    fm = FlatModel(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)))
    x, y = torch.randn(5, 3), torch.randint(0, 2, (5,))
    w0 = fm.flat()
    w = w0 + 0.1 * torch.randn(fm.dim)
    c = ClientInput(w0, {}, {"prev": w0}, torch.tensor(1.0), 0.1, 1)
    moon = make_client_step(fm, make_algorithm("moon", mu=5.0), "classification")
    avg = make_client_step(fm, make_algorithm("fedavg"), "classification")
    torch.testing.assert_close(moon(w, {}, c, x, y, torch.ones(5), {})[0], avg(w, {}, c, x, y, torch.ones(5), {})[0])


def test_mu_zero_is_fedavg_and_the_client_keeps_its_model():
    cfg = toy_config(algorithm="moon", algorithm_args={"mu": 0.0}, rounds=2)
    np.testing.assert_array_equal(final_weights(cfg), final_weights(toy_config(rounds=2)))


def test_cnn_projection_head_feeds_the_output_layer():
    plain = FlatModel(build_model("cnn", (1, 28, 28), 10))
    moon = FlatModel(build_model("cnn", (1, 28, 28), 10, projection=256))
    assert moon.dim == plain.dim + (84 * 84 + 84) + (84 * 256 + 256) + (256 - 84) * 10
    _, z = moon.features(moon.flat(), torch.rand(2, 1, 28, 28))
    assert z.shape == (2, 256)
