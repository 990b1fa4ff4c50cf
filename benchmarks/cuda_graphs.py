"""Benchmark: a round of the NIID-Bench CNN for 30 stacked clients (10 clients × 3 seeds), the vectorized engine's
step eager and captured as a CUDA graph, side by side in one process.

    python benchmarks/cuda_graphs.py [--device cuda] [--passes 5] [--out PATH.json]
    python benchmarks/cuda_graphs.py --device cpu --passes 1      # a dry run: no capture, the same code path

The clients: 10 clients of unequal sizes (200-800 random 28×28 samples; the same for every seed) and 3 seeds (each
its own batch order), one local epoch at batch 64 (so K_i = 4..13 and clients finish at different steps),
FedAvg with SGD (η_l = 0.01, momentum 0.9). Each pass is the next round (t = 2, 3, ...). Engines, each timed
once per pass (order rotated, after an untimed warm-up round, t = 1):
  shrinking  the eager step, a done client leaving the stack (the default without graphs)
  static     the eager step on fixed shapes, a done client masked (what the graph captures)
  graph      the static step captured as a CUDA graph (cuda_graphs=True; the default on CUDA); as FedAvg does not
             say that its local_step ignores round t, every round's first step runs eagerly and the step is
             captured anew (both timed)
  graph_kept the same with the program's ``reads_round_in_step = False``: the graph captured in the warm-up round
             is replayed for every step of every round
  plain      a plain PyTorch loop over the 30 clients (torch.optim.SGD, no momentum), for scale
The graph engines are left out on a CPU (a dry run of the same code path).
Written to --out (JSON; default benchmarks/results/<date>-cuda_graphs/<device kind>.json, an existing file refused
before measuring): the device, torch, the median seconds per round and every pass per engine, the ratios to
the eager shrinking step, the capture's time, how many steps were replayed, how far each engine's updates
are from the shrinking engine's, and the machine (benchmarks/_results.py: GPU and CPU model, torch, threads,
fedkit's commit, the load average before and after).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402
from engines import plain_loop  # noqa: E402

from fedkit.algorithms import RoundInfo, Settings, make_algorithm  # noqa: E402
from fedkit.engine import ClientInput, FlatModel, VectorizedEngine, make_plan  # noqa: E402
from fedkit.models import build_model  # noqa: E402
from fedkit.optim import SGD  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--engines", nargs="+", default=["shrinking", "static", "graph", "graph_kept", "plain"])
    parser.add_argument("--out", default=None, help="JSON path (default: benchmarks/results/<date>-cuda_graphs/"
                                                    "<device kind>.json; never overwritten)")
    args = parser.parse_args()
    out = _results.claim(args.out or _results.default_path("cuda_graphs", args.device, ".json"))
    device = torch.device(args.device)
    load = _results.load()
    engines = [e for e in args.engines if not e.startswith("graph") or device.type == "cuda"]  # CPU: a dry run

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    sizes = rng.integers(200, 801, args.clients)
    n_data, batch, lr = int(sizes.sum()), 64, 0.01
    x = torch.rand(n_data, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (n_data,), device=device)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    parts = [np.arange(bounds[i], bounds[i + 1]) for i in range(args.clients)]
    plans = []
    for seed in range(args.seeds):  # each seed its own batch order over the same clients
        seed_rng = np.random.default_rng(seed)
        plans += [make_plan(i, parts[i], batch, args.epochs * -(-len(parts[i]) // batch), seed_rng)
                  for i in range(args.clients)]
    n = len(plans)
    module = build_model("cnn", (1, 28, 28), 10).to(device)
    fm = FlatModel(module)
    make = lambda: make_algorithm("fedavg", Settings(num_clients=n, optimizer=SGD(lr=lr, momentum=0.9)))  # noqa: E731
    w0 = fm.flat()
    k = torch.tensor([float(p.steps) for p in plans], device=device)
    info = RoundInfo(1, torch.arange(n, device=device), torch.tensor([len(p.samples) for p in plans], device=device),
                     k, lr)
    algorithm = make()
    clients = ClientInput(w0.expand(n, -1), algorithm.message(w0, {}, info), {}, k, lr, 1)

    built = {
        "shrinking": VectorizedEngine(fm, make(), "classification", x, y, cuda_graphs=False, static=False),
        "static": VectorizedEngine(fm, make(), "classification", x, y, cuda_graphs=False, static=True),
    }
    if "graph" in engines:
        built["graph"] = VectorizedEngine(fm, make(), "classification", x, y, cuda_graphs=True)
    if "graph_kept" in engines:
        program = make()
        program.reads_round_in_step = False  # FedAvg's local_step does not read c.t
        built["graph_kept"] = VectorizedEngine(fm, program, "classification", x, y, cuda_graphs=True)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    t = [1]  # the round: each pass is the next one
    runners = {name: (lambda e=e: e.train(clients._replace(t=t[0]), plans, {}).uploads["delta"])
               for name, e in built.items()}
    if "plain" in engines:
        runners["plain"] = lambda: plain_loop(module, w0, x, y, plans, lr)  # plain SGD: no momentum, for scale
    runners = {name: runners[name] for name in engines}

    results, warm_up = {}, {}
    for name, run in runners.items():  # untimed warm-up (the graph is captured here), and the updates
        sync()
        start = time.perf_counter()
        results[name] = run()
        sync()
        warm_up[name] = time.perf_counter() - start
    times = {name: [] for name in runners}
    for p in range(args.passes):
        t[0] = p + 2
        order = list(runners)[p % len(runners):] + list(runners)[:p % len(runners)]
        for name in order:
            sync()
            start = time.perf_counter()
            runners[name]()
            sync()
            times[name].append(time.perf_counter() - start)

    median = {name: statistics.median(ts) for name, ts in times.items()}
    base = median["shrinking"]
    report = {
        "workload": f"NIID-Bench CNN ({fm.dim:,} parameters), {args.clients} clients x {args.seeds} seeds stacked "
                    f"({n}), {args.epochs} epoch(s) at batch {batch} (K_i {min(p.steps for p in plans)}-"
                    f"{max(p.steps for p in plans)}), FedAvg SGD momentum 0.9",
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({torch.get_num_threads()} "
                                                                                   "threads; dry run, no capture)",
        "torch": torch.__version__,
        "passes": args.passes,
        "seconds_per_round": median,
        "passes_seconds": times,
        "ratio_to_eager_shrinking": {name: base / m for name, m in median.items()},
        "warm_up_round_seconds": warm_up,  # the graphs' first capture included
        "max_abs_update_difference_to_shrinking": {
            name: (d - results["shrinking"]).abs().max().item() for name, d in results.items() if name != "plain"},
    }
    for name in ("graph", "graph_kept"):
        if name in built:
            report[name] = {"replayed_steps": built[name].replays, "error": built[name].graph_error,
                            "rounds": 1 + args.passes, "steps_per_round": max(p.steps for p in plans)}
    report["machine"] = _results.machine_columns(args.device, load)
    print(json.dumps(report, indent=2))
    _results.write_text(out, json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
