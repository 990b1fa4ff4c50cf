"""Where things are: the fedkit checkout around the current directory, and the figures folder inside it.

The kit (the run archive) and the reproduction pipeline (figures, ledger, book) both ask; keeping the answer here
lets the kit know where the archive lives without importing the pipeline (DESIGN §9, layout).
"""
from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path | None:
    """The fedkit checkout containing the current directory, if any."""
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "pyproject.toml").exists() and (folder / "notebooks").is_dir():
            return folder
    return None


def in_checkout(path: Path) -> Path:
    """``path`` relative to the checkout when it lies inside one, else as given: what a committed file records
    names no machine's folders."""
    root = repo_root()
    absolute = path.absolute()
    return absolute.relative_to(root) if root is not None and absolute.is_relative_to(root) else path


def figures_root() -> Path:
    """$FEDKIT_FIGURES, else the checkout's figures/ folder, else ./figures."""
    if "FEDKIT_FIGURES" in os.environ:
        return Path(os.environ["FEDKIT_FIGURES"])
    root = repo_root()
    return (root or Path.cwd()) / "figures"
