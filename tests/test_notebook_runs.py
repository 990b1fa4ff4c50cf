"""Each paper module's ``runs`` lists exactly the configs its notebook runs: the notebook is executed at ci scale and
the keys of the configs it ran (fedkit.runner.SEEN, read from its kernel) are compared with the listing; and every
run it ran lands in the run archive its saves write (a run after the last save would not). Slow (every notebook
runs), so outside the default suite: ``pytest -m notebook_runs [-k <notebook>]``."""
import importlib
import os
from pathlib import Path

import pytest

from conftest import needed_data
from fedkit import archive, derived
from fedkit.figures import WRITTEN_LOG

pytestmark = pytest.mark.notebook_runs  # opt in: deselected by the default addopts (pyproject.toml)
NOTEBOOKS = sorted(p for p in (Path(__file__).parents[1] / "notebooks").glob("*/*.ipynb")
                   if p.parent.name != "teaching")


def ran_at_ci(notebook: Path) -> set[str]:
    """The keys of the configs ``notebook`` ran at ci scale, from a cell appended to it."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, 4)
    nb.cells.append(nbformat.v4.new_code_cell("from fedkit.runner import seen_configs\n"
                                              "print('SEEN', *sorted(seen_configs()))"))
    NotebookClient(nb, timeout=900, resources={"metadata": {"path": str(notebook.parent)}}).execute()
    text = "".join(out.get("text", "") for out in nb.cells[-1].outputs)
    return set(text.split()[1:])


def archived_keys(written_log: Path) -> set[str]:
    """The config keys in the run archives a notebook's saves wrote (as the last save left them)."""
    paths = {Path(line) for line in written_log.read_text(encoding="utf-8").split()} if written_log.exists() else set()
    return {key for path in paths if path.name.endswith(".parquet")
            and not path.name.endswith((".clients.parquet", derived.SUFFIX)) for key in archive.read(path)}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_listed_runs_are_the_notebooks_runs_at_ci_and_all_archived(notebook, tmp_path, monkeypatch):
    root = Path(os.environ.get("FEDKIT_DATA", "/nonexistent"))
    missing = [d for d in needed_data(notebook) if not (root / d).is_dir()]
    if missing:
        pytest.skip(f"{notebook.name} needs {', '.join(missing)} under $FEDKIT_DATA")
    listed = importlib.import_module(f"fedkit.papers.{notebook.parent.name}").runs(notebook.stem, "ci")
    every = {cfg.key(): label for label, cfg in listed.items()}
    certain = {cfg.key(): label for label, cfg in listed.items() if not label.endswith("?")}
    monkeypatch.setenv(WRITTEN_LOG, str(tmp_path / "written.log"))  # the kernel inherits it: the files it writes
    ran = ran_at_ci(notebook)
    assert not set(certain) - ran, f"listed but not run: {[certain[k] for k in set(certain) - ran]}"
    assert not ran - set(every), f"run but not listed: {len(ran - set(every))} configs"
    unarchived = ran - archived_keys(tmp_path / "written.log")
    assert not unarchived, f"run but not archived (after the last save?): {[every[k] for k in unarchived]}"
