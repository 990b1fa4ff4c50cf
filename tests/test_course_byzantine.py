"""Lesson 06's checker: the reference c passes, c = 0 (no drag: rescaling alone) fails."""
import pytest

from fedkit import Config
from fedkit.course import WrongAnswer
from fedkit.course.byzantine import REFERENCE_C, check_exercise

ATTACKED = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="qskew",
                  partition_args={"q": 1.0}, num_clients=10, clients_per_round=10, local_steps=5, batch_size=32,
                  lr=0.1, rounds=20, threat="random_scaling", threat_args={"count": 4, "variance": 3.0})
SEEDS = [0]


def test_the_reference_answer_passes(capsys):
    check_exercise(REFERENCE_C, ATTACKED, SEEDS, root_samples=100)
    assert capsys.readouterr().out.startswith("correct: with c = 0.5, DRAG")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, ATTACKED, SEEDS, root_samples=100)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a c in [0, 1] at which DRAG, under the same attack, ends at least 10 points")
    assert "set `answer` to your c" in out and "hidden reference answer passes" in out and "0.5" not in out


def test_no_drag_fails_with_a_hint():
    with pytest.raises(WrongAnswer, match=r"not 0.10 ahead; a reversed upload becomes \(4c − 1\) r"):
        check_exercise(0.0, ATTACKED, SEEDS, root_samples=100)


@pytest.mark.parametrize("c", [-0.1, 1.5, "0.5", [0.5]])
def test_an_answer_outside_the_range_is_refused(c):
    with pytest.raises(WrongAnswer, match=r"c must be a number in \[0, 1\]"):
        check_exercise(c, ATTACKED, SEEDS, root_samples=100)


def test_the_exercise_needs_the_attack():
    with pytest.raises(ValueError, match="random_scaling"):
        check_exercise(0.5, ATTACKED.replace(threat=None, threat_args={}), SEEDS, root_samples=100)
