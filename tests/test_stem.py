"""STEM's update equations against a hand-written NumPy recursion of the paper's algorithm, on the quadratic toy.

Local training there is deterministic (every minibatch gives the exact gradient A_i(w − b_i)), so each round
has a closed form. The reference uses the same starting convention as fedkit/algorithms/stem.py: d̄_0 = 0 plus
a first-round marker, so that the first call of round 1 sets d_1 = ∇f_i(x_0) without moving.
"""
import math

import numpy as np
import pytest
import torch

from fedkit import ConfigError, run
from fedkit.algorithms import Settings
from fedkit.algorithms.stem import Stem
from fedkit.engine import ClientInput
from fedkit.federation import Federation
from fedkit.optim import SGD
from tests.test_algorithms import W0, client_problem, final_weights, local_gd, toy_config

ENGINES = ["sequential", "vectorized"]


def stem_reference(b, a_mat, sampled, steps, lr, a, server_lr=1.0, weight_decay=0.0):
    """The paper's STEM written out: per step y ← y − η d, then d ← ∇f(y_new) + (1 − a)(d − ∇f(y_old)) on one
    minibatch; the server averages models (x ← x + η_g mean Δ) and momenta (d̄ ← mean d_K). Uniform weights."""
    w, d_bar, first = np.array(W0), np.zeros(2), True
    for clients in sampled:
        deltas, moms = [], []
        for i in clients:
            grad = lambda v: a_mat[i] @ (v - b[i]) + weight_decay * v
            y, d = w.copy(), d_bar.copy()
            for k in range(steps):
                y_next = y - lr * d
                correction = np.zeros(2) if (first and k == 0) else (1 - a) * (d - grad(y))
                d = grad(y_next) + correction
                y = y_next
            deltas.append(y - w)
            moms.append(d)
        w = w + server_lr * np.mean(deltas, axis=0)
        d_bar, first = np.mean(moms, axis=0), False
    return w, d_bar


def stem_config(a=0.2, **changes):
    return toy_config(algorithm="stem", algorithm_args={"a": a}, **changes)


def train(cfg):
    """Final global model and server state, round by round through Federation.round."""
    fed = Federation(cfg)
    s = fed.initial()
    for _ in range(cfg.rounds):
        s = fed.round(s).after
    return s.w, s.server


SETTINGS = {  # K ≥ 3 and K·η_l ≠ 1 everywhere
    "full-2-rounds": dict(rounds=2, local_steps=4, lr=0.15),  # K·η_l = 0.6
    "partial-3-rounds": dict(rounds=3, local_steps=3, lr=0.2, clients_per_round=2, server_lr=0.7),  # 0.6
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("setting", SETTINGS)
def test_matches_paper_recursion(engine, setting):
    s = SETTINGS[setting]
    cfg = stem_config(a=0.2, engine=engine, **s)
    b, a_mat, sampled = client_problem(cfg)
    expected, _ = stem_reference(b, a_mat, sampled, s["local_steps"], s["lr"], 0.2, s.get("server_lr", 1.0))
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-5, atol=1e-6)


def test_server_momentum_is_the_mean_of_the_clients_last_momenta():
    cfg = stem_config(a=0.35, rounds=3, local_steps=3, lr=0.2, clients_per_round=3, server_lr=0.8)
    b, a_mat, sampled = client_problem(cfg)
    w_ref, d_ref = stem_reference(b, a_mat, sampled, 3, 0.2, 0.35, 0.8)
    w, state = train(cfg)
    np.testing.assert_allclose(w.double().numpy(), w_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state["d_bar"].double().numpy(), d_ref, rtol=1e-5, atol=1e-6)
    # the first-round marker is the round index: the clients of the next round do not initialise
    nxt = ClientInput(w, {"d_bar": state["d_bar"]}, {}, torch.tensor(3.0), 0.2, cfg.rounds + 1)
    assert float(cfg.build_algorithm().local_init(nxt)[1]["init"]) == 0.0


def test_first_call_of_round_one_initialises_the_momentum():
    # d̄_0 convention: round 1's first call does not move and sets d_1 = ∇f_i(x_0) (no a-scaling), so with one
    # local step round 1 leaves x_0 unchanged and d̄_1 = mean_i A_i (x_0 − b_i)
    cfg = stem_config(rounds=1, local_steps=1)
    b, a_mat, _ = client_problem(cfg)
    w, state = train(cfg)
    np.testing.assert_array_equal(w.numpy(), np.array(W0, dtype=np.float32))
    expected = np.mean([a_mat[i] @ (np.array(W0) - b[i]) for i in range(4)], axis=0)
    np.testing.assert_allclose(state["d_bar"].double().numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_one_with_one_local_step_is_fedavg_one_round_late(engine):
    # a = 1, K = 1, server_lr = 1: every client's y_1 is the next global model, so d̄_t = mean ∇f_i(x_t) and STEM is
    # minibatch SGD = FedAvg(K = 1), shifted by the initialisation round (also under partial participation)
    common = dict(engine=engine, local_steps=1, lr=0.3, clients_per_round=2)
    stem = final_weights(stem_config(a=1.0, rounds=5, **common))
    fedavg = final_weights(toy_config(algorithm="fedavg", algorithm_args={"weighting": "uniform"}, rounds=4,
                                      **common))
    np.testing.assert_allclose(stem, fedavg, rtol=1e-6, atol=1e-6)


def test_a_one_is_memoryless_but_not_fedavg_with_several_local_steps():
    # a = 1: d_{k+1} = ∇f_i(y_{k+1}) (local SGD within a round), but each round's first step follows d̄_t, the mean of
    # the clients' last gradients at their own y_K; so for K ≥ 2 it is not FedAvg (the spec's "a = 1 recovers
    # FedAvg" holds only for K = 1, see the test above)
    cfg = stem_config(a=1.0, rounds=3, local_steps=3, lr=0.15)
    b, a_mat, sampled = client_problem(cfg)
    stem = final_weights(cfg)
    expected, _ = stem_reference(b, a_mat, sampled, 3, 0.15, 1.0)
    np.testing.assert_allclose(stem, expected, rtol=1e-5, atol=1e-6)
    # round 1 alone: the initialisation call, then K − 1 = 2 plain gradient steps from x_0
    w0 = np.array(W0)
    one = final_weights(stem_config(a=1.0, rounds=1, local_steps=3, lr=0.15))
    np.testing.assert_allclose(one, w0 + np.mean([local_gd(w0, b[i], a_mat[i], 2, 0.15) - w0 for i in range(4)], 0),
                               rtol=1e-5, atol=1e-6)
    fedavg = final_weights(toy_config(algorithm="fedavg", algorithm_args={"weighting": "uniform"}, rounds=3,
                                      local_steps=3, lr=0.15))
    assert np.abs(stem - fedavg).max() > 1e-2


@pytest.mark.parametrize("engine", ENGINES)
def test_sgd_weight_decay_is_an_l2_term_at_both_points(engine):
    cfg = stem_config(a=0.2, engine=engine, rounds=2, local_steps=3, lr=0.15, optimizer="sgd",
                      optimizer_args={"weight_decay": 0.3})
    b, a_mat, sampled = client_problem(cfg)
    expected, _ = stem_reference(b, a_mat, sampled, 3, 0.15, 0.2, weight_decay=0.3)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-5, atol=1e-6)


def test_two_gradient_evaluations_per_step_on_one_minibatch():
    # a test double for grad_at: counts calls and records the points; per step: y_k and y_{k+1} = y_k − η d_k
    alg = Stem(Settings(optimizer=SGD(lr=0.1)), a=0.2)
    a_mat, b = torch.tensor([[2.0, 0.3], [0.3, 0.5]]), torch.tensor([1.0, -2.0])
    points = []

    def grad_at(v):
        points.append(v.clone())
        return a_mat @ (v - b), 0.5 * (v - b) @ a_mat @ (v - b)

    w0 = torch.tensor(W0)
    w, steps, lr = w0.clone(), 5, 0.1
    c = ClientInput(w0, {"d_bar": torch.tensor([0.4, -0.1])}, {}, torch.tensor(float(steps)), lr, 2)  # not round 1
    _, local = alg.local_init(c)
    for _ in range(steps):
        before = len(points)
        w_old, d_old = w, local["d"]
        w, local, _ = alg.local_step(w, local, c, grad_at)
        assert len(points) - before == 2
        torch.testing.assert_close(points[-2], w_old)  # ∇f(y_k; ξ_{k+1})
        torch.testing.assert_close(points[-1], w_old - lr * d_old)  # ∇f(y_{k+1}; ξ_{k+1})
        torch.testing.assert_close(w, w_old - lr * d_old)
    assert len(points) == 2 * steps


def test_engine_evaluates_two_gradients_per_local_step():
    cfg = stem_config(rounds=1, local_steps=3, engine="sequential")
    fed = Federation(cfg)
    calls = []
    inner = fed.algorithm.local_step

    def counting(w, local, c, grad_at):
        def counted(v):
            calls.append(1)
            return grad_at(v)

        return inner(w, local, c, counted)

    fed.algorithm.local_step = counting
    fed.engine.warmed_up = True  # count the round's own steps, not the untimed warm-up step
    fed.round(fed.initial())
    assert len(calls) == 2 * 3 * 4  # 2 evaluations × K steps × 4 clients


@pytest.mark.parametrize("engine", ENGINES)
def test_bytes_are_twice_fedavg_both_ways(engine):
    cfg = stem_config(engine=engine, rounds=2, clients_per_round=3)
    dim = Federation(cfg).fm.dim
    clients = run(cfg, cache=False, progress=False).clients
    assert len(clients) == 6
    assert (clients["bytes_up"] == 4 * 2 * dim).all()  # Δ_i and d_K
    assert (clients["bytes_down"] == 4 * 2 * dim).all()  # x_t and d̄_t


@pytest.mark.parametrize("a", [0, -0.1, 1.5, math.nan, math.inf, True, None])
def test_bad_a_raises_naming_the_value(a):
    with pytest.raises(ConfigError, match="algorithm 'stem': a must") as err:
        stem_config(a=a)
    assert repr(a) in str(err.value)


def test_bad_weighting_and_unknown_option_raise():
    with pytest.raises(ConfigError, match="'sizes'"):
        toy_config(algorithm="stem", algorithm_args={"weighting": "sizes"})
    with pytest.raises(ConfigError, match="alpha"):
        toy_config(algorithm="stem", algorithm_args={"alpha": 0.2})


@pytest.mark.parametrize("optimizer, args", [("adam", {}), ("sgd", {"momentum": 0.9})])
def test_client_optimizer_with_its_own_momentum_is_refused(optimizer, args):
    with pytest.raises(ConfigError, match="stem takes its own local step") as err:
        stem_config(optimizer=optimizer, optimizer_args=args)  # refused when the algorithm is built
    assert ("Adam" if optimizer == "adam" else "momentum=0.9") in str(err.value)
