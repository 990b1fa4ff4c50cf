"""Benchmark: one round of 20 clients × 20 local steps (batch 64) under both engines.

    python benchmarks/engines.py [--model cnn] [--clients 20] [--steps 20] [--repeats 3]

Prints the median seconds per round of each engine and the sequential/vectorized speed ratio.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from fedkit.algorithms import RoundInfo, Settings, make_algorithm
from fedkit.engine import ENGINES, ClientInput, FlatModel, make_plan
from fedkit.models import build_model
from fedkit.optim import SGD

SHAPES = {"cnn": (1, 28, 28), "mlp": (123,), "lenet5": (1, 28, 28), "fc500": (1, 28, 28)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="cnn", choices=sorted(SHAPES))
    parser.add_argument("--algorithm", default="fedavg")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    torch.manual_seed(0)
    shape, per_client = SHAPES[args.model], 500
    n = args.clients * per_client
    device = torch.device(args.device)
    x, y = torch.rand(n, *shape, device=device), torch.randint(0, 10, (n,), device=device)
    parts = np.arange(n).reshape(args.clients, per_client)
    rng = np.random.default_rng(0)
    plans = [make_plan(i, parts[i], args.batch, args.steps, rng) for i in range(args.clients)]
    fm = FlatModel(build_model(args.model, shape, 10).to(device))
    algorithm = make_algorithm(args.algorithm, Settings(num_clients=args.clients, local_steps=args.steps,
                                                        optimizer=SGD(lr=0.01)))
    w0 = fm.flat()
    ids = torch.arange(args.clients, device=device)
    steps = torch.full((args.clients,), float(args.steps), device=device)
    info = RoundInfo(1, ids, torch.full((args.clients,), per_client, device=device), steps, 0.01)
    state = algorithm.init(w0, fm.layout)
    kept = {k: v.expand(args.clients, *v.shape) for k, v in algorithm.client_init(w0).items()}
    clients = ClientInput(algorithm.broadcast(w0, state).expand(args.clients, -1),
                          algorithm.message(w0, state, info), kept, steps, 0.01, 1)
    pick = lambda j: ClientInput(clients.w0[:j], {k: v[:j] for k, v in clients.recv.items()},  # noqa: E731
                                 {k: v[:j] for k, v in kept.items()}, steps[:j], 0.01, 1)
    print(f"{args.model} ({fm.dim:,} parameters), {args.clients} clients × {args.steps} steps × batch "
          f"{args.batch}, torch {torch.__version__}, {torch.get_num_threads()} threads, {device}")
    medians = {}
    for name, engine_cls in ENGINES.items():
        engine = engine_cls(fm, algorithm, "classification", x, y)
        engine.train(pick(2), plans[:2], {})  # warm-up
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            engine.train(clients, plans, {})  # the engines synchronise a CUDA device before they return
            times.append(time.perf_counter() - start)
        medians[name] = statistics.median(times)
        print(f"  {name:<11} {medians[name]:.3f} s/round  (runs: {', '.join(f'{t:.3f}' for t in times)})")
    print(f"  vectorized speed-up over sequential: {medians['sequential'] / medians['vectorized']:.2f}×")


if __name__ == "__main__":
    main()
