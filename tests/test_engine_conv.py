"""The vectorized engine's hand-written backward for convolutional chains (conv, pooling, activations, dense)."""
import numpy as np
import pytest
import torch
from torch import nn

from fedkit.algorithms import Settings, make_algorithm
from fedkit.engine import ClientInput, FlatModel, SequentialEngine, VectorizedEngine, choose_engine, make_plan
from fedkit.engine.functional import chain_gradient
from fedkit.models import build_model
from fedkit.optim import SGD

CONV_CHAINS = {
    "cnn": (lambda: build_model("cnn", (1, 28, 28), 10), (1, 28, 28), 10),
    "lenet5": (lambda: build_model("lenet5", (1, 28, 28), 10), (1, 28, 28), 10),
    # a pooling before any parameter, a strided convolution without bias, adaptive average pooling
    "strided": (lambda: nn.Sequential(nn.AvgPool2d(1), nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(3, 4, 2, stride=2, bias=False), nn.AdaptiveAvgPool2d(2),
                                      nn.Flatten(), nn.Linear(16, 5), nn.ReLU(), nn.Linear(5, 3)), (2, 8, 8), 3),
    # smooth activations, adaptive max pooling, a ceil-mode average pooling, a padded and dilated convolution
    "smooth": (lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.Tanh(), nn.AdaptiveMaxPool2d(5),
                                     nn.Conv2d(3, 4, 2, padding=1, dilation=2), nn.Sigmoid(),
                                     nn.AvgPool2d(2, ceil_mode=True), nn.LeakyReLU(0.1), nn.Flatten(),
                                     nn.Linear(36, 3)), (2, 9, 9), 3),
    # FedDUAL's LeNet: tanh and average pooling (whose backward is folded into tanh's), a per-position Dense after
    # the channels move last (x.permute(0, 2, 3, 1)), a functional torch.tanh
    "feddual_lenet": (lambda: build_model("feddual_lenet", (1, 28, 28), 10), (1, 28, 28), 10),
    # average poolings folded into a ReLU's and a sigmoid's backward: a rectangular window, a divisor override
    "average": (lambda: nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.AvgPool2d(2), nn.Conv2d(3, 2, 3),
                                      nn.Sigmoid(), nn.AvgPool2d((2, 1), divisor_override=3), nn.Flatten(),
                                      nn.Linear(16, 3)), (1, 14, 14), 3),
    # a max-pooling with padding and stride after ReLU (moved before it), and one after a convolution's ReLU
    # that ends the trunk
    "padded_pool": (lambda: nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
                                          nn.Conv2d(4, 2, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                          nn.Linear(8, 3)), (1, 10, 10), 3),
}


def per_client_gradients(fm, w, x, y, mask):
    grads, losses = [], []
    for i in range(len(w)):
        v = w[i].clone().requires_grad_(True)
        real = mask[i] > 0
        loss = nn.functional.cross_entropy(fm(v, x[i][real]), y[i][real])
        grads.append(torch.autograd.grad(loss, v)[0])
        losses.append(loss.detach())
    return torch.stack(grads), torch.stack(losses)


@pytest.mark.parametrize("kind", CONV_CHAINS)
def test_hand_written_gradient_of_a_convolutional_chain_equals_autograd(kind):
    """chain_gradient against autograd on each client alone, ragged masks (one real row, four, all)."""
    make, shape, classes = CONV_CHAINS[kind]
    torch.manual_seed(0)
    fm = FlatModel(make())
    assert fm.hand_differentiable and not fm.dense
    n, b = 3, 6
    g = torch.Generator().manual_seed(3)
    w = fm.flat() + 0.05 * torch.randn(n, fm.dim, generator=g)
    x, y = torch.rand(n, b, *shape, generator=g), torch.randint(0, classes, (n, b), generator=g)
    mask = torch.ones(n, b)
    mask[0, 1:], mask[1, 4:] = 0, 0
    grads, losses = chain_gradient(fm, w, x, y, mask)
    expected, expected_losses = per_client_gradients(fm, w, x, y, mask)
    torch.testing.assert_close(grads, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(losses, expected_losses)


def test_relu_moved_after_max_pooling_gives_the_same_values_and_gradient_with_ties():
    """Blank image regions make whole pooling windows equal (the convolution gives its bias there): the first
    maximum gets the gradient in either order, and none goes through a ReLU that is off. Positive and negative
    biases, so that tied windows are both on and off."""
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 5 * 5, 3))
    with torch.no_grad():
        module[0].bias.copy_(torch.tensor([0.5, -0.5, 0.0, 0.2]))
    fm = FlatModel(module)
    assert [op for op, _ in fm._run][:3] == ["conv", "pool", "apply"]  # run order: the ReLU after the pooling
    assert [op for op, _ in fm.chain][:3] == ["conv", "apply", "pool"]  # the model's own order is kept
    n, b = 2, 5
    x = torch.zeros(n, b, 1, 12, 12)
    x[:, :, :, 3:6, 3:7] = torch.rand(n, b, 1, 3, 4)  # a small blot on a blank image
    y = torch.randint(0, 3, (n, b))
    w = fm.flat().expand(n, -1).clone()
    out, _ = fm.stacked(w, x)
    # equal to float order: the stacked convolution may sum in another order than nn.Conv2d (2.98e-08 apart on an
    # AMD EPYC without AVX-512, 2026-12-06); the ReLU left out moves the outputs by up to 0.11 here
    torch.testing.assert_close(out[0], module(x[0]), rtol=1e-5, atol=1e-6)
    grads, _ = chain_gradient(fm, w, x, y, torch.ones(n, b))
    expected, _ = per_client_gradients(fm, w, x, y, torch.ones(n, b))
    torch.testing.assert_close(grads, expected, rtol=1e-5, atol=1e-6)


def test_vectorized_engine_equals_sequential_on_the_cnn_through_the_hand_written_backward():
    """A round of the NIID-Bench CNN, clients of unequal sizes and steps (one leaves the stack early), momentum."""
    torch.manual_seed(0)
    fm = FlatModel(build_model("cnn", (1, 28, 28), 10))
    g = torch.Generator().manual_seed(4)
    x, y = torch.rand(90, 1, 28, 28, generator=g), torch.randint(0, 10, (90,), generator=g)
    parts = [np.arange(0, 20), np.arange(20, 50), np.arange(50, 90)]
    rng = np.random.default_rng(0)
    plans = [make_plan(i, parts[i], 8, steps, rng) for i, steps in enumerate([3, 4, 5])]
    clients = ClientInput(fm.flat().expand(3, -1), {}, {}, torch.tensor([3.0, 4.0, 5.0]), 0.05, 1)
    make = lambda: make_algorithm("fedavg", Settings(optimizer=SGD(lr=0.05, momentum=0.9)))  # noqa: E731
    engine = VectorizedEngine(fm, make(), "classification", x, y)
    together = engine.train(clients, plans, {})
    assert engine.gradient.plain and engine.gradient.by_hand
    alone = SequentialEngine(fm, make(), "classification", x, y).train(clients, plans, {})
    torch.testing.assert_close(together.uploads["delta"], alone.uploads["delta"], rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(together.train_loss, alone.train_loss, rtol=1e-5, atol=1e-6)


def test_the_small_cnns_run_vectorized_on_a_cpu():
    """FedDUAL's LeNet is a chain too (its x.permute(0, 2, 3, 1) and torch.tanh are chain steps)."""
    cpu = torch.device("cpu")
    for name in ("cnn", "lenet5", "feddual_lenet"):
        fm = FlatModel(build_model(name, (1, 28, 28), 10))
        assert fm.hand_differentiable and choose_engine("auto", fm, cpu) == "vectorized"
    ops = [op for op, _ in FlatModel(build_model("feddual_lenet", (1, 28, 28), 10)).chain]
    assert ops[5:9] == ["pool", "permute", "linear", "apply"]


def test_a_parameter_outside_the_chain_keeps_autograd():
    """A layer the forward never calls has no gradient in the chain: such a model is not differentiated by hand."""
    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.unused, self.last = nn.Linear(4, 3), nn.Linear(3, 3), nn.Linear(3, 2)

        def forward(self, x):
            return self.last(torch.relu(self.first(x)))

    fm = FlatModel(Unused())
    assert fm.chain is not None and not fm.hand_differentiable
