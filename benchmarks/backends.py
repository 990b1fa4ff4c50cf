"""Benchmark: one config trained start to finish by fedkit's engines or through Flower's simulation engine, as a
whole process (import, data, start-up and evaluation included). Time two with farm-bench, side by side:

    farm-bench -n 3 --timeout 900 --vs 'python benchmarks/backends.py --backend sequential' -- \\
        python benchmarks/backends.py --backend flower

The workload is W1: FedAvg, the NIID-Bench CNN on MNIST-5k (28×28, Dirichlet φ = 0.5), 20 clients all sampled,
K = 20, batch 64, ``--rounds`` rounds (default 3). It prints the final accuracy, so that the backends can be seen to
train the same model.
"""
from __future__ import annotations

import argparse

from fedkit import Config, run


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("sequential", "vectorized", "flower"), required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cfg = Config(dataset="mnist_5k", partition="dirichlet", partition_args={"phi": 0.5}, num_clients=20,
                 model="cnn", rounds=args.rounds, local_steps=20, batch_size=64, lr=0.05,
                 engine="vectorized" if args.backend == "vectorized" else "sequential")
    if args.backend == "flower":
        from fedkit.flower import run_flower

        history = run_flower(cfg, cache=False, progress=False)
    else:
        history = run(cfg, cache=False, progress=False)
    print(f"{args.backend}: final accuracy {history.final_accuracy:.4f}")


if __name__ == "__main__":
    main()
