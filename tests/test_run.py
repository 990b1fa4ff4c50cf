"""The round loop: engines agree, seeds fix everything, divergence is recorded, runs resume exactly."""
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from fedkit import Config, ConfigError, run
from fedkit.federation import Federation

TIMING = ["seconds", "client_seconds_max", "client_seconds_sum", "sim_seconds"]


def digits_config(**changes) -> Config:
    base = dict(dataset="digits", partition="dirichlet", partition_args={"phi": 0.3, "min_size": 5},
                num_clients=8, clients_per_round=5, model="mlp", model_args={"hidden": [32]}, rounds=3,
                local_steps=4, batch_size=16, lr=0.3, seed=1)
    return Config(**{**base, **changes})


def results(h) -> pd.DataFrame:
    return h.rounds.drop(columns=[*TIMING, "engine"], errors="ignore")


def client_results(h) -> pd.DataFrame:
    return h.clients.drop(columns=["seconds"])


@pytest.mark.parametrize("algorithm,args", [("fedavg", {}), ("fedprox", {"mu": 0.1}), ("scaffold", {})])
def test_engines_give_the_same_history(algorithm, args):
    # local_epochs gives every client its own K_i, so the vectorized engine's masking is exercised too
    cfg = digits_config(algorithm=algorithm, algorithm_args=args, local_steps=None, local_epochs=1)
    seq = run(cfg.replace(engine="sequential"), cache=False, progress=False)
    vec = run(cfg.replace(engine="vectorized"), cache=False, progress=False)
    assert seq.clients["steps"].nunique() > 1
    assert set(seq.rounds["engine"].dropna()) == {"sequential"} and set(vec.rounds["engine"].dropna()) == {"vectorized"}
    pd.testing.assert_frame_equal(results(seq), results(vec), rtol=1e-4, atol=1e-5)
    pd.testing.assert_frame_equal(client_results(seq), client_results(vec), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(seq.weights.numpy(), vec.weights.numpy(), rtol=1e-4, atol=1e-5)


def test_same_seed_same_history_and_another_seed_differs():
    a = run(digits_config(), cache=False, progress=False)
    b = run(digits_config(), cache=False, progress=False)
    pd.testing.assert_frame_equal(results(a), results(b), check_exact=True)
    c = run(digits_config(seed=2), cache=False, progress=False)
    assert not results(a).equals(results(c))


def test_algorithm_does_not_change_partition_sampling_or_batches():
    avg = Federation(digits_config())
    prox = Federation(digits_config(algorithm="fedprox"))
    assert all(np.array_equal(p, q) for p, q in zip(avg.parts, prox.parts))
    for t in range(1, 4):
        clients = avg.sample(t, None)
        np.testing.assert_array_equal(clients, prox.sample(t, None))
        for pa, pp in zip(avg.plans(t, clients), prox.plans(t, clients)):
            assert pa.indices.equal(pp.indices)
    # ... and changing the seed changes all three
    other = Federation(digits_config(seed=5))
    assert not all(np.array_equal(p, q) for p, q in zip(avg.parts, other.parts))


def test_a_run_interrupted_after_it_diverged_resumes_as_diverged(tmp_path, monkeypatch):
    cfg = digits_config(lr=1e10, rounds=6)

    def interrupt(record, w):  # after the diverged round's checkpoint is written, before the run is finished
        if record["diverged"]:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(cfg, cache=tmp_path, progress=False, callbacks=(interrupt,))
    monkeypatch.setattr(Federation, "round", lambda *args, **kwargs: pytest.fail("trained after divergence"))
    h = run(cfg, cache=tmp_path, progress=False)
    assert h.diverged and h.rounds["diverged"].iloc[-1]


def test_divergence_is_recorded_not_raised():
    h = run(digits_config(lr=1e10, rounds=6), cache=False, progress=False)
    assert h.diverged
    assert h.rounds["diverged"].iloc[-1]
    assert len(h.rounds) < 7  # stopped early, but the rounds before are kept
    assert h.rounds["test_accuracy"].iloc[0] > 0
    assert np.isnan(h.final_accuracy)


class Killed(Exception):
    pass


def killed_at(round_: int):
    """A run callback that kills the run as round ``round_`` is logged (its checkpoint of the round before stays)."""
    def kill(record, w):
        if record["round"] == round_:
            raise Killed
    return kill


def test_killed_run_resumes_to_the_same_history(tmp_path):
    cfg = digits_config(algorithm="scaffold", rounds=5)
    whole = run(cfg, cache=False, progress=False)

    with pytest.raises(Killed):
        run(cfg, cache=tmp_path, progress=False, callbacks=(killed_at(3),))
    assert (tmp_path / cfg.key() / "checkpoint.pt").exists()
    resumed = run(cfg, cache=tmp_path, progress=False)
    pd.testing.assert_frame_equal(results(whole), results(resumed), check_exact=True)
    pd.testing.assert_frame_equal(client_results(whole), client_results(resumed), check_exact=True)
    assert not (tmp_path / cfg.key() / "checkpoint.pt").exists()


def test_a_resumed_run_keeps_the_engine_its_checkpoint_trained_with(tmp_path, monkeypatch):
    """What engine="auto" picks may change (a faster rule, a new release); a run it started does not switch engines
    halfway: its history stays one engine's, equal to a straight run's."""
    import fedkit.federation as federation

    cfg = digits_config(rounds=4)
    new_rule = federation.choose_engine
    monkeypatch.setattr(federation, "choose_engine", lambda name, fm, device: "sequential")  # the rule it began under
    whole = run(cfg, cache=False, progress=False)

    with pytest.raises(Killed):
        run(cfg, cache=tmp_path, progress=False, callbacks=(killed_at(2),))
    monkeypatch.setattr(federation, "choose_engine", new_rule)
    assert Federation(cfg).engine_name == "vectorized"  # what auto picks for a fresh run now
    resumed = run(cfg, cache=tmp_path, progress=False)
    assert set(resumed.rounds["engine"].dropna()) == {"sequential"}
    pd.testing.assert_frame_equal(results(whole), results(resumed), check_exact=True)


def test_finished_run_is_loaded_from_the_cache(tmp_path, monkeypatch):
    cfg = digits_config(rounds=2)
    first = run(cfg, cache=tmp_path, progress=False)
    monkeypatch.setattr(sys.modules["fedkit.runner"], "Federation", lambda cfg: pytest.fail("retrained"))
    again = run(cfg, cache=tmp_path, progress=False)
    pd.testing.assert_frame_equal(results(first), results(again), check_dtype=False)


def test_history_records_rounds_clients_bytes_and_times():
    h = run(digits_config(algorithm="scaffold"), cache=False, progress=False)
    assert list(h.rounds["round"]) == [0, 1, 2, 3]
    assert len(h.clients) == 3 * 5
    d = Federation(digits_config()).fm.dim
    # SCAFFOLD: down = x_t and c (2d floats), up = Δy_i and Δc_i (2d floats)
    assert (h.clients["bytes_down"] == 4 * 2 * d).all() and (h.clients["bytes_up"] == 4 * 2 * d).all()
    assert (h.clients["seconds"] > 0).all()
    assert h.rounds["test_accuracy"].iloc[-1] > h.rounds["test_accuracy"].iloc[0]


def test_stop_accuracy_ends_the_run_at_the_target():
    h = run(digits_config(rounds=40, stop_accuracy=0.5), cache=False, progress=False)
    assert h.rounds["test_accuracy"].iloc[-1] >= 0.5
    assert (h.rounds["test_accuracy"].iloc[:-1] < 0.5).all()


def test_a_failed_cache_write_leaves_the_old_file_and_no_temporary(tmp_path):
    from fedkit.history import replacing

    target = tmp_path / "rounds.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), replacing(target) as path:
        path.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["rounds.csv"]


def test_sparse_evaluation_tests_every_nth_round_and_the_last_without_changing_training():
    dense = run(digits_config(rounds=5), cache=False, progress=False)
    sparse = run(digits_config(rounds=5, eval_every=3), cache=False, progress=False)
    tested = sparse.rounds.dropna(subset=["test_accuracy"])["round"].tolist()
    assert tested == [0, 3, 5]
    pd.testing.assert_frame_equal(results(sparse).loc[tested], results(dense).loc[tested])
    pd.testing.assert_series_equal(sparse.rounds["train_loss"], dense.rounds["train_loss"])


def kill_at(round_):
    def callback(record, w):
        if record["round"] == round_:
            raise Killed
    return callback


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage", "flip"])
def test_a_corrupt_checkpoint_is_set_aside_and_the_run_resumes_from_the_previous_one(tmp_path, damage):
    cfg = digits_config(algorithm="scaffold", rounds=5)
    whole = run(cfg, cache=False, progress=False)
    with pytest.raises(Killed):
        run(cfg, cache=tmp_path, progress=False, callbacks=(kill_at(3),))
    folder = tmp_path / cfg.key()
    checkpoint = folder / "checkpoint.pt"
    assert (folder / "checkpoint.prev.pt").exists()  # round 2's, kept until round 3's was in place
    data = checkpoint.read_bytes()
    checkpoint.write_bytes({"truncate": data[: len(data) // 2], "empty": b"", "garbage": b"\x80not a checkpoint",
                            "flip": data[:-100] + bytes([data[-100] ^ 0x40]) + data[-99:]}[damage])
    with pytest.warns(UserWarning, match="checkpoint.pt is corrupt"):
        resumed = run(cfg, cache=tmp_path, progress=False)
    assert (folder / "checkpoint.pt.corrupt").exists()
    pd.testing.assert_frame_equal(results(whole), results(resumed), check_exact=True)


def test_a_corrupt_cached_result_is_retrained_with_a_warning(tmp_path):
    cfg = digits_config(rounds=2)
    first = run(cfg, cache=tmp_path, progress=False)
    rounds = tmp_path / cfg.key() / "rounds.parquet"
    rounds.write_bytes(rounds.read_bytes()[:-10] + b"0123456789")
    with pytest.warns(UserWarning, match="rounds.parquet is unreadable"):
        again = run(cfg, cache=tmp_path, progress=False)
    pd.testing.assert_frame_equal(results(first), results(again), check_exact=True)
    (tmp_path / cfg.key() / "meta.json").write_text("{not json")
    with pytest.warns(UserWarning, match="meta.json is unreadable"):
        run(cfg, cache=tmp_path, progress=False)


def test_the_final_model_and_snapshots_survive_the_cache_and_a_resume(tmp_path):
    cfg = digits_config(rounds=5, snapshots=2)
    fresh = run(cfg, cache=tmp_path, progress=False)
    assert sorted(fresh.models) == [2, 4, 5]  # every 2nd round and the last
    torch.testing.assert_close(fresh.models[5], fresh.weights.cpu())
    cached = run(cfg, cache=tmp_path, progress=False)
    torch.testing.assert_close(cached.weights, fresh.weights.cpu())
    assert all(torch.equal(cached.models[t], fresh.models[t]) for t in fresh.models)
    # a run stopped after round 3 and resumed keeps the snapshot of round 2
    first = tmp_path / "first"

    def kill_at_round_3(record, w):
        if record["round"] == 3:
            raise Killed

    with pytest.raises(Killed):
        run(cfg, cache=first, progress=False, callbacks=(kill_at_round_3,))
    resumed = run(cfg, cache=first, progress=False)
    assert all(torch.equal(resumed.models[t], fresh.models[t]) for t in fresh.models)
    with pytest.raises(ConfigError, match="snapshots"):
        digits_config(snapshots=-1)


def test_a_resumed_run_says_so_and_from_which_round_and_leaves_no_temporary(tmp_path, capsys):
    cfg = digits_config(rounds=4)

    def kill_mid_write(record, w):  # what a kill during a checkpoint write leaves: another process's temporary
        if record["round"] == 2:
            dead = subprocess.Popen(["true"])
            dead.wait()
            (tmp_path / cfg.key() / f".checkpoint.pt.{dead.pid}.tmp").write_bytes(b"half a checkpoint")
            raise Killed

    with pytest.raises(Killed):
        run(cfg, cache=tmp_path, progress=False, callbacks=(kill_mid_write,))
    capsys.readouterr()
    run(cfg, cache=tmp_path, progress=False)
    assert capsys.readouterr().err == (f"fedkit: fedavg run {cfg.key()} resumes from its checkpoint after round 2 "
                                       "of 4\n")
    assert sorted(p.name for p in (tmp_path / cfg.key()).iterdir()) == [
        "clients.parquet", "final.pt", "meta.json", "models.pt", "rounds.parquet"]
    for name in ("checkpoint.pt", "checkpoint.prev.pt"):  # no readable checkpoint left: it says it starts again
        (tmp_path / "again" / cfg.key()).mkdir(parents=True, exist_ok=True)
        (tmp_path / "again" / cfg.key() / name).write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="is corrupt"):
        run(cfg, cache=tmp_path / "again", progress=False)
    assert capsys.readouterr().err.endswith("starts again at round 1 (no readable checkpoint)\n")


def test_fedkit_cache_lists_entries_and_cleans_what_was_set_aside(tmp_path, capsys):
    from fedkit.cli import main

    finished, unfinished = digits_config(rounds=1), digits_config(rounds=3, algorithm="scaffold")
    run(finished, cache=tmp_path, progress=False)
    with pytest.raises(Killed):
        run(unfinished, cache=tmp_path, progress=False, callbacks=(kill_at(2),))
    aside = tmp_path / f"{finished.key()}.corrupt-20250101-000000-0"
    aside.mkdir()
    (aside / "meta.json").write_text("{broken")
    (tmp_path / unfinished.key() / "checkpoint.prev.pt.corrupt").write_bytes(b"x")
    assert main(["cache", "--dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["entry", "algorithm", "status", "size", "age"]
    rows = {line.split()[0]: line.split()[1:3] for line in lines[1:-1]}
    assert rows == {finished.key(): ["fedavg", "finished"], unfinished.key(): ["scaffold", "unfinished"]}
    assert lines[-1].startswith(f"2 entries under {tmp_path}") and "2 set-aside item(s)" in lines[-1]
    assert main(["cache", "clean", "--dry-run", "--dir", str(tmp_path)]) == 0
    assert aside.exists() and "would remove" in capsys.readouterr().out
    assert main(["cache", "clean", "--dir", str(tmp_path)]) == 0
    assert not aside.exists() and not (tmp_path / unfinished.key() / "checkpoint.prev.pt.corrupt").exists()
    assert (tmp_path / finished.key() / "meta.json").exists() and (tmp_path / unfinished.key()).exists()
    assert capsys.readouterr().out.splitlines()[-1] == f"2 set-aside item(s) under {tmp_path}"


def test_a_run_finished_on_another_named_device_is_read_from_the_cache(tmp_path, monkeypatch):
    from fedkit.runner import Run, seen_configs
    cpu = digits_config(rounds=2)
    trained = run(cpu, cache=tmp_path, progress=False)
    gpu = cpu.replace(device="cuda")  # never trained here: this machine has no GPU
    monkeypatch.setenv("FEDKIT_CACHED_ON", "mps, cpu")
    r = Run(gpu, cache=tmp_path, progress=False)
    assert r.cfg == cpu and r.history is not None  # the history names the device that trained it
    assert cpu.key() in seen_configs() and gpu.key() not in seen_configs()
    pd.testing.assert_frame_equal(r.finish().rounds, trained.rounds, check_exact=True)


def test_only_a_finished_run_counts_for_another_device_and_its_own_checkpoint_still_resumes(tmp_path, monkeypatch,
                                                                                           capsys):
    from fedkit.runner import finished_run
    cfg = digits_config(rounds=4)

    with pytest.raises(Killed):
        run(cfg, cache=tmp_path, progress=False, callbacks=(killed_at(2),))
    monkeypatch.setenv("FEDKIT_CACHED_ON", "cpu")
    assert finished_run(cfg.replace(device="cuda"), tmp_path) is None  # a checkpoint is not a result
    monkeypatch.setenv("FEDKIT_CACHED_ON", "cuda")  # nothing there: the CPU run resumes as before
    resumed = run(cfg, cache=tmp_path, progress=False)
    assert "resumes from its checkpoint after round 2" in capsys.readouterr().err
    pd.testing.assert_frame_equal(results(resumed), results(run(cfg, cache=False, progress=False)), check_exact=True)
    monkeypatch.setenv("FEDKIT_CACHED_ON", "cpu")
    assert finished_run(cfg.replace(device="cuda"), tmp_path) == cfg  # finished now


def test_an_unknown_cached_on_device_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_CACHED_ON", "cpu,tpu")
    with pytest.raises(ConfigError, match="'tpu'"):
        run(digits_config(rounds=1), cache=tmp_path, progress=False)


def test_rounds_left_reads_the_cache_without_changing_it(tmp_path, monkeypatch):
    from fedkit.runner import rounds_left
    cfg = digits_config(rounds=4)
    assert rounds_left(cfg, tmp_path) == 4  # nothing cached

    with pytest.raises(Killed):
        run(cfg, cache=tmp_path, progress=False, callbacks=(killed_at(3),))
    entry = tmp_path / cfg.key()
    assert rounds_left(cfg, tmp_path) == 1  # the newest checkpoint: round 3
    newest = (entry / "checkpoint.pt").read_bytes()
    (entry / "checkpoint.pt").write_bytes(newest[:-7])  # cut short: the previous checkpoint (round 2) counts
    before = sorted(p.name for p in entry.iterdir())
    assert rounds_left(cfg, tmp_path) == 2
    assert sorted(p.name for p in entry.iterdir()) == before  # nothing set aside: the run itself does that
    with pytest.warns(UserWarning, match="checkpoint.pt is corrupt"):
        run(cfg, cache=tmp_path, progress=False)
    assert rounds_left(cfg, tmp_path) == 0
    gpu = cfg.replace(device="cuda")
    monkeypatch.setenv("FEDKIT_CACHED_ON", "")
    assert rounds_left(gpu, tmp_path) == 4
    monkeypatch.setenv("FEDKIT_CACHED_ON", "cpu")
    assert rounds_left(gpu, tmp_path) == 0  # finished on a named device: nothing left for the GPU
