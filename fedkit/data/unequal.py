"""Quadratic toy federations whose clients hold unequal amounts of data: ``quadratic_unequal`` is ``quadratic``
(``toy.py``: client i minimises f_i(w) = ½ (w − b_i)ᵀ A_i (w − b_i), every sample of it the row [b_i, vec(A_i)])
with ``samples[i]`` samples for user i instead of the same number for every user.

With an epoch budget (``local_epochs`` E), client i then takes K_i = E·⌈n_i / B⌉ local steps: unequal local work,
the setting of FedNova (Wang et al., NeurIPS 2020). Every minibatch still gives the exact gradient A_i (w − b_i),
so a run is deterministic gradient descent. The test rows are one per user, as in ``quadratic``.
"""
from __future__ import annotations

import numpy as np
import torch

from ..errors import ConfigError
from .base import FedData
from .toy import quadratic


def quadratic_unequal(centers=None, curvatures=None, samples: list | tuple = (2, 4, 8, 16), dim: int = 2,
                      seed: int = 0) -> FedData:
    """The toy of ``quadratic`` (centers b_i and curvatures A_i given, or drawn from ``seed`` for len(samples)
    users) with ``samples[i]`` training samples for user i."""
    if isinstance(samples, (str, bytes)) or not isinstance(samples, (list, tuple)) or not samples or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n >= 1 for n in samples):
        raise ConfigError(f"quadratic_unequal: samples must be a non-empty list of integers ≥ 1, got {samples!r}")
    data = quadratic(centers, curvatures, num_users=len(samples), dim=dim, samples_per_user=1, seed=seed)
    if len(data.x_test) != len(samples):
        raise ConfigError(f"quadratic_unequal: samples names {len(samples)} users, centers {len(data.x_test)}")
    users = np.repeat(np.arange(len(samples)), samples)
    x_train = data.x_test[torch.as_tensor(users)]
    return FedData("quadratic_unequal", x_train, torch.zeros(len(x_train)), data.x_test, data.y_test,
                   num_classes=1, users=users, task="objective")
