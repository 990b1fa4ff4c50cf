"""Tables computed from a run's model, kept in the run archive: computed once, read back exactly, read instead of
computed (and so instead of training the model) when archived; a notebook built on them renders from the archive
alone."""
import json

import pandas as pd
import pytest

from fedkit import Config, archive, derived, run
from fedkit.errors import FedkitError
from fedkit.figures import coverage


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    monkeypatch.setattr(derived, "USED", {})


def digits_history(tmp_path, seed=0):
    cfg = Config(dataset="digits", num_clients=4, clients_per_round=2, model="mlp", model_args={"hidden": [8]},
                 rounds=2, local_steps=2, batch_size=16, lr=0.3, seed=seed)
    return run(cfg, cache=tmp_path / "cache", progress=False)


def norms_of(history):
    """A small table with every kind of column a derived table has."""
    w = history.weights
    return pd.DataFrame({"round": [1, 2], "tensor": ["a", "b"], "norm": [float(w.norm()), float(w.abs().sum())],
                         "positive": [True, False], "share": pd.array([0.5, 0.25], dtype="float32")})


def test_a_table_is_computed_once_archived_and_read_back_exactly_instead_of_computed(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    h = digits_history(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return norms_of(h)

    first = derived.table(h, "norms", compute, chunk=8)
    again = derived.table(h, "norms", compute, chunk=8)
    pd.testing.assert_frame_equal(first, again)
    assert len(calls) == 1
    again.loc[0, "norm"] = -1.0  # a copy: the notebook may change what it gets
    assert derived.table(h, "norms", compute, chunk=8).loc[0, "norm"] == first.loc[0, "norm"]
    derived.table(h, "norms", compute, chunk=16)  # other parameters: another table
    assert len(calls) == 2
    path = derived.write(tmp_path / "figures" / "paper_x", "nb")
    assert path == tmp_path / "figures" / "paper_x" / "runs" / "nb.derived.parquet"
    assert set(derived.used()) == set(json.loads(archive.pq.read_schema(path).metadata[derived.META]))

    monkeypatch.setattr(derived, "USED", {})  # a new process, on a machine with only the archive
    read = derived.table(h, "norms", lambda: pytest.fail("computed again"), chunk=8)
    pd.testing.assert_frame_equal(read, first)  # values and dtypes (int, str, float64, bool, float32)
    assert archive.index(archive.root()) == {}  # the run archive's index does not take it for a runs file


def test_a_render_cut_off_keeps_the_tables_it_computed(tmp_path, monkeypatch):
    """During a render (``fedkit figures`` names the notebook's tables file) a computed table is archived at once:
    a render stopped before its first figure (a session's end) leaves it for the next one, which reads it."""
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    target = derived.file(tmp_path / "figures" / "paper_x", "nb")
    monkeypatch.setenv(derived.RENDERING, str(target))
    h = digits_history(tmp_path)
    first = derived.table(h, "norms", lambda: norms_of(h), chunk=8)
    assert target.exists()  # no save_table, no derived.write yet

    monkeypatch.setattr(derived, "USED", {})  # the render was stopped; the next one starts
    monkeypatch.delenv(derived.RENDERING)
    derived.index.cache_clear()
    read = derived.table(h, "norms", lambda: pytest.fail("computed again"), chunk=8)
    pd.testing.assert_frame_equal(read, first)
    assert not (tmp_path / "figures" / "paper_x" / "runs" / "nb.parquet").exists()  # tables only, no run archive


def test_a_second_render_keeps_the_tables_of_the_first(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
    a, b = digits_history(tmp_path, 0), digits_history(tmp_path, 1)
    derived.table(a, "norms", lambda: norms_of(a))
    derived.write(tmp_path / "figures", "nb")
    monkeypatch.setattr(derived, "USED", {})
    derived.table(b, "norms", lambda: norms_of(b))
    derived.write(tmp_path / "figures", "nb")
    monkeypatch.setattr(derived, "USED", {})
    for h in (a, b):
        pd.testing.assert_frame_equal(derived.table(h, "norms", lambda: pytest.fail("computed")), norms_of(h))


def test_bad_tables_and_files_are_named(tmp_path):
    h = digits_history(tmp_path)
    with pytest.raises(FedkitError, match="'norms'.*returned a dict"):
        derived.table(h, "norms", dict)
    assert derived.write(tmp_path / "figures", "nb") is None  # nothing used, nothing written
    bad = tmp_path / "runs" / "nb.derived.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"not parquet")
    with pytest.raises(FedkitError, match="nb.derived.parquet"):
        derived._read(bad)


def test_a_notebook_reading_models_renders_again_from_the_archive_alone(tmp_path, render_ci):
    notebook = "notebooks/feddual/fig1_fig7_loss_landscapes.ipynb"
    first = render_ci(notebook, "cache")
    tables = tmp_path / "figures" / "feddual" / "runs" / "fig1_fig7_loss_landscapes.derived.parquet"
    assert tables in first.written
    csv = tmp_path / "figures" / "feddual" / "fig1_fig7_sharpness.csv"
    before = csv.read_text()
    used = json.loads(csv.with_suffix(".provenance.json").read_text())["derived"]
    assert {d["analysis"] for d in used.values()} == {"loss_surface_2d"} and len(used) == 9  # 3 models x 3 seeds

    render_ci(notebook, "empty_cache")  # a fresh machine: no run cache, no models
    assert not any((tmp_path / "empty_cache").glob("*"))  # nothing trained
    assert csv.read_text() == before
    assert (coverage(tmp_path / "figures")[["tables", "tables_archived"]].to_numpy() == 9).all()
