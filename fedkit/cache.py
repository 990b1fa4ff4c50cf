"""The run cache as a user sees it (``fedkit cache``): its entries, and what a run set aside as corrupt.

An entry is a folder named by a config's key (``runner.Run``): a finished run's History (meta.json and its files,
and final.pt, the last checkpoint a longer run goes on from), or an unfinished run's checkpoints. A corrupt entry is
moved beside it as ``<key>.corrupt-<time>-<n>``, a corrupt checkpoint inside it as ``checkpoint*.pt.corrupt``;
Flower runs have their own entries under ``flower/``. A run training an entry holds ``.<key>.lock`` beside it
(removed when it ends; a killed run's empty one is harmless).
"""
from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

KEY = re.compile(r"[0-9a-f]{16}")


@dataclass
class Entry:
    path: Path
    algorithm: str  # "?" where no file says
    finished: bool
    size: int  # bytes
    age: float  # seconds since its last write


def entries(root: Path) -> list[Entry]:
    """The cache's entries (fedkit's and Flower's), most recent first."""
    found = []
    for folder in (root, root / "flower"):
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            if path.is_dir() and KEY.fullmatch(path.name):
                found.append(_entry(path))
    return sorted(found, key=lambda e: e.age)


def set_aside(root: Path) -> list[Path]:
    """What runs set aside as corrupt (entries and checkpoints), and the temporary files of killed writes."""
    found = []
    for folder in (root, root / "flower"):
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            if ".corrupt-" in path.name and KEY.fullmatch(path.name.split(".")[0]):
                found.append(path)
            elif path.is_dir() and KEY.fullmatch(path.name):
                found += sorted(path.glob("*.corrupt")) + sorted(path.glob(".*.tmp"))
    return found


def remove(path: Path) -> None:
    shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


def size(path: Path) -> int:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files)


def _entry(path: Path) -> Entry:
    files = [p for p in path.rglob("*") if p.is_file()]
    meta, config = path / "meta.json", path / "config.json"
    try:
        fields = json.loads((meta if meta.exists() else config).read_text())
        algorithm = str(fields.get("config", fields).get("algorithm", "?"))
    except (OSError, ValueError, AttributeError):
        algorithm = "?"
    newest = max((p.stat().st_mtime for p in files), default=path.stat().st_mtime)
    return Entry(path, algorithm, meta.exists(), sum(p.stat().st_size for p in files), time.time() - newest)
