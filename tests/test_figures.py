"""The batch figure pipeline: papermill runs a notebook at a scale and the figure lands in figures/."""
from pathlib import Path

import pytest

from fedkit.errors import FedkitError
from fedkit.figures import find_notebooks, run_notebooks

TEACHING = Path(__file__).parents[1] / "notebooks" / "teaching" / "client_drift.ipynb"


def test_papermill_run_writes_png_and_csv(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    done = run_notebooks([TEACHING], scale="ci", output_dir=tmp_path / "executed")
    assert [path for path, _ in done] == [TEACHING]
    assert (tmp_path / "figures" / "teaching" / "client_drift.png").stat().st_size > 10_000
    csv = (tmp_path / "figures" / "teaching" / "client_drift.csv").read_text()
    assert csv.startswith("algorithm,round,w0,w1,distance_to_optimum")
    assert (tmp_path / "executed" / "teaching" / "client_drift.ipynb").exists()


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
