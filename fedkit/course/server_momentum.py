"""Lesson 04 (server optimizers and momentum): the exercise's checker.

Exercise: FedAvg-M mixes the last round's mean gradient u into every local step, d_k = β g_k + (1 − β) u_t. A small
β leans on u, which starts at 0, so momentum has a start-up cost. Find a β at which FedAvg-M is already ahead of
FedAvg after a short run (the mean test accuracy of its last 5 rounds, averaged over the seeds).
"""
from __future__ import annotations

import numpy as np

from ..config import Config
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown

REFERENCE_BETA = 0.3  # ahead of FedAvg on every seed 0–4 after 20 rounds in lesson 04 (β = 0.05: behind on all)
LAST = 5  # rounds averaged at the end of a run
TASK = ("find a β in (0, 1] at which FedAvg-M is ahead of FedAvg after {rounds} rounds (mean test accuracy of the last "
        "5 rounds, averaged over the seeds).")
HINT = "u starts at 0 and is a round stale: how much should each local step lean on it this early in training?"


def late_accuracy(history, last: int = LAST) -> float:
    """Mean test accuracy over the last ``last`` evaluated rounds of a run."""
    return float(history.rounds["test_accuracy"].dropna().iloc[-last:].mean())


def compare(beta: float, base: Config, seeds, rounds: int) -> dict[str, float]:
    """{"FedAvg": ..., "FedAvg-M": ...}: late accuracy averaged over ``seeds`` after ``rounds`` rounds of ``base``."""
    runs = run_seeds(configs(beta, base, rounds), list(seeds))
    return {label: float(np.mean([late_accuracy(runs[label, s]) for s in seeds])) for label in ("FedAvg", "FedAvg-M")}


def configs(beta: float, base: Config, rounds: int) -> dict[str, Config]:
    """The two methods compared: FedAvg (uniform weights, as FedAvg-M) and FedAvg-M with ``beta``, ``rounds`` rounds."""
    short = base.replace(rounds=rounds)
    return {"FedAvg": short.replace(algorithm="fedavg", algorithm_args={"weighting": "uniform"}),
            "FedAvg-M": short.replace(algorithm="fedavg_m", algorithm_args={"beta": beta})}


def check_exercise(beta: float | None, base: Config, seeds, rounds: int = 20) -> None:
    """The exercise (see :func:`fedkit.course.check`): a β at which FedAvg-M beats FedAvg after ``rounds`` rounds of
    ``base`` (late accuracy averaged over ``seeds``)."""
    need_config("base", base)
    seeds = seed_list(seeds)
    configs(REFERENCE_BETA, base, rounds)  # the settings, by Config's rules (ConfigError, a ValueError)

    def judge(beta) -> str:
        require(is_number(beta) and 0 < beta <= 1,
                f"β must be a number in (0, 1] (β = 1 is FedAvg itself), got {shown(beta)}")
        beta = float(beta)
        acc = compare(beta, base, seeds, rounds)
        gap = acc["FedAvg-M"] - acc["FedAvg"]
        hint = ("near β = 1 FedAvg-M is FedAvg itself: try a smaller β" if beta > 0.5
                else "a small β trusts u, which starts at 0 and lags: try a larger β")
        require(gap > 0, f"with β = {beta}, FedAvg-M reaches {acc['FedAvg-M']:.3f} after {rounds} rounds and FedAvg "
                         f"{acc['FedAvg']:.3f}: not ahead; {hint}")
        return (f"with β = {beta}, FedAvg-M {acc['FedAvg-M']:.3f} vs FedAvg {acc['FedAvg']:.3f} after {rounds} rounds "
                f"(+{gap:.3f})")

    check(beta, REFERENCE_BETA, judge, TASK.format(rounds=rounds), HINT, "your β (a number in (0, 1])")
