"""Lesson 06 (Byzantine clients and robust aggregation): the exercise's checker.

Exercise: robust DRAG rescales every upload g_m to ‖r‖ and drags it toward the server's reference r by
λ_m = c (1 − cos(g_m, r)) (DRAG eqs. 10 and 14). An exactly reversed upload (cos = −1) becomes (4c − 1) r. Find a c at
which DRAG, under the random-scaling attack, ends clearly ahead of FedAvg under the same attack.
"""
from __future__ import annotations

import numpy as np

from ..config import Config
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown

REFERENCE_C = 0.5  # DRAG's robust default: a reversed upload becomes +r
MARGIN = 0.10  # how far ahead of attacked FedAvg DRAG must end (accuracy, mean over seeds)
LAST = 5  # rounds averaged at the end of a run
TASK = (f"find a c in [0, 1] at which DRAG, under the same attack, ends at least {MARGIN * 100:.0f} points ahead of "
        "FedAvg (mean test accuracy of the last 5 rounds, averaged over the seeds).")
HINT = "an exactly reversed upload becomes (4c − 1) r: for which c does it point the right way?"


def late_accuracy(history, last: int = LAST) -> float:
    """Mean test accuracy over the last ``last`` evaluated rounds of a run."""
    return float(history.rounds["test_accuracy"].dropna().iloc[-last:].mean())


def configs(c: float, attacked: Config, root_samples: int) -> dict[str, Config]:
    """The two methods compared under ``attacked``'s threat: FedAvg and robust DRAG with ``c``."""
    return {"FedAvg": attacked.replace(algorithm="fedavg", algorithm_args={"weighting": "uniform"}),
            "DRAG": attacked.replace(algorithm="drag_robust", algorithm_args={"c": c, "root_samples": root_samples})}


def check_exercise(c: float | None, attacked: Config, seeds, root_samples: int) -> None:
    """The exercise (see :func:`fedkit.course.check`): a ``c`` at which robust DRAG ends at least MARGIN ahead of
    FedAvg, both under ``attacked``'s threat (late accuracy averaged over ``seeds``)."""
    need_config("attacked", attacked)
    if attacked.threat != "random_scaling":
        raise ValueError(f"the exercise compares methods under the random_scaling threat, got {attacked.threat!r}")
    seeds = seed_list(seeds)
    configs(REFERENCE_C, attacked, root_samples)  # root_samples, by Config's rules (ConfigError, a ValueError)

    def judge(c) -> str:
        require(is_number(c) and 0 <= c <= 1, f"c must be a number in [0, 1], got {shown(c)}")
        c = float(c)
        runs = run_seeds(configs(c, attacked, root_samples), seeds)
        acc = {label: float(np.mean([late_accuracy(runs[label, s]) for s in seeds])) for label in ("FedAvg", "DRAG")}
        hint = ("a reversed upload becomes (4c − 1) r: below c = 1/4 it still pushes the model backwards" if c <= 0.25
                else "look at how λ grows with c")
        require(acc["DRAG"] >= acc["FedAvg"] + MARGIN,
                f"with c = {c}, DRAG ends at {acc['DRAG']:.3f} and FedAvg at {acc['FedAvg']:.3f} under the attack: "
                f"not {MARGIN:.2f} ahead; {hint}")
        return f"with c = {c}, DRAG {acc['DRAG']:.3f} vs FedAvg {acc['FedAvg']:.3f} under the attack"

    check(c, REFERENCE_C, judge, TASK, HINT, "your c (a number in [0, 1])")
