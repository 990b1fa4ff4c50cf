"""Quadratic toy federations: client i minimises f_i(w) = ½ (w − b_i)ᵀ A_i (w − b_i).

Every sample of client i is the row [b_i, vec(A_i)], so any minibatch yields the exact gradient
A_i (w − b_i): local training is deterministic gradient descent, and one round can be computed by hand.
With the model ``quadratic`` (whose output is the per-sample objective) the global optimum of the
equally weighted federation is w* = (Σ A_i)⁻¹ Σ A_i b_i.
"""
from __future__ import annotations

import numpy as np
import torch

from ..errors import ConfigError
from .base import FedData


def quadratic(centers=None, curvatures=None, num_users: int = 4, dim: int = 2, samples_per_user: int = 8,
              seed: int = 0) -> FedData:
    """Centers b_i ([users, dim]) and SPD curvatures A_i ([users, dim, dim]) given, or drawn from ``seed``.

    Drawn curvatures are anisotropic and rotated differently per client, which is what makes local steps
    drift away from the global optimum (client drift).
    """
    if centers is None:
        rng = np.random.default_rng(seed)
        centers = rng.normal(0, 2, size=(num_users, dim))
        curvatures = []
        for _ in range(num_users):
            q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
            curvatures.append(q @ np.diag(rng.uniform(0.1, 2.0, size=dim)) @ q.T)
    b = np.asarray(centers, dtype=np.float64)
    a = np.asarray(curvatures, dtype=np.float64)
    if b.ndim != 2 or a.shape != (len(b), b.shape[1], b.shape[1]):
        raise ConfigError(f"quadratic: centers must be [users, dim] and curvatures [users, dim, dim], got "
                          f"{b.shape} and {a.shape}")
    if samples_per_user < 1:
        raise ConfigError(f"quadratic: samples_per_user must be ≥ 1, got {samples_per_user}")
    rows = np.concatenate([b, a.reshape(len(b), -1)], axis=1)
    x_test = torch.tensor(rows, dtype=torch.float32)
    users = np.repeat(np.arange(len(b)), samples_per_user)
    x_train = x_test[torch.as_tensor(users)]
    return FedData("quadratic", x_train, torch.zeros(len(x_train)), x_test, torch.zeros(len(x_test)),
                   num_classes=1, users=users, task="objective")


def optimum(data: FedData) -> np.ndarray:
    """w* of the equally weighted federation in ``data`` (its test rows are one per client)."""
    x = data.x_test.double().numpy()
    dim = int((np.sqrt(1 + 4 * x.shape[1]) - 1) / 2)
    b, a = x[:, :dim], x[:, dim:].reshape(-1, dim, dim)
    return np.linalg.solve(a.sum(0), np.einsum("uij,uj->i", a, b))
