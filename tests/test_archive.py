"""The run archive: finished runs kept beside the figures, read back exactly, and read instead of training when the
run cache lacks them; a rendered notebook archives its runs, and renders again from the archive alone."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading

import pandas as pd
import pytest
import torch

from fedkit import Config, archive, run
from fedkit.errors import FedkitError
from fedkit.figures import coverage
from fedkit.models.registry import build_model, count_parameters
from fedkit.runner import run_together


def digits_config(**changes) -> Config:
    base = dict(dataset="digits", partition="dirichlet", partition_args={"phi": 0.3, "min_size": 5},
                num_clients=8, clients_per_round=5, model="mlp", model_args={"hidden": [32]}, rounds=3,
                local_steps=4, batch_size=16, lr=0.3, seed=1)
    return Config(**{**base, **changes})


def test_archived_runs_read_back_equal_with_their_training_provenance(tmp_path):
    cfgs = [digits_config(seed=s) for s in (0, 1)]
    histories = run_together(cfgs, cache=tmp_path / "cache", progress=False)
    path = archive.write(tmp_path / "figures", "nb", {c.key(): h for c, h in zip(cfgs, histories)})
    assert path == tmp_path / "figures" / "runs" / "nb.parquet" and path.with_suffix(".clients.parquet").exists()
    back = archive.read(path)
    for cfg, h in zip(cfgs, histories):
        got = back[cfg.key()]
        pd.testing.assert_frame_equal(got.rounds, h.rounds)
        pd.testing.assert_frame_equal(got.clients, h.clients)
        assert got.config == h.config and got.diverged == h.diverged
        trained = got.provenance
        assert trained["device"] == "cpu" and trained["threads"] >= 1 and trained["torch"]
        assert trained["train_seconds"] > 0 and trained["resumed_after_round"] == 0
        assert trained["stacked_with"] == [c.key() for c in cfgs if c != cfg]  # the stack's seconds are shared
    assert set(archive.read(str(path))) == set(back)  # a path given as text reads the same
    assert archive.write(tmp_path / "empty", "nb", {}) is None


def test_an_archived_runs_provenance_names_its_file_inside_the_checkout_not_the_machines_folders(tmp_path,
                                                                                                monkeypatch):
    cfg = digits_config()
    history, = run_together([cfg], cache=tmp_path / "cache", progress=False)
    checkout = tmp_path / "clone"
    (checkout / "notebooks").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    path = archive.write(checkout / "figures" / "peers", "nb", {cfg.key(): history})
    monkeypatch.chdir(checkout / "notebooks")  # where a notebook renders
    assert archive.read(path)[cfg.key()].provenance["archive"] == "figures/peers/runs/nb.parquet"
    monkeypatch.chdir(tmp_path)  # outside any checkout: the path as given
    assert archive.read(path)[cfg.key()].provenance["archive"] == str(path)


def test_a_second_render_keeps_the_runs_of_the_first_and_replaces_a_run_of_the_same_key(tmp_path):
    a, b = digits_config(seed=0), digits_config(seed=1)
    ha, hb = run_together([a, b], cache=tmp_path / "cache", progress=False)
    path = archive.write(tmp_path / "figures", "nb", {a.key(): ha})  # e.g. the stand-in's render
    archive.write(tmp_path / "figures", "nb", {b.key(): hb})  # then another parametrisation of the same notebook
    assert sorted(archive.read(path)) == sorted([a.key(), b.key()])
    shorter = hb.rounds.iloc[:1]
    archive.write(tmp_path / "figures", "nb", {b.key(): archive.Archived(hb.config, shorter, hb.clients, False, False)})
    back = archive.read(path)
    pd.testing.assert_frame_equal(back[b.key()].rounds, shorter)
    pd.testing.assert_frame_equal(back[a.key()].rounds, ha.rounds)


def test_archiving_the_runs_a_file_already_holds_leaves_it_untouched(tmp_path):
    """A render from the archive on another machine (another pandas in the metadata) rewrites no file."""
    a, b = digits_config(seed=0), digits_config(seed=1)
    ha, hb = run_together([a, b], cache=tmp_path / "cache", progress=False)
    path = archive.write(tmp_path / "figures", "nb", {a.key(): ha, b.key(): hb})
    files = (path, path.with_suffix(".clients.parquet"))
    inodes = [f.stat().st_ino for f in files]
    archive.write(tmp_path / "figures", "nb", archive.read(path))
    assert [f.stat().st_ino for f in files] == inodes
    archive.write(tmp_path / "figures", "nb", {b.key(): archive.Archived(hb.config, hb.rounds.iloc[:1], hb.clients,
                                                                         False, False)})
    assert [f.stat().st_ino for f in files] != inodes


def test_writers_of_one_archive_take_turns_and_keep_the_runs_another_process_wrote(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    a, b, c = (digits_config(seed=s) for s in (0, 1, 2))
    ha, hb, hc = run_together([a, b, c], cache=tmp_path / "cache", progress=False)
    elsewhere = archive.write(tmp_path / "other", "nb", {a.key(): ha, b.key(): hb})
    path = archive.write(tmp_path / "figures", "nb", {a.key(): ha})
    assert list(archive.read(path)) == [a.key()]  # this process has now read the file, and keeps what it read
    for suffix in (".clients.parquet", ".parquet"):  # as another process would write it, behind this one's back
        shutil.copyfile(elsewhere.with_suffix(suffix), path.with_suffix(suffix))
    held = os.open(path.parent, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # another writer holds the folder
    writer = threading.Thread(target=archive.write, args=(tmp_path / "figures", "nb", {c.key(): hc}))
    writer.start()
    writer.join(0.5)
    assert writer.is_alive()  # it waits its turn
    os.close(held)
    writer.join(30)
    assert not writer.is_alive() and sorted(archive.read(path)) == sorted([a.key(), b.key(), c.key()])


def test_merge_adds_another_machines_archived_runs_at_the_same_paths_and_keeps_these(tmp_path, monkeypatch, capsys):
    from fedkit import cli

    a, b, c = (digits_config(seed=s) for s in (0, 1, 2))
    ha, hb, hc = run_together([a, b, c], cache=tmp_path / "cache", progress=False)
    here, gpu = tmp_path / "figures", tmp_path / "out" / "figures"
    mine = archive.write(here / "feddual" / "paper", "nb", {a.key(): ha})
    archive.write(gpu / "feddual" / "paper", "nb", {b.key(): hb})  # the same notebook, trained there
    archive.write(gpu / "taco", "other", {c.key(): hc})  # a notebook this checkout has not archived yet
    (gpu / "taco" / "runs" / "other.derived.parquet").write_bytes((gpu / "taco" / "runs" / "other.clients.parquet")
                                                                  .read_bytes())  # another kind of file: left alone
    monkeypatch.setenv("FEDKIT_FIGURES", str(here))
    assert cli.main(["cache", "merge", "--from", str(gpu)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"2 run(s) from {gpu} merged into 2 archive file(s)"
    assert sorted(archive.read(mine)) == sorted([a.key(), b.key()])
    pd.testing.assert_frame_equal(archive.read(mine)[b.key()].rounds, hb.rounds)
    assert list(archive.read(here / "taco" / "runs" / "other.parquet")) == [c.key()]
    assert not (here / "taco" / "runs" / "other.derived.parquet").exists()


def test_dropped_runs_leave_the_archive_and_the_others_stay_exact(tmp_path):
    a, b = digits_config(seed=0), digits_config(seed=1)
    ha, hb = run_together([a, b], cache=tmp_path / "cache", progress=False)
    path = archive.write(tmp_path / "figures", "nb", {a.key(): ha, b.key(): hb})
    assert archive.drop(path, [b.key(), "not-a-key"]) == [b.key()]
    back = archive.read(path)
    assert list(back) == [a.key()]
    pd.testing.assert_frame_equal(back[a.key()].rounds, ha.rounds)
    pd.testing.assert_frame_equal(back[a.key()].clients, ha.clients)
    assert archive.drop(path, [b.key()]) == []
    with pytest.raises(FedkitError, match="without one"):
        archive.drop(path, [a.key()])
    assert list(archive.read(path)) == [a.key()]


def test_a_run_missing_from_the_cache_is_read_from_the_archive_without_training(tmp_path, monkeypatch):
    cfg = digits_config(rounds=2)
    trained = run(cfg, cache=tmp_path / "cache", progress=False)
    archive.write(tmp_path / "figures" / "paper_x", "nb", {cfg.key(): trained})
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setattr(sys.modules["fedkit.runner"], "Federation", lambda cfg: pytest.fail("retrained"))
    again = run(cfg, cache=tmp_path / "empty_cache", progress=False)
    pd.testing.assert_frame_equal(again.rounds, trained.rounds)
    assert again.parameters == trained.weights.numel() == 64 * 32 + 32 + 32 * 10 + 10  # the model units of traffic
    assert not (tmp_path / "empty_cache" / cfg.key()).exists()  # read, not copied into the cache
    other = digits_config(rounds=2, seed=5)
    with pytest.raises(pytest.fail.Exception, match="retrained"):  # a run the archive lacks trains
        run(other, cache=tmp_path / "empty_cache", progress=False)


def test_a_run_archived_twice_apart_is_read_from_the_rendered_notebooks_own_copy_and_listed(tmp_path, monkeypatch,
                                                                                           capsys):
    from fedkit import cli

    cfg, other = digits_config(rounds=2), digits_config(rounds=2, seed=4)
    trained, kept = run_together([cfg, other], cache=tmp_path / "cache", progress=False)
    apart = trained.rounds.assign(test_accuracy=trained.rounds["test_accuracy"] - 0.0125)  # another machine's floats
    slower = kept.rounds.assign(seconds=kept.rounds["seconds"] + 1.0)  # another machine's clock only
    figures = tmp_path / "figures"
    mine = archive.write(figures / "paper_x", "a_nb", {cfg.key(): trained, other.key(): kept})
    theirs = archive.write(figures / "paper_x", "b_nb", {
        cfg.key(): archive.Archived(trained.config, apart, trained.clients, False, False),
        other.key(): archive.Archived(kept.config, slower, kept.clients, False, False)})
    monkeypatch.setenv("FEDKIT_FIGURES", str(figures))
    assert archive.index(archive.root())[cfg.key()] == (mine, theirs)
    pd.testing.assert_frame_equal(archive.lookup(cfg.key()).rounds, apart)  # outside a render: the last file's
    monkeypatch.setenv(archive.RENDERING, str(mine))
    pd.testing.assert_frame_equal(archive.lookup(cfg.key()).rounds, trained.rounds)  # a render: its own copy
    monkeypatch.setenv(archive.RENDERING, str(theirs))
    pd.testing.assert_frame_equal(archive.lookup(cfg.key()).rounds, apart)
    assert archive.lookup(other.key()).rounds["seconds"].equals(slower["seconds"])
    [twin] = archive.twins(figures)  # the copies that differ only in seconds are no twins
    assert twin.key == cfg.key() and twin.paths == (mine, theirs) and twin.accuracy == pytest.approx(1.25)
    assert twin.relative == pytest.approx((0.0125 / trained.rounds["test_accuracy"]).max())
    assert cli.main(["cache", "archive"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"run {cfg.key()}: its 2 archived copies differ beyond their clocks (test accuracy up to 1.25 "
                      f"points apart, any record up to {twin.relative:.1e} relative; a render reads its own "
                      "notebook's): paper_x/runs/a_nb.parquet, paper_x/runs/b_nb.parquet")
    assert out[-1].endswith("; 1 run(s) archived in several files whose copies differ")


def test_an_archived_runs_model_trains_when_first_read(tmp_path, monkeypatch):
    cfg = digits_config(rounds=2)
    trained = run(cfg, cache=tmp_path / "cache", progress=False)
    archive.write(tmp_path / "figures", "nb", {cfg.key(): trained})
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setenv("FEDKIT_CACHE", str(tmp_path / "fresh"))
    archived = run(cfg, progress=False)  # the records, from the archive
    assert isinstance(archived, archive.Archived) and not (tmp_path / "fresh" / cfg.key()).exists()
    assert torch.equal(archived.weights, trained.weights)  # trained now, on this machine, into its cache
    assert (tmp_path / "fresh" / cfg.key() / "meta.json").exists()


def test_an_unreadable_archive_is_named(tmp_path):
    bad = tmp_path / "runs" / "nb.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"not parquet")
    with pytest.raises(archive.FedkitError, match="nb.parquet"):
        archive.read(bad)


def test_a_rendered_notebook_archives_its_runs_and_renders_again_from_the_archive_alone(tmp_path, render_ci):
    first = render_ci("notebooks/peers/scaffold_placement.ipynb", "cache")
    archived = tmp_path / "figures" / "peers" / "runs" / "scaffold_placement.parquet"
    assert archived in first.written
    csv = tmp_path / "figures" / "peers" / "scaffold_placement.csv"
    before = csv.read_text()
    runs = json.loads(archive.pq.read_schema(archived).metadata[archive.META])
    assert set(runs) == set(json.loads(csv.with_suffix(".provenance.json").read_text())["runs"])
    cnn = count_parameters(build_model("cnn", (1, 28, 28), 10))  # the model's length, kept without the model
    assert {run["parameters"] for run in runs.values()} == {cnn}

    # another notebook archived the same runs trained elsewhere (other floats); its file comes last in path order
    elsewhere = {key: archive.Archived(h.config, h.rounds.assign(test_accuracy=h.rounds["test_accuracy"] / 2),
                                       h.clients, h.diverged, h.ended_early)
                 for key, h in archive.read(archived).items()}
    archive.write(archived.parent.parent, "zz_elsewhere", elsewhere)
    render_ci("notebooks/peers/scaffold_placement.ipynb", "empty_cache")  # a fresh machine: no run cache
    assert not any((tmp_path / "empty_cache").glob("*"))  # nothing trained
    assert csv.read_text() == before  # from the notebook's own copies


def test_archive_coverage_names_the_figures_whose_runs_the_archive_lacks(tmp_path, monkeypatch, capsys):
    from fedkit.cli import main

    a, b = digits_config(seed=0), digits_config(seed=1)
    ha, _ = run_together([a, b], cache=tmp_path / "cache", progress=False)
    figures = tmp_path / "figures"
    archive.write(figures / "paper_x", "nb", {a.key(): ha})
    (figures / "paper_x" / "both.provenance.json").write_text(json.dumps({"scale": "ci", "runs": {a.key(): {},
                                                                                                  b.key(): {}}}))
    (figures / "paper_x" / "one.provenance.json").write_text(json.dumps({"scale": "ci", "runs": {a.key(): {}}}))
    monkeypatch.setenv("FEDKIT_FIGURES", str(figures))
    assert coverage(figures).to_dict("records") == [
        {"figure": "paper_x/both", "scale": "ci", "runs": 2, "archived": 1, "timed": 0, "lacking": (b.key(),),
         "tables": 0, "tables_archived": 0},
        {"figure": "paper_x/one", "scale": "ci", "runs": 1, "archived": 1, "timed": 0, "lacking": (), "tables": 0,
         "tables_archived": 0}]
    # another figure lacking the same run: the summary counts it once
    (figures / "paper_x" / "again.provenance.json").write_text(json.dumps({"scale": "ci", "runs": {b.key(): {}}}))
    (figures / "paper_x" / "surface.provenance.json").write_text(json.dumps({"scale": "ci", "runs": {a.key(): {}},
                                                                             "derived": {"0123abcd": {}}}))
    # a timing table: its runs trained without the cache, so every render times them again (none is lacking)
    (figures / "paper_x" / "clock.provenance.json").write_text(json.dumps({"scale": "ci", "runs": {
        b.key(): {"cached": False}, "feedbeef00000000": {"cached": False}}}))
    assert main(["cache", "archive"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "paper_x/again (ci): 0 of its 1 runs archived"
    assert out[1] == "paper_x/both (ci): 1 of its 2 runs archived"
    assert out[2] == "paper_x/surface (ci): 1 of its 1 runs archived, 0 of its 1 tables from models"
    assert out[-1].endswith(": 2 with every run and table they read archived (1 of them time 2 run(s) again on the "
                            "machine at hand, by design), 3 lacking 1 distinct run(s) and 1 table(s)")
    assert len(out) == 4


def test_provenance_marks_the_runs_timed_without_the_cache(tmp_path):
    from fedkit.figures import record_provenance

    timed, kept = digits_config(seed=5, rounds=1), digits_config(seed=6, rounds=1)
    run(timed, cache=False, progress=False)
    run(kept, cache=tmp_path, progress=False)
    runs = record_provenance("ci")["runs"]
    assert runs[timed.key()]["cached"] is False and "cached" not in runs[kept.key()]


def test_a_process_reads_its_code_state_at_import_so_a_long_run_names_the_code_it_ran():
    """A worker that finishes hours after the checkout moved on records the commit it imported, not the new HEAD."""
    probe = "import fedkit.provenance as p; print(p.code_state.cache_info().currsize)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "1\n"


def test_uncommitted_changes_keep_git_statuss_two_columns_on_every_line(tmp_path):
    """The first line of `git status --porcelain` keeps its leading blank (" M": changed, not staged) like the rest."""
    from fedkit.provenance import _git

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], cwd=tmp_path, check=True)
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("x = 1\n")
    subprocess.run(git + ["add", "."], cwd=tmp_path, check=True)
    subprocess.run(git + ["commit", "-qm", "c"], cwd=tmp_path, check=True)
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("x = 2\n")
    assert _git(tmp_path, "status", "--porcelain").splitlines() == [" M a.py", " M b.py"]


def test_same_arithmetic_tells_runs_trained_alike_from_runs_trained_apart(tmp_path):
    cfg = digits_config(seed=3)
    first, again = (run(cfg, cache=tmp_path / name, progress=False) for name in ("a", "b"))
    assert first.same_arithmetic(again)
    pd.testing.assert_series_equal(first.rounds["test_accuracy"], again.rounds["test_accuracy"])
    pd.testing.assert_series_equal(first.rounds["train_loss"], again.rounds["train_loss"])
    assert first.provenance["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    other_threads = dataclasses.replace(again, provenance={**again.provenance, "threads": 7})
    other_simd = dataclasses.replace(again, provenance={**again.provenance, "cpu_capability": "DEFAULT"})
    resumed = dataclasses.replace(again, provenance={**again.provenance, "resumed_after_round": 1})
    stacked, _ = run_together([cfg, digits_config(seed=4)], cache=tmp_path / "c", progress=False)
    assert not any(first.same_arithmetic(h) for h in (other_threads, other_simd, resumed, stacked))
    assert not dataclasses.replace(first, provenance={}).same_arithmetic(first)  # trained before provenance: unknown


def test_spent_shares_a_stacks_seconds_counts_a_training_once_and_each_segment_on_its_device(tmp_path, monkeypatch,
                                                                                             capsys):
    from fedkit.cli import main

    a, b, c = (digits_config(seed=s) for s in (0, 1, 2))
    ha, hb, hc = run_together([a, b, c], cache=tmp_path / "cache", progress=False)

    def trained(h, **provenance):
        return dataclasses.replace(h, provenance={"device": "cpu", "gpu": None, "threads": 1, "commit": "c0",
                                                  "stacked_with": [], **provenance})

    stacked = {"train_seconds": 3600.0, "stacked_with": ["other", "third"]}  # a stack of 3: 1/3 h each
    resumed = {"train_seconds": 9000.0, "segments": [  # 2 h on the CPU in a stack of 2, then 0.5 h alone on a GPU
        {"device": "cpu", "gpu": None, "threads": 2, "train_seconds": 7200.0, "stacked_with": ["x"]},
        {"device": "cuda", "gpu": "NVIDIA H100", "threads": 1, "train_seconds": 1800.0, "stacked_with": []}]}
    figures = tmp_path / "figures"
    archive.write(figures / "taco" / "paper", "nb", {a.key(): trained(ha, **stacked), c.key(): trained(hc, **resumed)})
    archive.write(figures / "taco" / "paper", "again", {a.key(): trained(ha, **stacked)})  # the same training twice
    archive.write(figures / "drag", "nb", {b.key(): trained(hb, train_seconds=720.0)})
    spent = archive.spent(figures).set_index(["paper", "scale", "device", "threads"])
    assert spent.to_dict("index") == {
        ("drag", "small", "cpu", 1): {"runs": 1, "hours": pytest.approx(0.2)},
        ("taco", "paper", "NVIDIA H100", 1): {"runs": 1, "hours": pytest.approx(0.5)},
        ("taco", "paper", "cpu", 1): {"runs": 1, "hours": pytest.approx(1 / 3)},
        ("taco", "paper", "cpu", 2): {"runs": 1, "hours": pytest.approx(1.0)}}
    monkeypatch.setenv("FEDKIT_FIGURES", str(figures))
    assert main(["cache", "spent"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("4 runs, 2.0 worker hours recorded by the run archive")
    assert archive.spent(tmp_path / "nothing").empty
