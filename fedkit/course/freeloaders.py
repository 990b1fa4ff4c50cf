"""Lesson 07 (freeloaders and contribution-aware aggregation): the checkers of the lesson's two exercises
(``check_exercise`` with the notebook's TACO Config and seeds, ``check_exercise_2`` with its number of clients).

Exercise 1 (read off the lesson): TACO counts a round against client i when its coefficient α_i ≥ κ and expels it
after λ counts (TACO eq. 10). Freeloaders, which upload the last global move, score a high α; so do honest clients
whose data cover many labels. Find a κ at which TACO expels every freeloader and no honest client, on every seed.
Solution: κ = 0.8, between the honest clients' highest α (about 0.65: group C, which holds half of the labels, and now
and then others) and the freeloaders' (about 0.9 once the model moves, their upload being the average direction): κ =
0.6 expels an honest client, κ = 1 nobody.

Exercise 2 (reasoning): in a federation whose N clients upload one and the same vector (IID data, as alike as can
be), what α_i does TACO's eq. (7) give each of them? (So any κ at or below it would expel them all.)
Solution: α_i = 1 − 1/N = 0.95 for N = 20. Every cosine to the mean upload is 1, and every client holds the share
1/N of the uploads' total norm, so the magnitude factor is 1 − 1/N. Eq. (7) scores a client by how average it is,
not by whether it trained: the more alike honest clients are, the closer they score to a freeloader, and the larger
N, the higher everyone scores. κ must be set against the federation's heterogeneity.
"""
from __future__ import annotations

import pandas as pd
import torch

from ..algorithms.tailored import tailored_coefficients
from ..analysis.detection import detection_rates, freeloader_mask
from ..config import Config
from ..seeds import run_seeds
from . import check, is_number, need_config, require, seed_list, shown

REFERENCE_KAPPA = 0.8  # expels all freeloaders and no honest client on seeds 0–2 of lesson 07 (κ = 0.6: 1 honest)
TOLERANCE = 0.005  # exercise 2: |your α − fedkit's|
TASKS = {1: "find a κ in [0, 1] at which TACO expels every freeloader and no honest client, on every seed above.",
         2: "in a federation whose N = {n} clients upload one and the same vector, what α_i does TACO's eq. (7) give "
            "each of them?"}
HINTS = {1: "which honest clients have the highest α in the right panel, and how high does a freeloader's α climb?",
         2: "eq. (7) is a product of two factors: what is each when all uploads are equal?"}


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
    """Exercise 1 (see :func:`fedkit.course.check`): a threshold ``kappa`` at which TACO expels every freeloader
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

    check(kappa, REFERENCE_KAPPA, judge, TASKS[1], HINTS[1], "your κ (a number in [0, 1])")


def alike_alpha(n: int) -> float:
    """α_i that TACO's eq. (7) (fedkit's) gives each of ``n`` clients uploading the same (random, seeded) vector."""
    d = torch.randn(100, generator=torch.Generator().manual_seed(0)).expand(n, -1)
    return float(tailored_coefficients(d).mean())


def check_exercise_2(alpha: float | None, base: Config) -> None:
    """Exercise 2 (see :func:`fedkit.course.check`): the α_i of eq. (7) of each of N equal uploads, N the clients of
    ``base`` (the notebook's TACO Config)."""
    need_config("base", base)
    n = base.num_clients

    def judge(a) -> str:
        require(is_number(a) and 0 <= a <= 1, f"α must be a number in [0, 1] (eq. 7's range), got {shown(a)}")
        measured = alike_alpha(n)
        require(abs(a - measured) <= TOLERANCE, f"TACO gives each of {n} equal uploads an α "
                f"{'above' if measured > a else 'below'} {a:g}. Both factors of eq. (7): the cosine to the mean "
                "upload, and the client's share of the uploads' total norm.")
        return f"each of {n} equal uploads gets α = {measured:.3f}: a κ at or below it expels them all"

    check(alpha, 1 - 1 / n, judge, TASKS[2].format(n=n), HINTS[2], "your α (a number in [0, 1])")
