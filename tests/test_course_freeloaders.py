"""Lesson 07's checker: the reference κ passes; a κ that expels honest clients, and one that expels nobody, fail."""
import pytest

from fedkit import Config
from fedkit.course.freeloaders import REFERENCE_KAPPA, check_exercise

BASE = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="label_groups",
              partition_args={}, num_clients=20, local_steps=20, batch_size=32, lr=0.05, rounds=10,
              algorithm="taco", threat="freeloaders", threat_args={"fraction": 0.4})
SEEDS = [0]


def test_the_reference_answer_passes():
    found = check_exercise(REFERENCE_KAPPA, BASE, SEEDS)
    assert (found["TPR"] == 1).all() and (found["FPR"] == 0).all()
    assert check_exercise(None, BASE, SEEDS).equals(found)  # None checks the reference


def test_a_low_kappa_expels_honest_clients():
    with pytest.raises(AssertionError, match="honest clients are expelled.*try a higher κ"):
        check_exercise(0.4, BASE, SEEDS)


def test_kappa_one_expels_nobody():
    with pytest.raises(AssertionError, match="some freeloaders stay.*try a lower κ"):
        check_exercise(1.0, BASE, SEEDS)


@pytest.mark.parametrize("kappa", [-0.1, 1.5, "0.8"])
def test_an_answer_outside_the_range_is_refused(kappa):
    with pytest.raises(AssertionError, match=r"κ must be a number in \[0, 1\]"):
        check_exercise(kappa, BASE, SEEDS)


def test_the_exercise_needs_taco_and_freeloaders():
    with pytest.raises(ValueError, match="TACO against freeloaders"):
        check_exercise(0.8, BASE.replace(threat=None, threat_args={}), SEEDS)


def test_the_exercise_needs_the_detector_on():
    with pytest.raises(ValueError, match="detect=False"):
        check_exercise(0.8, BASE.replace(algorithm_args={"detect": False}), SEEDS)
