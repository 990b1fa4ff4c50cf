"""Benchmark: the minutes the engine "auto" picks saves a campaign slice, by the plan's own probes.

    python benchmarks/plan_engines.py NOTEBOOK [NOTEBOOK ...] [--scale small] [--match REGEX] [--threads 1]
                                      [--out PATH.csv]

For each notebook (at ``--scale``, only the runs whose '<paper>/<notebook>/<label>' matches ``--match``), the
predicted minutes of local training of its runs whose data is here (``fedkit.plan.Planner``, the cache ignored:
every run counted whole), once with the engine auto picks on this CPU and once with the sequential engine (the
engine a CPU run took before the vectorized engine won on the CNNs). Printed and written to ``--out`` (default
benchmarks/results/<date>-plan_engines/cpu.csv; an existing file is refused before measuring): one row per notebook
with both predictions, their ratio, the minutes saved, the runs and the machine (benchmarks/_results.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

from fedkit.plan import Planner, matching_runs  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--scale", default="small", choices=("ci", "small", "paper"))
    parser.add_argument("--match", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = _results.claim(args.out or _results.default_path("plan_engines", "cpu"))
    torch.set_num_threads(args.threads)
    load = _results.load()
    planner, rows = Planner("cpu"), []
    for notebook in args.notebooks:
        runs, _ = matching_runs(notebook, args.scale, match=args.match)
        configs = [c for c in {c.key(): c for c in (runs or {}).values()}.values() if planner.missing(c) is None]
        engines = [planner.engine(c) for c in configs]  # builds each model once
        auto = sum(planner.minutes(c, e) for c, e in zip(configs, engines))
        sequential = sum(planner.minutes(c, "sequential") for c in configs)
        rows.append({"notebook": f"{notebook.parent.name}/{notebook.stem}", "scale": args.scale,
                     "match": args.match or "", "runs": len(configs), "auto_engine": "+".join(sorted(set(engines))),
                     "auto_minutes": round(auto, 3), "sequential_minutes": round(sequential, 3),
                     "ratio": round(sequential / auto, 2) if auto else None,
                     "minutes_saved": round(sequential - auto, 3)})
        print(rows[-1], flush=True)
    _results.write_csv(out, [{**row, **_results.machine_columns("cpu", load)} for row in rows])


if __name__ == "__main__":
    main()
