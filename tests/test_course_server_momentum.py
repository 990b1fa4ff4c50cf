"""Lesson 04's two checkers: the reference β passes, a too-heavy momentum and FedAvg itself (β = 1) fail; on lesson
02's toy, a moderate β removes most of the drift, and too large or too small a β does not."""
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed, refused, setting_refused

from fedkit import Config
from fedkit.course import WrongAnswer
from fedkit.course import server_momentum as lesson
from fedkit.course.server_momentum import REFERENCE_BETA, REFERENCE_TOY_BETA, check_exercise, check_exercise_2

BASE = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="dirichlet",
              partition_args={"phi": 0.1}, num_clients=20, clients_per_round=5, local_steps=10, batch_size=32,
              lr=0.05, rounds=20, algorithm_args={"weighting": "uniform"})  # the notebook's setting
SEEDS = [0]  # β = 0.3 is ahead and β = 0.05 behind on each of seeds 0–4


def test_the_reference_answer_passes(capsys):
    check_exercise(REFERENCE_BETA, BASE, SEEDS)
    assert capsys.readouterr().out.startswith("correct: with β = 0.3, FedAvg-M")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, BASE, SEEDS)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a β in (0, 1] at which FedAvg-M is ahead of FedAvg after 20 rounds")
    assert "set `answer` to your β" in out and "hidden reference answer passes" in out and "0.3" not in out


@pytest.mark.parametrize("beta", [0.05, 1.0])
def test_a_wrong_answer_fails_with_a_hint(beta):
    with pytest.raises(WrongAnswer, match="not ahead; .*try a"):
        check_exercise(beta, BASE, SEEDS)


@pytest.mark.parametrize("beta", [0.0, 1.5, "0.3", True])
def test_an_answer_outside_the_range_is_refused(beta):
    with pytest.raises(WrongAnswer, match=r"β must be a number in \(0, 1\]"):
        check_exercise(beta, BASE, SEEDS)


@pytest.mark.parametrize("beta", [0.05, REFERENCE_TOY_BETA, 0.3])
def test_exercise_2_a_moderate_beta_removes_most_of_the_drift(beta, capsys):
    check_exercise_2(beta)
    assert capsys.readouterr().out.startswith(f"correct: with β = {beta:g} FedAvg-M stays within 0.")


def test_exercise_2_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise_2(None)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: on lesson 2's quadratic federation (K = 10, η_l = 0.1, 100 rounds, every client)")
    assert "hidden reference answer passes" in out and "β = 0.1" not in out


@pytest.mark.parametrize("beta, way", [(1.0, "walks towards the client's own optimum: try a smaller β"),
                                       (0.5, "try a smaller β"), (0.02, "u is a round stale.*try a larger β")])
def test_exercise_2_wrong_answers_say_which_way(beta, way):
    with pytest.raises(WrongAnswer, match=f"with β = {beta:g} FedAvg-M is up to .* not within 0.2; .*{way}") as err:
        check_exercise_2(beta)
    assert "β = 0.1" not in str(err.value)  # the reference is not given away


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS] + [(0, ())], ids=[b[0] for b in BAD_ANSWERS]
                         + ["zero"])
def test_exercise_2_a_bad_answer_is_refused_before_anything_is_computed(answer, names, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "distances", computed)
    refused(check_exercise_2, answer, names, capsys)


@pytest.mark.parametrize("setting", ["lr", "rounds"])
@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
def test_exercise_2_a_bad_setting_is_refused(setting, value, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "distances", computed)
    setting_refused(check_exercise_2, setting, capsys, **{setting: value})


def test_exercise_2_the_patch_is_what_it_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "distances", computed)
    with pytest.raises(Computed):
        check_exercise_2(0.1)
