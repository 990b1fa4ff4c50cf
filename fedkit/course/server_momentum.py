"""Lesson 04 (server optimizers and momentum): the checkers of the lesson's two exercises (``check_exercise`` with
the notebook's Config and seeds, ``check_exercise_2`` on lesson 02's quadratic federation).

Exercise 1 (a small experiment): FedAvg-M mixes the last round's mean gradient u into every local step,
d_k = β g_k + (1 − β) u_t. A small β leans on u, which starts at 0, so momentum has a start-up cost. Find a β at which
FedAvg-M is already ahead of FedAvg after 20 rounds (mean test accuracy of the last 5 rounds, averaged over the seeds).
Solution: β = 0.3 (ahead on every seed 0–4); β = 0.05 is behind on all. Round 1 steps with β η_l only (u_0 = 0) and
u lags a round, so a heavy momentum pays back only over more rounds; a moderate β gets the gain early.

Exercise 2 (reasoning, then a run): on lesson 02's quadratic federation (K = 10, η_l = 0.1, 100 rounds, every client)
FedAvg stalls 0.56 from w*. Find a β at which FedAvg-M stays within 0.2 of w* over its last 10 rounds.
Solution: β = 0.1 (0.06 from w*); any β from about 0.04 to 0.34 passes (β = 0.5 ends 0.29 away; β = 0.03 swings out to
0.35 and β = 0.02 to 0.8). The share 1 − β of every local step follows u, the same global direction for every client,
which does not drift; only the β g_k part walks towards the client's own optimum, so the bias shrinks about in
proportion to β. Too small a β trusts a direction a round stale, and the iterates oscillate. FedAvg-M thus corrects
drift the way SCAFFOLD does (lesson 3), with one vector broadcast instead of a control variate per client.
"""
from __future__ import annotations

import numpy as np

from ..config import Config
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown
from .client_drift import distances, toy_config

REFERENCE_BETA = 0.3  # ahead of FedAvg on every seed 0–4 after 20 rounds in lesson 04 (β = 0.05: behind on all)
LAST = 5  # rounds averaged at the end of a run
REFERENCE_TOY_BETA = 0.1  # exercise 2: 0.06 from w* (about 0.04 to 0.34 pass)
TOLERANCE = 0.2  # exercise 2: FedAvg-M stays within this distance of w* over its last LAST_TOY rounds
LAST_TOY = 10
TASKS = {1: "find a β in (0, 1] at which FedAvg-M is ahead of FedAvg after {rounds} rounds (mean test accuracy of the "
            "last 5 rounds, averaged over the seeds).",
         2: "on lesson 2's quadratic federation (K = 10, η_l = {lr:g}, {rounds} rounds, every client), where FedAvg "
            "stalls at a biased point, find a β in (0, 1] at which FedAvg-M stays within 0.2 of w* over its last 10 "
            "rounds."}
HINTS = {1: "u starts at 0 and is a round stale: how much should each local step lean on it this early in training?",
         2: "which part of a local step d_k = β g_k + (1 − β) u_t is the same for every client, and which one drifts?"}


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
    """Exercise 1 (see :func:`fedkit.course.check`): a β at which FedAvg-M beats FedAvg after ``rounds`` rounds of
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

    check(beta, REFERENCE_BETA, judge, TASKS[1].format(rounds=rounds), HINTS[1], "your β (a number in (0, 1])")


def check_exercise_2(beta: float | None, lr: float = 0.1, rounds: int = 100) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): a β at which FedAvg-M on lesson 02's quadratic federation
    (K = 10, η_l = ``lr``, ``rounds`` rounds) stays within 0.2 of w* over its last 10 rounds."""
    toy_config("fedavg_m", 10, lr, rounds)  # the settings, by Config's rules (ConfigError, a ValueError)

    def judge(beta) -> str:
        require(is_number(beta) and 0 < beta <= 1,
                f"β must be a number in (0, 1] (β = 1 is FedAvg itself), got {shown(beta)}")
        beta = float(beta)
        path = distances(toy_config("fedavg_m", 10, lr, rounds, algorithm_args={"beta": beta}))
        way = ("the β g_k part of each step walks towards the client's own optimum: try a smaller β"
               if beta > REFERENCE_TOY_BETA else "u is a round stale, and leaning on it alone oscillates: try a larger "
                                                 "β")
        far = path[-LAST_TOY:].max()
        require(far < TOLERANCE, f"with β = {beta:g} FedAvg-M is up to {far:.2f} from w* over its last {LAST_TOY} "
                                 f"rounds, not within {TOLERANCE}; {way}.")
        return f"with β = {beta:g} FedAvg-M stays within {far:.2f} of w* over its last {LAST_TOY} rounds"

    check(beta, REFERENCE_TOY_BETA, judge, TASKS[2].format(lr=lr, rounds=rounds), HINTS[2],
          "your β (a number in (0, 1])")

