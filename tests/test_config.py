"""Every invalid config value is refused with a message naming the field and the value."""
import pytest

from fedkit import Config, ConfigError, run
from fedkit.cli import main

BAD = [
    ({"algorithm": "fedsgdx"}, "unknown algorithm 'fedsgdx'"),
    ({"dataset": "imagenet42"}, "unknown dataset 'imagenet42'"),
    ({"model": "gpt9"}, "unknown model 'gpt9'"),
    ({"partition": "zipf"}, "unknown partition 'zipf'"),
    ({"optimizer": "lion"}, "unknown optimizer 'lion'"),
    ({"num_clients": 0}, "num_clients must be an integer ≥ 1, got 0"),
    ({"rounds": 2.5}, "rounds must be an integer ≥ 1, got 2.5"),
    ({"local_steps": 0}, "local_steps must be an integer ≥ 1, got 0"),
    ({"local_steps": None}, "set exactly one of local_steps and local_epochs"),
    ({"local_epochs": 2}, "set exactly one of local_steps and local_epochs"),
    ({"participation": 0.0}, "participation must lie in (0, 1], got 0.0"),
    ({"participation": 1.5}, "participation must lie in (0, 1], got 1.5"),
    ({"clients_per_round": 30}, "clients_per_round must be an integer in [1, num_clients=20], got 30"),
    ({"lr": -0.1}, "lr must be a finite number > 0, got -0.1"),
    ({"lr": float("nan")}, "lr must be a finite number > 0, got nan"),
    ({"server_lr": 0}, "server_lr must be a finite number > 0, got 0"),
    ({"batch_size": 0}, "batch_size must be an integer ≥ 1, got 0"),
    ({"seed": -1}, "seed must be an integer in [0, 2**63), got -1"),
    ({"seed": 10**30}, "seed must be an integer in [0, 2**63)"),
    ({"dataset": ["mnist"]}, "unknown dataset ['mnist']"),
    ({"partition_args": {"phi": "abc"}}, "partition 'dirichlet': phi must be a number, got 'abc'"),
    ({"partition_args": {"phi": -0.5}}, "partition 'dirichlet': phi must lie in (0, inf), got -0.5"),
    ({"partition_args": {"phi": 0.0}}, "partition 'dirichlet': phi must lie in (0, inf), got 0.0"),
    ({"partition_args": {"rho": 1}}, "partition 'dirichlet' got unknown parameter(s) rho"),
    ({"partition_args": {"phi": float("nan")}}, "partition 'dirichlet': phi must be finite"),
    ({"partition": "shards", "partition_args": {"shards_per_client": 0}}, "shards_per_client must lie in [1, inf)"),
    ({"engine": "turbo"}, "engine must be 'auto' or one of"),
    ({"compile": "yes"}, "compile must be True or False, got 'yes'"),
    ({"compile": True, "engine": "sequential"}, "compile needs engine 'vectorized' or 'auto', not 'sequential'"),
    ({"device": "tpu"}, "device must be 'cpu', 'cuda', 'cuda:N' or 'mps', got 'tpu'"),
    ({"algorithm": "fedprox", "algorithm_args": {"mu": -1}}, "algorithm 'fedprox': mu must lie in [0, inf), got -1"),
    ({"algorithm": "fedprox", "algorithm_args": {"zeta": 1}}, "unknown option(s) ['zeta'] for algorithm 'fedprox'"),
    ({"algorithm_args": {"weighting": "votes"}}, "weighting must be one of 'data', 'uniform', got 'votes'"),
    ({"optimizer": "sgd", "optimizer_args": {"momentum": 1.5}},
     "optimizer 'sgd': momentum must lie in [0, 1), got 1.5"),
    ({"stop_accuracy": 2}, "stop_accuracy must lie in (0, 1], got 2"),
    ({"learning_rate": 0.05}, "unknown config field(s) ['learning_rate'] (did you mean 'lr'?)"),
    ({"lr_schedule": "warmup"}, "unknown lr_schedule 'warmup'"),
    ({"lr_schedule": "step", "lr_schedule_args": {"gamma": 2}}, "lr_schedule 'step': gamma must lie in (0, 1], got 2"),
    ({"link_mbps": 0}, "link_mbps must be a finite number > 0, got 0"),
    ({"algorithm": "taco", "local_steps": None, "local_epochs": 1}, "taco needs a fixed number of local steps"),
    ({"algorithm": "stem", "optimizer": "adam"}, "stem takes its own local step"),
    ({"algorithm": "tailored", "algorithm_args": {"base": "stem"}}, "tailored: base 'stem' takes its own local step"),
    ({"algorithm": "tailored", "algorithm_args": {"base": "fedprox", "zeta": 1}},
     "unknown option(s) ['zeta'] for algorithm 'fedprox'"),
]


@pytest.mark.parametrize("changes,message", BAD)
def test_bad_value_is_refused_with_its_name(changes, message):
    with pytest.raises(ConfigError) as err:
        Config(**changes)
    assert message in str(err.value)


RUN_TIME_BAD = [
    ({"num_clients": 5000, "partition": "iid", "partition_args": {}}, "5000"),
    ({"model_args": {"depth": 3}}, "depth"),
    ({"dataset_args": {"colour": True}}, "colour"),
    ({"compile": True, "model_args": {"hidden": [600, 600]}}, "engine 'auto' picked 'sequential' for model 'mlp'"),
]


@pytest.mark.parametrize("changes,needle", RUN_TIME_BAD)
def test_bad_values_that_need_the_data_fail_before_training(changes, needle):
    cfg = Config(**{"dataset": "digits", "model": "mlp", "rounds": 1, **changes})
    with pytest.raises(ConfigError) as err:
        run(cfg, cache=False, progress=False)
    assert needle in str(err.value)


def test_config_is_hashable_and_its_key_stable():
    a, b = Config(seed=1), Config(seed=1)
    assert a == b and hash(a) == hash(b) and a.key() == b.key()
    assert len({a, b, Config(seed=2)}) == 2
    assert Config(partition_args={"phi": 0.1}).key() != Config(partition_args={"phi": 0.2}).key()
    assert Config(compile=True).key() != Config().key()


def test_from_dict_refuses_unknown_fields():
    with pytest.raises(ConfigError, match="unknown config field"):
        Config.from_dict({"rounds": 3, "epochz": 2})


def test_cli_prints_the_message_and_exits_nonzero_without_traceback(capsys):
    code = main(["run", "--dataset", "digits", "--model", "mlp", "--partition-args", "{phi: -1}",
                 "--rounds", "1", "--quiet", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2
    assert "phi" in err and "-1" in err
    assert "Traceback" not in err
    code = main(["run", "--algorithm", "fedavg,nope", "--quiet"])
    assert code == 2 and "unknown algorithm 'nope'" in capsys.readouterr().err


def test_cli_run_writes_histories_table_and_png(tmp_path, capsys):
    code = main(["run", "--dataset", "digits", "--model", "mlp", "--partition", "iid", "--partition-args", "{}",
                 "--num-clients", "4", "--rounds", "2", "--local-steps", "2", "--algorithm", "fedavg,scaffold",
                 "--out", str(tmp_path), "--quiet", "--no-cache", "--targets", "[0.3]"])
    out = capsys.readouterr().out
    assert code == 0
    assert "rounds to 0.3" in out and "fedavg" in out and "scaffold" in out
    assert len(list(tmp_path.glob("fedavg-*/rounds.csv"))) == 1
    assert len(list(tmp_path.glob("scaffold-*/clients.csv"))) == 1
    assert (tmp_path / "curves-digits-fedavg-scaffold.png").stat().st_size > 0


def test_cli_reads_a_yaml_config_and_options_override_it(tmp_path, capsys):
    config = tmp_path / "exp.yaml"
    config.write_text("dataset: digits\nmodel: mlp\nrounds: 5\nnum_clients: 3\npartition: iid\npartition_args: {}\n")
    code = main(["run", "--config", str(config), "--rounds", "1", "--out", str(tmp_path), "--quiet", "--no-cache"])
    assert code == 0
    from fedkit import History
    (run_dir,) = tmp_path.glob("fedavg-*")
    assert History.load(run_dir).config["rounds"] == 1
    with pytest.raises(SystemExit) as stop:  # refused while the command line is read
        main(["run", "--config", str(tmp_path / "missing.yaml")])
    assert stop.value.code == 2 and "missing.yaml" in capsys.readouterr().err


def test_cli_list_names_every_registry(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for word in ("algorithms:", "fedavg", "scaffold", "taco", "mnist_5k", "resnet18", "dirichlet", "sgd"):
        assert word in out
