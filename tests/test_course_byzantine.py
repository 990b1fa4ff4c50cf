"""Lesson 06's two checkers: the reference c passes, c = 0 (no drag: rescaling alone) fails; DRAG's v_m of an upload
orthogonal to r is √((1 − c)² + c²) ‖r‖ long."""
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed, refused, setting_refused

from fedkit import Config
from fedkit.course import WrongAnswer
from fedkit.course import byzantine as lesson
from fedkit.course.byzantine import REFERENCE_C, check_exercise, check_exercise_2

ATTACKED = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, partition="qskew",
                  partition_args={"q": 1.0}, num_clients=10, clients_per_round=10, local_steps=5, batch_size=32,
                  lr=0.1, rounds=20, threat="random_scaling", threat_args={"count": 4, "variance": 3.0})
SEEDS = [0]


def test_the_reference_answer_passes(capsys):
    check_exercise(REFERENCE_C, ATTACKED, SEEDS, root_samples=100)
    assert capsys.readouterr().out.startswith("correct: with c = 0.5, DRAG")


def test_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, ATTACKED, SEEDS, root_samples=100)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: find a c in [0, 1] at which DRAG, under the same attack, ends at least 10 points")
    assert "set `answer` to your c" in out and "hidden reference answer passes" in out and "0.5" not in out


def test_no_drag_fails_with_a_hint():
    with pytest.raises(WrongAnswer, match=r"not 0.10 ahead; a reversed upload becomes \(4c − 1\) r"):
        check_exercise(0.0, ATTACKED, SEEDS, root_samples=100)


@pytest.mark.parametrize("c", [-0.1, 1.5, "0.5", [0.5]])
def test_an_answer_outside_the_range_is_refused(c):
    with pytest.raises(WrongAnswer, match=r"c must be a number in \[0, 1\]"):
        check_exercise(c, ATTACKED, SEEDS, root_samples=100)


def test_the_exercise_needs_the_attack():
    with pytest.raises(ValueError, match="random_scaling"):
        check_exercise(0.5, ATTACKED.replace(threat=None, threat_args={}), SEEDS, root_samples=100)


@pytest.mark.parametrize("length, c", [(0.5 ** 0.5, 0.5), (0.707, 0.5), (1.0, 0.0), (0.625 ** 0.5, 0.25)])
def test_exercise_2_an_orthogonal_upload_shrinks_and_turns(length, c, capsys):
    check_exercise_2(length, c=c)
    assert capsys.readouterr().out.startswith(f"correct: the dragged upload is {length:.3f} ‖r‖ long, at c = {c:g}")


def test_exercise_2_no_answer_states_the_task_and_checks_the_hidden_reference(capsys):
    check_exercise_2(None, c=0.5)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: how long is DRAG's dragged upload v_m (eq. 14, c = 0.5) of an upload orthogonal")
    assert "hidden reference answer passes" in out and "0.707" not in out


@pytest.mark.parametrize("length, way", [(1.0, "shorter"), (0.5, "longer"), (0.75, "shorter")])
def test_exercise_2_wrong_lengths_say_which_way(length, way):
    with pytest.raises(WrongAnswer, match=f"DRAG's v_m of an orthogonal upload is {way} than {length:g} ‖r‖") as err:
        check_exercise_2(length, c=0.5)
    assert "0.707" not in str(err.value)


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS] + [(-0.5, ())],
                         ids=[b[0] for b in BAD_ANSWERS] + ["negative"])
def test_exercise_2_a_bad_answer_is_refused_before_anything_is_computed(answer, names, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "orthogonal_length", computed)
    refused(check_exercise_2, answer, names, capsys, c=0.5)


@pytest.mark.parametrize("value", BAD_SETTINGS + [1.5], ids=repr)
def test_exercise_2_a_bad_setting_is_refused(value, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "orthogonal_length", computed)
    setting_refused(check_exercise_2, "c", capsys, c=value)


def test_exercise_2_the_patch_is_what_it_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "orthogonal_length", computed)
    with pytest.raises(Computed):
        check_exercise_2(0.7)
