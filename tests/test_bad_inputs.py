"""The bad-input matrix: every row is an input fedkit must refuse with one line naming what is wrong.

A row is (id, input, expected error class, regex, files). The input is a function of a tmp folder that
already holds ``files`` (relative path -> text or bytes); it must raise the error class, whose message is
one line matching the regex (re.search). ``cli(...)`` rows run the ``fedkit`` command (training, rendering,
planning, precomputing and building the book disabled: a bad input must be refused before any of them) and raise
CliRefused with the line the command printed. A cli row tests the last option in its arguments (with none, the
subcommand's positional argument); every option of every subcommand that takes a value must have a row (read from
the parser: a new option without one fails test_every_option_of_every_subcommand_has_a_bad_value_row). To add a
case, add a row.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import io
import json
import os
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import fedkit.cli
from fedkit import Config, ConfigError
from fedkit.data import load_dataset
from fedkit.errors import DataFileError, FedkitError
from fedkit.federation import Federation
from fedkit.ledger import claims, decide


@dataclass
class Row:
    id: str
    input: Callable[[Path], object]  # called with a tmp folder holding ``files``; must raise ``error``
    error: type[BaseException]
    message: str  # regex the one-line message must match
    files: dict[str, str | bytes] = field(default_factory=dict)


class CliRefused(Exception):
    """The command exited with status 2 after printing exactly one line, ``fedkit: error: ...``."""


def cli(*argv: str) -> Callable[[Path], None]:
    """The input ``fedkit ARGV`` ("{tmp}" in an argument becomes the tmp folder)."""
    def call(tmp: Path):
        stderr = io.StringIO()
        started = mock.Mock(side_effect=AssertionError("work started before the input was refused"))
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.dict(os.environ), mock.patch.object(fedkit.cli, "_train", started), \
                mock.patch("fedkit.figures._execute", started), mock.patch("fedkit.plan.make_plan", started), \
                mock.patch("fedkit.precompute.precompute", started), mock.patch("fedkit.book.build", started):
            try:
                status = fedkit.cli.main([a.format(tmp=tmp) for a in argv])
            except SystemExit as e:  # argparse's own errors
                status = e.code
        lines = stderr.getvalue().splitlines()
        assert status == 2 and len(lines) == 1 and lines[0].startswith("fedkit: error: "), stderr.getvalue()
        raise CliRefused(lines[0])
    call.argv = argv
    return call


def config(**values) -> Callable[[Path], object]:
    """The input ``Config(**values)``."""
    return lambda tmp: Config(**values)


NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
FIG4 = NOTEBOOKS / "drag" / "fig4_cifar10_client_drift.ipynb"
ABLATION = str(NOTEBOOKS / "taco" / "table6_ablation.ipynb")
TOY = next(c for c in claims(("taco",)) if c.measure is not None and c.measure.source == "fig1_fig3_toy.csv")
UNWRITABLE = "/proc/fedkit-test"  # exists nowhere and cannot be made, even by root
NOT_WRITTEN = r"(cannot be written|is not writable)"
HINTS = typing.get_type_hints(Config)


def bad_value(field: dataclasses.Field) -> str:
    """A value of the wrong kind for the config field: a list for a mapping, a word for a number or switch."""
    kinds = typing.get_args(HINTS[field.name]) or (HINTS[field.name],)
    return "[1, 2]" if dict in kinds else "maybe" if bool in kinds else "2.5x" if int in kinds else \
        "fast" if float in kinds else "nope"


def federation(**values) -> Callable[[Path], object]:
    """The input ``Federation(Config(**values))`` on digits with the 4-layer MLP (where the model is built)."""
    return lambda tmp: Federation(Config(**{"dataset": "digits", "model": "mlp", **values}))


def load(name: str) -> Callable[[Path], object]:
    """The input ``load_dataset(name)`` with the tmp folder as data root."""
    return lambda tmp: load_dataset(name, root=tmp, download=False)


# ---- data files in their canonical formats ---------------------------------------------------------------

def idx(array: np.ndarray) -> bytes:
    return bytes([0, 0, 0x08, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.tobytes()


IMAGES, LABELS = idx(np.zeros((3, 28, 28), np.uint8)), idx(np.zeros(3, np.uint8))


MNIST = {"train_images": "train-images-idx3-ubyte.gz", "train_labels": "train-labels-idx1-ubyte.gz",
         "test_images": "t10k-images-idx3-ubyte.gz", "test_labels": "t10k-labels-idx1-ubyte.gz"}


def mnist(**broken: bytes) -> dict[str, bytes]:
    """A gzipped MNIST set of 3 + 3 blank images, with the files named in ``broken`` replaced."""
    files = {key: gzip.compress(IMAGES if key.endswith("images") else LABELS) for key in MNIST} | broken
    return {f"mnist/{MNIST[key]}": data for key, data in files.items()}


ADULT_ROW = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, "
             "2174, 0, 40, United-States, <=50K")


def adult(data: str | bytes) -> dict[str, str | bytes]:
    return {"adult/adult.data": data, "adult/adult.test": ADULT_ROW + ".\n"}


def femnist(train: str | bytes) -> dict[str, str | bytes]:
    good = {"users": ["u"], "num_samples": [1], "user_data": {"u": {"x": [[0.0] * 784], "y": [1]}}}
    return {"femnist_leaf/train/a.json": train, "femnist_leaf/test/a.json": json.dumps(good)}


def npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


CIFAR = dict(x_train=np.zeros((2, 32, 32, 3), np.uint8), y_train=np.zeros(2, np.uint8),
             x_test=np.zeros((1, 32, 32, 3), np.uint8), y_test=np.zeros(1, np.uint8))
NPZ = "cifar10_convnetjs/cifar10_convnetjs_subset.npz"
TRAIN_IMAGES = r"mnist: \S+/mnist/train-images-idx3-ubyte\.gz "
REDOWNLOAD = r"Fix: delete the file and run again with FEDKIT_DOWNLOAD=1"
REPLACE = r"Fix: replace the file with an intact copy"

ROWS = [
    # ---- fedkit run: the config file ----
    Row("run: malformed YAML", cli("run", "--config", "{tmp}/c.yaml"), CliRefused,
        r"--config: config file '\S+/c\.yaml' is not valid YAML: expected ',' or ']', but got '<stream end>'",
        {"c.yaml": "rounds: [1, 2\n"}),
    Row("run: tab in YAML", cli("run", "--config", "{tmp}/c.yaml"), CliRefused,
        r"config file '\S+/c\.yaml' is not valid YAML: found character '\\t'.*line 2, column 1",
        {"c.yaml": "partition_args:\n\tphi: 0.1\n"}),
    Row("run: binary config file", cli("run", "--config", "{tmp}/c.yaml"), CliRefused,
        r"config file '\S+/c\.yaml' is not UTF-8 text \(byte 0x8b at position 1\): is it a binary file\?",
        {"c.yaml": gzip.compress(b"rounds: 3")}),
    Row("run: folder as config file", cli("run", "--config", "{tmp}"), CliRefused,
        r"--config: cannot read config file '\S+': Is a directory"),
    Row("run: missing config file", cli("run", "--config", "{tmp}/nope.yaml"), CliRefused,
        r"cannot read config file '\S+/nope\.yaml': No such file or directory"),
    Row("run: config file not a mapping", cli("run", "--config", "{tmp}/c.yaml"), CliRefused,
        r"config file '\S+/c\.yaml' must hold a mapping of config fields .*got a list",
        {"c.yaml": "- rounds\n- 3\n"}),
    Row("run: unknown field in config file", cli("run", "--config", "{tmp}/c.yaml"), CliRefused,
        r"unknown config field\(s\) \['colour'\]", {"c.yaml": "colour: red\n"}),
    # ---- fedkit run: options ----
    Row("run: unparseable option value", cli("run", "--partition-args", "{{phi: 0.1"), CliRefused,
        r"argument --partition-args: '\{phi: 0\.1' is not valid YAML: expected ',' or '\}'"),
    Row("run: unknown option", cli("run", "--colour", "red"), CliRefused, r"unrecognized arguments: --colour red"),
    Row("run: learning rate not a number", cli("run", "--lr", "fast"), CliRefused,
        r"lr must be a finite number > 0, got 'fast'"),
    Row("run: second algorithm unknown", cli("run", "--algorithm", "fedavg,fedavgg"), CliRefused,
        r"unknown algorithm 'fedavgg'"),
    Row("run: targets not numbers", cli("run", "--targets", "high"), CliRefused,
        r"argument --targets: must be a list of accuracies in \(0, 1\].*got 'high'"),
    Row("run: target outside (0, 1]", cli("run", "--targets", "[0.5, 80]"), CliRefused,
        r"argument --targets: must be a list of accuracies in \(0, 1\]"),
    Row("run: --out is a file", cli("run", "--out", "{tmp}/runs"), CliRefused,
        r"argument --out: '\S+/runs' is a file, not a folder", {"runs": "not a folder"}),
    Row("run: --out below a file", cli("run", "--out", "{tmp}/runs/sub"), CliRefused,
        r"argument --out: '\S+/runs/sub' lies under '\S+/runs', which is a file", {"runs": "not a folder"}),
    Row("run: --out cannot be written", cli("run", "--out", UNWRITABLE), CliRefused, f"'{UNWRITABLE}'.*{NOT_WRITTEN}"),
    Row("run: unknown history format", cli("run", "--format", "xml"), CliRefused,
        r"argument --format: invalid choice: 'xml'"),
    Row("run: unknown backend", cli("run", "--backend", "ray"), CliRefused,
        r"argument --backend: invalid choice: 'ray'"),
    # ---- fedkit run: every config field given a value of the wrong kind ----
    *[Row(f"run: --{f.name} {bad_value(f)}", cli("run", "--" + f.name.replace("_", "-"), bad_value(f)), CliRefused,
          rf"\b{f.name}\b.*{re.escape(bad_value(f))}") for f in dataclasses.fields(Config)],
    # ---- fedkit run: the methods compared, and YAML that sets a key twice ----
    Row("run: empty algorithm list", cli("run", "--algorithm", "[]"), CliRefused,
        r"algorithm is an empty list: name at least one method"),
    Row("run: empty algorithm list in a config file", cli("run", "--config", "{tmp}/c.yaml"), CliRefused,
        r"algorithm is an empty list", {"c.yaml": "algorithm: []\n"}),
    Row("run: algorithm entry without a name", cli("run", "--algorithm", "[fedavg, {{mu: 0.01}}]"), CliRefused,
        r"algorithm entry \{'mu': 0\.01\} is neither a name nor a mapping with a name"),
    Row("run: algorithm entry a number", cli("run", "--algorithm", "[fedavg, 3]"), CliRefused,
        r"algorithm entry 3 is neither a name nor a mapping"),
    Row("run: a method listed twice", cli("run", "--algorithm", "fedavg,fedprox,fedavg"), CliRefused,
        r"algorithm lists 'fedavg' twice"),
    Row("run: a method's own option it does not take", cli("run", "--algorithm", "[fedavg, {{name: fedavg, mu: 1}}]"),
        CliRefused, r"unknown option\(s\) \['mu'\] for algorithm 'fedavg'"),
    Row("run: algorithm_args not a mapping beside a method's own", cli(
        "run", "--algorithm", "[{{name: fedprox, mu: 1}}]", "--algorithm-args", "[1]"), CliRefused,
        r"algorithm_args must be a mapping of option names to values, got \[1\]"),
    Row("run: key set twice in a config file", cli("run", "--config", "{tmp}/c.yaml"), CliRefused,
        r"config file '\S+/c\.yaml' is not valid YAML: key 'lr' is set twice \(first on line 1\) \(line 3",
        {"c.yaml": "lr: 0.1\nrounds: 2\nlr: 0.2\n"}),
    Row("run: nested key set twice in a config file", cli("run", "--config", "{tmp}/c.yaml"), CliRefused,
        r"key 'phi' is set twice", {"c.yaml": "partition_args: {phi: 0.1, phi: 0.5}\n"}),
    Row("run: key set twice in an option", cli("run", "--partition-args", "{{phi: 0.1, phi: 0.5}}"), CliRefused,
        r"argument --partition-args: .*key 'phi' is set twice"),
    # ---- fedkit partition ----
    *[Row(f"partition: {' '.join(argv)}", cli("partition", "--dataset", "digits", *argv), CliRefused, message, files)
      for argv, message, files in [
          (["--phi", "0"], r"argument --phi: must be a finite number > 0, got '0'", {}),
          (["--phi", "abc"], r"argument --phi: must be a finite number > 0, got 'abc'", {}),
          (["--clients", "-3"], r"argument --clients: must be an integer ≥ 1, got '-3'", {}),
          (["--seed", "x"], r"argument --seed: must be an integer ≥ 0, got 'x'", {}),
          (["--plot", "out.txt"], r"argument --plot: must name an image file ending in one of .*got 'out.txt'", {}),
          (["--plot", "{tmp}/mine.png"], r"argument --plot: '\S+/mine\.png' exists: fedkit writes a new file and "
                                         r"overwrites none", {"mine.png": "a figure of someone's"}),
          (["--plot", UNWRITABLE + "/a.png"], f"'{UNWRITABLE}'.*{NOT_WRITTEN}", {}),
          (["--unit", "percent"], r"argument --unit: invalid choice: 'percent'", {}),
          (["--kind", "pie"], r"argument --kind: invalid choice: 'pie'", {}),
          (["--partition-args", "[1, 2]"], r"argument --partition-args: must be a YAML mapping", {}),
          (["--dataset-args", "[1, 2]"], r"argument --dataset-args: must be a YAML mapping", {}),
          (["--partition", "iid", "--phi", "0.3"], r"partition 'iid' got unknown parameter\(s\) phi", {}),
          (["--partition", "nope"], r"unknown partition 'nope'; known: dirichlet", {}),
          (["--dataset", "nope"], r"unknown dataset 'nope'", {}),
          (["--clients", "5000"], r"num_clients=5000 exceeds the number of training samples", {}),
      ]],
    # ---- fedkit list, cache, ledger, book ----
    Row("list: unknown registry", cli("list", "colours"), CliRefused, r"argument what: invalid choice: 'colours'"),
    Row("cache: unknown action", cli("cache", "purge"), CliRefused, r"argument action: invalid choice: 'purge'"),
    Row("cache: merge without --from", cli("cache", "merge"), CliRefused,
        r"fedkit cache merge adds the runs archived under --from DIR \(another machine's figures folder\): give it"),
    Row("cache: --from without merge", cli("cache", "carry", "--from", "{tmp}"), CliRefused,
        r"--from \S+ applies to 'fedkit cache merge' only"),
    Row("cache: --from not a folder", cli("cache", "merge", "--from", "{tmp}/nope"), CliRefused,
        r"argument --from: '\S+/nope' is not a folder"),
    Row("cache: --dir not a folder", cli("cache", "--dir", "{tmp}/nope"), CliRefused,
        r"argument --dir: '\S+/nope' is not a folder"),
    Row("ledger: unknown paper", cli("ledger", "--paper", "fedsgd"), CliRefused,
        r"argument --paper: invalid choice: 'fedsgd'"),
    Row("ledger: --check with --paper", cli("ledger", "--check", "--paper", "taco"), CliRefused,
        r"argument --paper: not allowed with argument --check"),
    Row("ledger: --stale with --check", cli("ledger", "--stale", "--check"), CliRefused,
        r"argument --check: not allowed with argument --stale"),
    Row("ledger: a CSV that is not text", lambda tmp: decide(TOY, "small", tmp), FedkitError,
        r"\S+/taco/fig1_fig3_toy\.csv cannot be read as a CSV: 'utf-8' codec can't decode byte 0x8b",
        {"taco/fig1_fig3_toy.csv": gzip.compress(b"a,b\n1,2\n")}),
    Row("book: --out a file", cli("book", "--out", "{tmp}/site"), CliRefused,
        r"argument --out: '\S+/site' is a file, not a folder", {"site": "not a folder"}),
    Row("book: --out a folder of other files", cli("book", "--out", "{tmp}"), CliRefused,
        r"argument --out: '\S+' holds files that no book build wrote \(it has no \.fedkit-book\)",
        {"figure.png": "someone's"}),
    # ---- fedkit figures ----
    Row("figures: jobs 0", cli("figures", "--jobs", "0"), CliRefused, r"argument --jobs: must be an integer ≥ 1"),
    Row("figures: unknown scale", cli("figures", "--scale", "huge"), CliRefused,
        r"argument --scale: invalid choice: 'huge'"),
    Row("figures: missing notebook", cli("figures", "{tmp}/nope.ipynb"), CliRefused,
        r"no notebook or folder at '\S+/nope\.ipynb'"),
    Row("figures: unknown -p name", cli("figures", str(FIG4), "--scale", "ci", "-p", "no_such_param=1"), CliRefused,
        r"unknown notebook parameter 'no_such_param': the parameters cell of notebook '\S+fig4_cifar10_client_drift"
        r"\.ipynb' sets device, n_seeds, scale, seed, stand_in, target"),
    Row("figures: -p value not YAML", cli("figures", "-p", "stand_in={{fashion"), CliRefused,
        r"argument -p/--param: stand_in: '\{fashion' is not valid YAML: expected ',' or '\}', but got '<stream end>'"),
    Row("figures: negative seed", cli("figures", "--seed", "-1"), CliRefused,
        r"argument --seed: must be an integer ≥ 0, got '-1'"),
    Row("figures: unknown device", cli("figures", "--device", "gpu"), CliRefused,
        r"argument --device: must be cpu, cuda, cuda:N or mps, got 'gpu'"),
    Row("figures: unknown cached-on device", cli("figures", ABLATION, "--cached-on", "gpu"), CliRefused, r"'gpu'"),
    Row("figures: workers 0", cli("figures", "--precompute", "--workers", "0"), CliRefused,
        r"argument --workers: must be an integer ≥ 1, got '0'"),
    Row("figures: minutes 0", cli("figures", "--precompute", "--minutes", "0"), CliRefused,
        r"argument --minutes: must be a finite number > 0, got '0'"),
    Row("figures: match not a regex", cli("figures", "--plan", "--match", "fig3(a"), CliRefused,
        r"argument --match: not a regular expression: 'fig3\(a'"),
    Row("figures: --log a folder", cli("figures", ABLATION, "--precompute", "--log", "{tmp}"), CliRefused,
        r"argument --log: '\S+' is a folder, not a CSV file"),
    Row("figures: --log a file precompute did not write", cli("figures", ABLATION, "--precompute", "--log",
                                                              "{tmp}/results.csv"), CliRefused,
        r"argument --log: '\S+/results\.csv' exists and is not a precompute log", {"results.csv": "a,b\n1,2\n"}),
    Row("figures: --plan with --precompute", cli("figures", ABLATION, "--plan", "--precompute"), CliRefused,
        r"--plan prints the runs and --precompute trains them: give one of the two"),
    Row("figures: --match without --plan or --precompute", cli("figures", ABLATION, "--match", "adult"), CliRefused,
        r"--match 'adult' picks runs for --plan or --precompute, and neither is given"),
    *[Row(f"figures: {flag} without --precompute", cli("figures", ABLATION, "--plan", flag, value), CliRefused,
          rf"{flag} {shown} applies to --precompute only, which is not given")
      for flag, value, shown in [("--workers", "2", "2"), ("--minutes", "5", r"5\.0"),
                                 ("--log", "{tmp}/p.csv", r"\S+/p\.csv")]],
    Row("figures: --archive without --precompute", cli("figures", ABLATION, "--plan", "--archive"), CliRefused,
        r"--archive applies to --precompute only, which is not given"),
    Row("figures: --jobs with --plan", cli("figures", ABLATION, "--plan", "--jobs", "2"), CliRefused,
        r"--jobs 2 runs notebooks at once, which --plan does not; drop it"),
    *[Row(f"figures: {mode} --match that matches nothing", cli("figures", ABLATION, mode, "--match", "adlut"),
          CliRefused, r"--match 'adlut' matches none of the \d+ runs the notebooks list \(names are "
                      r"'<paper>/<notebook>/<label>', e\.g\. 'taco/table6_ablation/")
      for mode in ("--plan", "--precompute")],
    Row("figures: --precompute of notebooks no paper lists", cli(
        "figures", str(NOTEBOOKS / "teaching" / "01_partitions.ipynb"), "--precompute"), CliRefused,
        r"no paper module lists a run of \S+01_partitions\.ipynb .*nothing to precompute"),
    # ---- data files: IDX (mnist, fashion_mnist) ----
    Row("mnist: truncated .gz", load("mnist"), DataFileError,
        TRAIN_IMAGES + r"cannot be read \(Compressed file ended before.*" + REDOWNLOAD,
        mnist(train_images=gzip.compress(IMAGES)[:-30])),
    Row("mnist: .gz that is not gzip", load("mnist"), DataFileError,
        TRAIN_IMAGES + r"cannot be read \(Not a gzipped file.*" + REDOWNLOAD, mnist(train_images=IMAGES)),
    Row("mnist: .gz with a bad checksum", load("mnist"), DataFileError, TRAIN_IMAGES + r"cannot be read \(CRC check",
        mnist(train_images=gzip.compress(IMAGES)[:-8] + b"\0\0\0\0" + gzip.compress(IMAGES)[-4:])),
    Row("mnist: not IDX", load("mnist"), DataFileError, TRAIN_IMAGES + r"is not an IDX file \(bad magic number",
        mnist(train_images=gzip.compress(b"<html>404</html>"))),
    Row("mnist: truncated IDX header", load("mnist"), DataFileError, TRAIN_IMAGES + r"is truncated",
        mnist(train_images=gzip.compress(IMAGES[:9]))),
    Row("mnist: truncated IDX data", load("mnist"), DataFileError,
        TRAIN_IMAGES[:-1] + r": header says shape \(3, 28, 28\) but 2000 data bytes follow",
        mnist(train_images=gzip.compress(IMAGES[:2016]))),
    Row("mnist: images and labels of different sets", load("mnist"), DataFileError,
        r"train-images-idx3-ubyte\.gz holds 3 images but \S+/train-labels-idx1-ubyte\.gz 2 labels",
        mnist(train_labels=gzip.compress(idx(np.zeros(2, np.uint8))))),
    # ---- data files: UCI Adult CSV ----
    Row("adult: binary file", load("adult"), DataFileError,
        r"adult: \S+/adult/adult\.data cannot be read as UTF-8 text.*" + REPLACE, adult(gzip.compress(b"x"))),
    Row("adult: truncated row", load("adult"), DataFileError,
        r"adult: \S+/adult/adult\.data:2: expected 15 comma-separated fields, got 4", adult(ADULT_ROW + "\n1,2,3,4")),
    Row("adult: empty file", load("adult"), DataFileError, r"adult\.data holds no data rows.*" + REPLACE, adult("")),
    Row("adult: non-integer age", load("adult"), DataFileError, r"adult\.data: column 'age' holds a non-integer",
        adult(ADULT_ROW.replace("39", "old"))),
    # ---- data files: LEAF json shards ----
    Row("femnist: truncated json", load("femnist"), DataFileError,
        r"femnist: \S+/train/a\.json is not valid JSON \(.*char 17\).*" + REPLACE, femnist('{"users": ["u"], "num')),
    Row("femnist: json not a shard", load("femnist"), DataFileError,
        r"\S+/train/a\.json is not a LEAF shard \(a JSON object", femnist("[1, 2]")),
    Row("femnist: shard without user_data", load("femnist"), DataFileError,
        r"\S+/train/a\.json is not a LEAF shard \(missing or malformed 'user_data'\)",
        femnist(json.dumps({"users": ["u"]}))),
    Row("femnist: sample of the wrong size", load("femnist"), DataFileError,
        r"a shard of \S+/femnist_leaf/train holds malformed samples \(user 'u' has a sample that is not a list of 784",
        femnist(json.dumps({"users": ["u"], "user_data": {"u": {"x": [[0.0] * 9], "y": [1]}}}))),
    Row("femnist: pixels that are not numbers", load("femnist"), DataFileError,
        r"a shard of \S+/femnist_leaf/train holds malformed samples",
        femnist(json.dumps({"users": ["u"], "user_data": {"u": {"x": [["a"] * 784], "y": [1]}}}))),
    # ---- data files: npz (cifar10_subset) ----
    Row("cifar10_subset: not an npz", load("cifar10_subset"), DataFileError,
        r"cifar10_subset: \S+/cifar10_convnetjs_subset\.npz is not a readable npz.*" + REPLACE, {NPZ: b"\x93NUMPY?"}),
    Row("cifar10_subset: truncated npz", load("cifar10_subset"), DataFileError,
        r"cifar10_convnetjs_subset\.npz is not a readable npz", {NPZ: npz(**CIFAR)[:3000]}),
    Row("cifar10_subset: array missing", load("cifar10_subset"), DataFileError,
        r"cifar10_convnetjs_subset\.npz is not a readable npz of x_train.*KeyError",
        {NPZ: npz(**{k: v for k, v in CIFAR.items() if k != "y_test"})}),
    # ---- hyper-parameters: checked from the constructors' annotations (fedkit/registry.py) ----
    *[Row(f"{name}: {args}", config(algorithm=name, algorithm_args=args), ConfigError, message)
      for name, args, message in [
          ("fedprox", {"mu": "abc"}, r"algorithm 'fedprox': mu must be a number, got 'abc'"),
          ("fedprox", {"mu": float("inf")}, r"mu must be finite, got inf"),
          ("scaffold", {"alpha": "one"}, r"alpha must be a number, got 'one'"),
          ("taco", {"kappa": 1.5}, r"kappa must lie in \[0, 1\], got 1\.5"),
          ("taco", {"kappa": "high"}, r"kappa must be a number, got 'high'"),
          ("taco", {"gamma": "0.1x"}, r"gamma must be a number, got '0\.1x'"),
          ("taco", {"alpha0": "0.1x"}, r"alpha0 must be a number, got '0\.1x'"),
          ("taco", {"detect": "false"}, r"detect must be true or false, got 'false'"),
          ("taco", {"alpha0": True}, r"alpha0 must be a number, got True"),
          ("tailored", {"base": "fedprox", "mu": "no way"}, r"algorithm 'fedprox': mu must be a number"),
          ("fedacg", {"prox": "both"}, r"prox must be one of 'paper', 'code', got 'both'"),
      ]],
    Row("sgd: momentum 0.9x", config(optimizer="sgd", optimizer_args={"momentum": "0.9x"}), ConfigError,
        r"optimizer 'sgd': momentum must be a number, got '0\.9x'"),
    Row("adam: eps nan", config(optimizer="adam", optimizer_args={"eps": float("nan")}), ConfigError,
        r"optimizer 'adam': eps must be finite, got nan"),
    Row("config: unknown keyword", config(learning_rate=0.05), ConfigError,
        r"unknown config field\(s\) \['learning_rate'\] \(did you mean 'lr'\?\)"),
    # ---- combinations of fields (fedkit/config.py; layer selections once the model is built) ----
    Row("sgd: lr in optimizer_args", config(optimizer="sgd", optimizer_args={"lr": 0.1}), ConfigError,
        r"optimizer_args cannot set lr: the client learning rate is the config field lr"),
    Row("lora_transformer: tokenizer of another base", config(dataset="sst2", model="lora_transformer",
                                                                model_args={"base": "tiny_random"}), ConfigError,
        r"dataset_args tokenizer 'minilm' is not the model's base 'tiny_random'"),
    Row("lora_transformer: data set not text", config(dataset="adult", model="lora_transformer"), ConfigError,
        r"model 'lora_transformer' reads token ids, but dataset 'adult' is not tokenized text; use one of .*sst2"),
    Row("fedpvr: last:99 on a 4-layer MLP", federation(algorithm="fedpvr", algorithm_args={"layers": "last:99"}),
        ConfigError, r"fedpvr: layers 'last:99': 'last:N' needs an integer N in \[1, 4\] \(the model's parameterised "
                     r"layers: net\.1, net\.3, net\.5, net\.7\)"),
    Row("fedpvr: head of an all-Linear MLP", federation(algorithm="fedpvr"), ConfigError,
        r"fedpvr: layers 'head' selects every parameter tensor of the model .* which makes FedPVR SCAFFOLD"),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_bad_input_is_refused_in_one_line(row: Row, tmp_path: Path):
    for name, data in row.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data.encode() if isinstance(data, str) else data)
    with pytest.raises(row.error) as e:
        row.input(tmp_path)
    message = str(e.value)
    assert "\n" not in message, message
    assert re.search(row.message, message), f"{message!r} does not match {row.message!r}"


def test_row_ids_are_unique():
    assert len({row.id for row in ROWS}) == len(ROWS)


SUBCOMMANDS = next(a for a in fedkit.cli.parser()._actions if isinstance(a, argparse._SubParsersAction)).choices


def _name(action: argparse.Action) -> str:
    return max(action.option_strings, key=len) if action.option_strings else action.dest


def argument_under_test(argv: tuple[str, ...]) -> tuple[str, str | None]:
    """(subcommand, argument) a cli row gives a bad value: its last option, or the subcommand's positional."""
    actions = SUBCOMMANDS[argv[0]]._actions
    options = {string: _name(a) for a in actions for string in a.option_strings}
    given = [options[a] for a in argv[1:] if a in options]
    positional = next((a.dest for a in actions if not a.option_strings), None)
    return argv[0], given[-1] if given else positional


def test_every_option_of_every_subcommand_has_a_bad_value_row():
    """Read from the parser: every argument that takes a value (not a switch such as --quiet)."""
    taking_values = {(command, _name(a)) for command, p in SUBCOMMANDS.items() for a in p._actions if a.nargs != 0}
    tested = {argument_under_test(row.input.argv) for row in ROWS if hasattr(row.input, "argv")}
    assert taking_values - tested == set()
