"""The paper-scale plan (fedkit figures --plan) and the measured step behind it and behind the simulated clock."""
import math
import re
from pathlib import Path

import pytest

from fedkit import Config, run
from fedkit.cli import main
from fedkit.errors import ConfigError
from fedkit.papers import drag
from fedkit.plan import Planner, listed_runs, make_plan, reads_models
from fedkit.probe import calibrate_step_seconds, round_seconds
from fedkit.runner import LINK_UNIT

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
DRIFT = NOTEBOOKS / "drag" / "fig3_emnist_client_drift.ipynb"
TINY = Config(dataset="digits", model="mlp", num_clients=4, rounds=2, local_steps=3, batch_size=16)


def test_round_seconds_times_every_round_and_counts_its_local_steps():
    timed = round_seconds(TINY, 2)
    assert len(timed) == 2 and all(seconds > 0 and steps == 4 * 3 for seconds, steps in timed)


def test_calibrated_step_seconds_drive_the_simulated_clock():
    cfgs = {"FedAvg": TINY, "FedProx": TINY.replace(algorithm="fedprox", algorithm_args={"mu": 0.1})}
    step = calibrate_step_seconds(cfgs, rounds=2, steps=2)
    assert list(step) == ["FedAvg", "FedProx"] and all(0 < s < 1 for s in step.values())
    h = run(TINY.replace(engine="vectorized", step_seconds=step["FedAvg"]), cache=False, progress=False)
    r = h.rounds.iloc[1:]
    link = 8 * (r["bytes_down"] + r["bytes_up"]) / r["clients"] / (TINY.link_mbps * LINK_UNIT)
    assert r["sim_seconds"].to_numpy() == pytest.approx((3 * step["FedAvg"] + link).to_numpy())
    with pytest.raises(ConfigError, match="rounds must be an integer ≥ 1, got 0"):
        calibrate_step_seconds(cfgs, rounds=0)


def test_plan_lists_the_runs_their_data_engine_and_measured_minutes():
    [p], planner = make_plan([DRIFT], "ci")
    keys = {c.key() for c in drag.runs(DRIFT.stem, "ci").values()}
    assert p.runs is not None and {c.key() for c in p.runs.values()} == keys
    assert not p.missing and not p.unfit and p.unpredicted == 0
    assert p.engines <= {"sequential", "vectorized"} and len(p.engines) == 1
    assert math.isfinite(p.minutes) and p.minutes > 0 and planner.probe_seconds > 0
    assert planner.probe_device == "cpu"


def test_plan_subtracts_what_the_run_cache_holds(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_CACHE", str(tmp_path))
    planner = Planner("cpu")
    before = planner.notebook(DRIFT, "ci", 0)
    assert before.finished == before.part_way == 0
    runs = drag.runs(DRIFT.stem, "ci")
    finished, part_way = runs["fig3a/FedAvg/seed 0"], runs["fig3a/DRAG/seed 0"]
    run(finished, progress=False)

    class Stopped(Exception):
        pass

    def stop_after_round_1(record, w):
        raise Stopped

    with pytest.raises(Stopped):
        run(part_way, progress=False, callbacks=(stop_after_round_1,))
    after = planner.notebook(DRIFT, "ci", 0)  # the same planner: its probes are not measured again
    assert (after.finished, after.part_way) == (1, 1)
    engine = next(iter(before.engines))
    saved = planner.minutes(finished, engine) + planner.minutes(part_way, engine) / part_way.rounds
    assert after.minutes == pytest.approx(before.minutes - saved)
    only = planner.notebook(DRIFT, "ci", 0, match="fig3a/FedAvg")
    assert list(only.runs) == ["drag/fig3_emnist_client_drift/fig3a/FedAvg/seed 0"] and only.finished == 1
    assert only.minutes == 0


def test_plan_counts_a_run_only_the_committed_archive_holds_as_nothing_to_train(tmp_path, monkeypatch):
    from fedkit import archive

    monkeypatch.setenv("FEDKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    archive.index.cache_clear()
    planner = Planner("cpu")
    before = planner.notebook(DRIFT, "ci", 0)
    cfg = drag.runs(DRIFT.stem, "ci")["fig3a/FedAvg/seed 0"]
    archive.write(tmp_path / "figures" / "drag", DRIFT.stem, {cfg.key(): run(cfg, cache=False, progress=False)})
    after = planner.notebook(DRIFT, "ci", 0)
    assert (before.archived, after.archived, after.finished) == (0, 1, 0)
    engine = next(iter(before.engines))
    assert after.minutes == pytest.approx(before.minutes - planner.minutes(cfg, engine))


def test_plan_measures_archived_runs_trained_as_its_probes_against_its_prediction(tmp_path, monkeypatch):
    import torch

    from fedkit import archive

    monkeypatch.setenv("FEDKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    archive.index.cache_clear()
    runs = drag.runs(DRIFT.stem, "ci")
    alone, stacked = runs["fig3a/FedAvg/seed 0"], runs["fig3a/DRAG/seed 0"]
    histories = {cfg.key(): run(cfg, cache=False, progress=False) for cfg in (alone, stacked)}
    histories[stacked.key()].provenance["segments"][0]["stacked_with"] = ["another seed"]  # as if trained in a stack
    elsewhere = runs["fig3a/FedProx/seed 0"]  # trained at other torch threads than the plan's: not measured
    histories[elsewhere.key()] = run(elsewhere, cache=False, progress=False)
    histories[elsewhere.key()].provenance["segments"][0]["threads"] = torch.get_num_threads() + 1
    archive.write(tmp_path / "figures" / "drag", DRIFT.stem, histories)
    planner = Planner("cpu")
    p = planner.notebook(DRIFT, "ci", 0)
    engine = next(iter(p.engines))
    seconds = [histories[c.key()].provenance["train_seconds"] for c in (alone, stacked)]
    assert p.archived == 3 and p.measured_runs == 2
    assert p.measured == pytest.approx((seconds[0] + seconds[1] / 2) / 60)
    assert p.measured_predicted == pytest.approx(planner.minutes(alone, engine) + planner.minutes(stacked, engine))


def test_plan_counts_an_archived_run_whose_model_the_notebook_reads_until_its_table_is_archived(tmp_path, monkeypatch):
    import pandas as pd

    from fedkit import archive, derived

    monkeypatch.setenv("FEDKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    monkeypatch.setattr(drag, "MODELS", {DRIFT.stem}, raising=False)  # as if the notebook read its runs' models
    monkeypatch.setattr(derived, "USED", {})
    archive.index.cache_clear()
    derived.index.cache_clear()
    planner = Planner("cpu")
    before = planner.notebook(DRIFT, "ci", 0)
    cfg = drag.runs(DRIFT.stem, "ci")["fig3a/FedAvg/seed 0"]
    history = run(cfg, cache=False, progress=False)
    archive.write(tmp_path / "figures" / "drag", DRIFT.stem, {cfg.key(): history})
    retrained = planner.notebook(DRIFT, "ci", 0)
    assert (retrained.archived, retrained.models) == (1, 1)
    assert retrained.minutes == pytest.approx(before.minutes)  # the render trains it again for its model
    derived.table(history, "a table from its model", lambda: pd.DataFrame({"norm": [1.0]}))
    derived.write(tmp_path / "figures" / "drag", DRIFT.stem)
    tabled = planner.notebook(DRIFT, "ci", 0)
    assert (tabled.archived, tabled.models) == (1, 0)
    assert tabled.minutes == pytest.approx(before.minutes - planner.minutes(cfg, next(iter(before.engines))))


def test_plan_names_missing_data_without_downloading(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_DATA", str(tmp_path))  # an empty data root
    monkeypatch.setenv("FEDKIT_DOWNLOAD", "1")  # the plan downloads nothing, even where allowed
    [p], planner = make_plan([DRIFT], "paper", device="cuda")  # no EMNIST here: full MNIST stands in, absent too
    assert set(p.missing) == {"mnist"} and "mnist: data not found in" in p.missing["mnist"]
    assert p.unpredicted == len(p.runs) and p.minutes == 0 and not planner.steps
    assert not any(tmp_path.iterdir())


def test_figures_plan_prints_a_row_per_notebook_and_where_it_measured(capsys):
    assert main(["figures", str(DRIFT), str(NOTEBOOKS / "teaching" / "02_client_drift.ipynb"), "--scale", "ci",
                 "--plan"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["notebook", "runs", "seeds", "rounds"]
    assert out[1].split()[:5] == ["drag/fig3_emnist_client_drift", "12", "1", "4", "mnist_5k"]
    assert out[2].split() == ["teaching/02_client_drift", "?"]
    assert "note teaching/02_client_drift: no paper module fedkit.papers.teaching: its runs are not listed" in out
    assert out[0].split()[-3:] == ["measured", "÷", "predicted"] and out[1].split()[-1] == "-"  # nothing archived
    assert any(line.startswith("minutes: local training only") and "measured on cpu" in line
               and re.search(r"load average up to \d+\.\d on \d+ cores", line) for line in out)


def test_figures_plan_takes_match_and_refuses_a_bad_one(capsys):
    assert main(["figures", str(DRIFT), "--scale", "ci", "--plan", "--match", "fig3b/(FedAvg|DRAG)/"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:2] == ["drag/fig3_emnist_client_drift", "2"]
    try:
        status = main(["figures", str(DRIFT), "--plan", "--match", "fig3(a"])
    except SystemExit as exit:  # argparse's usage errors
        status = exit.code
    assert status == 2 and "argument --match: not a regular expression: 'fig3(a'" in capsys.readouterr().err


def test_figures_plan_refuses_notebook_parameters(capsys):
    assert main(["figures", str(DRIFT), "--plan", "-p", "n_seeds=2"]) == 2
    assert "--plan lists the notebooks' runs with their default parameters" in capsys.readouterr().err


def test_plan_counts_conditional_runs_apart_from_the_minutes(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_CACHE", str(tmp_path))  # nothing trained: TACO with detection off stays conditional
    notebook = NOTEBOOKS / "taco" / "table5_fig4_fig5_table3_dirichlet.ipynb"
    planner = Planner("cpu")
    every, unconditional = planner.notebook(notebook, "ci", 0), planner.notebook(notebook, "ci", 0, match=r"[^?]$")
    conditional = {c.key() for label, c in every.runs.items() if label.endswith("?")}
    assert every.conditional == len(conditional) > 0 and unconditional.conditional == 0
    assert unconditional.minutes > 0 and every.minutes == pytest.approx(unconditional.minutes)


def test_the_notebooks_that_read_their_runs_models_are_the_ones_their_paper_module_names():
    """A paper notebook whose code reads a run's model (``.weights``, ``.models``) or builds a table from it
    (``derived.table``) is in its paper module's MODELS, so that the plan counts the runs its render trains again."""
    import json

    reading = re.compile(r"derived\.table\(|\.weights\b|history\.models\b")
    for notebook in sorted(NOTEBOOKS.glob("*/*.ipynb")):
        if listed_runs(notebook, "ci")[0] is None:
            continue  # no paper module lists its runs: nothing to plan
        code = "\n".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"]
                         if c["cell_type"] == "code")
        assert reads_models(notebook) == bool(reading.search(code)), notebook.name
