"""Checked exercises of the teaching course (notebooks/teaching/): one module per lesson, named after its notebook
without the number (``01_partitions.ipynb`` → ``fedkit.course.partitions``).

Conventions every lesson module follows:

* ``check_exercise(answer, ...)`` checks the notebook's one exercise. A wrong answer raises ``AssertionError`` whose
  message says what was measured, what was asked and which way to go; a right one returns a one-line message for the
  notebook to print. The checker measures the answer with the kit itself (it never compares with a stored number),
  and its keyword arguments default to the notebook's settings.
* Small helpers the notebook needs (a toy problem, a measure) live beside the checker, so that each notebook stays
  short and calls the kit rather than re-implementing it.
* In the notebook, the exercise's code cell starts ``answer = None  # your ...``; while it is None the cell says what
  to do, otherwise it prints ``check_exercise(answer, <the notebook's settings>)``. The committed notebook leaves the
  answer out, so nbval runs it as a student first sees it.
* tests/test_course_<lesson>.py shows that each checker passes with a reference answer and fails with wrong ones.

This package imports no lesson module: ``from fedkit.course import partitions`` loads the one a notebook needs.
"""
