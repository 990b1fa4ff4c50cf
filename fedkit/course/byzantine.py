"""Lesson 06 (Byzantine clients and robust aggregation): the exercise's checker.

Exercise: robust DRAG rescales every upload g_m to ‖r‖ and drags it toward the server's reference r by
λ_m = c (1 − cos(g_m, r)) (DRAG eqs. 10 and 14). An exactly reversed upload (cos = −1) becomes (4c − 1) r. Find a c at
which DRAG, under the random-scaling attack, ends clearly ahead of FedAvg under the same attack.
"""
from __future__ import annotations

import numpy as np

from ..config import Config
from ..seeds import run_seeds

REFERENCE_C = 0.5  # DRAG's robust default: a reversed upload becomes +r
MARGIN = 0.10  # how far ahead of attacked FedAvg DRAG must end (accuracy, mean over seeds)
LAST = 5  # rounds averaged at the end of a run


def late_accuracy(history, last: int = LAST) -> float:
    """Mean test accuracy over the last ``last`` evaluated rounds of a run."""
    return float(history.rounds["test_accuracy"].dropna().iloc[-last:].mean())


def check_exercise(c: float | None, attacked: Config, seeds, root_samples: int) -> dict[str, float]:
    """Assert that robust DRAG with ``c`` ends at least MARGIN ahead of FedAvg, both under ``attacked``'s threat
    (None: the reference answer is checked); returns both accuracies, averaged over ``seeds``."""
    if c is None:
        print(f"no answer given: checking the reference answer c = {REFERENCE_C}")
        c = REFERENCE_C
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 <= c <= 1:
        raise AssertionError(f"c must be a number in [0, 1], got {c!r}")
    if attacked.threat != "random_scaling":
        raise ValueError(f"the exercise compares methods under the random_scaling threat, got {attacked.threat!r}")
    configs = {"FedAvg": attacked.replace(algorithm="fedavg", algorithm_args={"weighting": "uniform"}),
               "DRAG": attacked.replace(algorithm="drag_robust",
                                        algorithm_args={"c": float(c), "root_samples": root_samples})}
    runs = run_seeds(configs, list(seeds))
    acc = {label: float(np.mean([late_accuracy(runs[label, s]) for s in seeds])) for label in configs}
    hint = ("a reversed upload becomes (4c − 1) r: below c = 1/4 it still pushes the model backwards" if c <= 0.25
            else "look at how λ grows with c")
    assert acc["DRAG"] >= acc["FedAvg"] + MARGIN, (
        f"with c = {c}, DRAG ends at {acc['DRAG']:.3f} and FedAvg at {acc['FedAvg']:.3f} under the attack: "
        f"not {MARGIN:.2f} ahead; {hint}")
    print(f"correct: with c = {c}, DRAG {acc['DRAG']:.3f} vs FedAvg {acc['FedAvg']:.3f} under the attack")
    return acc
