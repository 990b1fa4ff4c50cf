"""The engines against a plain PyTorch training loop, batch plans, and BatchNorm statistics."""
import copy

import numpy as np
import pandas as pd
import pytest
import torch
from test_run import digits_config, results
from torch import nn

from fedkit import ConfigError, run
from fedkit.algorithms import FedAvg, Settings, make_algorithm
from fedkit.engine import ClientInput, FlatModel, SequentialEngine, VectorizedEngine, local_steps, make_plan
from fedkit.optim import SGD


def bn_module():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))


def toy_data(n=60):
    g = torch.Generator().manual_seed(1)
    return torch.randn(n, 12, generator=g), torch.randint(0, 3, (n,), generator=g)


def test_sequential_engine_equals_a_plain_pytorch_loop_including_batchnorm_statistics():
    x, y = toy_data()
    module = bn_module()
    reference = copy.deepcopy(module)
    fm = FlatModel(module)
    algorithm = make_algorithm("fedavg", Settings(num_clients=2, optimizer=SGD(lr=0.1, momentum=0.5)))
    parts = [np.arange(0, 26), np.arange(26, 60)]  # last batches of 2 real samples
    rng = np.random.default_rng(0)
    plans = [make_plan(i, parts[i], 8, 4, rng) for i in range(2)]
    clients = ClientInput(fm.flat().expand(2, -1), {}, {}, torch.tensor([4.0, 4.0]), 0.1, 1)
    start = {k: v.expand(2, *v.shape) for k, v in fm.buffers.items()}
    result = SequentialEngine(fm, algorithm, "classification", x, y).train(clients, plans, start)

    for j, plan in enumerate(plans):
        net = copy.deepcopy(reference).train()
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
        for k in range(plan.steps):
            rows = plan.indices[k][plan.mask[k] > 0]
            opt.zero_grad()
            nn.functional.cross_entropy(net(x[rows]), y[rows]).backward()
            opt.step()
        expected = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        torch.testing.assert_close(result.uploads["delta"][j], expected - fm.flat(), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(result.buffers["2.running_mean"][j], net[2].running_mean)
        torch.testing.assert_close(result.buffers["2.running_var"][j], net[2].running_var)
    # the global statistics are untouched until the server averages them
    torch.testing.assert_close(fm.buffers["2.running_mean"], torch.zeros(8))


def test_vectorized_engine_refuses_models_with_buffers():
    x, y = toy_data()
    with pytest.raises(ConfigError, match="sequential"):
        VectorizedEngine(FlatModel(bn_module()), make_algorithm("fedavg"), "classification", x, y)


def test_plan_visits_each_sample_once_per_epoch_and_pads_the_last_batch():
    samples = np.arange(100, 123)  # 23 samples, batch 10 -> batches of 10, 10, 3 (+7 padding)
    plan = make_plan(7, samples, 10, local_steps(23, 10, None, 2), np.random.default_rng(0))
    assert plan.steps == 6 and plan.indices.shape == (6, 10)
    for epoch in (plan.indices[:3], plan.indices[3:]):
        mask = plan.mask[:3] > 0
        assert sorted(epoch[mask].tolist()) == list(range(100, 123))
    assert plan.mask.sum(1).tolist() == [10, 10, 3, 10, 10, 3]


def test_fixed_steps_continue_into_a_fresh_permutation():
    plan = make_plan(0, np.arange(5), 4, 5, np.random.default_rng(0))
    assert plan.mask.sum(1).tolist() == [4, 1, 4, 1, 4]
    assert sorted(plan.indices[2:4][plan.mask[2:4] > 0].tolist()) == list(range(5))


class FeatureObjective(FedAvg):
    """An objective that reads the output layer's input and w itself (exercises both paths of the gradient)."""

    needs_features = True

    def objective(self, data, w, c, batch):
        return data + 0.01 * batch.features.pow(2).mean() + 0.1 * (w - c.w0).pow(2).sum()


@pytest.mark.parametrize("make", [lambda: make_algorithm("fedprox", mu=0.5), lambda: make_algorithm("fedavg"),
                                  lambda: FeatureObjective(Settings())], ids=["fedprox", "fedavg", "features"])
@pytest.mark.parametrize("module", [lambda: nn.Sequential(nn.Linear(12, 6), nn.Tanh(), nn.Linear(6, 3)),
                                    lambda: nn.Sequential(nn.Unflatten(1, (1, 12)), nn.Conv1d(1, 2, 3),
                                                          nn.Flatten(), nn.Linear(20, 3))],
                         ids=["dense chain", "conv"])
def test_sequential_and_vectorized_client_steps_agree(make, module):
    """One client's step (a private module copy, plain autograd) equals its row of the vmapped stacked step."""
    from torch.func import vmap

    from fedkit.engine import make_client_step

    torch.manual_seed(0)
    fm = FlatModel(module())
    algorithm = make()
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(3, 16, 12, generator=g), torch.randint(0, 3, (3, 16), generator=g)
    w0 = fm.flat().expand(3, -1)
    w = w0 + 0.1 * torch.randn(3, fm.dim)  # away from w0, so that FedProx's proximal gradient μ(w − w0) is not 0
    c = ClientInput(w0, {}, {}, torch.ones(3), 0.1, 1)
    alone = make_client_step(fm, algorithm, "classification", vectorized=False)
    stacked = make_client_step(fm, algorithm, "classification", vectorized=True)
    dims = ClientInput(0, 0, 0, 0, None, None)
    w_all, _, loss_all = vmap(stacked, in_dims=(0, 0, dims, 0, 0, 0, None))(w, {}, c, x, y, torch.ones(3, 16), {})
    for i in range(3):
        ci = ClientInput(w0[i], {}, {}, torch.tensor(1.0), 0.1, 1)
        w_i, _, loss_i = alone(w[i], {}, ci, x[i], y[i], torch.ones(16), {})
        torch.testing.assert_close(w_all[i], w_i, rtol=0, atol=1e-7)
        torch.testing.assert_close(loss_all[i], loss_i)
        assert not w_i.requires_grad


def test_auto_engine_rule():
    from fedkit.engine import choose_engine
    from fedkit.models import build_model

    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    mlp, cnn = FlatModel(build_model("mlp", (123,), 2)), FlatModel(build_model("cnn", (1, 28, 28), 10))
    assert mlp.dense and not cnn.dense  # the MLP is a dense chain, the CNN has convolutions
    assert choose_engine("auto", mlp, cpu) == "vectorized" and choose_engine("auto", cnn, cpu) == "vectorized"
    tf_cnn = FlatModel(build_model("tf_cnn", (1, 28, 28), 47))  # a convolutional chain too big to win on a CPU
    assert choose_engine("auto", tf_cnn, cpu) == "sequential" and choose_engine("auto", tf_cnn, gpu) == "vectorized"
    lstm = FlatModel(build_model("lstm", (80,), 80))
    assert lstm.chain is None and choose_engine("auto", lstm, cpu) == "sequential"
    assert choose_engine("auto", cnn, gpu) == "vectorized"
    assert choose_engine("auto", FlatModel(bn_module()), gpu) == "sequential"  # BatchNorm statistics
    assert choose_engine("sequential", mlp, cpu) == "sequential"  # a named engine is kept
    fc500 = FlatModel(build_model("fc500", (1, 28, 28), 10))  # a dense chain too big to win on a CPU
    assert fc500.dense and choose_engine("auto", fc500, cpu) == "sequential"
    assert choose_engine("auto", fc500, gpu) == "vectorized"


CHAINS = {
    "dense": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(12, 6), nn.Tanh(), nn.Linear(6, 3, bias=False)),
              (3, 4), ["flatten", "linear", "apply", "linear"]),
    "conv": (lambda: nn.Sequential(nn.AvgPool2d(1), nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Conv2d(3, 4, 2, stride=2, bias=False), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                                   nn.Linear(16, 5), nn.ReLU(), nn.Linear(5, 3)),
             (2, 8, 8), ["pool", "conv", "apply", "pool", "conv", "pool", "flatten", "linear", "apply", "linear"]),
}


@pytest.mark.parametrize("kind", CHAINS)
def test_stacked_forward_and_gradient_of_a_chain_equal_each_model_alone(kind):
    """Dense layers as batched matrix products, convolutions as one grouped convolution over the stack."""
    make, shape, ops = CHAINS[kind]
    torch.manual_seed(0)
    fm = FlatModel(make())
    assert [op for op, _ in fm.chain] == ops and fm.dense is (kind == "dense")
    w = (fm.flat() + 0.1 * torch.randn(4, fm.dim)).requires_grad_(True)
    x = torch.randn(4, 5, *shape)
    out, features = fm.stacked(w, x, features=True)
    (grad,) = torch.autograd.grad(out.pow(2).sum(), w)
    for i in range(4):
        v = w[i].detach().requires_grad_(True)
        alone, alone_features = fm.features(v, x[i])
        torch.testing.assert_close(out[i], alone)
        torch.testing.assert_close(features[i], alone_features)
        torch.testing.assert_close(grad[i], torch.autograd.grad(alone.pow(2).sum(), v)[0])


@pytest.mark.parametrize("activation", [nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.LeakyReLU(0.2), nn.Identity()],
                         ids=["relu", "tanh", "sigmoid", "leaky_relu", "identity"])
def test_hand_written_chain_gradient_equals_autograd(activation):
    """chain_gradient (the vectorized engine's backward for dense chains) against autograd, client by client:
    a Flatten first, two activations, ragged masks (a client with one real row, one with all)."""
    from fedkit.engine.functional import chain_gradient

    torch.manual_seed(0)
    module = nn.Sequential(nn.Flatten(), nn.Linear(12, 7), activation, nn.Linear(7, 5), activation,
                           nn.Linear(5, 3, bias=False))
    fm = FlatModel(module)
    assert fm.hand_differentiable
    n, b = 3, 6
    g = torch.Generator().manual_seed(3)
    w = fm.flat() + 0.3 * torch.randn(n, fm.dim, generator=g)
    x, y = torch.randn(n, b, 3, 4, generator=g), torch.randint(0, 3, (n, b), generator=g)
    mask = torch.ones(n, b)
    mask[0, 1:], mask[1, 4:] = 0, 0
    grads, losses = chain_gradient(fm, w, x, y, mask)
    for i in range(n):
        v = w[i].clone().requires_grad_(True)
        real = mask[i] > 0
        loss = nn.functional.cross_entropy(fm(v, x[i][real]), y[i][real])
        (expected,) = torch.autograd.grad(loss, v)
        torch.testing.assert_close(grads[i], expected, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(losses[i], loss.detach())


def test_activations_without_an_output_derivative_keep_autograd():
    assert not FlatModel(nn.Sequential(nn.Linear(4, 3), nn.GELU(), nn.Linear(3, 2))).hand_differentiable
    assert not FlatModel(nn.Sequential(nn.Linear(4, 3), nn.LeakyReLU(-0.5), nn.Linear(3, 2))).hand_differentiable
    assert FlatModel(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))).hand_differentiable


class GradientElsewhere(FedAvg):
    """Asks for the gradient at a copy of w, never at w itself: the vectorized engine cannot hand it a gradient
    computed beforehand and must take it under vmap."""

    def local_step(self, w, local, c, grad_at):
        g, loss = grad_at(w * 1.0)
        return w - c.lr * g, local, loss


@pytest.mark.parametrize("make", [lambda: make_algorithm("fedavg", Settings(optimizer=SGD(lr=0.1))),
                                  lambda: GradientElsewhere(Settings(optimizer=SGD(lr=0.1)))],
                         ids=["gradient at w", "gradient elsewhere"])
def test_vectorized_engine_takes_the_gradient_at_w_beforehand_only_when_asked_for_it(make):
    x, y = toy_data()
    module = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3))
    fm = FlatModel(module)
    parts = [np.arange(0, 26), np.arange(26, 60)]
    plans = [make_plan(i, parts[i], 8, 4, np.random.default_rng(i)) for i in range(2)]
    clients = ClientInput(fm.flat().expand(2, -1), {}, {}, torch.tensor([4.0, 4.0]), 0.1, 1)
    alone = SequentialEngine(fm, make(), "classification", x, y).train(clients, plans, {})
    engine = VectorizedEngine(fm, make(), "classification", x, y)
    together = engine.train(clients, plans, {})
    assert engine.at_w is (not isinstance(engine.program, GradientElsewhere))
    assert engine.gradient.plain and engine.gradient.by_hand  # FedAvg's objective: chain_gradient computed it
    torch.testing.assert_close(together.uploads["delta"], alone.uploads["delta"], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(together.train_loss, alone.train_loss)


@pytest.mark.parametrize("algorithm,args", [("fedavg", {}), ("fedprox", {"mu": 0.1})])
def test_compiled_run_equals_the_eager_one_and_reports_its_compile_time(algorithm, args):
    """compile=True compiles chain_gradient (FedAvg on an MLP) or the stacked forward (FedProx's objective)."""
    cfg = digits_config(algorithm=algorithm, algorithm_args=args, engine="vectorized", rounds=2)
    eager, compiled = (run(c, cache=False, progress=False) for c in (cfg, cfg.replace(compile=True)))
    seconds = compiled.rounds["compile_seconds"]
    assert seconds[1] > 0 and (seconds[2:] == 0).all() and "compile_seconds" not in eager.rounds
    assert compiled.rounds["client_seconds_sum"][1] >= seconds[1]
    pd.testing.assert_frame_equal(results(eager), results(compiled).drop(columns="compile_seconds"),
                                  rtol=1e-5, atol=1e-6)


def test_a_client_done_with_its_steps_leaves_the_stack_and_padding_columns_are_not_computed():
    """Two clients of 26 and 34 samples, one epoch of batch 8: 4 and 5 steps, last batches of 2 real rows. The
    stacked gradients see 2, 2, 2, 2, 1 clients and 8, 8, 8, 8, 2 rows per client; the result equals the
    sequential engine's."""
    x, y = toy_data()
    fm = FlatModel(nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 3)))
    parts = [np.arange(0, 26), np.arange(26, 60)]
    rng = np.random.default_rng(0)
    plans = [make_plan(i, parts[i], 8, local_steps(len(parts[i]), 8, None, 1), rng) for i in range(2)]
    clients = ClientInput(fm.flat().expand(2, -1), {}, {}, torch.tensor([4.0, 5.0]), 0.1, 1)
    make = lambda: make_algorithm("fedavg", Settings(optimizer=SGD(lr=0.1)))  # noqa: E731
    engine = VectorizedEngine(fm, make(), "classification", x, y)
    seen, outside = [], engine.gradient.outside
    engine.gradient.outside = lambda w, c, xs, ys, mask: seen.append(tuple(mask.shape)) or outside(w, c, xs, ys, mask)
    together = engine.train(clients, plans, {})
    assert seen == [(2, 8)] * 4 + [(1, 2)]
    alone = SequentialEngine(fm, make(), "classification", x, y).train(clients, plans, {})
    torch.testing.assert_close(together.uploads["delta"], alone.uploads["delta"], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(together.train_loss, alone.train_loss)
