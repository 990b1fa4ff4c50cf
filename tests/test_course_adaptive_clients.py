"""Lesson 05's two checkers: the reference η_l passes, a large η_l (stale corrections) fails; the first step of a
round's client Adam is √10 η_l long per coordinate."""
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed, refused, setting_refused

from fedkit import Config
from fedkit.course import WrongAnswer
from fedkit.course import adaptive_clients as lesson
from fedkit.course.adaptive_clients import REFERENCE_LR, check_exercise, check_exercise_2

FADAMGC = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="dirichlet",
                 partition_args={"phi": 0.1}, num_clients=20, clients_per_round=10, local_steps=20, batch_size=32,
                 rounds=15, algorithm="fadamgc", algorithm_args={"tracked": 5}, optimizer="adam",
                 optimizer_args={"beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "bias_correction": False}, lr=1e-3)
SEEDS = [0]


def test_the_reference_answer_passes(capsys):
    check_exercise(REFERENCE_LR, FADAMGC, SEEDS)
    assert capsys.readouterr().out.startswith("correct: with η_l = 0.001, FAdamGC")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, FADAMGC, SEEDS)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a client learning rate η_l at which FAdamGC ends ahead of LocalAdam")
    assert "set `answer` to your η_l" in out and "hidden reference answer passes" in out and "0.001" not in out


def test_a_large_learning_rate_fails_with_a_hint():
    with pytest.raises(WrongAnswer, match="not ahead; the correction is estimated a round earlier"):
        check_exercise(1e-2, FADAMGC, SEEDS)


@pytest.mark.parametrize("lr", [0.0, 2.0, "1e-3"])
def test_an_answer_outside_the_range_is_refused(lr):
    with pytest.raises(WrongAnswer, match=r"η_l must be a number in \(0, 1\]"):
        check_exercise(lr, FADAMGC, SEEDS)


def test_the_exercise_needs_fadamgc():
    with pytest.raises(ValueError, match="give FAdamGC's config"):
        check_exercise(1e-3, FADAMGC.replace(algorithm="local_adam", algorithm_args={}), SEEDS)


@pytest.mark.parametrize("ratio", [10 ** 0.5, 3.16])
def test_exercise_2_the_first_step_is_root_ten_learning_rates(ratio, capsys):
    check_exercise_2(ratio, FADAMGC)
    assert capsys.readouterr().out == "correct: the first local step moves each coordinate by 3.162 η_l, whatever " \
                                      "the gradient's size\n"


def test_exercise_2_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise_2(None, FADAMGC)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: the client Adam above restarts its moments m_0 = v_0 = 0 every round and has no "
                          "bias correction (β1 = 0.9, β2 = 0.999).")
    assert "hidden reference answer passes" in out and "3.16" not in out


@pytest.mark.parametrize("ratio, message", [(1, "more than 1 η_l. 1 would be Adam with bias correction"),
                                            (10, "less than 10 η_l. Work out m_1 and v_1"),
                                            (0.1, "more than 0.1 η_l")])
def test_exercise_2_wrong_answers_say_which_way(ratio, message):
    with pytest.raises(WrongAnswer, match=message) as err:
        check_exercise_2(ratio, FADAMGC)
    assert "3.16" not in str(err.value)


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS] + [(0, ())], ids=[b[0] for b in BAD_ANSWERS]
                         + ["zero"])
def test_exercise_2_a_bad_answer_is_refused_before_anything_is_computed(answer, names, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "first_step", computed)
    refused(check_exercise_2, answer, names, capsys, fadamgc=FADAMGC)


@pytest.mark.parametrize("value", BAD_SETTINGS + [FADAMGC.replace(optimizer_args={})], ids=repr)
def test_exercise_2_a_bad_setting_is_refused(value, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "first_step", computed)
    setting_refused(check_exercise_2, "fadamgc", capsys, fadamgc=value)


def test_exercise_2_the_patch_is_what_it_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "first_step", computed)
    with pytest.raises(Computed):
        check_exercise_2(3.0, FADAMGC)
