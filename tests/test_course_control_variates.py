"""Lesson 03's checked exercise (SCAFFOLD's control-variate update) and its over-correction sweep."""
import numpy as np
import pytest

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
    (lambda c_i, c, x, y, steps, lr: c_i - c + (y - x) / (steps * lr), r"client \d+: you return"),  # sign
    (lambda c_i, c, x, y, steps, lr: c_i + c + (x - y) / (steps * lr), r"client \d+: you return"),
    (lambda c_i, c, x, y, steps, lr: (x - y) / (steps * lr), r"client \d+: you return"),  # forgets c_i − c
    (lambda c_i, c, x, y, steps, lr: c_i - c + (x - y) / lr, r"client \d+: you return"),  # forgets K
    (lambda c_i, c, x, y, steps, lr: 0 * x[:1], r"must have the model's shape"),
    (lambda c_i, c, x, y, steps, lr: None, r"returns None: did it forget to `return` c_i⁺\?"),
    (0.5, r"answer with a function \(new_control_variate\), got 0.5"),
])
def test_wrong_answers_fail(wrong, message):
    with pytest.raises(WrongAnswer, match=message):
        control_variates.check_exercise(wrong)


def test_alpha_sweep_shows_fedavg_biased_scaffold_exact_and_over_correction():
    sweep = control_variates.alpha_sweep([0, 1, 3], rounds=30)
    final = sweep[sweep["round"] == 30].set_index("alpha")["distance"]
    assert final[0] > 0.05 and final[1] < 1e-3 and not final[3] < 1.0  # α = 3 over-corrects (or overflows)
    assert sorted(sweep["round"].unique()) == list(range(31)) and np.isfinite(final[0])
