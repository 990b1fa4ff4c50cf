"""Lesson 07's checker: the reference κ passes; a κ that expels honest clients, and one that expels nobody, fail."""
import pytest

from fedkit import Config
from fedkit.course import WrongAnswer
from fedkit.course.freeloaders import REFERENCE_KAPPA, check_exercise, rates

BASE = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="label_groups",
              partition_args={}, num_clients=20, local_steps=20, batch_size=32, lr=0.05, rounds=10,
              algorithm="taco", threat="freeloaders", threat_args={"fraction": 0.4})
SEEDS = [0]


def test_the_reference_answer_passes(capsys):
    check_exercise(REFERENCE_KAPPA, BASE, SEEDS)
    assert capsys.readouterr().out == "correct: with κ = 0.8, every freeloader and no honest client is expelled on " \
                                      "seeds [0]\n"
    found = rates(REFERENCE_KAPPA, BASE, SEEDS)
    assert (found["TPR"] == 1).all() and (found["FPR"] == 0).all()


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, BASE, SEEDS)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a κ in [0, 1] at which TACO expels every freeloader and no honest client")
    assert "set `answer` to your κ" in out and "hidden reference answer passes" in out and "0.8" not in out


def test_a_low_kappa_expels_honest_clients():
    with pytest.raises(WrongAnswer, match="honest clients are expelled.*try a higher κ"):
        check_exercise(0.4, BASE, SEEDS)


def test_kappa_one_expels_nobody():
    with pytest.raises(WrongAnswer, match="some freeloaders stay.*try a lower κ"):
        check_exercise(1.0, BASE, SEEDS)


@pytest.mark.parametrize("kappa", [-0.1, 1.5, "0.8"])
def test_an_answer_outside_the_range_is_refused(kappa):
    with pytest.raises(WrongAnswer, match=r"κ must be a number in \[0, 1\]"):
        check_exercise(kappa, BASE, SEEDS)


def test_the_exercise_needs_taco_and_freeloaders():
    with pytest.raises(ValueError, match="TACO against freeloaders"):
        check_exercise(0.8, BASE.replace(threat=None, threat_args={}), SEEDS)


def test_the_exercise_needs_the_detector_on():
    with pytest.raises(ValueError, match="detect=False"):
        check_exercise(0.8, BASE.replace(algorithm_args={"detect": False}), SEEDS)
