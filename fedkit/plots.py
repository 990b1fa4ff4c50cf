"""Paper-style figures from History frames and from the tables of ``report``."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .history import History


def learning_curves(histories: dict[str, History], title: str = "", path: str | Path | None = None):
    """Test accuracy (and training loss) against rounds, one line per labelled run; diverged runs end in ×."""
    fig, (ax_acc, ax_loss) = plt.subplots(1, 2, figsize=(10, 3.6))
    for label, h in histories.items():
        r = h.rounds
        line, = ax_acc.plot(r["round"], r["test_accuracy"], label=label)
        ax_loss.plot(r["round"], r["train_loss"] if "train_loss" in r else r["test_loss"], color=line.get_color())
        if h.diverged:
            ax_acc.plot(r["round"].iloc[-1], 0, marker="x", color=line.get_color(), markersize=10)
    ax_acc.set(xlabel="round", ylabel="test accuracy", title=title)
    ax_loss.set(xlabel="round", ylabel="training loss", yscale="log")
    ax_acc.grid(alpha=0.3)
    ax_loss.grid(alpha=0.3)
    ax_acc.legend()
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=130)
    return fig


def bars(table: pd.DataFrame, column: str, ylabel: str, title: str, labels: str | None = None,
         line: str | None = None):
    """One panel per data set of ``table`` (columns 'data used' and 'method', as in ``report.target_table``), one
    bar per method: ``column`` (NaN drawn as 0), each bar topped by its text in ``labels`` (red where ``column`` is
    missing), a dotted line at ``line`` (e.g. the target)."""
    methods = table["method"].unique()
    colors = plt.cm.tab10(np.arange(len(methods)))
    panels = table.groupby("data used", sort=False)
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 1, 3.6), squeeze=False)
    for ax, (name, part) in zip(axes[0], panels):
        part = part.set_index("method").loc[methods]
        x = np.arange(len(methods))
        heights = part[column].astype(float).fillna(0)
        ax.bar(x, heights, color=colors)
        if labels is not None:
            for i, (height, text) in enumerate(zip(heights, part[labels])):
                ax.text(i, height, text, ha="center", va="bottom", fontsize=7,
                        color="r" if pd.isna(part[column].iloc[i]) else "k")
        if line is not None:
            ax.axhline(part[line].iloc[0], color="k", lw=0.8, ls=":")
        ax.set_xticks(x, methods, rotation=60, fontsize=8)
        ax.set_title(name, fontsize=9)
    axes[0, 0].set_ylabel(ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def grouped_bars(frame: pd.DataFrame, columns: list[str], ticks: list[str], ylabel: str, title: str):
    """One group of bars per row of ``frame``, one bar per column in ``columns`` (NaN: no bar), named by ``ticks``."""
    fig, ax = plt.subplots(figsize=(2.2 * len(frame) + 2, 3))
    x = np.arange(len(frame))
    width = 0.8 / len(columns)
    for i, column in enumerate(columns):
        ax.bar(x + (i - (len(columns) - 1) / 2) * width, frame[column], width, label=column)
    ax.set_xticks(x, ticks, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    return fig


def bars_vs_paper(ax, part: pd.DataFrame, colors: list, ylabel: str, paper_label: str):
    """One panel: fedkit's ``mean`` ± ``std`` per row of ``part`` (index = method) as bars, each labelled
    ``reached``/``seeds`` ('×' where no seed reached it), and the paper's ``paper_mean`` ± ``paper_std`` as black
    diamonds on a right-hand axis of their own (the scales differ below paper scale: only orderings compare)."""
    x = np.arange(len(part))
    ax.bar(x - 0.1, part["mean"].fillna(0), width=0.6, yerr=part["std"].fillna(0), capsize=3, color=colors)
    for i, (reached, seeds) in enumerate(zip(part["reached"], part["seeds"])):
        ax.text(i - 0.1, 0, "×" if reached == 0 else f"{reached}/{seeds}", ha="center", va="bottom", fontsize=7)
    paper = ax.twinx()
    low_high = part["paper_std"].fillna(0)
    paper.errorbar(x + 0.3, part["paper_mean"], yerr=low_high, fmt="D", color="k", ms=4, capsize=2)
    paper.set_ylim(0, 1.15 * (part["paper_mean"] + low_high).max())
    paper.set_ylabel(f"{paper_label} (◆)", fontsize=8)
    ax.set_ylim(0, None)
    ax.set_xticks(x, part.index, rotation=35, fontsize=8)
    ax.set_ylabel(f"{ylabel} (bars)", fontsize=8)
    return ax
