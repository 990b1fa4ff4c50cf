"""Benchmark: one FedAvg round under a plain PyTorch client loop and fedkit's engines, side by side in one process.

    python benchmarks/engines.py [--workload adult|cnn|adult100] [--passes 3] [--device cpu] [--engines ...]
                                 [--clients N] [--local-steps K] [--out PATH.csv]

Workloads (500 random samples per client, batch 64, η_l = 0.01):
  adult     the adult MLP 123-32-16-8-2, 20 clients, K = 100
  adult100  the same MLP, 100 clients, K = 20
  cnn       the NIID-Bench CNN on 28×28, 20 clients, K = 20
  fc500     DRAG's FC-500 on 28×28, 20 clients, K = 20
  lenet5    LeNet-5 on 28×28, 20 clients, K = 20
  feddual_lenet  FedDUAL's LeNet variant (tanh, average pooling, a per-position Dense) on 28×28, 20 clients, K = 20
  tfcnn     DRAG's TensorFlow-tutorial CNN on EMNIST's 28×28, 47 classes, 20 clients, K = 20
  lstm      the LEAF Shakespeare character LSTM on 80-character windows, 10 clients, K = 5
The plain loop is what one writes without a framework: one nn.Module, torch.optim.SGD, zero_grad/backward/step,
the model loaded from the flat global vector per client. Each pass times every engine once on the same round
(order rotated per pass, untimed warm-up first); printed: the median seconds per round, its ratio to the plain
loop's (> 1: faster than the plain loop) and the median of the passes' own ratios, clients trained per second,
the training accuracy of the FedAvg model each engine's updates give, each pass's time, how far the updates are
from the first engine's and the median minor page faults per round (memory handed back to the system and
faulted in again), with the thread count.
``--engines ... compiled`` adds the vectorized engine with compile=True (its compile time printed; it is compiled
in the warm-up). ``--threads`` sets torch's thread count; ``--clock cpu`` times each pass by the process's CPU
seconds instead of the wall clock (at 1 thread, a pass's own work, less moved by other processes on a shared
machine). ``--profile PATH.csv`` then profiles one more round of each engine with torch.profiler (after two
profiled warm-up rounds) and writes where its time went: per share (convolution forward and backward, pooling,
activations, dense matrix products, loss, layout copies, allocation and fill, data gather, other kernels, Python
and dispatch), per kernel (self CPU time) and, for the vectorized engine, per phase (the stacked gradient, the
vmapped client update, outside the steps), in ms per round and as a fraction of the round, and the minor page
faults of the profiled round (the profiler's own allocations change them: the timed passes' count is the one to
read).
``--clients`` and ``--local-steps`` shrink a workload (a smoke run). The result is written to ``--out`` (default
benchmarks/results/<date>-engines-<workload>/<device kind>.csv; an existing file is refused before measuring): one
row per engine with the workload, its figures and the machine (benchmarks/_results.py).
"""
from __future__ import annotations

import argparse
import csv
import resource
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

from fedkit.algorithms import RoundInfo, Settings, make_algorithm  # noqa: E402
from fedkit.engine import ENGINES, ClientInput, FlatModel, evaluate, make_plan  # noqa: E402
from fedkit.models import build_model  # noqa: E402
from fedkit.optim import SGD  # noqa: E402

WORKLOADS = {  # model, input shape, classes, clients, K
    "adult": ("mlp", (123,), 2, 20, 100),
    "adult100": ("mlp", (123,), 2, 100, 20),
    "cnn": ("cnn", (1, 28, 28), 10, 20, 20),
    "fc500": ("fc500", (1, 28, 28), 10, 20, 20),
    "tfcnn": ("tf_cnn", (1, 28, 28), 47, 20, 20),
    "lenet5": ("lenet5", (1, 28, 28), 10, 20, 20),
    "feddual_lenet": ("feddual_lenet", (1, 28, 28), 10, 20, 20),  # FedDUAL's LeNet (tanh, average pooling)
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


SHARES = {  # profiler kernel -> share of a round
    "convolution forward": ("aten::mkldnn_convolution", "aten::_convolution", "aten::convolution", "aten::conv2d",
                            "aten::_slow_conv2d_forward", "aten::thnn_conv2d"),
    "convolution backward": ("aten::convolution_backward", "aten::_slow_conv2d_backward"),
    "pooling": ("aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward", "aten::max_pool2d",
                "aten::avg_pool2d", "aten::avg_pool2d_backward", "aten::_adaptive_avg_pool2d",
                "aten::_adaptive_avg_pool2d_backward", "aten::adaptive_max_pool2d",
                "aten::adaptive_max_pool2d_backward"),
    "activations": ("aten::relu", "aten::relu_", "aten::clamp_min", "aten::clamp_min_", "aten::threshold_backward",
                    "aten::tanh", "aten::tanh_backward", "aten::sigmoid", "aten::sigmoid_backward",
                    "aten::leaky_relu", "aten::leaky_relu_backward"),
    "dense matrix products": ("aten::bmm", "aten::baddbmm", "aten::mm", "aten::addmm", "aten::matmul",
                              "aten::linear"),
    "loss": ("aten::_log_softmax", "aten::_log_softmax_backward_data", "aten::log_softmax", "aten::nll_loss_forward",
             "aten::nll_loss_backward", "aten::gather", "aten::scatter_add_", "aten::exp_", "aten::cross_entropy_loss"),
    "layout copies": ("aten::copy_", "aten::clone", "aten::cat", "aten::contiguous", "aten::_to_copy",
                      "aten::stack"),
    "allocation and fill": ("aten::empty", "aten::empty_strided", "aten::fill_", "aten::zero_", "aten::zeros",
                            "aten::full", "aten::full_like", "aten::new_zeros", "aten::new_empty",
                            "aten::resize_", "aten::empty_like", "aten::zeros_like"),
    "data gather": ("aten::index_select", "aten::index"),
}
KERNEL_SHARE = {kernel: share for share, kernels in SHARES.items() for kernel in kernels}


def profile_round(name, run, path_rows):
    """One round of ``run`` under torch.profiler (after two profiled warm-up rounds, so that the allocator has
    reached its working set): rows (engine, share or kernel, ms per round, fraction) for ``path_rows``."""
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    kept, faults = [], []
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=2, active=1),
                 on_trace_ready=lambda p: kept.append(p.key_averages())) as prof:
        for _ in range(3):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            with record_function("round"):
                run()
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
            prof.step()
    events = kept[-1]
    # the profiler's own allocations change how often glibc hands memory back: the profiled round's page faults
    path_rows.append((name, "page faults", "minor page faults in the profiled round", faults[-1], float("nan")))
    total = next(e.cpu_time_total for e in events if e.key == "round")
    shares, kernels = defaultdict(float), defaultdict(float)
    for e in events:
        if e.key.startswith("aten::") or e.key.startswith("mkldnn") or e.key.startswith("Optimizer"):
            kernels[e.key] += e.self_cpu_time_total
            shares[KERNEL_SHARE.get(e.key, "other kernels")] += e.self_cpu_time_total
    shares["other kernels"] = shares.get("other kernels", 0.0)  # the client update's arithmetic, the loss sums
    shares["python and dispatch (the rest)"] = max(total - sum(shares.values()), 0.0)
    for share, us in sorted(shares.items(), key=lambda kv: -kv[1]):
        path_rows.append((name, "share", share, us / 1e3, us / total))
    for kernel, us in sorted(kernels.items(), key=lambda kv: -kv[1])[:15]:
        path_rows.append((name, "kernel", kernel, us / 1e3, us / total))
    phases = {e.key: e.cpu_time_total for e in events if e.key.startswith("phase: ")}
    if phases:  # the vectorized engine: its steps, and their stacked gradients
        step, gradient = phases.get("phase: step", 0.0), phases.get("phase: gradient", 0.0)
        for what, us in [("steps (gradient and client update)", step), ("stacked gradient", gradient),
                         ("client update (vmapped local_step, less its gradient)", step - gradient),
                         ("outside the steps (stack set-up, write-back, local_final)", total - step)]:
            path_rows.append((name, "phase", what, us / 1e3, us / total))
    return total / 1e3


def _phases(engine):
    """Label a vectorized engine's steps and stacked gradients for the profiler."""
    from torch.profiler import record_function

    def labelled(label, fn):
        def run(*args):
            with record_function(label):
                return fn(*args)
        return run
    engine._step = labelled("phase: step", engine._step)
    engine.gradient.outside = labelled("phase: gradient", engine.gradient.outside)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="adult", choices=sorted(WORKLOADS))
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--engines", nargs="+", default=["plain", *ENGINES],
                        help="of plain, sequential, vectorized, compiled (vectorized with compile=True)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                        help="time passes by the wall clock or by the process's CPU seconds (use at 1 thread)")
    parser.add_argument("--profile", default=None, help="write a profile of one round per engine to this CSV")
    parser.add_argument("--clients", type=int, default=None, help="clients (default: the workload's)")
    parser.add_argument("--local-steps", type=int, default=None, help="K (default: the workload's)")
    parser.add_argument("--out", default=None, help="the result's CSV (default: benchmarks/results/<date>-engines-"
                                                    "<workload>/<device kind>.csv; never overwritten)")
    args = parser.parse_args()
    out = _results.claim(args.out or _results.default_path(f"engines-{args.workload}", args.device))
    if args.profile:
        _results.claim(args.profile)
    if args.threads:
        torch.set_num_threads(args.threads)
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    model, shape, classes, n_clients, steps = WORKLOADS[args.workload]
    n_clients, steps = args.clients or n_clients, args.local_steps or steps
    load = _results.load()
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
    times, faults = {name: [] for name in runners}, {name: [] for name in runners}
    for p in range(args.passes):
        order = list(runners)[p % len(runners):] + list(runners)[:p % len(runners)]
        for name in order:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = clock()
            runners[name]()
            times[name].append(clock() - start)
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    print(f"{args.workload}: {model} ({fm.dim:,} parameters), {n_clients} clients × K = {steps} × batch {batch}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, {device}, {args.clock} clock, "
          f"{args.passes} interleaved passes")
    base = statistics.median(times["plain"]) if "plain" in times else None
    reference = next(iter(results.values()))
    accuracy = {name: evaluate(fm, w0 + delta.mean(0), x, y, "classification")[0] for name, delta in results.items()}
    rows = []
    for name, ts in times.items():
        median = statistics.median(ts)
        ratio, paired = "", None
        if base:  # and the median of the passes' own ratios (each pass's engines ran back to back)
            paired = statistics.median(p / t for p, t in zip(times["plain"], ts))
            ratio = f"  {base / median:5.2f}× the plain loop (pass by pass {paired:5.2f}×)"
        error = (results[name] - reference).abs().max().item()
        rows.append({
            "benchmark": "engines", "workload": args.workload, "model": model, "parameters": fm.dim,
            "clients": n_clients, "local_steps": steps, "batch": batch, "samples_per_client": per_client, "lr": lr,
            "clock": args.clock, "passes": args.passes, "engine": name, "seconds_per_round": median,
            "passes_seconds": _results.passes(ts), "ratio_to_plain": base / median if base else "",
            "ratio_to_plain_pass_by_pass": paired if paired is not None else "",
            "clients_per_second": n_clients / median, "accuracy": accuracy[name],
            "reference_engine": next(iter(results)), "max_abs_update_diff": error,
            "page_faults_per_round": statistics.median(faults[name]),
            "compile_seconds": engines["compiled"].compile_seconds if name == "compiled" else ""})
        print(f"  {name:<11} {median:.4f} s/round{ratio}  {n_clients / median:7.1f} clients/s  accuracy "
              f"{accuracy[name]:.4f}  (passes: {', '.join(f'{t:.4f}' for t in ts)}; "
              f"max |Δ − Δ_{next(iter(results))}| = {error:.1e}; page faults/round "
              f"{statistics.median(faults[name]):,.0f})")
    machine = _results.machine_columns(args.device, load)
    _results.write_csv(out, [{**row, **machine} for row in rows])
    if args.profile:
        rows = []
        for name in runners:
            if name in ("vectorized", "compiled"):
                _phases(engines[name])
        for name, run in runners.items():
            print(f"  profiled {name}: {profile_round(name, run, rows):.1f} ms CPU in the profiled round")
        with open(args.profile, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["workload", "threads", "engine", "kind", "name", "ms_per_round", "fraction"])
            for name, kind, what, ms, fraction in rows:
                out.writerow([args.workload, torch.get_num_threads(), name, kind, what,
                              f"{ms:.2f}" if kind != "page faults" else ms, f"{fraction:.3f}"])
        for name, kind, what, ms, fraction in rows:
            if kind not in ("kernel", "page faults") and fraction >= 0.01:
                print(f"    {name:<11} {what:<32} {ms:8.1f} ms  {100 * fraction:5.1f} %")


if __name__ == "__main__":
    main()
