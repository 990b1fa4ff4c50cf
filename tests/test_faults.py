"""Faults around the run cache: messages that say what was done, killed precomputes, concurrent and extended runs."""
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest
import torch

from fedkit import Config, run
from fedkit.errors import FedkitError
from fedkit.history import History
from fedkit.runner import rounds_left


def tiny(**changes) -> Config:
    base = dict(dataset="digits", partition="dirichlet", partition_args={"phi": 0.3, "min_size": 5}, num_clients=6,
                clients_per_round=3, model="mlp", model_args={"hidden": [16]}, rounds=2, local_steps=2,
                batch_size=16, lr=0.3, seed=1)
    return Config(**{**base, **changes})


def test_a_corrupt_cached_run_warning_says_where_it_was_moved_not_what_to_do(tmp_path):
    cfg = tiny()
    run(cfg, cache=tmp_path, progress=False)
    entry = tmp_path / cfg.key()
    (entry / "meta.json").write_text("{not json")
    with pytest.raises(FedkitError) as raised:
        History.load(entry)
    assert "delete" not in str(raised.value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(cfg, cache=tmp_path, progress=False)
    [aside] = tmp_path.glob(f"{cfg.key()}.corrupt-*")
    [message] = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert message.startswith(f"saved history file {entry / 'meta.json'} is unreadable (")
    assert message.endswith(f"; moved the cached run aside to {aside}")
    assert "delete" not in message and (entry / "meta.json").exists()


# ---- a killed precompute takes its workers with it
SLOW_TRAIN = """
import os, pathlib, time
def train(configs, deadline, threads, parent, archive_to, models):  # a group that trains for ten minutes
    pathlib.Path(os.environ["STARTED"], str(os.getpid())).touch()
    time.sleep(600)
"""
PRECOMPUTE = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job starts with SIGINT ignored
import fedkit.precompute as pc, slow_train
from fedkit import Config
cfg = Config(dataset="digits", model="mlp", rounds=1)
pc.listed_groups = lambda *args: ([pc.Group([cfg]), pc.Group([cfg.replace(seed=1)])], {})
pc._train = slow_train.train
pc.precompute([], "ci", workers=2)
"""


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def wait_until(condition, limit: float = 120.0) -> bool:
    """Poll ``condition`` until it holds or ``limit`` seconds pass (a safeguard, not a speed check)."""
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_a_killed_precompute_leaves_no_worker_or_resource_tracker_behind(tmp_path, sig):
    (tmp_path / "slow_train.py").write_text(SLOW_TRAIN)
    started = tmp_path / "started"
    started.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "STARTED": str(started), "FEDKIT_CACHE": str(tmp_path / "runs")}
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(PRECOMPUTE)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kids = []
    try:
        assert wait_until(lambda: len(list(started.iterdir())) == 2 or parent.poll() is not None)
        assert parent.poll() is None, "the precompute ended before both workers started"
        kids = children(parent.pid)
        assert len(kids) == 3  # two workers and multiprocessing's resource tracker
        parent.send_signal(sig)
        parent.wait(timeout=120)
        assert wait_until(lambda: not any(alive(k) for k in kids)), [k for k in kids if alive(k)]
    finally:
        for pid in [parent.pid, *kids]:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


# ---- one process at a time trains a cache entry
def test_a_second_process_running_the_same_config_waits_and_reads_the_first_ones_result(tmp_path):
    from fedkit.runner import Run, _entries_locked

    cfg = tiny()
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; from fedkit import Config, run; "
         "h = run(Config.from_dict(eval(sys.argv[1])), cache=sys.argv[2], progress=False); "
         "print(h.rounds['seconds'].tolist())", repr(cfg.to_dict()), str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with _entries_locked([cfg], tmp_path):  # this process holds the entry, as a run training it would
            said = child.stderr.readline()
            assert said == f"fedkit: run {cfg.key()} is being trained by process {os.getpid()}; waiting for it to " \
                           "finish\n"
            r = Run(cfg, cache=tmp_path, progress=False)
            r.train_alone()
            trained = r.finish()
        out, err = child.communicate(timeout=300)
    finally:
        child.kill()
    assert child.returncode == 0, err
    assert err == ""  # it neither trained nor resumed: it read the finished run
    assert out == f"{trained.rounds['seconds'].tolist()}\n"  # the wall seconds of this process's training
    assert list(tmp_path.glob(".*.lock")) == []


# ---- a longer run goes on from a finished shorter one where the round count changes nothing before
TIMING = ["seconds", "client_seconds_max", "client_seconds_sum", "sim_seconds"]


def same_history(a, b) -> None:
    pd.testing.assert_frame_equal(a.rounds.drop(columns=TIMING), b.rounds.drop(columns=TIMING), check_exact=True)
    pd.testing.assert_frame_equal(a.clients.drop(columns="seconds"), b.clients.drop(columns="seconds"),
                                  check_exact=True)
    assert torch.equal(a.weights, b.weights) and sorted(a.models) == sorted(b.models)
    assert all(torch.equal(a.models[t], b.models[t]) for t in a.models)


def test_a_longer_run_goes_on_from_the_longest_finished_shorter_one(tmp_path, capsys):
    # SCAFFOLD's control variates are state the longer run needs; round 3 is tested and kept only as the last
    cfg = tiny(algorithm="scaffold", rounds=5, eval_every=2, snapshots=2, lr_schedule="step",
               lr_schedule_args={"every": 2, "gamma": 0.5})
    for rounds in (2, 3):
        run(cfg.replace(rounds=rounds), cache=tmp_path, progress=False)
    assert (tmp_path / cfg.replace(rounds=3).key() / "final.pt").exists()
    assert rounds_left(cfg, tmp_path) == 2
    capsys.readouterr()
    longer = run(cfg, cache=tmp_path, progress=False)
    assert capsys.readouterr().err == (f"fedkit: scaffold run {cfg.key()} goes on from the finished 3-round run "
                                       f"{cfg.replace(rounds=3).key()} after round 3 of 5\n")
    assert longer.provenance["resumed_after_round"] == 3
    assert [seg["rounds"] for seg in longer.provenance["segments"]] == [[1, 2], [3, 3], [4, 5]]  # 3 went on from 2
    same_history(longer, run(cfg, cache=False, progress=False))
    assert sorted(longer.models) == [2, 4, 5]


@pytest.mark.parametrize("changes,why", [
    ({"lr_schedule": "cosine"}, "the round count sets its lr_schedule 'cosine'"),
    ({"algorithm": "taco"}, "the round count sets taco's lam 1 → 2"),  # λ = ⌈T/5⌉
])
def test_a_longer_run_whose_first_rounds_depend_on_the_round_count_starts_again_and_says_why(tmp_path, capsys,
                                                                                            changes, why):
    cfg = tiny(rounds=6, **changes)
    run(cfg.replace(rounds=5), cache=tmp_path, progress=False)
    assert rounds_left(cfg, tmp_path) == 6
    capsys.readouterr()
    longer = run(cfg, cache=tmp_path, progress=False)
    assert capsys.readouterr().err == (f"fedkit: {cfg.algorithm} run {cfg.key()} starts at round 1, not after the "
                                       f"finished 5-round run {cfg.replace(rounds=5).key()}: {why}\n")
    assert longer.provenance["resumed_after_round"] == 0
    same_history(longer, run(cfg, cache=False, progress=False))


def test_a_run_that_stopped_early_keeps_no_final_state_to_go_on_from(tmp_path, capsys):
    diverged = tiny(lr=1e10, rounds=1)  # stopped in its last round
    assert run(diverged, cache=tmp_path, progress=False).diverged
    assert not (tmp_path / diverged.key() / "final.pt").exists()
    capsys.readouterr()
    run(diverged.replace(rounds=3), cache=tmp_path, progress=False)
    assert capsys.readouterr().err == ""  # it trained from round 1 without a word: nothing to go on from


def test_an_unfinished_run_carried_to_the_next_machine_resumes_there(tmp_path):
    """``fedkit cache carry`` keeps an unfinished run's newest checkpoint; ``restore`` on a fresh cache resumes it,
    and the run then equals one trained straight through."""
    from fedkit.cache import carry, restore
    from fedkit.runner import Run

    cfg = Config(dataset="digits", partition="iid", partition_args={}, num_clients=4, model="mlp",
                 model_args={"hidden": [16]}, rounds=4, local_steps=2, batch_size=16, lr=0.3, seed=3)
    cut = Run(cfg, cache=tmp_path / "first", progress=False)
    for rnd in cut.fed.rounds(cut.state):
        cut.record(rnd)
        if cut.state.t == 2:
            break  # the session ends: two rounds checkpointed, the run unfinished
    assert carry(tmp_path / "first", tmp_path / "carry") == [(cfg.key(), 2)]
    assert restore(tmp_path / "carry", tmp_path / "second") == [(cfg.key(), 2)]
    assert restore(tmp_path / "carry", tmp_path / "second") == []  # the cache already holds that round
    resumed = run(cfg, cache=tmp_path / "second", progress=False)
    straight = run(cfg, cache=tmp_path / "third", progress=False)
    pd.testing.assert_frame_equal(resumed.rounds.drop(columns=TIMING), straight.rounds.drop(columns=TIMING))
    assert resumed.provenance["resumed_after_round"] == 2
    assert [seg["rounds"] for seg in resumed.provenance["segments"]] == [[1, 2], [3, 4]]


def test_a_checkpoint_written_before_segments_were_recorded_resumes_with_its_rounds_marked_unrecorded(tmp_path):
    from fedkit.runner import Run, _read_checkpoint, _save_checkpoint

    cfg = tiny(rounds=3)
    cut = Run(cfg, cache=tmp_path, progress=False)
    cut.record(next(iter(cut.fed.rounds(cut.state))))
    saved = _read_checkpoint(tmp_path / cfg.key() / "checkpoint.pt")
    assert [seg["rounds"] for seg in saved.pop("segments")] == [[1, 1]]
    (tmp_path / cfg.key() / "checkpoint.pt").unlink()
    _save_checkpoint(tmp_path / cfg.key(), saved, cfg)  # as an older fedkit wrote it
    resumed = run(cfg, cache=tmp_path, progress=False)
    first, second = resumed.provenance["segments"]
    assert first == {"rounds": [1, 1], "recorded": False} and second["rounds"] == [2, 3]
