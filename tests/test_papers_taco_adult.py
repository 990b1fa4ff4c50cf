"""TACO on adult at the paper's settings (fedkit.papers.taco_adult): summaries, expulsions, paper rows, camps,
alternation and the claim checks, on small hand-made histories."""
import matplotlib
import numpy as np
import pandas as pd
import pytest

from fedkit.history import History
from fedkit.papers import taco_adult as T

matplotlib.use("Agg")


class Cfg:
    """What the functions read of a Config."""

    def __init__(self, num_clients=2, rounds=3, detect=True, seed=0):
        self.num_clients, self.rounds, self.seed = num_clients, rounds, seed
        self.algorithm_args = {} if detect else {"detect": False}
        self.partition, self.partition_args = "dirichlet", {"phi": 0.5}

    def replace(self, **changes):
        out = Cfg(self.num_clients, self.rounds, "detect" not in self.algorithm_args)
        out.__dict__.update(changes)
        return out


def history(acc, expelled=None, alpha=None):
    """Rounds 0..len(acc)-1 with test accuracies ``acc``; two clients per trained round with α and expulsions."""
    rounds = pd.DataFrame({"round": range(len(acc)), "test_accuracy": acc})
    rows = []
    for t in range(1, len(acc)):
        for c in (0, 1):
            row = {"round": t, "client": c}
            if alpha is not None:
                row["alpha"] = alpha[t - 1][c]
            if expelled is not None:
                row["expelled"] = float(expelled.get(c) == t)
                row["count"] = 0.0
            rows.append(row)
    return History(config={}, rounds=rounds, clients=pd.DataFrame(rows))


@pytest.fixture
def runs():
    configs = {"FedAvg": Cfg(), "TACO": Cfg()}
    histories = {
        ("FedAvg", 0): history([0.1, 0.5, 0.8]), ("FedAvg", 1): history([0.1, 0.6, 0.9]),
        ("TACO", 0): history([0.1, 0.4, 0.6], expelled={0: 2}, alpha=[[0.9, 0.1], [0.2, 0.8]]),
        ("TACO", 1): history([0.1, 0.3, 0.5], expelled={0: 1, 1: 2}, alpha=[[0.7, 0.7], [0.7, 0.7]]),
    }
    return configs, histories


def test_colour_takes_the_most_specific_key():
    assert T.colour("TACO, detection off") == T.PALETTE["detection off"]
    assert T.colour("TACO, N=100") == T.PALETTE["TACO"]
    assert T.colour("FoolsGold") == "#999999"


def test_expelled_counts_clients(runs):
    _, histories = runs
    assert np.isnan(T.expelled_of(histories["FedAvg", 0]))
    assert T.expelled_of(histories["TACO", 0]) == 1 and T.expelled_of(histories["TACO", 1]) == 2


def test_seed_summary_by_hand(runs):
    configs, histories = runs
    per_seed, summary, acc = T.seed_summary(histories, configs)
    # FedAvg finals 0.8, 0.9: mean 0.85, std (ddof 1) 0.0707...
    assert summary.loc["FedAvg", "final accuracy %"] == "85.00 ± 7.07"
    # last 10 rounds = all three rounds: TACO (0.1+0.4+0.6)/3, (0.1+0.3+0.5)/3 → 36.67 and 30.00
    assert summary.loc["TACO", "last-10-rounds mean %"] == f"{100 * (11 / 30 + 0.3) / 2:.2f} ± " \
                                                           f"{100 * np.std([11 / 30, 0.3], ddof=1):.2f}"
    assert summary.loc["TACO", "expelled (per seed)"] == "1, 2" and summary.loc["FedAvg", "expelled (per seed)"] == "—"
    assert summary.loc["TACO", "rounds trained (per seed)"] == "2, 2"
    assert list(acc.columns) == ["FedAvg", "TACO"] and acc.loc[1, "TACO"] == 0.5
    text = T.summary_report(summary, acc, {"FedAvg": [0, 1], "TACO": [0, 1]})
    assert "seeds: {'FedAvg': [0, 1], 'TACO': [0, 1]}" in text and "per seed, final accuracy %:" in text


def test_expulsions_by_hand(runs):
    configs, histories = runs
    table, when = T.expulsions(histories, configs)
    assert list(table["method"]) == ["TACO", "TACO"]  # FedAvg has no detection column
    assert table[["expelled", "first", "last"]].values.tolist() == [[1, 2, 2], [2, 1, 2]]
    assert when.values.tolist() == [["TACO", 0, 0, 2], ["TACO", 1, 0, 1], ["TACO", 1, 1, 2]]
    configs["TACO"] = Cfg(detect=False)  # detection off: no expulsion table rows
    assert T.expulsions(histories, configs)[0].empty


def test_side_by_side_names_missing_runs():
    summary = pd.DataFrame({"final accuracy %": ["83.00 ± 0.10"], "expelled (per seed)": ["—"]}, index=["FedAvg"])
    side = T.side_by_side(summary, 20, "ci", "adult (ci)")
    assert len(side) == len(T.paper_rows(20)) == 12
    first = side.iloc[0]
    assert (first["paper %"], first["fedkit %"]) == ("78.88 ± 0.06", "83.00 ± 0.10")
    assert side.iloc[2]["fedkit %"] == "not run at ci scale"
    assert side.iloc[8]["fedkit run"] == "not run" and side.iloc[8]["fedkit %"] == "—"
    assert side.iloc[10]["fedkit run"] == "TACO, N=20"
    assert (side["data used"] == "adult (ci) (N=20 for Table VII)").all()


def test_alternation_stats_by_hand(runs):
    configs, histories = runs
    camps = np.array([0, 1])
    stats, summary = T.alternation_stats(histories, configs, lambda cfg: camps, kappa=0.6)
    assert list(stats["method"]) == ["TACO", "TACO"]
    # seed 0: gaps 0.9 − 0.1 = 0.8, 0.2 − 0.8 = −0.6 → one sign flip in one pair; seed 1: gaps 0, 0 → no pair
    assert stats.loc[0, "gap sign flips"] == 1.0 and stats.loc[0, "mean |gap|"] == pytest.approx(0.7)
    assert np.isnan(stats.loc[1, "gap sign flips"])
    assert stats.loc[0, "share α ≥ κ"] == 0.5 and stats.loc[1, "share α ≥ κ"] == 1.0
    assert summary.loc["TACO", ("share α ≥ κ", "mean")] == 0.75


def test_camp_turns_by_hand():
    trace = pd.DataFrame({"round": [1, 1, 2, 2, 3, 3], "client": [0, 1] * 3,
                          "size": [0.90, 0.95, 0.96, 0.92, 0.91, 0.97],
                          "cosine": [0.9, 0.1, 0.2, 0.8, 0.1, 0.7], "alpha": [0.8, 0.1, 0.2, 0.7, 0.1, 0.6]})
    by_camp, same, changes, n = T.camp_turns(trace, np.array([0, 1]), 0, 1)
    # high α: camp 0, 1, 1; larger updates (lower size): camp 0, 1, 0 → agree in 2 of 3, change once of 2
    assert (same, changes, n) == (2, 1, 3)
    assert by_camp.loc[2, ("alpha", 1)] == 0.7


def test_checks_fail_on_bad_factors():
    factors = pd.DataFrame({"product_vs_alpha": [1e-3], "rerun_vs_history": [0.0]})
    trace = pd.DataFrame({"size": [0.5]})
    stats = pd.DataFrame({"method": ["TACO", "TACO, detection off", "TACO, uniform agg."]})
    per_seed = pd.DataFrame({"final_accuracy": [0.5], "diverged": [False]})
    with pytest.raises(AssertionError):
        T.check_structure({("a", 0): None}, {"a": [0]}, per_seed, factors, trace, stats)
    T.check_structure({("a", 0): None}, {"a": [0]}, per_seed, factors.assign(product_vs_alpha=0.0), trace, stats)


def test_plots_draw(runs):
    import matplotlib.pyplot as plt

    configs, histories = runs
    per_seed, summary, acc = T.seed_summary(histories, configs)
    table, when = T.expulsions(histories, configs)
    fig = T.plot_expulsions(table, when, configs, {"TACO": [0, 1]}, 0.6, 1.2, "ci")
    (ax,) = fig.axes
    # seed 1 expels client 0 in round 1 and client 1 in round 2: counts 0, 1, 2, 2 over rounds 0..3
    assert list(ax.lines[1].get_ydata()) == [0, 1, 2, 2]
    plt.close("all")


@pytest.fixture(scope="module")
def real():
    """Two 3-round runs of the ci stand-in (synthetic tabular data, 10 clients): FedAvg and TACO."""
    from fedkit.papers import taco

    configs = {m: taco.config("adult", "ci", m, rounds=3) for m in ("FedAvg", "TACO")}
    return configs, T.run_all(configs, {m: [0] for m in configs}, workers=1)


def test_run_all_returns_every_run(real):
    configs, (histories, n_runs, n_missing, workers, seconds) = real
    assert set(histories) == {("FedAvg", 0), ("TACO", 0)} and n_runs == 2
    assert workers <= 1 and seconds > 0 and 0 <= n_missing <= 2
    assert int(histories["TACO", 0].rounds["round"].iloc[-1]) == 3


def test_camps_are_majority_labels(real):
    from fedkit.federation import Federation

    configs, _ = real
    camps_of = T.Camps()
    camps = camps_of(configs["TACO"])
    fed = Federation(configs["TACO"])
    y = fed.y_train.cpu().numpy()
    by_hand = [np.bincount(y[np.asarray(part)]).argmax() for part in fed.parts]
    assert list(camps) == by_hand
    assert camps_of(configs["FedAvg"]) is camps  # same seed and partition: computed once


def test_eq7_factors_reproduce_the_history(real):
    configs, (histories, *_) = real
    trace, factors = T.eq7_factors(configs, histories, 0, [("TACO", 2)])
    recorded = histories["TACO", 0].clients
    assert set(trace["round"]) == {1, 2} and len(trace) == (recorded["round"] <= 2).sum()  # expelled: left out
    # eq. 7: α = (1 − ‖Δ_i‖ / Σ_j ‖Δ_j‖) · max(cos, 0), and the re-run gives the recorded α
    assert factors.loc["TACO", "product_vs_alpha"] < 1e-5 and factors.loc["TACO", "rerun_vs_history"] < 1e-5
    assert ((trace["size"] > 0) & (trace["size"] < 1)).all()
    long = T.alpha_long(histories["TACO", 0], "TACO", 0, T.Camps()(configs["TACO"]))
    assert {"round", "client", "alpha", "method", "seed", "camp"} <= set(long.columns)


def claims_frames(taco_acc, off_acc, uniform_expelled, flips_uniform):
    """Per-seed frames (3 seeds) in the shape check_claims reads, FedAvg at 0.84."""
    methods = ["FedAvg", "TACO", "TACO, detection off", "TACO, uniform agg.", "TACO, IID", "TACO, N=100"]
    expelled = {"FedAvg": np.nan, "TACO": 20, "TACO, detection off": 0, "TACO, uniform agg.": uniform_expelled,
                "TACO, IID": 20, "TACO, N=100": 80}
    acc = {"FedAvg": 0.84, "TACO": taco_acc, "TACO, detection off": off_acc, "TACO, uniform agg.": 0.835,
           "TACO, IID": 0.76, "TACO, N=100": 0.7}
    per_seed = pd.DataFrame([{"method": m, "seed": s, "final_accuracy": acc[m] + 0.001 * s, "expelled": expelled[m]}
                             for m in methods for s in range(3)])
    flips = {"TACO": 1.0, "TACO, detection off": 0.9, "TACO, uniform agg.": flips_uniform, "TACO, IID": np.nan}
    stats = pd.DataFrame([{"method": m, "seed": s, "gap sign flips": f, "share α ≥ κ": 1.0 if m == "TACO, IID" else 0.5}
                          for m, f in flips.items() for s in range(3)])
    when = pd.DataFrame({"method": "TACO, IID", "seed": 0, "client": range(20), "expelled in round": 10})
    trace = pd.DataFrame({"method": "TACO", "size": [0.9, 0.95]})
    configs = {"TACO": Cfg(num_clients=20), "TACO, IID": Cfg(num_clients=20)}
    acc_frame = per_seed.pivot(index="seed", columns="method", values="final_accuracy")[methods]
    return configs, per_seed, acc_frame, stats, when, trace


def test_check_claims_accepts_the_small_findings_and_rejects_others():
    args = claims_frames(taco_acc=0.57, off_acc=0.72, uniform_expelled=2, flips_uniform=0.4)
    T.check_claims(*args[:2], args[2], args[3], args[4], args[5], lam=10, many=100)
    bad = claims_frames(taco_acc=0.57, off_acc=0.85, uniform_expelled=2, flips_uniform=0.4)  # detection off ≥ FedAvg
    with pytest.raises(AssertionError):
        T.check_claims(*bad[:2], bad[2], bad[3], bad[4], bad[5], lam=10, many=100)
    bad = claims_frames(taco_acc=0.57, off_acc=0.72, uniform_expelled=2, flips_uniform=0.95)  # uniform alternates
    with pytest.raises(AssertionError):
        T.check_claims(*bad[:2], bad[2], bad[3], bad[4], bad[5], lam=10, many=100)


def test_figures_draw(real, runs):
    import matplotlib.pyplot as plt

    configs, (histories, *_) = real
    fake_configs, fake = runs
    per_seed, summary, acc = T.seed_summary(fake, fake_configs)
    histories5 = {(m, 0): fake["TACO", 0] for m in ["FedAvg", "FedACG", "TACO", "TACO, detection off",
                                                     "TACO, uniform agg."]}
    fig = T.plot_accuracy(fake_configs | {"TACO": Cfg()}, summary, acc, histories5, 0, 2, "ci", "adult")
    assert len(fig.axes[1].lines) == 5  # five curves
    stats, _ = T.alternation_stats(fake, fake_configs, lambda cfg: np.array([0, 1]), 0.6)
    fig = T.plot_alternation(stats, "ci")
    assert len(fig.axes[0].patches) == 1  # TACO: one method with a defined gap
    fig = T.plot_table(pd.DataFrame([["a"] * 6]), "title")
    assert fig.axes[0].get_title() == "title"
    camps = T.Camps()(configs["TACO"])
    if len(np.unique(camps)) > 1:
        fig, long, (a, b), colors = T.plot_alpha(["TACO"] * 2, histories, configs, 0, camps, 0.6, "t")
        assert len(long) == 2 * len(histories["TACO", 0].clients) and set(colors) == {a, b}
        trace, _ = T.eq7_factors(configs, histories, 0, [("TACO", 1), ("TACO", 2)])
        fig = T.plot_eq7(trace, {"TACO": camps}, colors, 0.6, 0, "ci")
        assert len(fig.axes) == 2
    plt.close("all")
