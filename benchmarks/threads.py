"""Torch threads and OpenMP's wait policy, on an idle CPU and beside other work.

A round of the campaign's 2-seed stack (FedDUAL's Fashion-MNIST FedAvg at paper scale, seeds 1 and 2, LeNet, 10
clients a round, cut to ``--local-steps``, its test evaluation included) is timed in a fresh process per pass (the
wait policy is read when the OpenMP runtime loads), for each setting: 1 thread; 2 threads with OpenMP's default wait
(its threads spin between parallel regions); 2 threads with ``OMP_WAIT_POLICY=PASSIVE`` (they sleep). Settings
interleave, order rotated per pass. It measures beside whatever else runs: ``--beside`` says what that is, and the
result records it with the load averages. (Niced busy loops, in Python or a 1-thread CNN, did not bring out the
spinning threads' slowdown here; two niced campaign jobs, a papermill render and a training script, did.) Needs
Fashion-MNIST under ``$FEDKIT_DATA``.

    FEDKIT_DATA=../shared/data python benchmarks/threads.py --beside nothing
    FEDKIT_DATA=../shared/data python benchmarks/threads.py --beside "two niced campaign jobs" --out ...
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

SETTINGS = {"1 thread": (1, None), "2 threads, spin": (2, None), "2 threads, passive": (2, "PASSIVE")}

ONE_ROUND = """
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
from fedkit.precompute import listed_groups
from fedkit.runner import run_together
groups, _ = listed_groups(["notebooks/feddual/table1_fig3_fig4_methods.ipynb"], "paper", "cpu", 0, None)
group = next(g for g in groups if g.configs[0].dataset == "fashion_mnist" and g.configs[0].algorithm == "fedavg")
configs = [c.replace(rounds=1, local_epochs=None, local_steps=int(sys.argv[2])) for c in group.configs[1:]]
start = time.perf_counter()
run_together(configs, progress=False, cache=False)
print(time.perf_counter() - start, len(configs))
"""


def one_pass(threads: int, wait: str | None, local_steps: int) -> tuple[float, int]:
    """One round's seconds in a fresh process, and how many seeds it stacked."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    if wait is not None:
        env["OMP_WAIT_POLICY"] = wait
    out = subprocess.run([sys.executable, "-c", ONE_ROUND, str(threads), str(local_steps)], env=env, check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    seconds, seeds = out.stdout.split()[-2:]
    return float(seconds), int(seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--beside", required=True, help="what else runs on the machine meanwhile (recorded)")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--local-steps", type=int, default=20)
    parser.add_argument("--out", default=None, help="the result's CSV (default: benchmarks/results/<date>-threads/"
                                                    "cpu.csv)")
    args = parser.parse_args()
    if args.passes < 1 or args.local_steps < 1:
        sys.exit(f"--passes and --local-steps must be at least 1: got {args.passes}, {args.local_steps}")
    out = _results.claim(args.out or _results.default_path("threads", "cpu"))
    load = _results.load()
    times = {name: [] for name in SETTINGS}
    names = list(SETTINGS)
    for p in range(args.passes):
        for name in names[p % len(names):] + names[:p % len(names)]:
            seconds, seeds = one_pass(*SETTINGS[name], args.local_steps)
            times[name].append(seconds)
            print(f"pass {p}: {name}: {times[name][-1]:.2f} s", flush=True)
    base = statistics.median(times["1 thread"])
    rows = [{"setting": name, "torch_threads": SETTINGS[name][0], "omp_wait_policy": SETTINGS[name][1] or "(default)",
             "beside": args.beside, "local_steps": args.local_steps, "seeds_stacked": seeds,
             "median_s_per_round": round(statistics.median(t), 3), "vs_1_thread": round(statistics.median(t) / base, 3),
             "passes_s": _results.passes(t), **_results.machine_columns("cpu", load)} for name, t in times.items()]
    _results.write_csv(out, rows)


if __name__ == "__main__":
    main()
