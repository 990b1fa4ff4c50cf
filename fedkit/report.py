"""Tables of results in the papers' style: final accuracy, rounds and time to a target ('T+' not reached,
× diverged), the paper's cell beside fedkit's, and whether a paper's comparison holds."""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd

from .history import History

DEFAULT_TARGETS = (0.5, 0.7, 0.8, 0.9)


def rounds_to_target(h: History, target: float) -> str:
    r = h.rounds_to(target)
    if r is not None:
        return str(r)
    return "×" if h.diverged else f"{int(h.rounds['round'].iloc[-1])}+"


def summary_table(histories: dict[str, History], targets=None) -> pd.DataFrame:
    """One row per run: final and best test accuracy, rounds to each target, seconds of client compute."""
    rows = {}
    for label, h in histories.items():
        r = h.rounds
        row = {"final acc": "×" if h.diverged else f"{h.final_accuracy:.4f}",
               "best acc": f"{r['test_accuracy'].max():.4f}"}
        for target in targets or DEFAULT_TARGETS:
            row[f"rounds to {target:g}"] = rounds_to_target(h, target)
        row["client s/round (max)"] = f"{r['client_seconds_max'].mean():.3f}"
        row["wall s"] = f"{r['seconds'].sum():.1f}"
        rows[label] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def reached(r) -> str:
    """Rounds to the target in brackets ('(12)', '(×)' never reached, '(diverged)'), then 'all expelled' where the
    run stopped because every client had been expelled."""
    if r.diverged:
        return "(diverged)"
    rounds = "×" if pd.isna(r.rounds_to_target) else int(r.rounds_to_target)
    return f"({rounds}){' all expelled' if pd.notna(r.ended_early) else ''}"


def cell(r) -> str:
    """A paper-style cell: 'final % (rounds to target)'; '× (diverged)' for a diverged run."""
    return "× (diverged)" if r.diverged else f"{100 * r.final_accuracy:.2f} {reached(r)}"


def paper_percent(cell: str) -> float:
    """The final accuracy % of a paper-style cell ('71.36 (85)' -> 71.36); NaN where it gives none."""
    match = re.match(r"\s*(\d+(?:\.\d+)?)", str(cell))
    return float(match[1]) if match else np.nan


def target_table(histories: dict[tuple[str, str], History], baseline: str,
                 target: Callable[[str, History], float], paper: pd.DataFrame, *, slow: float,
                 label: Callable[[str], str] = str) -> pd.DataFrame:
    """One row per (data set, method) of ``histories``, in their order: final accuracy, the data set's
    ``target(data set, baseline's history)``, rounds and client time to it, per-round client time, the paper's cell
    (``paper.loc[method, data set]``) beside fedkit's, and the time to target relative to ``baseline``'s, marked
    'o' above ``slow`` times it and '×' where never reached. ``label`` names the data actually used."""
    goals = {name: target(name, histories[name, baseline]) for name in dict.fromkeys(d for d, _ in histories)}
    rows = []
    for (name, method), h in histories.items():
        goal = goals[name]
        seconds = h.rounds["client_seconds_max"].dropna()
        rows.append({"dataset": name, "data used": label(name), "method": method, "target": goal,
                     "rounds": int(h.rounds["round"].max()), "final_accuracy": h.final_accuracy,
                     "final_accuracy_z": h.rounds.get("test_accuracy_z", pd.Series([np.nan])).iloc[-1],
                     "diverged": h.diverged, "ended_early": h.ended_early,
                     "rounds_to_target": None if h.diverged else h.rounds_to(goal),
                     "time_to_target": None if h.diverged else h.time_to(goal),
                     "round_seconds_median": seconds.median(), "round_seconds_mean": seconds.mean(),
                     "round_seconds_std": seconds.std(), "paper": paper.loc[method, name],
                     "paper_accuracy": paper_percent(paper.loc[method, name])})
    out = pd.DataFrame(rows)
    out["fedkit"] = out.apply(cell, axis=1)
    base_time = out[out["method"] == baseline].set_index("dataset")["time_to_target"]
    relative = f"vs_{baseline.lower()}_time"
    out[relative] = out["time_to_target"] / out["dataset"].map(base_time)
    out["time_mark"] = np.where(out["time_to_target"].isna(), "×", np.where(out[relative] > slow, "o", ""))
    return out


def pivot(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """``column`` of a target table as methods × data sets, in the table's order; a table with a ``seed`` column (one
    row per seed) gives one column per (data set, seed)."""
    columns = ["dataset", "seed"] if "seed" in table else "dataset"
    order = (pd.MultiIndex.from_frame(table[columns].drop_duplicates()) if "seed" in table
             else table["dataset"].unique())
    return table.pivot(index="method", columns=columns, values=column).loc[table["method"].unique(), order]


def relative(table: pd.DataFrame, baseline: str, column: str = "round_seconds_median") -> pd.DataFrame:
    """``column`` (by default the median per-round client time) of each method over ``baseline``'s, methods × data
    sets (× (data set, seed) where the table has a seed column: each seed over the baseline's at that seed)."""
    values = pivot(table, column)
    return values / values.loc[baseline]


def at_least(histories: dict[tuple[str, str], History], a: str, b: str, k: int = 5,
             label: Callable[[str], str] = str) -> dict[str, bool]:
    """Whether ``a``'s final accuracy is at least ``b``'s, per data set: printed as reproduced or NOT reproduced,
    with each one's mean over its last ``k`` evaluated rounds beside it (one seed's last round can swing by points).
    Returns the verdicts."""
    verdicts = {}
    for name in dict.fromkeys(d for d, _ in histories):
        final = {m: histories[name, m].final_accuracy for m in (a, b)}
        last = {m: histories[name, m].rounds["test_accuracy"].dropna().iloc[-k:].mean() for m in (a, b)}
        verdicts[name] = holds = bool(final[a] >= final[b])
        print(f"{label(name)}: {a} {100 * final[a]:.2f} % vs {b} {100 * final[b]:.2f} % → {a} ≥ {b} "
              f"{'reproduced' if holds else 'NOT reproduced'} (mean of the last {k} evaluated rounds: "
              f"{a} {100 * last[a]:.2f} %, {b} {100 * last[b]:.2f} %)")
    return verdicts


def gains(table: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Per data set of a target table (per (data set, seed) where it has a seed column): ``a``'s final accuracy gain
    over ``b`` and its saving in time to the target, both in % of ``b``'s."""
    accuracy, time = pivot(table, "final_accuracy"), pivot(table, "time_to_target")
    return pd.DataFrame({"accuracy gain %": 100 * (accuracy.loc[a] / accuracy.loc[b] - 1),
                         "time saving %": 100 * (1 - time.loc[a] / time.loc[b])})
