"""The notebook pipeline: where figures go, and the batch command that regenerates them with papermill.

Every notebook under notebooks/<paper>/ has a cell tagged ``parameters`` holding at least ``scale``
("ci" | "small" | "paper"), ``seed`` and ``device``; its default scale comes from $FEDKIT_SCALE so that
nbval (which cannot inject parameters) runs it at "ci". It writes figures/<paper>/<name>.png and the
numbers behind the figure as figures/<paper>/<name>.csv.
"""
from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SCALES = ("ci", "small", "paper")


def repo_root() -> Path | None:
    """The fedkit checkout containing the current directory, if any."""
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "pyproject.toml").exists() and (folder / "notebooks").is_dir():
            return folder
    return None


def figures_root() -> Path:
    """$FEDKIT_FIGURES, else the checkout's figures/ folder, else ./figures."""
    if "FEDKIT_FIGURES" in os.environ:
        return Path(os.environ["FEDKIT_FIGURES"])
    root = repo_root()
    return (root or Path.cwd()) / "figures"


def default_scale() -> str:
    scale = os.environ.get("FEDKIT_SCALE", "small")
    if scale not in SCALES:
        from .errors import ConfigError
        raise ConfigError(f"FEDKIT_SCALE must be one of {SCALES}, got {scale!r}")
    return scale


def save_figure(fig, data, paper: str, name: str) -> Path:
    """Write figures/<paper>/<name>.png and, if ``data`` (a DataFrame) is given, <name>.csv beside it."""
    folder = figures_root() / paper
    folder.mkdir(parents=True, exist_ok=True)
    png = folder / f"{name}.png"
    fig.savefig(png, dpi=130, bbox_inches="tight")
    if data is not None:
        data.to_csv(folder / f"{name}.csv", index=False)
    return png


def find_notebooks(targets: list[str | Path]) -> list[Path]:
    """Notebooks named, or found under the folders named (default: the checkout's notebooks/)."""
    if not targets:
        root = repo_root()
        if root is None:
            from .errors import FedkitError
            raise FedkitError("no notebooks given and no fedkit checkout (with notebooks/) above "
                              f"{Path.cwd()}")
        targets = [root / "notebooks"]
    found = []
    for target in map(Path, targets):
        if target.is_dir():
            found += sorted(p for p in target.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        elif target.suffix == ".ipynb" and target.exists():
            found.append(target)
        else:
            from .errors import FedkitError
            raise FedkitError(f"no notebook or folder at {str(target)!r}")
    return found


def run_notebooks(targets, scale: str = "small", seed: int = 0, device: str = "cpu",
                  output_dir: str | Path = "runs/notebooks", jobs: int = 1) -> list[tuple[Path, float]]:
    """Execute notebooks with papermill at ``scale``; executed copies go to ``output_dir``.

    ``jobs`` notebooks run at once, in separate processes whose kernels get cpu_count // jobs threads each
    (unless OMP_NUM_THREADS is set): small models use cores better side by side than split across threads.
    Notebooks that share a run share it through the run cache.
    """
    from .errors import ConfigError

    if scale not in SCALES:
        raise ConfigError(f"scale must be one of {SCALES}, got {scale!r}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ConfigError(f"jobs must be an integer ≥ 1, got {jobs!r}")
    notebooks = find_notebooks(targets)
    parameters = {"scale": scale, "seed": seed, "device": device}
    tasks = [(notebook, Path(output_dir) / notebook.parent.name / notebook.name, parameters)
             for notebook in notebooks]
    if jobs == 1:
        return [(notebook, _execute(*task)) for notebook, task in zip(notebooks, tasks)]
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context) as pool:
        return list(zip(notebooks, pool.map(_execute, *zip(*tasks))))


def _execute(notebook: Path, out: Path, parameters: dict) -> float:
    """Run one notebook with papermill; its wall-clock seconds."""
    import papermill

    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    papermill.execute_notebook(str(notebook), str(out), cwd=str(notebook.parent), progress_bar=False,
                               parameters=parameters)
    return time.perf_counter() - start
