"""The plan of a notebook batch (``fedkit figures --plan``), made before anything trains: per notebook, the runs its
paper module lists (``fedkit.papers.<paper>.runs``), their seeds and rounds, whether their data is under the data
root (checked without downloading), the engine "auto" picks on the target device, how far the run cache already holds
them, and the device minutes left, predicted from measured local steps (``fedkit.probe``)."""
from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .config import Config
from .errors import DataNotFoundError, FedkitError
from .history import worker_seconds

PROBE_STEPS = 2  # local steps per probe round (round 1 warms up, round 2 is timed)
SEQUENTIAL_PROBE_CLIENTS = 4  # the sequential engine's time grows linearly with the clients: time a few of them


@dataclass
class NotebookPlan:
    notebook: Path
    runs: dict[str, Config] | None  # by label; None: no paper module lists this notebook's runs
    note: str = ""
    missing: dict[str, str] = field(default_factory=dict)  # data set -> why it is missing
    unfit: dict[str, str] = field(default_factory=dict)  # data set -> why a run cannot train on the data here
    engines: set[str] = field(default_factory=set)  # what "auto" picks on the target device (runs with data)
    minutes: float = 0.0  # predicted for the rounds left of the runs whose data is present
    unpredicted: int = 0  # runs whose data is missing
    finished: int = 0  # runs the cache holds finished (on the target device or one of ``runner.cached_devices()``)
    part_way: int = 0  # runs the cache holds a checkpoint of: their rounds left are counted
    archived: int = 0  # runs the cache lacks and the committed run archive holds: a render reads them, no training
    models: int = 0  # of those, runs whose model the render reads outside an archived table: it trains them again
    conditional: int = 0  # untrained runs a notebook trains only where an earlier result calls for one (label "…?")
    measured: float = 0.0  # minutes the archive records for its runs trained as the probes are (``Planner.measure``)
    measured_runs: int = 0
    measured_predicted: float = 0.0  # the minutes the plan predicts for those same runs


def listed_runs(notebook: Path, scale: str, seed: int = 0, device: str = "cpu") -> tuple[dict[str, Config] | None, str]:
    """The runs of ``notebook`` (in notebooks/<paper>/) from ``fedkit.papers.<paper>.runs``, and its paper module's
    note on it; (None, why) for a notebook no paper module lists."""
    paper = notebook.parent.name
    try:
        module = importlib.import_module(f"{__package__}.papers.{paper}")
    except ModuleNotFoundError:
        return None, f"no paper module fedkit.papers.{paper}: its runs are not listed"
    try:
        runs = module.runs(notebook.stem, scale, seed=seed, device=device)
    except ValueError as err:  # a paper module's runs() refuses a notebook it does not list
        if f"notebook {notebook.stem!r}" not in str(err):
            raise
        return None, f"fedkit.papers.{paper} does not list this notebook's runs"
    return runs, module.NOTES.get(notebook.stem, "")


def reads_models(notebook: Path) -> bool:
    """Whether ``notebook``'s render reads its runs' models (``fedkit.papers.<paper>.MODELS``): an archived run
    without an archived table computed from it then trains again (the run archive keeps no models)."""
    try:
        module = importlib.import_module(f"{__package__}.papers.{notebook.parent.name}")
    except ModuleNotFoundError:
        return False
    return notebook.stem in getattr(module, "MODELS", ())


def needs_model(notebook: Path):
    """A test of a config: whether ``notebook``'s render needs its run's model, which no archived table stands for
    (``reads_models``); the archive read once per notebook."""
    from . import archive, derived

    if not reads_models(notebook):
        return lambda cfg: False
    tabled = derived.runs_with_tables(archive.root())
    return lambda cfg: cfg.key() not in tabled


def matching_runs(notebook: Path, scale: str, seed: int = 0, device: str = "cpu",
                  match: str | None = None) -> tuple[dict[str, Config] | None, str]:
    """``listed_runs`` keyed "<paper>/<notebook>/<label>", only those whose name matches the regular expression
    ``match`` (None: all), e.g. one GPU job's share."""
    runs, note = listed_runs(notebook, scale, seed, device)
    if runs is None:
        return None, note
    names = {f"{notebook.parent.name}/{notebook.stem}/{label}": cfg for label, cfg in runs.items()}
    return {n: c for n, c in names.items() if match is None or re.search(match, n)}, note


@contextlib.contextmanager
def offline():
    """No data set, tokenizer or weights is downloaded inside (fedkit's and the Hugging Face hub's switches)."""
    import huggingface_hub.constants as hub

    saved = os.environ.get("FEDKIT_DOWNLOAD"), hub.HF_HUB_OFFLINE
    os.environ["FEDKIT_DOWNLOAD"], hub.HF_HUB_OFFLINE = "0", True
    try:
        yield
    finally:
        hub.HF_HUB_OFFLINE = saved[1]
        if saved[0] is None:
            del os.environ["FEDKIT_DOWNLOAD"]
        else:
            os.environ["FEDKIT_DOWNLOAD"] = saved[0]


class Planner:
    """Data checks and step probes, each made once for a whole batch of notebooks."""

    def __init__(self, device: str):
        self.target = device
        cuda_here = device.startswith("cuda") and torch.cuda.is_available()
        self.probe_device = device if cuda_here or not device.startswith("cuda") else "cpu"
        self.data, self.steps, self.engines = {}, {}, {}
        self.probe_seconds = 0.0
        self.load = 0.0  # the highest 1-minute load average seen when a probe started

    def missing(self, cfg: Config) -> str | None:
        """Why ``cfg``'s data (or its tokenizer or frozen weights) is not here, or None: it loads."""
        from .data import load_dataset

        key = (cfg.dataset, json.dumps(cfg.dataset_args, sort_keys=True))
        if key not in self.data:
            try:
                with offline():
                    load_dataset(cfg.dataset, **cfg.dataset_args)
                self.data[key] = None
            except DataNotFoundError as err:
                self.data[key] = str(err).split(". Fix:")[0].splitlines()[0]
        return self.data[key]

    def engine(self, cfg: Config) -> str:
        """The engine ``cfg`` trains with on the target device (chosen once per data, model and engine setting)."""
        from .data import load_dataset
        from .engine import FlatModel, choose_engine
        from .models.registry import build_model

        key = (cfg.dataset, json.dumps(cfg.dataset_args, sort_keys=True), cfg.model,
               json.dumps(cfg.model_args, sort_keys=True), cfg.engine)
        if key not in self.engines:
            data = load_dataset(cfg.dataset, **cfg.dataset_args)
            fm = FlatModel(build_model(cfg.model, data.input_shape, data.num_classes, **cfg.model_args))
            self.engines[key] = choose_engine(cfg.engine, fm, torch.device(self.target))
        return self.engines[key]

    def minutes(self, cfg: Config, engine: str) -> float:
        """Predicted device minutes of ``cfg``'s local steps: rounds × local steps × (one stacked step of a round's
        clients, vectorized, or one step per client, sequential), timed by FedAvg's local steps on the probe device."""
        from .probe import round_seconds

        per_round = cfg.sampled_per_round()
        clients = per_round if engine == "vectorized" else min(per_round, SEQUENTIAL_PROBE_CLIENTS)
        key = (cfg.dataset, json.dumps(cfg.dataset_args, sort_keys=True), cfg.model,
               json.dumps(cfg.model_args, sort_keys=True), cfg.batch_size, cfg.optimizer, engine, clients)
        if key not in self.steps:
            probe = cfg.replace(device=self.probe_device, engine=engine, compile=False, algorithm="fedavg",
                                algorithm_args={}, threat=None, threat_args={}, rounds=2, local_steps=PROBE_STEPS,
                                local_epochs=None, clients_per_round=clients, stop_accuracy=None, snapshots=0)
            self.load = max(self.load, os.getloadavg()[0])
            start = time.perf_counter()
            seconds, steps = round_seconds(probe, 2)[1]
            self.probe_seconds += time.perf_counter() - start
            self.steps[key] = seconds / steps * clients  # one step of the probe's clients
        return cfg.rounds * self.local_steps(cfg) * self.steps[key] * per_round / clients / 60

    def measure(self, out: NotebookPlan, cfg: Config) -> None:
        """Add ``cfg``'s archived run, where every segment of it trained as the probes do (the probe device's kind; on
        a CPU, the plan's torch threads; a run archived before segments were recorded: trained in one process), to
        ``out``'s measured minutes (each segment's wall seconds, evaluation included, over its stack's seeds) and the
        minutes the plan predicts for it: their ratio calibrates the plan."""
        from . import archive

        found = archive.lookup(cfg.key())
        made = found.provenance if found is not None else {}
        segments = made.get("segments") or [made] * (made.get("resumed_after_round") == 0)  # archived before segments
        kind = self.probe_device.split(":")[0]
        if not segments or self.missing(cfg) is not None or any(
                s["device"].split(":")[0] != kind or kind == "cpu" and s["threads"] != torch.get_num_threads()
                for s in segments):
            return
        try:
            predicted = self.minutes(cfg, self.engine(cfg))
        except FedkitError:
            return
        out.measured += sum(map(worker_seconds, segments)) / 60
        out.measured_runs += 1
        out.measured_predicted += predicted

    @staticmethod
    def local_steps(cfg: Config) -> float:
        """Local steps per client and round; with local epochs, those of a client of average size."""
        if cfg.local_steps is not None:
            return cfg.local_steps
        from .data import load_dataset

        samples = len(load_dataset(cfg.dataset, **cfg.dataset_args).y_train) / cfg.num_clients
        return cfg.local_epochs * math.ceil(samples / cfg.batch_size)

    def notebook(self, notebook: Path, scale: str, seed: int, match: str | None = None) -> NotebookPlan:
        from .runner import default_cache, finished_run, rounds_left

        runs, note = matching_runs(notebook, scale, seed, self.target, match)
        out = NotebookPlan(notebook, runs, note)
        model_read = needs_model(notebook)
        configs, labels = {}, {}  # by key: a config listed under several labels plans once
        for label, c in (runs or {}).items():
            configs[c.key()] = c
            labels.setdefault(c.key(), []).append(label)
        for cfg in configs.values():
            left = rounds_left(cfg)
            if left == 0:
                self.measure(out, cfg)
                in_cache = finished_run(cfg, default_cache(), archived=False) is not None
                out.finished += in_cache
                out.archived += not in_cache
                if in_cache or not model_read(cfg):
                    continue
                out.models += 1  # its model is read and the archive keeps none: the render trains it again, in full
                left = cfg.rounds
            if all(label.endswith("?") for label in labels[cfg.key()]):
                out.conditional += 1
                continue
            out.part_way += left < cfg.rounds
            why = self.missing(cfg)
            if why is not None:
                out.missing[cfg.dataset] = why
                out.unpredicted += 1
                continue
            try:
                engine = self.engine(cfg)
                out.minutes += self.minutes(cfg, engine) * left / cfg.rounds
            except FedkitError as err:  # e.g. a partition the data here cannot hold (a sample of the paper's set)
                out.unfit[cfg.dataset] = " ".join(str(err).splitlines())
                out.unpredicted += 1
                continue
            out.engines.add(engine)
        return out


def make_plan(notebooks, scale: str, seed: int = 0, device: str = "cpu",
              match: str | None = None) -> tuple[list[NotebookPlan], Planner]:
    """The plan of each notebook (paths, or folders of them, as ``fedkit figures`` takes them) at ``scale``, of its
    runs whose "<paper>/<notebook>/<label>" matches ``match`` (None: all)."""
    from .figures import find_notebooks

    planner = Planner(device)
    return [planner.notebook(n, scale, seed, match) for n in find_notebooks(notebooks)], planner


def _name(notebook: Path) -> str:
    return f"{notebook.parent.name}/{notebook.stem}"


def _span(values) -> str:
    values = sorted(set(values))
    return "-" if not values else str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"


def _cached(p: NotebookPlan) -> str:
    parts = [f"{p.finished} done"] * bool(p.finished) + [f"{p.part_way} part-way"] * bool(p.part_way) + \
        [f"{p.archived} archived" + (f" ({p.models} to retrain for models)" if p.models else "")] * bool(p.archived) \
        + [f"{p.conditional} conditional"] * bool(p.conditional)
    return ", ".join(parts) or "-"


def print_plan(plans: list[NotebookPlan], planner: Planner, scale: str, seconds: float, file=None) -> None:
    """The plan as a table (one row per notebook), its notes, what data is missing, and where the minutes come from."""
    rows = [("notebook", "runs", "seeds", "rounds", "data (MISSING; UNFIT: here, but cannot hold the runs)",
             f"engine on {planner.target}", "in the cache", "minutes left", "measured ÷ predicted")]
    for p in plans:
        if p.runs is None:
            rows.append((_name(p.notebook), "?", "", "", "", "", "", "", ""))
            continue
        configs = {c.key(): c for c in p.runs.values()}.values()
        data = sorted({c.dataset for c in configs} - set(p.missing) - set(p.unfit)) + \
            [f"{d} MISSING" for d in sorted(p.missing)] + [f"{d} UNFIT" for d in sorted(p.unfit)]
        minutes = f"{p.minutes:.1f}" + (f" + {p.unpredicted} runs not predicted" if p.unpredicted else "")
        ratio = f"{p.measured / p.measured_predicted:.2f} ({p.measured_runs} runs)" if p.measured_runs else "-"
        rows.append((_name(p.notebook), str(len(configs)), str(len({c.seed for c in configs}) or "-"),
                     _span(c.rounds for c in configs), ", ".join(data) or "-", "+".join(sorted(p.engines)) or "-",
                     _cached(p), minutes if configs else "-", ratio))
    width = [max(len(row[i]) for row in rows) for i in range(8)]
    for row in rows:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(row, width)) + f"  {row[8]}", file=file)
    print(file=file)
    for p in plans:
        if p.note or p.runs is None:
            print(f"note {_name(p.notebook)}: {p.note}", file=file)
    missing = {d: why for p in plans for d, why in p.missing.items()}
    for name, why in sorted(missing.items()):
        print(f"missing {name}: {why}", file=file)
    for name, why in sorted({d: why for p in plans for d, why in p.unfit.items()}.items()):
        print(f"unfit {name}: {why}", file=file)
    total = sum(p.minutes for p in plans)
    unpredicted = sum(p.unpredicted for p in plans)
    where = planner.probe_device
    if where != planner.target:
        where += f" (no CUDA device here: these are CPU minutes, not {planner.target} minutes)"
    print(f"\n{scale} scale: {sum(len({c.key() for c in p.runs.values()}) for p in plans if p.runs)} runs "
          f"({sum(p.finished for p in plans)} finished in the cache, {sum(p.part_way for p in plans)} part-way, "
          f"{sum(p.archived for p in plans)} only in the committed run archive ({sum(p.models for p in plans)} of "
          "them trained again for the models their notebook reads), "
          f"{sum(p.conditional for p in plans)} conditional: trained only where an earlier result calls for one), "
          f"{total:.1f} predicted minutes left for those with data ({unpredicted} on missing or unfit data: none)",
          file=file)
    print(f"minutes: local training only (no evaluation, a run finished in the cache, archived or conditional counted "
          f"0, except an archived run whose model its notebook reads outside an archived table, counted in full: the "
          f"render trains it again; a part-way "
          f"one by its rounds left, seeds counted one by one), "
          f"extrapolated as rounds × local steps × clients per round from {len(planner.steps)} probes of FedAvg's "
          f"local steps per (data, model, batch, optimizer, engine, clients) measured on {where}; probes "
          f"{planner.probe_seconds:.0f} s, plan {seconds:.0f} s; load average up to {planner.load:.1f} on "
          f"{os.cpu_count()} cores as they started (other work slows the probes: the minutes rise with it)", file=file)
    measured = [p for p in plans if p.measured_runs]
    if measured:
        print(f"measured ÷ predicted: the wall minutes the run archive records for a notebook's archived runs trained "
              f"as the probes are ({planner.probe_device}"
              + (f", {torch.get_num_threads()} torch thread(s)" if planner.probe_device == "cpu" else "")
              + "; evaluation included, a stack's seconds shared by its seeds), over the minutes this plan predicts "
              f"for the same runs: {sum(p.measured for p in measured):.1f} ÷ "
              f"{sum(p.measured_predicted for p in measured):.1f} over {sum(p.measured_runs for p in measured)} runs "
              "(times a notebook's minutes left by its ratio for a measured estimate)", file=file)
