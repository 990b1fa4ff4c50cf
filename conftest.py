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


def pytest_collection_modifyitems(config, items):
    """Skip, with the reason, the cells of a notebook whose real data is not under $FEDKIT_DATA (like the shared_data
    tests): a notebook on embedded data always runs."""
    root = os.environ.get("FEDKIT_DATA")
    for item in items:
        path = Path(str(item.fspath))
        if path.suffix != ".ipynb":
            continue
        missing = [d for d in needed_data(path) if not root or not (Path(root) / d).is_dir()]
        if missing:
            item.add_marker(pytest.mark.skip(reason=f"{path.name} needs {', '.join(missing)} under $FEDKIT_DATA "
                                                    f"(set it to a copy of shared/data)"))
