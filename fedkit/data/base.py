"""The in-memory form every data set takes: whole train/test tensors, ready to live on a device."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class FedData:
    """A labelled data set held as tensors.

    x_* are float32 features ([n, C, H, W] images scaled to [0, 1], [n, F] tabular) or int64 token ids
    ([n, L] text); y_* are int64 labels. ``users`` gives, for data sets with a natural split (LEAF), the
    writer/role id of every training sample, else None.
    ``task`` is "classification" (cross-entropy loss, accuracy) or "objective" (the model's output is the
    per-sample loss itself, as in the quadratic toy federations; there is no accuracy).
    """

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    num_classes: int
    users: np.ndarray | None = None
    task: str = "classification"

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    def __post_init__(self):
        if len(self.x_train) != len(self.y_train) or len(self.x_test) != len(self.y_test):
            raise ValueError(f"{self.name}: features and labels differ in length")
        if self.users is not None and len(self.users) != len(self.y_train):
            raise ValueError(f"{self.name}: users must name one user per training sample")
