"""Client optimizers as pure functions of flat tensors, so one client or a stack of clients step alike.

A client optimizer owns the local learning rate η_l and its schedule over rounds (``lr_at(t)``) and turns the
step direction d (the stochastic gradient after the algorithm's correction) into a parameter update. Its state
is re-created at the start of every round (the papers' convention) unless an algorithm keeps it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated

import torch

from .registry import build


@dataclass(frozen=True)
class Constant:
    """η_l in every round."""

    rounds: int = 1

    def __call__(self, t: int) -> float:
        return 1.0


@dataclass(frozen=True)
class Step:
    """η_l · gamma^⌊(t − 1) / every⌋: multiplied by ``gamma`` every ``every`` rounds."""

    rounds: int = 1
    every: Annotated[int, "[1, inf)"] = 10
    gamma: Annotated[float, "(0, 1]"] = 0.1

    def __call__(self, t: int) -> float:
        return self.gamma ** ((t - 1) // self.every)


@dataclass(frozen=True)
class Cosine:
    """Cosine decay from η_l in round 1 to ``floor`` · η_l after the last round."""

    rounds: int = 1
    floor: Annotated[float, "[0, 1]"] = 0.0

    def __call__(self, t: int) -> float:
        return self.floor + (1 - self.floor) * 0.5 * (1 + math.cos(math.pi * (t - 1) / self.rounds))


SCHEDULES = {"constant": Constant, "step": Step, "cosine": Cosine}


def make_schedule(name: str, rounds: int, **options):
    return build("lr_schedule", SCHEDULES, name, fixed={"rounds": rounds}, **options)


@dataclass(frozen=True)
class SGD:
    """w ← w − η_l·m, m = momentum·m + d + weight_decay·w (plain SGD when momentum = weight_decay = 0)."""

    lr: Annotated[float, "(0, inf)"] = 0.01
    momentum: Annotated[float, "[0, 1)"] = 0.0
    weight_decay: Annotated[float, "[0, inf)"] = 0.0
    schedule: Constant | Step | Cosine = field(default_factory=Constant)

    def lr_at(self, t: int) -> float:
        """The local learning rate of round t (1-based)."""
        return self.lr * self.schedule(t)

    @property
    def stateful(self) -> bool:
        """Whether a step depends on earlier steps (momentum); weight decay alone keeps SGD stateless."""
        return bool(self.momentum)

    def init(self, w: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"m": torch.zeros_like(w)} if self.momentum else {}

    def step(self, w, d, state, lr):
        if self.weight_decay:
            d = d + self.weight_decay * w
        if self.momentum:
            d = self.momentum * state["m"] + d
            state = {"m": d}
        return w.add(d, alpha=-lr), state  # one fused op, as torch.optim.SGD does it


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma & Ba) with optional bias correction and AMSGrad's max (Reddi et al. 2018: the denominator uses
    v̂ = max(v̂, v), kept with the moments); moments reset every round unless an algorithm keeps them. β1 = β2 = 0
    is the sign-like step d ⊘ (|d| + ε), bounded by η_l per coordinate (FAdamGC's special case, Theorem 5.2)."""

    lr: Annotated[float, "(0, inf)"] = 0.001
    beta1: Annotated[float, "[0, 1)"] = 0.9
    beta2: Annotated[float, "[0, 1)"] = 0.999
    eps: Annotated[float, "(0, inf)"] = 1e-8
    bias_correction: bool = True
    amsgrad: bool = False
    schedule: Constant | Step | Cosine = field(default_factory=Constant)

    lr_at = SGD.lr_at
    stateful = True  # the moments

    def init(self, w):
        state = {"m": torch.zeros_like(w), "v": torch.zeros_like(w), "t": torch.zeros((), device=w.device)}
        return {**state, "v_max": torch.zeros_like(w)} if self.amsgrad else state

    def step(self, w, d, state, lr):
        t = state["t"] + 1
        m = self.beta1 * state["m"] + (1 - self.beta1) * d
        v = self.beta2 * state["v"] + (1 - self.beta2) * d * d
        new = {"m": m, "v": v, "t": t}
        if self.amsgrad:  # the denominator's v never decreases
            v = new["v_max"] = torch.maximum(state["v_max"], v)
        m_hat, v_hat = m, v
        if self.bias_correction:
            m_hat = m / (1 - self.beta1**t)
            v_hat = v / (1 - self.beta2**t)
        return w - lr * m_hat / (v_hat.sqrt() + self.eps), new


OPTIMIZERS = {"sgd": SGD, "adam": Adam}
Optimizer = SGD | Adam


def make_optimizer(name: str, schedule=None, **options) -> Optimizer:
    """The client optimizer ``name`` with its options (lr, momentum, ...) and an lr schedule (default constant)."""
    return build("optimizer", OPTIMIZERS, name, fixed={"schedule": schedule or Constant()}, **options)


__all__ = ["OPTIMIZERS", "SCHEDULES", "Adam", "Constant", "Cosine", "Optimizer", "SGD", "Step", "make_optimizer",
           "make_schedule"]
