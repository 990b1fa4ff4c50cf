"""Lesson 00's two checkers: each passes its reference answer (given, and through None) and fails wrong ones with a
message that points the way; exercise 2 also against every bad answer and bad setting of the generated matrix
(tests/test_course_answers.py runs that matrix on exercise 1)."""
import pytest
from test_course_answers import BAD_ANSWERS, BAD_SETTINGS, Computed, computed

from fedkit import Config
from fedkit.course import WrongAnswer, shown
from fedkit.course import what_is_fl as lesson
from fedkit.course.what_is_fl import check_exercise, check_exercise_2, final_accuracy, uniform_accuracy

CFG = Config(dataset="mnist_5k", partition="dirichlet", partition_args={"phi": 0.5}, num_clients=10,
             clients_per_round=5, model="mlp", model_args={"hidden": [64]}, local_steps=10, batch_size=32, lr=0.1,
             rounds=3)


def test_exercise_1_the_steps_of_the_run(capsys):
    check_exercise(3 * 5 * 10, CFG)
    assert capsys.readouterr().out == "correct: the clients took 150 local steps together (3 rounds × 5 clients × " \
                                      "K = 10)\n"


@pytest.mark.parametrize("steps, way", [(300, "fewer"), (30, "more")])
def test_exercise_1_wrong_counts_say_which_way(steps, way):
    with pytest.raises(WrongAnswer, match=f"it counted {way}. Count the clients sampled per round"):
        check_exercise(steps, CFG)


@pytest.mark.parametrize("steps", [-1, 301, 1.5, "150"])
def test_exercise_1_refuses_what_no_run_could_take(steps):
    with pytest.raises(WrongAnswer, match=r"a whole number in \[0, 300\]"):
        check_exercise(steps, CFG)


def test_no_answer_states_each_task_and_checks_the_hidden_reference(capsys):
    check_exercise(None, CFG)
    out = capsys.readouterr().out
    assert out.startswith("Exercise: how many local SGD steps do all clients take together")
    assert "hidden reference answer passes" in out and "150" not in out
    check_exercise_2(None, CFG)  # trains the reference loop (uniform weights) and compares with fedkit
    out = capsys.readouterr().out
    assert out.startswith("Exercise: weigh the sampled clients equally") and "hidden reference answer passes" in out


def test_exercise_2_the_from_scratch_loop_matches_fedkit(capsys):
    mine = uniform_accuracy(CFG)
    assert mine == pytest.approx(final_accuracy(CFG.replace(algorithm_args={"weighting": "uniform"})), abs=1e-3)
    check_exercise_2(mine, CFG)
    assert capsys.readouterr().out.startswith("correct: fedkit's FedAvg with uniform weights ends at")


def test_exercise_2_the_data_weighted_accuracy_is_named():
    with pytest.raises(WrongAnswer, match="with data-size weights .*change the line that sets p"):
        check_exercise_2(final_accuracy(CFG), CFG)


@pytest.mark.parametrize("accuracy, message", [(0.0, "ends higher than 0.0"), (1.0, "ends lower than 1.0"),
                                               (1.5, r"a number in \[0, 1\], got 1.5"), (True, "got True"),
                                               (float("nan"), "got nan")])
def test_exercise_2_wrong_answers(accuracy, message):
    with pytest.raises(WrongAnswer, match=message):
        check_exercise_2(accuracy, CFG)


@pytest.mark.parametrize("checker", [check_exercise, check_exercise_2])
def test_the_settings_must_be_the_lessons_fedavg(checker):
    with pytest.raises(ValueError, match="cfg must be the lesson's FedAvg"):
        checker(None, CFG.replace(algorithm="scaffold"))


@pytest.mark.parametrize("answer, names", [b[1:] for b in BAD_ANSWERS], ids=[b[0] for b in BAD_ANSWERS])
def test_exercise_2_a_bad_answer_is_refused_in_one_line_naming_it_before_anything_is_computed(answer, names,
                                                                                              monkeypatch, capsys):
    monkeypatch.setattr(lesson, "final_accuracy", computed)
    with pytest.raises(WrongAnswer) as err:
        check_exercise_2(answer, CFG)
    message = str(err.value)
    assert "\n" not in message and any(name in message for name in (shown(answer), *names)), message
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("value", BAD_SETTINGS, ids=repr)
def test_exercise_2_a_bad_setting_raises_value_error_naming_it_before_anything_is_printed(value, monkeypatch, capsys):
    monkeypatch.setattr(lesson, "uniform_accuracy", computed)
    with pytest.raises(ValueError) as err:
        check_exercise_2(None, value)
    assert "\n" not in str(err.value) and "cfg" in str(err.value)
    assert capsys.readouterr().out == ""


def test_the_matrix_patch_is_what_exercise_2_computes_with(monkeypatch):
    monkeypatch.setattr(lesson, "final_accuracy", computed)
    with pytest.raises(Computed):
        check_exercise_2(0.5, CFG)
