"""fedkit.book without mkdocs: where a committed result is shown, what it shows, the README's concepts, and which
folder a build may replace (with a stand-in for mkdocs). tests/test_browser.py builds the whole book and opens every
page."""
import json
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fedkit.book import MARKER, Result, _link_pages, build, committed_results, concepts, outputs_for, place
from fedkit.errors import FedkitError

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


@pytest.fixture
def checkout(tmp_path):
    """A checkout with one course notebook and nothing committed."""
    root = tmp_path / "repo"
    (root / "notebooks" / "teaching").mkdir(parents=True)
    nbformat.write(new_notebook(cells=[new_markdown_cell("# One")]), root / "notebooks" / "teaching" / "one.ipynb")
    (root / "figures").mkdir()
    (root / "README.md").write_text("## Concepts\nThe kit.\n## Next\n")
    (root / "REPRODUCTION.md").write_text("# Reproduction\n")
    return root


def mkdocs(monkeypatch, fails: bool = False):
    """``mkdocs build`` stood in for: it writes index.html into the configured site folder, or fails."""
    def run(command, **_):
        site = Path(json.loads(Path(command[-1]).read_text())["site_dir"])
        if not fails:
            (site / "index.html").write_text("<html></html>")
        return subprocess.CompletedProcess(command, int(fails), "", "mkdocs: it broke" if fails else "")
    monkeypatch.setattr("fedkit.book.subprocess.run", run)


def test_a_build_replaces_an_earlier_build_and_nothing_else(checkout, tmp_path, monkeypatch):
    mkdocs(monkeypatch)
    site = tmp_path / "site"
    assert build(site, checkout).pages == ["index.html"] and (site / MARKER).is_file()
    (site / "old_page.html").write_text("from the earlier build")
    build(site, checkout)
    assert sorted(p.name for p in site.iterdir()) == [MARKER, "index.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo", "site"]  # no build folder left beside it
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "fig1.png").write_text("a committed figure")
    with pytest.raises(FedkitError, match=r"'\S+/figures' holds files that no book build wrote"):
        build(figures, checkout)
    assert [p.name for p in figures.iterdir()] == ["fig1.png"]
    with pytest.raises(FedkitError, match=r"'\S+/fig1\.png' is a file, not a folder"):
        build(figures / "fig1.png", checkout)
    build(tmp_path / "empty", checkout)  # a new folder
    (tmp_path / "made").mkdir()
    build(tmp_path / "made", checkout)  # an empty one
    assert (tmp_path / "made" / "index.html").exists()


def test_a_failed_build_leaves_the_earlier_site_as_it_was(checkout, tmp_path, monkeypatch):
    mkdocs(monkeypatch)
    site = tmp_path / "site"
    build(site, checkout)
    mkdocs(monkeypatch, fails=True)
    with pytest.raises(FedkitError, match="mkdocs build failed"):
        build(site, checkout)
    assert sorted(p.name for p in site.iterdir()) == [MARKER, "index.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo", "site"]
