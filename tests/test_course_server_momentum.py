"""Lesson 04's checker: the reference β passes, a too-heavy momentum and FedAvg itself (β = 1) fail."""
import pytest

from fedkit import Config
from fedkit.course import WrongAnswer
from fedkit.course.server_momentum import REFERENCE_BETA, check_exercise

BASE = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="dirichlet",
              partition_args={"phi": 0.1}, num_clients=20, clients_per_round=5, local_steps=10, batch_size=32,
              lr=0.05, rounds=20, algorithm_args={"weighting": "uniform"})  # the notebook's setting
SEEDS = [0]  # β = 0.3 is ahead and β = 0.05 behind on each of seeds 0–4


def test_the_reference_answer_passes(capsys):
    check_exercise(REFERENCE_BETA, BASE, SEEDS)
    assert capsys.readouterr().out.startswith("correct: with β = 0.3, FedAvg-M")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, BASE, SEEDS)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a β in (0, 1] at which FedAvg-M is ahead of FedAvg after 20 rounds")
    assert "set `answer` to your β" in out and "hidden reference answer passes" in out and "0.3" not in out


@pytest.mark.parametrize("beta", [0.05, 1.0])
def test_a_wrong_answer_fails_with_a_hint(beta):
    with pytest.raises(WrongAnswer, match="not ahead; .*try a"):
        check_exercise(beta, BASE, SEEDS)


@pytest.mark.parametrize("beta", [0.0, 1.5, "0.3", True])
def test_an_answer_outside_the_range_is_refused(beta):
    with pytest.raises(WrongAnswer, match=r"β must be a number in \(0, 1\]"):
        check_exercise(beta, BASE, SEEDS)
