"""Paper-style figures from History frames."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt

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
