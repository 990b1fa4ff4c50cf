"""Benchmark: a seed sweep trained together (one stack per round) against one seed alone, in one process.

    python benchmarks/seeds.py [--seeds 3] [--rounds 5] [--passes 3] [--dataset adult] [--device cpu]
                               [--clients 20] [--local-steps 100] [--out PATH.csv]

The workload is TACO's adult setting (MLP 123-32-16-8-2, 20 clients, K = 100, batch 64, FedAvg; the data set from
FEDKIT_DATA). Printed: the median seconds of ``run`` for seed 0 and of ``run_together`` for seeds 0..S−1 (no
cache, evaluation every round included), and their ratio: the cost of S seeds in units of one. ``--dataset
synthetic`` needs no data root; ``--clients`` and ``--local-steps`` shrink the workload (a smoke run). The result is
written to ``--out`` (default benchmarks/results/<date>-seeds/<device kind>.csv; an existing file is refused before
measuring): one row per job with its figures, the workload and the machine (benchmarks/_results.py).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

from fedkit import Config, run  # noqa: E402
from fedkit.runner import run_together  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--local-steps", type=int, default=100)
    parser.add_argument("--out", default=None, help="the result's CSV (default: benchmarks/results/<date>-seeds/"
                                                    "<device kind>.csv; never overwritten)")
    args = parser.parse_args()
    out = _results.claim(args.out or _results.default_path("seeds", args.device))
    cfg = Config(dataset=args.dataset, partition="dirichlet", partition_args={"phi": 0.5}, num_clients=args.clients,
                 model="mlp", rounds=args.rounds, local_steps=args.local_steps, batch_size=64, lr=0.01,
                 device=args.device)
    cfgs = [cfg.replace(seed=s) for s in range(args.seeds)]
    jobs = {"one seed": lambda: run(cfgs[0], cache=False, progress=False),
            f"{args.seeds} seeds together": lambda: run_together(cfgs, cache=False, progress=False)}
    load = _results.load()
    for job in jobs.values():
        job()  # warm-up (data loading, first-round costs)
    times = {name: [] for name in jobs}
    for p in range(args.passes):
        for name in (list(jobs) if p % 2 == 0 else list(jobs)[::-1]):
            start = time.perf_counter()
            jobs[name]()
            times[name].append(time.perf_counter() - start)
    print(f"{args.dataset}, {args.rounds} rounds of FedAvg, {args.clients} clients × K = {args.local_steps}, "
          f"torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {args.device}")
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    for name, ts in times.items():
        print(f"  {name:<18} {medians[name]:.3f} s  (passes: {', '.join(f'{t:.3f}' for t in ts)})")
    one, many = medians.values()
    print(f"  {args.seeds} seeds cost {many / one:.2f}× one seed "
          f"({args.seeds * one / many:.2f}× faster than one by one)")
    machine = _results.machine_columns(args.device, load)
    rows = [{"benchmark": "seeds", "dataset": args.dataset, "partition": "dirichlet phi=0.5", "model": "mlp",
             "algorithm": "fedavg", "clients": args.clients, "local_steps": args.local_steps, "batch": 64,
             "lr": 0.01, "rounds": args.rounds, "passes": args.passes, "job": name, "seeds": seeds,
             "seconds_per_run": medians[name], "passes_seconds": _results.passes(times[name]),
             "cost_in_one_seed_runs": medians[name] / one, "speedup_over_one_by_one": seeds * one / medians[name],
             **machine}
            for name, seeds in zip(jobs, (1, args.seeds))]
    _results.write_csv(out, rows)


if __name__ == "__main__":
    main()
