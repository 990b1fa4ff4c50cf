"""FedProx's Synthetic(α, β) federation (Li et al. 2020, "Federated Optimization in Heterogeneous Networks").

For device k: u_k ~ N(0, α), W_k ~ N(u_k, 1) [dim × classes], b_k ~ N(u_k, 1); B_k ~ N(0, β),
v_k ~ N(B_k, 1) [dim]; samples x ~ N(v_k, Σ) with Σ diagonal, Σ_jj = j^-1.2; labels
y = argmax softmax(W_kᵀx + b_k).
β controls how much the local inputs differ. α is meant to make the local models differ, but since u_k
shifts every logit of a sample by the same amount (u_k (Σ_j x_j + 1)) it changes no label: with the same
seed, the data do not depend on α, exactly as with the authors' generator. As there, α and β are used as
standard deviations and device sizes are lognormal(4, 2) + 50. Each device's samples are split at random
80% train / 20% test, as in the paper.
"""
from __future__ import annotations

import numbers

import numpy as np
import torch

from ..errors import ConfigError
from ..registry import is_int
from .base import FedData

TRAIN_FRACTION = 0.8


def _check(ok: bool, option: str, rule: str, value) -> None:
    if not ok:
        raise ConfigError(f"synthetic: {option} {rule}, got {value!r}")


def synthetic(alpha: float = 1.0, beta: float = 1.0, num_users: int = 30, dim: int = 60,
              num_classes: int = 10, seed: int = 0, samples_per_user: int | None = None) -> FedData:
    """Synthetic(α, β): float32 features [n, dim], labels in [0, num_classes), ``users`` = device of each
    training sample. ``samples_per_user=None`` draws the device sizes as in the paper; an int fixes them."""
    for name, value in (("alpha", alpha), ("beta", beta)):
        _check(isinstance(value, numbers.Real) and not isinstance(value, bool) and value >= 0, name,
               "must be a number ≥ 0", value)
    for name, value, low in (("num_users", num_users, 1), ("dim", dim, 1), ("num_classes", num_classes, 2),
                             ("seed", seed, 0)):
        _check(is_int(value) and value >= low, name, f"must be an integer ≥ {low}", value)
    if samples_per_user is not None:
        _check(is_int(samples_per_user) and samples_per_user >= 2, "samples_per_user",
               "must be None or an integer ≥ 2", samples_per_user)

    rng = np.random.default_rng(seed)
    if samples_per_user is None:
        sizes = rng.lognormal(4, 2, num_users).astype(np.int64) + 50
    else:
        sizes = np.full(num_users, samples_per_user)
    std_x = np.arange(1, dim + 1) ** -0.6  # sqrt of Σ_jj = j^-1.2
    parts = {"x_train": [], "y_train": [], "x_test": [], "y_test": [], "users": []}
    for k, n in enumerate(sizes):
        u, b_mean = rng.normal(0, alpha), rng.normal(0, beta)
        w, b = rng.normal(u, 1, (dim, num_classes)), rng.normal(u, 1, num_classes)
        v = rng.normal(b_mean, 1, dim)
        x = rng.normal(v, std_x, (n, dim))
        y = np.argmax(x @ w + b, axis=1)
        order = rng.permutation(n)
        train, test = order[:int(TRAIN_FRACTION * n)], order[int(TRAIN_FRACTION * n):]
        parts["x_train"].append(x[train])
        parts["y_train"].append(y[train])
        parts["x_test"].append(x[test])
        parts["y_test"].append(y[test])
        parts["users"].append(np.full(len(train), k))
    cat = {key: np.concatenate(value) for key, value in parts.items()}
    features = {key: torch.tensor(cat[key], dtype=torch.float32) for key in ("x_train", "x_test")}
    labels = {key: torch.tensor(cat[key], dtype=torch.int64) for key in ("y_train", "y_test")}
    return FedData("synthetic", features["x_train"], labels["y_train"], features["x_test"], labels["y_test"],
                   num_classes=num_classes, users=cat["users"].astype(np.int64))
