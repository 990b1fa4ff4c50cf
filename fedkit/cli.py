"""The ``fedkit`` command: run experiments, list what exists, regenerate figures."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import yaml

from .config import Config
from .errors import FedkitError


def _parse_value(text: str):
    """Options take YAML values: 0.1, true, null, {phi: 0.1}, [1, 2]."""
    return yaml.safe_load(text)


def _run_parser(sub):
    p = sub.add_parser("run", help="train one or more algorithms on one configuration",
                       description="Every config field is an option (YAML values, e.g. --partition-args "
                                   "'{phi: 0.1}'); --config FILE reads them from a YAML file first. "
                                   "--algorithm takes a comma-separated list to compare methods.")
    p.add_argument("--config", type=Path, help="YAML file of config fields")
    for f in dataclasses.fields(Config):
        p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=_parse_value, default=None,
                       metavar="VALUE")
    p.add_argument("--out", type=Path, default=Path("runs"), help="output directory (default: runs)")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv", help="History file format")
    p.add_argument("--targets", type=_parse_value, default=None,
                   help="accuracies for the rounds-to-target table, e.g. '[0.5, 0.7]'")
    p.add_argument("--no-cache", action="store_true", help="retrain even if a cached result exists")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _config_values(args) -> dict:
    values = {}
    if args.config is not None:
        if not args.config.exists():
            raise FedkitError(f"config file {str(args.config)!r} does not exist")
        values = yaml.safe_load(args.config.read_text()) or {}
        if not isinstance(values, dict):
            raise FedkitError(f"config file {str(args.config)!r} must hold a mapping of config fields")
    for f in dataclasses.fields(Config):
        if getattr(args, f.name) is not None:
            values[f.name] = getattr(args, f.name)
    return values


def cmd_run(args) -> int:
    from .plots import learning_curves
    from .report import summary_table
    from .run import run

    values = _config_values(args)
    names = str(values.pop("algorithm", Config.algorithm)).split(",")
    configs = {n.strip(): Config.from_dict({**values, "algorithm": n.strip()}) for n in names}
    histories = {}
    for name, cfg in configs.items():
        histories[name] = run(cfg, cache=False if args.no_cache else None, progress=not args.quiet)
        out = args.out / f"{name}-{cfg.key()}"
        histories[name].save(out, fmt=args.format)
    first = next(iter(configs.values()))
    table = summary_table(histories, targets=args.targets)
    print(f"\n{first.dataset} · {first.partition} {first.partition_args} · {first.num_clients} clients · "
          f"{first.rounds} rounds · model {first.model}\n")
    print(table.to_string())
    png = args.out / f"curves-{first.dataset}-{'-'.join(configs)}.png"
    learning_curves(histories, title=f"{first.dataset}, {first.partition} {first.partition_args}", path=png)
    print(f"\nHistories: {args.out}/<algorithm>-<config hash>/   learning curves: {png}")
    return 0


def cmd_list(args) -> int:
    from .algorithms import ALGORITHMS
    from .data import DATASETS, PARTITIONS
    from .models import MODELS
    from .optim import OPTIMIZERS

    for title, registry in (("algorithms", ALGORITHMS), ("datasets", DATASETS), ("models", MODELS),
                            ("partitions", PARTITIONS), ("optimizers", OPTIMIZERS)):
        if args.what in (None, title):
            print(f"{title}: {', '.join(sorted(registry))}")
    return 0


def cmd_figures(args) -> int:
    from .figures import run_notebooks

    done = run_notebooks(args.notebooks, scale=args.scale, seed=args.seed, device=args.device, jobs=args.jobs)
    for path, seconds in done:
        print(f"{seconds:7.1f} s  {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fedkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _run_parser(sub)
    p = sub.add_parser("list", help="list algorithms, datasets, models, partitions, optimizers")
    p.add_argument("what", nargs="?", choices=("algorithms", "datasets", "models", "partitions", "optimizers"))
    p = sub.add_parser("figures", help="run notebooks through papermill and write figures/")
    p.add_argument("notebooks", nargs="*", help="notebooks or folders (default: all under notebooks/)")
    p.add_argument("--scale", choices=("ci", "small", "paper"), default="small")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--jobs", type=int, default=1, help="notebooks run at once (default 1)")
    args = parser.parse_args(argv)
    try:
        return {"run": cmd_run, "list": cmd_list, "figures": cmd_figures}[args.command](args)
    except FedkitError as err:
        print(f"fedkit: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
