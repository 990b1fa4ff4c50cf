"""A model as a pure function of one flat parameter vector, and the local step built on it."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad

from ..layout import Layout
from .program import Batch, ClientProgram


class FlatModel:
    """Wraps an ``nn.Module`` so that ``fm(w, x)`` evaluates it at the flat parameter vector ``w``."""

    def __init__(self, module: torch.nn.Module):
        self.module = module
        self.layout = Layout(module)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self.names = [n for n, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.frozen = {n: p.detach() for n, p in module.named_parameters() if not p.requires_grad}
        self.buffers = dict(module.named_buffers())
        self.output_layer = module.get_submodule(self.layout.layers[-1])

    @property
    def dim(self) -> int:
        return sum(self.numels)

    def flat(self) -> torch.Tensor:
        """The module's current trainable parameters as one vector."""
        return torch.cat([p.detach().reshape(-1) for p in self.module.parameters() if p.requires_grad])

    def unflatten(self, w: torch.Tensor) -> dict[str, torch.Tensor]:
        return {n: t.view(s) for n, t, s in zip(self.names, w.split(self.numels), self.shapes)}

    def __call__(self, w: torch.Tensor, x: torch.Tensor, buffers: dict | None = None) -> torch.Tensor:
        """The output at parameters w; a training-mode forward updates ``buffers`` (default: the module's)."""
        buffers = self.buffers if buffers is None else buffers
        return functional_call(self.module, {**self.unflatten(w), **self.frozen, **buffers}, (x,))

    def features(self, w: torch.Tensor, x: torch.Tensor, buffers: dict | None = None):
        """(output, the output layer's input) at parameters w."""
        seen = []
        handle = self.output_layer.register_forward_pre_hook(lambda _, args: seen.append(args[0]))
        try:
            out = self(w, x, buffers)
        finally:
            handle.remove()
        return out, seen[-1]


def sample_loss(task: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """Per-sample loss of a task: cross-entropy for classification, the model output itself for objectives."""
    if task == "classification":
        return lambda out, y: F.cross_entropy(out, y, reduction="none")
    return lambda out, y: out


def make_client_step(fm: FlatModel, program: ClientProgram, task: str, vectorized: bool = False):
    """One local step of one client: ``(w, local, c, x, y, mask, buffers) -> (w, local, loss)``.

    ``local`` is the client's within-round state (optimizer moments, an algorithm's momentum, ...); the step
    itself is the program's ``local_step``, which may evaluate the minibatch gradient at any point.
    ``mask`` marks the real samples of a padded batch; the returned loss is the batch's data loss at w.
    ``buffers`` (BatchNorm statistics, updated in place) are an explicit input because torch.func forbids
    mutating tensors captured from outside a transformed function.
    ``vectorized``: the step will run under ``vmap``, so the gradient is ``torch.func.grad``; one client alone
    takes the same gradient with plain autograd, which is faster on a CPU (benchmarks/gradient.py: 1.2–1.3× for
    the small CNN, 1.3–1.4× for the 64-unit LSTM).
    """
    per_sample = sample_loss(task)

    def loss(w, c, x, y, mask, buffers):
        if program.needs_features:
            out, features = fm.features(w, x, buffers)
        else:
            out, features = fm(w, x, buffers), None
        batch = Batch(x, y, mask, out, features,
                      lambda v: fm.features(v, x, {k: b.clone() for k, b in buffers.items()}))
        data = batch.mean(per_sample(out, y))
        return program.objective(data, w, c, batch), data

    gradient = grad(loss, has_aux=True) if vectorized else _autograd(loss)

    def step(w, local, c, x, y, mask, buffers):
        return program.local_step(w, local, c, lambda v: gradient(v, c, x, y, mask, buffers))

    return step


def _autograd(loss):
    """``torch.func.grad(loss, has_aux=True)`` computed with torch.autograd (same value, less overhead)."""

    def gradient(w, *args):
        with torch.enable_grad():
            v = w.detach().requires_grad_(True)
            total, data = loss(v, *args)
            (g,) = torch.autograd.grad(total, v)
        return g, data.detach()

    return gradient


@torch.no_grad()
def evaluate(fm: FlatModel, w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, task: str,
             buffers: dict | None = None, chunk: int = 2048) -> tuple[float, float]:
    """(accuracy, mean loss) of the model at w on (x, y); accuracy is NaN for objective tasks."""
    fm.module.eval()
    per_sample = sample_loss(task)
    total_loss, correct = 0.0, 0
    for start in range(0, len(x), chunk):
        out = fm(w, x[start:start + chunk], buffers)
        total_loss += per_sample(out, y[start:start + chunk]).sum().item()
        if task == "classification":
            correct += (out.argmax(1) == y[start:start + chunk]).sum().item()
    fm.module.train()
    accuracy = correct / len(x) if task == "classification" else math.nan
    return accuracy, total_loss / len(x)
