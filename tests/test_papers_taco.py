"""The TACO paper settings: Table IV at each scale, Table V targets and cells, Table VII's client count."""
import pytest

from fedkit.papers import taco


@pytest.mark.parametrize("dataset", ["mnist", "fmnist", "svhn", "cifar10"])
def test_small_scale_keeps_the_papers_step_length_per_round(dataset):
    paper, small = taco.config(dataset, "paper"), taco.config(dataset, "small")
    assert paper.partition == small.partition == "label_groups"
    assert (paper.num_clients, paper.batch_size, paper.server_lr) == (small.num_clients, small.batch_size, 1.0)
    assert small.local_steps * small.lr == pytest.approx(1.0)
    assert taco.config("fmnist", "paper").local_steps * taco.config("fmnist", "paper").lr == pytest.approx(1.0)


def test_offline_substitutes_are_used_and_named():
    cfg = taco.config("cifar100", "small", "FedAvg")
    assert (cfg.dataset, cfg.model, cfg.partition_args) == ("cifar10_subset", "cnn", {"phi": 0.5})
    assert taco.label("cifar100", "small") == "cifar100 (substitute: cifar10_subset)"
    assert taco.label("fmnist", "small") == "fmnist"


def test_small_shakespeare_fits_the_offline_leaf_sample():
    cfg = taco.config("shakespeare", "small")
    assert (cfg.num_clients, cfg.model, cfg.model_args, cfg.lr) == (10, "lstm", {"hidden": 64}, 1.0)


def test_table5_targets():
    assert taco.target("fmnist", "paper", 0.2) == 0.70
    assert taco.target("fmnist", "small", 0.7136) == 0.67  # ⌊95 × 0.7136⌋ / 100
    assert taco.target("adult", "ci", 0.40) == 0.38


def test_table7_runs_one_hundred_clients():
    assert taco.scalability_config("femnist", "paper", "STEM").num_clients == 100
    small = taco.scalability_config("femnist", "small", "STEM")
    assert (small.num_clients, small.algorithm, small.partition_args) == (100, "stem", {"phi": 0.2})


@pytest.mark.parametrize("scale, seeds", [("paper", [3, 4, 5]), ("small", [3, 4, 5]), ("ci", [3])])
def test_table7_lists_its_budget_seeds(scale, seeds):
    listed = taco.runs("table7_scalability", scale, seed=3)
    assert len(listed) == 3 * 8 * len(seeds)  # data sets × (seven methods + TACO with detection off) × seeds
    assert sorted({c.seed for c in listed.values()}) == seeds
    assert listed[f"adult/TACO, detection off/seed {seeds[-1]}"].algorithm_args["detect"] is False


def _history(accuracies, seconds, diverged=False):
    """A History with the given per-round test accuracy (round 0 first) and slowest-client seconds."""
    import pandas as pd

    from fedkit.history import History

    rounds = pd.DataFrame({"round": range(len(accuracies)), "test_accuracy": accuracies,
                           "client_seconds_max": [float("nan")] + list(seconds)})
    return History({}, rounds, pd.DataFrame({"client": [0], "expelled": [0]}), diverged)


def test_table5_rows_by_hand():
    """Table V's wiring of the target table: target, rounds and client time to it, Fig. 4's marks and Table V's
    cells, computed by hand."""
    from fedkit import report

    runs = {("fmnist", m): _history([0.1, 0.5, 0.8], [1.0, 1.0]) for m in taco.METHODS}
    runs["fmnist", "FedProx"] = _history([0.1, 0.3, 0.4], [1.0, 1.0])  # never reaches the target
    runs["fmnist", "STEM"] = _history([0.1, 0.78, 0.9], [2.0, 2.0])  # reaches it in round 1, at 2 s
    runs["fmnist", "FedACG"] = _history([0.1, 0.7, 0.9], [4.0, 4.0])  # round 2, at 8 s: 4× FedAvg's time → "o"
    runs["fmnist", "Scaffold"] = _history([0.1, float("nan")], [1.0], diverged=True)
    table = report.target_table(runs, "FedAvg", lambda d, fedavg: taco.target(d, "small", fedavg.final_accuracy),
                                taco.TABLE5, slow=taco.SLOW, label=lambda d: taco.label(d, "small"))
    table = table.set_index("method")
    assert (table["target"] == 0.76).all()  # ⌊95 × 0.8⌋ / 100
    assert table.loc["FedAvg", "rounds_to_target"] == 2 and table.loc["FedAvg", "time_to_target"] == 2.0
    assert table.loc["STEM", "rounds_to_target"] == 1 and table.loc["STEM", "vs_fedavg_time"] == 1.0
    assert table.loc["FedACG", "vs_fedavg_time"] == 4.0 and table.loc["FedACG", "time_mark"] == "o"
    assert table.loc["FedProx", "time_mark"] == "×" and table.loc["Scaffold", "time_mark"] == "×"
    assert table.loc["STEM", "round_seconds_median"] == 2.0
    assert list(table.loc[["FedAvg", "FedProx", "Scaffold"], "fedkit"]) == ["80.00 (2)", "40.00 (×)", "× (diverged)"]
    assert table.loc["TACO", "paper"] == "73.28 (59)" and table.loc["TACO", "paper_accuracy"] == 73.28
    relative = report.relative(table.reset_index(), "FedAvg")
    assert relative.loc["STEM", "fmnist"] == 2.0 and relative.loc["FedACG", "fmnist"] == 4.0


def test_drawn_once_keeps_one_data_set_per_substitute_below_paper_scale():
    import pandas as pd

    table = pd.DataFrame({"dataset": ["fmnist", "svhn", "svhn", "cifar10", "cifar10"], "method": list("AABAB")})
    table["data used"] = [taco.label(d, "small") for d in table["dataset"]]
    drawn = taco.drawn_once(table, "small")
    assert list(drawn["dataset"]) == ["fmnist", "cifar10", "cifar10"]
    assert list(drawn["data used"].unique()) == ["fmnist", "cifar10 (substitute: cifar10_subset); svhn's runs too"]
    assert taco.drawn_once(table, "paper").equals(table)  # at paper scale each data set is its own


def test_table5_cells_give_the_papers_accuracy_as_a_number():
    import math

    from fedkit import report

    assert [report.paper_percent(c) for c in ("71.36 (85)", "36.69 (×)", "67.14 (100+)")] == [71.36, 36.69, 67.14]
    assert math.isnan(report.paper_percent("× (diverged)"))


def _timed(seconds_by_round, steps=10):
    """A History whose clients (two per round) took the given seconds in each round, ``steps`` local steps each."""
    import pandas as pd

    from fedkit.history import History

    clients = pd.DataFrame([{"round": r, "client": c, "seconds": s / 2, "steps": steps}
                            for r, s in enumerate(seconds_by_round, start=1) for c in (0, 1)])
    return History({}, pd.DataFrame({"round": [0], "test_accuracy": [0.1]}), clients)


def test_table1_seconds_per_100_updates_drop_the_warm_up_round():
    # rounds of 2 × 10 steps: 5 s (warm-up, dropped), then 0.2, 0.4, 0.3 s → 1, 2, 1.5 s per 100 steps: median 1.5
    assert taco.seconds_per_100_updates(_timed([5.0, 0.2, 0.4, 0.3])) == pytest.approx(1.5)


def test_table1_overhead_is_over_fedavg_at_the_same_data_set_and_seed():
    import pandas as pd

    rows = pd.DataFrame({"dataset": ["fmnist"] * 4 + ["svhn"] * 2,
                         "method": ["FedAvg", "STEM", "FedAvg", "STEM", "FedAvg", "TACO"],
                         "seed": [0, 0, 1, 1, 0, 0], "seconds per 100 updates": [1.0, 1.5, 2.0, 2.2, 4.0, 3.0]})
    table = taco.table1(rows)
    assert list(table.columns) == ["dataset", "method", "seed", "seconds per 100 updates", "paper seconds",
                                   "overhead %", "paper overhead %"]
    assert list(table["overhead %"]) == pytest.approx([0.0, 50.0, 0.0, 10.0, 0.0, -25.0])
    assert list(table["paper seconds"].iloc[:2]) == [0.323, 0.455] and pd.isna(table["paper seconds"].iloc[5])
    assert table["paper overhead %"].iloc[1] == pytest.approx(100 * (0.455 / 0.323 - 1))
    assert pd.isna(table["paper overhead %"].iloc[5])  # the paper has no TACO column


def test_table5_target_tables_one_row_per_seed_with_each_seeds_own_target():
    runs = {(("fmnist", m), s): _history([0.1, 0.5, 0.8 if s == 0 else 0.6], [1.0, 1.0])
            for s in (0, 1) for m in taco.METHODS}
    runs[("fmnist", "STEM"), 1] = _history([0.1, 0.6, 0.6], [3.0, 3.0])
    table = taco.target_tables(runs, "small")
    assert len(table) == 2 * len(taco.METHODS) and list(table.columns[2:4]) == ["method", "seed"]
    at = table.set_index(["method", "seed"])
    assert at.loc[("FedAvg", 0), "target"] == 0.76 and at.loc[("FedAvg", 1), "target"] == 0.57  # ⌊95 × final⌋ / 100
    assert at.loc[("FedAvg", 0), "rounds_to_target"] == 2 and at.loc[("FedAvg", 1), "rounds_to_target"] == 2
    assert at.loc[("STEM", 1), "rounds_to_target"] == 1 and at.loc[("STEM", 1), "vs_fedavg_time"] == 1.5  # 3 s / 2 s
    assert at.loc[("STEM", 0), "vs_fedavg_time"] == 1.0


@pytest.mark.parametrize("notebook", ["table1_compute_time", "table5_fig4_fig5_shakespeare"])
def test_seeded_notebooks_list_their_default_seeds(notebook):
    for scale, n in taco.SEEDS.items():
        listed = taco.runs(notebook, scale, seed=4)
        assert {c.seed for c in listed.values()} == set(range(4, 4 + n)), scale
    ci = taco.runs(notebook, "ci")
    assert [label for label in ci if label.endswith("?")] == (
        ["seed 0/shakespeare/TACO, detection off?"] if "shakespeare" in notebook else [])


def test_table1_and_shakespeare_claims_read_the_seed_column(tmp_path):
    """The claims decide from the CSVs as the notebooks write them (one row per seed), with no few-seeds reason."""
    import pandas as pd

    from fedkit import ledger
    from fedkit.papers import taco_claims

    (tmp_path / "taco").mkdir()
    rows = pd.DataFrame([{"dataset": "fmnist", "method": m, "seed": s, "seconds per 100 updates": base * factor}
                         for s, base in enumerate([1.0, 1.1, 0.9]) for m, factor in
                         zip(taco.TABLE1_METHODS, [1.0, 1.2, 1.05, 1.6, 1.15, 1.01])])
    taco.table1(rows).to_csv(tmp_path / "taco" / "table1_compute_time.csv", index=False)
    claims = {c.id: c for c in taco_claims.CLAIMS}
    for cid, label in [("taco-table1-fmnist-stem", "reproduced"), ("taco-table1-fmnist-fedprox", "reproduced")]:
        verdict = ledger.decide(claims[cid], "small", tmp_path)
        assert (verdict.label, verdict.seeds) == (label, 3), verdict
    shakespeare = [c for c in taco_claims.CLAIMS if "shakespeare" in c.id or c.id.startswith("taco-table1")]
    assert shakespeare and all(c.measure.seed == "seed" for c in shakespeare if c.measure is not None)


def test_seeded_labels_seed_first_keep_a_conditional_run_last():
    from fedkit.config import Config
    from fedkit.papers import seeded

    listed = {"a": Config(), "b?": Config(algorithm="fedprox")}
    out = seeded(listed, [3, 4], seed_first=True)
    assert list(out) == ["seed 3/a", "seed 3/b?", "seed 4/a", "seed 4/b?"]
    assert [c.seed for c in out.values()] == [3, 3, 4, 4] and out["seed 4/b?"].algorithm == "fedprox"
    assert list(seeded(listed, [3, 4])) == ["a/seed 3", "a/seed 4", "b?/seed 3", "b?/seed 4"]


@pytest.mark.parametrize("notebook", ["table6_ablation", "table8_freeloader_detection", "fig6_tailored_baselines"])
def test_every_setting_runs_at_every_seed_of_the_scale(notebook):
    for scale, n in taco.SEEDS.items():
        listed = taco.runs(notebook, scale)
        settings = {label.rsplit("/seed ", 1)[0] for label in listed}
        assert len(listed) == len(settings) * n, scale
        assert {c.seed for c in listed.values()} == set(range(n)), scale


def test_untimed_runs_take_the_faster_engine_below_paper_scale():
    # a timed run is trained client by client so that its client times are real; one whose times no figure reads
    # (Figs. 6-7, Tables II, VI-VIII) needs no such clock, and differs from the timed config only in its engine
    for scale in ("ci", "small"):
        timed, untimed = taco.config("fmnist", scale), taco.config("fmnist", scale, timed=False)
        assert (timed.engine, untimed.engine) == ("sequential", "auto")
        assert untimed.replace(engine="sequential") == timed
    assert taco.config("fmnist", "paper", timed=False) == taco.config("fmnist", "paper")
    assert taco.scalability_config("adult", "small", timed=False).engine == "auto"


@pytest.mark.parametrize("scale, every", [("ci", 1), ("small", 10), ("paper", 25)])
def test_fig7_long_runs_test_the_grids_last_round(scale, every):
    """The notebook reads the long runs at the grid's T: at paper T = 100, so every 33rd round would miss it."""
    grid = taco.config("mnist", scale, timed=False)
    long = taco.run_length_configs(scale)
    assert sorted(long) == [0.0, 1 / grid.local_steps, 1.0]
    for c in long.values():
        assert c.eval_every == every and grid.rounds % c.eval_every == 0 and c.rounds > grid.rounds
