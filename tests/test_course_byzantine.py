"""Lesson 06's checker: the reference c passes, c = 0 (no drag: rescaling alone) fails."""
import pytest

from fedkit import Config
from fedkit.course.byzantine import REFERENCE_C, check_exercise

ATTACKED = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="qskew",
                  partition_args={"q": 1.0}, num_clients=10, clients_per_round=10, local_steps=5, batch_size=32,
                  lr=0.1, rounds=20, threat="random_scaling", threat_args={"count": 4, "variance": 3.0})
SEEDS = [0]


def test_the_reference_answer_passes():
    acc = check_exercise(REFERENCE_C, ATTACKED, SEEDS, root_samples=100)
    assert acc["DRAG"] > acc["FedAvg"]
    assert check_exercise(None, ATTACKED, SEEDS, root_samples=100) == acc  # None checks the reference


def test_no_drag_fails_with_a_hint():
    with pytest.raises(AssertionError, match=r"not 0.10 ahead; a reversed upload becomes \(4c − 1\) r"):
        check_exercise(0.0, ATTACKED, SEEDS, root_samples=100)


@pytest.mark.parametrize("c", [-0.1, 1.5, "0.5", [0.5]])
def test_an_answer_outside_the_range_is_refused(c):
    with pytest.raises(AssertionError, match=r"c must be a number in \[0, 1\]"):
        check_exercise(c, ATTACKED, SEEDS, root_samples=100)


def test_the_exercise_needs_the_attack():
    with pytest.raises(ValueError, match="random_scaling"):
        check_exercise(0.5, ATTACKED.replace(threat=None, threat_args={}), SEEDS, root_samples=100)
