"""Lesson 05's checker: the reference η_l passes, a large η_l (stale corrections) fails."""
import pytest

from fedkit import Config
from fedkit.course import WrongAnswer
from fedkit.course.adaptive_clients import REFERENCE_LR, check_exercise

FADAMGC = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="dirichlet",
                 partition_args={"phi": 0.1}, num_clients=20, clients_per_round=10, local_steps=20, batch_size=32,
                 rounds=15, algorithm="fadamgc", algorithm_args={"tracked": 5}, optimizer="adam",
                 optimizer_args={"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "bias_correction": False}, lr=1e-3)
SEEDS = [0]


def test_the_reference_answer_passes(capsys):
    check_exercise(REFERENCE_LR, FADAMGC, SEEDS)
    assert capsys.readouterr().out.startswith("correct: with η_l = 0.001, FAdamGC")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, FADAMGC, SEEDS)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a client learning rate η_l at which FAdamGC ends ahead of LocalAdam")
    assert "set `answer` to your η_l" in out and "hidden reference answer passes" in out and "0.001" not in out


def test_a_large_learning_rate_fails_with_a_hint():
    with pytest.raises(WrongAnswer, match="not ahead; the correction is estimated a round earlier"):
        check_exercise(1e-2, FADAMGC, SEEDS)


@pytest.mark.parametrize("lr", [0.0, 2.0, "1e-3"])
def test_an_answer_outside_the_range_is_refused(lr):
    with pytest.raises(WrongAnswer, match=r"η_l must be a number in \(0, 1\]"):
        check_exercise(lr, FADAMGC, SEEDS)


def test_the_exercise_needs_fadamgc():
    with pytest.raises(ValueError, match="give FAdamGC's config"):
        check_exercise(1e-3, FADAMGC.replace(algorithm="local_adam", algorithm_args={}), SEEDS)
