"""fedkit.explore(): config building, the lockstep session with its stop flag, the cache, and the widget panel
driven headless (the browser test drives the same panel through Voila)."""
import dataclasses
import math
import re

import pytest

from fedkit import Config, ConfigError
from fedkit.explorer import ALGORITHMS, PARTITIONS, Choice, Session, build_configs, plot_png

SMALL = dict(dataset="digits", num_clients=5, rounds=3, local_steps=2, lr=0.1)
JUNK = [None, "abc", math.nan, math.inf, -1, [], True]  # a value of each wrong kind; -1 is out of every range here
# Choice's fields that Config checks alike (the explorer offers fewer partitions, and says so)
SAME_AS_CONFIG = {f.name for f in dataclasses.fields(Config)} - {"partition"}


def bad_choices() -> list[tuple[str, Choice, object, dict | None]]:
    """(id, choice, its bad value, the Config change that carries that value or None) for every field of Choice,
    every partition's parameter, and every algorithm's hyper-parameters (as a whole and the one the panel shows),
    each given every junk value (None only where the field's default is not None)."""
    found = []
    for f in dataclasses.fields(Choice):
        for value in JUNK:
            if value is None and f.default is None:
                continue
            same = {f.name: value} if f.name in SAME_AS_CONFIG and value != [] else None  # Config([]): TypeError
            found.append((f"{f.name}={value!r}", Choice(**{**SMALL, f.name: value}), value, same))
    for partition, param in PARTITIONS.items():
        found += [(f"{partition}-{param[0]}={value!r}", Choice(**SMALL, partition=partition, partition_param=value),
                   value, None) for value in JUNK if param is not None]
    for algorithm, param in ALGORITHMS.items():
        for value in JUNK:
            found.append((f"{algorithm}-args={value!r}", Choice(**SMALL, algorithms={algorithm: value}), value,
                          {"algorithm": algorithm, "algorithm_args": value}))
            if param is not None:
                args = {param[0]: value}
                found.append((f"{algorithm}-{param[0]}={value!r}", Choice(**SMALL, algorithms={algorithm: args}),
                              value, {"algorithm": algorithm, "algorithm_args": args}))
    return found


BAD = bad_choices()


def test_the_bad_choices_cover_every_field_partition_and_algorithm():
    ids = {case[0].split("=")[0] for case in BAD}
    assert {f.name for f in dataclasses.fields(Choice)} <= ids
    assert {f"{p}-{param[0]}" for p, param in PARTITIONS.items() if param} <= ids
    assert {f"{a}-args" for a in ALGORITHMS} | {f"{a}-{param[0]}" for a, param in ALGORITHMS.items() if param} <= ids


@pytest.mark.parametrize("choice, value, same", [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_every_bad_field_is_refused_in_one_line_naming_its_value_as_config_refuses_it(choice, value, same):
    with pytest.raises(ConfigError) as err:
        build_configs(choice)
    message = str(err.value)
    assert "\n" not in message and repr(value) in message, message
    if same is not None:
        with pytest.raises(ConfigError) as config_err:
            build_configs(Choice(**SMALL))["fedavg"].replace(**same)
        assert message == str(config_err.value)


def test_build_configs_one_per_method_with_its_hyper_parameters():
    configs = build_configs(Choice(algorithms={"fedavg": {}, "fedprox": {"mu": 0.01}}, partition="shards",
                                   partition_param=3.0, **SMALL))
    assert list(configs) == ["fedavg", "fedprox mu=0.01"]
    prox = configs["fedprox mu=0.01"]
    assert prox.algorithm_args == {"mu": 0.01} and prox.model == "mlp" and prox.model_args == {"hidden": [64]}
    assert prox.partition_args == {"shards_per_client": 3} and isinstance(prox.partition_args["shards_per_client"], int)
    assert configs["fedavg"].replace(algorithm="fedprox", algorithm_args={"mu": 0.01}) == prox


@pytest.mark.parametrize("change, message", [
    (dict(lr=-1.0), "lr must be a finite number > 0, got -1.0"),
    (dict(algorithms={}), "choose at least one algorithm"),
    (dict(partition="shards", partition_param=2.5), "shards_per_client must be an integer, got 2.5"),
    (dict(algorithms={"fedprox": {"mu": -1.0}}), "mu"),
])
def test_bad_values_raise_config_error_with_the_reason(change, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_configs(Choice(**{**SMALL, **change}))


def test_session_trains_in_lockstep_and_the_cache_answers_the_second_time(tmp_path):
    configs = build_configs(Choice(algorithms={"fedavg": {}, "scaffold": {}}, **SMALL))
    seen = []
    curves = Session(configs, cache=tmp_path).run(lambda s: seen.append({k: len(v) for k, v in s.curves.items()}))
    assert [len(curves[k]) for k in configs] == [4, 4]  # round 0 and 3 rounds each
    # one round of each method in turn: fedavg's 2nd row arrives before scaffold's 2nd
    assert seen[:4] == [{"fedavg": 1}, {"fedavg": 1, "scaffold": 1}, {"fedavg": 2, "scaffold": 1},
                        {"fedavg": 2, "scaffold": 2}]
    again = Session(configs, cache=tmp_path)
    calls = []
    second = again.run(lambda s: calls.append(1))
    assert again.cached == list(configs) and len(calls) == 2
    for k in configs:
        assert second[k]["test_accuracy"].tolist() == pytest.approx(curves[k]["test_accuracy"].tolist())
    assert set(again.summary()["from cache"]) == {True}


def test_stop_ends_the_session_after_the_round_and_a_rerun_resumes(tmp_path):
    configs = build_configs(Choice(algorithms={"fedavg": {}}, **SMALL))
    session = Session(configs, cache=tmp_path)

    def stop_after_first_round(s):
        if s.done_rounds >= 1:
            s.stop()

    session.run(stop_after_first_round)
    assert session.stopped and session.done_rounds == 1
    resumed = Session(configs, cache=tmp_path)
    resumed.run()
    assert not resumed.stopped and resumed.done_rounds == 3 and not resumed.cached


def test_plot_is_a_png():
    configs = build_configs(Choice(algorithms={"fedavg": {}}, **SMALL))
    assert plot_png(Session(configs, cache=False).run(), 3)[:8] == b"\x89PNG\r\n\x1a\n"


def test_panel_runs_headless_and_shows_a_bad_value_without_traceback(tmp_path):
    pytest.importorskip("ipywidgets")
    from fedkit.explorer import Panel

    panel = Panel(Choice(algorithms={"fedavg": {}, "fedprox": {"mu": 0.1}}, **SMALL), cache=tmp_path)
    assert panel.partition_param.description == "phi" and not panel.use["scaffold"].value
    panel.run(wait=True)
    assert panel.status.value == "done: 6/6 rounds" and panel.progress.value == 6
    assert panel.plot.value[:4] == b"\x89PNG" and "fedprox mu=0.1" in panel.table.value
    panel.run(wait=True)
    assert panel.status.value == "done: 6/6 rounds (2 from the cache)"
    panel.lr.value = -1.0
    panel.run(wait=True)
    assert "lr must be a finite number &gt; 0, got -1.0" in panel.error.value and "Traceback" not in panel.error.value
    assert panel.status.value == "not run: lr must be a finite number > 0, got -1.0"
    panel.partition.value = "iid"
    assert panel.partition_param.disabled


@pytest.mark.parametrize("preset, message", [(dict(lr="fast"), "lr must be a finite number > 0, got 'fast'"),
                                             (dict(rounds=0), "rounds must be an integer ≥ 1, got 0"),
                                             (dict(dataset=["digits"]), "unknown dataset ['digits']")])
def test_a_bad_preset_is_refused_with_configs_message_not_a_widget_error_or_a_clamp(preset, message):
    pytest.importorskip("ipywidgets")
    from fedkit.explorer import Panel

    with pytest.raises(ConfigError, match=re.escape(message)):
        Panel(Choice(**{**SMALL, **preset}))
