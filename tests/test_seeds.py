"""Seed sweeps: tidy frames, mean ± std by hand, verdicts only where the seeds separate the methods."""
import sys

import numpy as np
import pandas as pd
import pytest

from fedkit import Config, History
from fedkit.seeds import by_seed, finals, mean_std, pm, reach, run_seeds, separated, tidy, verdict


def history(accuracies, diverged=False):
    rounds = pd.DataFrame({"round": range(len(accuracies)), "test_accuracy": accuracies})
    return History({}, rounds, pd.DataFrame(), diverged)


def test_mean_std_over_seeds_by_hand():
    runs = {("A", 0): history([0.1, 0.5]), ("A", 1): history([0.1, 0.7]), ("A", 2): history([0.1, 0.6]),
            ("B", 0): history([0.1, 0.4]), ("B", 1): history([0.1, np.nan], diverged=True)}
    frame = tidy(runs)
    assert len(frame) == 10 and list(frame.columns) == ["method", "seed", "round", "test_accuracy", "diverged"]
    last = mean_std(frame[frame["round"] == 1], "test_accuracy")
    assert last.loc["A", "mean"] == pytest.approx(0.6) and last.loc["A", "std"] == pytest.approx(0.1)  # ddof 1
    assert last.loc["A", "seeds"] == 3 and last.loc["B", "seeds"] == 1 and last.loc["B", "diverged"] == 1
    assert np.isnan(last.loc["B", "std"])
    per_round = mean_std(frame, "test_accuracy", by=("method", "round"))
    assert per_round.loc[("A", 0), "mean"] == pytest.approx(0.1)
    final = finals(runs).set_index(["method", "seed"])
    assert np.isnan(final.loc[("B", 1), "final_accuracy"]) and final.loc[("A", 1), "final_accuracy"] == 0.7
    assert pm(0.6, 0.1) == "60.00 ± 10.00" and pm(0.4, np.nan) == "40.00" and pm(np.nan, np.nan) == "×"


def test_rounds_and_simulated_time_to_a_target_by_hand():
    def timed(accuracies, seconds, diverged=False):
        h = history(accuracies, diverged)
        h.rounds["sim_seconds"] = seconds
        return h

    runs = {("A", 0): timed([0.1, 0.4, 0.6, 0.7], [np.nan, 2.0, 3.0, 4.0]),
            ("A", 1): timed([0.1, 0.2, 0.3, 0.4], [np.nan, 1.0, 1.0, 1.0]),
            ("B", 0): timed([0.1, 0.6, np.nan, np.nan], [np.nan, 1.0, 1.0, 1.0], diverged=True)}
    frame = reach(runs, 0.55).set_index(["method", "seed"])
    assert frame.loc[("A", 0), "rounds_to_target"] == 2 and frame.loc[("A", 0), "time_to_target"] == 5.0
    assert np.isnan(frame.loc[("A", 1), "rounds_to_target"]) and np.isnan(frame.loc[("A", 1), "time_to_target"])
    assert np.isnan(frame.loc[("B", 0), "rounds_to_target"])  # a diverged run reached nothing
    later = reach(runs, 0.35, per_round="sim_seconds").set_index(["method", "seed"])
    assert later.loc[("A", 1), "time_to_target"] == 3.0


def test_seeds_by_method_count_a_missed_target_as_the_budget_and_give_a_verdict_only_when_separated():
    reached = pd.DataFrame({"method": ["A", "A", "B", "B"], "seed": [0, 1, 0, 1],
                            "rounds_to_target": [10.0, 12.0, np.nan, 30.0]})
    table = by_seed(reached, "rounds_to_target", {"A": 51, "B": 51})
    assert table.loc[0, "B"] == 51 and table.loc[1, "B"] == 30 and list(table.columns) == ["A", "B"]
    assert verdict("A", "B", table) == "A < B on every seed"
    assert verdict("B", "A", table) == "A < B on every seed"
    assert verdict("A", "B", table, higher=True) == verdict("B", "A", table, higher=True) == "B > A on every seed"
    assert verdict("A", "B", by_seed(reached, "rounds_to_target", 11)) == "seeds overlap: undecided"
    assert verdict("A", "B", table.iloc[:1]) == "no verdict (one seed)"


def test_a_verdict_needs_seeds_that_separate():
    assert separated(pd.Series([0.8, 0.82]), pd.Series([0.7, 0.75])) is True
    assert separated(pd.Series([0.8, 0.72]), pd.Series([0.7, 0.75])) is False  # the spreads overlap
    assert separated(pd.Series([0.8]), pd.Series([0.7, 0.75])) is None  # one seed: no verdict


def test_each_seed_is_a_cached_run(tmp_path, monkeypatch):
    base = Config(dataset="digits", partition="iid", partition_args={}, num_clients=4, model="mlp",
                  model_args={"hidden": [8]}, rounds=1, local_steps=2, batch_size=16, lr=0.3)
    configs = {"FedAvg": base, "FedProx": base.replace(algorithm="fedprox")}
    runs = run_seeds(configs, [0, 1], cache=tmp_path)
    assert sorted(runs) == [("FedAvg", 0), ("FedAvg", 1), ("FedProx", 0), ("FedProx", 1)]
    assert runs["FedAvg", 0].config["seed"] == 0 and runs["FedAvg", 1].config["seed"] == 1
    assert runs["FedAvg", 0].rounds["train_loss"].iloc[1] != runs["FedAvg", 1].rounds["train_loss"].iloc[1]
    monkeypatch.setattr(sys.modules["fedkit.runner"], "Federation", lambda cfg: pytest.fail("retrained"))
    again = run_seeds(configs, [0, 1], cache=tmp_path)
    pd.testing.assert_frame_equal(again["FedProx", 1].rounds, runs["FedProx", 1].rounds, check_dtype=False)


@pytest.mark.parametrize("algorithm, steps", [("fedavg", None), ("scaffold", None), ("taco", 5)])
def test_seeds_trained_together_equal_each_seed_alone(tmp_path, algorithm, steps):
    """One stack per round for all seeds (a client's rows are its own): each seed's history and model are its
    own run's, to float tolerance; a seed already in the cache is loaded, the others still train together."""
    from fedkit import run
    from fedkit.runner import run_together

    base = Config(dataset="digits", partition="dirichlet", partition_args={"phi": 0.5}, num_clients=6,
                  clients_per_round=4, model="mlp", model_args={"hidden": [16]}, rounds=3, local_steps=steps,
                  local_epochs=None if steps else 1, batch_size=32, lr=0.1, algorithm=algorithm)
    cfgs = [base.replace(seed=seed) for seed in (0, 1, 2)]
    alone = [run(cfg, cache=False, progress=False) for cfg in cfgs]
    run(cfgs[1], cache=tmp_path, progress=False)  # seed 1 is cached
    together = run_together(cfgs, cache=tmp_path, progress=False)
    assert set(together[0].rounds["engine"].dropna()) == {"vectorized"}
    for a, b in zip(alone, together):
        columns = ["round", "test_accuracy", "test_loss", "train_loss", "clients", "bytes_up"]
        pd.testing.assert_frame_equal(a.rounds[columns], b.rounds[columns], rtol=1e-4, atol=1e-5,
                                      check_dtype=False)
    for a, b in (alone[0], together[0]), (alone[2], together[2]):  # trained together (seed 1 came from the cache)
        np.testing.assert_allclose(a.weights.numpy(), b.weights.numpy(), rtol=1e-4, atol=1e-5)
    assert not together[0].rounds["test_accuracy"].equals(together[2].rounds["test_accuracy"])  # seeds differ


class Stop(Exception):
    pass


def stop_after(rnd):
    def check(record, w):
        if record["round"] >= rnd:
            raise Stop(f"after round {record['round']}")
    return check


def test_a_stop_in_one_seed_still_records_the_round_of_the_others(tmp_path, monkeypatch):
    """A callback that stops seed 0 (a precompute deadline) must not cost seeds 1 and 2 the round they trained."""
    import fedkit.runner as runner
    from fedkit.runner import Run, rounds_left, run_together

    cfgs = [Config(dataset="digits", partition="iid", partition_args={}, num_clients=4, model="mlp",
                   model_args={"hidden": [8]}, rounds=4, local_steps=2, batch_size=16, lr=0.3, seed=s)
            for s in (0, 1, 2)]

    class FirstSeedStops(Run):
        def __init__(self, cfg, **kw):
            super().__init__(cfg, **kw, callbacks=(stop_after(2),) if cfg.seed == 0 else ())

    monkeypatch.setattr(runner, "Run", FirstSeedStops)
    with pytest.raises(Stop, match="after round 2"):
        run_together(cfgs, cache=tmp_path, progress=False)
    assert [rounds_left(cfg, tmp_path) for cfg in cfgs] == [2, 2, 2]


def test_seeds_resumed_from_different_rounds_train_in_step_and_equal_their_own_runs(tmp_path):
    """Seed 0 resumes after round 2, seeds 1 and 2 start at round 1: a joined stack would give them seed 0's η_l of
    a later round (a step schedule halves it each round), so the rounds behind train first."""
    from fedkit import run
    from fedkit.runner import rounds_left, run_together

    base = Config(dataset="digits", partition="dirichlet", partition_args={"phi": 0.5}, num_clients=6,
                  clients_per_round=4, model="mlp", model_args={"hidden": [16]}, rounds=4, local_steps=3,
                  batch_size=32, lr=0.2, lr_schedule="step", lr_schedule_args={"every": 1, "gamma": 0.5})
    cfgs = [base.replace(seed=seed) for seed in (0, 1, 2)]
    alone = [run(cfg, cache=False, progress=False) for cfg in cfgs]
    with pytest.raises(Stop):
        run(cfgs[0], cache=tmp_path, progress=False, callbacks=(stop_after(2),))
    assert [rounds_left(cfg, tmp_path) for cfg in cfgs] == [2, 4, 4]
    together = run_together(cfgs, cache=tmp_path, progress=False)
    for a, b in zip(alone, together):
        columns = ["round", "test_accuracy", "test_loss", "train_loss"]
        pd.testing.assert_frame_equal(a.rounds[columns], b.rounds[columns], rtol=1e-4, atol=1e-5, check_dtype=False)
        np.testing.assert_allclose(a.weights.numpy(), b.weights.numpy(), rtol=1e-4, atol=1e-5)


def test_seeds_resumed_from_their_checkpoints_still_train_in_one_stack(tmp_path, monkeypatch):
    """engine="auto": a resumed run's federation holds its checkpoint's engine ("vectorized"), the config still asks
    for "auto"; the seeds must stack again, not train one after another (slower, and another float order)."""
    import fedkit.runner as runner
    from fedkit import run
    from fedkit.runner import Run, rounds_left, run_together

    cfgs = [Config(dataset="digits", partition="iid", partition_args={}, num_clients=4, model="mlp",
                   model_args={"hidden": [8]}, rounds=4, local_steps=2, batch_size=16, lr=0.3, seed=s)
            for s in (0, 1, 2)]
    assert cfgs[0].engine == "auto"
    alone = [run(cfg, cache=False, progress=False) for cfg in cfgs]

    class FirstSeedStops(Run):
        def __init__(self, cfg, **kw):
            super().__init__(cfg, **kw, callbacks=(stop_after(2),) if cfg.seed == 0 else ())

    with monkeypatch.context() as patch:
        patch.setattr(runner, "Run", FirstSeedStops)
        with pytest.raises(Stop):
            run_together(cfgs, cache=tmp_path, progress=False)
    assert [rounds_left(cfg, tmp_path) for cfg in cfgs] == [2, 2, 2]
    together = run_together(cfgs, cache=tmp_path, progress=False)
    for cfg, history in zip(cfgs, together):
        assert history.provenance["resumed_after_round"] == 2
        assert sorted(history.provenance["stacked_with"]) == sorted(c.key() for c in cfgs if c != cfg)
        segments = history.provenance["segments"]
        assert [seg["rounds"] for seg in segments] == [[1, 2], [3, 4]]  # both segments trained the seeds in one stack
        assert all(sorted(seg["stacked_with"]) == sorted(history.provenance["stacked_with"]) for seg in segments)
    for a, b in zip(alone, together):
        columns = ["round", "test_accuracy", "test_loss", "train_loss"]
        pd.testing.assert_frame_equal(a.rounds[columns], b.rounds[columns], rtol=1e-4, atol=1e-5, check_dtype=False)
