"""Tables of results in the papers' style: final accuracy, rounds to a target ('T+' not reached, × diverged)."""
from __future__ import annotations

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
