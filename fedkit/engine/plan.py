"""Which samples a client visits in a round: a padded [steps, batch] index matrix drawn from a seeded RNG."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class ClientPlan:
    client: int
    samples: torch.Tensor  # [n_i] the client's training samples
    per_epoch: int  # steps per pass over them, ⌈n_i / B⌉: an epoch starts at every multiple
    indices: torch.Tensor  # [steps, batch] int64 indices into the training set (padding repeats index 0)
    mask: torch.Tensor  # [steps, batch] float, 1 for a real sample, 0 for padding

    @property
    def steps(self) -> int:
        return len(self.indices)


def local_steps(n_samples: int, batch_size: int, steps: int | None, epochs: int | None) -> int:
    """K_i: a fixed K, or E·⌈n_i / B⌉ for an epoch budget."""
    return steps if steps is not None else epochs * math.ceil(n_samples / batch_size)


def make_plan(client: int, samples: np.ndarray, batch_size: int, steps: int, rng: np.random.Generator
              ) -> ClientPlan:
    """Minibatches without replacement within an epoch (a fresh permutation each epoch, last batch short)."""
    n = len(samples)
    per_epoch = math.ceil(n / batch_size)
    rows, masks = [], []
    while len(rows) < steps:
        order = samples[rng.permutation(n)]
        for b in range(per_epoch):
            batch = order[b * batch_size:(b + 1) * batch_size]
            pad = batch_size - len(batch)
            rows.append(np.concatenate([batch, np.zeros(pad, dtype=np.int64)]))
            masks.append(np.concatenate([np.ones(len(batch)), np.zeros(pad)]))
    return ClientPlan(client, torch.as_tensor(samples, dtype=torch.int64), per_epoch,
                      torch.as_tensor(np.stack(rows[:steps]), dtype=torch.int64),
                      torch.as_tensor(np.stack(masks[:steps]), dtype=torch.float32))
