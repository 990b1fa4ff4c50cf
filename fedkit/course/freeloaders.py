"""Lesson 07 (freeloaders and contribution-aware aggregation): the exercise's checker.

Exercise: TACO counts a round against client i when its coefficient α_i ≥ κ and expels it after λ counts
(TACO eq. 10). Freeloaders, which upload the last global move, score a high α; so do honest clients whose data
cover many labels. Find a κ at which TACO expels every freeloader and no honest client, on every seed.
"""
from __future__ import annotations

import pandas as pd

from ..analysis.detection import detection_rates, freeloader_mask
from ..config import Config
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown

REFERENCE_KAPPA = 0.8  # expels all freeloaders and no honest client on seeds 0–2 of lesson 07 (κ = 0.6: 1 honest)
TASK = "find a κ in [0, 1] at which TACO expels every freeloader and no honest client, on every seed above."
HINT = "which honest clients have the highest α in the right panel, and how high does a freeloader's α climb?"


def rates(kappa: float, base: Config, seeds) -> pd.DataFrame:
    """One row per seed: TACO's true- and false-positive rates (expelled freeloaders / freeloaders, expelled honest /
    honest clients, at the end of training) with threshold ``kappa`` on ``base`` (a TACO config with freeloaders)."""
    cfg = taco_config(kappa, base)
    runs = run_seeds({"TACO": cfg}, list(seeds))
    rows = [(s, *detection_rates(runs["TACO", s], freeloader_mask(cfg.replace(seed=s)))) for s in seeds]
    return pd.DataFrame(rows, columns=["seed", "TPR", "FPR"]).set_index("seed")


def taco_config(kappa: float, base: Config) -> Config:
    """``base`` with TACO's threshold κ = ``kappa``; ValueError if its detector is off."""
    if not base.algorithm_args.get("detect", True):
        raise ValueError("the exercise measures TACO's detector: base has detect=False")
    return base.replace(algorithm_args={**base.algorithm_args, "kappa": float(kappa)})


def check_exercise(kappa: float | None, base: Config, seeds) -> None:
    """The exercise (see :func:`fedkit.course.check`): a threshold ``kappa`` at which TACO expels every freeloader
    and no honest client on every seed of ``seeds`` (``base``: a TACO config with freeloaders)."""
    need_config("base", base)
    if base.algorithm != "taco" or base.threat != "freeloaders":
        raise ValueError(f"the exercise runs TACO against freeloaders, got algorithm {base.algorithm!r} and "
                         f"threat {base.threat!r}")
    seeds = seed_list(seeds)
    taco_config(REFERENCE_KAPPA, base)  # the settings (ValueError)

    def judge(kappa) -> str:
        require(is_number(kappa) and 0 <= kappa <= 1,
                f"κ must be a number in [0, 1] (α_i lies there), got {shown(kappa)}")
        kappa = float(kappa)
        found = rates(kappa, base, seeds)
        missed = found[found["TPR"] < 1].index.tolist()
        require(not missed, f"with κ = {kappa}, some freeloaders stay on seeds {missed} (TPR "
                            f"{found['TPR'].round(2).tolist()}): their α does not reach κ often enough; try a lower κ")
        wrong = found[found["FPR"] > 0].index.tolist()
        require(not wrong, f"with κ = {kappa}, honest clients are expelled on seeds {wrong} (FPR "
                           f"{found['FPR'].round(2).tolist()}): clients holding many labels also score a high α; "
                           "try a higher κ")
        return f"with κ = {kappa}, every freeloader and no honest client is expelled on seeds {seeds}"

    check(kappa, REFERENCE_KAPPA, judge, TASK, HINT, "your κ (a number in [0, 1])")
