"""Lesson 09's two checkers and helpers: each exercise passes its reference answer (given, and through None) and
fails wrong ones; exercise 2 also against the bad answers and settings of the generated matrix
(tests/test_course_answers.py runs it on exercise 1); FedAvg's own-domain accuracy recovers with statistics measured
on the client's own images."""
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed

from fedkit import Config
from fedkit.course import WrongAnswer, shown
from fedkit.course import feature_shift as lesson
from fedkit.course.feature_shift import (
    REFERENCE_CONTRAST,
    REFERENCE_DOMAIN,
    by_domain,
    check_exercise,
    check_exercise_2,
    domain_accuracy,
    scanner,
)

BASE = Config(dataset="feature_shift", partition="natural", partition_args={}, num_clients=8, model="mlp_bn",
              local_steps=10, batch_size=32, lr=0.05, rounds=3)


def test_every_client_is_tested_on_its_own_domain():
    frame = domain_accuracy(BASE)
    assert frame["domain"].tolist() == [0, 1, 2, 3, 0, 1, 2, 3] and frame["accuracy"].between(0, 1).all()
    fedavg, fedbn = by_domain(BASE), by_domain(BASE.replace(algorithm="fedbn"))
    own = by_domain(BASE, statistics="own")
    assert fedbn[1] - fedavg[1] > 0.1  # the faded scanner: FedAvg's averaged statistics fail it
    assert own[1] - fedavg[1] > 0.1  # ... and statistics of the client's own images repair it


def test_exercise_1_the_reference_domain(capsys):
    check_exercise(REFERENCE_DOMAIN, BASE)
    assert capsys.readouterr().out.startswith("correct: FedBN gains the most on domain 1 (+0.")


@pytest.mark.parametrize("domain, message", [(3, "on domain 3 FedBN gains .*another domain gains more"),
                                             (4, r"a whole number in \[0, 3\], got 4"), (1.0, "got 1.0")])
def test_exercise_1_wrong_answers(domain, message):
    with pytest.raises(WrongAnswer, match=message):
        check_exercise(domain, BASE)


def test_no_answer_states_each_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, BASE)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: on which domain does FedBN gain the most")
    assert "hidden reference answer passes" in out
    check_exercise_2(None, BASE)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: domain 1's scanner maps a pixel x to a·x + (1 − a)/2")
    assert "hidden reference answer passes" in out and "-1" not in out and "−1, 1]" in out


def test_exercise_2_an_inverting_scanner_defeats_fedbn(capsys):
    check_exercise_2(REFERENCE_CONTRAST, BASE)
    assert capsys.readouterr().out.startswith("correct: with a = -1 FedBN serves domain 1 at 0.")


def test_exercise_2_a_positive_contrast_is_absorbed():
    with pytest.raises(WrongAnswer, match="with a = 0.5 FedBN serves domain 1 at .*absorbed this scanner"):
        check_exercise_2(0.5, BASE)


@pytest.mark.parametrize("contrast", [0.1, -0.1, 1.5, -2, "−1", float("nan"), True, [-1]])
def test_exercise_2_refuses_contrasts_outside_the_range(contrast):
    with pytest.raises(WrongAnswer, match=r"a number in \[−1, 1\] with \|a\| ≥ 0.2"):
        check_exercise_2(contrast, BASE)


def test_the_scanner_keeps_images_in_range():
    for a in (-1, -0.2, 0.4, 1):
        low, high = scanner(a)["brightness"], scanner(a)["brightness"] + a
        assert 0 <= min(low, high) and max(low, high) <= 1


@pytest.mark.parametrize("checker", [check_exercise, check_exercise_2])
def test_the_settings_must_be_a_feature_shift_federation(checker):
    with pytest.raises(ValueError, match="feature_shift data set"):
        checker(None, BASE.replace(dataset="mnist_5k", partition="iid"))
    with pytest.raises(ValueError, match="start with the clean one"):
        checker(None, BASE.replace(dataset_args={"domains": [{"contrast": 0.5}, {}]}))


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS], ids=[b[0] for b in BAD_ANSWERS])
def test_exercise_2_a_bad_answer_is_refused_in_one_line_naming_it_before_anything_is_computed(answer, names,
                                                                                              monkeypatch, capsys):
    monkeypatch.setattr(lesson, "by_domain", computed)
    with pytest.raises(WrongAnswer) as err:
        check_exercise_2(answer, BASE)
    message = str(err.value)
    assert "\n" not in message and any(name in message for name in (shown(answer), *names)), message
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
def test_exercise_2_a_bad_setting_raises_value_error_naming_it_before_anything_is_printed(value, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "by_domain", computed)
    with pytest.raises(ValueError) as err:
        check_exercise_2(None, value)
    assert "\n" not in str(err.value) and "base" in str(err.value)
    assert capsys.readouterr().out == ""


def test_the_matrix_patch_is_what_exercise_2_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "by_domain", computed)
    with pytest.raises(Computed):
        check_exercise_2(REFERENCE_CONTRAST, BASE)
