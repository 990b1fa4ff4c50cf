"""Paper-style figures from History frames and from the tables of ``report``; the label distribution of a partition
and learning curves with seed bands (seaborn, imported when drawn: it comes with the notebooks extra)."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .errors import ConfigError
from .history import History

UNITS = ("counts", "shares")
KINDS = ("heatmap", "bars")
BANDS = {"sd": ("sd", 1), "range": ("pi", 100), "ci": ("ci", 95)}  # seaborn's errorbar for each band


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
         line: str | None = None, reference: str | None = None, reference_label: str = "paper",
         shared_axis: bool = False):
    """One panel per data set of ``table`` (columns 'data used' and 'method', as in ``report.target_table``), one
    bar per method: ``column`` (NaN drawn as 0), each bar topped by its text in ``labels`` (red where ``column`` is
    missing), a dotted line at ``line`` (e.g. the target; its mean over the panel's rows), and ``reference`` (e.g.
    the paper's value) as a black diamond beside each bar: on the bars' axis where ``shared_axis``, else on a
    right-hand axis of its own (below paper scale the scales differ: only orderings compare).

    Several rows per (data set, method), e.g. one per seed: the bar is their mean (NaN rows left out), each row a
    black dot, a whisker ± their standard deviation (ddof 1), the text their ``labels`` one above another where they
    differ (an empty one as '–'), red where any of them is missing."""
    methods = table["method"].unique()
    colors = plt.cm.tab10(np.arange(len(methods)))
    panels = table.groupby("data used", sort=False)
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 1, 3.6), squeeze=False)
    for ax, (name, part) in zip(axes[0], panels):
        rows = [part[part["method"] == m] for m in methods]
        values = [r[column].astype(float) for r in rows]
        heights = np.array([v.mean() if v.notna().any() else 0.0 for v in values])
        x = np.arange(len(methods))
        ax.bar(x, heights, color=colors)
        tops = heights
        if any(len(v) > 1 for v in values):
            spread = np.nan_to_num([v.std() for v in values])
            ax.errorbar(x, heights, yerr=spread, fmt="none", ecolor="k", elinewidth=0.8, capsize=3)
            for i, v in enumerate(values):
                ax.plot(np.full(v.notna().sum(), i), v.dropna(), "o", color="k", ms=2.5, zorder=3)
            tops = np.array([max(h + e, v.max() if v.notna().any() else 0.0)
                             for h, e, v in zip(heights, spread, values)])
        if labels is not None:
            lines = 1
            for i, (r, v) in enumerate(zip(rows, values)):
                texts = [str(t) if str(t) else "–" for t in r[labels].fillna("")]
                text = texts[0] if len(set(texts)) == 1 else "\n".join(texts)
                text = "" if text == "–" else text
                lines = max(lines, text.count("\n") + 1)
                ax.text(i, tops[i], text, ha="center", va="bottom", fontsize=7, linespacing=0.9,
                        color="r" if v.isna().any() else "k")
            ax.set_ylim(top=max(ax.get_ylim()[1], np.nanmax(tops) * (1.05 + 0.07 * lines)))  # room for the texts
        if line is not None:
            ax.axhline(part[line].mean(), color="k", lw=0.8, ls=":")
        if reference is not None:
            marks = [r[reference].astype(float).mean() for r in rows]
            other = ax if shared_axis else ax.twinx()
            other.plot(x + 0.3, marks, "D", color="k", ms=4, zorder=4, label=f"{reference_label} (◆)")
            if not shared_axis:
                other.set_ylim(0, 1.15 * np.nanmax(marks))
                other.set_ylabel(f"{reference_label} (◆)", fontsize=8)
        ax.set_xticks(x, methods, rotation=60, fontsize=8)
        ax.set_title(name, fontsize=9)
    axes[0, 0].set_ylabel(ylabel)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def mean_and_range(ax, runs: dict[str, list[History]], colors: dict[str, str], y: str = "test_accuracy",
                   factor: float = 100.0):
    """On ``ax``, one line per name of ``runs`` (its histories, e.g. one per seed): the mean of ``y`` × ``factor`` by
    round over the runs that reached the round, in a band from their minimum to their maximum, labelled with the run
    count; an '×' at a diverged run's last round."""
    for name, histories in runs.items():
        curves = factor * pd.concat([h.rounds.set_index("round")[y] for h in histories], axis=1)
        color = colors[name]
        ax.plot(curves.index, curves.mean(axis=1), color=color, lw=1.4, label=f"{name} ({len(histories)})")
        if len(histories) > 1:
            ax.fill_between(curves.index, curves.min(axis=1), curves.max(axis=1), color=color, alpha=0.18, lw=0)
        for h in (h for h in histories if h.diverged):
            ax.plot(h.rounds["round"].iloc[-1], 0, "x", color=color, ms=8, mew=2)
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    return ax


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


# ---------------------------------------------------------------------------------------------- partitions


def label_table(partition, labels=None, num_classes: int | None = None, unit: str = "counts") -> pd.DataFrame:
    """Clients (rows) × classes (columns) of a partition: sample counts, or with ``unit="shares"`` each client's
    counts divided by its size (a row sums to 1; NaN for a client without samples).

    ``partition`` is what the kit has at hand: a ``Federation`` (its ``parts`` and training labels), a list of
    index arrays, one per client (as ``make_partition`` returns them; ``labels`` then gives the training labels),
    or a clients × classes table of counts already made (DataFrame or 2-D array)."""
    from .data.partition import label_histogram

    if unit not in UNITS:
        raise ConfigError(f"unit must be one of {UNITS}, got {unit!r}")
    if hasattr(partition, "parts") and hasattr(partition, "y_train"):  # a Federation
        partition, labels = partition.parts, partition.y_train.cpu().numpy()
    if isinstance(partition, pd.DataFrame) or (isinstance(partition, np.ndarray) and partition.ndim == 2):
        counts = pd.DataFrame(np.asarray(partition))
        if isinstance(partition, pd.DataFrame):
            counts.index, counts.columns = partition.index, partition.columns
        if not np.issubdtype(counts.to_numpy().dtype, np.number) or (counts.to_numpy() < 0).any():
            raise ConfigError("a table of counts must hold numbers ≥ 0 (clients × classes)")
        counts = counts.rename_axis(index="client", columns="class")
    else:
        if labels is None:
            raise ConfigError("a partition given as index arrays needs the training labels: label_table(parts, labels)")
        labels = np.asarray(labels)
        num_classes = int(labels.max()) + 1 if num_classes is None else num_classes
        counts = label_histogram(list(partition), labels, num_classes)
    if unit == "counts":
        return counts
    sizes = counts.sum(axis=1).replace(0, np.nan)
    return counts.div(sizes, axis=0)


def label_distribution(partition, labels=None, *, num_classes: int | None = None, unit: str = "counts",
                       kind: str = "heatmap", ax=None, title: str | None = None, class_names=None,
                       annotate: bool | None = None):
    """Draw the label distribution of a partition, clients × classes (``label_table``'s arguments): a seaborn heat
    map (clients as rows, one column per class) or stacked bars (one bar per client, one colour per class), in counts
    or shares. Returns (figure, axes, the table drawn). ``annotate`` writes each cell's value (default: where there
    are at most 200 cells); ``class_names`` renames the classes."""
    import seaborn as sns

    if kind not in KINDS:
        raise ConfigError(f"kind must be one of {KINDS}, got {kind!r}")
    table = label_table(partition, labels, num_classes, unit)
    if class_names is not None:
        if len(class_names) != table.shape[1]:
            raise ConfigError(f"class_names must name {table.shape[1]} classes, got {len(class_names)}")
        table.columns = pd.Index(list(class_names), name="class")
    n_clients, n_classes = table.shape
    made = ax is None
    if made:
        size = (0.45 * n_classes + 2.5, 0.3 * n_clients + 1.5) if kind == "heatmap" else (0.3 * n_clients + 3, 3.6)
        _, ax = plt.subplots(figsize=(min(size[0], 16), min(size[1], 12)))
    what = "share of the client's samples" if unit == "shares" else "samples"
    if kind == "heatmap":
        annotate = n_clients * n_classes <= 200 if annotate is None else annotate
        fmt = ".2f" if unit == "shares" else "d" if np.issubdtype(table.to_numpy().dtype, np.integer) else ".3g"
        sns.heatmap(table, ax=ax, cmap="viridis", annot=annotate, fmt=fmt, annot_kws={"fontsize": 7},
                    cbar_kws={"label": what}, vmin=0, vmax=1 if unit == "shares" else None)
        ax.set(xlabel="class", ylabel="client")
    else:
        colors = sns.color_palette("tab10" if n_classes <= 10 else "husl", n_classes)
        bottom = np.zeros(n_clients)
        for color, (name, column) in zip(colors, table.items()):
            ax.bar(np.arange(n_clients), column.fillna(0).to_numpy(), bottom=bottom, color=color, label=str(name),
                   width=0.85)
            bottom += column.fillna(0).to_numpy()
        ax.set_xticks(np.arange(n_clients), [str(c) for c in table.index], fontsize=7)
        ax.set(xlabel="client", ylabel=what, xlim=(-0.6, n_clients - 0.4))
        ax.legend(title="class", fontsize=7, title_fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left",
                  ncol=1 if n_classes <= 20 else 2)
    ax.set_title(title if title is not None else f"labels per client ({unit})", fontsize=10)
    if made:
        ax.figure.tight_layout()
    return ax.figure, ax, table


# ---------------------------------------------------------------------------------------------- seed bands


def seed_bands(frame: pd.DataFrame, y: str = "test_accuracy", *, x: str = "round", hue: str = "method",
               band: str = "sd", ax=None, title: str = "", ylabel: str | None = None, logy: bool = False):
    """Learning curves over seeds: one line per ``hue`` value (the mean over the rows sharing an ``x``, i.e. over
    seeds) in a band: ``"sd"`` mean ± one standard deviation, ``"range"`` min to max, ``"ci"`` a 95 % bootstrap
    interval (seeded). ``frame`` is long, one row per (hue, seed, x), as ``fedkit.seeds.tidy`` returns it; a diverged
    seed's NaN rows are left out of the mean. Returns (figure, axes)."""
    import seaborn as sns

    if band not in BANDS:
        raise ConfigError(f"band must be one of {tuple(BANDS)}, got {band!r}")
    missing = [c for c in (x, y, hue) if c not in frame]
    if missing:
        raise ConfigError(f"frame has no column(s) {missing}; it has {list(frame.columns)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 3.6))
    sns.lineplot(data=frame, x=x, y=y, hue=hue, errorbar=BANDS[band], ax=ax, seed=0)
    ax.set(title=title, xlabel=x, ylabel=ylabel or y.replace("_", " "))
    if logy:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    return ax.figure, ax
