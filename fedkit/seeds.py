"""Seed sweeps: the same configs over several seeds (each seed a run, cached like any run), as one tidy frame with
mean ± std per method and round. The papers report mean ± std over runs; one seed cannot separate methods whose
gap is smaller than the seed-to-seed spread."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .config import Config
from .history import History
from .runner import run_together


def run_seeds(configs: dict[str, Config], seeds, **run_args) -> dict[tuple[str, int], History]:
    """Every labelled config at every seed, keyed (label, seed); ``run_args`` go to ``run`` (cache, progress).
    The seeds of a config the vectorized engine runs train together, in one stack per round (``run_together``)."""
    run_args.setdefault("progress", False)
    seeds = [int(seed) for seed in seeds]
    out = {}
    for label, cfg in configs.items():
        histories = run_together([cfg.replace(seed=seed) for seed in seeds], **run_args)
        out.update({(label, seed): h for seed, h in zip(seeds, histories)})
    return out


def tidy(histories: dict[tuple[str, int], History], column: str = "test_accuracy") -> pd.DataFrame:
    """One row per (method, seed, round): ``column`` and whether that run diverged."""
    frames = [h.rounds[["round", column]].assign(method=label, seed=seed, diverged=h.diverged)
              for (label, seed), h in histories.items()]
    return pd.concat(frames, ignore_index=True)[["method", "seed", "round", column, "diverged"]]


def finals(histories: dict[tuple[str, int], History]) -> pd.DataFrame:
    """One row per (method, seed): final accuracy (NaN if diverged), last round trained, why it ended early."""
    return pd.DataFrame([{"method": label, "seed": seed, "final_accuracy": h.final_accuracy, "diverged": h.diverged,
                          "rounds": int(h.rounds["round"].iloc[-1]), "ended_early": h.ended_early}
                         for (label, seed), h in histories.items()])


def reach(histories: dict[tuple[str, int], History], target: float,
          per_round: str = "sim_seconds") -> pd.DataFrame:
    """One row per (method, seed): the first round whose test accuracy reaches ``target`` and the time until then,
    the rounds' ``per_round`` column summed (default the simulated clock); NaN where never reached or diverged."""
    rows = []
    for (label, seed), h in histories.items():
        hit = None if h.diverged else h.rounds_to(target)
        rows.append({"method": label, "seed": seed, "target": target, "diverged": h.diverged,
                     "rounds_to_target": np.nan if hit is None else hit,
                     "time_to_target": np.nan if hit is None else h.time_to(target, per_round)})
    return pd.DataFrame(rows)


def by_seed(reached: pd.DataFrame, column: str, never) -> pd.DataFrame:
    """Seeds × methods of ``column`` of a ``reach`` frame, a seed that never reached the target (or diverged) counted
    as ``never`` (a number, or one per method: e.g. the round budget + 1, later than any seed that did)."""
    frame = reached.pivot(index="seed", columns="method", values=column)[reached["method"].unique()]
    return frame.fillna(pd.Series(never, index=frame.columns) if isinstance(never, dict) else never)


def verdict(a: str, b: str, values: pd.DataFrame, higher: bool = False) -> str:
    """Whether ``a`` or ``b`` is lower on every seed (columns of ``values``, seeds as rows: e.g. rounds to a target;
    ``higher=True``: which is higher, e.g. final accuracy), 'seeds overlap: undecided', or no verdict with fewer than
    two seeds each (``separated``)."""
    decided = separated(values[a], values[b])
    if decided is None:
        return "no verdict (one seed)"
    if not decided:
        return "seeds overlap: undecided"
    a_below = values[a].max() < values[b].min()
    first, second = (a, b) if a_below != higher else (b, a)
    return f"{first} {'>' if higher else '<'} {second} on every seed"


def mean_std(frame: pd.DataFrame, value: str, by=("method",)) -> pd.DataFrame:
    """mean, std (ddof 1; NaN for one seed), min, max and the number of seeds of ``value`` per group; a diverged
    seed's NaN counts as missing, and ``diverged`` says how many seeds diverged."""
    groups = frame.groupby(list(by), sort=False)
    out = groups[value].agg(["mean", "std", "min", "max", "count"])
    if "diverged" in frame:
        out["diverged"] = groups["diverged"].sum().astype(int)
    return out.rename(columns={"count": "seeds"})


def pm(mean: float, std: float, scale: float = 100.0, digits: int = 2) -> str:
    """'84.06 ± 0.31' (× ``scale``); without a spread (one seed) just the mean; '×' for NaN."""
    if np.isnan(mean):
        return "×"
    return f"{scale * mean:.{digits}f}" + ("" if np.isnan(std) else f" ± {scale * std:.{digits}f}")


def separated(a: pd.Series, b: pd.Series) -> bool | None:
    """Whether two methods' per-seed values are decidably ordered: every seed of one above every seed of the other
    (True), or not (False); None with fewer than two seeds each, where no verdict is possible."""
    a, b = a.dropna(), b.dropna()
    if len(a) < 2 or len(b) < 2:
        return None
    return bool(a.min() > b.max() or b.min() > a.max())
