"""Where STEM loses accuracy on TACO's label-group split: FedAvg against STEM with the paper's momentum weight
a = 0.2 and with a = 1 (no memory: every local direction is the fresh minibatch gradient, apart from each round's
first step along the averaged d̄), at TACO's small-scale Fashion-MNIST settings, a few rounds, several seeds.

    python benchmarks/stem_memory_probe.py [OUT_CSV] [--rounds 15] [--seeds 3]

Writes one row per (run, seed, round) with the test accuracy; prints each run's last round.
"""
import argparse

import pandas as pd
import torch

from fedkit import run
from fedkit.papers import taco


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="benchmarks/results/2026-11-26-stem-memory/stem_memory.csv")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    variants = {"FedAvg": ("FedAvg", {}), "STEM a=0.2": ("STEM", {}), "STEM a=1": ("STEM", {"a": 1.0})}
    frames = []
    for seed in range(args.seeds):
        for label, (method, options) in variants.items():
            cfg = taco.config("fmnist", "small", method, seed=seed, rounds=args.rounds)
            cfg = cfg.replace(algorithm_args={**cfg.algorithm_args, **options})
            history = run(cfg, progress=False, cache=False)  # every number computed here, at these threads
            rounds = history.rounds[["round", "test_accuracy"]].assign(run=label, seed=seed,
                                                                       threads=args.threads)
            frames.append(rounds)
            print(f"seed {seed} {label}: {100 * history.final_accuracy:.2f} %", flush=True)
    pd.concat(frames, ignore_index=True).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
