"""Threat models: clients whose uploads are not honest local training.

A threat picks its clients once per run from its own random stream (so the choice does not depend on the
algorithm), says which sampled clients really train, and rewrites the uploads of its own clients.
"""
from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import torch

from .errors import ConfigError
from .registry import build, is_int, is_real


class Threat:
    """No threat: every client trains honestly."""

    name = "none"

    def choose(self, num_clients: int, rng: np.random.Generator) -> None:
        self.bad = np.zeros(num_clients, dtype=bool)

    def trains(self, clients: np.ndarray) -> np.ndarray:
        """Which of the sampled clients run local training."""
        return np.ones(len(clients), dtype=bool)

    def uploads(self, clients: np.ndarray, honest: dict[str, torch.Tensor], w, w_prev,
                t: int) -> dict[str, torch.Tensor]:
        """Uploads of all sampled clients ([n, ...], client order) in round t from those of the ones that trained."""
        return honest

    def metrics(self, clients: np.ndarray, t: int) -> dict[str, torch.Tensor]:
        """Per-client values of round t to log ([n] tensors)."""
        return {}


class ChosenClients(Threat):
    """A threat carried out by a fixed set of clients (``count`` of them, or a ``fraction`` of all), picked once."""

    def __init__(self, fraction: Annotated[float, "(0, 1)"] | None = None,
                 count: Annotated[int, "[1, inf)"] | None = None):
        if (fraction is None) == (count is None):
            raise ConfigError(f"{self.name}: give exactly one of fraction and count, got fraction={fraction!r}, "
                              f"count={count!r}")
        if fraction is not None and (not is_real(fraction) or not 0 < fraction < 1):
            raise ConfigError(f"{self.name}: fraction must lie in (0, 1), got {fraction!r}")
        if count is not None and (not is_int(count) or count < 1):
            raise ConfigError(f"{self.name}: count must be an integer ≥ 1, got {count!r}")
        self.fraction, self.count = fraction, count

    def choose(self, num_clients, rng):
        count = self.count if self.count is not None else round(self.fraction * num_clients)
        if not 1 <= count < num_clients:
            raise ConfigError(f"{self.name}: {count} of them among num_clients={num_clients} leaves no "
                              f"benign client or none of them")
        self.bad = np.zeros(num_clients, dtype=bool)
        self.bad[rng.choice(num_clients, size=count, replace=False)] = True
        self.seed = int(rng.integers(2**63))  # the threat's own draws in later rounds


class Freeloaders(ChosenClients):
    """TACO's freeloaders (TACO §IV-D): they do no training and upload the previous global update.

    The upload is the last global move in model units, Δ_i = x_t − x_{t−1} (zero in the first round): what a
    lazy client computes from the two models it received, on the scale of honest uploads (algorithms-seed
    §1.6). Any other upload an algorithm expects (e.g. SCAFFOLD's Δc_i) is zero.
    """

    name = "freeloaders"

    def trains(self, clients):
        return ~self.bad[clients]

    def uploads(self, clients, honest, w, w_prev, t):
        trained = torch.as_tensor(self.trains(clients), device=w.device)
        out = {}
        for key, rows in honest.items():
            full = rows.new_zeros(len(clients), *rows.shape[1:])
            full[trained] = rows
            if key == "delta":
                full[~trained] = w - w_prev
            out[key] = full
        return out


class RandomScaling(ChosenClients):
    """DRAG's Byzantine attack (DRAG §III eq. 5, algorithms-seed §4.4): attackers train honestly, then upload
    p·(θ_m^{t,U} − θ^t) with a fresh p ~ N(0, ``variance``) per attacker and round (p < 0 reverses the update,
    |p| ≠ 1 rescales it). Only the model update is scaled; p is drawn from the threat's own stream keyed by
    (round, client), so it does not depend on the algorithm. Logged per client: ``attack_scale`` (p; 1 if honest).
    """

    name = "random_scaling"

    def __init__(self, fraction: Annotated[float, "(0, 1)"] | None = None,
                 count: Annotated[int, "[1, inf)"] | None = None, variance: Annotated[float, "(0, inf)"] = 3.0):
        super().__init__(fraction, count)
        self.variance = variance

    def scales(self, clients: np.ndarray, t: int) -> np.ndarray:
        """p for each sampled client in round t (1 for a benign one)."""
        return np.array([np.random.default_rng([self.seed, t, int(i)]).normal(0.0, math.sqrt(self.variance))
                         if self.bad[i] else 1.0 for i in clients])

    def uploads(self, clients, honest, w, w_prev, t):
        p = torch.as_tensor(self.scales(clients, t), dtype=w.dtype, device=w.device)
        return {**honest, "delta": p[:, None] * honest["delta"]}

    def metrics(self, clients, t):
        return {"attack_scale": torch.as_tensor(self.scales(clients, t))}


THREATS = {cls.name: cls for cls in (Threat, Freeloaders, RandomScaling)}


def make_threat(name: str | None, **options) -> Threat:
    return build("threat", THREATS, name or "none", **options)
