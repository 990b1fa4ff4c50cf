"""The benchmarks under benchmarks/ write their result to a file with the machine described, and never overwrite one:
each is run once, as ``python benchmarks/<name>.py`` from the repository root, at its smallest size."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINE = ("device", "cpu", "cpu_capability", "torch", "threads", "commit", "uncommitted", "started", "load_before",
           "load_after")


def bench(script: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, f"benchmarks/{script}", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def machine_filled(row: dict) -> None:
    for column in MACHINE:
        assert row[column] != "", column
    assert row["device"] == "cpu" and row["gpu"] == "" and int(row["threads"]) == 1
    assert len(row["load_before"].split()) == 3 and len(row["load_after"].split()) == 3


def positive(row: dict, *columns: str) -> None:
    for column in columns:
        assert float(row[column]) > 0, column


def refused(script: str, out: Path, *args) -> None:
    """A second run to the same file stops before measuring, naming it in one line; the file is left as it was."""
    before = out.read_bytes()
    done = bench(script, *args, "--out", out, timeout=60)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == f"{out} exists: not overwritten (pass another --out)"
    assert "written" not in done.stdout and out.read_bytes() == before


def test_engines_writes_one_row_per_engine(tmp_path):
    out = tmp_path / "engines.csv"
    args = ["--workload", "adult", "--passes", "2", "--clients", "2", "--local-steps", "2", "--threads", "1",
            "--engines", "plain", "sequential", "vectorized"]
    done = ok(bench("engines.py", *args, "--out", out))
    assert "s/round" in done.stdout and f"written: {out}" in done.stdout
    rows = read(out)
    assert [r["engine"] for r in rows] == ["plain", "sequential", "vectorized"]
    for row in rows:
        machine_filled(row)
        positive(row, "seconds_per_round", "ratio_to_plain", "ratio_to_plain_pass_by_pass", "clients_per_second",
                  "parameters")
        assert len(row["passes_seconds"].split()) == 2 and all(float(t) > 0 for t in row["passes_seconds"].split())
        assert (row["workload"], row["clients"], row["local_steps"], row["passes"]) == ("adult", "2", "2", "2")
        assert 0 <= float(row["max_abs_update_diff"]) < 1e-5 and row["reference_engine"] == "plain"
    assert float(rows[0]["ratio_to_plain"]) == 1.0
    refused("engines.py", out, *args)


@pytest.mark.parametrize("dataset", ["synthetic", pytest.param("adult", marks=pytest.mark.shared_data)])
def test_seeds_writes_one_row_per_job(tmp_path, dataset):
    out = tmp_path / "seeds.csv"
    args = ["--rounds", "1", "--passes", "1", "--seeds", "2", "--clients", "4", "--local-steps", "2",
            "--dataset", dataset]
    done = ok(bench("seeds.py", *args, "--out", out))
    assert "seeds cost" in done.stdout
    rows = read(out)
    assert [(r["job"], r["seeds"]) for r in rows] == [("one seed", "1"), ("2 seeds together", "2")]
    for row in rows:
        machine_filled(row)
        positive(row, "seconds_per_run", "passes_seconds", "cost_in_one_seed_runs", "speedup_over_one_by_one")
        assert (row["dataset"], row["rounds"], row["clients"], row["local_steps"]) == (dataset, "1", "4", "2")
    assert float(rows[0]["cost_in_one_seed_runs"]) == 1.0
    refused("seeds.py", out, *args)


def test_backends_writes_one_row_per_backend(tmp_path):
    out = tmp_path / "backends.csv"
    args = ["--backends", "sequential", "vectorized", "--passes", "1", "--rounds", "1", "--clients", "2",
            "--local-steps", "1"]
    done = ok(bench("backends.py", *args, "--out", out, timeout=180))
    assert "sequential: final accuracy" in done.stdout and "vectorized: final accuracy" in done.stdout
    rows = read(out)
    assert [r["backend"] for r in rows] == ["sequential", "vectorized"]
    for row in rows:
        machine_filled(row)
        positive(row, "seconds_per_run", "passes_seconds", "ratio_to_reference", "ratio_to_reference_pass_by_pass")
        assert 0 <= float(row["final_accuracy"]) <= 1 and row["reference_backend"] == "sequential"
        assert (row["rounds"], row["clients"], row["local_steps"]) == ("1", "2", "1")
    assert float(rows[0]["ratio_to_reference"]) == 1.0
    refused("backends.py", out, *args)


def test_gpu_determinism_on_a_cpu_writes_the_machine(tmp_path):
    out = tmp_path / "determinism.csv"
    args = ["notebooks/taco/fig1_fig3_toy.ipynb", "--device", "cpu", "--rounds", "1"]
    ok(bench("gpu_determinism.py", *args, "--out", out))
    rows = read(out)
    assert rows
    for row in rows:
        machine_filled(row)
        assert row["strict"] == "ok" and row["equal_cudnn_det_False"] == row["equal_cudnn_det_True"] == "True"
    refused("gpu_determinism.py", out, *args)


def test_cuda_graphs_dry_run_writes_the_machine(tmp_path):
    out = tmp_path / "graphs.json"
    args = ["--device", "cpu", "--passes", "1", "--clients", "2", "--seeds", "1"]
    ok(bench("cuda_graphs.py", *args, "--out", out))
    report = json.loads(out.read_text())
    machine_filled({key: "" if value is None else str(value) for key, value in report["machine"].items()})
    assert set(report["seconds_per_round"]) == {"shrinking", "static", "plain"}
    assert all(t > 0 for t in report["seconds_per_round"].values())
    refused("cuda_graphs.py", out, *args)


@pytest.mark.parametrize("notebook, engine", [
    ("taco/fig1_fig3_toy", "sequential"),  # a quadratic toy: no data root needed
    pytest.param("feddual/table2_fig8_ablation", "vectorized", marks=pytest.mark.shared_data)])
def test_plan_engines_writes_auto_beside_sequential_per_notebook(tmp_path, notebook, engine):
    out = tmp_path / "plan.csv"
    args = [f"notebooks/{notebook}.ipynb", "--scale", "ci"]
    ok(bench("plan_engines.py", *args, "--out", out, timeout=300))
    [row] = read(out)
    machine_filled(row)
    assert (row["notebook"], row["auto_engine"], row["scale"]) == (notebook, engine, "ci") and int(row["runs"]) > 0
    positive(row, "auto_minutes", "sequential_minutes", "ratio")
    saved = float(row["sequential_minutes"]) - float(row["auto_minutes"])
    assert float(row["minutes_saved"]) == pytest.approx(saved, abs=0.002)
    if engine == "sequential":
        assert float(row["ratio"]) == 1.0
    refused("plan_engines.py", out, *args)


@pytest.mark.shared_data
def test_threads_writes_one_row_per_setting(tmp_path):
    out = tmp_path / "threads.csv"
    args = ["--passes", "1", "--local-steps", "1", "--beside", "the test suite"]
    ok(bench("threads.py", *args, "--out", out, timeout=300))
    rows = read(out)
    assert [(r["torch_threads"], r["omp_wait_policy"]) for r in rows] == [("1", "(default)"), ("2", "(default)"),
                                                                          ("2", "PASSIVE")]
    for row in rows:
        machine_filled(row)
        positive(row, "median_s_per_round", "vs_1_thread", "passes_s")
        assert (row["beside"], row["local_steps"], row["seeds_stacked"]) == ("the test suite", "1", "2")
    assert float(rows[0]["vs_1_thread"]) == 1.0
    refused("threads.py", out, *args)


def test_the_default_path_is_dated_per_benchmark_and_device():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _results
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    path = _results.default_path("seeds", "cuda:1")
    assert path.parent.parent == ROOT / "benchmarks" / "results" and path.name == "cuda.csv"
    assert path.parent.name.endswith("-seeds") and len(path.parent.name) == len("2026-11-27-seeds")
