"""Checked exercises of the teaching course (notebooks/teaching/): one module per lesson, named after its notebook
without the number (``01_partitions.ipynb`` → ``fedkit.course.partitions``).

Conventions every lesson module follows:

* ``check_exercise(answer, <the notebook's settings>)`` is the notebook's first exercise, and ``check_exercise_2``
  its second, with the same behaviour in every lesson (each hands its answer, a reference answer and a judge to
  :func:`check`):

  - ``answer`` None, as the notebook is committed and as a student first runs it: it prints the task, a hint and how
    to answer, then checks the lesson's reference answer with the notebook's own settings without showing it or
    what it measured. The cell runs green unattended (nbval, papermill, ``fedkit figures``) and those runs check the
    reference; a reference that fails raises RuntimeError (the lesson is broken, not the student's answer).
  - a right answer prints ``correct: <what was measured>``.
  - a wrong one raises :class:`WrongAnswer` (an AssertionError) whose message says what was measured, what was asked
    and which way to go; a notebook shows that message without the checker's stack.
  - an answer of the wrong type or arity, NaN, infinite or out of the exercise's range (a function answer: one that
    raises or returns something else than asked) raises WrongAnswer too, in one line naming it (:func:`shown`). Range
    and type are checked before anything is computed, so a checker's running time is bounded by its settings.

  The judge measures the answer with the kit itself (it never compares with a stored number). Settings that do not
  fit the exercise (a notebook bug, not a wrong answer) raise ValueError, in one line naming the setting, before
  anything else (nothing is printed).
* The notebook's exercise cell is ``answer = None  # your ...`` followed by the ``check_exercise`` call, and the
  Markdown above it states the task and says that running the cell as it is shows the task again.
* The module's docstring states each exercise ("Exercise N (kind): task") and its solution (a paragraph's last lines,
  "Solution: ..."): the book's solutions page is built from there (``fedkit.book.solutions``).
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

from ..config import Config


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


def is_whole(value) -> bool:
    """An integer (Python's or NumPy's), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def shown(value, width: int = 80) -> str:
    """``repr(value)`` on one line, cut to ``width`` characters: how a message names a bad value (an array's repr
    spans lines; a huge integer's has too many digits to print)."""
    if is_whole(value) and abs(int(value)).bit_length() > 256:
        return f"an integer of {abs(int(value)).bit_length()} bits"
    text = " ".join(repr(value).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def need_config(name: str, value) -> None:
    """ValueError unless the setting ``name`` is a fedkit Config."""
    if not isinstance(value, Config):
        raise ValueError(f"{name} must be a fedkit Config (the notebook's), got {shown(value)}")


def seed_list(seeds) -> list[int]:
    """The setting ``seeds`` as a list (a non-empty list, tuple or range of integers ≥ 0), or ValueError naming it."""
    found = list(seeds) if isinstance(seeds, (list, tuple, range)) else []
    if not found or not all(is_whole(s) and s >= 0 for s in found):
        raise ValueError(f"seeds must be a non-empty list of integers ≥ 0, got {shown(seeds)}")
    return found


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
