"""Lesson 06 (Byzantine clients and robust aggregation): the checkers of the lesson's two exercises
(``check_exercise`` with the notebook's attacked Config and seeds, ``check_exercise_2`` with DRAG's c).

Exercise 1 (a small experiment): robust DRAG rescales every upload g_m to ‖r‖ and drags it toward the server's
reference r by λ_m = c (1 − cos(g_m, r)) (DRAG eqs. 10 and 14). An exactly reversed upload (cos = −1) becomes
(4c − 1) r. Find a c at which DRAG, under the random-scaling attack, ends at least 10 points ahead of FedAvg under the
same attack.
Solution: c = 0.5, DRAG's robust default: a reversed upload becomes +r, and every upload counts with the norm ‖r‖.
Below c = 1/4 a reversed upload still points backwards (4c − 1 < 0), so the attack keeps its bite.

Exercise 2 (reasoning): how long is DRAG's dragged upload v_m (eq. 14, c = 0.5) of an upload orthogonal to r
(cos = 0), in units of ‖r‖?
Solution: √((1 − c)² + c²) = √0.5 ≈ 0.707 at c = 0.5. Its λ is c (1 − 0) = c, and v_m adds (1 − c) times the upload
rescaled to ‖r‖ and c times r: two orthogonal vectors of lengths (1 − c)‖r‖ and c‖r‖. So DRAG shortens an upload that
points sideways and turns it halfway toward r (45° at c = 0.5); an aligned one keeps ‖r‖, and a reversed one becomes
(4c − 1) r.
"""
from __future__ import annotations

import numpy as np
import torch

from ..algorithms.drag import divergence, dragged
from ..config import Config
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown

REFERENCE_C = 0.5  # DRAG's robust default: a reversed upload becomes +r
MARGIN = 0.10  # how far ahead of attacked FedAvg DRAG must end (accuracy, mean over seeds)
LAST = 5  # rounds averaged at the end of a run
TOLERANCE = 0.005  # exercise 2: |your length − fedkit's| in units of ‖r‖
TASKS = {1: f"find a c in [0, 1] at which DRAG, under the same attack, ends at least {MARGIN * 100:.0f} points ahead "
            "of FedAvg (mean test accuracy of the last 5 rounds, averaged over the seeds).",
         2: "how long is DRAG's dragged upload v_m (eq. 14, c = {c:g}) of an upload orthogonal to r (cos = 0), in "
            "units of ‖r‖?"}
HINTS = {1: "an exactly reversed upload becomes (4c − 1) r: for which c does it point the right way?",
         2: "eq. (10) gives its λ; eq. (14) then adds two vectors: how long is each, and at what angle?"}


def late_accuracy(history, last: int = LAST) -> float:
    """Mean test accuracy over the last ``last`` evaluated rounds of a run."""
    return float(history.rounds["test_accuracy"].dropna().iloc[-last:].mean())


def configs(c: float, attacked: Config, root_samples: int) -> dict[str, Config]:
    """The two methods compared under ``attacked``'s threat: FedAvg and robust DRAG with ``c``."""
    return {"FedAvg": attacked.replace(algorithm="fedavg", algorithm_args={"weighting": "uniform"}),
            "DRAG": attacked.replace(algorithm="drag_robust", algorithm_args={"c": c, "root_samples": root_samples})}


def check_exercise(c: float | None, attacked: Config, seeds, root_samples: int) -> None:
    """Exercise 1 (see :func:`fedkit.course.check`): a ``c`` at which robust DRAG ends at least MARGIN ahead of
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

    check(c, REFERENCE_C, judge, TASKS[1], HINTS[1], "your c (a number in [0, 1])")


def orthogonal_length(c: float) -> float:
    """‖v_m‖ / ‖r‖ of robust DRAG's dragged upload (eq. 14, fedkit's) of an upload orthogonal to r (random, seeded)."""
    r, g = torch.randn(2, 100, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    g = 3.0 * (g - (g @ r) / (r @ r) * r)  # orthogonal to r, of another length
    lam, _ = divergence(g[None], r, c)
    return float(dragged(g[None], r, lam, robust=True).norm() / r.norm())


def check_exercise_2(length: float | None, c: float = 0.5) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): ‖v_m‖ / ‖r‖ of robust DRAG's dragged upload (eq. 14, ``c``, the
    notebook's) of an upload orthogonal to r."""
    if not (is_number(c) and 0 <= c <= 1):
        raise ValueError(f"c must be a number in [0, 1] (DRAG's, the notebook's), got {shown(c)}")

    def judge(n) -> str:
        require(is_number(n) and 0 <= n <= 10, f"the length must be a number of ‖r‖ in [0, 10], got {shown(n)}")
        measured = orthogonal_length(c)
        require(abs(n - measured) <= TOLERANCE,
                f"DRAG's v_m of an orthogonal upload is {'longer' if measured > n else 'shorter'} than {n:g} ‖r‖. "
                "Find its λ (eq. 10), then the two parts of eq. (14): their lengths, and the angle between them.")
        return f"the dragged upload is {measured:.3f} ‖r‖ long, at c = {c:g}"

    check(length, ((1 - c) ** 2 + c ** 2) ** 0.5, judge, TASKS[2].format(c=c), HINTS[2],
          "your length (a number of ‖r‖)")
