"""The ``fedkit`` command: run experiments, list what exists, regenerate figures.

Every input is checked before anything trains; a bad one ends in one line ``fedkit: error: ...`` and exit
status 2.
"""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import re
import sys
import tempfile
import typing
from pathlib import Path

import yaml

from .config import Config, is_device
from .configfile import as_number, config_from, read_fields, read_yaml
from .errors import ConfigError, FedkitError

# One line per Config field for `fedkit run --help` (tests check that every field has one).
HELP = {
    "dataset": "data set (fedkit list datasets)",
    "dataset_args": "options of the data set loader, e.g. '{alpha: 0.5}' for synthetic",
    "partition": "how the training set is split among clients (fedkit list partitions)",
    "partition_args": "options of the partition, e.g. '{phi: 0.1}' for dirichlet",
    "num_clients": "number of clients",
    "participation": "fraction of clients sampled each round, in (0, 1]",
    "clients_per_round": "a count of clients sampled each round instead of a fraction (overrides participation)",
    "model": "model (fedkit list models)",
    "model_args": "options of the model",
    "algorithm": "algorithm, or a list to compare: 'fedavg,fedprox' or '[fedavg, {name: fedprox, mu: 0.01}]' "
                 "(an entry's own options; fedkit list algorithms)",
    "algorithm_args": "hyper-parameters of every algorithm compared, e.g. '{mu: 0.01}' for fedprox",
    "rounds": "communication rounds",
    "local_steps": "K, local steps per round; set exactly one of local_steps / local_epochs (null unsets)",
    "local_epochs": "E: client i then takes E·⌈n_i / batch_size⌉ steps per round",
    "batch_size": "minibatch size of a local step",
    "lr": "η_l, client learning rate (in round 1): a client steps w ← w − lr·d",
    "lr_schedule": "η_l over rounds: constant, step or cosine",
    "lr_schedule_args": "options of the schedule, e.g. '{every: 10, gamma: 0.5}' for step",
    "server_lr": "η_g, server learning rate: x ← x + server_lr·Σ p_i (y_i − x); 1 = plain averaging",
    "threat": "threat model, e.g. freeloaders or random_scaling (fedkit list threats); null = every client honest",
    "threat_args": "options of the threat",
    "optimizer": "client optimizer; null = the algorithm's own choice (fedkit list optimizers)",
    "optimizer_args": "options of the client optimizer",
    "seed": "seed of the partition, client sampling, minibatches and initialisation",
    "device": "cpu, cuda, cuda:N or mps",
    "engine": "auto (the faster for the model and device), sequential (reference) or vectorized (all at once)",
    "compile": "torch.compile the vectorized engine's step gradient (compile time in compile_seconds)",
    "eval_every": "test every n-th round, and always the last",
    "snapshots": "keep the global model after every n-th round and the last (0: none)",
    "stop_accuracy": "stop once test accuracy reaches this (rounds-to-target runs); null = never",
    "link_mbps": "simulated clock: client–server link speed in Mbit/s (2^20 bit/s)",
    "step_seconds": "simulated clock: seconds per local step; null = the measured compute time",
}
_HINTS = typing.get_type_hints(Config)
_METAVARS = {bool: "BOOL", int: "INT", float: "FLOAT", str: "STR", dict: "MAPPING", type(None): "null"}


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, like the errors fedkit raises."""

    def error(self, message):
        self.exit(2, f"fedkit: error: {message} (see {self.prog} --help)\n")


def _value(text: str):
    """Options take YAML values: 0.1, true, null, {phi: 0.1}, [1, 2]."""
    try:
        return read_yaml(text, repr(text))
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _config_file(text: str) -> dict:
    try:
        return read_fields(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _targets(text: str) -> list[float]:
    values = _value(text)
    values = [as_number(v) for v in (values if isinstance(values, list) else [values])]
    if not values or not all(isinstance(v, int | float) and not isinstance(v, bool) and 0 < v <= 1
                             for v in values):
        raise argparse.ArgumentTypeError(f"must be a list of accuracies in (0, 1], e.g. '[0.5, 0.8]', "
                                         f"got {text!r}")
    return values


def _out_dir(text: str) -> Path:
    path = Path(text).absolute()
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        where = "" if existing == path else f" lies under {str(existing)!r}, which"
        raise argparse.ArgumentTypeError(f"{text!r}{where} is a file, not a folder")
    if not os.access(existing, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: folder {str(existing)!r} is not writable")
    return Path(text)


def _writable(folder: Path, option: str) -> None:
    """Make ``folder`` and write a probe file in it, so that one that cannot be written is refused before anything
    trains (a permission check alone passes a root user, or a place such as /proc)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as err:
        raise ConfigError(f"{option} {str(folder)!r} cannot be written: {err.strerror or err}") from None


def _book_dir(text: str) -> Path:
    from .book import check_out

    _out_dir(text)
    try:
        check_out(Path(text).absolute())
    except FedkitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return Path(text)


PRECOMPUTE_LOG_HEADER = "runs,"  # how a CSV that fedkit.precompute appended rows to begins (its first column)


def _log_file(text: str) -> Path:
    """A CSV to append precompute rows to: new, or one that precompute wrote (never another file)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a CSV file")
    if path.exists() and path.stat().st_size:
        with open(path, encoding="utf-8", errors="replace") as handle:
            if not handle.readline().startswith(PRECOMPUTE_LOG_HEADER):
                raise argparse.ArgumentTypeError(f"{text!r} exists and is not a precompute log (it does not begin "
                                                 f"with precompute's header): name a new file or an earlier log")
    _out_dir(str(path.absolute().parent))
    return path


def _device(text: str) -> str:
    if not is_device(text):
        raise argparse.ArgumentTypeError(f"must be cpu, cuda, cuda:N or mps, got {text!r}")
    return text


def _existing_dir(text: str) -> Path:
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return Path(text)


def _notebook_parameter(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"must be NAME=VALUE with NAME a Python identifier, got {text!r}")
    try:
        return name, read_yaml(value, f"{name}: {value!r}")
    except ConfigError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _regex(text: str) -> str:
    try:
        re.compile(text)
    except re.error as err:
        raise argparse.ArgumentTypeError(f"not a regular expression: {text!r} ({err})") from None
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 1, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = as_number(text)
    if not isinstance(value, float) or not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 0, got {text!r}")
    return value


def _mapping(text: str) -> dict:
    value = _value(text)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a YAML mapping such as '{{q: 0.5}}', got {text!r}")
    return value


def _image_file(text: str) -> Path:
    """A figure file to write: a format matplotlib writes, in a folder that exists or can be made."""
    import matplotlib.pyplot as plt

    formats = sorted(plt.figure().canvas.get_supported_filetypes())
    plt.close("all")
    suffix = Path(text).suffix.lower().lstrip(".")
    if suffix not in formats:
        raise argparse.ArgumentTypeError(f"must name an image file ending in one of .{', .'.join(formats)}, "
                                         f"got {text!r}")
    if Path(text).exists():
        raise argparse.ArgumentTypeError(f"{text!r} exists: fedkit writes a new file and overwrites none (remove it, "
                                         f"or name another)")
    _out_dir(str(Path(text).absolute().parent))
    return Path(text)


def _default(f: dataclasses.Field):
    """The field's default as YAML, as an option would take it."""
    value = f.default_factory() if f.default is dataclasses.MISSING else f.default
    return yaml.safe_dump(value, default_flow_style=True).removesuffix("...\n").strip()


def _run_parser(sub):
    p = sub.add_parser("run", help="train one or more algorithms on one configuration",
                       usage="fedkit run [--config FILE] [--FIELD VALUE ...] [--out DIR] [...]",
                       description="Every config field is an option taking a YAML value (e.g. --partition-args "
                                   "'{phi: 0.1}', --threat null); --config FILE reads fields from a YAML file "
                                   "first, and options override it. --algorithm takes a comma-separated list to "
                                   "compare methods.")
    p.add_argument("--config", type=_config_file, default={}, metavar="FILE", help="YAML file of config fields")
    fields = p.add_argument_group("config fields")
    for f in dataclasses.fields(Config):  # SUPPRESS: a field is in args only when given (null included)
        hint = _HINTS[f.name]
        metavar = "|".join(_METAVARS.get(t, "VALUE") for t in (typing.get_args(hint) or (hint,)))
        fields.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=_value, default=argparse.SUPPRESS,
                            metavar=metavar, help=f"{HELP.get(f.name, '')} (default: {_default(f)})")
    p.add_argument("--out", type=_out_dir, default=Path("runs"), metavar="DIR",
                   help="output folder (default: runs)")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv", help="History file format")
    p.add_argument("--targets", type=_targets, default=None, metavar="LIST",
                   help="accuracies for the rounds-to-target table, e.g. '[0.5, 0.7]'")
    p.add_argument("--no-cache", action="store_true", help="retrain even if a cached result exists")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--backend", choices=("fedkit", "flower"), default="fedkit",
                   help="fedkit's own engines, or Flower's simulation engine (the flower extra) (default: fedkit)")


def methods(algorithm) -> list[tuple[str, dict]]:
    """(name, its own options) of each method ``algorithm`` names: a comma-separated string, or a list whose entries
    are names or mappings such as {name: fedprox, mu: 0.01}."""
    entries = algorithm if isinstance(algorithm, list) else [algorithm] if isinstance(algorithm, dict) else \
        str(algorithm).split(",")
    if not entries:
        raise ConfigError("algorithm is an empty list: name at least one method")
    found = []
    for entry in entries:
        if isinstance(entry, str):
            found.append((entry.strip(), {}))
        elif isinstance(entry, dict) and isinstance(entry.get("name"), str):
            found.append((entry["name"], {k: v for k, v in entry.items() if k != "name"}))
        else:
            raise ConfigError(f"algorithm entry {entry!r} is neither a name nor a mapping with a name, such as "
                              f"{{name: fedprox, mu: 0.01}}")
    return found


def configs(args) -> dict[str, Config]:
    """One validated Config per method compared, by label: the config file's fields, then the options; a method's
    own options (an ``algorithm`` entry {name: fedprox, mu: 0.01}) are added to ``algorithm_args`` and its label."""
    values = {**args.config, **{f.name: getattr(args, f.name) for f in dataclasses.fields(Config)
                                if hasattr(args, f.name)}}
    shared = values.pop("algorithm_args", {})
    if not isinstance(shared, dict):
        raise ConfigError(f"algorithm_args must be a mapping of option names to values, got {shared!r}")
    runs = {}
    for name, own in methods(values.pop("algorithm", Config.algorithm)):
        label = name + (f"({', '.join(f'{k}={v}' for k, v in own.items())})" if own else "")
        if label in runs:
            raise ConfigError(f"algorithm lists {label!r} twice")
        runs[label] = config_from({**values, "algorithm": name, "algorithm_args": {**shared, **own}})
    return runs


def method_settings(cfg: Config) -> tuple[str, str]:
    """How ``cfg``'s algorithm weights the clients' updates ('data': by data size, 'uniform': equally), and its
    other options as it runs with them, defaults included."""
    from .algorithms import ALGORITHMS

    params = inspect.signature(ALGORITHMS[cfg.algorithm]).parameters.values()
    options = {p.name: p.default for p in params if p.default is not p.empty} | cfg.algorithm_args
    options.pop("weighting", None)
    return cfg.build_algorithm().weighting, ", ".join(f"{k}={v}" for k, v in options.items()) or "-"


def _flower():
    """fedkit.flower, or a FedkitError saying how to install it."""
    try:
        from . import flower
    except ImportError as err:
        raise FedkitError(f"--backend flower needs the flower extra (pip install 'fedkit-torch[flower]', or "
                          f"pip install -e '.[flower]' in a checkout): {err}") from err
    return flower


def _train(cfg: Config, args):
    """Train (or read from the cache) one run and save its History under --out."""
    from .runner import run

    if args.backend == "flower":
        run = _flower().run_flower
    history = run(cfg, cache=False if args.no_cache else None, progress=not args.quiet)
    history.save(args.out / f"{cfg.algorithm}-{cfg.key()}", fmt=args.format)
    return history


def cmd_run(args) -> int:
    from .plots import learning_curves
    from .report import summary_table

    runs = configs(args)  # every config is validated before anything trains
    if args.backend == "flower":
        for cfg in runs.values():
            _flower().refuse(cfg)
    _writable(args.out, "--out")
    histories = {name: _train(cfg, args) for name, cfg in runs.items()}
    first = next(iter(runs.values()))
    table = summary_table(histories, targets=args.targets)
    print(f"\n{first.dataset} · {first.partition} {first.partition_args} · {first.num_clients} clients · "
          f"{first.rounds} rounds · model {first.model}\n")
    settings = {label: method_settings(cfg) for label, cfg in runs.items()}
    width = max(map(len, ["method", *settings]))
    print(f"{'method':<{width}}  weighting  options  (weighting: data = by client data size, uniform = equal)")
    for label, (weighting, options) in settings.items():
        print(f"{label:<{width}}  {weighting:<9}  {options}")
    print()
    print(table.to_string())
    png = args.out / f"curves-{first.dataset}-{'-'.join(cfg.algorithm for cfg in runs.values())}.png"
    learning_curves(histories, title=f"{first.dataset}, {first.partition} {first.partition_args}", path=png)
    print(f"\nHistories: {args.out}/<algorithm>-<config hash>/   learning curves: {png}")
    return 0


def cmd_partition(args) -> int:
    from .data import load_dataset, partition_summary
    from .federation import config_partition
    from .plots import label_distribution, label_table

    partition_args = {**args.partition_args, **({} if args.phi is None else {"phi": args.phi})}
    if args.partition == "dirichlet" and "phi" not in partition_args:
        partition_args["phi"] = Config().partition_args["phi"]  # Config's default φ
    cfg = Config(dataset=args.dataset, dataset_args=args.dataset_args, partition=args.partition,
                 partition_args=partition_args, num_clients=args.clients, seed=args.seed)
    if args.plot is not None:
        _writable(args.plot.parent, "--plot")
    data = load_dataset(cfg.dataset, **cfg.dataset_args)
    if data.task != "classification":
        raise ConfigError(f"dataset {cfg.dataset!r} has no classes to count (its task is {data.task!r})")
    parts = config_partition(cfg, data)  # the partition `fedkit run` trains on with these settings
    labels = data.y_train.numpy()
    counts = label_table(parts, labels, data.num_classes)
    print(f"{cfg.dataset} · {cfg.partition} {cfg.partition_args} · {cfg.num_clients} clients · seed {cfg.seed}")
    print(partition_summary(parts, labels) + "\n")
    shown = label_table(counts, unit=args.unit).round(3) if args.unit == "shares" else counts
    print(shown.assign(total=counts.sum(axis=1)).to_string())
    if args.plot is not None:
        fig, _, _ = label_distribution(counts, unit=args.unit, kind=args.kind,
                                       title=f"{cfg.dataset}, {cfg.partition} {cfg.partition_args}, "
                                             f"{cfg.num_clients} clients, seed {cfg.seed}")
        fig.savefig(args.plot, dpi=130, bbox_inches="tight")
        print(f"\nlabel distribution: {args.plot}")
    return 0


def cmd_list(args) -> int:
    from .algorithms import ALGORITHMS
    from .data import DATASETS, PARTITIONS
    from .models import MODELS
    from .optim import OPTIMIZERS
    from .threats import THREATS

    for title, registry in (("algorithms", ALGORITHMS), ("datasets", DATASETS), ("models", MODELS),
                            ("partitions", PARTITIONS), ("optimizers", OPTIMIZERS), ("threats", THREATS)):
        if args.what in (None, title):
            print(f"{title}: {', '.join(sorted(registry))}")
    return 0


def _check_figures_flags(args) -> None:
    """Refuse flags that the chosen mode would ignore."""
    if args.plan and args.precompute:
        raise ConfigError("--plan prints the runs and --precompute trains them: give one of the two")
    mode = "--plan" if args.plan else "--precompute" if args.precompute else None
    if mode is None and args.match is not None:
        raise ConfigError(f"--match {args.match!r} picks runs for --plan or --precompute, and neither is given")
    if mode is not None and args.jobs is not None:
        raise ConfigError(f"--jobs {args.jobs} runs notebooks at once, which {mode} does not; drop it")
    for flag, value in (("--workers", args.workers), ("--minutes", args.minutes), ("--log", args.log),
                        ("--archive", args.archive or None)):
        if value is not None and not args.precompute:
            given = flag if value is True else f"{flag} {value}"
            raise ConfigError(f"{given} applies to --precompute only, which is not given")


def _listed_runs(args) -> None:
    """Refuse a --match that picks none of the notebooks' listed runs, and a --precompute with none to train; name
    the notebooks whose runs no paper module lists. Checked before anything is probed or trained."""
    from .figures import find_notebooks
    from .plan import matching_runs

    names, unlisted = [], {}
    for notebook in find_notebooks(args.notebooks):
        runs, note = matching_runs(notebook, args.scale, args.seed, args.device)
        if runs is None:
            unlisted[notebook] = note
        names += runs or []
    picked = [n for n in names if args.match is None or re.search(args.match, n)]
    if names and not picked:
        raise ConfigError(f"--match {args.match!r} matches none of the {len(names)} runs the notebooks list (names "
                          f"are '<paper>/<notebook>/<label>', e.g. {names[0]!r})")
    if not names and (args.precompute or args.match is not None):
        raise ConfigError(f"no paper module lists a run of {' '.join(args.notebooks) or 'the notebooks'} "
                          f"(fedkit.papers.<paper>.runs): nothing to {'precompute' if args.precompute else 'match'}")
    if args.precompute:  # --plan lists them in its table
        for notebook, note in unlisted.items():
            print(f"precompute: {notebook} left out: {note}", file=sys.stderr)


def cmd_figures(args) -> int:
    from .figures import print_summary, run_notebooks
    from .runner import cached_devices

    _check_figures_flags(args)
    if args.cached_on:
        os.environ["FEDKIT_CACHED_ON"] = ",".join(args.cached_on)  # the notebooks' kernels inherit it
        cached_devices()
    if args.plan:
        return cmd_plan(args)
    if args.precompute:
        return cmd_precompute(args)
    results = run_notebooks(args.notebooks, scale=args.scale, seed=args.seed, device=args.device,
                            jobs=args.jobs or 1, params=dict(args.param))
    print_summary(results)
    return 1 if any(r.error for r in results) else 0


def cmd_precompute(args) -> int:
    from .precompute import precompute

    if args.param:
        raise ConfigError("--precompute trains the notebooks' listed runs with their default parameters; "
                          "drop -p/--param")
    _listed_runs(args)
    if args.log is not None:
        _writable(args.log.parent, "--log")
    rows = precompute(args.notebooks, args.scale, device=args.device, seed=args.seed, workers=args.workers or 1,
                      minutes=args.minutes, match=args.match, log=args.log, archive=args.archive)
    done = sum(r["status"] == "done" for r in rows)
    print(f"precompute: {done} of {len(rows)} groups done; the notebooks read them from the run cache"
          + (" and their run archives" if args.archive else ""))
    return 0 if done == len(rows) else 1


def cmd_plan(args) -> int:
    import time

    from .plan import make_plan, print_plan

    if args.param:
        raise ConfigError("--plan lists the notebooks' runs with their default parameters; drop -p/--param")
    if args.match is not None:
        _listed_runs(args)
    start = time.perf_counter()
    plans, planner = make_plan(args.notebooks, args.scale, seed=args.seed, device=args.device, match=args.match)
    print_plan(plans, planner, args.scale, time.perf_counter() - start)
    return 0


def cmd_ledger(args) -> int:
    from . import ledger
    from .checkout import repo_root

    repo = repo_root()
    if repo is None:
        raise FedkitError("fedkit ledger runs in a fedkit checkout (figures/, REPRODUCTION.md)")
    installed = Path(__file__).resolve().parent
    if installed != (repo / "fedkit").resolve():
        raise FedkitError(f"fedkit ledger decides the claims of the fedkit it runs, {installed}, on the data of this "
                          f"checkout, {repo}: run it in {installed.parent}, or install this checkout "
                          f"(pip install -e .)")
    missing = [name for name in ("figures", "REPRODUCTION.md") if not (repo / name).exists()]
    if missing:
        raise FedkitError(f"fedkit ledger needs {' and '.join(missing)} in the checkout {repo}")
    if args.stale:
        found = ledger.stale(ledger.claims(), repo / "figures", repo)
        for cid, why in found:
            print(f"{cid}: {why}")
        print(f"{len(found)} claim(s) stale or without provenance")
        return 0
    if args.paper:
        frame = ledger.ledger_frame(ledger.claims((args.paper,)), repo / "figures")
        print(ledger.markdown_table(frame, args.paper))
        return 0
    if args.check:
        found = ledger.differences(repo)
        for line in found:
            print(line)
        print("ledger: up to date with the data" if not found else "run `fedkit ledger` to regenerate")
        return 1 if found else 0
    print(ledger.write(repo).to_string())
    return 0


CARRY = "benchmarks/carry"  # unfinished campaign runs carried from one session's machine to the next


def cmd_cache(args) -> int:
    from .cache import entries, remove, set_aside, size
    from .runner import default_cache

    root = args.dir or default_cache()
    if args.action == "archive":
        from . import archive
        from .figures import coverage

        coverage = coverage(archive.root())
        short = coverage[(coverage["lacking"].map(len) > 0) | (coverage["tables_archived"] < coverage["tables"])]
        for row in short.itertuples():
            print(f"{row.figure} ({row.scale}): {row.archived} of its {row.runs} runs archived"
                  + (f", {row.timed} timed here" if row.timed else "")
                  + (f", {row.tables_archived} of its {row.tables} tables from models" if row.tables else ""))
        twins = archive.twins(archive.root())
        for twin in twins:
            print(f"run {twin.key}: its {len(twin.paths)} archived copies differ beyond their clocks ("
                  + ("their lengths differ" if twin.accuracy is None else
                     f"test accuracy up to {twin.accuracy:.2f} points apart, any record up to {twin.relative:.1e} "
                     "relative") + "; a render reads its own notebook's): "
                  + ", ".join(str(path.relative_to(archive.root())) for path in twin.paths))
        timed = coverage[coverage["timed"] > 0]
        print(f"{len(coverage)} committed figures under {archive.root()}: {len(coverage) - len(short)} with every run "
              "and table they read archived" + (f" ({len(timed)} of them time {int(timed['timed'].sum())} run(s) "
                                                "again on the machine at hand, by design)" if len(timed) else "")
              + f", {len(short)} lacking {len(set().union(*short['lacking']))} distinct run(s) and "
              f"{int((short['tables'] - short['tables_archived']).sum())} table(s)"
              + (f"; {len(twins)} run(s) archived in several files whose copies differ" if twins else ""))
        return 0
    if args.action == "spent":
        from . import archive

        spent = archive.spent(archive.root())
        if len(spent):
            print(spent.to_string(index=False, float_format="{:,.1f}".format))
        print(f"{int(spent['runs'].sum())} runs, {spent['hours'].sum():,.1f} worker hours recorded by the run "
              f"archive under {archive.root()} (a worker: one process on the CPU, or a GPU; a stack's seconds shared "
              "by its runs)")
        return 0
    if args.action == "merge":
        from . import archive

        if args.source is None:
            raise ConfigError("fedkit cache merge adds the runs archived under --from DIR (another machine's figures "
                              "folder): give it")
        added = archive.merge(args.source, archive.root())
        for path, count in added:
            print(f"merged {count} run(s) into {path}")
        print(f"{sum(n for _, n in added)} run(s) from {args.source} merged into {len(added)} archive file(s)")
        return 0
    if args.source is not None:
        raise ConfigError(f"--from {args.source} applies to 'fedkit cache merge' only")
    if args.action in ("carry", "restore"):
        from .cache import carry, restore
        from .checkout import repo_root

        repo = repo_root()
        if repo is None:
            raise FedkitError(f"fedkit cache {args.action} keeps its checkpoints in a checkout's benchmarks/carry/, "
                              f"and there is no fedkit checkout above {Path.cwd()}")
        folder = repo / CARRY
        moved = carry(root, folder) if args.action == "carry" else restore(folder, root)
        for key, done in moved:
            print(f"{'carried' if args.action == 'carry' else 'restored'} {key} (after round {done})")
        print(f"{len(moved)} unfinished run(s) {'carried to' if args.action == 'carry' else 'restored from'} {folder}")
        return 0
    if args.action == "clean":
        aside = set_aside(root)
        for path in aside:
            print(f"{'would remove' if args.dry_run else 'removed'} {path} ({_megabytes(size(path))})")
            if not args.dry_run:
                remove(path)
        print(f"{len(aside)} set-aside item(s) under {root}{' (dry run: nothing removed)' if args.dry_run else ''}")
        return 0
    found = entries(root)
    rows = [("entry", "algorithm", "status", "size", "age")]
    rows += [(str(e.path.relative_to(root)), e.algorithm, "finished" if e.finished else "unfinished",
              _megabytes(e.size), _age(e.age)) for e in found]
    width = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(row, width)) + f"  {row[4]}")
    aside = set_aside(root)
    print(f"{len(found)} entries under {root}, {_megabytes(sum(e.size for e in found))}; {len(aside)} set-aside "
          f"item(s){' (fedkit cache clean removes them)' if aside else ''}")
    return 0


def cmd_book(args) -> int:
    from .book import build

    book = build(args.out)
    print(f"fedkit book: {len(book.pages)} pages in {book.site} ({book.seconds:.1f} s); open "
          f"{book.site / 'index.html'}")
    return 0


def _megabytes(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def _age(seconds: float) -> str:
    for unit, length in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= length:
            return f"{seconds / length:.0f} {unit}"
    return f"{seconds:.0f} s"


def parser() -> argparse.ArgumentParser:
    """The ``fedkit`` command line: sub-commands run, partition, list, figures, cache, ledger and book."""
    top = _Parser(prog="fedkit", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    _run_parser(sub)
    p = sub.add_parser("partition", help="show how a partition splits a data set's labels among clients",
                       description="Splits the training set as `fedkit run` would with the same dataset, partition, "
                                   "clients and seed; prints the clients × classes table of counts (or shares) and "
                                   "with --plot draws it.")
    p.add_argument("--dataset", default=Config.dataset, help=f"{HELP['dataset']} (default: {Config.dataset})")
    p.add_argument("--dataset-args", type=_mapping, default={}, metavar="MAPPING", help=HELP["dataset_args"])
    p.add_argument("--partition", default=Config.partition,
                   help=f"{HELP['partition']} (default: {Config.partition})")
    p.add_argument("--phi", type=_positive_float, default=None, metavar="FLOAT",
                   help="the Dirichlet concentration φ of partition dirichlet: small = skewed (default: 0.1)")
    p.add_argument("--partition-args", type=_mapping, default={}, metavar="MAPPING",
                   help="other options of the partition, e.g. '{q: 0.5}' for qskew")
    p.add_argument("--clients", type=_positive_int, default=Config.num_clients, metavar="INT",
                   help=f"number of clients (default: {Config.num_clients})")
    p.add_argument("--seed", type=_seed, default=0, metavar="INT", help="the run's seed (default: 0)")
    p.add_argument("--unit", choices=("counts", "shares"), default="counts", help="table and plot in counts or shares")
    p.add_argument("--kind", choices=("heatmap", "bars"), default="heatmap", help="the plot: heat map or stacked bars")
    p.add_argument("--plot", type=_image_file, default=None, metavar="FILE",
                   help="write the label distribution as an image (png, pdf, svg, ...)")
    p = sub.add_parser("list", help="list algorithms, datasets, models, partitions, optimizers, threats")
    p.add_argument("what", nargs="?", choices=("algorithms", "datasets", "models", "partitions", "optimizers",
                                               "threats"))
    p = sub.add_parser("figures", help="run notebooks through papermill and write figures/",
                       description="Runs every notebook, even after one fails, then prints a table of them "
                                   "(status, minutes, figure files written); exit status 1 if any failed.")
    p.add_argument("notebooks", nargs="*", help="notebooks or folders (default: all under notebooks/)")
    p.add_argument("--scale", choices=("ci", "small", "paper"), default="small")
    p.add_argument("--seed", type=_seed, default=0, metavar="INT", help="the notebooks' seed (default: 0)")
    p.add_argument("--device", type=_device, default="cpu", help="cpu, cuda, cuda:N or mps (default: cpu)")
    p.add_argument("--cached-on", action="append", default=[], metavar="DEVICE",
                   help="also read a run from the cache where it finished on DEVICE (repeatable), e.g. render on "
                        "the CPU a figure whose runs trained partly on a GPU; runs found nowhere train on --device")
    p.add_argument("--jobs", type=_positive_int, default=None, metavar="INT",
                   help="notebooks run at once (default 1)")
    p.add_argument("-p", "--param", type=_notebook_parameter, action="append", default=[], metavar="NAME=VALUE",
                   help="a further notebook parameter, its value read as YAML (repeatable), "
                        "e.g. -p stand_in=fashion_mnist")
    p.add_argument("--plan", action="store_true",
                   help="run nothing: print each notebook's runs, seeds, rounds, data (present or missing), engine, "
                        "how many the run cache holds finished or part-way, and the device minutes left, predicted "
                        "from measured local steps")
    p.add_argument("--precompute", action="store_true",
                   help="render nothing: train the notebooks' listed runs into the run cache, each config's seeds in "
                        "one stack, --workers configs at once, then stop (the notebooks read the cache)")
    p.add_argument("--workers", type=_positive_int, default=None, metavar="INT",
                   help="--precompute: processes at once (default 1), each with $OMP_NUM_THREADS torch threads "
                        "where set, else the cores shared out")
    p.add_argument("--minutes", type=_positive_float, default=None, metavar="FLOAT",
                   help="--precompute: start no run, and continue none past a round, after this many minutes "
                        "(a run cut off keeps its checkpoint)")
    p.add_argument("--match", type=_regex, default=None, metavar="REGEX",
                   help="--precompute, --plan: only the runs whose '<paper>/<notebook>/<label>' matches")
    p.add_argument("--log", type=_log_file, default=None, metavar="CSV",
                   help="--precompute: append a row per group to this CSV (new, or an earlier precompute's log)")
    p.add_argument("--archive", action="store_true",
                   help="--precompute: add each finished group to the run archive of every notebook that lists it "
                        "(figures/<paper>/[paper/]runs/<notebook>.parquet), as their render would")
    p = sub.add_parser("ledger", help="decide every paper claim from the committed CSVs; write figures/ledger.csv "
                                      "and REPRODUCTION.md's tables",
                       description="Recomputes each claim's verdict (reproduced, not reproduced, inconclusive, not "
                                   "comparable, not run) at small and paper scale from figures/, then writes "
                                   "figures/ledger.csv and the generated tables of REPRODUCTION.md.")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="write nothing; exit 1 if the files disagree with the data")
    mode.add_argument("--stale", action="store_true",
                      help="list claims whose CSV predates a change to its algorithms' files (or has no provenance)")
    mode.add_argument("--paper", choices=("taco", "feddual", "fadamgc", "drag", "peers"),
                      help="print this paper's table only (writes nothing)")
    p = sub.add_parser("cache", help="list the run cache's entries, or clean what runs set aside as corrupt",
                       description="Lists the cached runs (size, age, algorithm, finished or not); 'clean' removes "
                                   "the entries and checkpoints that runs set aside as corrupt.")
    p.add_argument("action", nargs="?", choices=("list", "clean", "carry", "restore", "archive", "merge", "spent"),
                   default="list",
                   help="list; clean; carry: copy the unfinished runs' newest checkpoints into the checkout's "
                        f"{CARRY}/ (to commit); restore: put them back into the cache where it has no later round; "
                        "archive: the committed figures whose runs or tables from models the committed run archive "
                        "lacks (a fresh clone trains those to render them); merge: add the runs archived under "
                        "--from DIR to the checkout's archives of the same paths; spent: the training hours the "
                        "committed run archive records, per paper, scale, device and thread count")
    p.add_argument("--from", dest="source", type=_existing_dir, default=None, metavar="DIR",
                   help="merge: another machine's figures folder, e.g. a lent GPU's $OUT/figures after a "
                        "`--precompute --archive` there with FEDKIT_FIGURES=$OUT/figures")
    p.add_argument("--dry-run", action="store_true", help="clean: only say what would be removed")
    p.add_argument("--dir", type=_existing_dir, default=None,
                   help="the cache, a folder (default $FEDKIT_CACHE or ~/.cache/fedkit/runs)")
    p = sub.add_parser("book", help="build the book (course, paper notebooks with their committed results, concepts, "
                                    "REPRODUCTION.md) as a static site; nothing is re-run")
    p.add_argument("--out", type=_book_dir, default=Path("site"), metavar="DIR",
                   help="the site's folder: new, empty or an earlier build, which is replaced (default: site)")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code = {"run": cmd_run, "partition": cmd_partition, "list": cmd_list, "figures": cmd_figures,
                "cache": cmd_cache, "ledger": cmd_ledger, "book": cmd_book}[args.command](args)
        sys.stdout.flush()  # a reader that left (`fedkit … | head`) shows up here, inside the handler below
        return code
    except BrokenPipeError:  # the reader closed the pipe: stop quietly, as `cat` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at interpreter exit
        return 141  # 128 + SIGPIPE, the shell's code for a writer whose reader left
    except FedkitError as err:
        print(f"fedkit: error: {' '.join(str(err).splitlines())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback (finished rounds stay checkpointed in the cache)
        print("fedkit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
