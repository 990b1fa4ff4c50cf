"""Is a GPU run bitwise reproducible, and if not, which op is to blame? (stop 36 saw one seed of TACO Table VI on
FEMNIST differ from its twin in round 100 only.)

For one paper-scale config per (data set, model, algorithm, engine) of the given notebooks, cut to ``--rounds``:
1. trains it under ``torch.use_deterministic_algorithms(True)``, which raises on the first op PyTorch knows to be
   non-deterministic on this device and names it ("ok" when none ran);
2. trains it twice with cuDNN's defaults and twice with ``cudnn.deterministic = True``, and says whether each pair's
   final models are bitwise equal, with the seconds each took.
One CSV row per config into --out (default benchmarks/results/<date>-gpu_determinism/<device kind>.csv; an existing
file is refused before measuring), with the machine (benchmarks/_results.py). Runs on the CPU too (where everything
should be "ok" and equal).
  python benchmarks/gpu_determinism.py notebooks/taco/table6_ablation.ipynb --match femnist --device cuda --out det.csv
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS is deterministic only with a fixed workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

from fedkit.plan import matching_runs  # noqa: E402
from fedkit.runner import run  # noqa: E402


def _train(cfg, cudnn_deterministic: bool) -> tuple[torch.Tensor, float]:
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn_deterministic, False
    start = time.perf_counter()
    history = run(cfg, cache=False, progress=False)
    return history.weights.detach().cpu(), time.perf_counter() - start


def _strict(cfg) -> str:
    torch.use_deterministic_algorithms(True)
    try:
        run(cfg, cache=False, progress=False)
        return "ok"
    except RuntimeError as err:  # PyTorch names the op and its device
        return str(err).splitlines()[0][:300]
    finally:
        torch.use_deterministic_algorithms(False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--match", default=None, help="only the runs whose '<paper>/<notebook>/<label>' matches")
    parser.add_argument("--out", type=Path, default=None, help="the result's CSV (default: benchmarks/results/<date>-"
                                                                "gpu_determinism/<device kind>.csv; never overwritten)")
    args = parser.parse_args()
    out = _results.claim(args.out or _results.default_path("gpu_determinism", args.device))
    load = _results.load()
    rows, seen = [], set()
    for notebook in args.notebooks:
        runs, note = matching_runs(notebook, "paper", device=args.device, match=args.match)
        if not runs:
            print(f"{notebook}: no runs ({note or 'none match'})", flush=True)
        for name, cfg in (runs or {}).items():
            kind = (cfg.dataset, cfg.model, cfg.algorithm, cfg.engine)
            if kind in seen:
                continue
            seen.add(kind)
            row = {"run": name, "device": args.device, "rounds": args.rounds}
            try:  # one config that fails must not cost the others their rows (a GPU job is short)
                cfg = cfg.replace(rounds=args.rounds)
                row["strict"] = _strict(cfg)
                for flag in (False, True):
                    (a, s1), (b, s2) = _train(cfg, flag), _train(cfg, flag)
                    row[f"equal_cudnn_det_{flag}"] = bool(torch.equal(a, b))
                    row[f"max_diff_cudnn_det_{flag}"] = float((a - b).abs().max())
                    row[f"seconds_cudnn_det_{flag}"] = round((s1 + s2) / 2, 2)
            except Exception as err:  # noqa: BLE001 (recorded in the row)
                row["error"] = f"{type(err).__name__}: {err}"[:300]
            print(row, flush=True)
            rows.append(row)
    if not rows:
        print("no configs ran: nothing written")
        return
    machine = _results.machine_columns(args.device, load)
    _results.write_csv(out, [{**row, **machine} for row in rows])


if __name__ == "__main__":
    main()
