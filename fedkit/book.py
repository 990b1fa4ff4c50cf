"""The book: the course (notebooks/teaching/), every paper notebook, the README's concepts and REPRODUCTION.md as a
static site (mkdocs-material + mkdocs-jupyter), with each notebook's figures and tables from the committed results.

Nothing is trained or executed. The notebooks are committed without outputs, so ``build`` copies them into a build
folder and gives the code cell that writes a result (``save_figure``/``save_table``) that result as its output: the
committed figures/<paper>/<name>.png (and paper/<name>.png, at paper scale, when present), and the CSV as a table
where no figure shows it. A result no notebook names goes on its paper's "Other results" page.

    python -m fedkit.book            # or: fedkit book; writes site/ (open site/index.html)
"""
from __future__ import annotations

import argparse
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

from .errors import FedkitError

COURSE = "teaching"
TABLE_ROWS = 15  # a CSV shown as a table shows its first rows
MARKER = ".fedkit-book"  # written into every site the book builds: only a folder holding it is ever replaced


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
    """Notebook outputs showing ``result``: a caption, then its figure (an <img> of the copy under figures/), or
    the first rows of its CSV where there is no figure."""
    import pandas as pd

    up = "../" * page_depth
    where = f"figures/{result.paper}/{'paper/' if result.scale == 'paper' else ''}{result.name}"
    caption = (f'<p class="fedkit-result"><em>Committed result</em> <code>{where}.{"png" if result.png else "csv"}'
               f'</code> ({result.scale} scale)</p>')
    if result.png is not None:
        body = f'<img src="{up}{where}.png" alt="{html.escape(result.name)}" style="max-width:100%">'
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


def build(out: str | Path = "site", root: str | Path | None = None) -> Book:
    """Write the book to ``out`` (a static site) from the checkout at ``root`` (default: the one around the
    current folder); the notebooks, the Markdown and mkdocs.yml are assembled in <root>/_build/book first. The site
    is built beside ``out`` and then takes its place: ``out`` must be new, empty or an earlier build."""
    import nbformat

    started = time.perf_counter()
    if root is None:
        from .figures import repo_root
        root = repo_root()
        if root is None:
            raise FedkitError(f"no fedkit checkout (with notebooks/) above {Path.cwd()}; run from a clone")
    root = Path(root).resolve()
    out = Path(out) if Path(out).is_absolute() else Path.cwd() / out
    check_out(out)
    work = root / "_build" / "book"
    docs = work / "docs"
    shutil.rmtree(docs, ignore_errors=True)  # work/.cache (mkdocs-jupyter's, by content) is kept for the next build
    docs.mkdir(parents=True)
    figures = root / "figures"
    papers = sorted(p.name for p in (root / "notebooks").iterdir()  # not .ipynb_checkpoints/
                    if p.is_dir() and not p.name.startswith(".") and any(p.glob("*.ipynb")))
    nav: list = [{"Home": "index.md"}, {"Concepts": "concepts.md"}, {"Reproduction": "reproduction.md"}]
    book = Book(out, [])
    sections = []
    for paper in [COURSE] if COURSE in papers else []:
        sections.append(("Course", paper))
    sections += [(paper, paper) for paper in papers if paper != COURSE]
    for label, paper in sections:
        paths = sorted((root / "notebooks" / paper).glob("*.ipynb"))
        notebooks = {p.stem: nbformat.read(p, as_version=4) for p in paths}
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
            nbformat.write(nb, docs / paper / f"{stem}.ipynb")
            entries.append({_title(nb, stem): f"{paper}/{stem}.ipynb"})
        if other:
            lines = [f"# {paper}: other results\n", "Committed results that no notebook names.\n"]
            for result in other:
                lines += [o["data"]["text/html"] + "\n" for o in outputs_for(result, page_depth=1)]
                book.other.append(f"{paper}/{result.name}")
            (docs / paper / "other_results.md").write_text("\n".join(lines), encoding="utf-8")
            entries.append({"Other results": f"{paper}/other_results.md"})
        nav.append({label if label == "Course" else f"Paper: {label}": entries})
    # the figures the pages show, copied beside them (PNG only; the CSVs are shown as tables)
    for png in figures.rglob("*.png"):
        target = docs / "figures" / png.relative_to(figures)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(png, target)
    (docs / "concepts.md").write_text(concepts((root / "README.md").read_text(encoding="utf-8")), encoding="utf-8")
    shutil.copy2(root / "REPRODUCTION.md", docs / "reproduction.md")
    (docs / "index.md").write_text(_index(sections), encoding="utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    built = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))  # swapped in for out once complete
    umask = os.umask(0)
    os.umask(umask)
    built.chmod(0o777 & ~umask)  # a site's usual permissions, not mkdtemp's private 0700
    config = {"site_name": "fedkit", "docs_dir": str(docs), "site_dir": str(built), "use_directory_urls": False,
              "theme": {"name": "material", "font": False, "features": ["navigation.sections"]},
              "markdown_extensions": ["tables", "admonition"],
              "plugins": ["search", {"mkdocs-jupyter": {"execute": False, "include_source": True,
                                                        "include_requirejs": False, "ignore_h1_titles": False}}],
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


def _index(sections: list[tuple[str, str]]) -> str:
    lines = ["# fedkit: the book\n",
             "The course and every paper notebook of [fedkit](concepts.md), with the figures and tables of their "
             "committed small-scale runs (and paper-scale ones where committed) shown where each notebook makes "
             "them. Nothing here was re-run: the notebooks' code is shown as committed, with the committed "
             "results as its outputs. Run a notebook yourself with `fedkit figures NOTEBOOK --scale ci`.\n",
             "* [Concepts](concepts.md): the pieces of the kit", "* [Reproduction](reproduction.md): every paper "
             "claim and its verdict"]
    lines += [f"* {'Course' if label == 'Course' else 'Paper: ' + label}: the notebooks under "
              f"`notebooks/{paper}/`" for label, paper in sections]
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
