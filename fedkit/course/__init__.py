"""Checked exercises of the teaching course (notebooks/teaching/): one module per lesson, named after its notebook
without the number (``01_partitions.ipynb`` → ``fedkit.course.partitions``).

Conventions every lesson module follows:

* ``check_exercise(answer, <the notebook's settings>)`` is the notebook's one exercise, with the same behaviour in
  every lesson (it hands its answer, a reference answer and a judge to :func:`check`):

  - ``answer`` None, as the notebook is committed and as a student first runs it: it prints the task, a hint and how
    to answer, then checks the lesson's reference answer with the notebook's own settings without showing it or
    what it measured. The cell runs green unattended (nbval, papermill, ``fedkit figures``) and those runs check the
    reference; a reference that fails raises RuntimeError (the lesson is broken, not the student's answer).
  - a right answer prints ``correct: <what was measured>``.
  - a wrong one raises :class:`WrongAnswer` (an AssertionError) whose message says what was measured, what was asked
    and which way to go; a notebook shows that message without the checker's stack.

  The judge measures the answer with the kit itself (it never compares with a stored number). Settings that do not
  fit the exercise (a notebook bug, not a wrong answer) raise ValueError, before anything else.
* The notebook's exercise cell is ``answer = None  # your ...`` followed by the ``check_exercise`` call, and the
  Markdown above it states the task and says that running the cell as it is shows the task again.
* Small helpers the notebook needs (a toy problem, a measure) live beside the checker, so that each notebook stays
  short and calls the kit rather than re-implementing it.
* tests/test_course_<lesson>.py shows that each checker passes the reference answer (given, and through None) and
  fails wrong ones with their message.

This package imports no lesson module: ``from fedkit.course import partitions`` loads the one a notebook needs.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any


class WrongAnswer(AssertionError):
    """An answer that fails its exercise's check; the message says what was measured, what was asked and which way
    to go."""

    def _render_traceback_(self) -> list[str]:  # IPython (Jupyter) shows this instead of the checker's stack
        return [f"WrongAnswer: {self}"]


def require(ok: bool, message: str) -> None:
    """Raise WrongAnswer(``message``) unless ``ok``."""
    if not ok:
        raise WrongAnswer(message)


def is_number(value) -> bool:
    """A real number (Python's or NumPy's), not a bool nor a string."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check(answer, reference, judge: Callable[[Any], str], task: str, hint: str, form: str) -> None:
    """The exercise cell of every lesson. ``judge(answer)`` returns one line saying what it measured, or raises
    WrongAnswer. With ``answer`` None: print the ``task``, the ``hint`` and the ``form`` an answer takes, then judge
    ``reference`` silently (RuntimeError if it fails); otherwise judge ``answer`` and print ``correct: <line>``."""
    if answer is None:
        print(f"Exercise: {task}\nHint: {hint}\nTo answer, set `answer` to {form} and run this cell again.",
              flush=True)  # shown before the reference is judged, which may take a while
        try:
            judge(reference)
        except WrongAnswer as err:
            raise RuntimeError(f"this lesson's reference answer fails its own check ({err}): the lesson needs "
                               "fixing") from err
        print("(A hidden reference answer passes this check: the exercise can be solved with these settings.)")
        return
    print(f"correct: {judge(answer)}")
