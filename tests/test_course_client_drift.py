"""Lesson 02's checked exercise: FedAvg reaches w* only with few enough local steps."""
import pytest

from fedkit.course import client_drift


def test_reference_answer_passes():
    assert client_drift.check_exercise(1).startswith("correct: with K = 1")


@pytest.mark.parametrize("steps, message", [
    (10, r"ends 0\.\d+ from w\* after 100 rounds, not within 0.05.*fewer local steps"),
    (0, r"K must be a whole number of local steps ≥ 1"),
    (2.0, r"K must be a whole number"),
])
def test_wrong_answers_fail_with_a_hint(steps, message):
    with pytest.raises(AssertionError, match=message):
        client_drift.check_exercise(steps)


def test_scaffold_reaches_the_optimum_that_fedavg_misses():
    """The lesson's claim on the toy the notebook draws (K = 10, η_l = 0.1)."""
    fedavg = client_drift.distances(client_drift.toy_config("fedavg"))
    scaffold = client_drift.distances(client_drift.toy_config("scaffold"))
    assert fedavg[-1] > 0.05 and scaffold[-1] < 1e-3
