"""DRAG's eqs. 6–14, robust DRAG, FLTrust, AdaBest and the random-scaling attack, by hand and in closed form on the
toy quadratic clients (algorithms-seed §4.2–4.6 and the invariants of §4.9)."""
import numpy as np
import pytest
import torch

from fedkit import Config, ConfigError, run
from fedkit.algorithms import RoundInfo, Settings, make_algorithm
from fedkit.algorithms.drag import divergence, dragged
from fedkit.federation import Federation
from fedkit.papers import drag as paper
from tests.test_algorithms import W0, client_problem, final_weights, local_gd, toy_config

ENGINES = ["sequential", "vectorized"]
K, LR = 3, 0.15


def info(n, t=1, root_delta=None):
    return RoundInfo(t, clients=torch.arange(n), sizes=torch.ones(n), steps=torch.full((n,), float(K)), lr=LR,
                     root_delta=root_delta)


def vec(*rows):
    return torch.tensor(rows, dtype=torch.float64)


# ---- eqs. 10, 11 and 14 on hand-computable vectors
def test_degree_of_divergence_is_c_times_one_minus_cosine():
    g = vec([1.0, 0.0], [0.0, 2.0], [-3.0, 0.0], [0.0, 0.0])
    lam, cos = divergence(g, torch.tensor([2.0, 0.0], dtype=torch.float64), 0.25)
    np.testing.assert_allclose(cos, [1.0, 0.0, -1.0, 0.0])
    np.testing.assert_allclose(lam, [0.0, 0.25, 0.5, 0.0])  # eq. 10 in [0, 2c]; a zero upload has no direction: 0


def test_eq_11_and_eq_14_by_hand():
    g, r = vec([3.0, 4.0]), torch.tensor([0.0, 2.0], dtype=torch.float64)  # ‖g‖ = 5, ‖r‖ = 2, cos = 0.8
    lam, _ = divergence(g, r, 0.25)
    assert lam.item() == pytest.approx(0.05)
    # eq. 11: 0.95·(3, 4) + 0.05·(5/2)·(0, 2)
    np.testing.assert_allclose(dragged(g, r, lam, robust=False)[0], [2.85, 4.05])
    # eq. 14: 0.95·(2/5)·(3, 4) + 0.05·(0, 2)
    np.testing.assert_allclose(dragged(g, r, lam, robust=True)[0], [1.14, 1.62])


def test_a_reversed_upload_is_neutralised_at_c_quarter_and_reversed_back_at_c_half():
    r = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    g = -7.0 * r[None]  # reversed and scaled
    for c, expected in [(0.25, 0 * r), (0.5, r), (0.1, -0.6 * r)]:  # (4c − 1)·r
        lam, _ = divergence(g, r, c)
        np.testing.assert_allclose(dragged(g, r, lam, robust=True)[0], expected, atol=1e-12)


def test_norm_bounds_for_c_at_most_half():
    gen = torch.Generator().manual_seed(0)
    g, r = torch.randn(50, 6, generator=gen, dtype=torch.float64), torch.randn(6, generator=gen, dtype=torch.float64)
    for c in (0.1, 0.25, 0.5):
        lam, _ = divergence(g, r, c)
        assert (torch.linalg.vector_norm(dragged(g, r, lam, False), dim=1) <= g.norm(dim=1) + 1e-12).all()
        assert (torch.linalg.vector_norm(dragged(g, r, lam, True), dim=1) <= r.norm() + 1e-12).all()


def test_an_upload_along_r_is_left_alone_or_only_rescaled():
    r = torch.tensor([0.0, 3.0], dtype=torch.float64)
    g = vec([0.0, 0.5])
    lam, _ = divergence(g, r, 0.9)
    assert lam.item() == 0.0
    np.testing.assert_allclose(dragged(g, r, lam, False)[0], [0.0, 0.5])
    np.testing.assert_allclose(dragged(g, r, lam, True)[0], [0.0, 3.0])


def test_zero_reference_leaves_uploads_unchanged():
    g, r = vec([1.0, 2.0], [0.0, -1.0]), torch.zeros(2, dtype=torch.float64)
    lam, _ = divergence(g, r, 0.5)
    np.testing.assert_allclose(dragged(g, r, lam, False), g)


# ---- the server step: eq. 6's reference over rounds, eq. 8's mean, θ + Δ
def test_reference_starts_from_the_first_uploads_and_then_follows_eq_6():
    alg = make_algorithm("drag", Settings(num_clients=2), c=0.5, alpha=0.3)
    w = torch.zeros(2, dtype=torch.float64)
    state = alg.init(w, None)
    g0 = vec([2.0, 0.0], [0.0, 2.0])  # r^0 = (1, 1): both at 45°, λ = 0.5(1 − 1/√2)
    w1, state, metrics = alg.aggregate(w, state, {"delta": g0}, info(2))
    lam = 0.5 * (1 - 2 ** -0.5)
    v = (1 - lam) * g0.numpy() + lam * (2 / 2 ** 0.5) * np.array([1.0, 1.0])
    np.testing.assert_allclose(metrics["lambda"], [lam, lam])
    np.testing.assert_allclose(w1, v.mean(0))  # θ^1 = θ^0 + Δ^0 (the "+" of eqs. 3–5, not Step 3's "−")
    r1 = 0.7 * np.array([1.0, 1.0]) + 0.3 * v.mean(0)  # eq. 6
    g1 = vec([1.0, 0.0])
    _, _, metrics = alg.aggregate(w1, state, {"delta": g1}, info(1, t=2))
    np.testing.assert_allclose(metrics["cosine"], [r1[0] / np.linalg.norm(r1)])


@pytest.mark.parametrize("engine", ENGINES)
def test_drag_with_c_zero_is_uniform_fedavg(engine):
    base = dict(engine=engine, rounds=3, clients_per_round=2)
    np.testing.assert_allclose(final_weights(toy_config(algorithm="drag", algorithm_args={"c": 0.0}, **base)),
                               final_weights(toy_config(algorithm="fedavg", algorithm_args={"weighting": "uniform"},
                                                        **base)), rtol=1e-6)


def np_drag(g, r, c, robust=False, adaptive=True):
    cos = g @ r / (np.linalg.norm(g, axis=1) * np.linalg.norm(r))
    lam = c * (1 - cos)[:, None] if adaptive else np.full((len(g), 1), c)
    gn, rn = np.linalg.norm(g, axis=1)[:, None], np.linalg.norm(r)
    return (1 - lam) * rn / gn * g + lam * r if robust else (1 - lam) * g + lam * gn / rn * r


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("adaptive", [True, False])
def test_three_rounds_of_drag_with_partial_participation_match_numpy(engine, adaptive):
    cfg = toy_config(engine=engine, rounds=3, clients_per_round=3, algorithm="drag",
                     algorithm_args={"c": 0.4, "alpha": 0.6, "adaptive": adaptive})
    b, a, sampled = client_problem(cfg)
    w, r = np.array(W0), None
    for clients in sampled:
        g = np.array([local_gd(w, b[i], a[i], K, LR) - w for i in clients])
        r = g.mean(0) if r is None else r
        delta = np_drag(g, r, 0.4, adaptive=adaptive).mean(0)
        w, r = w + delta, 0.4 * r + 0.6 * delta
    np.testing.assert_allclose(final_weights(cfg), w, rtol=1e-5, atol=1e-6)


# ---- the root reference: robust DRAG and FLTrust
def root_problem(cfg):
    fed = Federation(cfg)
    row = fed.x_train[fed.root[0]].double().numpy()
    return row[:2], row[2:].reshape(2, 2)


@pytest.mark.parametrize("engine", ENGINES)
def test_robust_drag_drags_toward_the_servers_own_root_update(engine):
    cfg = toy_config(engine=engine, rounds=2, algorithm="drag_robust", algorithm_args={"c": 0.3, "root_samples": 1})
    b, a, sampled = client_problem(cfg)
    rb, ra = root_problem(cfg)
    w = np.array(W0)
    for clients in sampled:
        g = np.array([local_gd(w, b[i], a[i], K, LR) - w for i in clients])
        r = local_gd(w, rb, ra, K, LR) - w  # eqs. 12–13
        w = w + np_drag(g, r, 0.3, robust=True).mean(0)
    np.testing.assert_allclose(final_weights(cfg), w, rtol=1e-5, atol=1e-6)


def test_robust_drag_ignores_any_positive_rescaling_of_an_upload():
    alg = make_algorithm("drag_robust", Settings(num_clients=3), c=0.5)
    gen = torch.Generator().manual_seed(1)
    g, r = torch.randn(3, 5, generator=gen, dtype=torch.float64), torch.randn(5, generator=gen, dtype=torch.float64)
    w = torch.zeros(5, dtype=torch.float64)
    plain, _, _ = alg.aggregate(w, {}, {"delta": g}, info(3, root_delta=r))
    scaled, _, _ = alg.aggregate(w, {}, {"delta": g * torch.tensor([[0.01], [3.0], [250.0]])}, info(3, root_delta=r))
    np.testing.assert_allclose(scaled, plain, rtol=1e-12)


def test_fltrust_by_hand():
    alg = make_algorithm("fltrust", Settings(num_clients=3))
    g0 = torch.tensor([1.0, 0.0], dtype=torch.float64)
    g = vec([2.0, 0.0], [0.0, 3.0], [1.0, 1.0])  # TS = 1, 0, 1/√2; rescaled to ‖g0‖ = 1
    w1, _, metrics = alg.aggregate(torch.zeros(2, dtype=torch.float64), {}, {"delta": g}, info(3, root_delta=g0))
    s = 2 ** -0.5
    np.testing.assert_allclose(metrics["trust"], [1.0, 0.0, s])
    np.testing.assert_allclose(w1, (np.array([1.0, 0.0]) + s * np.array([s, s])) / (1 + s))
    w2, _, metrics = alg.aggregate(torch.ones(2, dtype=torch.float64), {}, {"delta": -g}, info(3, root_delta=g0))
    np.testing.assert_allclose(w2, [1.0, 1.0])  # every trust score 0: the model stays
    assert metrics["trust"].sum() == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_fltrust_run_matches_numpy(engine):
    cfg = toy_config(engine=engine, rounds=2, algorithm="fltrust", algorithm_args={"root_samples": 1})
    b, a, sampled = client_problem(cfg)
    rb, ra = root_problem(cfg)
    w = np.array(W0)
    for clients in sampled:
        g = np.array([local_gd(w, b[i], a[i], K, LR) - w for i in clients])
        g0 = local_gd(w, rb, ra, K, LR) - w
        ts = np.maximum(0, g @ g0 / (np.linalg.norm(g, axis=1) * np.linalg.norm(g0)))
        w = w + (ts[:, None] * g * np.linalg.norm(g0) / np.linalg.norm(g, axis=1)[:, None]).sum(0) / ts.sum()
    np.testing.assert_allclose(final_weights(cfg), w, rtol=1e-5, atol=1e-6)


# ---- AdaBest
@pytest.mark.parametrize("engine", ENGINES)
def test_adabest_matches_numpy_with_stale_clients(engine):
    mu, beta = 0.3, 0.6
    cfg = toy_config(engine=engine, rounds=6, clients_per_round=2, algorithm="adabest",
                     algorithm_args={"mu": mu, "beta": beta})
    b, a, sampled = client_problem(cfg)
    w, avg_prev = np.array(W0), None
    h, last = np.zeros((4, 2)), np.zeros(4)
    for t, clients in enumerate(sampled, start=1):
        ends = []
        for i in clients:
            end = local_gd(w, b[i], a[i], K, LR, lambda _, i=i: -h[i])  # ∇(F_i − ⟨h_i, θ⟩)
            h[i] = h[i] / (t - last[i]) + mu * (w - end)
            last[i] = t
            ends.append(end)
        avg = np.mean(ends, axis=0)
        w = avg if avg_prev is None else avg - beta * (avg_prev - avg)
        avg_prev = avg
    # client 1 trains in rounds 1, 2, 4, 5: its h_1 is decayed by 1/2 in round 4 and used in round 5
    assert [t for t, s in enumerate(sampled, start=1) if 1 in s] == [1, 2, 4, 5]
    h_run = run(cfg, cache=False, progress=False)
    np.testing.assert_allclose(h_run.weights.double().numpy(), w, rtol=1e-5, atol=1e-6)
    assert "test_accuracy_avg" in h_run.rounds  # θ̄^t is reported too


# ---- the attack
def attack_config(**changes):
    base = dict(dataset="mnist_5k", model="fc500", partition="qskew", partition_args={"q": 0.1}, num_clients=10,
                rounds=2, local_steps=2, lr=0.1, threat="random_scaling", threat_args={"count": 4}, engine="sequential")
    return Config(**{**base, **changes})


def test_attackers_upload_p_times_their_honest_update():
    fed = Federation(attack_config())
    s = fed.initial()
    sent = fed.send(s)
    result = fed.engine.train(sent.inputs, sent.plans, sent.buffers)
    rnd = fed.receive(sent, result)
    p = fed.threat.scales(sent.clients, 1)
    bad = fed.threat.bad[sent.clients]
    assert bad.sum() == 4 and (p[~bad] == 1).all() and (p[bad] != 1).all()
    np.testing.assert_allclose(rnd.uploads["delta"], torch.as_tensor(p, dtype=torch.float32)[:, None]
                               * result.uploads["delta"], rtol=1e-6)
    np.testing.assert_allclose(rnd.metrics["attack_scale"], p)


def test_attack_draws_are_fresh_normal_and_independent_of_the_algorithm():
    a, b = Federation(attack_config()), Federation(attack_config(algorithm="fltrust",
                                                                algorithm_args={"root_samples": 50}))
    assert (a.threat.bad == b.threat.bad).all()
    clients = np.flatnonzero(a.threat.bad)
    np.testing.assert_array_equal(a.threat.scales(clients, 7), b.threat.scales(clients, 7))
    draws = np.concatenate([a.threat.scales(clients, t) for t in range(1, 2001)])
    assert len(np.unique(draws)) == len(draws)  # fresh per attacker and round
    assert draws.var() == pytest.approx(3.0, rel=0.05) and abs(draws.mean()) < 0.1  # p ~ N(0, σ² = 3)


def test_history_marks_attackers_and_logs_their_scale():
    h = run(attack_config(algorithm="drag_robust", algorithm_args={"root_samples": 100}), cache=False,
            progress=False)
    attackers = h.clients[~h.clients["honest"]]
    assert attackers["client"].nunique() == 4 and len(attackers) == 8
    assert (h.clients.loc[h.clients["honest"], "attack_scale"] == 1).all()
    assert {"lambda", "cosine"} <= set(h.clients.columns)


# ---- bad input
@pytest.mark.parametrize("algorithm,args,match", [
    ("drag", {"c": 1.5}, "c must lie in \\[0, 1\\], got 1.5"),
    ("drag", {"alpha": 0}, "alpha must lie in \\(0, 1\\], got 0"),
    ("drag", {"c": "0.25x"}, "algorithm 'drag': c must be a number, got '0.25x'"),
    ("drag_robust", {"root_samples": 0}, "root_samples must lie in \\[1, inf\\), got 0"),
    ("fltrust", {"root_samples": 2.5}, "root_samples must be an integer, got 2.5"),
    ("adabest", {"beta": 2.0}, "beta must lie in \\[0, 1\\], got 2.0"),
    ("adabest", {"mu": -1.0}, "mu must lie in \\[0, inf\\), got -1.0"),
])
def test_bad_hyper_parameters_name_the_value(algorithm, args, match):
    with pytest.raises(ConfigError, match=match):
        toy_config(algorithm=algorithm, algorithm_args=args)


@pytest.mark.parametrize("args,match", [
    ({"count": 4, "variance": -1.0}, "variance must lie in \\(0, inf\\), got -1.0"),
    ({"count": 0}, "count must lie in \\[1, inf\\), got 0"),
    ({}, "exactly one of fraction and count"),
    ({"fraction": 1.5}, "fraction must lie in \\(0, 1\\), got 1.5"),
])
def test_bad_attack_options_name_the_value(args, match):
    with pytest.raises(ConfigError, match=match):
        attack_config(threat_args=args)


def test_too_many_attackers_or_root_samples_are_refused():
    with pytest.raises(ConfigError, match="random_scaling: 10 of them among num_clients=10"):
        Federation(attack_config(threat_args={"count": 10}))
    with pytest.raises(ConfigError, match="root_samples=9000 exceeds"):
        Federation(attack_config(algorithm="fltrust", algorithm_args={"root_samples": 9000}))
    for algorithm in ("adabest", "drag", "drag_robust"):
        with pytest.raises(ConfigError, match=f"{algorithm} has no server learning rate.*server_lr=0.5"):
            toy_config(algorithm=algorithm, server_lr=0.5)


# ---- the paper's settings
@pytest.mark.parametrize("scale", ["paper", "small", "ci"])
def test_every_figure_and_method_builds_a_valid_config(scale):
    for figure, (data, setting) in paper.FIGURES.items():
        methods = paper.DRIFT_METHODS if setting in ("full", "partial") else paper.BYZANTINE_METHODS
        for method in methods:
            cfg = paper.config(figure, scale, method)
            assert cfg.local_steps == 5 and cfg.lr == 0.1 and cfg.partition == "qskew"
            if setting in ("low", "high"):
                assert cfg.threat == "random_scaling" and cfg.threat_args["count"] == paper.ATTACKERS[data]
                assert cfg.num_clients == cfg.clients_per_round == 10
                assert cfg.partition_args["q"] == (1.0 if setting == "high" else 0.1)
            else:
                assert cfg.stop_accuracy == paper.target(figure, scale) and cfg.partition_args["q"] == 1.0
    assert paper.config("fig3b", "paper", "DRAG").algorithm_args == {"c": 0.25, "alpha": 0.6}
    assert paper.config("fig4a", "paper", "DRAG").algorithm_args == {"c": 0.1, "alpha": 1.0}
    assert paper.config("fig4b", "paper", "SCAFFOLD").clients_per_round == 5
    assert paper.config("fig6", "paper", "DRAG", algorithm_args={"c": 0.25}).algorithm_args["c"] == 0.25
    with pytest.raises(ValueError, match="unknown DRAG figure 'fig9'"):
        paper.config("fig9", "small")


def test_mnist_stands_in_for_emnist_at_paper_scale_only_where_emnist_is_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDKIT_DATA", str(tmp_path))  # an empty data root: no EMNIST-balanced here
    assert paper.paper_stands_in("emnist") and not paper.paper_stands_in("cifar10")
    drift, byzantine = paper.config("fig3a", "paper", "DRAG"), paper.config("fig8", "paper", "FLTrust")
    assert (drift.dataset, drift.model, drift.num_clients, drift.rounds) == ("mnist", "fc500", 40, 1000)
    assert drift.stop_accuracy == paper.target("fig3a", "paper") == paper.target("fig3a", "small") == 0.9
    assert (byzantine.dataset, byzantine.rounds, paper.classes("emnist", "paper")) == ("mnist", 300, 10)
    assert "stands in for EMNIST-balanced" in paper.label("fig7", "paper")
    assert paper.config("fig5", "paper", "DRAG").dataset == "cifar10"  # CIFAR-10 has no paper-scale stand-in

    import fedkit.data

    monkeypatch.setattr(fedkit.data, "load_dataset", lambda name, **args: None)  # EMNIST-balanced loads
    assert not paper.paper_stands_in("emnist")
    cfg = paper.config("fig3a", "paper", "DRAG")
    assert (cfg.dataset, cfg.stop_accuracy, paper.classes("emnist", "paper")) == ("emnist", 0.8, 47)
    assert paper.label("fig3a", "paper") == "EMNIST-balanced, FC-500"
