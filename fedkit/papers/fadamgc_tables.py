"""FAdamGC's tables from runs over seeds (notebooks/fadamgc: Table 2 and its language rows, Figs. 3, 4 and 5–8):
time to target per run, mean ± std cells, seed-averaged curves, Table 2 beside the paper, per-round traffic in
model units and the simulated clock's checks, and the verdicts each figure's notebook prints.

``histories`` are ``run_seeds`` results ({(method, seed): History}).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..runner import LINK_UNIT
from ..seeds import mean_std, pm, reach, separated, verdict
from . import fadamgc as P


def outcome(histories: dict, target: float) -> pd.DataFrame:
    """``reach`` per (method, seed) in simulated minutes, with the final accuracy, the seconds of one simulated
    round, and where a never-reached run is drawn: at the round cap and at the run's whole simulated time."""
    frame = reach(histories, target, per_round="sim_seconds")
    runs = list(histories.values())
    frame["minutes_to_target"] = frame.pop("time_to_target") / 60
    frame["final_accuracy"] = [h.final_accuracy for h in runs]
    frame["round_cap"] = [h.config["rounds"] for h in runs]
    frame["minutes_cap"] = [h.rounds["sim_seconds"].sum() / 60 for h in runs]
    frame["sim_seconds_per_round"] = [h.rounds["sim_seconds"].dropna().mean() for h in runs]
    return frame


def cells(table: pd.DataFrame, value: str, by, n_seeds: int, factor=1.0, digits=1) -> dict:
    """{group key: 'mean ± std'} of ``value`` per ``by`` over the seeds that have a value: '×' where none has, and
    '(k/n)' appended where only k of the n seeds have one."""
    stats = mean_std(table, value, by=by)
    return {key: pm(r["mean"], r["std"], factor, digits) + ("" if r["seeds"] in (0, n_seeds)
                                                             else f" ({r['seeds']:.0f}/{n_seeds})")
            for key, r in stats.iterrows()}


def seed_curve(runs: list) -> pd.DataFrame:
    """Test accuracy per round over the seeds' histories ``runs``: mean, std and the mean cumulative simulated
    minutes (rounds without an evaluation left out)."""
    frame = pd.concat([h.rounds.assign(minutes=lambda r: r["sim_seconds"].fillna(0).cumsum() / 60)
                       for h in runs]).dropna(subset=["test_accuracy"])
    return frame.groupby("round").agg(mean=("test_accuracy", "mean"), std=("test_accuracy", "std"),
                                      minutes=("minutes", "mean")).reset_index()


def table2(hits: pd.DataFrame, datasets, methods, labels: dict, targets: dict, n_seeds: int) -> pd.DataFrame:
    """Table 2 (rounds and simulated minutes to target) per data set, metric and method beside the paper's row:
    mean, std, seeds that reached, diverged; ``hits`` is ``reach`` per data set with a ``minutes`` column."""
    rows = []
    for d in datasets:
        row = P.PAPER_ROW[d]
        for metric, column, paper in [("rounds", "rounds_to_target", P.TABLE2_ROUNDS),
                                      ("minutes", "minutes", P.TABLE2_MINUTES)]:
            stats = mean_std(hits[hits["dataset"] == d], column)
            rows += [{"dataset": d, "data used": labels[d], "target": targets[d], "metric": metric, "method": m,
                      "mean": stats.loc[m, "mean"], "std": stats.loc[m, "std"], "reached": int(stats.loc[m, "seeds"]),
                      "seeds": n_seeds, "diverged": int(stats.loc[m, "diverged"]), "paper_row": row,
                      "paper_mean": paper.loc[row, m][0], "paper_std": paper.loc[row, m][1]} for m in methods]
    return pd.DataFrame(rows)


def side_by_side(table: pd.DataFrame, d: str, metric: str, methods) -> dict:
    """{'<metric/data set>: fedkit' and 'paper <row>' columns} of one data set's Table 2 cells for one metric:
    'mean ± std (reached/seeds)' and the paper's 'mean ± std'."""
    part = table[(table["dataset"] == d) & (table["metric"] == metric)].set_index("method").loc[methods]
    return {"fedkit": [f"{pm(r['mean'], r['std'], 1, 1)} ({r['reached']}/{r['seeds']})" for _, r in part.iterrows()],
            "paper": [f"{r['paper_mean']:g} ± {r['paper_std']:g}" for _, r in part.iterrows()]}


def documented_traffic(share: float) -> dict:
    """Models a client receives and uploads per round, per method (algorithms-seed §3.6): the momentum methods and
    FA-NT / FAdamGC receive the model and y; SCAFFOLD-M also c; a tracking client (``share`` of the sampled ones)
    uploads y_i beside its update."""
    return {"FedAvg-M": (2, 1), "SCAFFOLD-M": (3, 2), "FedAdam": (1, 1), "FedAMS": (1, 1), "LocalAdam": (1, 1),
            "FA-NT": (2, 1 + share), "FAdamGC": (2, 1 + share)}


def round_traffic(h, unit: float) -> dict:
    """One run's mean per-client download and upload per trained round, in units of ``unit`` bytes, and its mean
    simulated seconds per round."""
    r = h.rounds[h.rounds["round"] > 0]
    return {"down": (r["bytes_down"] / r["clients"]).mean() / unit, "up": (r["bytes_up"] / r["clients"]).mean() / unit,
            "sim_seconds": r["sim_seconds"].mean()}


def check_traffic(part: pd.DataFrame, share: float) -> None:
    """``part`` (method → down, up, in models per client and round) is ``documented_traffic(share)`` to 1e-3."""
    for m, (down, up) in documented_traffic(share).items():
        np.testing.assert_allclose(part.loc[m, ["down", "up"]].astype(float), [down, up], atol=1e-3, err_msg=m)


def link_seconds(cfg, unit_bytes: float) -> float:
    """Seconds one model of ``unit_bytes`` bytes takes over the run's link."""
    return unit_bytes * 8 / (cfg.link_mbps * LINK_UNIT)


def clock_seconds(cfg, transfers: float, unit_bytes: float) -> float:
    """The simulated clock of one round: K local steps of ``step_seconds`` plus ``transfers`` models of
    ``unit_bytes`` bytes over the link."""
    return cfg.local_steps * cfg.step_seconds + transfers * unit_bytes * 8 / (cfg.link_mbps * LINK_UNIT)


def check_time_follows_traffic(part: pd.DataFrame, transfer_seconds: float) -> None:
    """Equal traffic (to the flag scalars): equal time; more traffic: more time, for every pair of methods."""
    for a in part.index:
        for b in part.index:
            more_traffic = part.loc[a, "transfers"] - part.loc[b, "transfers"]
            slower = part.loc[a, "sim_seconds"] - part.loc[b, "sim_seconds"]
            same = abs(more_traffic) < 1e-3
            assert abs(slower) < 1e-3 * transfer_seconds if same else np.sign(slower) == np.sign(more_traffic), (
                a, b, more_traffic, slower)


def table2_traffic(histories: dict, d: str, methods, seeds) -> list[dict]:
    """Per (method, seed) of data set ``d``: the model's bytes, ``round_traffic`` in models, and the paper's seconds
    per round (Table 2's minutes over its rounds) with the model transfers they imply beside K steps of compute."""
    row = P.PAPER_ROW[d]
    paper_seconds = 60 * P.TABLE2_MINUTES.loc[row].map(lambda c: c[0]) / P.TABLE2_ROUNDS.loc[row].map(lambda c: c[0])
    paper_compute = P.COMMON["local_steps"] * P.STEP_SECONDS
    rows = []
    for m in methods:
        for s in seeds:
            h = histories[m, s]
            unit = 4 * h.parameters
            rows.append({"dataset": d, "method": m, "seed": s, "unit_bytes": unit, **round_traffic(h, unit),
                         "paper_seconds": paper_seconds[m],
                         "paper_transfers": (paper_seconds[m] - paper_compute) / (P.transfer_steps() * P.STEP_SECONDS)})
    return rows


def table2_claims(raw: pd.DataFrame, rounds: pd.DataFrame, minutes: pd.DataFrame) -> str:
    """Table 2's three claims on one data set, from seeds × methods frames: ``raw`` rounds to target (NaN: never),
    ``rounds`` and ``minutes`` with never-reached seeds counted past the budget (``by_seed``). 1: FAdamGC needs no more
    rounds than LocalAdam; 2: FAdamGC is fastest in time; 3: FA-NT is good in rounds but slower than FAdamGC."""
    both_missed = raw["FAdamGC"].isna() & raw["LocalAdam"].isna()
    holds = (rounds["FAdamGC"] <= rounds["LocalAdam"]).astype(float).where(~both_missed)
    shown = np.where(both_missed, "neither reached", np.where(holds == 1, "yes", "NO"))
    fastest = minutes.mean().sort_values()
    rank = list(rounds.mean().sort_values().index)
    n = len(rounds.columns)
    return "\n".join([
        pd.DataFrame({"LocalAdam rounds": raw["LocalAdam"], "FAdamGC rounds": raw["FAdamGC"],
                      "FAdamGC ≤ LocalAdam": shown}).to_string(),
        f"  claim 1, FAdamGC rounds ≤ LocalAdam's: mean {pm(rounds['FAdamGC'].mean(), np.nan, 1, 1)} vs "
        f"{pm(rounds['LocalAdam'].mean(), np.nan, 1, 1)} (never reached = budget + 1), holds on "
        f"{int(holds.sum())}/{int(holds.notna().sum())} seeds where either reached; "
        f"{verdict('FAdamGC', 'LocalAdam', rounds)}",
        f"  claim 2, FAdamGC fastest in time: fastest {fastest.index[0]} ({fastest.iloc[0]:.1f} min), FAdamGC "
        f"{minutes['FAdamGC'].mean():.1f} min (rank {list(fastest.index).index('FAdamGC') + 1}/{n}); first two: "
        f"{verdict(*fastest.index[:2], minutes)}",
        f"  claim 3, FA-NT good in rounds but costlier in time than FAdamGC: FA-NT rank {rank.index('FA-NT') + 1}/{n} "
        f"in rounds ({rounds['FA-NT'].mean():.1f}); minutes FA-NT {minutes['FA-NT'].mean():.1f} vs FAdamGC "
        f"{minutes['FAdamGC'].mean():.1f}: {verdict('FAdamGC', 'FA-NT', minutes)}"])


def fewest(lower: pd.DataFrame, unit: str) -> str:
    """FAdamGC's rank by the seed mean of ``lower`` (seeds × methods, never reached counted past the budget) and the
    verdict against the best other method, then every method in order."""
    mean = lower.mean().sort_values()
    other = mean.drop("FAdamGC").index[0]
    return (f"  fewest {unit}: FAdamGC {mean['FAdamGC']:.1f}, rank {int((mean < mean['FAdamGC']).sum()) + 1}/"
            f"{len(mean)}; best other {other} {mean[other]:.1f}: {verdict('FAdamGC', other, lower)}\n"
            f"    order: {', '.join(mean.index)}")


# ---- Fig. 3: heterogeneity --------------------------------------------------------------------------------------
def gap_row(table: pd.DataFrame, alpha) -> dict:
    """LocalAdam − FAdamGC in rounds at ``alpha``, seed by seed, a never-reached seed counted at the round cap: then
    the gap is a bound (≥ where LocalAdam never reached, ≤ where FAdamGC never did, ? where both missed some)."""
    part = table[table["alpha"] == alpha].set_index(["method", "seed"])["rounds_to_target"]
    local, gc = part["LocalAdam"], part["FAdamGC"]
    cap = table.loc[table["alpha"] == alpha, "round_cap"].max()
    gap = float((local.fillna(cap) - gc.fillna(cap)).mean())
    missing = local.isna().any(), gc.isna().any()
    kind = {(False, False): "", (True, False): "≥ ", (False, True): "≤ ", (True, True): "? "}[missing]
    text = "neither reached" if local.isna().all() and gc.isna().all() else f"{kind}{gap:+.1f}"
    return {"α": alpha, "LocalAdam": local.mean(), "FAdamGC": gc.mean(), "gap": gap, "bound": kind.strip(),
            "LocalAdam − FAdamGC": text, "relative": gap / local.mean(), "separated": separated(local, gc)}


def seed_gaps(table: pd.DataFrame, alpha, methods) -> pd.DataFrame:
    """Per seed at ``alpha``: each method's rounds to target (never reached: the round cap + 1, as the ledger counts
    it) and LocalAdam − FAdamGC, in rounds and as a share of LocalAdam's rounds."""
    part = table[table["alpha"] == alpha]
    rounds = part.pivot(index="seed", columns="method", values="rounds_to_target")[methods]
    rounds = rounds.fillna(part["round_cap"].max() + 1)
    gap = rounds["LocalAdam"] - rounds["FAdamGC"]
    return rounds.assign(alpha=alpha, gap=gap, relative_gap=gap / rounds["LocalAdam"]).reset_index()


def heterogeneity_verdict(gaps: pd.DataFrame, alphas) -> str:
    """Where the LocalAdam − FAdamGC gap is widest (the paper: at the smallest α) and whether it is within 10 % of
    LocalAdam's rounds at the largest α (the paper: negligible near IID)."""
    defined = gaps[gaps["LocalAdam − FAdamGC"] != "neither reached"]
    if defined.empty:
        return ("fedkit: neither LocalAdam nor FAdamGC reached the target at any α — no verdict (more rounds or a "
                "lower `target` needed).")
    lines = []
    widest = list(defined.index[defined["gap"] == defined["gap"].max()])
    text = defined.loc[widest[0], "LocalAdam − FAdamGC"]
    bounds = " (some cells are bounds: a seed never reached the target)" if (defined["bound"] != "").any() else ""
    if len(defined) < 2:
        lines.append(f"fedkit: only α = {widest[0]:g} has a gap ({text} rounds): no verdict on where it is largest.")
    elif len(widest) > 1:
        lines.append(f"fedkit: the widest gap, {text} rounds, is shared by α ∈ {widest} — NOT largest at α = "
                     f"{min(alphas):g} alone{bounds}.")
    else:
        lines.append(f"fedkit: the widest gap is {text} rounds at α = {widest[0]:g} — "
                     f"{'as in the paper' if widest[0] == min(alphas) else 'NOT as in the paper'}{bounds}.")
    iid = max(alphas)
    if iid in defined.index:
        row = defined.loc[iid]
        small = abs(row["relative"]) <= 0.10
        lines.append(f"fedkit: at α = {iid:g} the gap is {row['LocalAdam − FAdamGC']} rounds "
                     f"({100 * row['relative']:+.0f} % of LocalAdam's) — "
                     f"{'negligible, as in the paper' if small else 'NOT negligible'}.")
    else:
        lines.append(f"fedkit: at α = {iid:g} neither method reached the target — no verdict near IID.")
    return "\n".join(lines)


# ---- Fig. 4: selective tracking ---------------------------------------------------------------------------------
def tracking(clients: pd.DataFrame) -> pd.Series:
    """Each client row's ``tracked`` metric (0 or 1); LocalAdam has no tracking and logs none: 0."""
    return clients["tracked"] if "tracked" in clients else pd.Series(0.0, index=clients.index)


def tracking_traffic(h, model_bytes: float) -> dict:
    """One run's uploads per round and download per client in models, and the fewest and most clients that tracked
    in a round."""
    r = h.rounds.dropna(subset=["bytes_up"])
    tracked = tracking(h.clients).groupby(h.clients["round"]).sum()
    return {"uploads_per_round": (r["bytes_up"] / model_bytes).mean(),
            "download_per_client": (r["bytes_down"] / r["clients"] / model_bytes).mean(),
            "tracked_min": tracked.min(), "tracked_max": tracked.max()}


def check_tracking(h, tau: int, clients_per_round: int, model_bytes: float, name=()) -> None:
    """A run of selective tracking: finished (or diverged); exactly τ of the S sampled clients track in every round;
    a tracking client uploads two models (Δ_i and y_i), the others one, so a round uploads S + τ."""
    finished = h.ended_early is None and int(h.rounds["round"].iloc[-1]) == h.config["rounds"]
    assert h.diverged or finished, (*name, h.ended_early)
    c = h.clients.assign(tracked=tracking(h.clients))
    assert c["tracked"].isin([0.0, 1.0]).all(), name
    per_round = c.groupby("round")["tracked"].sum()
    assert len(per_round) == int(h.rounds["round"].iloc[-1]) and (per_round == tau).all(), name
    assert np.allclose(c["bytes_up"] / model_bytes, 1 + c["tracked"], atol=1e-3), name
    uploads = h.rounds["bytes_up"].dropna() / model_bytes
    assert np.allclose(uploads, clients_per_round + tau, atol=1e-2), (*name, uploads.unique())


# ---- Figs. 5–8: sampling rate × K --------------------------------------------------------------------------------
def better(part: pd.DataFrame) -> tuple[str, str]:
    """'FAdamGC', 'FA-NT' or 'tie' at one setting, on mean rounds to target (cap + 1 if never), then on the final
    accuracy (a diverged run below any that did not); and why."""
    mean = part.assign(r=part["rounds_to_target"].fillna(part["round_cap"] + 1)).groupby("method")[
        ["r", "final_accuracy"]].mean()
    gc, nt = mean.loc["FAdamGC"], mean.loc["FA-NT"]
    if gc["r"] != nt["r"]:
        return ("FAdamGC" if gc["r"] < nt["r"] else "FA-NT"), f"rounds {gc['r']:g} vs {nt['r']:g}"
    acc_gc, acc_nt = np.nan_to_num(gc["final_accuracy"], nan=-1.0), np.nan_to_num(nt["final_accuracy"], nan=-1.0)
    if acc_gc == acc_nt:
        return "tie", "same rounds to target and same final accuracy"
    word = "FAdamGC" if acc_gc > acc_nt else "FA-NT"
    return word, f"final {100 * gc['final_accuracy']:.2f} vs {100 * nt['final_accuracy']:.2f} %"


def gc_better_from(winners: list) -> int | None:
    """The first index from which FAdamGC is better at every later rate, or None."""
    return next((i for i, w in enumerate(winners) if w == "FAdamGC" and all(x == "FAdamGC" for x in winners[i:])),
                None)
