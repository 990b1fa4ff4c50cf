"""The batch figure pipeline: papermill runs a notebook at a scale and the figure lands in figures/."""
import re
from pathlib import Path

import pytest

from fedkit.cli import main
from fedkit.errors import FedkitError
from fedkit.figures import find_notebooks, run_notebooks

TEACHING = Path(__file__).parents[1] / "notebooks" / "teaching" / "02_client_drift.ipynb"


def test_papermill_run_writes_png_and_csv(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    [done] = run_notebooks([TEACHING], scale="ci", output_dir=tmp_path / "executed")
    assert done.notebook == TEACHING and done.error is None and done.seconds > 0
    assert [p.name for p in done.written] == ["02_client_drift.csv", "02_client_drift.png",
                                              "02_client_drift.provenance.json"]
    assert (tmp_path / "figures" / "teaching" / "02_client_drift.png").stat().st_size > 10_000
    csv = (tmp_path / "figures" / "teaching" / "02_client_drift.csv").read_text()
    assert csv.startswith("algorithm,round,w0,w1,distance_to_optimum")
    assert (tmp_path / "executed" / "teaching" / "02_client_drift.ipynb").exists()


def test_every_notebook_has_a_parameters_cell_with_scale_seed_device():
    import nbformat

    for path in find_notebooks([TEACHING.parents[1]]):
        cells = [c for c in nbformat.read(path, 4).cells if "parameters" in c.metadata.get("tags", [])]
        assert len(cells) == 1, path
        for name in ("scale", "seed", "device"):
            assert f"{name} =" in cells[0].source, (path, name)


def test_unknown_notebook_or_scale_is_refused(tmp_path):
    with pytest.raises(FedkitError, match="no notebook or folder"):
        find_notebooks([tmp_path / "nope.ipynb"])
    with pytest.raises(FedkitError, match="scale must be one of"):
        run_notebooks([TEACHING], scale="huge")


def _notebook(path: Path, name: str, fail: bool = False) -> Path:
    """A tiny notebook that saves a figure (with its scale and thread budget) or, if ``fail``, raises."""
    import nbformat

    save = ("import os, pandas as pd, matplotlib.pyplot as plt\n"
            "from fedkit.figures import save_figure\n"
            "fig = plt.figure()\n"
            f"save_figure(fig, pd.DataFrame({{'scale': [scale],"
            f" 'threads': [os.environ.get('OMP_NUM_THREADS')]}}), 'jobs', '{name}')")
    cells = [nbformat.v4.new_code_cell('scale = "small"\nseed = 0\ndevice = "cpu"', metadata={"tags": ["parameters"]}),
             nbformat.v4.new_code_cell("raise ValueError('boom\\nsecond line')" if fail else save)]
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=kernel), path / f"{name}.ipynb")
    return path / f"{name}.ipynb"


def test_jobs_run_notebooks_side_by_side_with_a_thread_budget_each(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [')  # fails before any kernel starts
    first = _notebook(tmp_path, "first")
    done = run_notebooks([broken, first], scale="ci", output_dir=tmp_path / "executed", jobs=2)
    assert [r.notebook for r in done] == [broken, first]
    assert done[0].error.startswith("NotJSONError: Notebook does not appear to be JSON") and done[0].written == []
    assert done[1].error is None and done[1].written == [tmp_path / "figures" / "jobs" / name
                                                          for name in ("first.csv", "first.png",
                                                                       "first.provenance.json")]
    assert (tmp_path / "figures" / "jobs" / "first.csv").read_text().splitlines()[1] == "ci,2"


def test_figures_command_runs_every_notebook_and_names_the_failing_cell(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    monkeypatch.chdir(tmp_path)  # executed copies go to ./runs/notebooks
    failing, passing = _notebook(tmp_path, "failing", fail=True), _notebook(tmp_path, "passing")
    assert main(["figures", str(failing), str(passing), "--scale", "ci", "--jobs", "1"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(rf"notebook +status +minutes +written under {re.escape(str(tmp_path))}/figures", lines[0])
    assert re.fullmatch(rf"{re.escape(str(failing))} +FAILED +\d+\.\d +-", lines[1])
    assert re.fullmatch(rf"{re.escape(str(passing))} +ok +\d+\.\d +jobs/passing\.csv, jobs/passing\.png, "
                        r"jobs/passing\.provenance\.json", lines[2])
    executed = Path("runs/notebooks") / tmp_path.name / "failing.ipynb"
    assert lines[3] == f"FAILED {failing}: cell In [3]: ValueError: boom (executed copy: {executed})"
    assert lines[4:] == ["2 notebooks: 1 ok, 1 failed"]
    assert (tmp_path / executed).exists() and (tmp_path / "figures" / "jobs" / "passing.png").exists()


def test_jobs_must_be_a_positive_integer():
    with pytest.raises(FedkitError, match="jobs must be an integer ≥ 1, got 0"):
        run_notebooks([TEACHING], scale="ci", jobs=0)


def test_figures_command_passes_further_notebook_parameters(tmp_path, monkeypatch, capsys):
    import nbformat

    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    monkeypatch.chdir(tmp_path)
    cells = [nbformat.v4.new_code_cell('scale = "small"\nseed = 0\ndevice = "cpu"\nstand_in = None\nrounds = 1',
                                       metadata={"tags": ["parameters"]}),
             nbformat.v4.new_code_cell("import pandas as pd, matplotlib.pyplot as plt\n"
                                       "from fedkit.figures import save_figure\n"
                                       "save_figure(plt.figure(), pd.DataFrame({'stand_in': [stand_in], "
                                       "'rounds': [rounds]}), 'params', 'p')")]
    kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=kernel), tmp_path / "p.ipynb")
    assert main(["figures", str(tmp_path / "p.ipynb"), "--scale", "ci", "-p", "stand_in=fashion_mnist",
                 "-p", "rounds=7"]) == 0
    assert (tmp_path / "figures" / "params" / "p.csv").read_text().splitlines()[1] == "fashion_mnist,7"
    with pytest.raises(SystemExit):
        main(["figures", str(tmp_path / "p.ipynb"), "-p", "stand_in"])
    assert "must be NAME=VALUE with NAME a Python identifier, got 'stand_in'" in capsys.readouterr().err
    with pytest.raises(FedkitError, match=r"set \['scale'\] with their own options"):
        run_notebooks([tmp_path / "p.ipynb"], params={"scale": "ci"})
