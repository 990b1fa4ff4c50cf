"""Benchmark: one FedAvg round under a plain PyTorch client loop and fedkit's engines, side by side in one process.

    python benchmarks/engines.py [--workload adult|cnn|adult100] [--passes 3] [--device cpu] [--engines ...]

Workloads (500 random samples per client, batch 64, η_l = 0.01):
  adult     the adult MLP 123-32-16-8-2, 20 clients, K = 100
  adult100  the same MLP, 100 clients, K = 20
  cnn       the NIID-Bench CNN on 28×28, 20 clients, K = 20
  fc500     DRAG's FC-500 on 28×28, 20 clients, K = 20
  lenet5    LeNet-5 on 28×28, 20 clients, K = 20
  tfcnn     DRAG's TensorFlow-tutorial CNN on EMNIST's 28×28, 47 classes, 20 clients, K = 20
  lstm      the LEAF Shakespeare character LSTM on 80-character windows, 10 clients, K = 5
The plain loop is what one writes without a framework: one nn.Module, torch.optim.SGD, zero_grad/backward/step,
the model loaded from the flat global vector per client. Each pass times every engine once on the same round
(order rotated per pass, untimed warm-up first); printed: the median seconds per round, its ratio to the plain
loop's (> 1: faster than the plain loop), clients trained per second, the training accuracy of the FedAvg model
each engine's updates give, each pass's time and how far the updates are from the first engine's, with the thread
count. ``--engines ... compiled`` adds the vectorized engine with compile=True (its compile time printed; it is
compiled in the warm-up).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from fedkit.algorithms import RoundInfo, Settings, make_algorithm
from fedkit.engine import ENGINES, ClientInput, FlatModel, evaluate, make_plan
from fedkit.models import build_model
from fedkit.optim import SGD

WORKLOADS = {  # model, input shape, classes, clients, K
    "adult": ("mlp", (123,), 2, 20, 100),
    "adult100": ("mlp", (123,), 2, 100, 20),
    "cnn": ("cnn", (1, 28, 28), 10, 20, 20),
    "fc500": ("fc500", (1, 28, 28), 10, 20, 20),
    "tfcnn": ("tf_cnn", (1, 28, 28), 47, 20, 20),
    "lenet5": ("lenet5", (1, 28, 28), 10, 20, 20),
    "lstm": ("lstm", (80,), 80, 10, 5),  # the LEAF Shakespeare LSTM on 80-character windows
}


def plain_loop(module, w0, x, y, plans, lr):
    """Each client: load w0, then SGD steps with torch.optim; returns the stacked updates."""
    optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    deltas = []
    for plan in plans:
        vector_to_parameters(w0.clone(), module.parameters())  # it makes the parameters views of its input
        real = plan.mask.sum(1).long().tolist()
        for k in range(plan.steps):
            rows = plan.indices[k, :real[k]]
            optimizer.zero_grad()
            F.cross_entropy(module(x[rows]), y[rows]).backward()
            optimizer.step()
        deltas.append(parameters_to_vector(module.parameters()).detach() - w0)
    if x.is_cuda:
        torch.cuda.synchronize()
    return torch.stack(deltas)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="adult", choices=sorted(WORKLOADS))
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--engines", nargs="+", default=["plain", *ENGINES],
                        help="of plain, sequential, vectorized, compiled (vectorized with compile=True)")
    args = parser.parse_args()

    model, shape, classes, n_clients, steps = WORKLOADS[args.workload]
    torch.manual_seed(0)
    per_client, batch, lr = 500, 64, 0.01
    n = n_clients * per_client
    device = torch.device(args.device)
    x = (torch.randint(0, classes, (n, *shape), device=device) if model == "lstm"
         else torch.rand(n, *shape, device=device))
    y = torch.randint(0, classes, (n,), device=device)
    parts = np.arange(n).reshape(n_clients, per_client)
    rng = np.random.default_rng(0)
    plans = [make_plan(i, parts[i], batch, steps, rng) for i in range(n_clients)]
    module = build_model(model, shape, classes).to(device)
    fm = FlatModel(module)
    algorithm = make_algorithm("fedavg", Settings(num_clients=n_clients, local_steps=steps, optimizer=SGD(lr=lr)))
    w0 = fm.flat()
    ids = torch.arange(n_clients, device=device)
    k = torch.full((n_clients,), float(steps), device=device)
    info = RoundInfo(1, ids, torch.full((n_clients,), per_client, device=device), k, lr)
    clients = ClientInput(w0.expand(n_clients, -1), algorithm.message(w0, {}, info), {}, k, lr, 1)

    runners, engines = {"plain": lambda: plain_loop(module, w0, x, y, plans, lr)}, {}
    for name in [*ENGINES, "compiled"]:
        engines[name] = engine = (ENGINES["vectorized"](fm, algorithm, "classification", x, y, compile=True)
                                  if name == "compiled" else ENGINES[name](fm, algorithm, "classification", x, y))
        runners[name] = lambda engine=engine: engine.train(clients, plans, {}).uploads["delta"]
    runners = {name: runners[name] for name in args.engines}
    results = {name: run() for name, run in runners.items()}  # warm-up, and the updates to compare
    if "compiled" in runners:
        print(f"compiled: {engines['compiled'].compile_seconds:.1f} s to compile (in the warm-up)")
    times = {name: [] for name in runners}
    for p in range(args.passes):
        order = list(runners)[p % len(runners):] + list(runners)[:p % len(runners)]
        for name in order:
            start = time.perf_counter()
            runners[name]()
            times[name].append(time.perf_counter() - start)
    print(f"{args.workload}: {model} ({fm.dim:,} parameters), {n_clients} clients × K = {steps} × batch {batch}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, {device}")
    base = statistics.median(times["plain"]) if "plain" in times else None
    reference = next(iter(results.values()))
    accuracy = {name: evaluate(fm, w0 + delta.mean(0), x, y, "classification")[0] for name, delta in results.items()}
    for name, ts in times.items():
        median = statistics.median(ts)
        ratio = f"  {base / median:5.2f}× the plain loop" if base else ""
        error = (results[name] - reference).abs().max().item()
        print(f"  {name:<11} {median:.4f} s/round{ratio}  {n_clients / median:7.1f} clients/s  accuracy "
              f"{accuracy[name]:.4f}  (passes: {', '.join(f'{t:.4f}' for t in ts)}; "
              f"max |Δ − Δ_{next(iter(results))}| = {error:.1e})")


if __name__ == "__main__":
    main()
