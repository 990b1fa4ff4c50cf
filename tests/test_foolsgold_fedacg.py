"""FoolsGold (both variants) and FedACG against hand-written NumPy, on the quadratic toy and on hand-made uploads.

The toy makes local training deterministic GD on f_i(w) = ½ (w − b_i)ᵀ A_i (w − b_i); K·η_l = 0.45 ≠ 1.
"""
import math

import numpy as np
import pytest
import torch

from fedkit import ConfigError, run
from fedkit.algorithms import ALGORITHMS, RoundInfo, Settings, make_algorithm
from fedkit.algorithms.foolsgold import foolsgold_weights
from fedkit.federation import Federation
from fedkit.layout import Layout
from fedkit.optim import SGD
from tests.test_algorithms import W0, client_problem, final_weights, local_gd, toy_config

ENGINES = ["sequential", "vectorized"]
K, LR = 3, 0.15


def test_registered():
    assert {"foolsgold", "fedacg"} <= set(ALGORITHMS)


# ---------------------------------------------------------------- FoolsGold, NumPy reference


def np_cos(u, v):
    nu, nv = np.linalg.norm(u), np.linalg.norm(v)
    return 0.0 if nu == 0 or nv == 0 else float(u @ v / (nu * nv))


def np_foolsgold(h, kappa=1.0, pardon=True):
    """Canonical FoolsGold (baselines §4.1 steps 2–6) with loops; returns the normalised weights."""
    n = len(h)
    cs = np.array([[np_cos(h[i], h[j]) if i != j else 0.0 for j in range(n)] for i in range(n)])
    v = cs.max(1)
    pardoned = cs.copy()
    for i in range(n):
        for j in range(n):
            if pardon and v[i] < v[j]:
                pardoned[i, j] = cs[i, j] * v[i] / v[j]
    a = np.clip(1 - pardoned.max(1), 0, 1)
    if a.max() == 0:
        return np.full(n, 1 / n)
    a = a / a.max()
    a[a == 1] = 0.99
    with np.errstate(divide="ignore"):
        a = np.clip(kappa * (np.log(a / (1 - a)) + 0.5), 0, 1)
    return a / a.sum() if a.sum() > 0 else np.full(n, 1 / n)


# a small network's layout: the output layer's weight is the last 2-D tensor, flat positions 9..14
LAYOUT = [("hidden.weight", torch.Size([3, 2])), ("hidden.bias", torch.Size([3])),
          ("out.weight", torch.Size([2, 3])), ("out.bias", torch.Size([2]))]
OUT = slice(9, 15)
DIM = 17


def layout_of(tensors):
    """The Layout of a module whose parameters have exactly these (dotted) names and shapes."""
    root = torch.nn.Module()
    for name, shape in tensors:
        *path, leaf = name.split(".")
        module = root
        for part in path:
            if not hasattr(module, part):
                module.add_module(part, torch.nn.Module())
            module = getattr(module, part)
        module.register_parameter(leaf, torch.nn.Parameter(torch.zeros(shape)))
    return Layout(root)


def configured(num_clients, server_lr=1.0, **args):
    settings = Settings(num_clients=num_clients, clients_per_round=num_clients, rounds=1, local_steps=K,
                        server_lr=server_lr, optimizer=SGD(lr=LR))
    return make_algorithm("foolsgold", settings, **args)


def init(alg, w, layout=LAYOUT):
    return alg.init(w, layout_of(layout))


def uploads_with_output(out_rows, seed=0):
    """Uploads [n, DIM] whose output-layer weights are ``out_rows`` and whose other entries are random."""
    out_rows = np.asarray(out_rows, dtype=np.float64)
    rows = np.random.default_rng(seed).normal(size=(len(out_rows), DIM))
    rows[:, OUT] = out_rows
    return rows


def aggregate(alg, state, w, rows, clients):
    ups = {"delta": torch.tensor(rows, dtype=torch.float32)}
    ids = torch.tensor(clients)
    rnd = RoundInfo(1, clients=ids, sizes=torch.ones(len(clients), dtype=torch.int64),
                    steps=torch.full((len(clients),), float(K)), lr=LR)
    return alg.aggregate(w, state, ups, rnd)


def test_foolsgold_sybils_down_weighted_honest_kept():
    # two near-identical sybils and one distinct honest client; the non-output coordinates are random and
    # must not matter
    alg = configured(3, server_lr=0.5)
    w = torch.linspace(-1, 1, DIM)
    state = init(alg, w)
    assert state["history"].shape == (3, 6)
    rows = uploads_with_output([[1.0, 0, 0, 0, 0, 0], [0, 2.0, 1.0, 0, 0, 0], [0, 2.0, 1.01, 0, 0, 0]])
    w_new, state, metrics = aggregate(alg, state, w, rows, [0, 1, 2])
    np.testing.assert_array_equal(metrics["fg_weight"].numpy(), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(w_new.numpy(), w.numpy() + 0.5 * rows[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(state["history"].numpy(), rows[:, OUT], rtol=1e-6)


def test_foolsgold_history_accumulates_over_rounds():
    # N = 4; round 1 samples {0, 1, 3}, round 2 {1, 2, 3}. In round 2 clients 1 and 3 upload the SAME Δ, but
    # their histories differ, so they are not treated as twins.
    rng = np.random.default_rng(1)
    alg = configured(4)
    w = torch.zeros(DIM)
    state = init(alg, w)
    r1 = rng.normal(size=(3, DIM))
    w1, state, m1 = aggregate(alg, state, w, r1, [0, 1, 3])
    r2 = rng.normal(size=(3, DIM))
    r2[2] = r2[0]
    w2, state, m2 = aggregate(alg, state, w1, r2, [1, 2, 3])

    history = np.zeros((4, 6))
    history[[0, 1, 3]] += r1[:, OUT]
    p1 = np_foolsgold(history[[0, 1, 3]])
    history[[1, 2, 3]] += r2[:, OUT]
    p2 = np_foolsgold(history[[1, 2, 3]])
    np.testing.assert_allclose(state["history"].numpy(), history, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m1["fg_weight"].numpy(), p1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m2["fg_weight"].numpy(), p2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w2.numpy(), p1 @ r1 + p2 @ r2, rtol=1e-5, atol=1e-5)
    assert m2["fg_weight"][0] > 0 and m2["fg_weight"][2] > 0  # twins by this round's Δ alone would get 0
    assert np_foolsgold(r2[:, OUT])[[0, 2]].max() == 0


def test_foolsgold_all_identical_uploads_fall_back_to_uniform():
    # every client has an identical twin → a = 0 everywhere (max a = 0, the NaN case of step 5) → uniform
    alg = configured(3)
    w = torch.ones(DIM)
    rows = np.tile(np.linspace(0.1, 1.7, DIM), (3, 1))
    w_new, state, metrics = aggregate(alg, init(alg, w), w, rows, [0, 1, 2])
    np.testing.assert_allclose(metrics["fg_weight"].numpy(), [1 / 3] * 3, rtol=1e-6)
    np.testing.assert_allclose(w_new.numpy(), 1 + rows[0], rtol=1e-6)
    assert torch.isfinite(state["history"]).all()


def test_foolsgold_weights_match_reference_on_random_histories():
    rng = np.random.default_rng(2)
    h = rng.normal(size=6) + rng.normal(size=(6, 6))  # honest clients that agree somewhat
    h[4] = h[3] + 0.05 * rng.normal(size=6)  # a near-duplicate of client 3
    h[5] = 2.0 * h[3] + 0.1 * rng.normal(size=6)  # and a scaled one
    zero = np.vstack([rng.normal(size=(3, 6)), np.zeros((1, 6))])  # a client whose history is zero
    for hist in (h, zero):
        for kappa in (1.0, 0.3, 0.1):  # κ < 1/5.1: the top weight κ(ln 99 + 0.5) stays below 1
            a = foolsgold_weights(torch.tensor(hist), kappa)
            np.testing.assert_allclose((a / a.sum()).numpy(), np_foolsgold(hist, kappa), rtol=1e-9, atol=1e-12)
    for kappa in (1.0, 0.3):  # the pardoning (step 3) changes these weights
        assert np.abs(np_foolsgold(h, kappa) - np_foolsgold(h, kappa, pardon=False)).max() > 0.1


def test_foolsgold_output_features_need_a_matrix():
    with pytest.raises(ConfigError, match="features='all'"):
        init(configured(4), torch.zeros(2), layout=[("w", torch.Size([2]))])
    alg = configured(4, features="all")
    init(alg, torch.zeros(2), layout=[("w", torch.Size([2]))])
    assert alg.feature_slice == slice(None)  # every parameter


@pytest.mark.parametrize("engine", ENGINES)
def test_foolsgold_original_on_toy_matches_reference(engine):
    # full runs, the history kept across rounds, partial participation; the toy model is one 2-vector, so
    # features="all"
    cfg = toy_config(engine=engine, algorithm="foolsgold", algorithm_args={"features": "all"},
                     clients_per_round=3, rounds=3, server_lr=0.8)
    b, a, sampled = client_problem(cfg)
    w, history, weights = np.array(W0), np.zeros((4, 2)), []
    for clients in sampled:
        deltas = np.array([local_gd(w, b[i], a[i], K, LR) - w for i in clients])
        history[clients] += deltas
        p = np_foolsgold(history[clients])
        weights.append(p)
        w = w + 0.8 * p @ deltas
    result = run(cfg, cache=False, progress=False)
    np.testing.assert_allclose(result.weights.double().numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.clients["fg_weight"].to_numpy(), np.concatenate(weights), atol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
def test_foolsgold_taco_one_round_matches_closed_form(engine):
    # ρ_i = max(0, cos(mean_j Δ_j, Δ_i)), x_1 = x_0 + η_g Σ ρ_i Δ_i / Σ ρ_i
    cfg = toy_config(engine=engine, algorithm="foolsgold", algorithm_args={"variant": "taco"}, server_lr=0.7)
    b, a, _ = client_problem(cfg)
    w0 = np.array(W0)
    deltas = np.array([local_gd(w0, b[i], a[i], K, LR) - w0 for i in range(4)])
    rho = np.array([max(0.0, np_cos(deltas.mean(0), d)) for d in deltas])
    assert rho.min() < 0.99 and np.ptp(rho) > 0.05  # the weights are not all equal: the test can tell
    expected = w0 + 0.7 * (rho @ deltas) / rho.sum()
    result = run(cfg, cache=False, progress=False)
    np.testing.assert_allclose(result.weights.double().numpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.clients["fg_weight"].to_numpy(), rho / rho.sum(), atol=1e-6)


def test_foolsgold_taco_clips_negative_cosines_and_guards_zero():
    alg = configured(3, variant="taco")
    w = torch.zeros(DIM)
    assert init(alg, w) == {}
    rows = np.zeros((3, DIM))
    rows[0, 0], rows[1, 0], rows[2, 0] = 1.0, 2.0, -0.5  # client 2 points against the mean
    _, _, metrics = aggregate(alg, {}, w, rows, [0, 1, 2])
    np.testing.assert_allclose(metrics["fg_weight"].numpy(), [0.5, 0.5, 0.0], atol=1e-7)
    rows[2, 0] = -3.0  # mean 0: every cosine is 0 → uniform
    w_new, _, metrics = aggregate(alg, {}, w, rows, [0, 1, 2])
    np.testing.assert_allclose(metrics["fg_weight"].numpy(), [1 / 3] * 3, rtol=1e-6)
    np.testing.assert_allclose(w_new.numpy(), rows.mean(0), atol=1e-6)


# ---------------------------------------------------------------- FedACG


def fedacg_reference(b, a, sampled, lam, beta, prox_factor, server_lr=1.0, lookahead=True):
    """FedACG (baselines §6): clients start from and are pulled toward x̃_t = x_t + λ m_t, Δ_i = y_i − x̃_t,
    m_{t+1} = λ m_t + η_g mean Δ_i, x_{t+1} = x_t + m_{t+1}; returns (x_T, m_T). ``lookahead=False`` is the
    pitfall of starting from (and pulling toward) x_t."""
    w, m = np.array(W0), np.zeros(2)
    for clients in sampled:
        anchor = w + lam * m if lookahead else w.copy()
        deltas = [local_gd(anchor, b[i], a[i], K, LR, lambda y: prox_factor * beta * (y - anchor)) - anchor
                  for i in clients]
        m = lam * m + server_lr * np.mean(deltas, axis=0)
        w = w + m
    return w, m


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("prox", "factor", "server_lr"), [("paper", 1.0, 1.0), ("code", 2.0, 0.7)])
def test_fedacg_matches_reference(engine, prox, factor, server_lr):
    lam, beta = 0.85, 0.4  # β large enough that the prox term (and its factor 2 in "code") shows
    cfg = toy_config(engine=engine, algorithm="fedacg", algorithm_args={"lam": lam, "beta": beta, "prox": prox},
                     clients_per_round=3, rounds=3, server_lr=server_lr)
    b, a, sampled = client_problem(cfg)
    expected, m = fedacg_reference(b, a, sampled, lam, beta, factor, server_lr)
    # the test can tell the look-ahead and the prox factor apart
    assert np.abs(expected - fedacg_reference(b, a, sampled, lam, beta, factor, server_lr, False)[0]).max() > 1e-2
    assert np.abs(expected - fedacg_reference(b, a, sampled, lam, beta, 3 - factor, server_lr)[0]).max() > 1e-3
    result = run(cfg, cache=False, progress=False)
    np.testing.assert_allclose(result.weights.double().numpy(), expected, rtol=1e-5, atol=1e-6)
    # what is evaluated is x_T, not the look-ahead x_T + λ m_T
    fed = Federation(cfg)
    _, loss = fed.evaluate(torch.tensor(expected, dtype=torch.float32))
    _, loss_ahead = fed.evaluate(torch.tensor(expected + lam * m, dtype=torch.float32))
    assert abs(loss - loss_ahead) > 1e-3
    assert math.isclose(result.rounds["test_loss"].iloc[-1], loss, rel_tol=1e-5, abs_tol=1e-6)


def test_fedacg_default_hyper_parameters_two_rounds():
    # TACO's β = 0.001 and λ = 0.85, full participation
    cfg = toy_config(algorithm="fedacg", rounds=2)
    b, a, sampled = client_problem(cfg)
    np.testing.assert_allclose(final_weights(cfg), fedacg_reference(b, a, sampled, 0.85, 0.001, 1.0)[0],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_fedacg_without_momentum_and_prox_is_fedavg(engine):
    common = dict(engine=engine, clients_per_round=3, rounds=2)
    acg = final_weights(toy_config(algorithm="fedacg", algorithm_args={"lam": 0.0, "beta": 0.0}, **common))
    avg = final_weights(toy_config(algorithm="fedavg", algorithm_args={"weighting": "uniform"}, **common))
    np.testing.assert_array_equal(acg, avg)


# ---------------------------------------------------------------- hyper-parameter validation


@pytest.mark.parametrize(("name", "args", "message"), [
    ("foolsgold", {"variant": "pairwise"}, "variant must be one of 'original', 'taco', got 'pairwise'"),
    ("foolsgold", {"features": "last"}, "features must be one of 'output', 'all', got 'last'"),
    ("foolsgold", {"confidence": 0}, "confidence must lie in (0, inf), got 0"),
    ("foolsgold", {"confidence": -1.5}, "confidence must lie in (0, inf), got -1.5"),
    ("foolsgold", {"confidence": float("nan")}, "confidence must be finite, got nan"),
    ("fedacg", {"lam": -0.1}, "lam must lie in [0, 1), got -0.1"),
    ("fedacg", {"lam": 1.0}, "lam must lie in [0, 1), got 1.0"),
    ("fedacg", {"beta": -1}, "beta must lie in [0, inf), got -1"),
    ("fedacg", {"beta": float("inf")}, "beta must be finite, got inf"),
    ("fedacg", {"prox": "half"}, "prox must be one of 'paper', 'code', got 'half'"),
    ("fedacg", {"weighting": "size"}, "weighting must be one of 'data', 'uniform', got 'size'"),
])
def test_bad_hyper_parameters_raise(name, args, message):
    with pytest.raises(ConfigError) as info:
        make_algorithm(name, **args)
    assert str(info.value) == f"algorithm {name!r}: {message}"
