"""Threat models: clients whose uploads are not honest local training.

A threat picks its clients once per run from its own random stream (so the choice does not depend on the
algorithm), says which sampled clients really train, and rewrites the uploads of the others.
"""
from __future__ import annotations

import numpy as np
import torch

from .errors import ConfigError
from .registry import build


class Threat:
    """No threat: every client trains honestly."""

    name = "none"

    def choose(self, num_clients: int, rng: np.random.Generator) -> None:
        self.bad = np.zeros(num_clients, dtype=bool)

    def trains(self, clients: np.ndarray) -> np.ndarray:
        """Which of the sampled clients run local training."""
        return np.ones(len(clients), dtype=bool)

    def uploads(self, clients: np.ndarray, honest: dict[str, torch.Tensor], w, w_prev) -> dict[str, torch.Tensor]:
        """Uploads of all sampled clients ([n, ...], client order) from those of the ones that trained."""
        return honest


class Freeloaders(Threat):
    """TACO's freeloaders (TACO §IV-D): they do no training and upload the previous global update.

    The upload is the last global move in model units, Δ_i = x_t − x_{t−1} (zero in the first round): what a
    lazy client computes from the two models it received, on the scale of honest uploads (algorithms-seed
    §1.6). Any other upload an algorithm expects (e.g. SCAFFOLD's Δc_i) is zero.
    """

    name = "freeloaders"

    def __init__(self, fraction: float | None = None, count: int | None = None):
        if (fraction is None) == (count is None):
            raise ConfigError(f"freeloaders: give exactly one of fraction and count, got fraction={fraction!r}, "
                              f"count={count!r}")
        if fraction is not None and not 0 < fraction < 1:
            raise ConfigError(f"freeloaders: fraction must lie in (0, 1), got {fraction!r}")
        if count is not None and (not isinstance(count, int) or count < 1):
            raise ConfigError(f"freeloaders: count must be an integer ≥ 1, got {count!r}")
        self.fraction, self.count = fraction, count

    def choose(self, num_clients, rng):
        count = self.count if self.count is not None else round(self.fraction * num_clients)
        if not 1 <= count < num_clients:
            raise ConfigError(f"freeloaders: {count} freeloaders among num_clients={num_clients} leaves no "
                              "benign client or no freeloader")
        self.bad = np.zeros(num_clients, dtype=bool)
        self.bad[rng.choice(num_clients, size=count, replace=False)] = True

    def trains(self, clients):
        return ~self.bad[clients]

    def uploads(self, clients, honest, w, w_prev):
        trained = torch.as_tensor(self.trains(clients), device=w.device)
        out = {}
        for key, rows in honest.items():
            full = rows.new_zeros(len(clients), *rows.shape[1:])
            full[trained] = rows
            if key == "delta":
                full[~trained] = w - w_prev
            out[key] = full
        return out


THREATS = {cls.name: cls for cls in (Threat, Freeloaders)}


def make_threat(name: str | None, **options) -> Threat:
    return build("threat", THREATS, name or "none", **options)
