"""Where a benchmark writes its result, and the machine it ran on (the project's rule: a measurement is a file under
benchmarks/results/, with the machine described).

A script, run as ``python benchmarks/<name>.py`` from the repository root, imports this module by its folder:
``sys.path.insert(0, str(Path(__file__).resolve().parent))`` then ``import _results``.

    out = _results.claim(args.out or _results.default_path("seeds", args.device))  # refuses before measuring
    load = _results.load()
    ... measure ...
    _results.write_csv(out, [{...figures..., **_results.machine_columns(args.device, load)}])

The machine columns: device, gpu (the GPU model, empty on a CPU), cpu (its model), cpu_capability (the vector
instructions torch's CPU kernels use: AVX2, AVX512, ...), torch, threads (torch's thread count), commit and
uncommitted (fedkit's checkout, as fedkit.provenance records it), started (UTC, when the benchmark began measuring),
and load_before / load_after (the 1-, 5- and 15-minute load averages, "1.02 0.98 1.10").
"""
from __future__ import annotations

import csv
import datetime
import os
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def default_path(benchmark: str, device: str, suffix: str = ".csv") -> Path:
    """benchmarks/results/<YYYY-MM-DD>-<benchmark>/<device kind><suffix>, e.g. .../2026-11-27-seeds/cpu.csv."""
    kind = device.split(":")[0]
    return RESULTS / f"{datetime.date.today().isoformat()}-{benchmark}" / f"{kind}{suffix}"


def claim(path: str | Path) -> Path:
    """``path``, if nothing is there yet; else the process exits saying so in one line (call it before measuring:
    a result is never overwritten)."""
    path = Path(path)
    if path.exists():
        sys.exit(f"{path} exists: not overwritten (pass another --out)")
    return path


class Load:
    """The load average when the measurement began, and when it is read again."""

    def __init__(self):
        self.started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        self.before = _loadavg()


def load() -> Load:
    return Load()


def _loadavg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:  # not every platform has one
        return ""


def machine_columns(device: str, load: Load) -> dict:
    """The machine (fedkit.provenance.machine) and the load before and now, as one row's columns."""
    from fedkit.provenance import machine

    columns = dict(machine(device))
    columns["gpu"] = columns.get("gpu") or ""
    return {**columns, "started": load.started, "load_before": load.before, "load_after": _loadavg()}


def write_csv(path: str | Path, rows: list[dict]) -> Path:
    """Write ``rows`` (columns in first-seen order) to a new file at ``path`` (its folders made); an existing file
    is never replaced (one made while measuring included)."""
    path = Path(path)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    print(f"written: {path}")
    return path


def write_text(path: str | Path, text: str) -> Path:
    """``text`` into a new file at ``path`` (its folders made); an existing file is never replaced."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x") as f:
        f.write(text)
    print(f"written: {path}")
    return path


def passes(times: list[float]) -> str:
    """Every pass's seconds in one cell: "2.0257 1.83562 1.9874"."""
    return " ".join(f"{t:.6g}" for t in times)
