"""What one run of FAdamGC's image rows costs at the paper's setting (3,000 rounds × 10 clients × K = 50 local steps of
ResNet-18 at batch 32): one SGD step of fedkit's ResNet-18 on random 32×32×3 inputs, timed on this machine.

    python benchmarks/resnet18_step.py [OUT_TXT] [--threads 1] [--steps 12] [--device cpu]

Writes the step times, the median and the hours per run it implies (local steps only, one client at a time).
"""
import argparse
import os
import statistics
import time
from pathlib import Path

import torch

from fedkit.models.registry import build_model
from fedkit.provenance import machine

STEPS_PER_RUN = 3000 * 10 * 50  # rounds × clients a round × K (fedkit.papers.fadamgc.COMMON)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="benchmarks/results/2026-11-29-fadamgc-resnet18-step/cpu_step.txt")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build_model("resnet18", (3, 32, 32), 10).to(args.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 3, 32, 32, device=args.device), torch.randint(0, 10, (32,), device=args.device)
    load = os.getloadavg()
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    median = statistics.median(times[2:])  # the first two pay for lazy initialisation
    where = machine(args.device)
    lines = [f"fedkit resnet18 (32x32x3, 10 classes), one SGD step at batch 32, random inputs; {args.device} "
             f"({where['gpu'] or where['cpu']}), torch {torch.__version__}, {args.threads} thread(s)",
             f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f}",
             f"step seconds: {[round(t, 3) for t in times]}",
             f"median {median:.3f} s (first 2 left out); FAdamGC's paper setting, per run: {STEPS_PER_RUN:,} steps "
             f"= {STEPS_PER_RUN * median / 3600:,.0f} h (local steps only, one client at a time)"]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
