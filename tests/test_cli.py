"""The ``fedkit`` command line: help for every config field, YAML values and files, explicit nulls, each method's
own options, and every input checked before training (bad inputs themselves are rows of test_bad_inputs.py)."""
from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import numpy as np
import pytest
import yaml

import fedkit.cli
from fedkit import Config, ConfigError, Federation
from fedkit.cli import HELP, configs, main, method_settings, parser
from fedkit.configfile import FLOAT_FIELDS, load_config, read_yaml


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


def test_each_method_in_a_comparison_takes_its_own_options(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("algorithm:\n  - fedavg\n  - {name: fedprox, mu: 0.01}\n  - {name: scaffold, weighting: data}\n")
    runs = run_configs("--config", str(path))
    assert list(runs) == ["fedavg", "fedprox(mu=0.01)", "scaffold(weighting=data)"]
    assert [c.algorithm_args for c in runs.values()] == [{}, {"mu": 0.01}, {"weighting": "data"}]
    # options shared by every method, and a method's own on top; one method twice with different options
    runs = run_configs("--algorithm", "[fedprox, {name: fedprox, mu: 0.5}]", "--algorithm-args", "{weighting: uniform}")
    assert [c.algorithm_args for c in runs.values()] == [{"weighting": "uniform"}, {"weighting": "uniform", "mu": 0.5}]


def test_method_settings_name_the_weighting_and_every_option_with_its_default():
    runs = run_configs("--algorithm", "[fedavg, fedprox, scaffold, {name: scaffold, weighting: data}]")
    assert [method_settings(cfg) for cfg in runs.values()] == [
        ("data", "-"), ("data", "mu=0.1"), ("uniform", "alpha=1.0, correction_at=after_step"),
        ("data", "alpha=1.0, correction_at=after_step")]


def test_run_prints_each_methods_weighting_and_options(tmp_path, capsys):
    methods = "[fedavg, {name: fedprox, mu: 0.01}, scaffold]"
    assert main(["run", "--dataset", "digits", "--model", "mlp", "--model-args", "{hidden: [8]}", "--partition", "iid",
                 "--partition-args", "{}", "--num-clients", "4", "--rounds", "1", "--local-steps", "1", "--quiet",
                 "--no-cache", "--out", str(tmp_path), "--algorithm", methods]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^method +weighting +options", out, re.M)
    assert re.search(r"^fedavg +data +-$", out, re.M) and re.search(r"^fedprox\(mu=0\.01\) +data +mu=0\.01$", out, re.M)
    assert re.search(r"^scaffold +uniform +alpha=1\.0, correction_at=after_step$", out, re.M)
    assert re.search(r"^fedprox\(mu=0\.01\) +\d\.\d{4}", out, re.M)  # the results table's row
    assert (tmp_path / "curves-digits-fedavg-fedprox-scaffold.png").exists()


def test_yaml_merge_keys_may_still_be_overridden():
    assert read_yaml("base: &b {phi: 0.1, q: 1}\nargs: {<<: *b, phi: 0.5}\n", "x")["args"] == {"phi": 0.5, "q": 1}


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


# ---- fedkit partition

def _printed_rows(out: str, cast=int):
    """The clients × classes rows of ``fedkit partition``'s table (last column: the client's total)."""
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit() and "clients" not in line]
    return np.array([[cast(v) for v in row[1:]] for row in rows])


def test_partition_prints_the_label_table_and_writes_the_plot(tmp_path, capsys):
    from fedkit.data import load_dataset

    png = tmp_path / "new" / "out.png"
    assert main(["partition", "--dataset", "digits", "--phi", "0.5", "--clients", "7", "--seed", "3",
                 "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digits · dirichlet {'phi': 0.5} · 7 clients · seed 3")
    counts = _printed_rows(out)
    labels = load_dataset("digits").y_train.numpy()
    assert counts.shape == (7, 11)  # 10 classes and the total
    np.testing.assert_array_equal(counts[:, :10].sum(axis=0), np.bincount(labels))  # every sample, once
    np.testing.assert_array_equal(counts[:, :10].sum(axis=1), counts[:, 10])
    assert png.stat().st_size > 10_000 and f"label distribution: {png}" in out
    # the partition `fedkit run` trains on with the same settings
    fed = Federation(Config(dataset="digits", model="mlp", partition_args={"phi": 0.5}, num_clients=7, seed=3))
    np.testing.assert_array_equal(counts[:, 10], [len(p) for p in fed.parts])


def test_partition_in_shares_and_other_partitions(capsys):
    assert main(["partition", "--dataset", "digits", "--partition", "qskew", "--partition-args", "{q: 0.5}",
                 "--clients", "5", "--unit", "shares"]) == 0
    out = capsys.readouterr().out
    shares = _printed_rows(out, float)[:, :-1]
    assert shares.shape == (5, 10)
    np.testing.assert_allclose(shares.sum(axis=1), 1, atol=6e-3)  # printed to 3 decimals
    assert main(["partition", "--dataset", "digits", "--partition", "iid", "--clients", "4"]) == 0  # no φ needed


def test_figures_cached_on_names_an_unknown_device_before_any_notebook_runs(monkeypatch, capsys):
    monkeypatch.setenv("FEDKIT_CACHED_ON", "")  # main sets it: the test's end restores it
    monkeypatch.setattr("fedkit.figures.run_notebooks", lambda *a, **k: pytest.fail("a notebook ran"))
    assert main(["figures", "notebooks/taco/table6_ablation.ipynb", "--cached-on", "cuda", "--cached-on", "gpu"]) == 2
    assert "'gpu'" in capsys.readouterr().err


def test_figures_plan_shows_a_notebook_its_paper_module_does_not_list(tmp_path, capsys):
    (tmp_path / "taco").mkdir()
    notebook = tmp_path / "taco" / "my_notes.ipynb"
    notebook.write_text("{}")
    assert main(["figures", str(notebook), "--scale", "ci", "--plan"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["taco/my_notes", "?"]
    assert "note taco/my_notes: fedkit.papers.taco does not list this notebook's runs" in out


def test_precompute_names_the_notebooks_it_leaves_out(monkeypatch, capsys):
    monkeypatch.setattr("fedkit.precompute.precompute", lambda *a, **k: [])
    teaching = "notebooks/teaching/01_partitions.ipynb"
    assert main(["figures", "notebooks/taco/table6_ablation.ipynb", teaching, "--precompute"]) == 0
    assert f"precompute: {teaching} left out: no paper module fedkit.papers.teaching" in capsys.readouterr().err


def test_precompute_log_may_be_new_or_an_earlier_log(tmp_path):
    earlier = tmp_path / "earlier.csv"
    earlier.write_text("runs,algorithm,dataset\ntaco/x,fedavg,digits\n")
    for log in (earlier, tmp_path / "new.csv"):
        assert parser().parse_args(["figures", "--precompute", "--log", str(log)]).log == log


def _checkout(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text("")
    (folder / "notebooks").mkdir()
    return folder


def test_ledger_refuses_a_checkout_other_than_the_one_it_runs_from(tmp_path, monkeypatch, capsys):
    installed = Path(fedkit.cli.__file__).resolve().parent
    monkeypatch.chdir(_checkout(tmp_path / "other"))
    assert main(["ledger", "--check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the fedkit it runs, {installed}, on the data of this checkout, " \
        f"{tmp_path / 'other'}: run it in {installed.parent}" in err
    _checkout(tmp_path / "same" / "repo")
    (tmp_path / "same" / "repo" / "fedkit").symlink_to(installed)  # the installed package, without its data
    monkeypatch.chdir(tmp_path / "same" / "repo")
    assert main(["ledger"]) == 2
    assert capsys.readouterr().err == (f"fedkit: error: fedkit ledger needs figures and REPRODUCTION.md in the "
                                       f"checkout {tmp_path / 'same' / 'repo'}\n")


def test_an_interrupt_ends_any_command_in_one_line_with_status_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(fedkit.cli, "cmd_list", interrupted)
    try:
        status = fedkit.cli.main(["list", "algorithms"])
    except KeyboardInterrupt:
        pytest.fail("the interrupt left main as a traceback")
    assert status == 130
    assert capsys.readouterr().err == "fedkit: interrupted\n"


def test_a_reader_that_leaves_the_pipe_ends_the_command_quietly():
    """`fedkit list | head -1`: the reader closes the pipe before fedkit writes; one exit code, no traceback."""
    import subprocess
    import sys
    child = subprocess.Popen([sys.executable, "-m", "fedkit.cli", "list"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()  # before the child has imported torch, so its block-buffered output meets a closed pipe
    err = child.stderr.read().decode()
    assert child.wait() == 141, err
    assert err == ""
