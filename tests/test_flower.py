"""fedkit on Flower's simulation engine (fedkit.flower): the same history as the sequential engine, each client's
state kept in Flower's Context.state. Skipped where the flower extra is not installed (CI installs it)."""
import pandas as pd
import pytest
import torch
from test_run import client_results, digits_config, results

from fedkit import ConfigError, run

pytest.importorskip("flwr", reason="the flower extra is not installed (pip install -e '.[flower]')")
from fedkit.flower import run_flower  # noqa: E402


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


def test_flower_refuses_an_algorithm_that_evaluates_the_clients_models_on_the_server():
    cfg = digits_config(algorithm="fedbn", num_clients=5, clients_per_round=3)
    with pytest.raises(ConfigError, match="algorithm 'fedbn' evaluates each client's own model on the server"):
        run_flower(cfg, cache=False, progress=False)


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

