"""The generic result tables of fedkit.report on hand-made histories, against values worked out by hand."""
import math

import pandas as pd
import pytest

from fedkit import report
from fedkit.history import History

NAN = float("nan")


def history(accuracies, seconds, diverged=False, ended_early=None, **columns):
    """A History with the given per-round test accuracy (round 0 first), slowest-client seconds (rounds 1, 2, ...)
    and any further per-round columns."""
    rounds = pd.DataFrame({"round": range(len(accuracies)), "test_accuracy": accuracies,
                           "client_seconds_max": [NAN] + list(seconds), **columns})
    return History({}, rounds, pd.DataFrame({"client": [0], "expelled": [0]}), diverged, ended_early)


@pytest.fixture
def histories():
    """Data set d2 (listed first) with methods A and B, d1 with A, B, C, D; A is the baseline."""
    return {
        ("d2", "A"): history([0.2, 0.4, 0.8], [1.0, 1.0]),
        ("d2", "B"): history([0.2, NAN], [1.0], diverged=True),
        ("d1", "A"): history([0.1, 0.5, 0.7], [1.0, 3.0]),
        ("d1", "B"): history([0.1, 0.6, NAN, 0.8], [4.0, 4.0, 4.0], test_accuracy_z=[NAN, NAN, NAN, 0.85]),
        ("d1", "C"): history([0.1, 0.65, 0.7], [6.0, 6.0]),
        ("d1", "D"): history([0.1, 0.3], [1.0], ended_early="every client was expelled"),
    }


PAPER = pd.DataFrame({"d1": ["1A", "1B", "1C", "1D"], "d2": ["2A", "2B", "2C", "2D"]}, index=list("ABCD"))


def table(histories):
    """Targets: 0.6 on d1; half the baseline's final accuracy on d2 (0.4). Slow: over 1.2 × A's time."""
    target = lambda name, base: 0.6 if name == "d1" else base.final_accuracy / 2
    return report.target_table(histories, "A", target, PAPER, slow=1.2, label=str.upper)


def test_target_table_by_hand(histories):
    t = table(histories)
    assert list(t.columns) == [  # the Table V CSV's columns (less "fedkit"), with "vs_<baseline>_time"
        "dataset", "data used", "method", "target", "rounds", "final_accuracy", "final_accuracy_z", "diverged",
        "ended_early", "rounds_to_target", "time_to_target", "round_seconds_median", "round_seconds_mean",
        "round_seconds_std", "paper", "paper_accuracy", "fedkit", "vs_a_time", "time_mark"]
    assert list(zip(t["dataset"], t["method"])) == list(histories)  # the histories' order
    t = t.set_index(["dataset", "method"])
    assert list(t["target"]) == [0.4, 0.4, 0.6, 0.6, 0.6, 0.6]
    assert list(t["data used"].unique()) == ["D2", "D1"]
    assert list(t.loc["d1", "rounds"]) == [2, 3, 2, 1]
    # d1: A reaches 0.6 in round 2 after 1 + 3 s; B in round 1 after 4 s (1×); C in round 1 after 6 s (1.5× > 1.2: "o")
    assert list(t.loc["d1", "rounds_to_target"].iloc[:3]) == [2, 1, 1]
    assert list(t.loc["d1", "time_to_target"].iloc[:3]) == [4.0, 4.0, 6.0]
    assert list(t.loc["d1", "vs_a_time"].iloc[:3]) == [1.0, 1.0, 1.5]
    assert list(t.loc["d1", "time_mark"]) == ["", "", "o", "×"]
    assert list(t.loc["d2", "time_mark"]) == ["", "×"]  # B diverged
    assert t.loc[("d2", "B"), "rounds_to_target"] is None or math.isnan(t.loc[("d2", "B"), "rounds_to_target"])
    # per-round client time of A on d1: 1 s and 3 s
    a = t.loc[("d1", "A")]
    assert (a["round_seconds_median"], a["round_seconds_mean"]) == (2.0, 2.0)
    assert a["round_seconds_std"] == pytest.approx(math.sqrt(2))
    assert t.loc[("d1", "B"), "final_accuracy_z"] == 0.85 and math.isnan(a["final_accuracy_z"])
    assert list(t.loc["d1", "fedkit"]) == ["70.00 (2)", "80.00 (1)", "70.00 (1)", "30.00 (×) all expelled"]
    assert list(t.loc["d2", "fedkit"]) == ["80.00 (1)", "× (diverged)"]
    assert list(t.loc["d1", "paper"]) == ["1A", "1B", "1C", "1D"]


def test_pivot_and_relative_keep_the_tables_order(histories):
    t = table(histories)
    cells = report.pivot(t, "fedkit")
    assert (list(cells.index), list(cells.columns)) == (list("ABCD"), ["d2", "d1"])
    assert cells.loc["D", "d1"] == "30.00 (×) all expelled" and pd.isna(cells.loc["C", "d2"])
    relative = report.relative(t, "A")  # median seconds per round over A's: 2, 4, 6, 1 on d1; 1, 1 on d2
    assert list(relative["d1"]) == [1.0, 2.0, 3.0, 0.5]
    assert list(relative["d2"].iloc[:2]) == [1.0, 1.0]


def test_at_least_prints_the_verdict_and_the_last_evaluated_rounds(histories, capsys):
    verdicts = report.at_least(histories, "B", "A", k=2, label=str.upper)
    assert verdicts == {"d2": False, "d1": True}  # B diverged on d2; 80 % ≥ 70 % on d1
    printed = capsys.readouterr().out.splitlines()
    # B's last two evaluated rounds on d1 are 0.6 and 0.8 (round 2 was not evaluated); A's 0.5 and 0.7
    assert printed[1] == ("D1: B 80.00 % vs A 70.00 % → B ≥ A reproduced "
                          "(mean of the last 2 evaluated rounds: B 70.00 %, A 60.00 %)")
    assert printed[0].startswith("D2: B nan % vs A 80.00 % → B ≥ A NOT reproduced")


def test_gains_by_hand(histories):
    gains = report.gains(table(histories), "C", "A")
    assert list(gains.index) == ["d2", "d1"]  # C has no run on d2
    assert gains.loc["d1", "accuracy gain %"] == pytest.approx(0.0)  # 70 % vs 70 %
    assert gains.loc["d1", "time saving %"] == pytest.approx(-50.0)  # 6 s vs 4 s
    assert gains.loc["d2"].isna().all()


def test_pivot_relative_and_gains_give_one_column_per_seed(histories):
    """A target table with a seed column (one row per seed): each (data set, seed) a column, in the table's order,
    each seed over the baseline's at that seed."""
    seeded = pd.concat([table(histories).assign(seed=s, round_seconds_median=lambda t, s=s: t["round_seconds_median"]
                                                * (1 + s)) for s in (3, 1)], ignore_index=True)
    relative = report.relative(seeded, "A")
    assert list(relative.columns) == [("d2", 3), ("d1", 3), ("d2", 1), ("d1", 1)]
    assert list(relative[("d1", 1)]) == [1.0, 2.0, 3.0, 0.5]  # every method's time doubled: the ratios stay
    gains = report.gains(seeded, "C", "A")
    assert gains.loc[("d1", 3), "time saving %"] == pytest.approx(-50.0)
    assert list(gains.index) == [("d2", 3), ("d1", 3), ("d2", 1), ("d1", 1)]
