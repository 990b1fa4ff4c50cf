"""The ``fedkit run`` command line: help for every config field, YAML values and files, explicit nulls,
and every input checked before training (bad inputs themselves are rows of test_bad_inputs.py)."""
from __future__ import annotations

import dataclasses
import re
import typing

import pytest
import yaml

import fedkit.cli
from fedkit import Config, ConfigError
from fedkit.cli import HELP, configs, main, parser
from fedkit.configfile import FLOAT_FIELDS, load_config


def run_configs(*argv: str) -> dict[str, Config]:
    """The configs ``fedkit run ARGV`` would train, one per algorithm."""
    return configs(parser().parse_args(["run", *argv]))


def test_every_config_field_has_a_help_line():
    assert set(HELP) == {f.name for f in dataclasses.fields(Config)}
    assert all(text and "\n" not in text and "%" not in text for text in HELP.values())


def test_help_gives_each_field_its_meaning_and_default(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "500")  # one line per option
    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for f in dataclasses.fields(Config):
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        shown = yaml.safe_dump(default, default_flow_style=True).removesuffix("...\n").strip()
        line = rf"--{f.name.replace('_', '-')} \S+\s+{re.escape(HELP[f.name])} \(default: {re.escape(shown)}\)"
        assert re.search(line, text), (f.name, line)
    assert re.search(r"--partition-args MAPPING\s+.*\(default: \{phi: 0\.1\}\)", text)
    assert re.search(r"--local-epochs INT\|null\s+.*\(default: null\)", text)


def test_float_fields_come_from_the_type_hints():
    hints = typing.get_type_hints(Config)
    assert {"lr", "server_lr", "participation", "stop_accuracy"} <= FLOAT_FIELDS
    assert all(float in (hints[name], *typing.get_args(hints[name])) for name in FLOAT_FIELDS)
    assert not FLOAT_FIELDS & {"rounds", "seed", "dataset", "partition_args", "local_steps"}


def test_exponent_notation_is_a_number_on_the_command_line_and_in_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("lr: 5e-3\nserver_lr: 1E0\nrounds: 3\n")
    assert yaml.safe_load(path.read_text())["lr"] == "5e-3"  # YAML 1.1: a string
    cfg = run_configs("--config", str(path), "--participation", "5e-1")["fedavg"]
    assert (cfg.lr, cfg.server_lr, cfg.participation, cfg.rounds) == (0.005, 1.0, 0.5, 3)
    assert type(cfg.lr) is float
    assert run_configs("--config", str(path), "--lr", "1e-3")["fedavg"].lr == 0.001  # options win


def test_explicit_null_unsets_a_field(tmp_path):
    cfg = run_configs("--local-steps", "null", "--local-epochs", "1")["fedavg"]
    assert (cfg.local_steps, cfg.local_epochs) == (None, 1)
    path = tmp_path / "c.yaml"
    path.write_text("local_steps: null\nlocal_epochs: 2\nthreat: null\n")
    cfg = run_configs("--config", str(path))["fedavg"]
    assert (cfg.local_steps, cfg.local_epochs) == (None, 2)
    assert run_configs()["fedavg"].local_steps == Config().local_steps  # an option not given keeps the default


def test_options_take_yaml_values_and_algorithm_lists(tmp_path):
    runs = run_configs("--algorithm", "fedavg, fedprox", "--partition-args", "{phi: 0.5}", "--rounds", "2")
    assert list(runs) == ["fedavg", "fedprox"]
    assert all(cfg.partition_args == {"phi": 0.5} and cfg.rounds == 2 for cfg in runs.values())
    path = tmp_path / "c.yaml"
    path.write_text("algorithm: [fedavg, scaffold]\n")
    assert list(run_configs("--config", str(path))) == ["fedavg", "scaffold"]


def test_targets_and_out(tmp_path):
    args = parser().parse_args(["run", "--targets", "[0.5, 1e-1]", "--out", str(tmp_path / "new" / "runs")])
    assert args.targets == [0.5, 0.1] and args.out == tmp_path / "new" / "runs"
    assert parser().parse_args(["run", "--targets", "0.8"]).targets == [0.8]


def test_every_algorithm_is_validated_before_the_first_trains(monkeypatch, capsys):
    trained = []
    monkeypatch.setattr(fedkit.cli, "_train", lambda cfg, args: trained.append(cfg))
    assert main(["run", "--algorithm", "fedavg,fedprox", "--algorithm-args", "{nonsense: 1}"]) == 2
    assert trained == []
    assert capsys.readouterr().err.startswith("fedkit: error: ")


def test_list_names_every_registry_including_threats(capsys):
    assert main(["list", "threats"]) == 0
    assert capsys.readouterr().out.strip() == "threats: freeloaders, none, random_scaling"
    assert main(["list"]) == 0
    assert {line.split(":")[0] for line in capsys.readouterr().out.splitlines()} == {
        "algorithms", "datasets", "models", "partitions", "optimizers", "threats"}


def test_load_config_reads_a_file_as_fedkit_run_does(tmp_path):
    """load_config (the Flower apps' fedkit-config): YAML 1.1's 1e-3 string is a number, a bad value is
    refused with its name."""
    (tmp_path / "c.yaml").write_text("dataset: digits\nlr: 1e-3\nnum_clients: 4\n")
    assert load_config(tmp_path / "c.yaml") == Config(dataset="digits", lr=0.001, num_clients=4)
    (tmp_path / "bad.yaml").write_text("lr: -1\n")
    with pytest.raises(ConfigError, match="lr must be a finite number > 0, got -1"):
        load_config(tmp_path / "bad.yaml")
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.yaml")
