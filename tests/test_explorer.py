"""fedkit.explore(): config building, the lockstep session with its stop flag, the cache, and the widget panel
driven headless (the browser test drives the same panel through Voila)."""
import dataclasses
import html
import math
import re

import numpy as np
import pytest

from fedkit import Config, ConfigError
from fedkit.explorer import (
    ALGORITHMS,
    DATASETS,
    PARTITIONS,
    Choice,
    Session,
    build_configs,
    describe_model,
    equal_by_construction,
    model_for,
    plot_figure,
    plot_png,
)

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


@pytest.mark.parametrize("rounds", [1, 3, 7, 20])
def test_the_round_axis_has_whole_number_ticks(rounds):
    configs = build_configs(Choice(algorithms={"fedavg": {}}, **{**SMALL, "rounds": 1}))
    fig = plot_figure(Session(configs, cache=False).run(), rounds)
    for ax in fig.axes:
        ticks = [t for t in ax.get_xticks() if 0 <= t <= rounds]
        assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), ticks


def json_text(value) -> str:
    import json

    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("dataset", list(DATASETS))
def test_the_model_line_names_the_model_build_configs_gives_every_config(dataset):
    pytest.importorskip("ipywidgets")
    from fedkit.explorer import Panel

    configs = build_configs(Choice(**{**SMALL, "dataset": dataset}))
    models = {(cfg.model, json_text(cfg.model_args)) for cfg in configs.values()}
    assert models == {(model_for(dataset)[0], json_text(model_for(dataset)[1]))}
    cfg = next(iter(configs.values()))
    panel = Panel(Choice(**{**SMALL, "dataset": dataset}))
    assert describe_model(cfg.model, cfg.model_args) in panel.model.value


def test_the_model_line_follows_the_data_set_and_a_preset_model():
    pytest.importorskip("ipywidgets")
    from fedkit.explorer import Panel

    panel = Panel(Choice(**SMALL))
    assert "mlp (FcNet, hidden=[64])" in panel.model.value
    panel.dataset.value = "mnist_5k"
    assert "cnn (SimpleCNN)" in panel.model.value and build_configs(panel.choice())["fedavg"].model == "cnn"
    preset = Panel(Choice(**{**SMALL, "dataset": "mnist_5k", "model": "lenet5"}))
    assert "lenet5 (LeNet5)" in preset.model.value
    assert build_configs(preset.choice())["fedavg"].model == "lenet5"  # the panel keeps the preset model


def curves_of(configs) -> dict[str, np.ndarray]:
    return {label: frame[["test_accuracy", "test_loss"]].to_numpy(float)
            for label, frame in Session(configs, cache=False).run().items()}


SMALL_CFG = Config(dataset="digits", model="mlp", model_args={"hidden": [64]}, num_clients=5, rounds=3, local_steps=2,
                   lr=0.1, partition_args={"phi": 0.5})
# configs that are one method by construction (equal_by_construction says so), and the words of its note
EQUAL = {
    "fednova-fedavg": ({"fedavg": {}, "fednova": {}}, "same K = 2 local steps"),
    "fedprox-mu0": ({"fedavg": {}, "fedprox": {"mu": 0.0}}, "FedProx with μ = 0"),
    "moon-mu0": ({"fedavg": {}, "moon": {"mu": 0.0}}, "MOON with μ = 0"),
    "scaffold-alpha0-uniform": ({"fedavg": {"weighting": "uniform"}, "scaffold": {"alpha": 0.0}}, "SCAFFOLD with α"),
    "fedacg-lam0-beta0": ({"fedavg": {"weighting": "uniform"}, "fedacg": {"lam": 0.0, "beta": 0.0}}, "FedACG with λ"),
    "fednova-mu-fedprox-mu": ({"fedprox": {"mu": 0.1}, "fednova": {"mu": 0.1}}, "same K = 2"),
    "three": ({"fedavg": {}, "fedprox": {"mu": 0.0}, "fednova": {}}, "no proximal term; FedNova's"),
}
# configs that are not (no note), and whether their curves then differ here
UNEQUAL = {
    "scaffold-alpha0-data-weighted-fedavg": ({"fedavg": {}, "scaffold": {"alpha": 0.0}}, True),
    "fedprox-mu": ({"fedavg": {}, "fedprox": {"mu": 0.1}}, True),
    "fedacg-beta": ({"fedavg": {"weighting": "uniform"}, "fedacg": {"lam": 0.0}}, False),  # β = 0.001: close
    "fednova-mu-fedavg": ({"fedavg": {}, "fednova": {"mu": 0.1}}, True),
    "moon": ({"fedavg": {}, "moon": {}}, None),
}


def configs_of(algorithms: dict, **changes) -> dict[str, Config]:
    return {f"{name} {args}": SMALL_CFG.replace(algorithm=name, algorithm_args=args, **changes)
            for name, args in algorithms.items()}


@pytest.mark.parametrize("algorithms, words", EQUAL.values(), ids=list(EQUAL))
def test_methods_equal_by_construction_get_a_note_and_train_alike(algorithms, words):
    configs = build_configs(Choice(algorithms=algorithms, **SMALL))
    notes = equal_by_construction(configs)
    assert len(notes) == 1 and words in notes[0] and all(label in notes[0] for label in configs), notes
    curves = list(curves_of(configs).values())
    for other in curves[1:]:
        np.testing.assert_allclose(other, curves[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("algorithms, differ", UNEQUAL.values(), ids=list(UNEQUAL))
def test_other_methods_get_no_note(algorithms, differ):
    configs = build_configs(Choice(algorithms=algorithms, **SMALL))
    assert equal_by_construction(configs) == []
    if differ:
        first, second = curves_of(configs).values()
        assert not np.allclose(first, second)


def test_fednova_is_fedavg_under_momentum_at_equal_k_but_not_with_tau_eff_steps_nor_with_epochs():
    momentum = {"optimizer_args": {"momentum": 0.5}}
    same = configs_of({"fedavg": {}, "fednova": {}}, **momentum)
    assert len(equal_by_construction(same)) == 1
    first, second = curves_of(same).values()
    np.testing.assert_allclose(second, first, rtol=1e-5, atol=1e-6)
    steps = configs_of({"fedavg": {}, "fednova": {"tau_eff": "steps"}}, **momentum)  # τ_eff = τ ≠ a_i
    assert equal_by_construction(steps) == []
    first, second = curves_of(steps).values()
    assert not np.allclose(first, second)
    assert len(equal_by_construction(configs_of({"fedavg": {}, "fednova": {"tau_eff": "steps"}}))) == 1  # a_i = τ
    epochs = configs_of({"fedavg": {}, "fednova": {}}, local_steps=None, local_epochs=1)  # K_i = ⌈n_i / B⌉
    assert equal_by_construction(epochs) == []
    assert equal_by_construction(configs_of({"fedavg": {}, "fednova": {}}, threat="freeloaders",
                                                  threat_args={"fraction": 0.2})) == []
    # the rest of the config must agree too
    one, two = configs_of({"fedavg": {}, "fednova": {}}).values()
    assert equal_by_construction({"a": one, "b": two.replace(seed=1)}) == []


def test_panel_runs_headless_and_shows_a_bad_value_without_traceback(tmp_path):
    pytest.importorskip("ipywidgets")
    from fedkit.explorer import Panel

    panel = Panel(Choice(algorithms={"fedavg": {}, "fedprox": {"mu": 0.1}}, **SMALL), cache=tmp_path)
    assert panel.partition_param.description == "phi" and not panel.use["scaffold"].value
    assert panel.plot.layout.display == "none" and not panel.plot.value  # no image yet: no broken-image icon
    panel.run(wait=True)
    assert panel.status.value == "done: 6/6 rounds" and panel.progress.value == 6
    assert panel.plot.value[:4] == b"\x89PNG" and panel.plot.layout.display is None
    assert "fedprox mu=0.1" in panel.table.value
    bad_values = ((panel.rounds, 0, "rounds must be an integer ≥ 1, got 0"),  # not clamped to 1
                  (panel.partition_param, -1.0, "partition 'dirichlet': phi must lie in (0, inf), got -1.0"),
                  (panel.lr, -1.0, "lr must be a finite number > 0, got -1.0"))
    for field, bad, message in bad_values:
        panel.run(wait=True)
        assert panel.status.value == "done: 6/6 rounds (2 from the cache)"
        good, field.value = field.value, bad
        panel.run(wait=True)
        assert panel.status.value == f"not run: {message}", "the status: the one-line error, no cache status"
        assert html.escape(message) in panel.error.value and "Traceback" not in panel.error.value
        assert panel.plot.layout.display == "none" and not panel.plot.value, "the old curves are gone"
        assert panel.table.value == "" and panel.progress.value == 0
        field.value = good
    panel.partition.value = "iid"
    assert panel.partition_param.disabled


def test_panel_notes_methods_equal_by_construction_as_they_are_chosen():
    pytest.importorskip("ipywidgets")
    from fedkit.explorer import Panel

    panel = Panel(Choice(algorithms={"fedavg": {}}, **SMALL))
    assert panel.note.value == ""
    panel.use["fednova"].value = True
    assert "fedavg and fednova are one method by construction" in panel.note.value
    assert "same K = 2 local steps" in panel.note.value
    panel.local_steps.value = 5
    assert "same K = 5 local steps" in panel.note.value
    panel.local_steps.value = 0  # a bad value: no note (Run says why)
    assert panel.note.value == ""
    panel.local_steps.value = 2
    panel.use["fednova"].value = False
    panel.use["fedprox"].value = True
    assert panel.note.value == ""
    panel.hyper["fedprox"].value = 0.0
    assert "fedavg and fedprox mu=0 are one method" in panel.note.value


@pytest.mark.parametrize("preset, message", [(dict(lr="fast"), "lr must be a finite number > 0, got 'fast'"),
                                             (dict(rounds=0), "rounds must be an integer ≥ 1, got 0"),
                                             (dict(dataset=["digits"]), "unknown dataset ['digits']")])
def test_a_bad_preset_is_refused_with_configs_message_not_a_widget_error_or_a_clamp(preset, message):
    pytest.importorskip("ipywidgets")
    from fedkit.explorer import Panel

    with pytest.raises(ConfigError, match=re.escape(message)):
        Panel(Choice(**{**SMALL, **preset}))
