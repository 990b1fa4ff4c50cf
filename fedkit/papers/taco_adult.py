"""TACO on adult at the paper's own settings (notebooks/taco/adult_paper_settings): filling the run cache, the seed
summaries, expulsion tables, the side-by-side with Tables V–VII, the label-camp alternation of α (eqs. 7 and 9)
and the claim checks.

The functions take the notebook's ``histories`` ({(label, seed): History}) and ``configs`` ({label: Config}).
"""
from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import numpy as np
import pandas as pd
import torch

from ..analysis import alternation
from ..federation import Federation
from ..runner import default_cache, run
from ..seeds import finals, mean_std, pm, run_seeds, separated

PALETTE = {"FedAvg": "#555555", "FedACG": "#aaaaaa", "TACO": "#d62728", "detection off": "#1f77b4",
           "uniform agg.": "#2ca02c"}


def colour(label: str) -> str:
    """A method's colour: the last palette key contained in its label ('TACO, detection off' → detection off's)."""
    return next((c for k, c in reversed(PALETTE.items()) if k in label), "#999999")


def cost(cfg) -> int:
    """Client steps of a run (the longest runs go first)."""
    return cfg.num_clients * cfg.rounds * cfg.local_steps


def run_all(configs: dict, seeds_of: dict, workers: int, threads: int = 1):
    """Every (label, seed) run, the cache filled first by ``workers`` spawned processes of ``threads`` torch
    threads (longest first) when workers > 1; returns (histories, runs, not cached, workers used, seconds)."""
    start = time.perf_counter()
    todo = [cfg.replace(seed=s) for label, cfg in configs.items() for s in seeds_of[label]]
    missing = sorted([cfg for cfg in todo if not (default_cache() / cfg.key() / "meta.json").exists()], key=cost,
                     reverse=True)
    workers = min(workers, len(missing))
    if workers > 1:  # fill the cache side by side; run_seeds below then reads every run from it
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=torch.set_num_threads, initargs=(threads,)) as pool:
            list(pool.map(partial(run, progress=False), missing))
    histories = {}
    for label, cfg in configs.items():
        histories.update(run_seeds({label: cfg}, seeds_of[label]))
    return histories, len(todo), len(missing), workers, time.perf_counter() - start


def expelled_of(h) -> float:
    """How many clients a run expelled (NaN where the method has no detection column)."""
    if "expelled" not in h.clients:
        return np.nan
    return int(h.clients.groupby("client")["expelled"].max().gt(0).sum())


def seed_summary(histories: dict, configs: dict):
    """(per_seed, summary, acc): one row per run (finals + clients, expelled, mean of the last 10 rounds); per
    method the mean ± std cells, expelled per seed, clients, rounds trained; seeds × methods of the final accuracy."""
    per_seed = finals(histories).assign(
        clients=[configs[m].num_clients for m, _ in histories],
        expelled=[expelled_of(h) for h in histories.values()])
    summary = mean_std(per_seed, "final_accuracy")
    summary["final accuracy %"] = [pm(m, s) for m, s in zip(summary["mean"], summary["std"])]
    # TACO's test accuracy can swing from round to round: the mean of each run's last 10 rounds as well
    per_seed["last 10 rounds"] = [h.rounds["test_accuracy"].dropna().iloc[-10:].mean() for h in histories.values()]
    last10 = mean_std(per_seed, "last 10 rounds")
    summary["last-10-rounds mean %"] = [pm(m, s) for m, s in zip(last10["mean"], last10["std"])]
    groups = per_seed.groupby("method", sort=False)
    summary["expelled (per seed)"] = groups["expelled"].agg(
        lambda v: "—" if v.isna().all() else ", ".join(f"{int(x)}" for x in v))
    summary["of"] = groups["clients"].first()
    summary["rounds trained (per seed)"] = groups["rounds"].agg(lambda v: ", ".join(map(str, v)))
    acc = per_seed.pivot(index="seed", columns="method", values="final_accuracy")[list(configs)]
    return per_seed, summary, acc


def summary_report(summary, acc, seeds_of) -> str:
    return "\n".join([
        summary[["final accuracy %", "last-10-rounds mean %", "expelled (per seed)", "of",
                 "rounds trained (per seed)", "seeds"]].to_string(),
        "\nseeds: " + str({label: ss for label, ss in seeds_of.items()}),
        "\nper seed, final accuracy %:", (100 * acc).round(2).to_string()])


def expulsions(histories: dict, configs: dict):
    """(per run with detection on: how many expelled and the first / median / last round, rounds trained, final
    accuracy; one row per expelled client with its round)."""
    rows, when = [], []
    for (method, s), h in histories.items():
        if "expelled" not in h.clients or not configs[method].algorithm_args.get("detect", True):
            continue
        out = alternation.expulsion_rounds(h.clients)
        when += [{"method": method, "seed": s, "client": int(i), "expelled in round": int(r)} for i, r in out.items()]
        rows.append({"method": method, "seed": s, "expelled": len(out), "of": configs[method].num_clients,
                     "first": out.min() if len(out) else np.nan, "median": out.median() if len(out) else np.nan,
                     "last": out.max() if len(out) else np.nan, "rounds trained": int(h.rounds["round"].iloc[-1]),
                     "final accuracy %": 100 * h.final_accuracy, "ended early": h.ended_early is not None})
    return pd.DataFrame(rows), pd.DataFrame(when, columns=["method", "seed", "client", "expelled in round"])


def paper_rows(many: int) -> list[tuple]:
    """(table, paper row, paper %, fedkit run or None) of Tables V, VI and VII's adult rows (final test accuracy)."""
    n = f"N={many}"
    return [
        ("Table V (N=20, Dir 0.5)", "FedAvg", "78.88 ± 0.06", "FedAvg"),
        ("Table V (N=20, Dir 0.5)", "FedACG", "83.69 ± 0.08", "FedACG"),
        ("Table V (N=20, Dir 0.5)", "TACO", "83.80 ± 0.06", "TACO"),
        ("Table V (N=20, Dir 0.5)", "TACO", "83.80 ± 0.06", "TACO, detection off"),
        ("Table VI (adult Dir 0.5)", "✗ corr ✗ agg", "78.88", "FedAvg"),
        ("Table VI (adult Dir 0.5)", "✓ corr ✗ agg", "83.69", "TACO, uniform agg."),
        ("Table VI (adult Dir 0.5)", "✓ corr ✓ agg", "83.80", "TACO"),
        ("Table VI (adult Dir 0.5)", "✓ corr ✓ agg", "83.80", "TACO, detection off"),
        ("Table VII (N=100)", "FedAvg", "76.72 ± 0.43", None),
        ("Table VII (N=100)", "FedACG", "83.48 ± 0.13", None),
        ("Table VII (N=100)", "TACO", "83.71 ± 0.16", f"TACO, {n}"),
        ("Table VII (N=100)", "TACO", "83.71 ± 0.16", f"TACO, {n}, detection off"),
    ]


def side_by_side(summary, many: int, scale: str, data_label: str) -> pd.DataFrame:
    """The paper's rows beside fedkit's cells; a run not made at this scale says so."""
    def measured(m):
        return summary.loc[m, "final accuracy %"] if m in summary.index else f"not run at {scale} scale"

    side = pd.DataFrame([{"table": t, "paper row": r, "paper %": p, "fedkit run": m or "not run",
                          "fedkit %": measured(m) if m else "—",
                          "expelled (per seed)": summary.loc[m, "expelled (per seed)"] if m in summary.index else "—"}
                         for t, r, p, m in paper_rows(many)])
    side["data used"] = data_label + ("" if scale != "ci" else f" (N={many} for Table VII)")
    return side


class Camps:
    """Each client's label camp (its majority label), computed once per partition (seed, N, partition)."""

    def __init__(self):
        self.cache = {}

    def __call__(self, cfg) -> np.ndarray:
        key = (cfg.seed, cfg.num_clients, cfg.partition, str(cfg.partition_args))
        if key not in self.cache:
            fed = Federation(cfg)
            self.cache[key] = alternation.majority_labels(fed.parts, fed.y_train.cpu().numpy())
        return self.cache[key]


def alpha_long(h, method, seed, camps) -> pd.DataFrame:
    """One run's α (and count / expelled where logged) per (round, client), with its method, seed and camp."""
    return (h.clients[["round", "client", "alpha"] + (["count", "expelled"] if "count" in h.clients else [])]
            .assign(method=method, seed=seed, camp=camps[h.clients["client"]]))


def alternation_stats(histories: dict, configs: dict, camps_of, kappa: float):
    """(per run: alternation.alternation_summary; per method: mean, min, max of each measure)."""
    stats = []
    for (method, s), h in histories.items():
        if "alpha" not in h.clients:
            continue
        row = alternation.alternation_summary(h.clients, camps_of(configs[method].replace(seed=s)), kappa)
        stats.append({"method": method, "seed": s, **row})  # the gap is NaN with one camp (IID)
    stats = pd.DataFrame(stats)
    summary = stats.groupby("method", sort=False)[["gap sign flips", "mean |gap|", "client crossing flips",
                                                   "share α ≥ κ"]].agg(["mean", "min", "max"])
    return stats, summary


def eq7_factors(configs: dict, histories: dict, seed: int, traces: list[tuple[str, int]]):
    """eq. 7 split from re-run rounds (alternation.eq7_trace) for each (method, rounds) of ``traces``, with the α the
    history recorded; and per method the size factor's and cosine's ranges, max |size × cosine − α| and
    max |α re-run − α recorded|."""
    frames = []
    for method, rounds in traces:
        trace = alternation.eq7_trace(configs[method].replace(seed=seed), rounds).assign(method=method, seed=seed)
        recorded = histories[method, seed].clients.set_index(["round", "client"])["alpha"]
        trace["alpha in history"] = recorded.reindex(pd.MultiIndex.from_frame(trace[["round", "client"]])).to_numpy()
        frames.append(trace)
    trace = pd.concat(frames, ignore_index=True)
    factors = trace.groupby("method", sort=False).agg(
        rounds=("round", "max"), size_min=("size", "min"), size_max=("size", "max"), cosine_min=("cosine", "min"),
        cosine_max=("cosine", "max"),
        product_vs_alpha=("product", lambda p: float(np.abs(p - trace.loc[p.index, "alpha"]).max())),
        rerun_vs_history=("alpha", lambda p: float(np.abs(p - trace.loc[p.index, "alpha in history"]).max())))
    return trace, factors


def camp_turns(trace: pd.DataFrame, camps, a: int, b: int):
    """Per round of a trace, each camp's mean size factor, clipped cosine and α; and the rounds in which the camp with
    the higher mean α is the camp with the larger updates (lower size factor), and in which it changes."""
    traced = trace.assign(camp=lambda f: camps[f["client"]])
    by_camp = traced[traced["camp"].isin([a, b])].groupby(["round", "camp"])[["size", "cosine", "alpha"]].mean()
    by_camp = by_camp.unstack()
    high, larger = by_camp["alpha"].idxmax(axis=1), by_camp["size"].idxmin(axis=1)
    return by_camp, int((high == larger).sum()), int((high != high.shift()).iloc[1:].sum()), len(high)


def check_structure(histories, seeds_of, per_seed, factors, trace, stats) -> None:
    """What must hold at every scale: every run present and finished (or diverged), α = size × clipped cosine and the
    re-run reproduces the history (to 1e-4), the size factor in (0, 1), the three TACO variants measured."""
    assert len(histories) == sum(len(v) for v in seeds_of.values())
    assert per_seed["final_accuracy"].notna().all() or per_seed["diverged"].any()
    assert factors["product_vs_alpha"].max() < 1e-4, factors
    assert factors["rerun_vs_history"].max() < 1e-4, factors
    assert ((trace["size"] > 0) & (trace["size"] < 1)).all()
    assert set(stats["method"]) >= {"TACO", "TACO, detection off", "TACO, uniform agg."}


def check_claims(configs, per_seed, acc, stats, when, trace, lam, many) -> None:
    """The claims measured at small (seeds 0, 1, 2), with margins; see the notebook's Claims cell."""
    n20 = configs["TACO"].num_clients
    expelled_n = per_seed.pivot(index="seed", columns="method", values="expelled")
    flips = stats.pivot(index="seed", columns="method", values="gap sign flips")
    # 1. detection on, N = 20: ≥ 90 % of the benign clients expelled in every seed, TACO below FedAvg in every seed
    assert (expelled_n["TACO"] >= 0.9 * n20).all(), expelled_n["TACO"]
    assert separated(acc["FedAvg"], acc["TACO"]) and acc["FedAvg"].min() > acc["TACO"].max()
    # 2. without any expulsion TACO still ends below FedAvg in every seed: eq. 9's aggregation costs accuracy
    assert separated(acc["FedAvg"], acc["TACO, detection off"])
    assert acc["FedAvg"].min() > acc["TACO, detection off"].max()
    # 3. uniform aggregation, detection on: fewer expelled than with eq. 9 in every seed, within 2 points of FedAvg
    assert expelled_n["TACO, uniform agg."].max() < expelled_n["TACO"].min(), expelled_n
    assert abs(acc["TACO, uniform agg."].mean() - acc["FedAvg"].mean()) < 0.02
    # 4. the two label camps take turns under eq. 9, with or without detection, much less under uniform aggregation
    assert (flips[["TACO", "TACO, detection off"]] >= 0.8).all().all(), flips
    assert flips["TACO, uniform agg."].max() < flips[["TACO", "TACO, detection off"]].min().min(), flips
    # 5. eq. 7's size factor stays near 1, so α is the clipped cosine give or take 10 %
    assert trace.loc[trace["method"] == "TACO", "size"].min() > 0.85
    # 6. IID with detection on: every client has α ≥ κ in (nearly) every round, all expelled at round ≈ λ
    assert (expelled_n["TACO, IID"] == configs["TACO, IID"].num_clients).all()
    assert (stats.loc[stats["method"] == "TACO, IID", "share α ≥ κ"] >= 0.95).all()
    assert when.loc[when["method"] == "TACO, IID", "expelled in round"].max() <= lam + 2
    # 7. N = 100 with detection on: most benign clients expelled in every seed
    assert (expelled_n[f"TACO, N={many}"] >= 0.5 * many).all(), expelled_n[f"TACO, N={many}"]


# ---- figures ----------------------------------------------------------------------------------------------------
def plot_accuracy(configs, summary, acc, histories, seed, title_seeds, scale, data_label):
    """Final accuracy per method (bars: mean ± std, dots: seeds, expelled counts) and the test accuracy per round of
    seed ``seed`` for the five N = 20 Dirichlet runs."""
    import matplotlib.pyplot as plt

    fig, (ax, curves) = plt.subplots(1, 2, figsize=(16, 4), gridspec_kw={"width_ratios": [1.5, 1]})
    x = np.arange(len(configs))
    ax.bar(x, 100 * summary.loc[list(configs), "mean"], yerr=100 * summary.loc[list(configs), "std"].fillna(0),
           color=[colour(label) for label in configs], capsize=3)
    for i, method in enumerate(configs):
        seeds_acc = 100 * acc[method]
        ax.scatter(np.full(len(seeds_acc), i), seeds_acc, color="k", s=10, zorder=3)
        ex = summary.loc[method, "expelled (per seed)"]
        if ex != "—":
            ax.text(i, 2, f"expelled\n{ex}\nof {summary.loc[method, 'of']}", ha="center", va="bottom", fontsize=7,
                    color="w")
    ax.set_xticks(x, list(configs), rotation=25, ha="right", fontsize=8)
    ax.set_ylabel("final test accuracy % (mean ± std, dots: seeds)")
    ax.set_ylim(0, 100)
    ax.set_title(f"final accuracy and benign clients expelled ({title_seeds} seeds unless fewer are listed, "
                 f"scale={scale})", fontsize=9)
    for label in ["FedAvg", "FedACG", "TACO", "TACO, detection off", "TACO, uniform agg."]:
        h = histories[label, seed]
        curves.plot(h.rounds["round"], 100 * h.rounds["test_accuracy"], color=colour(label), label=label,
                    ls={"FedACG": ":", "FedAvg": "--"}.get(label, "-"), lw=1.6 if label == "FedAvg" else 1.2)
    curves.set_xlabel("round")
    curves.set_ylabel("test accuracy %")
    curves.set_title(f"test accuracy per round, seed {seed} (N = {configs['TACO'].num_clients})", fontsize=9)
    curves.legend(fontsize=7)
    fig.suptitle(f"TACO on {data_label} at the paper's settings", fontsize=10)
    fig.tight_layout()
    return fig


def plot_expulsions(table, when, configs, seeds_of, kappa, lam, scale):
    """Per method with detection: benign clients expelled by each round, one line per seed."""
    import matplotlib.pyplot as plt

    detecting = list(dict.fromkeys(table["method"]))
    fig, axes = plt.subplots(1, len(detecting), figsize=(3.2 * len(detecting), 3), sharey=False)
    for ax, method in zip(np.atleast_1d(axes), detecting):
        T = configs[method].rounds
        for s in seeds_of[method]:
            r = when.loc[(when["method"] == method) & (when["seed"] == s), "expelled in round"].to_numpy()
            ax.step(np.arange(T + 1), [(r <= t).sum() for t in range(T + 1)], where="post", lw=1, label=f"seed {s}")
        ax.axhline(configs[method].num_clients, color="k", ls=":", lw=0.8)
        ax.set_title(method, fontsize=9)
        ax.set_xlabel("round")
    np.atleast_1d(axes)[0].set_ylabel("benign clients expelled")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.suptitle(f"TACO's freeloader rule (κ = {kappa}, λ = {lam:g}) on benign adult federations (scale={scale})",
                 fontsize=10)
    fig.tight_layout()
    return fig


def plot_table(shown, title):
    """A table drawn as a figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.2))
    ax.axis("off")
    art = ax.table(cellText=shown.values, colLabels=list(shown.columns), loc="center", cellLoc="left",
                   colWidths=[0.18, 0.12, 0.12, 0.24, 0.2, 0.14])
    art.auto_set_font_size(False)
    art.set_fontsize(7)
    ax.set_title(title, fontsize=9)
    return fig


def plot_alpha(shown, histories, configs, seed, camps, kappa, title):
    """Top: α_i^t per client coloured by camp, κ and the expulsions; bottom: the camp gap per round. Returns the
    figure, the long frame of α behind it, the two main camps and their colours."""
    import matplotlib.pyplot as plt

    a, b = alternation.main_camps(camps)
    colors = {a: "#1f77b4", b: "#ff7f0e"}
    fig, axes = plt.subplots(2, len(shown), figsize=(15, 6.4), sharex=True, gridspec_kw={"height_ratios": [2.2, 1]})
    long = []
    for col, method in enumerate(shown):
        h = histories[method, seed]
        alpha = alternation.alpha_matrix(h.clients)
        out = alternation.expulsion_rounds(h.clients) if configs[method].algorithm_args.get("detect", True) else {}
        ax = axes[0, col]
        for client in alpha.columns:
            ax.plot(alpha.index, alpha[client], color=colors.get(camps[client], "#999999"), lw=0.8, alpha=0.7)
        for client, r in dict(out).items():
            ax.scatter(r, alpha.loc[r, client], marker="x", color="k", s=25, zorder=3)
        ax.axhline(kappa, color="r", ls="--", lw=1)
        ax.set_title(f"{method} (seed {seed}): {len(out)} of {configs[method].num_clients} expelled", fontsize=9)
        ax.set_ylim(-0.02, 1.0)
        gap = alternation.camp_gap(alpha, camps, a, b)
        axes[1, col].bar(gap.index, gap.to_numpy(), color=np.where(gap.to_numpy() > 0, colors[a], colors[b]))
        axes[1, col].axhline(0, color="k", lw=0.6)
        axes[1, col].set_xlabel("round")
        flips = alternation.sign_flip_fraction(gap)
        axes[1, col].set_title(f"camp gap: sign flips in {100 * flips:.0f} % of consecutive rounds", fontsize=8)
        long.append(alpha_long(h, method, seed, camps))
    axes[0, 0].set_ylabel("α_i^t (eq. 7)")
    axes[1, 0].set_ylabel(f"mean α camp {a} − camp {b}")
    handles = [plt.Line2D([], [], color=colors[k], label=f"camp: majority label {k} "
                          f"({int((camps == k).sum())} clients)") for k in (a, b)]
    handles += [plt.Line2D([], [], color="r", ls="--", label=f"κ = {kappa}"),
                plt.Line2D([], [], color="k", marker="x", ls="", label="expelled")]
    axes[0, -1].legend(handles=handles, fontsize=7, loc="upper right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig, pd.concat(long, ignore_index=True), (a, b), colors


def plot_alternation(stats, scale):
    """The camp gap's share of sign flips per method (bars: mean, dots: seeds), methods with two camps only."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3))
    methods = [m for m in dict.fromkeys(stats["method"])
               if stats.loc[stats["method"] == m, "gap sign flips"].notna().any()]
    for i, method in enumerate(methods):
        part = stats[stats["method"] == method]
        ax.bar(i, part["gap sign flips"].mean(), color="#cccccc")
        ax.scatter(np.full(len(part), i), part["gap sign flips"], color="k", s=12, zorder=3)
    ax.set_xticks(range(len(methods)), methods, rotation=15, fontsize=8)
    ax.set_ylabel("camp gap: share of sign flips")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"Do the two label camps take turns at high α? (dots: seeds; scale={scale})", fontsize=9)
    fig.tight_layout()
    return fig


def plot_eq7(trace, camps_by_method, colors, kappa, seed, scale):
    """α against the clipped cosine per traced method, coloured by camp."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    for ax, (method, part) in zip(axes, trace.groupby("method", sort=False)):
        cs = camps_by_method[method]
        ax.scatter(part["cosine"], part["alpha"], c=[colors.get(k, "#999999") for k in cs[part["client"]]], s=10)
        ax.plot([0, 1], [0, 1], "k:", lw=0.8)
        ax.axhline(kappa, color="r", ls="--", lw=1)
        ax.set_xlabel("clipped cosine max(cos(Δ_i, mean Δ), 0)")
        ax.set_title(f"{method}, rounds 1–{part['round'].max()}: size factor in "
                     f"[{part['size'].min():.3f}, {part['size'].max():.3f}]", fontsize=9)
    axes[0].set_ylabel("α_i^t")
    fig.suptitle(f"eq. 7: α ≈ clipped cosine; the size factor stays near 1 (seed {seed}, scale={scale})", fontsize=10)
    fig.tight_layout()
    return fig
