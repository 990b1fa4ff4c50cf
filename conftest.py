"""Test-session settings shared by the unit tests and the nbval notebook runs."""
import json
import os
import tempfile
from functools import cache
from pathlib import Path

import pytest


def pytest_configure(config):
    # Notebooks (run by nbval, which cannot inject papermill parameters) read their scale from here, and
    # must not overwrite the committed figures/ nor fill the user's run cache.
    scratch = tempfile.mkdtemp(prefix="fedkit-tests-")
    os.environ["FEDKIT_SCALE"] = "ci"
    os.environ.setdefault("FEDKIT_FIGURES", os.path.join(scratch, "figures"))
    os.environ.setdefault("FEDKIT_CACHE", os.path.join(scratch, "runs"))
    os.environ.setdefault("MPLBACKEND", "Agg")


@cache
def needed_data(notebook: Path) -> tuple[str, ...]:
    """The data-root folders a notebook declares in its metadata (``"fedkit": {"needs_data": [...]}``)."""
    return tuple(json.loads(notebook.read_text(encoding="utf-8"))["metadata"].get("fedkit", {}).get("needs_data", []))


def data_here() -> Path | None:
    """$FEDKIT_DATA when it names a folder: the real data sets (a copy of shared/data)."""
    root = os.environ.get("FEDKIT_DATA")
    return Path(root) if root and Path(root).is_dir() else None


def pytest_collection_modifyitems(config, items):
    """Tests that need the real files carry the mark shared_data, and skip with the reason where $FEDKIT_DATA does
    not hold them; so does every cell of a notebook that declares data it needs. Everything else runs anywhere: a
    test that needs the data without the mark fails on a machine without it (CI runs the suite so)."""
    root = data_here()
    for item in items:
        path = Path(str(item.fspath))
        needs = needed_data(path) if path.suffix == ".ipynb" else ()
        if needs:
            item.add_marker(pytest.mark.shared_data)
        if item.get_closest_marker("shared_data") is None:
            continue
        missing = [d for d in needs if root is None or not (root / d).is_dir()]
        if root is None or missing:
            what = ", ".join(missing) or "the real data sets"
            item.add_marker(pytest.mark.skip(reason=f"needs {what} under $FEDKIT_DATA (set it to a copy of "
                                                    "shared/data)"))


@pytest.fixture
def render_ci(tmp_path, monkeypatch):
    """Render a notebook at ci scale into ``tmp_path/figures`` with the run cache ``tmp_path/<cache>``; the result,
    checked to have no error. A cache that is still empty afterwards means the render trained nothing."""
    from fedkit.figures import run_notebooks

    def render(notebook: str, cache: str):
        monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path / "figures"))
        monkeypatch.setenv("FEDKIT_CACHE", str(tmp_path / cache))
        [result] = run_notebooks([notebook], scale="ci", output_dir=tmp_path / "executed")
        assert result.error is None, result.error
        return result

    return render
