"""The exercise cell's one convention (fedkit.course.check), shared by every lesson: None states the task and checks
a hidden reference, an answer is judged, a wrong one raises WrongAnswer with its message."""
import numpy as np
import pytest

from fedkit.course import WrongAnswer, check, is_number, require


def judge(x) -> str:
    require(is_number(x), f"answer with a number, got {x!r}")
    require(x > 2, f"{x} is too small: try a larger number")
    return f"{x} is more than 2"


def test_no_answer_states_the_task_and_checks_the_reference_without_showing_it(capsys):
    seen = []
    check(None, 7, lambda x: seen.append(x) or judge(x), "find a number > 2.", "look up.", "your number")
    assert seen == [7]
    assert capsys.readouterr().out.splitlines() == [
        "Exercise: find a number > 2.", "Hint: look up.",
        "To answer, set `answer` to your number and run this cell again.",
        "(A hidden reference answer passes this check: the exercise can be solved with these settings.)"]


def test_a_right_answer_says_what_was_measured(capsys):
    check(3, 7, judge, "task", "hint", "form")
    assert capsys.readouterr().out == "correct: 3 is more than 2\n"


@pytest.mark.parametrize("answer, message", [(1, "1 is too small: try a larger number"),
                                             ("3", "answer with a number, got '3'")])
def test_a_wrong_answer_raises_its_message(answer, message, capsys):
    with pytest.raises(WrongAnswer, match=message) as err:
        check(answer, 7, judge, "task", "hint", "form")
    assert isinstance(err.value, AssertionError) and capsys.readouterr().out == ""
    assert err.value._render_traceback_() == [f"WrongAnswer: {message}"]  # what a notebook shows: no stack


def test_a_failing_reference_is_the_lessons_fault_not_the_students():
    with pytest.raises(RuntimeError, match="reference answer fails its own check .*1 is too small.*needs fixing"):
        check(None, 1, judge, "task", "hint", "form")


def test_is_number_takes_python_and_numpy_reals_only():
    assert all(is_number(x) for x in (1, 0.5, np.float32(0.5), np.int64(3)))
    assert not any(is_number(x) for x in (True, "0.5", None, [1], 1j))
