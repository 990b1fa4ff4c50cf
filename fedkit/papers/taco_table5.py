"""TACO Table V and the figures drawn from its runs (Figs. 2, 4, 5, Table III): 7 methods on a set of data sets.

The notebooks split Table V's six data sets by partition (label groups / Dirichlet / LEAF's natural one) so that
each fits its time budget; these helpers build each part the same way.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..history import History
from ..run import run
from . import taco

METHODS = list(taco.METHODS)
# Table V of the paper: final accuracy % (rounds to target; "100+" = not within T, "×" = failed)
PAPER = pd.DataFrame({
    "adult": ["78.88 (24)", "78.92 (24)", "83.50 (20)", "82.24 (10)", "78.83 (22)", "83.69 (11)", "83.80 (8)"],
    "fmnist": ["71.36 (85)", "67.14 (100+)", "73.09 (80)", "68.84 (100+)", "72.97 (69)", "70.91 (92)", "73.28 (59)"],
    "svhn": ["73.97 (37)", "36.69 (×)", "76.01 (21)", "19.58 (×)", "74.55 (16)", "75.51 (36)", "78.26 (17)"],
    "cifar10": ["51.84 (120)", "49.95 (200+)", "53.70 (58)", "43.18 (×)", "52.01 (112)", "52.81 (116)", "54.98 (44)"],
    "cifar100": ["54.39 (198)", "53.32 (200+)", "54.19 (200)", "53.33 (200+)", "54.69 (191)", "54.07 (197)",
                 "56.08 (170)"],
    "shakespeare": ["50.54 (45)", "28.07 (×)", "50.49 (45)", "51.95 (37)", "52.57 (34)", "42.91 (×)", "53.55 (22)"],
}, index=METHODS)
COLORS = plt.cm.tab10(np.arange(len(METHODS)))
SLOW = 1.8  # Fig. 4's "o": more than 80 % over FedAvg's client time to the target


def runs(datasets: list[str], scale: str, seed: int = 0, device: str = "cpu") -> dict[tuple[str, str], History]:
    """Every Table V method on every data set, keyed (data set, method); runs come from the cache when there."""
    return {(name, method): run(taco.config(name, scale, method, seed=seed, device=device), progress=False)
            for name in datasets for method in METHODS}


def reached(r) -> str:
    """Rounds to the target in brackets ('(12)', '(×)' never reached, '(diverged)'), then 'all expelled' where the
    run stopped because TACO's rule had expelled every client."""
    if r.diverged:
        return "(diverged)"
    rounds = "×" if pd.isna(r.rounds_to_target) else int(r.rounds_to_target)
    return f"({rounds}){' all expelled' if pd.notna(r.ended_early) else ''}"


def cell(r) -> str:
    """A Table V cell: 'final % (rounds to target)'; '× (diverged)' for a diverged run."""
    return "× (diverged)" if r.diverged else f"{100 * r.final_accuracy:.2f} {reached(r)}"


def table(histories: dict[tuple[str, str], History], scale: str) -> pd.DataFrame:
    """One row per (data set, method): final accuracy, rounds and client time to the target, per-round client time,
    the client time to target relative to FedAvg's with Fig. 4's mark, and the paper's cell."""
    rows = []
    for name in dict.fromkeys(d for d, _ in histories):
        goal = taco.target(name, scale, histories[name, "FedAvg"].final_accuracy)
        for method in METHODS:
            h = histories[name, method]
            seconds = h.rounds["client_seconds_max"].dropna()
            rows.append({"dataset": name, "data used": taco.label(name, scale), "method": method, "target": goal,
                         "rounds": int(h.rounds["round"].max()), "final_accuracy": h.final_accuracy,
                         "final_accuracy_z": h.rounds.get("test_accuracy_z", pd.Series([np.nan])).iloc[-1],
                         "diverged": h.diverged, "ended_early": h.ended_early,
                         "rounds_to_target": None if h.diverged else h.rounds_to(goal),
                         "time_to_target": None if h.diverged else h.time_to(goal),
                         "round_seconds_median": seconds.median(), "round_seconds_mean": seconds.mean(),
                         "round_seconds_std": seconds.std(), "paper": PAPER.loc[method, name]})
    out = pd.DataFrame(rows)
    out["fedkit"] = out.apply(cell, axis=1)
    fedavg_time = out[out["method"] == "FedAvg"].set_index("dataset")["time_to_target"]
    out["vs_fedavg_time"] = out["time_to_target"] / out["dataset"].map(fedavg_time)
    out["time_mark"] = np.where(out["time_to_target"].isna(), "×", np.where(out["vs_fedavg_time"] > SLOW, "o", ""))
    return out


def bars(table: pd.DataFrame, column: str, ylabel: str, title: str, labels: str | None = None,
         line: str | None = None):
    """One panel per data set, one bar per method: ``column`` (NaN drawn as 0), each bar topped by its text in
    ``labels`` (red when the column is missing), a dotted line at ``line`` (e.g. the target)."""
    names = list(dict.fromkeys(table["dataset"]))
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names) + 1, 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        part = table[table["dataset"] == name].set_index("method").loc[METHODS]
        x = np.arange(len(METHODS))
        heights = part[column].astype(float).fillna(0)
        ax.bar(x, heights, color=COLORS)
        if labels is not None:
            for i, (height, text) in enumerate(zip(heights, part[labels])):
                ax.text(i, height, text, ha="center", va="bottom", fontsize=7,
                        color="r" if pd.isna(part[column].iloc[i]) else "k")
        if line is not None:
            ax.axhline(part[line].iloc[0], color="k", lw=0.8, ls=":")
        ax.set_xticks(x, METHODS, rotation=60, fontsize=8)
        ax.set_title(part["data used"].iloc[0], fontsize=9)
    axes[0, 0].set_ylabel(ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def expulsions(histories: dict[tuple[str, str], History], scale: str, seed: int = 0,
               device: str = "cpu") -> pd.DataFrame:
    """A diagnostic the paper does not report: in Table V nobody is a freeloader, so every client TACO's rule
    (eq. 10) expels is a false positive. Where it expels anyone, TACO is re-run with detection off."""
    rows = []
    for name in dict.fromkeys(d for d, _ in histories):
        h = histories[name, "TACO"]
        expelled = int(h.clients.groupby("client")["expelled"].max().sum())
        row = {"dataset": name, "data used": taco.label(name, scale), "benign clients expelled": expelled,
               "of": int(h.clients["client"].nunique()), "TACO": 100 * h.final_accuracy,
               "TACO, detection off": np.nan}
        if expelled:
            cfg = taco.config(name, scale, "TACO", seed=seed, device=device, algorithm_args={"detect": False})
            row["TACO, detection off"] = 100 * run(cfg, progress=False).final_accuracy
        rows.append(row)
    return pd.DataFrame(rows)


def plot_expulsions(frame: pd.DataFrame, scale: str):
    """TACO's final accuracy beside its detection-off re-run, per data set, with how many clients were expelled."""
    fig, ax = plt.subplots(figsize=(2.2 * len(frame) + 2, 3))
    x = np.arange(len(frame))
    ax.bar(x - 0.2, frame["TACO"], 0.4, label="TACO")
    ax.bar(x + 0.2, frame["TACO, detection off"], 0.4, label="detection off")
    ax.set_xticks(x, [f"{d}\n{e}/{n} expelled" for d, e, n in
                      zip(frame["data used"], frame["benign clients expelled"], frame["of"])], fontsize=8)
    ax.set_ylabel("final test accuracy %")
    ax.legend(fontsize=8)
    ax.set_title(f"TACO's freeloader rule on benign federations (Table V settings, scale={scale})", fontsize=9)
    return fig


def taco_vs_fedavg(histories: dict[tuple[str, str], History], table: pd.DataFrame, scale: str) -> dict[str, bool]:
    """Prints, per data set, whether TACO's final accuracy is at least FedAvg's (with the mean of the last five
    rounds, since one seed's last round swings by points at small scale), and TACO's accuracy gain and client-time
    saving against the paper's ranges. Returns the verdict per data set."""
    verdicts = {}
    final = table.pivot(index="method", columns="dataset", values="final_accuracy")
    for name in dict.fromkeys(table["dataset"]):
        last5 = {m: histories[name, m].rounds["test_accuracy"].dropna().iloc[-5:].mean()
                 for m in ("FedAvg", "TACO")}
        verdicts[name] = holds = bool(final.loc["TACO", name] >= final.loc["FedAvg", name])
        print(f"{taco.label(name, scale)}: TACO {100 * final.loc['TACO', name]:.2f} % vs FedAvg "
              f"{100 * final.loc['FedAvg', name]:.2f} % → TACO ≥ FedAvg {'reproduced' if holds else 'NOT reproduced'}"
              f" (mean of the last five rounds: TACO {100 * last5['TACO']:.2f} %, "
              f"FedAvg {100 * last5['FedAvg']:.2f} %)")
    taco_rows = table[table["method"] == "TACO"].set_index("dataset")
    gain = 100 * (final.loc["TACO"] / final.loc["FedAvg"] - 1)
    print("TACO accuracy gain over FedAvg, % (paper 2.76–58.68):", gain[list(verdicts)].round(2).to_dict())
    print("TACO client-time saving to target, % (paper 25.6–62.7):",
          (100 * (1 - taco_rows["vs_fedavg_time"])).round(1).to_dict())
    return verdicts


def per_round_vs_fedavg(table: pd.DataFrame) -> pd.DataFrame:
    """Median per-round client time of each method over FedAvg's (Fig. 5 relative), methods × data sets."""
    per_round = table.pivot(index="method", columns="dataset", values="round_seconds_median")
    names = list(dict.fromkeys(table["dataset"]))
    return (per_round / per_round.loc["FedAvg"]).loc[METHODS, names]
