"""fedkit.book without building: where a committed result is shown, what it shows, and the README's concepts.
(tests/test_browser.py builds the whole book and opens every page.)"""
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fedkit.book import Result, _link_pages, committed_results, concepts, outputs_for, place

ROOT = Path(__file__).resolve().parents[1]


def notebooks():
    return {
        "fig1_toy": new_notebook(cells=[new_markdown_cell("# Toy"), new_code_cell("x = 1"),
                                        new_code_cell('save_figure(fig, data, "taco", "fig1_toy")')]),
        "table6_ablation": new_notebook(cells=[new_code_cell("rows = []"),
                                               new_code_cell('save_table(t, "taco", f"table6_ablation_{d}")'),
                                               new_code_cell("print(rows)")]),
        "fig5_time": new_notebook(cells=[new_code_cell('save_figure(fig, t, "taco", name)'), new_code_cell("1")]),
    }


@pytest.mark.parametrize("name, spot", [
    ("fig1_toy", ("fig1_toy", 2)),  # named in a string literal: that cell
    ("table6_ablation_mnist", ("table6_ablation", 1)),  # an f-string's prefix: its notebook's last saving cell
    ("fig5_time_per_round_dirichlet", ("fig5_time", 0)),  # the longest shared leading words
    ("table9_unrelated", None),  # nothing fits: the "Other results" page
])
def test_place(name, spot):
    assert place(Result("taco", name, "small"), notebooks()) == spot


def test_outputs_show_the_figure_or_else_the_table(tmp_path):
    png = outputs_for(Result("taco", "fig1_toy", "paper", png=tmp_path / "fig1_toy.png"), page_depth=1)[0]
    assert '<img src="../figures/taco/paper/fig1_toy.png"' in png["data"]["text/html"]
    assert "(paper scale)" in png["data"]["text/html"]
    csv = tmp_path / "t.csv"
    csv.write_text("method,acc\n" + "".join(f"m{i},{i / 100}\n" for i in range(20)))
    table = outputs_for(Result("taco", "t", "small", csv=csv), page_depth=1)[0]["data"]["text/html"]
    assert "<table" in table and "m14" in table and "m15" not in table and "20 rows in all" in table
    nbformat.validate(new_notebook(cells=[new_code_cell("1", outputs=[png])]))


def test_committed_results_pair_png_and_csv_by_name(tmp_path):
    (tmp_path / "taco" / "paper").mkdir(parents=True)
    for name in ("taco/a.png", "taco/a.csv", "taco/b.csv", "taco/paper/a.png"):
        (tmp_path / name).write_text("")
    found = [(r.name, r.scale, r.png is not None, r.csv is not None) for r in committed_results(tmp_path, "taco")]
    assert found == [("a", "small", True, True), ("b", "small", False, True), ("a", "paper", True, False)]


def test_concepts_is_the_readme_section_and_links_go_to_pages():
    text = concepts((ROOT / "README.md").read_text(encoding="utf-8"))
    assert text.startswith("# Concepts\n") and "`Config`" in text and "## " not in text
    assert _link_pages("see [the toy](../taco/fig1_toy.ipynb#top) and [x](a.ipynb)") == \
        "see [the toy](../taco/fig1_toy.html#top) and [x](a.html)"
