"""Where a correction term h enters a stateful client optimizer: ``correction_at`` = "in_optimizer" (the optimizer
steps along g + h) or "after_step" (it steps along g, then w ← w − η_l h), checked against hand-written NumPy
recursions of SCAFFOLD on the quadratic toy under SGD with momentum and under Adam, on both engines."""
import numpy as np
import pytest
import torch
from test_algorithms import ENGINES, W0, client_problem, final_weights, toy_config
from torch import nn

from fedkit import ConfigError
from fedkit.algorithms import Settings, make_algorithm
from fedkit.engine import ClientInput, FlatModel
from fedkit.optim import SGD, Adam

MOMENTUM = dict(optimizer="sgd", optimizer_args={"momentum": 0.9})
ADAM = dict(optimizer="adam", lr=0.05, optimizer_args={"beta1": 0.9, "beta2": 0.99, "eps": 1e-3})


def momentum_step(rho):
    def step(y, d, state):
        m = rho * state.get("m", 0.0) + d
        return y - state["lr"] * m, {**state, "m": m}
    return step


def adam_step(beta1, beta2, eps):
    def step(y, d, state):
        t = state.get("t", 0) + 1
        m = beta1 * state.get("m", 0.0) + (1 - beta1) * d
        v = beta2 * state.get("v", 0.0) + (1 - beta2) * d * d
        m_hat, v_hat = m / (1 - beta1**t), v / (1 - beta2**t)
        return y - state["lr"] * m_hat / (np.sqrt(v_hat) + eps), {**state, "m": m, "v": v, "t": t}
    return step


def scaffold_reference(b, a, sampled, steps, lr, step, placement):
    """SCAFFOLD option II (Alg. 1) with the client optimizer ``step`` restarted every round; h = c − c_i enters it
    (in_optimizer) or follows it (after_step); c_i⁺ = c_i − c + (x − y)/(K η_l) in both."""
    n = len(b)
    w, c, c_i = np.array(W0), np.zeros(2), np.zeros((n, 2))
    for clients in sampled:
        dy, dc = [], []
        for i in clients:
            y, state, h = w.copy(), {"lr": lr}, c - c_i[i]
            for _ in range(steps):
                g = a[i] @ (y - b[i])
                if placement == "in_optimizer":
                    y, state = step(y, g + h, state)
                else:
                    y, state = step(y, g, state)
                    y = y - lr * h
            c_plus = c_i[i] - c + (w - y) / (steps * lr)
            dy.append(y - w)
            dc.append(c_plus - c_i[i])
            c_i[i] = c_plus
        w = w + np.mean(dy, axis=0)
        c = c + np.sum(dc, axis=0) / n
    return w


CASES = {"momentum": (MOMENTUM, momentum_step(0.9)), "adam": (ADAM, adam_step(0.9, 0.99, 1e-3))}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("placement", ["in_optimizer", "after_step"])
@pytest.mark.parametrize("optimizer", list(CASES))
def test_scaffold_matches_its_recursion_under_a_stateful_optimizer(engine, placement, optimizer):
    options, step = CASES[optimizer]
    cfg = toy_config(engine=engine, algorithm="scaffold", algorithm_args={"correction_at": placement},
                     clients_per_round=2, rounds=4, **options)
    b, a, sampled = client_problem(cfg)
    expected = scaffold_reference(b, a, sampled, cfg.local_steps, cfg.lr, step, placement)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("placement", ["in_optimizer", "after_step"])
def test_fedpvr_on_every_tensor_with_adam_is_scaffold(placement):
    cfg = toy_config(algorithm="fedpvr", algorithm_args={"layers": "all", "correction_at": placement},
                     clients_per_round=2, rounds=4, **ADAM)
    b, a, sampled = client_problem(cfg)
    expected = scaffold_reference(b, a, sampled, cfg.local_steps, cfg.lr, CASES["adam"][1], placement)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("optimizer", list(CASES))
def test_the_two_placements_differ_under_a_stateful_optimizer(optimizer):
    options, _ = CASES[optimizer]
    runs = [final_weights(toy_config(algorithm="scaffold", algorithm_args={"correction_at": p}, rounds=3, **options))
            for p in ("in_optimizer", "after_step")]
    assert np.abs(runs[0] - runs[1]).max() > 1e-3


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("optimizer_args", [{}, {"weight_decay": 0.05}])
@pytest.mark.parametrize("algorithm, args", [("scaffold", {}), ("taco", {}), ("tailored", {"base": "scaffold"})])
def test_under_a_stateless_sgd_the_two_placements_are_one_update_bit_for_bit(engine, algorithm, args, optimizer_args):
    # w − η(g + h) in one fused step, whichever placement is named: the papers' plain-SGD algorithm unchanged
    runs = [final_weights(toy_config(engine=engine, algorithm=algorithm, algorithm_args={**args, "correction_at": p},
                                     rounds=3, optimizer_args=optimizer_args, clients_per_round=2))
            for p in ("in_optimizer", "after_step")]
    np.testing.assert_array_equal(runs[0], runs[1])


def client_input(d, recv):
    kept = {"c_i": torch.linspace(-1, 1, d) * -0.2}
    return ClientInput(torch.linspace(0, 2, d), recv, kept, torch.tensor(3.0), 0.1, 2)


def one_step(algorithm, optimizer, placement, recv, **args):
    """(w after one local step, the algorithm's h) for a fixed gradient, from a fresh optimizer state."""
    fm = FlatModel(nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 2)))
    alg = make_algorithm(algorithm, Settings(optimizer=optimizer, layout=fm.layout, local_steps=3),
                         correction_at=placement, **args)
    c = client_input(fm.dim, recv(fm.dim))
    g = torch.linspace(-1, 1, fm.dim)
    _, local = alg.local_init(c)
    w_new, _, _ = alg.local_step(c.w0, local, c, lambda _: (g, torch.tensor(0.0)))
    return w_new, alg.correction_term(c.w0, c), g, c


SERVER_C = lambda d: {"c": torch.linspace(-1, 1, d) * 0.3}  # noqa: E731
TACO_RECV = lambda d: {"Delta": torch.linspace(1, -1, d) * 0.7, "alpha": torch.tensor(0.25)}  # noqa: E731
METHODS = [("scaffold", SERVER_C, {}), ("fedpvr", SERVER_C, {"layers": "output"}), ("taco", TACO_RECV, {}),
           ("tailored", lambda d: {**SERVER_C(d), "tailored_alpha": torch.tensor(0.4)}, {"base": "scaffold"})]


# FedPVR with momentum takes plain SGD steps on V, its own rule (tests/test_fedpvr.py): Adam only here
STEPS = [(m, o) for m in METHODS for o in (SGD(lr=0.1, momentum=0.9), Adam(lr=0.1))
         if m[0] != "fedpvr" or isinstance(o, Adam)]


@pytest.mark.parametrize("method, optimizer", STEPS)
def test_one_local_step_of_every_corrected_method_by_hand(method, optimizer):
    algorithm, recv, args = method
    inside, h, g, c = one_step(algorithm, optimizer, "in_optimizer", recv, **args)
    after, h_after, _, _ = one_step(algorithm, optimizer, "after_step", recv, **args)
    torch.testing.assert_close(h, h_after)
    assert h.abs().max() > 0
    fresh = optimizer.init(c.w0)
    torch.testing.assert_close(inside, optimizer.step(c.w0, g + h, fresh, c.lr)[0])
    torch.testing.assert_close(after, optimizer.step(c.w0, g, fresh, c.lr)[0] - c.lr * h)


def test_taco_and_tailored_scale_their_correction():
    _, h, _, c = one_step("taco", Adam(lr=0.1), "after_step", TACO_RECV)
    torch.testing.assert_close(h, (1 / 3) * (1 - 0.25) * c.recv["Delta"])  # eq. 8 with γ = 1/K
    _, h, _, c = one_step("tailored", Adam(lr=0.1), "after_step",
                          lambda d: {**SERVER_C(d), "tailored_alpha": torch.tensor(0.4)}, base="scaffold")
    torch.testing.assert_close(h, 0.6 * (c.recv["c"] - c.kept["c_i"]))


def test_a_bad_placement_is_named():
    with pytest.raises(ConfigError, match="correction_at.*'inside'"):
        toy_config(algorithm="scaffold", algorithm_args={"correction_at": "inside"})


def test_momentum_amplifies_the_in_optimizer_variate_and_not_the_after_step_one():
    # in_optimizer, c_i⁺ ≈ (a_i/K)(ḡ + c − c_i) − (c − c_i): the correction re-enters c_i amplified by the momentum
    # (a_i/K → 1/(1 − ρ) = 10), so the variates grow round after round; after_step they stay bounded by the
    # gradients' scale (README, "Corrections under momentum and Adam")
    def variates(placement):
        cfg = toy_config(algorithm="scaffold", algorithm_args={"correction_at": placement}, rounds=6, local_steps=20,
                         lr=0.01, **MOMENTUM)
        from fedkit.federation import Federation

        return [rnd.after.kept["c_i"].norm().item() for rnd in Federation(cfg).rounds()]

    inside, after = variates("in_optimizer"), variates("after_step")
    assert not np.all(np.isfinite(inside)) or inside[-1] > 100 * after[-1]
    assert np.all(np.isfinite(after)) and after[-1] < 10 * max(after[:2])
