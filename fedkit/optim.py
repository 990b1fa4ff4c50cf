"""Client optimizers as pure functions of flat tensors, so one client or a stack of clients step alike.

A client optimizer turns the step direction d (the stochastic gradient after the algorithm's correction)
into a parameter update. Its state is re-created at the start of every round (the papers' convention).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .errors import ConfigError
from .registry import build


@dataclass(frozen=True)
class SGD:
    """w ← w − lr·(m), m = momentum·m + d + weight_decay·w (plain SGD when momentum = weight_decay = 0)."""

    momentum: float = 0.0
    weight_decay: float = 0.0

    def __post_init__(self):
        if not 0 <= self.momentum < 1:
            raise ConfigError(f"SGD momentum must be in [0, 1), got {self.momentum}")
        if self.weight_decay < 0:
            raise ConfigError(f"SGD weight_decay must be ≥ 0, got {self.weight_decay}")

    def init(self, w: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"m": torch.zeros_like(w)} if self.momentum else {}

    def step(self, w, d, state, lr):
        if self.weight_decay:
            d = d + self.weight_decay * w
        if self.momentum:
            d = self.momentum * state["m"] + d
            state = {"m": d}
        return w - lr * d, state


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma & Ba) with optional bias correction; moments reset every round."""

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    bias_correction: bool = True

    def __post_init__(self):
        for name in ("beta1", "beta2"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"Adam {name} must be in [0, 1), got {getattr(self, name)}")
        if self.eps <= 0:
            raise ConfigError(f"Adam eps must be > 0, got {self.eps}")

    def init(self, w):
        return {"m": torch.zeros_like(w), "v": torch.zeros_like(w), "t": torch.zeros((), device=w.device)}

    def step(self, w, d, state, lr):
        t = state["t"] + 1
        m = self.beta1 * state["m"] + (1 - self.beta1) * d
        v = self.beta2 * state["v"] + (1 - self.beta2) * d * d
        m_hat, v_hat = m, v
        if self.bias_correction:
            m_hat = m / (1 - self.beta1**t)
            v_hat = v / (1 - self.beta2**t)
        return w - lr * m_hat / (v_hat.sqrt() + self.eps), {"m": m, "v": v, "t": t}


OPTIMIZERS = {"sgd": SGD, "adam": Adam}


def make_optimizer(name: str, **options):
    return build("optimizer", OPTIMIZERS, name, **options)
