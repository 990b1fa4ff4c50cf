"""Lesson 05 (adaptive clients and gradient correction): the checkers of the lesson's two exercises
(``check_exercise`` with the notebook's FAdamGC Config and seeds, ``check_exercise_2`` with its client Adam).

Exercise 1 (a small experiment): FAdamGC corrects every local gradient by the tracked drift, ĝ_k = g_k + y − y_i,
before the client's Adam. The correction is an estimate from earlier rounds; with a large client learning rate the
model moves far between them, the estimate goes stale, and the correction hurts. Find a client learning rate η_l at
which FAdamGC ends ahead of LocalAdam run at the same η_l.
Solution: η_l = 1e-3, the lesson's (FAdamGC about 12 points ahead on seeds 0–1); at 1e-2 the correction falls apart.

Exercise 2 (reasoning, then a run): the client Adam restarts its moments m_0 = v_0 = 0 every round and has no bias
correction (β1 = 0.9, β2 = 0.999). By how many η_l does a client's first local step move each coordinate?
Solution: √10 ≈ 3.16, whatever the gradient's size: m_1 = (1 − β1) g and v_1 = (1 − β2) g², so the step is
η_l m_1 / √v_1 = η_l (1 − β1) / √(1 − β2) · sign(g) = 3.16 η_l · sign(g) (ε is negligible). Bias correction would
divide m and v by 1 − β1 and 1 − β2 and make it 1. Every round thus opens with a step of about 3 η_l in every
coordinate, however small the gradient (and the drift correction added to it): Adam restarted without bias correction
moves first by sign, not by size.
"""
from __future__ import annotations

import numpy as np

from ..analysis import drift_paths
from ..config import Config
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown
from .client_drift import toy_config

REFERENCE_LR = 1e-3  # FAdamGC ahead by about 12 points on seeds 0–1 of lesson 05; at 1e-2 it falls apart
LAST = 5  # rounds averaged at the end of a run
TOLERANCE = 0.02  # exercise 2: |your ratio − fedkit's|
TASKS = {1: "find a client learning rate η_l at which FAdamGC ends ahead of LocalAdam run at the same η_l (mean test "
            "accuracy of the last 5 rounds, averaged over the seeds).",
         2: "the client Adam above restarts its moments m_0 = v_0 = 0 every round and has no bias correction (β1 = "
            "{beta1:g}, β2 = {beta2:g}). By how many η_l does a client's first local step move each coordinate?"}
HINTS = {1: "try a few η_l, a factor of 10 apart: at which η_l does the correction start to hurt?",
         2: "write m_1 and v_1 after one gradient g, then the step η_l m_1 / (√v_1 + ε): what is left of g?"}


def late_accuracy(history, last: int = LAST) -> float:
    """Mean test accuracy over the last ``last`` evaluated rounds of a run (0 for a diverged run)."""
    if history.diverged:
        return 0.0
    return float(history.rounds["test_accuracy"].dropna().iloc[-last:].mean())


def configs(lr: float, fadamgc: Config) -> dict[str, Config]:
    """The two methods compared at client learning rate ``lr``: LocalAdam and FAdamGC (``fadamgc``)."""
    return {"LocalAdam": fadamgc.replace(algorithm="local_adam", algorithm_args={}, lr=lr),
            "FAdamGC": fadamgc.replace(lr=lr)}


def check_exercise(lr: float | None, fadamgc: Config, seeds) -> None:
    """Exercise 1 (see :func:`fedkit.course.check`): a client learning rate ``lr`` at which FAdamGC (``fadamgc``, a
    config with the client Adam) ends ahead of LocalAdam at the same ``lr`` (late accuracy averaged over ``seeds``)."""
    need_config("fadamgc", fadamgc)
    if fadamgc.algorithm != "fadamgc":
        raise ValueError("the exercise compares FAdamGC with LocalAdam: give FAdamGC's config, got "
                         f"{fadamgc.algorithm!r}")
    seeds = seed_list(seeds)
    configs(REFERENCE_LR, fadamgc)  # LocalAdam on fadamgc's settings, by Config's rules (ConfigError, a ValueError)

    def judge(lr) -> str:
        require(is_number(lr) and 0 < lr <= 1, f"η_l must be a number in (0, 1], got {shown(lr)}")
        lr = float(lr)
        runs = run_seeds(configs(lr, fadamgc), seeds)
        acc = {label: float(np.mean([late_accuracy(runs[label, s]) for s in seeds])) for label in ("LocalAdam",
                                                                                                  "FAdamGC")}
        require(acc["FAdamGC"] > acc["LocalAdam"],
                f"with η_l = {lr:g}, FAdamGC ends at {acc['FAdamGC']:.3f} and LocalAdam at {acc['LocalAdam']:.3f}: "
                "not ahead; " + ("the correction is estimated a round earlier and goes stale when each round moves "
                                 "the model far: try a smaller η_l" if lr > REFERENCE_LR else
                                 "too small a step learns little in the rounds given"))
        return f"with η_l = {lr:g}, FAdamGC {acc['FAdamGC']:.3f} vs LocalAdam {acc['LocalAdam']:.3f}"

    check(lr, REFERENCE_LR, judge, TASKS[1], HINTS[1], "your η_l (a number in (0, 1])")


def first_step(fadamgc: Config) -> float:
    """|x_1 − x_0| / η_l per coordinate (their mean) after one local step of ``fadamgc``'s client Adam: one client of
    lesson 02's quadratic federation, one round of K = 1 (LocalAdam)."""
    cfg = toy_config("local_adam", 1, fadamgc.lr, 1, optimizer="adam", optimizer_args=fadamgc.optimizer_args,
                     clients_per_round=1)
    server, _ = drift_paths(cfg)
    return float(np.abs(server[1] - server[0]).mean() / fadamgc.lr)


def check_exercise_2(ratio: float | None, fadamgc: Config) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): how many η_l the first local step of ``fadamgc``'s client Adam
    (moments restarted, no bias correction) moves each coordinate."""
    need_config("fadamgc", fadamgc)
    args = fadamgc.optimizer_args
    if fadamgc.optimizer != "adam" or args.get("bias_correction", True):
        raise ValueError(f"the exercise is about a client Adam without bias correction: fadamgc has optimizer "
                         f"{fadamgc.optimizer!r} with {args!r}")

    def judge(r) -> str:
        require(is_number(r) and 0 < r <= 100, f"the step must be a number of η_l in (0, 100], got {shown(r)}")
        measured = first_step(fadamgc)
        require(abs(r - measured) <= TOLERANCE,
                f"the first local step moves each coordinate {'more' if measured > r else 'less'} than {r:g} η_l. "
                + ("1 would be Adam with bias correction, which this client Adam does not apply. " if r == 1 else "")
                + "Work out m_1 and v_1 from m_0 = v_0 = 0; the size of g cancels.")
        return f"the first local step moves each coordinate by {measured:.3f} η_l, whatever the gradient's size"

    task = TASKS[2].format(beta1=args.get("beta1", 0.9), beta2=args.get("beta2", 0.999))
    check(ratio, (1 - args.get("beta1", 0.9)) / (1 - args.get("beta2", 0.999)) ** 0.5, judge, task, HINTS[2],
          "your number of η_l (a number)")
