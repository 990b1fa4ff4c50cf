"""FAdamGC's tables from runs over seeds (fedkit.papers.fadamgc_tables), on hand-made histories and frames."""
import numpy as np
import pandas as pd
import pytest

from fedkit.history import History
from fedkit.papers import fadamgc as P
from fedkit.papers import fadamgc_tables as F


def history(acc, sim=60.0, cap=None, up=None, down=None, clients=None, tracked=None, diverged=False):
    """Rounds 0..len(acc)-1: test accuracy ``acc``, ``sim`` simulated seconds per trained round (NaN at round 0)."""
    n = len(acc)
    rounds = pd.DataFrame({"round": range(n), "test_accuracy": acc, "sim_seconds": [np.nan] + [sim] * (n - 1)})
    if up is not None:
        rounds["bytes_up"] = [np.nan] + [up] * (n - 1)
        rounds["bytes_down"] = [np.nan] + [down] * (n - 1)
        rounds["clients"] = [np.nan] + [clients] * (n - 1)
    client_rows = pd.DataFrame()
    if tracked is not None:  # tracked[t - 1] = the 0/1 flags of round t's clients
        client_rows = pd.DataFrame([{"round": t + 1, "client": c, "tracked": f} for t, flags in enumerate(tracked)
                                    for c, f in enumerate(flags)])
    return History(config={"rounds": cap if cap is not None else n - 1}, rounds=rounds, clients=client_rows,
                   diverged=diverged)


def test_outcome_by_hand():
    h = history([0.1, 0.3, 0.6, 0.7], sim=60.0)
    row = F.outcome({("FAdamGC", 0): h, ("LocalAdam", 0): history([0.1, 0.2, 0.3, 0.4])}, 0.5).set_index("method")
    # reached in round 2 after two rounds of 60 s: 2 minutes; the whole run 3 minutes
    assert row.loc["FAdamGC", "rounds_to_target"] == 2 and row.loc["FAdamGC", "minutes_to_target"] == 2.0
    assert row.loc["FAdamGC", "minutes_cap"] == 3.0 and row.loc["FAdamGC", "round_cap"] == 3
    assert row.loc["FAdamGC", "sim_seconds_per_round"] == 60.0 and row.loc["FAdamGC", "final_accuracy"] == 0.7
    assert np.isnan(row.loc["LocalAdam", "minutes_to_target"])
    assert "time_to_target" not in row


def test_cells_text():
    table = pd.DataFrame({"method": ["A", "A", "B", "B", "C", "C"], "tau": [1] * 6, "seed": [0, 1] * 3,
                          "v": [10.0, 20.0, 5.0, np.nan, np.nan, np.nan]})
    cells = F.cells(table, "v", ("tau", "method"), 2)
    assert cells[(1, "A")] == f"15.0 ± {np.std([10, 20], ddof=1):.1f}"
    assert cells[(1, "B")] == "5.0 (1/2)" and cells[(1, "C")] == "×"
    assert F.cells(table, "v", ("method",), 2, factor=100.0, digits=0)["A"] == "1500 ± 707"


def test_seed_curve_by_hand():
    a, b = history([0.1, 0.4, np.nan, 0.6], sim=30.0), history([0.3, 0.6, np.nan, 0.8], sim=90.0)
    curve = F.seed_curve([a, b])
    assert list(curve["round"]) == [0, 1, 3]  # round 2 has no evaluation
    np.testing.assert_allclose(curve["mean"], [0.2, 0.5, 0.7])
    np.testing.assert_allclose(curve["std"], [np.std([0.1, 0.3], ddof=1)] * 3)
    np.testing.assert_allclose(curve["minutes"], [0.0, 1.0, 3.0])  # (0.5 + 1.5) / 2, (1.5 + 4.5) / 2


def test_table2_and_side_by_side():
    hits = pd.DataFrame({"dataset": "fmnist", "method": ["LocalAdam", "LocalAdam", "FAdamGC", "FAdamGC"],
                         "seed": [0, 1, 0, 1], "diverged": False, "rounds_to_target": [10.0, 14.0, 8.0, np.nan],
                         "minutes": [1.0, 1.5, 0.5, np.nan]})
    t = F.table2(hits, ["fmnist"], ["LocalAdam", "FAdamGC"], {"fmnist": "label"}, {"fmnist": 0.3}, 2)
    assert list(t.columns) == ["dataset", "data used", "target", "metric", "method", "mean", "std", "reached", "seeds",
                               "diverged", "paper_row", "paper_mean", "paper_std"]
    row = t[(t["metric"] == "rounds") & (t["method"] == "LocalAdam")].iloc[0]
    assert (row["mean"], row["reached"], row["paper_row"]) == (12.0, 2, "CIFAR-10")
    assert (row["paper_mean"], row["paper_std"]) == P.TABLE2_ROUNDS.loc["CIFAR-10", "LocalAdam"]
    cells = F.side_by_side(t, "fmnist", "rounds", ["FAdamGC", "LocalAdam"])
    assert cells["fedkit"] == ["8.0 (1/2)", f"12.0 ± {np.std([10, 14], ddof=1):.1f} (2/2)"]
    paper = P.TABLE2_ROUNDS.loc["CIFAR-10", "FAdamGC"]
    assert cells["paper"][0] == f"{paper[0]:g} ± {paper[1]:g}"


class Cfg:
    local_steps, step_seconds, link_mbps = 20, 0.01, 8.0


def test_clock_by_hand():
    # 2^20 bytes = 8 · 2^20 bits over 8 "Mbit/s" of 2^20 bit/s: one second
    assert F.link_seconds(Cfg, 2**20) == pytest.approx(1.0)
    assert F.clock_seconds(Cfg, 3.0, 2**20) == pytest.approx(20 * 0.01 + 3.0)


def test_round_traffic_and_documented_check():
    h = history([0.1, 0.2, 0.3], up=300.0, down=600.0, clients=3)
    assert F.round_traffic(h, 100.0) == {"down": 2.0, "up": 1.0, "sim_seconds": 60.0}
    share = 0.5
    part = pd.DataFrame(F.documented_traffic(share), index=["down", "up"]).T
    F.check_traffic(part, share)
    assert part.loc["FAdamGC", "up"] == 1.5 and part.loc["SCAFFOLD-M", "down"] == 3
    part.loc["FA-NT", "up"] = 1.0  # a tracking client that uploads no y_i
    with pytest.raises(AssertionError, match="FA-NT"):
        F.check_traffic(part, share)


def test_time_follows_traffic():
    part = pd.DataFrame({"transfers": [2.0, 2.0, 3.0], "sim_seconds": [1.0, 1.0, 1.5]}, index=["a", "b", "c"])
    F.check_time_follows_traffic(part, transfer_seconds=0.5)
    part.loc["c", "sim_seconds"] = 0.9  # more traffic yet faster
    with pytest.raises(AssertionError):
        F.check_time_follows_traffic(part, transfer_seconds=0.5)


def test_table2_traffic_paper_columns():
    runs = {("FAdamGC", 0): history([0.1, 0.2], up=40.0, down=80.0, clients=1)}
    runs["FAdamGC", 0].parameters = 10  # a 10-float model: 40 bytes a transfer
    row = F.table2_traffic(runs, "fmnist", ["FAdamGC"], [0])[0]
    assert (row["unit_bytes"], row["down"], row["up"]) == (40, 2.0, 1.0)
    minutes, rounds = P.TABLE2_MINUTES.loc["CIFAR-10", "FAdamGC"][0], P.TABLE2_ROUNDS.loc["CIFAR-10", "FAdamGC"][0]
    assert row["paper_seconds"] == pytest.approx(60 * minutes / rounds)
    # the paper's round = K steps + transfers · (one model's seconds in steps) steps
    compute = P.COMMON["local_steps"] * P.STEP_SECONDS
    assert compute + row["paper_transfers"] * P.transfer_steps() * P.STEP_SECONDS == pytest.approx(row["paper_seconds"])


def test_table2_claims_text():
    methods = ["LocalAdam", "FA-NT", "FAdamGC"]
    raw = pd.DataFrame({"LocalAdam": [10.0, np.nan], "FA-NT": [8.0, 9.0], "FAdamGC": [9.0, 12.0]}, index=[0, 1])
    rounds = raw.fillna(21.0)[methods]
    minutes = pd.DataFrame({"LocalAdam": [2.0, 4.2], "FA-NT": [3.0, 3.1], "FAdamGC": [1.0, 1.2]}, index=[0, 1])
    text = F.table2_claims(raw, rounds, minutes).splitlines()
    # FAdamGC ≤ LocalAdam on both seeds (9 ≤ 10, 12 ≤ 21): holds 2/2; the seeds overlap (10 vs 9, 21 vs 12 → 9..12
    # against 10..21): undecided
    assert "holds on 2/2 seeds where either reached; seeds overlap: undecided" in text[-3]
    assert "mean 10.5 vs 15.5" in text[-3]
    assert "fastest FAdamGC (1.1 min)" in text[-2] and "rank 1/3" in text[-2]
    assert "FA-NT rank 1/3 in rounds (8.5)" in text[-1] and "FAdamGC < FA-NT on every seed" in text[-1]


def test_fewest_text():
    lower = pd.DataFrame({"LocalAdam": [5.0, 6.0], "FAdamGC": [3.0, 4.0], "FA-NT": [7.0, 8.0]})
    text = F.fewest(lower, "rounds").splitlines()
    assert text[0] == ("  fewest rounds: FAdamGC 3.5, rank 1/3; best other LocalAdam 5.5: "
                       "FAdamGC < LocalAdam on every seed")
    assert text[1] == "    order: FAdamGC, LocalAdam, FA-NT"


def outcomes(alpha, local, gc, cap=20):
    return pd.DataFrame({"alpha": alpha, "method": ["LocalAdam"] * len(local) + ["FAdamGC"] * len(gc),
                         "seed": list(range(len(local))) * 2, "rounds_to_target": local + gc, "round_cap": cap})


def test_gap_rows_and_verdict():
    table = pd.concat([outcomes(0.1, [15.0, np.nan], [5.0, 7.0]), outcomes(1.0, [10.0, 10.0], [9.0, 9.0]),
                       outcomes(0.5, [np.nan, np.nan], [np.nan, np.nan])], ignore_index=True)
    row = F.gap_row(table, 0.1)
    # never reached → the cap, 20: gaps 10 and 13, mean 11.5, a lower bound
    assert (row["gap"], row["bound"], row["LocalAdam − FAdamGC"]) == (11.5, "≥", "≥ +11.5")
    assert F.gap_row(table, 0.5)["LocalAdam − FAdamGC"] == "neither reached"
    gaps = pd.DataFrame([F.gap_row(table, a) for a in (0.1, 0.5, 1.0)]).set_index("α")
    assert gaps.loc[1.0, "relative"] == pytest.approx(0.1) and gaps.loc[1.0, "separated"]
    text = F.heterogeneity_verdict(gaps, [0.1, 0.5, 1.0]).splitlines()
    assert text[0].startswith("fedkit: the widest gap is ≥ +11.5 rounds at α = 0.1 — as in the paper")
    assert text[1] == "fedkit: at α = 1 the gap is +1.0 rounds (+10 % of LocalAdam's) — negligible, as in the paper."
    seeds = F.seed_gaps(table, 0.1, ["LocalAdam", "FAdamGC"])
    assert list(seeds["LocalAdam"]) == [15.0, 21.0] and list(seeds["relative_gap"]) == [10 / 15, 14 / 21]


def test_heterogeneity_verdict_without_any_gap():
    table = outcomes(0.1, [np.nan], [np.nan])
    gaps = pd.DataFrame([F.gap_row(table, 0.1)]).set_index("α")
    assert "no verdict (more rounds" in F.heterogeneity_verdict(gaps, [0.1])


def test_tracking_traffic_and_check():
    # S = 3 clients a round, τ = 1 tracks; a model is 100 bytes: uploads 3 + 1 models, each client receives 2
    h = history([0.1, 0.2, 0.3], up=400.0, down=600.0, clients=3, tracked=[[1, 0, 0], [0, 1, 0]])
    h.clients["bytes_up"] = 100.0 * (1 + h.clients["tracked"])
    assert F.tracking_traffic(h, 100.0) == {"uploads_per_round": 4.0, "download_per_client": 2.0,
                                            "tracked_min": 1, "tracked_max": 1}
    F.check_tracking(h, 1, 3, 100.0)
    with pytest.raises(AssertionError):
        F.check_tracking(h, 2, 3, 100.0)  # τ = 2 expected, 1 tracked
    local = history([0.1, 0.2], up=300.0, down=300.0, clients=3)
    local.clients = pd.DataFrame({"round": [1, 1, 1], "client": [0, 1, 2]})
    assert (F.tracking(local.clients) == 0).all()


def test_better_and_gc_from():
    part = pd.DataFrame({"method": ["FAdamGC", "FA-NT"], "rounds_to_target": [np.nan, 10.0], "round_cap": 20,
                         "final_accuracy": [0.5, 0.4]})
    assert F.better(part) == ("FA-NT", "rounds 21 vs 10")
    tie = part.assign(rounds_to_target=np.nan)
    assert F.better(tie) == ("FAdamGC", "final 50.00 vs 40.00 %")
    assert F.better(tie.assign(final_accuracy=[np.nan, 0.1]))[0] == "FA-NT"  # a diverged run counts below
    assert F.better(tie.assign(final_accuracy=0.3))[0] == "tie"
    assert F.gc_better_from(["FA-NT", "FAdamGC", "FAdamGC"]) == 1
    assert F.gc_better_from(["FAdamGC", "FA-NT", "FAdamGC"]) == 2
    assert F.gc_better_from(["FAdamGC", "tie"]) is None
