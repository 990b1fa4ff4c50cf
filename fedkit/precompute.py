"""Fill the run cache with the runs notebooks list, before the notebooks render them (``fedkit figures
--precompute``). A config's listed seeds train together (``run_together``: one stack per round), and several such
groups train at once in worker processes: the kit's small models leave a GPU idle between one process's launches,
so groups in parallel processes overlap there. Groups start in the listing's order (a run labelled '?' only where an
earlier result calls for it goes last) until a deadline; a run cut off there keeps its checkpoint, so the next
precompute, or the notebook itself, resumes it. A run only the run archive holds is read from there, unless its
notebook reads its model and no table from it is archived (``plan.reads_models``): that one trains again, into the
cache, as the plan counts it. The notebooks then read every finished run from the cache; with
``archive``, each finished group also goes into the run archive of every notebook that lists it, as their render
would put it there. Workers end with the precompute, however it ends (an interrupt, SIGTERM, SIGKILL): none is left
training as an orphan."""
from __future__ import annotations

import csv
import multiprocessing
import os
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from .config import Config
from .errors import FedkitError


@dataclass
class Group:
    """Configs that differ only in their seed, with the notebooks and labels that list them."""
    configs: list[Config]
    labels: list[str] = field(default_factory=list)  # "<paper>/<notebook>/<label>"
    models: bool = False  # a notebook reads their models and no table from them is archived: train archived ones too

    @property
    def conditional(self) -> bool:
        return all(label.endswith("?") for label in self.labels)


class DeadlineReached(Exception):
    pass


class _Worker(multiprocessing.context.SpawnProcess):
    """A pool worker that exits as soon as the process that started it is gone, however that ended (SIGKILL too)."""

    def run(self):
        threading.Thread(target=_exit_with_parent, daemon=True).start()
        super().run()


def _exit_with_parent() -> None:
    multiprocessing.parent_process().join()  # its sentinel: a pipe only the parent holds open
    os._exit(1)


class _Workers(multiprocessing.context.SpawnContext):
    """The spawn context (CUDA cannot be forked) with ``_Worker`` processes."""
    Process = _Worker


def _stop_at(deadline: float, parent: int | None = None, last: int | None = None):
    """A run callback that stops the run after the round that passes ``deadline``, or once the process ``parent``
    (the precompute that started this worker) is gone: a killed precompute leaves no worker training. A run whose
    round ``last`` is done is let finish (and be saved)."""
    def check(record, w):
        if last is not None and record["round"] >= last:
            return
        if time.time() > deadline:
            raise DeadlineReached(f"stopped after round {record['round']}")
        if parent is not None and os.getppid() != parent:
            raise DeadlineReached(f"stopped after round {record['round']}: the precompute that started it is gone")
    return check


def listed_groups(notebooks, scale: str, device: str, seed: int = 0, match: str | None = None):
    """The notebooks' listed runs (``fedkit.plan.listed_runs``) whose "<paper>/<notebook>/<label>" matches ``match``
    (a regular expression; None: all), grouped by config up to the seed, in listing order with the '?' groups last
    (``Group.models``: ``plan.needs_model``); and, by data set, why the runs on data
    that is not here were left out."""
    from .figures import find_notebooks
    from .plan import Planner, matching_runs, needs_model

    planner, groups, skipped = Planner(device), {}, {}
    for notebook in find_notebooks(notebooks):
        runs, _ = matching_runs(notebook, scale, seed, device, match)
        model_read = needs_model(notebook)
        for name, cfg in (runs or {}).items():
            why = planner.missing(cfg)
            if why is not None:
                skipped[cfg.dataset] = why
                continue
            group = groups.setdefault(cfg.replace(seed=0).key(), Group([]))
            if cfg.key() not in {c.key() for c in group.configs}:
                group.configs.append(cfg)
            group.labels.append(name)
            group.models |= model_read(cfg)
    ordered = sorted(groups.values(), key=lambda g: g.conditional)  # stable: listing order otherwise
    return ordered, skipped


def archives_of(group: Group, scale: str) -> list[tuple[str, str]]:
    """The (figures folder, notebook) whose run archive each notebook listing ``group`` renders into at ``scale``."""
    from .figures import paper_folder

    notebooks = dict.fromkeys(tuple(label.split("/")[:2]) for label in group.labels)
    return [(str(paper_folder(paper, scale)), notebook) for paper, notebook in notebooks]


def _train(configs: list[dict], deadline: float, threads: int, parent: int | None = None,
           archive_to: list[tuple[str, str]] = (), models: bool = False) -> dict:
    """One group in a worker process: train its seeds together (``models``: those only archived too, for their
    models), add them to the archives ``archive_to`` (figures folder, notebook); report how it ended."""
    import torch

    from . import archive
    from .runner import default_cache, finished_run, run_together

    torch.set_num_threads(threads)
    cfgs = [Config.from_dict(c) for c in configs]
    start = time.time()
    cached = all(finished_run(c, default_cache(), archived=not models) is not None for c in cfgs)
    if start > deadline and not cached:
        return {"status": "not started (deadline)", "seconds": 0.0}
    watched = parent if parent != os.getpid() else None  # run in the precompute's own process: nothing to watch
    try:
        histories = run_together(cfgs, progress=False, archive=not models,
                                 callbacks=[_stop_at(deadline, watched, max(c.rounds for c in cfgs))])
    except DeadlineReached as err:
        return {"status": f"cut off at the deadline, {err}; its checkpoint is kept", "seconds": time.time() - start}
    except Exception as err:  # one group's failure must not lose the others
        return {"status": f"failed: {type(err).__name__}: {' '.join(str(err).splitlines())}",
                "seconds": time.time() - start}
    for folder, notebook in archive_to:
        archive.write(Path(folder), notebook, {c.key(): h for c, h in zip(cfgs, histories)})
    finals = ["×" if h.diverged else f"{100 * h.final_accuracy:.2f}" for h in histories]
    return {"status": "done", "seconds": time.time() - start, "final %": " ".join(finals)}


def worker_threads(workers: int) -> int:
    """Torch threads per worker: $OMP_NUM_THREADS where set (1 beside other work), else the cores shared out."""
    given = os.environ.get("OMP_NUM_THREADS", "")
    if not given:
        return max(1, (os.cpu_count() or 1) // workers)
    if not given.isdigit() or int(given) < 1:
        raise FedkitError(f"OMP_NUM_THREADS={given!r} is not a positive whole number")
    return int(given)


def precompute(notebooks, scale: str, device: str = "cpu", seed: int = 0, workers: int = 1,
               minutes: float | None = None, match: str | None = None, log: str | Path | None = None,
               archive: bool = False) -> list[dict]:
    """Train every listed run of ``notebooks`` at ``scale`` into the run cache, ``workers`` groups at a time, none
    started (and none continued past a round) after ``minutes``; one row per group, also appended to the CSV ``log``
    as each ends. ``archive``: add each finished group to its notebooks' run archives (``archives_of``)."""
    if workers < 1:
        raise FedkitError(f"workers must be at least 1, got {workers}")
    threads = worker_threads(workers)
    groups, skipped = listed_groups(notebooks, scale, device, seed, match)
    for name, why in sorted(skipped.items()):
        print(f"precompute: runs on {name} left out: {why}", file=sys.stderr)
    deadline = time.time() + (60 * minutes if minutes is not None else float("inf"))
    rows, writer = [], None
    handle = open(log, "a", newline="") if log is not None else None
    try:
        with ProcessPoolExecutor(workers, mp_context=_Workers()) as pool:
            futures = {pool.submit(_train, [c.to_dict() for c in g.configs], deadline, threads, os.getpid(),
                                   archives_of(g, scale) if archive else [], g.models): g for g in groups}
            for future in _terminating_workers_on_interrupt(as_completed(futures)):
                group, first = futures[future], futures[future].configs[0]
                row = {"runs": "; ".join(group.labels), "algorithm": first.algorithm, "dataset": first.dataset,
                       "seeds": " ".join(str(c.seed) for c in group.configs),
                       "keys": " ".join(c.key() for c in group.configs), "device": device, "workers": workers,
                       "final %": "", **future.result()}
                rows.append(row)
                print(f"precompute: {row['status']:<10.60} {row['seconds']:7.1f} s  {row['final %']:<20} "
                      f"{group.labels[0]}{f' (+{len(group.labels) - 1})' if len(group.labels) > 1 else ''}",
                      flush=True)
                if handle is not None:
                    if writer is None:
                        writer = csv.DictWriter(handle, fieldnames=list(row))
                        if handle.tell() == 0:
                            writer.writeheader()
                    writer.writerow(row)
                    handle.flush()
    finally:
        if handle is not None:
            handle.close()
    return rows


def _terminating_workers_on_interrupt(futures):
    """``futures`` as they complete; an interrupt while waiting (Ctrl-C: KeyboardInterrupt) first terminates the
    workers, which the pool would otherwise wait for until their runs end."""
    try:
        yield from futures
    except BaseException:
        for worker in multiprocessing.active_children():
            if isinstance(worker, _Worker):
                worker.terminate()
        raise
