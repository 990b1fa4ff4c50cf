"""Lesson 11's two checkers: each passes its reference answer (given, and through None) and fails wrong ones with a
message that points the way; exercise 2 also against every bad answer and bad setting of the generated matrix
(tests/test_course_answers.py runs that matrix on exercise 1)."""
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed

from fedkit import Config
from fedkit.course import WrongAnswer, shown
from fedkit.course import privacy as lesson
from fedkit.course.privacy import REFERENCE, check_exercise, check_exercise_2

# the lesson's run with z = 2 at its ci scale (12 rounds), where the target accuracy is 0.5
PRIVATE = Config(dataset="digits", model="mlp", model_args={"hidden": []}, partition="iid", partition_args={},
                 num_clients=200, clients_per_round=40, local_steps=5, batch_size=8, lr=0.1, rounds=12,
                 algorithm="dp", algorithm_args={"clip": 1.0, "noise_multiplier": 2.0})
SEEDS, TARGET = [0], 0.5


# ---- exercise 1: σ = z·C/m


def test_exercise_1_the_reference_answer_passes(capsys):
    check_exercise(0.05, PRIVATE)
    assert capsys.readouterr().out.startswith("correct: σ = 0.05")


def test_exercise_1_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, PRIVATE)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: give the standard deviation σ of the Gaussian noise")
    assert "with z = 2 above" in out and "set `answer` to your σ" in out and "hidden reference answer passes" in out
    assert "0.05" not in out


@pytest.mark.parametrize("sigma, why", [(2.0, "too large: that is the noise on the sum"),
                                        (0.01, "too small: the average is over the clients sampled in a round, not "
                                                "all 200"),
                                        (0.025, "too small: the noise multiplier z scales the noise"),
                                        (0.3, "too large: write σ from the equation")])
def test_exercise_1_a_wrong_sigma_says_which_way_and_why(sigma, why):
    with pytest.raises(WrongAnswer, match=why):
        check_exercise(sigma, PRIVATE)


def test_exercise_1_follows_the_settings_of_the_run():
    check_exercise(4.0 * 0.5 / 40, PRIVATE.replace(algorithm_args={"clip": 0.5, "noise_multiplier": 4.0}))
    with pytest.raises(WrongAnswer, match="too large"):
        check_exercise(0.05, PRIVATE.replace(clients_per_round=50))


@pytest.mark.parametrize("private, named", [(PRIVATE.replace(algorithm="fedavg", algorithm_args={}), "algorithm='dp'"),
                                            (PRIVATE.replace(algorithm_args={"noise_multiplier": 0.0}), "z=0.0"),
                                            (PRIVATE.replace(algorithm_args={"clip": None, "noise_multiplier": 0.0}),
                                             "clip=inf")])
def test_both_exercises_need_a_private_run(private, named):
    for checker, args in ((check_exercise, ()), (check_exercise_2, (SEEDS,))):
        with pytest.raises(ValueError, match=named):
            checker(None, private, *args)


# ---- exercise 2: a (z, C) within the budget that reaches the target


def test_exercise_2_the_reference_answer_passes(capsys):
    check_exercise_2(REFERENCE, PRIVATE, SEEDS, target=TARGET)
    out = capsys.readouterr().out
    assert out.startswith("correct: with z = 3.1 and C = 0.5: ε = 1.08 ≤ 2 and late accuracy")
    found = lesson.measure(*REFERENCE, PRIVATE, SEEDS, 1e-5)
    assert found["epsilon"] <= 2 and found["accuracy"] >= TARGET


def test_exercise_2_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise_2(None, PRIVATE, SEEDS, target=TARGET)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a noise multiplier z and a clip norm C whose run spends ε ≤ 2 at δ = 1e-05 "
                          "over its 12 rounds and ends with a test accuracy of at least 0.50")
    assert "set `answer` to your pair (z, C)" in out and "hidden reference answer passes" in out
    assert "3.1" not in out


def test_exercise_2_too_little_noise_is_over_budget_before_anything_trains(monkeypatch):
    monkeypatch.setattr(lesson, "measure", computed)
    with pytest.raises(WrongAnswer, match=r"spend ε = 6\.157 .*over the budget of 2.*a larger z spends less"):
        check_exercise_2((1.0, 0.5), PRIVATE, SEEDS, target=TARGET)


@pytest.mark.parametrize("answer, hint", [((3.1, 1.0), "most updates are shorter than C .*try a smaller C"),
                                          ((3.1, 0.05), "C is far below the updates' median norm .*try a larger C"),
                                          ((30.0, 0.4), "leaves budget unspent: a smaller z adds less noise")])
def test_exercise_2_a_run_below_the_target_points_the_way(answer, hint):
    with pytest.raises(WrongAnswer, match=f"is within budget but the late accuracy is 0\\.[0-9]+ < 0.50; .*{hint}"):
        check_exercise_2(answer, PRIVATE, SEEDS, target=TARGET)


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS], ids=[b[0] for b in BAD_ANSWERS])
def test_exercise_2_a_bad_answer_is_refused_in_one_line_naming_it_before_anything_is_computed(answer, names,
                                                                                              monkeypatch, capsys):
    monkeypatch.setattr(lesson, "measure", computed)
    monkeypatch.setattr(lesson, "config_epsilon", computed)
    with pytest.raises(WrongAnswer) as err:
        check_exercise_2(answer, PRIVATE, SEEDS)
    message = str(err.value)
    assert "\n" not in message and any(name in message for name in (shown(answer), *names)), message
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
@pytest.mark.parametrize("setting", ["private", "seeds", "budget", "delta", "target"])
def test_exercise_2_a_bad_setting_raises_value_error_naming_it_before_anything_is_printed(setting, value, monkeypatch,
                                                                                         capsys):
    monkeypatch.setattr(lesson, "measure", computed)
    settings = {"private": PRIVATE, "seeds": SEEDS, "budget": 2.0, "delta": 1e-5, "target": TARGET}
    with pytest.raises(ValueError) as err:
        check_exercise_2(None, **{**settings, setting: value})
    message = str(err.value)
    assert "\n" not in message and setting in message, message
    assert capsys.readouterr().out == ""


def test_the_matrix_patch_is_what_exercise_2_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "measure", computed)
    with pytest.raises(Computed):
        check_exercise_2(REFERENCE, PRIVATE, SEEDS)
