"""Lesson 02's two checkers: with a small step FedAvg reaches w* with a window of local steps K; with K → ∞ it ends at
the mean of the client optima."""
import numpy as np
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed, refused, setting_refused

from fedkit.course import WrongAnswer, client_drift


@pytest.mark.parametrize("k", [5, client_drift.REFERENCE_K, 8])
def test_reference_answer_and_the_window_around_it_pass(k, capsys):
    client_drift.check_exercise(k)
    assert capsys.readouterr().out.startswith(f"correct: with K = {k} FedAvg ends")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    client_drift.check_exercise(None, lr=0.01, rounds=100)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: with η_l = 0.01, find a number of local steps K at which FedAvg ends within 0.05 "
                          "of w* after 100 rounds.") and "set `answer` to your K" in out
    assert "hidden reference answer passes" in out and "K = 6" not in out


def test_a_reference_that_fails_is_reported_as_the_lessons_fault(monkeypatch):
    monkeypatch.setattr(client_drift, "REFERENCE_K", 10)
    with pytest.raises(RuntimeError, match="reference answer fails its own check .*with K = 10 FedAvg ends"):
        client_drift.check_exercise(None)


@pytest.mark.parametrize("steps, message", [
    (1, r"ends 1\.\d+ from w\* after 100 rounds, not within 0.05; it is still closing in on w\*: take more local"),
    (4, r"ends 0\.0\d+ from w\*.*still closing in on w\*: take more local steps"),
    (10, r"ends 0\.\d+ from w\* after 100 rounds, not within 0.05; it has settled.*Take fewer local steps"),
    (0, r"K must be a whole number of local steps in \[1, 20\], got 0"),
    (2.0, r"K must be a whole number"),
    (10**6, r"in \[1, 20\], got 1000000"),  # refused before running (it ran for minutes)
])
def test_wrong_answers_fail_with_a_hint(steps, message):
    with pytest.raises(WrongAnswer, match=message):
        client_drift.check_exercise(steps)


def test_at_the_lessons_step_only_k_1_passes():
    client_drift.check_exercise(1, lr=0.1)
    with pytest.raises(WrongAnswer, match="with K = 2 .*settled"):
        client_drift.check_exercise(2, lr=0.1)


@pytest.mark.parametrize("point", [(-0.375, 0.0), np.array([-0.36, 0.02])])
def test_exercise_2_the_mean_of_the_client_optima_passes(point, capsys):
    client_drift.check_exercise_2(point)
    assert capsys.readouterr().out == "correct: with K = 500 FedAvg ends at (-0.375, 0.000), the plain mean of the " \
                                      "clients' optima\n"


def test_exercise_2_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    client_drift.check_exercise_2(None)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: where does FedAvg (η_l = 0.1) end when every client runs to its own optimum")
    assert "hidden reference answer passes" in out and "0.375" not in out


@pytest.mark.parametrize("point, message", [
    ((1.0, 1.0), r"ends 1.70 from your point; it lies left of it and below"),
    (tuple(client_drift.w_star()), r"your point is w\*, where K = 1 goes"),
])
def test_exercise_2_wrong_points_fail_without_the_answer(point, message):
    with pytest.raises(WrongAnswer, match=message) as err:
        client_drift.check_exercise_2(point)
    assert "0.375" not in str(err.value)


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS] + [((1, 2, 3), ()), ((11, 0), ())],
                         ids=[b[0] for b in BAD_ANSWERS] + ["triple", "far"])
def test_exercise_2_a_bad_answer_is_refused_before_anything_is_computed(answer, names, monkeypatch, capsys):
    monkeypatch.setattr(client_drift, "drift_paths", computed)
    refused(client_drift.check_exercise_2, answer, names, capsys)


@pytest.mark.parametrize("value", BAD_SETTINGS + [0.01, 1.0], ids=repr)
def test_exercise_2_a_bad_setting_is_refused(value, monkeypatch, capsys):
    monkeypatch.setattr(client_drift, "drift_paths", computed)
    setting_refused(client_drift.check_exercise_2, "lr", capsys, lr=value)


def test_exercise_2_the_patch_is_what_it_computes_with(monkeypatch):
    monkeypatch.setattr(client_drift, "drift_paths", computed)
    with pytest.raises(Computed):
        client_drift.check_exercise_2((0.0, 0.0))


def test_scaffold_reaches_the_optimum_that_fedavg_misses():
    """The lesson's claim on the toy the notebook draws (K = 10, η_l = 0.1)."""
    fedavg = client_drift.distances(client_drift.toy_config("fedavg"))
    scaffold = client_drift.distances(client_drift.toy_config("scaffold"))
    assert fedavg[-1] > 0.05 and scaffold[-1] < 1e-3
