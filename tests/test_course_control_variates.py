"""Lesson 03's checked exercise (SCAFFOLD's control-variate update) and its over-correction sweep."""
import numpy as np
import pytest

from fedkit.course import control_variates


def test_reference_answer_passes():
    def option_ii(c_i, c, x, y, steps, lr):
        return c_i - c + (x - y) / (steps * lr)

    assert control_variates.check_exercise(option_ii).startswith("correct")
    as_numpy = lambda c_i, c, x, y, steps, lr: (c_i - c + (x - y) / (steps * lr)).numpy()  # noqa: E731
    assert control_variates.check_exercise(as_numpy).startswith("correct")


@pytest.mark.parametrize("wrong, message", [
    (lambda c_i, c, x, y, steps, lr: c_i - c + (y - x) / (steps * lr), r"client \d+: you return"),  # sign
    (lambda c_i, c, x, y, steps, lr: c_i + c + (x - y) / (steps * lr), r"client \d+: you return"),
    (lambda c_i, c, x, y, steps, lr: (x - y) / (steps * lr), r"client \d+: you return"),  # forgets c_i − c
    (lambda c_i, c, x, y, steps, lr: c_i - c + (x - y) / lr, r"client \d+: you return"),  # forgets K
    (lambda c_i, c, x, y, steps, lr: 0 * x[:1], r"must have the model's shape"),
])
def test_wrong_answers_fail(wrong, message):
    with pytest.raises(AssertionError, match=message):
        control_variates.check_exercise(wrong)


def test_alpha_sweep_shows_fedavg_biased_scaffold_exact_and_over_correction():
    sweep = control_variates.alpha_sweep([0, 1, 3], rounds=30)
    final = sweep[sweep["round"] == 30].set_index("alpha")["distance"]
    assert final[0] > 0.05 and final[1] < 1e-3 and not final[3] < 1.0  # α = 3 over-corrects (or overflows)
    assert sorted(sweep["round"].unique()) == list(range(31)) and np.isfinite(final[0])
