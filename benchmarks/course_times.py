"""Benchmark: each lesson of the course run as a student first runs it, at its default scale ("small"), one after the
other: an empty run cache and no archive (every run trains), the executed copy and figures in a scratch folder.

    python benchmarks/course_times.py [--threads 1] [--lessons 00 03 ...] [--out PATH.csv]

Written to ``--out`` (default benchmarks/results/<date>-course_times/cpu.csv; an existing file is refused before
measuring): one row per lesson with its wall seconds (papermill's, kernel start included), whether it ran green, and
the machine (benchmarks/_results.py). The book's syllabus reads the newest such file for each lesson's time.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

COURSE = Path(__file__).resolve().parent.parent / "notebooks" / "teaching"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each lesson's kernel (default 1)")
    parser.add_argument("--lessons", nargs="*", default=None, help="lesson numbers, e.g. 00 07 (default: all)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    lessons = sorted(p for p in COURSE.glob("[0-9][0-9]_*.ipynb")
                     if args.lessons is None or p.name[:2] in args.lessons)
    if not lessons:
        sys.exit(f"no lesson matches {args.lessons} in {COURSE}")
    out = _results.claim(args.out or _results.default_path("course_times", "cpu"))
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the kernels inherit it
    import torch

    from fedkit.figures import run_notebooks

    torch.set_num_threads(args.threads)  # as the machine columns record it

    rows = []
    for lesson in lessons:
        load = _results.load()
        with tempfile.TemporaryDirectory() as scratch:
            os.environ["FEDKIT_CACHE"] = str(Path(scratch) / "cache")  # nothing cached
            os.environ["FEDKIT_FIGURES"] = str(Path(scratch) / "figures")  # nothing archived, nothing overwritten
            [result] = run_notebooks([lesson], scale="small", output_dir=Path(scratch) / "executed")
        status = "ok" if result.error is None else f"failed: {result.error}"
        print(f"{lesson.stem}: {result.seconds:.1f} s {status}", flush=True)
        rows.append({"benchmark": "course_times", "lesson": lesson.stem, "scale": "small", "status": status,
                     "seconds": round(result.seconds, 1), **_results.machine_columns("cpu", load)})
    _results.write_csv(out, rows)


if __name__ == "__main__":
    main()
