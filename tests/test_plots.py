"""The generic bar charts of fedkit.plots: what each panel draws, read back from the figure."""
import matplotlib.colors as mcolors
import pandas as pd

from fedkit import plots

NAN = float("nan")


def test_bars_one_panel_per_data_set_one_bar_per_method():
    table = pd.DataFrame({"data used": ["d2", "d2", "d1", "d1"], "method": ["A", "B", "A", "B"],
                          "value": [3.0, NAN, 1.0, 2.0], "label": ["(3)", "×", "(1)", "(2)"],
                          "target": [2.5, 2.5, 0.5, 0.5]})
    fig = plots.bars(table, "value", "y", "title", labels="label", line="target")
    first, second = fig.axes
    assert [first.get_title(), second.get_title()] == ["d2", "d1"]  # the table's order
    assert [p.get_height() for p in first.patches] == [3.0, 0.0]  # NaN drawn as 0
    assert [t.get_text() for t in first.texts] == ["(3)", "×"]
    assert [mcolors.to_hex(t.get_color()) for t in first.texts] == ["#000000", "#ff0000"]  # red where missing
    assert [t.get_text() for t in first.get_xticklabels()] == ["A", "B"]
    assert list(first.lines[0].get_ydata()) == [2.5, 2.5] and list(second.lines[0].get_ydata()) == [0.5, 0.5]
    assert first.get_ylabel() == "y"


def test_bars_draw_the_reference_as_diamonds_on_their_own_axis_or_the_bars_axis():
    table = pd.DataFrame({"data used": ["d", "d"], "method": ["A", "B"], "value": [3.0, 1.0], "paper": [70.0, NAN]})
    fig = plots.bars(table, "value", "y", "title", reference="paper", reference_label="paper %")
    bars_axis, own = fig.axes
    assert list(own.lines[0].get_ydata()[:1]) == [70.0] and own.get_ylim()[1] == 1.15 * 70.0
    assert own.get_ylabel() == "paper % (◆)" and not bars_axis.lines
    shared = plots.bars(table, "value", "y", "title", reference="paper", shared_axis=True)
    assert len(shared.axes) == 1 and list(shared.axes[0].lines[0].get_xdata()) == [0.3, 1.3]


def test_grouped_bars_one_group_per_row_one_bar_per_column():
    frame = pd.DataFrame({"on": [40.0, 30.0], "off": [45.0, NAN]})
    fig = plots.grouped_bars(frame, ["on", "off"], ["x\n1", "y\n2"], "accuracy %", "title")
    ax = fig.axes[0]
    bars = [(round(p.get_x() + p.get_width() / 2, 6), p.get_height()) for p in ax.patches]
    assert bars[:3] == [(-0.2, 40.0), (0.8, 30.0), (0.2, 45.0)]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["on", "off"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x\n1", "y\n2"]


def test_bars_vs_paper_draws_fedkit_as_bars_and_the_paper_on_its_own_axis():
    import matplotlib.pyplot as plt

    part = pd.DataFrame({"mean": [10.0, NAN], "std": [1.0, NAN], "reached": [2, 0], "seeds": [2, 2],
                         "paper_mean": [300.0, 500.0], "paper_std": [20.0, NAN]}, index=["A", "B"])
    fig, ax = plt.subplots()
    plots.bars_vs_paper(ax, part, ["C0", "C1"], "rounds", "paper CIFAR-10")
    paper = fig.axes[1]
    assert [p.get_height() for p in ax.patches] == [10.0, 0.0]  # a method that never reached it: no bar, and ×
    assert [t.get_text() for t in ax.texts] == ["2/2", "×"]
    assert list(paper.lines[0].get_ydata()) == [300.0, 500.0] and paper.get_ylim()[1] == 1.15 * 500.0
    assert [t.get_text() for t in ax.get_xticklabels()] == ["A", "B"] and paper.get_ylabel() == "paper CIFAR-10 (◆)"


# ---- the label distribution of a partition

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from fedkit import Config, ConfigError, Federation  # noqa: E402
from fedkit.data import make_partition  # noqa: E402
from fedkit.federation import config_partition  # noqa: E402

LABELS = np.array([0, 0, 1, 2, 2, 2, 1, 0])
PARTS = [np.array([0, 1, 2]), np.array([3, 4, 5, 6]), np.array([7])]
COUNTED = [[2, 1, 0, 0], [0, 1, 3, 0], [1, 0, 0, 0]]  # by hand: client 0 holds labels 0, 0, 1; client 1 2, 2, 2, 1; ...


def test_label_table_counts_a_hand_built_partition():
    table = plots.label_table(PARTS, LABELS, num_classes=4)
    assert table.to_numpy().tolist() == COUNTED
    assert (table.index.name, table.columns.name) == ("client", "class")
    assert plots.label_table(PARTS, LABELS).shape == (3, 3)  # classes default to max label + 1
    assert plots.label_table(table).equals(table)  # a table of counts passes through


def test_label_shares_sum_to_one_per_client_and_scale_back_to_counts():
    labels = np.random.default_rng(0).integers(0, 10, size=2000)
    parts = make_partition("dirichlet", labels, 12, seed=3, phi=0.1)
    shares = plots.label_table(parts, labels, unit="shares")
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    sizes = np.array([len(p) for p in parts])
    counts = np.array([np.bincount(labels[p], minlength=10) for p in parts])
    np.testing.assert_allclose(shares.to_numpy() * sizes[:, None], counts)
    empty = plots.label_table(np.array([[1, 3], [0, 0]]), unit="shares").to_numpy()
    assert empty[0].tolist() == [0.25, 0.75] and np.isnan(empty[1]).all()  # no samples: no shares


def test_a_federation_is_drawn_from_its_own_partition():
    cfg = Config(dataset="digits", model="mlp", num_clients=6, partition_args={"phi": 0.3}, seed=2)
    fed = Federation(cfg)
    assert all(np.array_equal(a, b) for a, b in zip(config_partition(cfg), fed.parts, strict=True))
    labels = fed.y_train.numpy()
    expected = [np.bincount(labels[p], minlength=10).tolist() for p in fed.parts]
    assert plots.label_table(fed).to_numpy().tolist() == expected


def test_heatmap_draws_the_table_and_writes_each_cell():
    fig, ax, table = plots.label_distribution(PARTS, LABELS, num_classes=4, kind="heatmap")
    assert table.to_numpy().tolist() == COUNTED
    assert np.asarray(ax.collections[0].get_array()).reshape(3, 4).tolist() == COUNTED
    assert [t.get_text() for t in ax.texts] == [str(v) for row in COUNTED for v in row]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("class", "client")
    _, ax, _ = plots.label_distribution(PARTS, LABELS, unit="shares", annotate=False)
    assert not ax.texts and ax.collections[0].get_clim() == (0, 1)


def test_stacked_bars_reach_each_clients_size_or_one():
    _, ax, _ = plots.label_distribution(PARTS, LABELS, kind="bars")
    tops = {}
    for bar in ax.patches:
        x = round(bar.get_x() + bar.get_width() / 2)
        tops[x] = max(tops.get(x, 0), bar.get_y() + bar.get_height())
    assert [tops[i] for i in range(3)] == [len(p) for p in PARTS]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["0", "1", "2"]
    _, ax, _ = plots.label_distribution(PARTS, LABELS, kind="bars", unit="shares", class_names=["a", "b", "c"])
    assert max(b.get_y() + b.get_height() for b in ax.patches) == pytest.approx(1.0)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b", "c"]


@pytest.mark.parametrize("call, message", [
    (lambda: plots.label_table(PARTS, LABELS, unit="percent"), r"unit must be one of .*got 'percent'"),
    (lambda: plots.label_distribution(PARTS, LABELS, kind="pie"), r"kind must be one of .*got 'pie'"),
    (lambda: plots.label_table(PARTS), r"needs the training labels"),
    (lambda: plots.label_table(np.array([[1, -2]])), r"numbers ≥ 0"),
    (lambda: plots.label_distribution(PARTS, LABELS, class_names=["a"]), r"name 3 classes, got 1"),
    (lambda: plots.label_table(PARTS, LABELS, num_classes=2), r"labels must lie in \[0, num_classes=2\)"),
])
def test_bad_partition_plot_arguments_are_refused(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


# ---- learning curves with seed bands

def _seeds_frame():
    rng = np.random.default_rng(1)
    rows = [{"method": m, "seed": s, "round": r, "test_accuracy": base + 0.01 * r + rng.normal(0, 0.05)}
            for m, base in (("A", 0.2), ("B", 0.5)) for s in range(4) for r in range(1, 6)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("band", ["sd", "range"])
def test_seed_bands_draw_the_mean_over_seeds_in_its_band(band):
    frame = _seeds_frame()
    fig, ax = plots.seed_bands(frame, band=band, title="t")
    stats = frame.groupby(["method", "round"])["test_accuracy"]
    mean = stats.mean()
    low, high = (mean - stats.std(), mean + stats.std()) if band == "sd" else (stats.min(), stats.max())
    for i, method in enumerate(("A", "B")):
        np.testing.assert_allclose(ax.lines[i].get_ydata(), mean[method].to_numpy())
        ys = ax.collections[i].get_paths()[0].vertices[:, 1]
        assert ys.min() == pytest.approx(low[method].min()) and ys.max() == pytest.approx(high[method].max())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["A", "B"]
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("t", "round", "test accuracy")


def test_seed_bands_refuse_an_unknown_band_or_column():
    with pytest.raises(ConfigError, match=r"band must be one of .*got 'iqr'"):
        plots.seed_bands(_seeds_frame(), band="iqr")
    with pytest.raises(ConfigError, match=r"no column\(s\) \['loss'\]"):
        plots.seed_bands(_seeds_frame(), y="loss")


def test_bars_over_seeds_draw_the_mean_each_seed_and_the_spread():
    table = pd.DataFrame({"data used": ["d"] * 5, "method": ["A", "A", "A", "B", "B"],
                          "value": [1.0, 2.0, 3.0, 4.0, NAN], "label": ["(1)", "(1)", "(1)", "", "×"],
                          "target": [1.0, 1.0, 1.0, 2.0, 2.0]})
    fig = plots.bars(table, "value", "y", "title", labels="label", line="target")
    ax = fig.axes[0]
    assert [p.get_height() for p in ax.patches] == [2.0, 4.0]  # the mean over the seeds, NaN left out
    dots = [list(line.get_ydata()) for line in ax.lines if line.get_marker() == "o"]
    assert dots == [[1.0, 2.0, 3.0], [4.0]]
    assert [t.get_text() for t in ax.texts] == ["(1)", "–\n×"]  # the same label once; differing ones stacked
    assert [mcolors.to_hex(t.get_color()) for t in ax.texts] == ["#000000", "#ff0000"]  # red: a seed missing
    assert ax.texts[0].get_position()[1] == 3.0  # above the mean + std (2 + 1) and the highest seed
    target = [line for line in ax.lines if line.get_linestyle() == ":"]
    assert list(target[0].get_ydata()) == [1.4, 1.4]  # the mean target over the panel's rows


def test_mean_and_range_draws_the_mean_over_runs_in_their_min_max_band():
    import matplotlib.pyplot as plt

    from fedkit.history import History

    def history(acc, diverged=False):
        return History({}, pd.DataFrame({"round": range(len(acc)), "test_accuracy": acc}), pd.DataFrame(),
                       diverged=diverged)

    _, ax = plt.subplots()
    plots.mean_and_range(ax, {"A": [history([0.1, 0.3]), history([0.3, 0.5])], "B": [history([0.2], True)]},
                         {"A": "C0", "B": "C1"})
    mean, cross = ax.lines[0], ax.lines[-1]
    assert list(mean.get_ydata()) == [20.0, 40.0] and mean.get_label() == "A (2)"
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == 10.0 and band.max() == 50.0  # the band spans the runs' minimum to maximum
    assert list(cross.get_xdata()) == [0] and cross.get_marker() == "x"  # the diverged run's last round
