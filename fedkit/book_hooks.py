"""The book's mkdocs hooks (``fedkit.book`` names this file in the mkdocs.yml it writes, so ``mkdocs build`` or
``gh-deploy`` on that file makes the same site): a notebook page links one stylesheet shared by all of them instead
of inlining nbconvert's CSS (about 590 kB a page), and loses nbconvert's MathJax 2 loader, which has no URL to load
(every page of the book loads MathJax 3 itself)."""
from __future__ import annotations

import re
from pathlib import Path

from mkdocs.utils import get_relative_url

SHARED_CSS = "assets/fedkit/notebook.css"
STYLE = re.compile(r"<style[^>]*>(.*?)</style>\s*", re.S)
MATHJAX2 = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->\s*", re.S)
_css: dict[str, None] = {}  # the notebook pages' distinct style blocks, in order of first appearance


def on_pre_build(config) -> None:
    _css.clear()


def on_page_content(html: str, page, config, files) -> str:
    if not page.file.src_uri.endswith(".ipynb"):
        return html
    for css in STYLE.findall(html):
        if not css.lstrip().startswith("['"):  # mkdocs-jupyter repeats the Pygments CSS as a Python list's repr
            _css.setdefault(css.strip())
    link = f'<link rel="stylesheet" href="{get_relative_url(SHARED_CSS, page.url)}">\n'
    return link + MATHJAX2.sub("", STYLE.sub("", html))


def on_post_build(config) -> None:
    target = Path(config["site_dir"]) / SHARED_CSS
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(_css) + "\n", encoding="utf-8")
