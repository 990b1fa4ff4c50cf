"""Benchmark: one client's local step with torch.func.grad (what vmap needs) vs plain autograd (the sequential
engine's choice), batch 64, on the small CNN and the 64-unit Shakespeare LSTM.

    python benchmarks/gradient.py [--steps 20] [--repeats 12]

Prints the median milliseconds per step of each and their ratio.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from fedkit.algorithms import make_algorithm
from fedkit.engine import ClientInput, FlatModel, make_client_step
from fedkit.models import build_model

MODELS = {  # name: (model options, input shape, classes, a batch of inputs)
    "cnn": ({}, (1, 28, 28), 10, lambda: torch.rand(64, 1, 28, 28)),
    "lstm": ({"hidden": 64}, (80,), 80, lambda: torch.randint(0, 80, (64, 80))),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for name, (options, shape, classes, batch) in MODELS.items():
        fm = FlatModel(build_model(name, shape, classes, **options))
        x, y, mask = batch(), torch.randint(0, classes, (64,)), torch.ones(64)
        algorithm = make_algorithm("fedavg")
        w0 = fm.flat()
        c = ClientInput(w0, {}, {}, torch.tensor(float(args.steps)), 0.01, 1)
        steps = {"func.grad": make_client_step(fm, algorithm, "classification", vectorized=True),
                 "autograd": make_client_step(fm, algorithm, "classification", vectorized=False)}
        times = {kind: [] for kind in steps}
        for _ in range(args.repeats):  # interleaved, so that a slow spell of the machine hits both
            for kind, step in steps.items():
                w, local = algorithm.local_init(c)
                start = time.perf_counter()
                for _ in range(args.steps):
                    w, local, _ = step(w, local, c, x, y, mask, {})
                times[kind].append(1e3 * (time.perf_counter() - start) / args.steps)
        med = {kind: statistics.median(t) for kind, t in times.items()}
        print(f"  {name:<5} func.grad {med['func.grad']:.2f} ms/step, autograd {med['autograd']:.2f} ms/step "
              f"(func.grad / autograd = {med['func.grad'] / med['autograd']:.2f})")


if __name__ == "__main__":
    main()
