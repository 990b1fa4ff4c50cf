"""fedkit.book without mkdocs: where a committed result is shown, what it shows, the README's concepts, the home page's
syllabus, the solutions page (every exercise of every lesson), REPRODUCTION.md's pages, what the build puts beside
the pages and which folder it may replace (with a stand-in for mkdocs), and the mkdocs hooks that share the
notebooks' CSS. tests/test_browser.py builds the whole book and opens every page."""
import importlib
import json
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fedkit import book_hooks
from fedkit.book import (
    MARKER,
    Result,
    _link_pages,
    build,
    committed_results,
    concepts,
    lesson_module,
    lesson_times,
    outputs_for,
    place,
    reproduction_pages,
    solutions,
    syllabus,
)
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
    assert ('<a href="../figures/taco/paper/fig1_toy.png" title="full size"><img src="../figures/taco/paper/'
            'fig1_toy.png"') in png["data"]["text/html"]  # the figure opens full size
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


def test_syllabus_reads_each_lessons_goal_and_the_lessons_it_names():
    course = {
        "01_partitions": new_notebook(cells=[new_markdown_cell("# Lesson 1 · Partitions\n\n**Learning goal.** Read a "
                                                               "partition\nof $N$ clients.\n\nMore (see lesson 2).")]),
        "02_drift": new_notebook(cells=[new_markdown_cell("# Lesson 2 · Drift\n\nSee drift | fix it."),
                                        new_markdown_cell("As in lesson 1; lesson 3 goes on.")]),
    }
    assert syllabus(course, {"01_partitions": "95 s"}).splitlines() == [
        "| lesson | learning goal | time | builds on |", "| --- | --- | --- | --- |",
        "| [Lesson 1 · Partitions](teaching/01_partitions.ipynb) | Read a partition of $N$ clients. | 95 s | — |",
        r"| [Lesson 2 · Drift](teaching/02_drift.ipynb) | See drift \| fix it. | not measured | "
        "[lesson 1](teaching/01_partitions.ipynb) |"]


def test_lesson_times_come_from_the_newest_committed_measurement(tmp_path):
    assert lesson_times(tmp_path) == ({}, "")
    for day, seconds in (("2026-01-01", 10.0), ("2026-02-01", 130.0)):
        folder = tmp_path / "benchmarks" / "results" / f"{day}-course_times"
        folder.mkdir(parents=True)
        (folder / "cpu.csv").write_text("lesson,status,seconds,cpu,threads,started,load_before\n"
                                        f"00_a,ok,{seconds},Xeon,1,{day}T00:00:00,0.50 0.4 0.3\n"
                                        "01_b,failed: cell In [3],12.0,Xeon,1,x,0.5\n")
    times, how = lesson_times(tmp_path)
    assert times == {"00_a": "2.2 min"}  # the newest file; a failed lesson has no time
    assert "2026-02-01" in how and "1 torch thread(s)" in how and "load average 0.50" in how
    assert "benchmarks/results/2026-02-01-course_times/cpu.csv" in how


def test_reproduction_is_its_summary_then_a_page_per_section():
    text = ("# Reproduction status\n\n| paper | verdict |\n| --- | --- |\n\nThe rule.\n\n"
            "## TACO (Liu et al.)\n\nClaims.\n\n### adult\n\nMore.\n\n## Peer parity: NIID-Bench (Li)\n\nParity.\n")
    hide = "---\nhide:\n  - toc\n---\n\n"
    assert reproduction_pages(text) == [
        ("Summary", "reproduction.md", hide + "# Reproduction status\n\n| paper | verdict |\n| --- | --- |\n\n"
         "The rule.\n\n## Per paper\n\n- [TACO (Liu et al.)](reproduction/taco.md)\n"
         "- [Peer parity: NIID-Bench (Li)](reproduction/peer-parity-niid-bench.md)\n"),
        ("TACO (Liu et al.)", "reproduction/taco.md", hide + "# TACO (Liu et al.)\n\nClaims.\n\n## adult\n\nMore.\n\n"),
        ("Peer parity: NIID-Bench (Li)", "reproduction/peer-parity-niid-bench.md",
         hide + "# Peer parity: NIID-Bench (Li)\n\nParity.\n")]
    summary = reproduction_pages((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8"))[0][2]
    assert "<!-- ledger:summary" in summary.split("\n## ")[0]  # the generated summary opens the first page


def test_hooks_link_one_shared_stylesheet_and_drop_mathjax2(tmp_path):
    def page(src_uri, url):
        return SimpleNamespace(file=SimpleNamespace(src_uri=src_uri), url=url)
    content = ('<script>clipboard()</script>\n<style type="text/css">\n.highlight-ipynb .k { color: red }\n</style>\n'
               '<style type="text/css">\n.jupyter-wrapper { --jp-x: 1 }\n</style>\n<!-- Load mathjax -->\n'
               '<script src=""> </script>\n<script type="text/x-mathjax-config">init_mathjax()</script>\n'
               '<!-- End of mathjax configuration -->\n<div class="jp-Notebook">cells</div>\n'
               '<style>\n        [\'pre { line-height: 125%; }\\n\']\n        </style>\n')
    book_hooks.on_pre_build({})
    lesson = book_hooks.on_page_content(content, page("teaching/01_a.ipynb", "teaching/01_a.html"), {}, None)
    assert lesson == ('<link rel="stylesheet" href="../assets/fedkit/notebook.css">\n<script>clipboard()</script>\n'
                      '<div class="jp-Notebook">cells</div>\n')
    assert book_hooks.on_page_content(content, page("b.ipynb", "b.html"), {}, None).startswith(
        '<link rel="stylesheet" href="assets/fedkit/notebook.css">')
    assert book_hooks.on_page_content(content, page("concepts.md", "concepts.html"), {}, None) == content
    book_hooks.on_post_build({"site_dir": str(tmp_path)})
    assert (tmp_path / "assets" / "fedkit" / "notebook.css").read_text() == \
        ".highlight-ipynb .k { color: red }\n.jupyter-wrapper { --jp-x: 1 }\n"  # each block once, in page order


@pytest.fixture
def checkout(tmp_path):
    """A checkout with one course notebook and nothing committed."""
    root = tmp_path / "repo"
    (root / "notebooks" / "teaching").mkdir(parents=True)
    nbformat.write(new_notebook(cells=[new_markdown_cell("# One")]), root / "notebooks" / "teaching" / "one.ipynb")
    (root / "figures").mkdir()
    (root / "README.md").write_text("## Concepts\nThe kit.\n## Next\n")
    times = root / "benchmarks" / "results" / "2026-01-01-course_times"
    times.mkdir(parents=True)
    (times / "cpu.csv").write_text("lesson,status,seconds,cpu,threads,started,load_before\n"
                                   "one,ok,61.0,Xeon,1,2026-01-01T00:00:00,0.1 0.1 0.1\n")
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


def test_a_build_gives_mkdocs_the_notebooks_links_math_and_navigation(checkout, tmp_path, monkeypatch):
    mkdocs(monkeypatch)
    monkeypatch.setenv("FEDKIT_BOOK_REPO", "someone/fork")
    build(tmp_path / "site", checkout, branch="dev")
    work = checkout / "_build" / "book"
    config = json.loads((work / "mkdocs.yml").read_text())
    docs = Path(config["docs_dir"])
    original = checkout / "notebooks" / "teaching" / "one.ipynb"
    assert (docs / "notebooks" / "teaching" / "one.ipynb").read_bytes() == original.read_bytes()  # the download
    links = nbformat.read(docs / "teaching" / "one.ipynb", as_version=4).cells[0].source
    assert 'class="fedkit-download" href="../notebooks/teaching/one.ipynb" download' in links
    assert ('class="fedkit-launch" href="https://mybinder.org/v2/gh/someone/fork/dev?labpath='
            'notebooks%2Fteaching%2Fone.ipynb"') in links
    assert "navigation.footer" in config["theme"]["features"]
    assert {"pymdownx.arithmatex": {"generic": True}} in config["markdown_extensions"]
    assert all((docs / path).is_file() for path in config["extra_javascript"] + config["extra_css"])
    assert (docs / "assets/mathjax/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff").is_file()  # no CDN
    assert [Path(hook).name for hook in config["hooks"]] == ["book_hooks.py"] and Path(config["hooks"][0]).is_file()
    assert [list(entry)[0] for entry in config["nav"]] == ["Home", "Course", "Concepts", "Reproduction", "Solutions"]
    index = (docs / "index.md").read_text()
    assert "| [One](teaching/one.ipynb) |  | 61 s | — |" in index and "(solutions.md)" in index
    assert "`benchmarks/results/2026-01-01-course_times/cpu.csv`" in index  # how the times were measured
    assert (docs / "solutions.md").read_text().startswith("# Solutions\n")  # "one" imports no checkers: no exercise


def test_a_failed_build_leaves_the_earlier_site_as_it_was(checkout, tmp_path, monkeypatch):
    mkdocs(monkeypatch)
    site = tmp_path / "site"
    build(site, checkout)
    mkdocs(monkeypatch, fails=True)
    with pytest.raises(FedkitError, match="mkdocs build failed"):
        build(site, checkout)
    assert sorted(p.name for p in site.iterdir()) == [MARKER, "index.html"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo", "site"]


def test_the_solutions_page_holds_every_exercise_of_every_lesson():
    course = {p.stem: nbformat.read(p, as_version=4) for p in sorted((ROOT / "notebooks" / "teaching").glob("*.ipynb"))}
    page = solutions(course, ROOT)
    sections = {m[1]: m[2] for m in re.finditer(r"^## \[[^]]+\]\(teaching/(\w+)\.ipynb\)\n(.*?)(?=^## |\Z)", page,
                                               flags=re.S | re.M)}
    assert list(sections) == list(course)  # every lesson, in order
    for stem, nb in course.items():
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        cells = sorted(int(n or 1) for n in re.findall(r"\bcheck_exercise(?:_(\d+))?\(answer\b", code))
        module = importlib.import_module(f"fedkit.course.{lesson_module(nb, ROOT).stem}")
        checkers = sorted(int(name[15:] or 1) for name in dir(module) if re.fullmatch(r"check_exercise(_\d+)?", name))
        stated = [int(n) for n in re.findall(r"^\*\*Exercise (\d+)\*\* \(.+?\): \S.*\n\n\*Solution\.\* \S",
                                              sections[stem], flags=re.M)]
        assert cells == checkers == stated == [1, 2], (stem, cells, checkers, stated)
