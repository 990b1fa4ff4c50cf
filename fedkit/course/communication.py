"""Lesson 10 (communication and partial participation): bytes per round, unequal local work and FedNova's
normalisation on a quadratic toy whose clients hold unequal data (``quadratic_unequal``), and the checkers of the
lesson's two exercises (``check_exercise`` with the notebook's MNIST Config, ``check_exercise_2`` on the toy).

Exercise 1 (read off the lesson): how many kilobytes does one SCAFFOLD client upload in a round, with the MLP?
Solution: SCAFFOLD uploads its model update and its control-variate update, two vectors of the model's d float32
entries: 2 · 4 · d bytes = 407.12 kB for the MLP 784 → 64 → 10 (d = 50,890), twice FedAvg's 203.56 kB (the table
shows a round's total over its m = 5 clients: 2,035.6 kB / 5).

Exercise 2 (reasoning, then a run): on the unequal toy (n_i = 2, 4, 8, 16 samples, one local epoch, equal weights
p_i = 1/4, η_l = 0.1, 100 rounds), find a batch size B at which FedAvg ends within 0.05 of w*.
Solution: any B ≥ 16. One epoch is K_i = ⌈n_i / B⌉ steps, so B ≥ max n_i = 16 gives every client K_i = 1: equal local
work, hence no objective inconsistency (eq. 2's surrogate is F itself, and FedAvg = FedNova), and with one step no
client drift either (lesson 2): each round is a gradient step on the global objective, and FedAvg converges to w*
(4e-4 away). Every B < 16 leaves the K_i unequal (B = 8: K = 1, 1, 1, 2) and FedAvg settles 0.38 to 1.4 away.
"""
from __future__ import annotations

import math

import numpy as np

from ..config import Config
from ..federation import Federation
from ..runner import run
from . import check, is_number, is_whole, need_config, require, shown
from .client_drift import TOY, distances

SAMPLES = [2, 4, 8, 16]  # n_i of the unequal toy's four clients
TOLERANCE = 0.05  # exercise 2: FedAvg ends within this distance of w*
MAX_BATCH = 64
KB = 1000  # bytes per kilobyte
REFERENCE = object()  # exercise 1's reference answer: 2 · 4 · d / 1000, d the model's parameter count
REFERENCE_BATCH = 16  # exercise 2: every client one step per epoch
TASKS = {1: "how many kilobytes (1 kB = 1,000 bytes) does ONE SCAFFOLD client upload in a round, with the model "
            "above?",
         2: "on the unequal toy (n_i = 2, 4, 8, 16; one local epoch; p_i = 1/4; η_l = {lr:g}; {rounds} rounds), find a "
            "batch size B at which FedAvg ends within 0.05 of w*."}
HINTS = {1: "the table gives a round's total over its clients; what does SCAFFOLD send besides the model update?",
         2: "K_i = ⌈n_i / B⌉ steps per epoch: when do all clients take the same number, and how many?"}
FORMS = {1: "your number of kilobytes (a number)", 2: f"your batch size B (a whole number in [1, {MAX_BATCH}])"}


def toy_config(algorithm: str = "fedavg", local_steps: int | None = None, batch_size: int = 1, lr: float = 0.1,
               rounds: int = 100, **fields) -> Config:
    """The unequal toy: lesson 2's four quadratics with n_i = 2, 4, 8, 16 samples, equal weights p_i = 1/4, every
    client in every round, start at (3, 3); K fixed (``local_steps``) or one local epoch of ⌈n_i / B⌉ steps (None)."""
    return Config(dataset="quadratic_unequal", dataset_args={**TOY, "samples": SAMPLES}, partition="natural",
                  partition_args={}, num_clients=len(SAMPLES), model="quadratic", model_args={"init": [3.0, 3.0]},
                  algorithm=algorithm, algorithm_args={"weighting": "uniform"}, rounds=rounds, local_steps=local_steps,
                  local_epochs=None if local_steps else 1, batch_size=batch_size, lr=lr, **fields)


def surrogate_optimum(steps) -> np.ndarray:
    """The minimiser of Σ_i K_i f_i (FedAvg's objective under unequal local work, for small η_l) on the toy."""
    b, a = np.array(TOY["centers"]), np.array(TOY["curvatures"])
    k = np.asarray(steps, dtype=float)
    return np.linalg.solve(np.einsum("i,ijk->jk", k, a), np.einsum("i,ijk,ik->j", k, a, b))


def upload_kb(base: Config) -> float:
    """Kilobytes one client uploads in a round of SCAFFOLD with ``base``'s model and data, as fedkit counts them."""
    return float(run(base.replace(algorithm="scaffold", algorithm_args={}, rounds=1), progress=False)
                 .clients["bytes_up"].iloc[0]) / KB


def check_exercise(kilobytes: float | None, base: Config) -> None:
    """Exercise 1 (see :func:`fedkit.course.check`): the kilobytes one SCAFFOLD client uploads in a round with
    ``base``'s model and data (the notebook's FedAvg Config)."""
    need_config("base", base)
    if base.optimizer not in (None, "sgd"):
        raise ValueError(f"base must train with SGD (SCAFFOLD's default), got optimizer {base.optimizer!r}")

    def judge(kb) -> str:
        if kb is REFERENCE:  # two model-sized float32 vectors, Δy_i and Δc_i (computed once the task is printed)
            kb = 2 * 4 * Federation(base).fm.dim / KB
        require(is_number(kb) and 0 < kb <= 1e5, f"the upload must be a number of kilobytes in (0, 1e5], got "
                                                 f"{shown(kb)}")
        measured = upload_kb(base)
        require(abs(kb - measured) <= 0.5, f"{kb:g} kB is not what one SCAFFOLD client uploads: fedkit counts "
                f"{'more' if measured > kb else 'less'}. Per client, not per round; and besides its model update "
                "SCAFFOLD sends a second model-sized vector (lesson 3). 4 bytes per float32 entry.")
        return f"one SCAFFOLD client uploads {measured:g} kB a round"

    check(kilobytes, REFERENCE, judge, TASKS[1], HINTS[1], FORMS[1])


def check_exercise_2(batch_size: int | None, lr: float = 0.1, rounds: int = 100) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): a batch size B at which FedAvg on the unequal toy (one local
    epoch, p_i = 1/4, η_l = ``lr``, ``rounds`` rounds) ends within 0.05 of w*."""
    toy_config("fedavg", lr=lr, rounds=rounds)  # the settings, by Config's rules (ConfigError, a ValueError)

    def judge(b) -> str:
        require(is_whole(b) and 1 <= b <= MAX_BATCH, f"B must be a whole number in [1, {MAX_BATCH}], got {shown(b)}")
        b = int(b)
        final = distances(toy_config("fedavg", batch_size=b, lr=lr, rounds=rounds))[-1]
        steps = [math.ceil(n / b) for n in SAMPLES]
        require(final < TOLERANCE, f"with B = {b} the clients take K_i = {steps} local steps per round, and FedAvg "
                                   f"ends {final:.2f} from w*, not within {TOLERANCE}: it weighs client i by K_i "
                                   "(eq. 2). Which B gives every client the same K_i, and which K avoids drift?")
        return f"with B = {b} every client takes K_i = {steps[0]} step(s), and FedAvg ends {final:.1e} from w*"

    check(batch_size, REFERENCE_BATCH, judge, TASKS[2].format(lr=lr, rounds=rounds), HINTS[2], FORMS[2])
