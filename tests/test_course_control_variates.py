"""Lesson 03's two checkers (SCAFFOLD's control-variate update; the edge of over-correction) and its sweep."""
import numpy as np
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed, refused, setting_refused

from fedkit.course import WrongAnswer, control_variates


def test_reference_answer_passes(capsys):
    def option_ii(c_i, c, x, y, steps, lr):
        return c_i - c + (x - y) / (steps * lr)

    control_variates.check_exercise(option_ii)
    assert capsys.readouterr().out == "correct: your c_i⁺ matches fedkit's SCAFFOLD for every sampled client over 3 " \
                                      "rounds\n"
    as_numpy = lambda c_i, c, x, y, steps, lr: (c_i - c + (x - y) / (steps * lr)).numpy()  # noqa: E731
    control_variates.check_exercise(as_numpy)
    assert capsys.readouterr().out.startswith("correct")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    control_variates.check_exercise(None)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: write eq. (2)") and "set `answer` to new_control_variate once it" in out
    assert "hidden reference answer passes" in out


@pytest.mark.parametrize("wrong, message", [
    (lambda c_i, c, x, y, steps, lr: c_i - c + (y - x) / (steps * lr), r"client \d+: you return .*; check the sign of "
                                                                        r"the term in x and y"),
    (lambda c_i, c, x, y, steps, lr: c_i + c + (x - y) / (steps * lr), r"client \d+: you return .*; check the terms"),
    (lambda c_i, c, x, y, steps, lr: y - x, r"client \d+: you return .*; compare each term of your function"),
    (lambda c_i, c, x, y, steps, lr: (x - y) / (steps * lr), r"client \d+: you return .*; check the terms in c_i"),
    (lambda c_i, c, x, y, steps, lr: c_i - c + (x - y) / lr, r"client \d+: you return .*; check the scale"),  # no K
    (lambda c_i, c, x, y, steps, lr: 0 * x[:1], r"must have the model's shape"),
    (lambda c_i, c, x, y, steps, lr: None, r"returns None: did it forget to `return` c_i⁺\?"),
    (0.5, r"answer with a function \(new_control_variate\), got 0.5"),
])
def test_wrong_answers_fail_without_the_equation(wrong, message):
    with pytest.raises(WrongAnswer, match=message) as err:
        control_variates.check_exercise(wrong)
    assert "K η_l" not in str(err.value) and "(x − y_i)" not in str(err.value)  # eq. (2) is not given away


@pytest.mark.parametrize("alpha", [2.15, control_variates.REFERENCE_ALPHA])
def test_exercise_2_the_edge_of_over_correction_passes(alpha, capsys):
    control_variates.check_exercise_2(alpha)
    assert capsys.readouterr().out.startswith("correct: SCAFFOLD ends ")


def test_exercise_2_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    control_variates.check_exercise_2(None, rounds=40)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find, to within 0.1, the largest correction strength α at which SCAFFOLD still")
    assert "hidden reference answer passes" in out and "2.2" not in out


@pytest.mark.parametrize("alpha, message", [(2.0, r"with α = 2 and with α = 2.1 SCAFFOLD still converges .* The edge "
                                                   r"lies higher"),
                                            (1.5, r"still converges .* The edge lies higher"),
                                            (2.5, r"with α = 2.5 SCAFFOLD ends \d+ from w\* after 40 rounds: it "
                                                  r"over-corrects already. The edge lies lower")])
def test_exercise_2_wrong_answers_say_which_way_without_the_edge(alpha, message):
    with pytest.raises(WrongAnswer, match=message) as err:
        control_variates.check_exercise_2(alpha)
    assert "2.2" not in str(err.value)


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS] + [(1, ()), (0.5, ())],
                         ids=[b[0] for b in BAD_ANSWERS] + ["the-papers", "weaker"])
def test_exercise_2_a_bad_answer_is_refused_before_anything_is_computed(answer, names, monkeypatch, capsys):
    monkeypatch.setattr(control_variates, "alpha_sweep", computed)
    refused(control_variates.check_exercise_2, answer, names, capsys)


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
def test_exercise_2_a_bad_setting_is_refused(value, monkeypatch, capsys):
    monkeypatch.setattr(control_variates, "alpha_sweep", computed)
    setting_refused(control_variates.check_exercise_2, "rounds", capsys, rounds=value)


def test_exercise_2_the_patch_is_what_it_computes_with(monkeypatch):
    monkeypatch.setattr(control_variates, "alpha_sweep", computed)
    with pytest.raises(Computed):
        control_variates.check_exercise_2(2.2)


def test_alpha_sweep_shows_fedavg_biased_scaffold_exact_and_over_correction():
    sweep = control_variates.alpha_sweep([0, 1, 3], rounds=30)
    final = sweep[sweep["round"] == 30].set_index("alpha")["distance"]
    assert final[0] > 0.05 and final[1] < 1e-3 and not final[3] < 1.0  # α = 3 over-corrects (or overflows)
    assert sorted(sweep["round"].unique()) == list(range(31)) and np.isfinite(final[0])
