"""Lesson 10's two checkers and toy: each exercise passes its reference answer (given, and through None) and fails
wrong ones; exercise 2 also against the bad answers and settings of the generated matrix (tests/test_course_answers.py
runs it on exercise 1); FedNova is FedAvg under equal local steps and differs under unequal ones."""
import numpy as np
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed

from fedkit import Config, Federation
from fedkit.analysis import drift_paths
from fedkit.course import WrongAnswer, shown
from fedkit.course import communication as lesson
from fedkit.course.client_drift import w_star
from fedkit.course.communication import (
    REFERENCE_BATCH,
    check_exercise,
    check_exercise_2,
    surrogate_optimum,
    toy_config,
    upload_kb,
)

BASE = Config(dataset="mnist_5k", partition="dirichlet", partition_args={"phi": 0.5}, num_clients=10, model="mlp",
              model_args={"hidden": [64]}, local_steps=10, batch_size=32, lr=0.1, rounds=2)


def test_exercise_1_scaffold_uploads_two_model_sized_vectors(capsys):
    assert upload_kb(BASE) == 2 * 4 * Federation(BASE).fm.dim / 1000 == 407.12
    check_exercise(407.12, BASE)
    assert capsys.readouterr().out == "correct: one SCAFFOLD client uploads 407.12 kB a round\n"


@pytest.mark.parametrize("kb, message", [(203.56, "fedkit counts more. Per client"),
                                         (4071.2, "fedkit counts less"),
                                         (407120, r"in \(0, 1e5\], got 407120"), (0, "got 0")])
def test_exercise_1_wrong_answers(kb, message):
    with pytest.raises(WrongAnswer, match=message):
        check_exercise(kb, BASE)


def test_no_answer_states_each_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, BASE)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: how many kilobytes") and "hidden reference answer passes" in out
    assert "407" not in out
    check_exercise_2(None)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: on the unequal toy") and "hidden reference answer passes" in out
    assert "16" not in out.replace("2, 4, 8, 16", "")


@pytest.mark.parametrize("batch", [REFERENCE_BATCH, 64])
def test_exercise_2_one_step_for_everyone(batch, capsys):
    check_exercise_2(batch)
    assert capsys.readouterr().out.startswith(f"correct: with B = {batch} every client takes K_i = 1 step(s)")


@pytest.mark.parametrize("batch, message", [(1, r"K_i = \[2, 4, 8, 16\] local steps per round, and FedAvg ends 1.41"),
                                            (8, r"K_i = \[1, 1, 1, 2\].*Which B gives every client the same K_i"),
                                            (0, r"B must be a whole number in \[1, 64\], got 0"), (16.0, "got 16.0"),
                                            (10**6, "got 1000000")])
def test_exercise_2_wrong_answers(batch, message):
    with pytest.raises(WrongAnswer, match=message):
        check_exercise_2(batch)


def test_fednova_is_fedavg_under_equal_steps_and_not_under_unequal_ones():
    same = [drift_paths(toy_config(name, local_steps=8, rounds=30))[0] for name in ("fedavg", "fednova")]
    np.testing.assert_allclose(*same, atol=1e-5)
    fedavg, fednova = (drift_paths(toy_config(name, rounds=100))[0][-1] for name in ("fedavg", "fednova"))
    assert np.linalg.norm(fedavg - w_star()) > 5 * np.linalg.norm(fednova - w_star())
    w_tilde = surrogate_optimum([2, 4, 8, 16])  # FedAvg's surrogate: client i weighted by its K_i
    assert np.linalg.norm(fedavg - w_tilde) < 0.5 * np.linalg.norm(fedavg - w_star())


def test_one_epoch_gives_each_client_its_own_number_of_steps():
    fed = Federation(toy_config(batch_size=3))
    assert [p.steps for p in fed.plans(1, np.arange(4))] == [1, 2, 3, 6]


def test_exercise_2_follows_its_settings():
    with pytest.raises(WrongAnswer, match="ends .* from w\\*"):  # too few rounds to get there
        check_exercise_2(REFERENCE_BATCH, rounds=2)


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS], ids=[b[0] for b in BAD_ANSWERS])
def test_exercise_2_a_bad_answer_is_refused_in_one_line_naming_it_before_anything_is_computed(answer, names,
                                                                                              monkeypatch, capsys):
    monkeypatch.setattr(lesson, "distances", computed)
    with pytest.raises(WrongAnswer) as err:
        check_exercise_2(answer)
    message = str(err.value)
    assert "\n" not in message and any(name in message for name in (shown(answer), *names)), message
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
@pytest.mark.parametrize("setting", ["lr", "rounds"])
def test_exercise_2_a_bad_setting_raises_value_error_naming_it_before_anything_is_printed(setting, value, monkeypatch,
                                                                                         capsys):
    monkeypatch.setattr(lesson, "distances", computed)
    with pytest.raises(ValueError) as err:
        check_exercise_2(None, **{setting: value})
    assert "\n" not in str(err.value) and setting in str(err.value)
    assert capsys.readouterr().out == ""


def test_the_matrix_patch_is_what_exercise_2_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "distances", computed)
    with pytest.raises(Computed):
        check_exercise_2(REFERENCE_BATCH)
