"""Precompute (fedkit figures --precompute): listing, grouping, the run cache and the deadline; TACO's step clock and
data check; a ledger Measure's seed column and empty selections."""
import csv
import itertools
import math
import os
import pickle
import re
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

import fedkit.precompute as pc
from fedkit import archive, runner
from fedkit.errors import FedkitError
from fedkit.history import History
from fedkit.ledger import Measure
from fedkit.papers import taco
from fedkit.plan import Planner
from fedkit.precompute import DeadlineReached, _stop_at, _train, listed_groups, precompute

NOTEBOOKS = Path(__file__).parents[1] / "notebooks" / "taco"
SHAKESPEARE, TOY = NOTEBOOKS / "table5_fig4_fig5_shakespeare.ipynb", NOTEBOOKS / "fig1_fig3_toy.ipynb"
PREFIX = "taco/table5_fig4_fig5_shakespeare/"
TOY_RUN = "uniform correction/γ=0.0"
LOG_COLUMNS = ["runs", "algorithm", "dataset", "seeds", "keys", "device", "workers", "final %", "status", "seconds"]


class InlinePool:
    """ProcessPoolExecutor in this process (a spawned worker imports torch for seconds); arguments are pickled as
    they would be for a worker."""
    made = []

    def __init__(self, workers, mp_context):
        InlinePool.made.append((workers, mp_context.get_start_method()))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args):
        future = Future()
        future.set_result(fn(*pickle.loads(pickle.dumps(args))))
        return future


@pytest.fixture
def inline(monkeypatch, tmp_path):
    monkeypatch.setenv("FEDKIT_CACHE", str(tmp_path / "runs"))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the workers share the cores out
    monkeypatch.setattr(pc, "ProcessPoolExecutor", InlinePool)
    threads = []
    monkeypatch.setattr(torch, "set_num_threads", threads.append)  # _train's setting must not leak into the session
    InlinePool.made.clear()
    return threads


def fake_clock(monkeypatch):  # precompute's clock: 1000 s, then one second more at each reading
    monkeypatch.setattr(pc, "time", SimpleNamespace(time=itertools.count(1000.0).__next__))


def test_listed_groups_group_seeds_put_conditional_runs_last_filter_and_skip_missing_data(monkeypatch):
    original = taco.runs
    real = original(SHAKESPEARE.stem, "ci")
    assert len(real) == 8 and list(real)[-1] == "seed 0/shakespeare/TACO, detection off?"

    def two_seeds_reversed(notebook, scale, seed=0, device="cpu"):  # the '?' run listed first, each at seeds 0, 1
        listed = dict(reversed(original(notebook, scale, seed, device).items()))
        return listed | {k.replace("seed 0/", "seed 1/"): c.replace(seed=1) for k, c in listed.items()}
    monkeypatch.setattr(taco, "runs", two_seeds_reversed)
    groups, skipped = listed_groups([SHAKESPEARE], "ci", "cpu")
    assert skipped == {}
    methods = ["TACO", "FedACG", "STEM", "Scaffold", "FoolsGold", "FedProx", "FedAvg", "TACO, detection off?"]
    assert [g.labels for g in groups] == [[f"{PREFIX}seed {s}/shakespeare/{m}" for s in (0, 1)] for m in methods]
    assert [g.conditional for g in groups] == [False] * 7 + [True]
    for g, m in zip(groups, methods):
        assert [c.seed for c in g.configs] == [0, 1] and g.configs[0] == real[f"seed 0/shakespeare/{m}"]
        assert g.configs[1].replace(seed=0) == g.configs[0] and g.configs[0].dataset == "mnist_5k"

    monkeypatch.setattr(Planner, "missing", lambda self, cfg: "gone" if cfg.algorithm == "fedprox" else None)
    groups, skipped = listed_groups([SHAKESPEARE], "ci", "cpu", match=r"/seed 1/.*/Fed")
    assert skipped == {"mnist_5k": "gone"}
    assert [g.labels for g in groups] == [[f"{PREFIX}seed 1/shakespeare/{m}"] for m in ("FedACG", "FedAvg")]
    assert [[c.seed for c in g.configs] for g in groups] == [[1], [1]]


def test_precompute_trains_a_group_into_the_cache_logs_it_then_reads_it_back(inline, tmp_path, monkeypatch):
    log, match = tmp_path / "log.csv", f"fig1_fig3_toy/{TOY_RUN}$"
    cfg = taco.runs(TOY.stem, "ci")[TOY_RUN]
    [row] = precompute([TOY], "ci", workers=1, match=match, log=log)
    entry = tmp_path / "runs" / cfg.key()
    assert row["status"] == "done" and (entry / "meta.json").exists() and not (entry / "checkpoint.pt").exists()
    assert InlinePool.made == [(1, "spawn")] and inline == [max(1, os.cpu_count() or 1)]
    h = History.load(entry)
    assert h.rounds["round"].tolist() == list(range(16)) and h.config == cfg.to_dict()
    expected = {"runs": f"taco/fig1_fig3_toy/{TOY_RUN}", "algorithm": "taco", "dataset": "quadratic", "seeds": "0",
                "keys": cfg.key(), "device": "cpu", "workers": 1, "final %": f"{100 * h.final_accuracy:.2f}"}
    assert list(row) == LOG_COLUMNS and {k: row[k] for k in expected} == expected
    with open(log, newline="") as f:
        [logged] = list(csv.DictReader(f))
    assert list(logged) == LOG_COLUMNS and logged["keys"] == cfg.key() and logged["status"] == "done"

    stamp = (entry / "meta.json").stat().st_mtime_ns
    monkeypatch.setattr(runner, "Federation", None)  # a cache hit builds no federation: calling None would raise
    [again] = precompute([TOY], "ci", workers=1, match=match, log=log)
    assert again["status"] == "done" and again["final %"] == row["final %"]
    assert (entry / "meta.json").stat().st_mtime_ns == stamp
    with open(log, newline="") as f:
        assert [r["status"] for r in csv.DictReader(f)] == ["done", "done"]  # appended, one header
    assert _train([cfg.to_dict()], deadline=0.0, threads=1)["status"] == "done"  # past the deadline, but cached


def test_precompute_with_archive_adds_each_finished_group_to_its_notebooks_archive(inline, tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    runs = taco.runs(TOY.stem, "ci")
    other = next(label for label in runs if label != TOY_RUN)
    precompute([TOY], "ci", match=f"fig1_fig3_toy/{TOY_RUN}$")
    assert not (tmp_path / "figures").exists()  # without archive: the cache only
    precompute([TOY], "ci", match=f"fig1_fig3_toy/{TOY_RUN}$", archive=True)  # a cached run is archived too
    path = tmp_path / "figures" / "taco" / "runs" / f"{TOY.stem}.parquet"
    assert list(archive.read(path)) == [runs[TOY_RUN].key()]
    precompute([TOY], "ci", match=f"fig1_fig3_toy/{re.escape(other)}$", archive=True)
    back = archive.read(path)
    assert sorted(back) == sorted([runs[TOY_RUN].key(), runs[other].key()])  # the first run stays
    trained = History.load(tmp_path / "runs" / runs[other].key())
    pd.testing.assert_frame_equal(back[runs[other].key()].rounds, trained.rounds)
    assert pc.archives_of(pc.Group([], ["feddual/t1/a", "feddual/t1/b", "taco/t6/c"]), "paper") == [
        (str(tmp_path / "figures" / "feddual" / "paper"), "t1"), (str(tmp_path / "figures" / "taco" / "paper"), "t6")]


def test_precompute_trains_an_archived_run_again_where_its_notebook_reads_the_model(inline, tmp_path, monkeypatch):
    from fedkit import derived

    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    cfg, match = taco.runs(TOY.stem, "ci")[TOY_RUN], f"fig1_fig3_toy/{TOY_RUN}$"
    archive.write(tmp_path / "figures" / "taco", TOY.stem, {cfg.key(): runner.run(cfg, cache=False, progress=False)})
    entry = tmp_path / "runs" / cfg.key() / "meta.json"
    monkeypatch.setattr(taco, "MODELS", set())
    [read] = precompute([TOY], "ci", match=match)
    assert read["status"] == "done" and not entry.exists()  # read from the archive: nothing trained
    monkeypatch.setattr(taco, "MODELS", {TOY.stem})
    monkeypatch.setattr(derived, "runs_with_tables", lambda figures: set())
    [group] = listed_groups([TOY], "ci", "cpu", match=match)[0]
    assert group.models
    [trained] = precompute([TOY], "ci", match=match)
    assert trained["status"] == "done" and entry.exists()  # trained into the cache: its model is at hand
    monkeypatch.setattr(derived, "runs_with_tables", lambda figures: {cfg.key()})  # a table from it is archived
    assert not listed_groups([TOY], "ci", "cpu", match=match)[0][0].models


def test_stop_at_raises_only_after_its_deadline():
    assert _stop_at(pc.time.time() + 60)({"round": 3}, None) is None
    with pytest.raises(DeadlineReached, match=r"^stopped after round 3$"):
        _stop_at(pc.time.time() - 1)({"round": 3}, None)
    assert _stop_at(pc.time.time() + 60, os.getppid())({"round": 3}, None) is None  # its parent is alive
    with pytest.raises(DeadlineReached, match="the precompute that started it is gone"):
        _stop_at(pc.time.time() + 60, os.getppid() + 1)({"round": 3}, None)  # not its parent: as if it died
    assert _stop_at(pc.time.time() - 1, last=3)({"round": 3}, None) is None  # its last round: let it be saved


def test_train_past_its_deadline_starts_nothing_and_cut_off_keeps_the_checkpoint(inline, tmp_path, monkeypatch):
    cfg = taco.runs(TOY.stem, "ci")[TOY_RUN]
    late = _train([cfg.to_dict()], pc.time.time() - 1, threads=1)
    assert late == {"status": "not started (deadline)", "seconds": 0.0} and not (tmp_path / "runs").exists()
    fake_clock(monkeypatch)  # starts at 1000; rounds 1, 2 end at 1001, 1002: the deadline 1001.5 falls between
    cut = _train([cfg.to_dict()], 1001.5, threads=1)
    assert cut == {"status": "cut off at the deadline, stopped after round 2; its checkpoint is kept", "seconds": 3.0}
    entry = tmp_path / "runs" / cfg.key()
    assert (entry / "checkpoint.pt").exists() and not (entry / "meta.json").exists()


def test_precompute_past_the_deadline_and_bad_workers(inline, monkeypatch):
    fake_clock(monkeypatch)  # the deadline is 1000 + 0 minutes, the group would start at 1001
    [row] = precompute([TOY], "ci", workers=1, minutes=0, match=f"{TOY_RUN}$")
    assert row["status"] == "not started (deadline)" and row["seconds"] == 0.0 and row["final %"] == ""
    with pytest.raises(FedkitError, match="workers must be at least 1, got 0"):
        precompute([TOY], "ci", workers=0)


def test_worker_threads_follow_omp_num_threads_where_set_else_share_the_cores(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert (pc.worker_threads(1), pc.worker_threads(3), pc.worker_threads(16)) == (8, 2, 1)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # one thread beside other work, whatever the workers
    assert (pc.worker_threads(1), pc.worker_threads(2)) == (1, 1)
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("OMP_NUM_THREADS", bad)
        with pytest.raises(FedkitError, match=f"OMP_NUM_THREADS='{bad}' is not a positive whole number"):
            precompute([TOY], "ci")


def history() -> History:
    rounds = pd.DataFrame({"round": [0, 1, 2, 3], "test_accuracy": [0.1, 0.4, 0.5, 0.7],
                           "client_seconds_max": [np.nan, 9.0, 9.0, 9.0]})
    clients = pd.DataFrame({"round": [1, 1, 2, 2, 3, 3], "client": [0, 1] * 3, "steps": [5, 3, 2, 7, 4, 4]})
    return History(config={}, rounds=rounds, clients=clients)


def test_clocked_times_each_round_by_its_largest_step_count():
    h = history()
    out = taco.clocked(h, 0.5)
    assert math.isnan(out.rounds["client_seconds_max"][0])
    assert out.rounds["client_seconds_max"].tolist()[1:] == [2.5, 3.5, 2.0]
    assert out.rounds[["round", "test_accuracy"]].equals(h.rounds[["round", "test_accuracy"]])
    assert out.clients.equals(history().clients) and h.rounds.equals(history().rounds)  # the input is unchanged
    assert h.time_to(0.5) == 18.0 and out.time_to(0.5) == 6.0


def test_on_clock_reads_each_runs_step_seconds_and_names_a_missing_method():
    clock = pd.DataFrame({"dataset": ["fmnist", "fmnist", "svhn"], "method": ["FedAvg", "TACO", "FedAvg"],
                          "step_seconds": [0.5, 2.0, 10.0], "seed": 0})
    keys = [(("fmnist", "FedAvg"), 0), (("fmnist", "TACO"), 1), (("svhn", "FedAvg"), 0)]
    out = taco.on_clock({k: history() for k in keys}, clock)  # measured at one seed: it times every seed
    assert list(out) == keys
    assert [out[k].rounds["client_seconds_max"].tolist()[1:] for k in keys] == [[2.5, 3.5, 2.0], [10.0, 14.0, 8.0],
                                                                                 [50.0, 70.0, 40.0]]
    with pytest.raises(FedkitError, match="no row for STEM on fmnist at seed 0"):
        taco.on_clock({(("fmnist", "STEM"), 0): history()}, clock)
    per_seed = pd.DataFrame({"dataset": "fmnist", "method": "FedAvg", "step_seconds": [0.5, 1.0], "seed": [0, 1]})
    assert taco.step_seconds(per_seed, "fmnist", "FedAvg", 1) == 1.0  # each seed its own measurement
    with pytest.raises(FedkitError, match="at seed 2"):
        taco.step_seconds(per_seed, "fmnist", "FedAvg", 2)
    with pytest.raises(FedkitError, match="more than one row"):
        taco.step_seconds(pd.concat([per_seed, per_seed]), "fmnist", "FedAvg", 0)


def test_available_says_which_data_is_here(monkeypatch):
    assert taco.available(["fmnist", "adult"], "ci") == (["fmnist", "adult"], {})
    monkeypatch.setattr(Planner, "missing", lambda self, cfg: "no synthetic" if cfg.dataset == "synthetic" else None)
    assert taco.available(["fmnist", "adult"], "ci") == (["fmnist"], {"adult": "no synthetic"})


def test_measure_reads_a_frame_without_its_seed_column_as_one_seed_and_rejects_an_empty_selection():
    m = Measure("t.csv", "acc")
    one = m.raw(pd.DataFrame({"method": ["A", "B"], "acc": [0.25, 0.5]}))
    assert one.index.tolist() == [0] and one.columns.tolist() == ["A", "B"] and one.loc[0].tolist() == [0.25, 0.5]
    seeded = m.raw(pd.DataFrame({"seed": [0, 0, 3, 3], "method": ["A", "B"] * 2, "acc": [0.25, 0.5, 0.75, 1.0]}))
    assert seeded.index.tolist() == [0, 3] and seeded.to_numpy().tolist() == [[0.25, 0.5], [0.75, 1.0]]
    rounds = pd.DataFrame({"method": ["A"] * 3, "round": [1, 2, 3], "acc": [0.1, 0.2, 0.3], "phase": ["x"] * 3})
    assert Measure("t.csv", "acc", reduce="last").raw(rounds).loc[0, "A"] == 0.3
    with pytest.raises(FedkitError, match=r"t\.csv: no rows where \{'phase': 'y'\}"):
        Measure("t.csv", "acc", reduce="last", where={"phase": "y"}).raw(rounds)
