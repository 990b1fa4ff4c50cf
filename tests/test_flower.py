"""fedkit on Flower's simulation engine (fedkit.flower): the same history as the sequential engine, each client's
state kept in Flower's Context.state. Skipped where the flower extra is not installed (CI installs it)."""
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import torch
from test_run import client_results, digits_config, results

from fedkit import ConfigError, FedkitError, History, run
from fedkit.configfile import load_config

pytest.importorskip("flwr", reason="the flower extra is not installed (pip install -e '.[flower]')")
from fedkit.flower import client_resources, run_flower  # noqa: E402


@pytest.mark.parametrize("algorithm,args", [("fedavg", {}), ("scaffold", {}), ("taco", {})])
def test_flower_gives_the_sequential_engines_history(algorithm, args):
    """5 SuperNodes, 3 sampled per round, 3 rounds: SCAFFOLD's c_i and TACO's per-client state live on the clients.
    Equal to float tolerance, not bit for bit: the clients run in Ray workers with their own thread count (the
    weights differed by at most 6e-8 in this session's runs)."""
    cfg = digits_config(algorithm=algorithm, algorithm_args=args, num_clients=5, clients_per_round=3,
                        engine="sequential")
    alone = run(cfg, cache=False, progress=False)
    flower = run_flower(cfg, cache=False, progress=False)
    assert (flower.rounds["engine"][1:] == "flower").all()
    pd.testing.assert_frame_equal(results(flower), results(alone), rtol=1e-5, atol=1e-6)
    pd.testing.assert_frame_equal(client_results(flower), client_results(alone), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(flower.weights, alone.weights, rtol=1e-5, atol=1e-6)


def test_a_cuda_config_asks_ray_for_a_gpu_share(monkeypatch):
    """Ray hides every GPU from a worker that asks for none: a CUDA run's clients ask for a share of one, a CPU
    run's for none (they see no GPU)."""
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert client_resources(digits_config(device="cuda")) == {"num_cpus": 1, "num_gpus": 0.3333}
    assert client_resources(digits_config(device="cuda:1"))["num_gpus"] == 0.3333
    assert client_resources(digits_config(device="cpu")) == {"num_cpus": 1, "num_gpus": 0.0}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_run_on_flower_gives_the_sequential_engines_history():
    cfg = digits_config(algorithm="scaffold", num_clients=5, clients_per_round=3, engine="sequential", device="cuda")
    flower = run_flower(cfg, cache=False, progress=False)
    torch.testing.assert_close(flower.weights, run(cfg, cache=False, progress=False).weights, rtol=1e-5, atol=1e-6)


def test_flower_refuses_an_algorithm_that_evaluates_the_clients_models_on_the_server():
    cfg = digits_config(algorithm="fedbn", num_clients=5, clients_per_round=3)
    with pytest.raises(ConfigError, match="algorithm 'fedbn' evaluates each client's own model on the server"):
        run_flower(cfg, cache=False, progress=False)


@pytest.mark.parametrize("option", [["--compile", "true"], ["--engine", "vectorized"]])
def test_fedkit_run_backend_flower_refuses_the_options_it_cannot_honour(option, capsys):
    from fedkit.cli import main

    assert main(["run", "--backend", "flower", "--dataset", "digits", "--model", "mlp", *option]) == 2
    assert capsys.readouterr().err.startswith(f"fedkit: error: the Flower backend does not support "
                                              f"{'compile=True' if option[0] == '--compile' else 'engine'}")


def test_fedkit_run_backend_flower_saves_the_history(tmp_path):
    from fedkit import History
    from fedkit.cli import main

    cfg = digits_config(num_clients=4, clients_per_round=2, rounds=2)
    argv = ["run", "--backend", "flower", "--quiet", "--no-cache", "--out", str(tmp_path), "--dataset", "digits",
            "--partition-args", "{phi: 0.3, min_size: 5}", "--num-clients", "4", "--clients-per-round", "2",
            "--model", "mlp", "--model-args", "{hidden: [32]}", "--rounds", "2", "--local-steps", "4",
            "--batch-size", "16", "--lr", "0.3", "--seed", "1"]
    assert main(argv) == 0
    saved = History.load(tmp_path / f"fedavg-{cfg.key()}")
    assert list(saved.rounds["engine"][1:]) == ["flower", "flower"]
    torch.testing.assert_close(saved.weights, run(cfg, cache=False, progress=False).weights, rtol=1e-5, atol=1e-6)



def test_a_simulated_federation_with_fewer_supernodes_than_clients_is_refused_at_once():
    from flwr.superlink.grid.inmemory_grid import InMemoryGrid

    from fedkit.flower import _partition_nodes

    class TwoNodes(InMemoryGrid):  # a simulation's grid, its SuperNodes registered
        def __init__(self):
            pass

        def get_node_ids(self):
            return [11, 12]

    with pytest.raises(FedkitError, match="has 2 SuperNodes, but the config's num_clients=5 needs one per client: "
                                          "flwr run . --federation-config 'num-supernodes=5'"):
        _partition_nodes(TwoNodes(), 5, timeout=60.0, settle=0.2)


@pytest.fixture
def example_app(tmp_path):
    """A copy of examples/flower, and where its History is saved (the default fedkit-out, runs/ in the App)."""
    from fedkit.flower import history_folder

    app = shutil.copytree(Path(__file__).parents[1] / "examples" / "flower", tmp_path / "app")
    return app, history_folder(app, [])


def fake_flwr(monkeypatch, returncode: int = 0, save: History | None = None) -> list:
    """``flwr`` on PATH, run by fedkit.flower.main as a subprocess that exits ``returncode`` having saved ``save`` (if
    given) where its run config says; returns the commands it was given."""
    import fedkit.flower

    commands = []

    def run(command):
        commands.append(command)
        if save is not None:
            runs = [value for option, value in zip(command, command[1:]) if option == "--run-config"]
            save.save(fedkit.flower.history_folder(Path(command[2]), runs))
        return subprocess.CompletedProcess(command, returncode)

    monkeypatch.setattr(fedkit.flower.shutil, "which", lambda name: f"/bin/{name}")
    monkeypatch.setattr(fedkit.flower.subprocess, "run", run)
    return commands


def test_a_flower_run_that_saves_no_history_exits_1_in_one_line_though_flwr_exits_0(example_app, monkeypatch,
                                                                                    capsys):
    """What happens when Ray's node does not start in time under load: flwr run streams the error and exits 0."""
    from fedkit.flower import main

    app, folder = example_app
    commands = fake_flwr(monkeypatch)
    assert main([str(app), "--federation-config", "num-supernodes=5", "--run-config", "fedkit-out='out'"]) == 1
    moved = app / "out" / folder.name  # a relative fedkit-out is the App's folder's
    assert commands == [["/bin/flwr", "run", str(app), "--federation-config", "num-supernodes=5", "--stream",
                         "--run-config", "fedkit-out='out'", "--run-config", f"fedkit-out='{moved.parent}'"]]
    err = capsys.readouterr().err
    assert err == f"fedkit: error: the Flower run saved no history in {moved}: it failed before its server finished " \
                  "(flwr run exits 0 all the same); its log above says why, e.g. Ray's node did not start in time\n"


def test_a_history_saved_by_an_earlier_run_does_not_count(example_app, monkeypatch, capsys):
    from fedkit.flower import main

    app, folder = example_app
    run(digits_config(rounds=1), cache=False, progress=False).save(folder)
    fake_flwr(monkeypatch)
    assert main([str(app)]) == 1
    assert "saved no history" in capsys.readouterr().err


def test_a_flower_run_that_saves_its_history_says_where(example_app, monkeypatch, capsys):
    from fedkit.flower import main

    app, folder = example_app
    history = run(digits_config(rounds=1), cache=False, progress=False)
    history.save(folder)  # an earlier run's, replaced by this one's
    fake_flwr(monkeypatch, save=history)
    assert main([str(app)]) == 0
    assert capsys.readouterr().out == f"fedkit: the Flower run saved its history in {folder} (last round 1, final " \
                                      f"test accuracy {history.final_accuracy:.4f})\n"


def test_flwrs_own_failure_is_passed_on(example_app, monkeypatch, capsys):
    from fedkit.flower import main

    app, _ = example_app
    fake_flwr(monkeypatch, returncode=2)
    assert main([str(app)]) == 2 and capsys.readouterr().err == ""


@pytest.mark.parametrize("run_config, message", [
    ([], "Cannot find pyproject.toml in {app}"),
    (["fedkit-config='missing.yaml'"], "cannot read config file"),
    (["fedkit-out=runs'"], "The provided configuration string is in an invalid format"),
])
def test_what_is_not_a_flower_app_of_a_fedkit_config_is_refused_in_one_line(example_app, tmp_path, run_config,
                                                                             message, capsys):
    from fedkit.flower import main

    app = tmp_path / "empty" if not run_config else example_app[0]
    argv = [str(app)] + [option for value in run_config for option in ("--run-config", value)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("fedkit: error: ") and message.format(app=app) in err and err.count("\n") == 1, err


def test_the_flower_example_runs_as_the_readme_says_from_an_empty_home(tmp_path):
    """README's command for examples/flower, run as a new user runs it: no ~/.flwr, an empty fedkit cache; flwr
    starts its local SuperLink (on free ports; stopped afterwards) and the simulation trains the example's config."""
    flwr = shutil.which("flwr")
    psutil = pytest.importorskip("psutil")
    if flwr is None:
        pytest.skip("the flwr command is not on PATH")
    root = Path(__file__).parents[1]
    command = next(line.split("#")[0].strip() for line in (root / "README.md").read_text().splitlines()
                   if line.startswith("cd examples/flower && flwr run ."))
    ports = [_free_port(), _free_port()]
    env = {**os.environ, "HOME": str(tmp_path), "FEDKIT_CACHE": str(tmp_path / "cache"),
           "FLWR_LOCAL_SUPERLINK_HTTP_API_PORT": str(ports[0]), "FLWR_LOCAL_CONTROL_API_PORT": str(ports[1]),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    out = tmp_path / "runs"
    try:
        done = subprocess.run(["bash", "-c", f"{command} --run-config \"fedkit-out='{out}'\""], cwd=root, env=env,
                              capture_output=True, text=True, timeout=500)
    finally:  # the SuperLink that flwr started for this HOME (and its SuperExec, which follows it)
        for p in psutil.process_iter(["cmdline"]):
            if f"127.0.0.1:{ports[1]}" in " ".join(p.info["cmdline"] or []):
                p.terminate()
    cfg = load_config(root / "examples" / "flower" / "config.yaml")
    folder = out / f"{cfg.algorithm}-{cfg.key()}"
    assert done.returncode == 0 and folder.is_dir(), done.stdout[-3000:] + done.stderr[-3000:]
    saved = History.load(folder)
    assert list(saved.rounds["engine"][1:]) == ["flower"] * cfg.rounds
    alone = run(cfg.replace(engine="sequential"), cache=False, progress=False)
    torch.testing.assert_close(saved.weights, alone.weights, rtol=1e-5, atol=1e-6)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
