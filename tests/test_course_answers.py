"""Every lesson's checker against every kind of bad input, generated from the lessons found in fedkit.course: each bad
answer (wrong type, wrong-arity function, a function that returns something else or raises, NaN, infinite, huge)
raises WrongAnswer in one line naming it, before the checker computes anything; each setting given a bad value raises
ValueError in one line naming the setting, before anything is printed. A new lesson must add its settings here."""
from __future__ import annotations

import functools
import importlib
import inspect
import math
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import fedkit.course
from fedkit import run
from fedkit.course import WrongAnswer, shown

LESSONS = sorted(m.name for m in pkgutil.iter_modules(fedkit.course.__path__))


def setting(lesson: str, name: str):
    """A setting defined in tests/test_course_<lesson>.py, imported when called: every lesson's test imports this
    matrix to run it on its second exercise."""
    return getattr(importlib.import_module(f"test_course_{lesson}"), name)


@functools.cache
def scaffold_history():
    return run(setting("to_flower", "CFG"), cache=False, progress=False)


# Valid settings of each lesson's checker (cheap: nothing here trains but lesson 08's two-round history).
SETTINGS = {"partitions": lambda: {"labels": np.arange(400) % 10}, "client_drift": dict, "control_variates": dict,
            "server_momentum": lambda: {"base": setting("server_momentum", "BASE"), "seeds": [0]},
            "adaptive_clients": lambda: {"fadamgc": setting("adaptive_clients", "FADAMGC"), "seeds": [0]},
            "byzantine": lambda: {"attacked": setting("byzantine", "ATTACKED"), "seeds": [0], "root_samples": 100},
            "freeloaders": lambda: {"base": setting("freeloaders", "BASE"), "seeds": [0]},
            "to_flower": lambda: {"history": scaffold_history()},
            "privacy": lambda: {"private": setting("privacy", "PRIVATE")},
            "what_is_fl": lambda: {"cfg": setting("what_is_fl", "CFG")},
            "feature_shift": lambda: {"base": setting("feature_shift", "BASE")},
            "communication": lambda: {"base": setting("communication", "BASE")}}
# What each checker computes with an answer; a bad answer must be refused before it is called. None: the answer is a
# function, called on the tensors of the checker's toy run (bounded by its setting rounds).
COMPUTE = {"partitions": "dirichlet_skew", "client_drift": "distances", "control_variates": None,
           "server_momentum": "compare", "adaptive_clients": "run_seeds", "byzantine": "run_seeds",
           "freeloaders": "rates", "to_flower": "measured", "privacy": "noise_std", "what_is_fl": "steps_taken",
           "feature_shift": "by_domain", "communication": "upload_kb"}


def returns(value):
    return lambda *args: value


def raises(*args):
    return 1 / 0


# (id, bad answer, what the message may name it by: the answer itself, or what a function answer returned or raised)
BAD_ANSWERS = [("text", "0.5", ()), ("list", [0.5], ()), ("dict", {"answer": 1}, ()), ("object", object(), ()),
               ("bool", True, ()), ("complex", 1j, ()), ("array", np.full((3, 3), 0.5), ()),
               ("nan", math.nan, ()), ("numpy-nan", np.float64("nan"), ()), ("inf", math.inf, ()),
               ("-inf", -math.inf, ()), ("huge", 10**6, ()), ("huge-float", 1e300, ()), ("huge-int", 10**5000, ()),
               ("-huge", -10**6, ()), ("pair-nan", (math.nan, math.nan), ()), ("pair-text", ("1", "2"), ()),
               ("pair-bool", (True, False), ()), ("pair-huge", (10**30, 10**30), ()),
               ("no-arguments", lambda: 0.5, ()), ("one-argument", lambda x: x, ()),
               ("returns-text", returns("abc"), ("'abc'",)), ("returns-dict", returns({"c": 1}), ("{'c': 1}",)),
               ("returns-nan", returns(math.nan), ("shape",)), ("raises", raises, ("ZeroDivisionError",))]
BAD_SETTINGS = [None, "abc", math.nan, -1, [], object()]


class Computed(Exception):
    """Raised by a checker's computation, patched: the checker computed before refusing."""


def computed(*args, **kwargs):
    raise Computed


def refused(checker, answer, names, capsys, **settings) -> None:
    """``checker(answer, **settings)`` refuses ``answer`` in one line naming it (or one of ``names``) and prints
    nothing: the lessons' tests run it on their second exercise, with its computation patched to ``computed``."""
    with pytest.raises(WrongAnswer) as err:
        checker(answer, **settings)
    message = str(err.value)
    assert "\n" not in message and any(name in message for name in (shown(answer), *names)), message
    assert capsys.readouterr().out == ""


def setting_refused(checker, setting, capsys, **settings) -> None:
    """``checker(None, **settings)``, one setting bad, raises ValueError in one line naming it, printing nothing."""
    with pytest.raises(ValueError) as err:
        checker(None, **settings)
    assert "\n" not in str(err.value) and setting in str(err.value), err.value
    assert capsys.readouterr().out == ""


def module(lesson):
    return importlib.import_module(f"fedkit.course.{lesson}")


def settings_of(lesson) -> list[str]:
    return list(inspect.signature(module(lesson).check_exercise).parameters)[1:]


def test_every_lesson_has_settings_here_and_a_test_of_its_answer_none():
    assert set(SETTINGS) == set(COMPUTE) == set(LESSONS)
    for lesson in LESSONS:
        assert set(SETTINGS[lesson]()) <= set(settings_of(lesson))
        text = (Path(__file__).parent / f"test_course_{lesson}.py").read_text()
        assert "check_exercise(None" in text and "hidden reference answer passes" in text, lesson  # the convention


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS], ids=[b[0] for b in BAD_ANSWERS])
@pytest.mark.parametrize("lesson", LESSONS)
def test_a_bad_answer_is_refused_in_one_line_naming_it_before_anything_is_computed(lesson, answer, names, monkeypatch,
                                                                                   capsys):
    settings = SETTINGS[lesson]()
    if COMPUTE[lesson]:
        monkeypatch.setattr(module(lesson), COMPUTE[lesson], computed)
    with pytest.raises(WrongAnswer) as err:
        module(lesson).check_exercise(answer, **settings)
    message = str(err.value)
    assert "\n" not in message and any(name in message for name in (shown(answer), *names)), message
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
@pytest.mark.parametrize("lesson, setting", [(lesson, s) for lesson in LESSONS for s in settings_of(lesson)])
def test_a_bad_setting_raises_value_error_naming_it_before_anything_is_printed(lesson, setting, value, monkeypatch,
                                                                               capsys):
    if COMPUTE[lesson]:
        monkeypatch.setattr(module(lesson), COMPUTE[lesson], computed)
    with pytest.raises(ValueError) as err:
        module(lesson).check_exercise(None, **{**SETTINGS[lesson](), setting: value})
    message = str(err.value)
    assert "\n" not in message and setting in message, message
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value, text", [(np.zeros((4, 4)), "array([[0., 0., 0., 0.], [0., 0., 0., 0.],"),
                                         (10**5000, "an integer of 16610 bits"), (list(range(100)), "[0, 1, 2,")],
                         ids=["array", "huge-int", "long-list"])
def test_shown_names_a_value_in_one_short_line(value, text):
    assert shown(value).startswith(text) and len(shown(value)) <= 80 and "\n" not in shown(value)
