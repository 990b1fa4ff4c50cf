"""Where a result came from: the code (fedkit's commit and its uncommitted changes) and the machine that trained it
(device and GPU model, torch, threads, CPU, and the vector instructions torch's CPU kernels dispatch to, which a CPU's
model name such as "AMD EPYC" does not fix). A finished run's History and a figure's CSV both record it."""
from __future__ import annotations

import platform
import subprocess
from functools import cache
from pathlib import Path


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.rstrip() if done.returncode == 0 else None


@cache
def code_state() -> tuple[str | None, tuple[str, ...]]:
    """The commit of the fedkit checkout and its uncommitted changes under fedkit/ (none outside a checkout), read
    once per process: the code that process runs."""
    root = Path(__file__).resolve().parent.parent
    changed = (_git(root, "status", "--porcelain", "--", "fedkit") or "").splitlines()
    return _git(root, "rev-parse", "HEAD"), tuple(changed[:20])


@cache
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(device: str) -> dict:
    """The training machine as a run's provenance records it."""
    import torch

    gpu = None
    if device.startswith("cuda") and torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(torch.device(device))
    commit, uncommitted = code_state()
    return {"device": device, "gpu": gpu, "cpu": _cpu_model(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "commit": commit, "uncommitted": bool(uncommitted)}


code_state()  # at import, before any run: a run finishing after the checkout moved on still names the code it ran
