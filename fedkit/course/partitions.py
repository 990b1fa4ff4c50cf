"""Lesson 01 (non-IID partitions): how skewed a partition is, and the checkers of the lesson's two exercises
(``check_exercise`` and ``check_exercise_2``, each with the notebook's labels).

Exercise 1 (read off the lesson): find a Dirichlet concentration φ at which the clients hold on average between 1.5
and 2.5 effective classes (eq. 2).
Solution: φ ≈ 0.07 (1.9 effective classes on mnist_5k, 20 clients, seed 0); the skew curve crosses 1.5 near φ = 0.05
and 2.5 near φ = 0.1, so any φ in about [0.05, 0.1] passes (0.02 gives fewer than 1.5, 0.5 more than 5).

Exercise 2 (reasoning about eq. 2): give the label counts of one client that holds every class, each at least 1 % of
its samples, yet counts as between 1.9 and 2.1 effective classes.
Solution: e.g. 850, 70 and eight classes of 10 (shares 0.85, 0.07, 8 × 0.01): 2.0 effective classes. The nine
classes of 1 % beside one dominant class already make 1.65 (exp of 0.09 + 0.41), and two equal classes alone make 2:
the second class must stay small. Eq. (2) is an entropy, so it counts a class by its share, not by its presence: "two
classes per client" in Exercise 1 may hold more classes than two, and a client can hold ten and count as two.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import make_partition
from ..errors import ConfigError
from ..plots import label_table
from . import WrongAnswer, check, is_number, is_whole, require, shown

TARGET = (1.5, 2.5)  # exercise 1: mean effective number of classes per client in this range
TARGET_2 = (1.9, 2.1)  # exercise 2: effective classes of the client given
MIN_SHARE = 0.01  # exercise 2: every class holds at least this share of the client's samples
MAX_COUNT = 10**9  # exercise 2: samples per class
TASKS = {1: "find a Dirichlet concentration φ at which the clients hold on average between 1.5 and 2.5 effective "
            "classes (eq. 2): about two classes per client.",
         2: "give the label counts of ONE client (a whole number per class) that holds every class, each at least 1 % "
            "of its samples, yet counts as between 1.9 and 2.1 effective classes (eq. 2)."}
HINTS = {1: "the skew curve above is your map.",
         2: "eq. (2) counts a class by its share: how much do nine small classes add to one large one, and how "
            "large may a second class be?"}
REFERENCE_COUNTS = [850, 70] + [10] * 8  # shares 0.85, 0.07 and 8 × 0.01: 2.0 effective classes
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
    """Exercise 1 (see :func:`fedkit.course.check`): a φ at which the clients of ``dirichlet`` hold on average
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

    check(phi, REFERENCE_PHI, judge, TASKS[1], HINTS[1], f"your φ (a number in (0, {MAX_PHI:g}])")


def check_exercise_2(counts, labels) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): one client's label ``counts`` (one per class of ``labels``, the
    notebook's) holding every class, each at least 1 % of its samples, at 1.9 to 2.1 effective classes."""
    make_partition("iid", labels, 1, 0)  # the labels, by the partitioners' rules (a ValueError)
    classes = len(np.unique(labels))

    def judge(counts) -> str:
        listed = counts.tolist() if isinstance(counts, np.ndarray) else counts
        require(isinstance(listed, (list, tuple)) and len(listed) == classes
                and all(is_whole(n) and 0 <= n <= MAX_COUNT for n in listed),
                f"answer with {classes} whole numbers of samples in [0, 10⁹], one per class, got {shown(counts)}")
        counts = [int(n) for n in listed]
        shares = np.asarray(counts, dtype=float) / max(sum(counts), 1)
        require(shares.min() >= MIN_SHARE, f"class {int(shares.argmin())} holds {shares.min():.1%} of your client's "
                                           f"samples: every class must hold at least {MIN_SHARE:.0%}.")
        found = float(effective_classes(pd.DataFrame([counts])).iloc[0])
        low, high = TARGET_2
        require(found >= low, f"your client counts as {found:.2f} effective classes, fewer than {low}: spread more "
                              "of its samples over its largest classes.")
        require(found <= high, f"your client counts as {found:.2f} effective classes, more than {high}: give more of "
                               "its samples to its largest class.")
        return f"a client holding all {classes} classes counts as {found:.2f} effective classes"

    check(counts, REFERENCE_COUNTS, judge, TASKS[2], HINTS[2], f"your counts (a list of {classes} whole numbers)")
