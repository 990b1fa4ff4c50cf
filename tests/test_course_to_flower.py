"""Lesson 08's checker, on a SCAFFOLD run of the built-in engine (bytes are counted as on Flower; tests/test_flower.py
checks that the two backends give the same history)."""
import pytest

from fedkit import Config, run
from fedkit.course import WrongAnswer
from fedkit.course.to_flower import FLOAT32, check_exercise

CFG = Config(dataset="digits", model="mlp", model_args={"hidden": [32]}, partition="dirichlet",
             partition_args={"phi": 0.5}, num_clients=4, clients_per_round=4, local_steps=2, batch_size=32, lr=0.05,
             rounds=2, algorithm="scaffold", engine="sequential")


@pytest.fixture(scope="module")
def history():
    return run(CFG, cache=False, progress=False)


def test_the_reference_answer_passes(history, capsys):
    size = FLOAT32 * history.weights.numel()
    check_exercise((2 * size, 2 * size), history)
    assert capsys.readouterr().out.startswith(f"correct: {2 * size} bytes down and {2 * size} up per client and round")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(history, capsys):
    check_exercise(None, history)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: predict the bytes one SCAFFOLD client downloads and uploads per round")
    assert "set `answer` to a pair of whole numbers (bytes down, bytes up)" in out
    assert "hidden reference answer passes" in out
    assert str(2 * FLOAT32 * history.weights.numel()) not in out


def test_the_model_alone_fails_with_a_hint(history):
    size = FLOAT32 * history.weights.numel()
    with pytest.raises(WrongAnswer, match="down: .*SCAFFOLD sends more than the model"):
        check_exercise((size, size), history)


def test_counting_numbers_instead_of_bytes_fails_with_a_hint(history):
    params = history.weights.numel()
    with pytest.raises(WrongAnswer, match="bytes, not numbers"):
        check_exercise((2 * params, 2 * params), history)


@pytest.mark.parametrize("answer", [5, (1.0, 2.0), (1, 2, 3)])
def test_a_malformed_answer_is_refused(history, answer):
    with pytest.raises(WrongAnswer, match="two whole numbers of bytes"):
        check_exercise(answer, history)


def test_the_exercise_needs_scaffold():
    fedavg = run(CFG.replace(algorithm="fedavg", rounds=1), cache=False, progress=False)
    with pytest.raises(ValueError, match="SCAFFOLD's messages"):
        check_exercise(None, fedavg)
