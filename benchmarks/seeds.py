"""Benchmark: a seed sweep trained together (one stack per round) against one seed alone, in one process.

    python benchmarks/seeds.py [--seeds 3] [--rounds 5] [--passes 3] [--dataset adult] [--device cpu]

The workload is TACO's adult setting (MLP 123-32-16-8-2, 20 clients, K = 100, batch 64, FedAvg; the data set from
FEDKIT_DATA). Printed: the median seconds of ``run`` for seed 0 and of ``run_together`` for seeds 0..S−1 (no
cache, evaluation every round included), and their ratio: the cost of S seeds in units of one.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from fedkit import Config, run
from fedkit.runner import run_together


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--dataset", default="adult")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    cfg = Config(dataset=args.dataset, partition="dirichlet", partition_args={"phi": 0.5}, num_clients=20,
                 model="mlp", rounds=args.rounds, local_steps=100, batch_size=64, lr=0.01, device=args.device)
    cfgs = [cfg.replace(seed=s) for s in range(args.seeds)]
    jobs = {"one seed": lambda: run(cfgs[0], cache=False, progress=False),
            f"{args.seeds} seeds together": lambda: run_together(cfgs, cache=False, progress=False)}
    for job in jobs.values():
        job()  # warm-up (data loading, first-round costs)
    times = {name: [] for name in jobs}
    for p in range(args.passes):
        for name in (list(jobs) if p % 2 == 0 else list(jobs)[::-1]):
            start = time.perf_counter()
            jobs[name]()
            times[name].append(time.perf_counter() - start)
    print(f"{args.dataset}, {args.rounds} rounds of FedAvg, 20 clients × K = 100, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {args.device}")
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    for name, ts in times.items():
        print(f"  {name:<18} {medians[name]:.3f} s  (passes: {', '.join(f'{t:.3f}' for t in ts)})")
    one, many = medians.values()
    print(f"  {args.seeds} seeds cost {many / one:.2f}× one seed "
          f"({args.seeds * one / many:.2f}× faster than one by one)")


if __name__ == "__main__":
    main()
