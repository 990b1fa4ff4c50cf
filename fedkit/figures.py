"""The notebook pipeline: where figures go, the batch command that regenerates them with papermill, and which
committed figures the run archive can render (``coverage``).

Every notebook under notebooks/<paper>/ has a cell tagged ``parameters`` holding at least ``scale``
("ci" | "small" | "paper"), ``seed`` and ``device``; its default scale comes from $FEDKIT_SCALE so that
nbval (which cannot inject parameters) runs it at "ci". It writes figures/<paper>/<name>.png and the
numbers behind the figure as figures/<paper>/<name>.csv.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import archive, derived
from .checkout import figures_root, repo_root
from .provenance import code_state

SCALES = ("ci", "small", "paper")
WRITTEN_LOG = "FEDKIT_FIGURES_LOG"  # file that save_figure appends the paths it writes to
NOTEBOOK = "FEDKIT_NOTEBOOK"  # the notebook being rendered: its runs are archived under its name
SIGNIFICANT = 15  # digits a table's floats keep: all a decimal keeps through a float, so only last-bit noise goes


def default_scale() -> str:
    scale = os.environ.get("FEDKIT_SCALE", "small")
    if scale not in SCALES:
        from .errors import ConfigError
        raise ConfigError(f"FEDKIT_SCALE must be one of {SCALES}, got {scale!r}")
    return scale


def save_figure(fig, data, paper: str, name: str, scale: str | None = None) -> Path:
    """Write figures/<paper>/<name>.png and, if ``data`` (a DataFrame) is given, the numbers behind it (``save_table``).
    At ``scale`` "paper" (default: $FEDKIT_SCALE, which `fedkit figures` sets) both go to figures/<paper>/paper/."""
    folder = _folder(paper, scale)
    png = folder / f"{name}.png"
    fig.savefig(png, dpi=130, bbox_inches="tight")
    _log_written([png])
    if data is not None:
        save_table(data, paper, name, scale)
    return png


def save_table(data, paper: str, name: str, scale: str | None = None) -> Path:
    """Write ``data`` (a DataFrame) as figures/<paper>/<name>.csv with its provenance beside it
    (<name>.provenance.json: the commit, the scale, the thread count and every run of this process)."""
    scale = scale or default_scale()
    csv = _folder(paper, scale) / f"{name}.csv"
    data.to_csv(csv, index=False, float_format=_decimal)
    provenance = csv.with_suffix(".provenance.json")
    provenance.write_text(json.dumps(record_provenance(scale), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    _log_written([csv, provenance])
    from .runner import finished_histories

    notebook = os.environ.get(NOTEBOOK, name)
    archived = archive.write(csv.parent, notebook, finished_histories())
    tables = derived.write(csv.parent, notebook)
    _log_written([archived, archived.with_suffix(".clients.parquet")] if archived else [])
    _log_written([tables] if tables else [])
    return csv


def _decimal(x: float) -> str:
    """``x`` to ``SIGNIFICANT`` digits, written as the shortest float that reads back to it: 87.57, not
    87.57000000000001 (100 × 0.8757 in floats), and 3.0, not 3 (the column stays float)."""
    return repr(float(f"{x:.{SIGNIFICANT}g}"))


def paper_folder(paper: str, scale: str) -> Path:
    """Where ``paper``'s figures at ``scale`` live: figures/<paper>/paper/ at paper scale, figures/<paper>/ else."""
    return figures_root() / paper / ("paper" if scale == "paper" else "")


def _folder(paper: str, scale: str | None) -> Path:
    folder = paper_folder(paper, scale or default_scale())
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _log_written(paths: list[Path]) -> None:
    if os.environ.get(WRITTEN_LOG):  # set by run_notebooks: the summary lists each notebook's files
        with open(os.environ[WRITTEN_LOG], "a", encoding="utf-8") as log:
            log.writelines(f"{path.absolute()}\n" for path in paths)


def record_provenance(scale: str) -> dict:
    """Where a figure's numbers came from: the fedkit commit when this module was imported, i.e. the code the notebook
    runs (and fedkit/'s uncommitted changes then, if any), the scale, torch's thread count, the seconds since fedkit
    was imported (about the notebook's wall time), and every run of this process by config key (algorithm files are
    what the ledger checks for staleness) with where and how long it trained (empty for a run trained before
    histories recorded it; ``"cached": false`` for a run timed without the cache, which every render trains again),
    and the tables it computed from models (``fedkit.derived``), if any."""
    import torch

    from . import IMPORTED_AT
    from .runner import finished_histories, seen_configs, uncached_keys

    trained, timed = {key: h.provenance for key, h in finished_histories().items()}, uncached_keys()
    runs = {key: {"algorithms": sorted({cfg.algorithm, *([cfg.algorithm_args["base"]]
                                                          if "base" in cfg.algorithm_args else [])}),
                  "dataset": cfg.dataset, "model": cfg.model, "seed": cfg.seed, "rounds": cfg.rounds,
                  "device": cfg.device, "trained": trained.get(key, {}), **({"cached": False} if key in timed else {})}
            for key, cfg in seen_configs().items()}
    commit, uncommitted = CODE_STATE
    return {"written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": commit, "uncommitted": list(uncommitted),
            "scale": scale, "threads": torch.get_num_threads(), "torch": torch.__version__,
            "seconds": round(time.time() - IMPORTED_AT, 1),
            "seeds": sorted({run["seed"] for run in runs.values()}),
            "devices": sorted({run["device"] for run in runs.values()}), "runs": runs,
            **({"derived": derived.used()} if derived.used() else {})}


CODE_STATE = code_state()  # at import: a notebook imports this before its runs, so it names the code they ran


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


def notebook_parameters(notebook: Path) -> list[str]:
    """The names the notebook's cell tagged ``parameters`` sets (as papermill reads them; none if it cannot be read,
    and then its run fails with the reason)."""
    import papermill

    try:
        return list(papermill.inspect_notebook(str(notebook)))
    except Exception:  # noqa: BLE001 - a broken notebook is reported when it runs
        return []


@dataclass
class NotebookResult:
    notebook: Path
    executed: Path  # papermill's executed copy (with the traceback, if it failed)
    seconds: float
    written: list[Path]  # files the notebook wrote through save_figure
    error: str | None = None  # "cell In [n]: Error: message" if it failed


def run_notebooks(targets, scale: str = "small", seed: int = 0, device: str = "cpu",
                  output_dir: str | Path = "runs/notebooks", jobs: int = 1,
                  params: dict | None = None) -> list[NotebookResult]:
    """Execute notebooks with papermill at ``scale``; executed copies go to ``output_dir``. ``params`` sets further
    parameters of every notebook (e.g. {"stand_in": "fashion_mnist"} for DRAG's Fig. 4).

    Every notebook is run, whether or not others fail. ``jobs`` notebooks run at once, in separate processes
    whose kernels get cpu_count // jobs threads each (unless OMP_NUM_THREADS is set): small models use cores
    better side by side than split across threads. Notebooks that share a run share it through the run cache.
    """
    from .errors import ConfigError

    if scale not in SCALES:
        raise ConfigError(f"scale must be one of {SCALES}, got {scale!r}")
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise ConfigError(f"jobs must be an integer ≥ 1, got {jobs!r}")
    notebooks = find_notebooks(targets)
    if "FEDKIT_FIGURES" in os.environ:  # kernels run in the notebook's folder: pass them an absolute path
        os.environ["FEDKIT_FIGURES"] = str(Path(os.environ["FEDKIT_FIGURES"]).absolute())
    params = params or {}
    clash = sorted(set(params) & {"scale", "seed", "device"})
    if clash:
        raise ConfigError(f"set {clash} with their own options, not as notebook parameters")
    known = {notebook: notebook_parameters(notebook) for notebook in notebooks} if params else {}
    for name in params:
        if not any(name in names for names in known.values()):
            names = ", ".join(sorted(set().union(*known.values())))
            where = f"notebook {str(notebooks[0])!r}" if len(notebooks) == 1 else f"the {len(notebooks)} notebooks"
            raise ConfigError(f"unknown notebook parameter {name!r}: the parameters cell of {where} sets {names}")
    tasks = [(notebook, Path(output_dir) / notebook.parent.name / notebook.name,
              {"scale": scale, "seed": seed, "device": device,
               **{k: v for k, v in params.items() if k in known[notebook]}})
             for notebook in notebooks]
    if jobs == 1:
        return [_execute(*task) for task in tasks]
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // jobs)))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context) as pool:
        return list(pool.map(_execute, *zip(*tasks)))


def _execute(notebook: Path, out: Path, parameters: dict) -> NotebookResult:
    """Run one notebook with papermill; a failure is caught and described in one line."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out.parent.mkdir(parents=True, exist_ok=True)
    error = None
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "written"
        os.environ[WRITTEN_LOG] = str(log)  # the kernel inherits it (one notebook at a time per process)
        os.environ[NOTEBOOK] = notebook.stem
        # notebooks/<paper>/x.ipynb saves under <paper>'s folder: its tables file is known before its first save
        folder = paper_folder(notebook.parent.name, parameters["scale"]).absolute()
        os.environ[derived.RENDERING] = str(derived.file(folder, notebook.stem))
        os.environ[archive.RENDERING] = str(archive.file(folder, notebook.stem))
        scale_before = os.environ.get("FEDKIT_SCALE")
        os.environ["FEDKIT_SCALE"] = parameters["scale"]  # save_figure files paper-scale results apart
        start = time.perf_counter()
        try:
            papermill.execute_notebook(str(notebook), str(out), cwd=str(notebook.parent), progress_bar=False,
                                       parameters=parameters)
        except PapermillExecutionError as e:
            error = f"cell In [{e.exec_count}]: {e.ename}: {_first_line(e.evalue)}"
        except Exception as e:  # a notebook that cannot even start (bad JSON, no kernel) fails alone
            error = f"{type(e).__name__}: {_first_line(str(e))}"
        finally:
            for name in (WRITTEN_LOG, NOTEBOOK, derived.RENDERING, archive.RENDERING):
                del os.environ[name]
            if scale_before is None:
                del os.environ["FEDKIT_SCALE"]
            else:
                os.environ["FEDKIT_SCALE"] = scale_before
        seconds = time.perf_counter() - start
        written = sorted({Path(p) for p in log.read_text().splitlines()}) if log.exists() else []
    return NotebookResult(notebook, out, seconds, written, error)


def _first_line(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


def print_summary(results: list[NotebookResult], file=None) -> None:
    """The closing table (notebook, status, minutes, files written), then one line per failed notebook."""
    root = figures_root().absolute()

    def shown(path: Path) -> str:
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)

    rows = [("notebook", "status", "minutes", f"written under {figures_root()}")]
    rows += [(str(r.notebook), "FAILED" if r.error else "ok", f"{r.seconds / 60:.1f}",
              ", ".join(map(shown, r.written)) or "-") for r in results]
    width = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print(f"{row[0]:<{width[0]}}  {row[1]:<{width[1]}}  {row[2]:>{width[2]}}  {row[3]}", file=file)
    failed = [r for r in results if r.error]
    for r in failed:
        print(f"FAILED {r.notebook}: {r.error} (executed copy: {r.executed})", file=file)
    print(f"{len(results)} notebooks: {len(results) - len(failed)} ok, {len(failed)} failed", file=file)


def coverage(figures: Path) -> pd.DataFrame:
    """Per committed figure under ``figures`` (its provenance file): its scale, the runs it read, how many of them
    the run archive holds and how many it timed without the cache (``timed``: a render times them again on the machine
    at hand, by design), the keys of the others (``lacking``), and the same counts for the tables it computed from
    models (``fedkit.derived``). A figure whose runs and tables are all archived or timed renders on a fresh clone
    without training anything else."""
    held, tables = set(archive.index(figures.absolute())), set(derived.index(figures.absolute()))
    rows = []
    for path in sorted(figures.rglob("*.provenance.json")):
        provenance = json.loads(path.read_text())
        runs, used = provenance.get("runs", {}), set(provenance.get("derived", {}))
        timed = {key for key, run in runs.items() if run.get("cached") is False} - held
        rows.append({"figure": str(path.relative_to(figures)).removesuffix(".provenance.json"),
                     "scale": provenance.get("scale"), "runs": len(runs), "archived": len(set(runs) & held),
                     "timed": len(timed), "lacking": tuple(sorted(set(runs) - held - timed)), "tables": len(used),
                     "tables_archived": len(used & tables)})
    return pd.DataFrame(rows, columns=["figure", "scale", "runs", "archived", "timed", "lacking", "tables",
                                       "tables_archived"])
