"""Lesson 02's checked exercise: FedAvg reaches w* only with few enough local steps."""
import pytest

from fedkit.course import WrongAnswer, client_drift


def test_reference_answer_passes(capsys):
    client_drift.check_exercise(client_drift.REFERENCE_K)
    assert capsys.readouterr().out.startswith("correct: with K = 1 FedAvg ends")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    client_drift.check_exercise(None)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a number of local steps K at which FedAvg (η_l = 0.1, 100 rounds) ends "
                          "within 0.05 of w*.") and "set `answer` to your K" in out
    assert "hidden reference answer passes" in out and "K = 1" not in out


def test_a_reference_that_fails_is_reported_as_the_lessons_fault(monkeypatch):
    monkeypatch.setattr(client_drift, "REFERENCE_K", 10)
    with pytest.raises(RuntimeError, match="reference answer fails its own check .*with K = 10 FedAvg ends"):
        client_drift.check_exercise(None)


@pytest.mark.parametrize("steps, message", [
    (10, r"ends 0\.\d+ from w\* after 100 rounds, not within 0.05.*fewer local steps"),
    (0, r"K must be a whole number of local steps in \[1, 20\], got 0"),
    (2.0, r"K must be a whole number"),
    (10**6, r"in \[1, 20\], got 1000000"),  # refused before running (it ran for minutes)
])
def test_wrong_answers_fail_with_a_hint(steps, message):
    with pytest.raises(WrongAnswer, match=message):
        client_drift.check_exercise(steps)


def test_scaffold_reaches_the_optimum_that_fedavg_misses():
    """The lesson's claim on the toy the notebook draws (K = 10, η_l = 0.1)."""
    fedavg = client_drift.distances(client_drift.toy_config("fedavg"))
    scaffold = client_drift.distances(client_drift.toy_config("scaffold"))
    assert fedavg[-1] > 0.05 and scaffold[-1] < 1e-3
