"""fedkit's OpenMP wait policy: threads sleep between parallel regions unless the user chose otherwise (spinning
threads slowed a 2-thread round 3.3x beside other jobs; benchmarks/results/2026-11-28-threads/)."""
import os
import subprocess
import sys

import pytest

PROGRAM = "import fedkit, torch; torch.ones(8).sum()"


def openmp_spin_count(env: dict) -> int:
    """How many times the OpenMP runtime under torch lets an idle thread spin before it sleeps, as that runtime
    reports it (libgomp's verbose OMP_DISPLAY_ENV: 0 under OMP_WAIT_POLICY=PASSIVE, 300000 when it is unset)."""
    err = subprocess.run([sys.executable, "-c", PROGRAM], env={**env, "OMP_DISPLAY_ENV": "VERBOSE"},
                         capture_output=True, text=True, check=True).stderr
    lines = [line for line in err.splitlines() if line.strip().startswith("GOMP_SPINCOUNT")]
    if not lines:
        pytest.skip("this torch's OpenMP runtime is not libgomp, or does not display its settings")
    return int(lines[0].split("=")[1].strip().strip("'"))


def test_openmp_threads_sleep_at_once_by_default():
    assert openmp_spin_count({k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}) == 0


def test_a_wait_policy_the_user_set_wins():
    assert openmp_spin_count({**os.environ, "OMP_WAIT_POLICY": "ACTIVE"}) > 300000
