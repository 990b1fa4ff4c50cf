"""Lesson 04 (server optimizers and momentum): the exercise's checker.

Exercise: FedAvg-M mixes the last round's mean gradient u into every local step, d_k = β g_k + (1 − β) u_t. A small
β leans on u, which starts at 0, so momentum has a start-up cost. Find a β at which FedAvg-M is already ahead of
FedAvg after a short run (the mean test accuracy of its last 5 rounds, averaged over the seeds).
"""
from __future__ import annotations

import numpy as np

from ..config import Config
from ..seeds import run_seeds

REFERENCE_BETA = 0.3  # ahead of FedAvg on every seed 0–4 after 20 rounds in lesson 04 (β = 0.05: behind on all)
LAST = 5  # rounds averaged at the end of a run


def late_accuracy(history, last: int = LAST) -> float:
    """Mean test accuracy over the last ``last`` evaluated rounds of a run."""
    return float(history.rounds["test_accuracy"].dropna().iloc[-last:].mean())


def compare(beta: float, base: Config, seeds, rounds: int) -> dict[str, float]:
    """{"FedAvg": ..., "FedAvg-M": ...}: late accuracy averaged over ``seeds`` after ``rounds`` rounds of ``base``."""
    short = base.replace(rounds=rounds)
    configs = {"FedAvg": short.replace(algorithm="fedavg", algorithm_args={"weighting": "uniform"}),  # as FedAvg-M
               "FedAvg-M": short.replace(algorithm="fedavg_m", algorithm_args={"beta": beta})}
    runs = run_seeds(configs, list(seeds))
    return {label: float(np.mean([late_accuracy(runs[label, s]) for s in seeds])) for label in configs}


def check_exercise(beta: float | None, base: Config, seeds, rounds: int = 20) -> dict[str, float]:
    """Assert that FedAvg-M with ``beta`` beats FedAvg after ``rounds`` rounds of ``base`` (None: the reference
    answer is checked); returns the two accuracies."""
    if beta is None:
        print(f"no answer given: checking the reference answer β = {REFERENCE_BETA}")
        beta = REFERENCE_BETA
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0 < beta <= 1:
        raise AssertionError(f"β must be a number in (0, 1] (β = 1 is FedAvg itself), got {beta!r}")
    acc = compare(float(beta), base, seeds, rounds)
    gap = acc["FedAvg-M"] - acc["FedAvg"]
    hint = ("near β = 1 FedAvg-M is FedAvg itself: try a smaller β" if beta > 0.5
            else "a small β trusts u, which starts at 0 and lags: try a larger β")
    assert gap > 0, (f"with β = {beta}, FedAvg-M reaches {acc['FedAvg-M']:.3f} after {rounds} rounds and FedAvg "
                     f"{acc['FedAvg']:.3f}: not ahead; {hint}")
    print(f"correct: with β = {beta}, FedAvg-M {acc['FedAvg-M']:.3f} vs FedAvg {acc['FedAvg']:.3f} "
          f"after {rounds} rounds (+{gap:.3f})")
    return acc
