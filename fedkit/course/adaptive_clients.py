"""Lesson 05 (adaptive clients and gradient correction): the exercise's checker.

Exercise: FAdamGC corrects every local gradient by the tracked drift, ĝ_k = g_k + y − y_i, before the client's Adam.
The correction is an estimate from earlier rounds; with a large client learning rate the model moves far between
them, the estimate goes stale, and the correction hurts. Find a client learning rate η_l at which FAdamGC ends
ahead of LocalAdam run at the same η_l.
"""
from __future__ import annotations

import numpy as np

from ..config import Config
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown

REFERENCE_LR = 1e-3  # FAdamGC ahead by about 12 points on seeds 0–1 of lesson 05; at 1e-2 it falls apart
LAST = 5  # rounds averaged at the end of a run
TASK = ("find a client learning rate η_l at which FAdamGC ends ahead of LocalAdam run at the same η_l (mean test "
        "accuracy of the last 5 rounds, averaged over the seeds).")
HINT = "try a few η_l, a factor of 10 apart: at which η_l does the correction start to hurt?"


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
    """The exercise (see :func:`fedkit.course.check`): a client learning rate ``lr`` at which FAdamGC (``fadamgc``, a
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

    check(lr, REFERENCE_LR, judge, TASK, HINT, "your η_l (a number in (0, 1])")
