"""The book: the course (notebooks/teaching/), every paper notebook, the README's concepts and REPRODUCTION.md as a
static site (mkdocs-material + mkdocs-jupyter), with each notebook's figures and tables from the committed results.

Nothing is trained or executed. The notebooks are committed without outputs, so ``build`` copies them into a build
folder and gives the code cell that writes a result (``save_figure``/``save_table``) that result as its output: the
committed figures/<paper>/<name>.png (and paper/<name>.png, at paper scale, when present), and the CSV as a table
where no figure shows it. A result no notebook names goes on its paper's "Other results" page. Every page has
previous/next links; a notebook page links its committed .ipynb (copied into the site) and a Binder launch; the home
page holds the course's syllabus; the last page, for instructors, the solution of every exercise of the course, read
from the docstrings of its checkers (fedkit/course/); math is typeset by a MathJax copied into the site (no CDN);
REPRODUCTION.md is split into its summary and one page per paper.

    python -m fedkit.book            # or: fedkit book; writes site/ (open site/index.html)
"""
from __future__ import annotations

import argparse
import ast
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from .errors import FedkitError

COURSE = "teaching"
TABLE_ROWS = 15  # a CSV shown as a table shows its first rows
MARKER = ".fedkit-book"  # written into every site the book builds: only a folder holding it is ever replaced
# the GitHub repository and branch whose notebooks the Binder links launch: $FEDKIT_BOOK_REPO, $FEDKIT_BOOK_BRANCH
REPO, BRANCH = "fedkit/fedkit", "main"
DOWNLOADS = "notebooks"  # the committed notebooks, copied into the site as notebooks/<folder>/<name>.ipynb
ASSETS = "assets/fedkit"
HIDE_TOC = "---\nhide:\n  - toc\n---\n\n"  # page front matter: the table of contents' width goes to the tables
# MathJax 3 typesets $...$ and $$...$$ in notebooks' Markdown cells and pymdownx.arithmatex's output, nothing else
MATHJAX_CONFIG = r"""window.MathJax = {
  tex: {inlineMath: [["$", "$"], ["\\(", "\\)"]], displayMath: [["$$", "$$"], ["\\[", "\\]"]],
        processEscapes: true, tags: "ams"},
  startup: {elements: [".jp-MarkdownOutput", ".arithmatex"]}
};
"""
# Markdown tables (a paper's 7-column reproduction table) wrap to the page's width, their header row kept in view
BOOK_CSS = """.md-typeset__scrollwrap, .md-typeset__table, .md-typeset__table table:not([class]) { overflow: visible; }
.md-typeset table:not([class]) :is(th, td) { overflow-wrap: break-word; padding: .75em .9em; }
.md-typeset table:not([class]) th {
  min-width: 0; position: sticky; top: 2.4rem; z-index: 1; background-color: var(--md-default-bg-color);
  box-shadow: 0 .05rem 0 var(--md-typeset-table-color);
}
.fedkit-links { font-size: .7rem; }
"""


@dataclass
class Result:
    """One committed result: a figure (png) and/or its numbers (csv), at small or paper scale."""
    paper: str
    name: str
    scale: str  # "small" or "paper"
    png: Path | None = None
    csv: Path | None = None


@dataclass
class Book:
    site: Path
    pages: list[str]  # the pages' paths in the site (.html)
    placed: dict[str, int] = field(default_factory=dict)  # results placed per notebook (paper/name)
    other: list[str] = field(default_factory=list)  # results no notebook names
    seconds: float = 0.0


def committed_results(figures: Path, paper: str) -> list[Result]:
    """figures/<paper>/ (small scale) and figures/<paper>/paper/ (paper scale), one Result per file stem."""
    found = []
    for scale, folder in (("small", figures / paper), ("paper", figures / paper / "paper")):
        stems = sorted({p.stem for p in folder.glob("*.png")} | {p.stem for p in folder.glob("*.csv")})
        for stem in stems:
            png, csv = folder / f"{stem}.png", folder / f"{stem}.csv"
            found.append(Result(paper, stem, scale, png if png.exists() else None, csv if csv.exists() else None))
    return found


def _code(cell) -> str:
    return cell.source if cell.cell_type == "code" else ""


def place(result: Result, notebooks: dict[str, object]) -> tuple[str, int] | None:
    """(notebook stem, code cell index) where ``result`` is shown: the cell naming it in a string literal; else the
    last cell saving results of the notebook that names its prefix (an f-string such as f"table{n}_ablation") or,
    failing that, shares the longest leading words of its name; None when no notebook fits."""
    quoted = re.compile(r"""["']""" + re.escape(result.name) + r"""["']""")
    for stem, nb in notebooks.items():
        for i, cell in enumerate(nb.cells):
            if quoted.search(_code(cell)):
                return stem, i
    best, best_score = None, 0
    for stem, nb in notebooks.items():
        source = "\n".join(_code(c) for c in nb.cells)
        prefixes = re.findall(r"""f["']([A-Za-z0-9_]{4,})\{""", source)
        score = 100 if any(result.name.startswith(p) for p in prefixes) else _shared_words(stem, result.name)
        if score > best_score:
            best, best_score = stem, score
    if best is None:
        return None
    saving = [i for i, c in enumerate(notebooks[best].cells) if re.search(r"save_(figure|table)\(", _code(c))]
    return best, saving[-1] if saving else len(notebooks[best].cells) - 1


def _shared_words(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("_"), b.split("_")):
        if x != y:
            break
        n += 1
    return n


def outputs_for(result: Result, page_depth: int) -> list[dict]:
    """Notebook outputs showing ``result``: a caption, then its figure (an <img> of the copy under figures/, a link
    to it full size), or the first rows of its CSV where there is no figure."""
    import pandas as pd

    up = "../" * page_depth
    where = f"figures/{result.paper}/{'paper/' if result.scale == 'paper' else ''}{result.name}"
    caption = (f'<p class="fedkit-result"><em>Committed result</em> <code>{where}.{"png" if result.png else "csv"}'
               f'</code> ({result.scale} scale)</p>')
    if result.png is not None:
        body = (f'<a href="{up}{where}.png" title="full size"><img src="{up}{where}.png" '
                f'alt="{html.escape(result.name)}" style="max-width:100%"></a>')
    else:
        table = pd.read_csv(result.csv)
        more = f"<p>… {len(table)} rows in all</p>" if len(table) > TABLE_ROWS else ""
        body = table.head(TABLE_ROWS).to_html(index=False, float_format=lambda v: f"{v:.4g}", border=0) + more
    from nbformat import NotebookNode

    return [NotebookNode({"output_type": "display_data", "metadata": NotebookNode(),
                          "data": NotebookNode({"text/html": caption + body, "text/plain": where})})]


def _link_pages(source: str) -> str:
    """Links between notebooks point at their pages (.ipynb -> .html)."""
    return re.sub(r"\]\(([^)\s]+?)\.ipynb(#[^)]*)?\)", lambda m: f"]({m[1]}.html{m[2] or ''})", source)


def concepts(readme: str) -> str:
    """The README's "## Concepts" section, up to the next section."""
    match = re.search(r"^## Concepts\n(.*?)(?=^## )", readme, flags=re.S | re.M)
    if match is None:
        raise FedkitError("README.md has no '## Concepts' section for the book")
    return "# Concepts\n" + match[1]


def _title(nb, stem: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, flags=re.M)
            if m:
                return m[1].strip()
    return stem.replace("_", " ")


COURSE_TIMES = "benchmarks/results/*-course_times/cpu.csv"  # benchmarks/course_times.py's measurements


def lesson_times(root: Path) -> tuple[dict[str, str], str]:
    """Each lesson's wall time at its default scale from the newest committed ``COURSE_TIMES`` file (a lesson that
    failed there has none), and a sentence saying how it was measured; ({}, "") where none is committed."""
    import pandas as pd

    files = sorted(root.glob(COURSE_TIMES))
    if not files:
        return {}, ""
    frame = pd.read_csv(files[-1])
    times = {r.lesson: (f"{r.seconds:.0f} s" if r.seconds < 90 else f"{r.seconds / 60:.1f} min")
             for r in frame.itertuples() if r.status == "ok"}
    first = frame.iloc[0]
    how = (f"Times: each lesson run once as a student first runs it (nothing cached), measured by "
           f"`benchmarks/course_times.py` on {first['cpu']} with {first['threads']} torch thread(s), "
           f"{str(first['started'])[:10]}, load average {str(first['load_before']).split()[0]} as it began "
           f"(`{files[-1].relative_to(root)}`).")
    return times, how


def syllabus(course: dict[str, object], times: dict[str, str]) -> str:
    """The course as a Markdown table: each lesson (a link to its page), its goal (the first paragraph after its
    title, less a leading "**Learning goal.**"), its time in ``times`` ("not measured" where it has none), and the
    earlier lessons its text names ("lesson 2")."""
    number = {stem: int(stem.split("_")[0]) for stem in course if stem.split("_")[0].isdigit()}  # NN_<lesson>
    stems = {n: stem for stem, n in number.items()}
    rows = ["| lesson | learning goal | time | builds on |", "| --- | --- | --- | --- |"]
    for stem, nb in course.items():
        text = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip() and not p.lstrip().startswith("#")]
        goal = re.sub(r"^\*\*Learning goal\.\*\*\s*", "", paragraphs[0].strip()) if paragraphs else ""
        earlier = sorted({int(n) for n in re.findall(r"\blesson (\d+)", text, flags=re.I)
                          if int(n) < number.get(stem, 0) and int(n) in stems})
        builds_on = ", ".join(f"[lesson {n}]({COURSE}/{stems[n]}.ipynb)" for n in earlier) or "—"
        cells = [f"[{_title(nb, stem)}]({COURSE}/{stem}.ipynb)", goal, times.get(stem, "not measured"), builds_on]
        rows.append("| " + " | ".join(" ".join(c.split()).replace("|", r"\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def lesson_module(nb, root: Path) -> Path | None:
    """The checkers' module a course notebook imports (``fedkit.course.<name>``, under ``root``), or None."""
    source = "\n".join(_code(c) for c in nb.cells)
    names = re.findall(r"fedkit\.course\.(\w+)", source)
    names += [n.strip() for group in re.findall(r"from fedkit\.course import ([\w, ]+)", source)
              for n in group.split(",")]
    paths = [root / "fedkit" / "course" / f"{name}.py" for name in names]
    return next((path for path in paths if path.is_file()), None)


def exercises(module: Path) -> list[tuple[str, str, str, str]]:
    """(number, kind, task, solution) of every exercise that a lesson module's docstring states: a paragraph
    "Exercise N (kind): task" whose last line starts "Solution: ..." (lines joined)."""
    doc = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8"))) or ""
    found = re.findall(r"^Exercise (\d+) \(([^)]*)\): (.*?)\nSolution: (.*?)(?=\n\s*\n|\Z)", doc, flags=re.S | re.M)
    return [(n, kind, " ".join(task.split()), " ".join(solution.split())) for n, kind, task, solution in found]


def _plain(text: str) -> str:
    """Docstring text as Markdown: its ``code`` spans kept, every other * escaped (w* is not emphasis)."""
    parts = re.split(r"(``.+?``)", text)
    return "".join(part if part.startswith("``") else part.replace("*", r"\*") for part in parts)


def _sentence(text: str) -> str:
    """``text`` with a first letter in upper case where it is a Latin one (φ stays φ: Φ is another symbol)."""
    return text[:1].upper() + text[1:] if text[:1].isascii() else text


def solutions(course: dict[str, object], root: Path) -> str:
    """The instructors' page: each lesson's exercises (a link to the lesson), each with its task and solution, as the
    docstring of the lesson's checkers states them."""
    lines = ["# Solutions\n", "For instructors: the solution of every exercise of the course, with what it teaches. "
             "Each lesson's checkers (`fedkit/course/<lesson>.py`) state them in their docstring, and this page is "
             "built from there. Students: try the exercise first; its checker says which way to go.\n"]
    for stem, nb in course.items():
        module = lesson_module(nb, root)
        found = exercises(module) if module else []
        if found:
            lines.append(f"## [{_title(nb, stem)}]({COURSE}/{stem}.ipynb)\n")
            for n, kind, task, solution in found:
                lines += [f"**Exercise {n}** ({kind}): {_plain(task)}\n",
                          f"*Solution.* {_plain(_sentence(solution))}\n"]
    return "\n".join(lines)


def reproduction_pages(text: str) -> list[tuple[str, str, str]]:
    """REPRODUCTION.md as (title, path, Markdown) pages: its summary (all above the first "## " heading, with links
    to the rest) first, then one page per "## " section, its headings one level up; none has a table of contents,
    whose width goes to the tables."""
    head, *sections = re.split(r"^(?=## )", text, flags=re.M)
    pages = []
    for section in sections:
        title = section.splitlines()[0][3:].strip()
        slug = re.sub(r"[^a-z0-9]+", "-", title.split("(")[0].lower()).strip("-")
        pages.append((title, f"reproduction/{slug}.md", HIDE_TOC + re.sub(r"^#(#+) ", r"\1 ", section, flags=re.M)))
    summary = head.rstrip() + "\n" + ("\n## Per paper\n\n" if pages else "")
    summary += "".join(f"- [{title}]({path})\n" for title, path, _ in pages)
    return [("Summary", "reproduction.md", HIDE_TOC + summary)] + pages


def binder_url(repo: str, branch: str, path: str) -> str:
    return f"https://mybinder.org/v2/gh/{repo}/{branch}?labpath={quote(path, safe='')}"


def links_cell(paper: str, stem: str, repo: str, branch: str):
    """The Markdown cell a notebook's page opens with: the committed notebook to download, and to run on Binder."""
    from nbformat.v4 import new_markdown_cell

    path = f"notebooks/{paper}/{stem}.ipynb"
    return new_markdown_cell(f'<p class="fedkit-links"><a class="fedkit-download" href="../{DOWNLOADS}/{paper}/'
                             f'{stem}.ipynb" download>Download the notebook</a> · <a class="fedkit-launch" '
                             f'href="{binder_url(repo, branch, path)}">Launch it on Binder</a></p>')


def copy_mathjax(target: Path) -> None:
    """MathJax 3 from the django-static-mathjax package (in the book's extra) into ``target``: the TeX-to-HTML
    component, the TeX extensions it loads on demand, its fonts, and MathJax's licence."""
    import importlib.util

    spec = importlib.util.find_spec("mathjax")
    mathjax = Path(spec.origin).parent / "static" / "mathjax" if spec and spec.origin else None
    if mathjax is None or not (mathjax / "es5" / "tex-chtml.js").is_file():
        raise FedkitError("no MathJax for the book's math (the django-static-mathjax package): pip install -e "
                          "\".[book]\"")
    target.mkdir(parents=True)
    shutil.copy2(mathjax / "LICENSE", target / "LICENSE")
    shutil.copy2(mathjax / "es5" / "tex-chtml.js", target / "tex-chtml.js")
    for folder in ("input/tex/extensions", "output/chtml/fonts/woff-v2"):
        shutil.copytree(mathjax / "es5" / folder, target / folder)


def build(out: str | Path = "site", root: str | Path | None = None, repo: str | None = None,
          branch: str | None = None) -> Book:
    """Write the book to ``out`` (a static site) from the checkout at ``root`` (default: the one around the
    current folder), its notebooks launched on Binder from GitHub's ``repo`` at ``branch`` (default:
    $FEDKIT_BOOK_REPO or REPO, $FEDKIT_BOOK_BRANCH or BRANCH); the notebooks, the Markdown and mkdocs.yml are
    assembled in <root>/_build/book first. The site is built beside ``out`` and then takes its place: ``out`` must be
    new, empty or an earlier build."""
    import nbformat

    started = time.perf_counter()
    repo = repo or os.environ.get("FEDKIT_BOOK_REPO") or REPO
    branch = branch or os.environ.get("FEDKIT_BOOK_BRANCH") or BRANCH
    if root is None:
        from .checkout import repo_root
        root = repo_root()
        if root is None:
            raise FedkitError(f"no fedkit checkout (with notebooks/) above {Path.cwd()}; run from a clone")
    root = Path(root).resolve()
    out = Path(out) if Path(out).is_absolute() else Path.cwd() / out
    check_out(out)
    readme = (root / "README.md").read_text(encoding="utf-8")
    work = root / "_build" / "book"
    docs = work / "docs"
    shutil.rmtree(docs, ignore_errors=True)  # work/.cache (mkdocs-jupyter's, by content) is kept for the next build
    docs.mkdir(parents=True)
    figures = root / "figures"
    papers = sorted(p.name for p in (root / "notebooks").iterdir()  # not .ipynb_checkpoints/
                    if p.is_dir() and not p.name.startswith(".") and any(p.glob("*.ipynb")))
    reproduction = reproduction_pages((root / "REPRODUCTION.md").read_text(encoding="utf-8"))
    nav: list = [{"Home": "index.md"}]
    book = Book(out, [])
    sections = []
    for paper in [COURSE] if COURSE in papers else []:
        sections.append(("Course", paper))
    sections += [(paper, paper) for paper in papers if paper != COURSE]
    lessons, answers, contents = "", "", []
    for label, paper in sections:
        paths = sorted((root / "notebooks" / paper).glob("*.ipynb"))
        notebooks = {p.stem: nbformat.read(p, as_version=4) for p in paths}
        if paper == COURSE:
            times, measured = lesson_times(root)
            lessons, answers = syllabus(notebooks, times) + (f"\n{measured}\n" if measured else ""), \
                solutions(notebooks, root)
        (docs / DOWNLOADS / paper).mkdir(parents=True)
        for path in paths:
            shutil.copy2(path, docs / DOWNLOADS / paper / path.name)
        for nb in notebooks.values():
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = [], None
                elif cell.cell_type == "markdown":
                    cell.source = _link_pages(cell.source)
        other = []
        for result in committed_results(figures, paper):
            spot = place(result, notebooks)
            if spot is None:
                other.append(result)
                continue
            stem, i = spot
            notebooks[stem].cells[i].outputs += outputs_for(result, page_depth=1)
            book.placed[f"{paper}/{stem}"] = book.placed.get(f"{paper}/{stem}", 0) + 1
        (docs / paper).mkdir()
        entries = []
        for stem, nb in notebooks.items():
            nb.cells.insert(0, links_cell(paper, stem, repo, branch))
            nbformat.write(nb, docs / paper / f"{stem}.ipynb")
            entries.append({_title(nb, stem): f"{paper}/{stem}.ipynb"})
        if other:
            lines = [f"# {paper}: other results\n", "Committed results that no notebook names.\n"]
            for result in other:
                lines += [o["data"]["text/html"] + "\n" for o in outputs_for(result, page_depth=1)]
                book.other.append(f"{paper}/{result.name}")
            (docs / paper / "other_results.md").write_text("\n".join(lines), encoding="utf-8")
            entries.append({"Other results": f"{paper}/other_results.md"})
        contents.append((label, paper, entries))
    nav += [{"Course": entries} for label, _, entries in contents if label == "Course"]
    nav += [{"Concepts": "concepts.md"}, {"Reproduction": [{title: path} for title, path, _ in reproduction]}]
    nav += [{f"Paper: {label}": entries} for label, _, entries in contents if label != "Course"]
    if lessons:
        nav.append({"Solutions": "solutions.md"})
        (docs / "solutions.md").write_text(answers, encoding="utf-8")
    # the figures the pages show, copied beside them (PNG only; the CSVs are shown as tables)
    for png in figures.rglob("*.png"):
        target = docs / "figures" / png.relative_to(figures)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(png, target)
    (docs / "concepts.md").write_text(concepts(readme), encoding="utf-8")
    (docs / "reproduction").mkdir()
    for _, path, text in reproduction:
        (docs / path).write_text(text, encoding="utf-8")
    (docs / "index.md").write_text(_index(contents, lessons), encoding="utf-8")
    copy_mathjax(docs / "assets" / "mathjax")
    (docs / ASSETS).mkdir(parents=True)
    (docs / ASSETS / "mathjax-config.js").write_text(MATHJAX_CONFIG, encoding="utf-8")
    (docs / ASSETS / "book.css").write_text(BOOK_CSS, encoding="utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))  # swapped in for out once complete
    umask = os.umask(0)
    os.umask(umask)
    built.chmod(0o777 & ~umask)  # a site's usual permissions, not mkdtemp's private 0700
    config = {"site_name": "fedkit", "docs_dir": str(docs), "site_dir": str(built), "use_directory_urls": False,
              "theme": {"name": "material", "font": False, "features": ["navigation.sections", "navigation.footer"]},
              "markdown_extensions": ["tables", "admonition", {"pymdownx.arithmatex": {"generic": True}}],
              "extra_css": [f"{ASSETS}/book.css"],
              "extra_javascript": [f"{ASSETS}/mathjax-config.js", "assets/mathjax/tex-chtml.js"],
              "hooks": [str(Path(__file__).with_name("book_hooks.py"))],
              "plugins": ["search", {"mkdocs-jupyter": {"execute": False, "include_requirejs": False,
                                                        "ignore": [f"{DOWNLOADS}/*/*.ipynb"],  # copied as they are
                                                        "ignore_h1_titles": False}}],
              "nav": nav}
    (work / "mkdocs.yml").write_text(json.dumps(config, indent=1), encoding="utf-8")  # JSON is YAML
    try:
        done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "-f", str(work / "mkdocs.yml")],
                              capture_output=True, text=True,
                              cwd=work)  # mkdocs-jupyter's .cache/ goes under the git-ignored _build/
        if done.returncode != 0:
            raise FedkitError(f"mkdocs build failed (is the book's extra installed? pip install -e \".[book]\"):\n"
                              f"{done.stderr.strip()[-3000:]}")
        (built / MARKER).write_text("a site built by `fedkit book`, which replaces this folder when it builds again\n",
                                    encoding="utf-8")
        _replace(out, built)
    finally:
        shutil.rmtree(built, ignore_errors=True)  # left only where the build failed
    book.pages = sorted(str(p.relative_to(out)) for p in out.rglob("*.html") if p.parts[len(out.parts)] != "assets")
    book.seconds = time.perf_counter() - started
    return book


def check_out(out: Path) -> None:
    """Refuse an ``out`` that is a file, or a folder holding files that no book build wrote (no ``MARKER``)."""
    if out.exists() and not out.is_dir():
        raise FedkitError(f"{str(out)!r} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise FedkitError(f"{str(out)!r} holds files that no book build wrote (it has no {MARKER}): "
                          f"name a new or empty folder, or an earlier book's")


def _replace(out: Path, built: Path) -> None:
    """Move the complete site ``built`` to ``out``, an empty folder or an earlier build, which is removed."""
    if not out.exists():
        built.rename(out)
        return
    check_out(out)  # again: the folder may have gained files during the build
    old = built.with_name(built.name + ".old")
    out.rename(old)
    built.rename(out)
    shutil.rmtree(old)


def _index(contents: list[tuple[str, str, list[dict]]], lessons: str) -> str:
    """The home page: what the book is, the course's syllabus, each paper's notebooks, and the reference pages."""
    lines = ["# fedkit: the book\n",
             "The course and every paper notebook of fedkit, with the figures and tables of their committed "
             "small-scale runs (and paper-scale ones where committed) shown where each notebook makes them. Nothing "
             "here was re-run: the notebooks' code is shown as committed, with the committed results as its outputs. "
             "Each notebook's page links the notebook, to download or to run on Binder; run one yourself with "
             "`fedkit figures NOTEBOOK --scale ci`.\n"]
    if lessons:
        lines += ["## Course\n", f"`notebooks/{COURSE}/`, one lesson each, in order.\n", lessons,
                  "Instructors: the [solutions](solutions.md) of every exercise, on the book's last page.\n"]
    lines.append("## Papers\n")
    for label, paper, entries in contents:
        if label != "Course":
            lines.append(f"- **{label}** (`notebooks/{paper}/`)")
            lines += [f"    - [{title}]({path})" for entry in entries for title, path in entry.items()]
    lines += ["\n## Reference\n", "- [Concepts](concepts.md): the pieces of the kit",
              "- [Reproduction](reproduction.md): every paper claim and its verdict, summary first"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fedkit book", description="Build the book (a static site) from the "
                                     "notebooks and the committed results; nothing is re-run.")
    parser.add_argument("--out", default="site", help="the site's folder (default: site)")
    args = parser.parse_args(argv)
    try:
        book = build(args.out)
    except FedkitError as err:
        print(f"fedkit book: {err}", file=sys.stderr)
        return 1
    print(f"fedkit book: {len(book.pages)} pages in {book.site} ({book.seconds:.1f} s); open "
          f"{book.site / 'index.html'}" + (f"; {len(book.other)} results no notebook names are on the "
                                           f"'Other results' pages" if book.other else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
