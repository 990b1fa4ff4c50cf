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
