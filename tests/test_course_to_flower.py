"""Lesson 08's two checkers, on SCAFFOLD and FedAvg-M runs of the built-in engine (bytes are counted as on Flower;
tests/test_flower.py checks that the two backends give the same history)."""
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed, refused, setting_refused

from fedkit import Config, run
from fedkit.course import WrongAnswer
from fedkit.course import to_flower as lesson
from fedkit.course.to_flower import FLOAT32, check_exercise, check_exercise_2

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
    with pytest.raises(WrongAnswer, match="down: you predicted .* bytes, the run carried more; SCAFFOLD sends more "
                                          "than the model") as err:
        check_exercise((size, size), history)
    assert str(2 * size) not in str(err.value)


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


SIZE = FLOAT32 * 2410  # the MLP 64 → 32 → 10: 2,410 float32 parameters


def test_exercise_2_fedavg_m_sends_the_model_and_u_and_gets_the_update_back(capsys):
    check_exercise_2((2 * SIZE, SIZE), CFG)
    assert capsys.readouterr().out == f"correct: {2 * SIZE} bytes down and {SIZE} up per client and round (2410 " \
                                      "parameters)\n"


def test_exercise_2_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise_2(None, CFG)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: predict the bytes one FedAvg-M client (lesson 4) downloads and uploads per round")
    assert "hidden reference answer passes" in out and str(SIZE) not in out


@pytest.mark.parametrize("answer, message", [
    ((2 * SIZE, 2 * SIZE), "up: you predicted .* bytes, the run carried fewer; what can the server compute itself"),
    ((SIZE + 4, SIZE), "down: you predicted .* bytes, the run carried more; what does a FedAvg-M client mix into"),
    ((3 * SIZE, SIZE), "down: you predicted .* bytes, the run carried fewer"),
    ((2 * 2410, 2410), "down: .*bytes, not numbers"),
])
def test_exercise_2_wrong_counts_say_which_way(answer, message):
    with pytest.raises(WrongAnswer, match=message) as err:
        check_exercise_2(answer, CFG)
    assert all(real in answer or str(real) not in str(err.value) for real in (2 * SIZE, SIZE))  # only guesses shown


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS], ids=[b[0] for b in BAD_ANSWERS])
def test_exercise_2_a_bad_answer_is_refused_before_anything_is_computed(answer, names, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "run", computed)
    refused(check_exercise_2, answer, names, capsys, cfg=CFG)


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
def test_exercise_2_a_bad_setting_is_refused(value, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "run", computed)
    setting_refused(check_exercise_2, "cfg", capsys, cfg=value)


def test_exercise_2_the_patch_is_what_it_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "run", computed)
    with pytest.raises(Computed):
        check_exercise_2((1, 1), CFG)
