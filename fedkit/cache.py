"""The run cache as a user sees it (``fedkit cache``): its entries, what a run set aside as corrupt, and the unfinished
runs a campaign slice carries to the next machine (``carry``, ``restore``: the checkout's benchmarks/carry/).

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


def _rounds_done(entry: Path) -> int:
    """The round an unfinished entry's newest readable checkpoint reached (-1: none)."""
    from .runner import CHECKPOINTS, _read_checkpoint

    for path in (entry / name for name in CHECKPOINTS):
        try:
            return int(_read_checkpoint(path)["state"]["t"])
        except Exception:  # noqa: BLE001 - absent or unreadable: try the previous one
            continue
    return -1


def carry(root: Path, target: Path) -> list[tuple[str, int]]:
    """Copy each unfinished entry's newest readable checkpoint (with its config) to ``target/<key>/``, so a campaign
    slice cut off at the end of a session goes on from there on the next machine (``restore``); (key, round) each."""
    from .runner import CONFIG

    carried = []
    for e in entries(root):
        done = _rounds_done(e.path) if not e.finished and not e.path.parent.name == "flower" else -1
        if done < 1:
            continue
        newest = next(p for p in (e.path / "checkpoint.pt", e.path / "checkpoint.prev.pt") if p.exists())
        folder = target / e.path.name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(newest, folder / "checkpoint.pt")
        if (e.path / CONFIG).exists():
            shutil.copyfile(e.path / CONFIG, folder / CONFIG)
        carried.append((e.path.name, done))
    return carried


def restore(source: Path, root: Path) -> list[tuple[str, int]]:
    """Put each carried checkpoint of ``source`` into the cache ``root`` where the cache holds neither the finished run
    nor a later round of it; (key, round) each."""
    restored = []
    folders = sorted(p for p in source.iterdir() if p.is_dir() and KEY.fullmatch(p.name)) if source.is_dir() else []
    for folder in folders:
        entry = root / folder.name
        done = _rounds_done(folder)
        if done < 1 or (entry / "meta.json").exists() or _rounds_done(entry) >= done:
            continue
        entry.mkdir(parents=True, exist_ok=True)
        for path in folder.iterdir():
            shutil.copyfile(path, entry / path.name)
        restored.append((folder.name, done))
    return restored
