"""Lesson 07's two checkers: the reference κ passes; a κ that expels honest clients, and one that expels nobody, fail;
N equal uploads each get α = 1 − 1/N."""
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed, refused, setting_refused

from fedkit import Config
from fedkit.course import WrongAnswer
from fedkit.course import freeloaders as lesson
from fedkit.course.freeloaders import REFERENCE_KAPPA, check_exercise, check_exercise_2, rates

BASE = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="label_groups",
              partition_args={}, num_clients=20, local_steps=20, batch_size=32, lr=0.05, rounds=10,
              algorithm="taco", threat="freeloaders", threat_args={"fraction": 0.4})
SEEDS = [0]


def test_the_reference_answer_passes(capsys):
    check_exercise(REFERENCE_KAPPA, BASE, SEEDS)
    assert capsys.readouterr().out == "correct: with κ = 0.8, every freeloader and no honest client is expelled on " \
                                      "seeds [0]\n"
    found = rates(REFERENCE_KAPPA, BASE, SEEDS)
    assert (found["TPR"] == 1).all() and (found["FPR"] == 0).all()


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, BASE, SEEDS)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a κ in [0, 1] at which TACO expels every freeloader and no honest client")
    assert "set `answer` to your κ" in out and "hidden reference answer passes" in out and "0.8" not in out


def test_a_low_kappa_expels_honest_clients():
    with pytest.raises(WrongAnswer, match="honest clients are expelled.*try a higher κ"):
        check_exercise(0.4, BASE, SEEDS)


def test_kappa_one_expels_nobody():
    with pytest.raises(WrongAnswer, match="some freeloaders stay.*try a lower κ"):
        check_exercise(1.0, BASE, SEEDS)


@pytest.mark.parametrize("kappa", [-0.1, 1.5, "0.8"])
def test_an_answer_outside_the_range_is_refused(kappa):
    with pytest.raises(WrongAnswer, match=r"κ must be a number in \[0, 1\]"):
        check_exercise(kappa, BASE, SEEDS)


def test_the_exercise_needs_taco_and_freeloaders():
    with pytest.raises(ValueError, match="TACO against freeloaders"):
        check_exercise(0.8, BASE.replace(threat=None, threat_args={}), SEEDS)


def test_the_exercise_needs_the_detector_on():
    with pytest.raises(ValueError, match="detect=False"):
        check_exercise(0.8, BASE.replace(algorithm_args={"detect": False}), SEEDS)


@pytest.mark.parametrize("clients, alpha", [(20, 0.95), (20, 0.951), (4, 0.75)])
def test_exercise_2_equal_uploads_score_one_minus_one_over_n(clients, alpha, capsys):
    check_exercise_2(alpha, BASE.replace(num_clients=clients))
    assert capsys.readouterr().out == f"correct: each of {clients} equal uploads gets α = {1 - 1 / clients:.3f}: a κ " \
                                      "at or below it expels them all\n"


def test_exercise_2_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise_2(None, BASE)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: in a federation whose N = 20 clients upload one and the same vector")
    assert "hidden reference answer passes" in out and "0.95" not in out


@pytest.mark.parametrize("alpha, way", [(1.0, "below"), (0.05, "above"), (0.5, "above")])
def test_exercise_2_wrong_answers_say_which_way(alpha, way):
    with pytest.raises(WrongAnswer, match=f"TACO gives each of 20 equal uploads an α {way} {alpha:g}. Both factors") \
            as err:
        check_exercise_2(alpha, BASE)
    assert "0.95" not in str(err.value)


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS], ids=[b[0] for b in BAD_ANSWERS])
def test_exercise_2_a_bad_answer_is_refused_before_anything_is_computed(answer, names, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "alike_alpha", computed)
    refused(check_exercise_2, answer, names, capsys, base=BASE)


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
def test_exercise_2_a_bad_setting_is_refused(value, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "alike_alpha", computed)
    setting_refused(check_exercise_2, "base", capsys, base=value)


def test_exercise_2_the_patch_is_what_it_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "alike_alpha", computed)
    with pytest.raises(Computed):
        check_exercise_2(0.5, BASE)
