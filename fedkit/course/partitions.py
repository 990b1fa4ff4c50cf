"""Lesson 01, non-IID partitions: how skewed a partition is, and the exercise (find a Dirichlet φ at which clients
hold about two classes each)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import make_partition
from ..errors import ConfigError
from ..plots import label_table
from . import WrongAnswer, check, is_number, require, shown

TARGET = (1.5, 2.5)  # the exercise: mean effective number of classes per client in this range
TASK = ("find a Dirichlet concentration φ at which the clients hold on average between 1.5 and 2.5 effective classes "
        "(eq. 2): about two classes per client.")
HINT = "the skew curve above is your map."
REFERENCE_PHI = 0.07  # 1.9 effective classes on mnist_5k, 20 clients, seed 0 (0.02: fewer than 1.5, 0.5: more)
MAX_PHI = 1e3  # the split is IID in effect long before (and NumPy's Dirichlet overflows near 1e308)
MIN_SIZE = 10  # samples every client holds at least (the dirichlet partitioner's default)


def effective_classes(table: pd.DataFrame) -> pd.Series:
    """Per client (row of a clients × classes table of counts or shares) the effective number of classes
    exp(H(p)), H(p) = −Σ_c p_c ln p_c the entropy of its label shares: 1 for a client of one class, C for a client
    holding all C classes equally."""
    shares = label_table(table, unit="shares").fillna(0).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(shares > 0, shares * np.log(shares), 0.0).sum(axis=1)
    return pd.Series(np.exp(entropy), index=table.index, name="effective classes")


def dirichlet_skew(labels, phi: float, num_clients: int = 20, seed: int = 0) -> float:
    """Mean effective number of classes per client of the ``dirichlet`` partition with concentration ``phi``."""
    parts = make_partition("dirichlet", labels, num_clients, seed, phi=float(phi), min_size=MIN_SIZE)
    return float(effective_classes(label_table(parts, labels)).mean())


def check_exercise(phi, labels, num_clients: int = 20, seed: int = 0) -> None:
    """The exercise (see :func:`fedkit.course.check`): a φ at which the clients of ``dirichlet`` hold on average
    between 1.5 and 2.5 effective classes (on ``labels`` split among ``num_clients`` with ``seed``, the notebook's
    settings)."""
    make_partition("iid", labels, num_clients, seed)  # the settings, by the partitioners' rules (a ValueError)
    if MIN_SIZE * num_clients > len(labels):
        raise ValueError(f"{num_clients} clients of at least {MIN_SIZE} samples need {MIN_SIZE * num_clients} labels, "
                         f"got {len(labels)}")

    def judge(phi) -> str:
        require(is_number(phi) and 0 < phi <= MAX_PHI,
                f"φ must be a number in (0, {MAX_PHI:g}] (the Dirichlet concentration), got {shown(phi)}")
        phi = float(phi)
        try:
            skew = dirichlet_skew(labels, phi, num_clients, seed)
        except ConfigError as err:  # the settings fit (checked above): so small a φ that no draw gives every client
            raise WrongAnswer(f"φ = {phi:g} is too small to partition at all ({err}). Raise φ.") from None
        low, high = TARGET
        require(skew >= low, f"at φ = {phi:g} the clients hold {skew:.2f} effective classes on average, fewer than "
                             f"{low}: nearly one class each. Raise φ.")
        require(skew <= high, f"at φ = {phi:g} the clients hold {skew:.2f} effective classes on average, more than "
                              f"{high}. Lower φ: a smaller concentration puts more of each class on fewer clients.")
        return f"at φ = {phi:g} the clients hold {skew:.2f} effective classes on average"

    check(phi, REFERENCE_PHI, judge, TASK, HINT, f"your φ (a number in (0, {MAX_PHI:g}])")
