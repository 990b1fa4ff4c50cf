"""FedAdam and FedAMS server steps, FedAvg-M's global direction and SCAFFOLD-M's variates, by hand."""
import numpy as np
import pytest
import torch
from test_run import digits_config

from fedkit import run
from fedkit.algorithms import RoundInfo, Settings, make_algorithm
from fedkit.engine import ClientInput

DELTAS = [torch.tensor([[0.2, -0.4], [0.0, 0.2]]), torch.tensor([[-0.1, 0.1], [-0.1, 0.1]])]  # two rounds, 2 clients


def rounds(alg, w=None):
    w = torch.zeros(2) if w is None else w
    state = alg.init(w, None)
    info = RoundInfo(1, torch.arange(2), torch.tensor([1, 3]), torch.tensor([4.0, 4.0]), 0.1)
    out = []
    for ups in DELTAS:
        w, state, _ = alg.aggregate(w, state, {"delta": ups}, info)
        out.append(w.clone())
    return out, state


def test_fedadam_algorithm_2_by_hand():
    alg = make_algorithm("fedadam", Settings(server_lr=0.5), beta1=0.9, beta2=0.99, tau=1e-3)
    got, _ = rounds(alg)
    m, v, w = np.zeros(2), np.full(2, 1e-6), np.zeros(2)  # v_{-1} = τ²; uniform mean of the deltas
    for ups in DELTAS:
        delta = ups.numpy().mean(0)
        m = 0.9 * m + 0.1 * delta
        v = 0.99 * v + 0.01 * delta**2
        w = w + 0.5 * m / (np.sqrt(v) + 1e-3)
    np.testing.assert_allclose(got[-1].numpy(), w, rtol=1e-5)


def test_fedadam_with_the_codes_bias_correction():
    alg = make_algorithm("fedadam", Settings(), bias_correction=True, v_init="zero", beta2=0.999)
    got, _ = rounds(alg)
    m, v, w = np.zeros(2), np.zeros(2), np.zeros(2)
    for t, ups in enumerate(DELTAS, 1):
        delta = ups.numpy().mean(0)
        m, v = 0.9 * m + 0.1 * delta, 0.999 * v + 0.001 * delta**2
        w = w + (m / (1 - 0.9**t)) / (np.sqrt(v) / np.sqrt(1 - 0.999**t) + 1e-3)
    np.testing.assert_allclose(got[-1].numpy(), w, rtol=1e-5)


def test_fedams_keeps_the_largest_second_moment_with_eps_inside_the_max():
    alg = make_algorithm("fedams", Settings(), eps=1e-3)
    got, state = rounds(alg)
    m, v, v_max, w = np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2)
    for ups in DELTAS:
        delta = ups.numpy().mean(0)
        m, v = 0.9 * m + 0.1 * delta, 0.99 * v + 0.01 * delta**2
        v_max = np.maximum(np.maximum(v_max, v), 1e-3)
        w = w + m / np.sqrt(v_max)
    np.testing.assert_allclose(got[-1].numpy(), w, rtol=1e-5)
    np.testing.assert_allclose(state["v_max"].numpy(), v_max, rtol=1e-5)


def test_fedavg_m_mixes_the_global_direction_into_each_step_and_tracks_the_mean_gradient():
    alg = make_algorithm("fedavg_m", Settings(), beta=0.3)
    u = torch.tensor([1.0, -2.0])
    c = ClientInput(torch.zeros(2), {"u": u}, {}, torch.tensor(4.0), 0.1, 2)
    g = torch.tensor([0.5, 0.5])
    torch.testing.assert_close(alg.direction(g, None, c), 0.3 * g + 0.7 * u)
    info = RoundInfo(1, torch.arange(2), torch.tensor([1, 3]), torch.tensor([4.0, 2.0]), 0.1)
    ups = {"delta": torch.tensor([[0.4, 0.0], [0.0, -0.2]])}
    w, state, _ = alg.aggregate(torch.zeros(2), alg.init(torch.zeros(2), None), ups, info)
    torch.testing.assert_close(w, ups["delta"].mean(0))
    # u = mean over clients of (x_t − y_i) / (η_l K_i): (−0.4 / 0.4, 0) and (0, 0.2 / 0.2)
    torch.testing.assert_close(state["u"], torch.tensor([-0.5, 0.5]))


def test_fedavg_m_with_beta_one_is_fedavg_and_downloads_two_models():
    cfg = digits_config(rounds=2)
    m = run(cfg.replace(algorithm="fedavg_m", algorithm_args={"beta": 1.0}), cache=False, progress=False)
    avg = run(cfg.replace(algorithm_args={"weighting": "uniform"}), cache=False, progress=False)
    np.testing.assert_allclose(m.weights.numpy(), avg.weights.numpy(), rtol=1e-6, atol=1e-7)
    assert (m.clients["bytes_down"] == 2 * avg.clients["bytes_down"]).all()


@pytest.mark.parametrize("name", ["fedadam", "fedams", "fedavg_m", "scaffold_m"])
def test_runs_on_both_engines_alike(name):
    cfg = digits_config(algorithm=name, server_lr=0.1 if name.startswith("fedad") or name == "fedams" else 1.0)
    seq = run(cfg.replace(engine="sequential"), cache=False, progress=False)
    vec = run(cfg.replace(engine="vectorized"), cache=False, progress=False)
    np.testing.assert_allclose(seq.weights.numpy(), vec.weights.numpy(), rtol=1e-4, atol=1e-5)
    assert not seq.diverged


def test_scaffold_m_step_and_variates_by_hand():
    from fedkit.optim import SGD

    alg = make_algorithm("scaffold_m", Settings(num_clients=4, optimizer=SGD(lr=0.1)), beta=0.5)
    u, c_server, c_i = torch.tensor([1.0, -2.0]), torch.tensor([0.2, 0.0]), torch.tensor([0.0, 0.4])
    c = ClientInput(torch.zeros(2), {"u": u, "c": c_server}, {"c_i": c_i}, torch.tensor(2.0), 0.1, 2)
    w, local = alg.local_init(c)
    grads = iter([torch.tensor([0.5, 0.5]), torch.tensor([1.5, -0.5])])
    for _ in range(2):
        g = next(grads)
        expected = w - 0.1 * (0.5 * (g - c_i + c_server) + 0.5 * u)
        w, local, _ = alg.local_step(w, local, c, lambda _, g=g: (g, torch.tensor(0.0)))
        torch.testing.assert_close(w, expected)
    up, keep = alg.local_final(w, local, c, None)
    torch.testing.assert_close(keep["c_i"], torch.tensor([1.0, 0.0]))  # the mean raw gradient
    torch.testing.assert_close(up["dc"], torch.tensor([1.0, -0.4]))


def test_scaffold_m_keeps_c_the_mean_of_every_clients_variate():
    from fedkit.federation import Federation

    fed = Federation(digits_config(algorithm="scaffold_m", algorithm_args={"beta": 0.5}, rounds=3))
    for rnd in fed.rounds():
        s = rnd.after
        torch.testing.assert_close(s.server["c"], s.kept["c_i"].mean(0), rtol=1e-5, atol=1e-7)
    assert s.server["c"].abs().sum() > 0


def quadratic_rounds(name, server, extra_grad=None, **args):
    """Three rounds of ``name`` on the quadratic toy (local GD, K = 3, η_l = 0.15, all 4 clients) by hand: the
    clients' deltas through ``server(x, deltas, state) -> (x, state)``; ``extra_grad(y, state)`` joins the gradient."""
    from test_algorithms import W0, client_problem, toy_config

    cfg = toy_config(algorithm=name, algorithm_args=args, rounds=3, server_lr=0.5)
    b, a, sampled = client_problem(cfg)
    x, state = np.array(W0), {}
    for clients in sampled:
        ups = []
        for i in clients:
            y = x.copy()
            for _ in range(3):
                y = y - 0.15 * (extra_grad(a[i] @ (y - b[i]), state) if extra_grad else a[i] @ (y - b[i]))
            ups.append(y - x)
        x, state = server(x, np.array(ups), state)
    return cfg, x


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_fedadam_and_fedams_on_the_quadratic_toy(engine):
    from test_algorithms import final_weights

    from fedkit.algorithms.fedopt import FedAdam, FedAMS

    def adam(x, deltas, s, ams=False):
        delta = deltas.mean(0)
        m = 0.9 * s.get("m", 0) + 0.1 * delta
        v = 0.99 * s.get("v", 1e-6 if not ams else 0.0) + 0.01 * delta**2
        if ams:
            v_max = np.maximum(np.maximum(s.get("v_max", 0.0), v), 1e-3)
            return x + 0.5 * m / np.sqrt(v_max), {"m": m, "v": v, "v_max": v_max}
        return x + 0.5 * m / (np.sqrt(v) + 1e-3), {"m": m, "v": v}

    for name, cls, server in (("fedadam", FedAdam, adam), ("fedams", FedAMS, lambda *a: adam(*a, ams=True))):
        cfg, expected = quadratic_rounds(name, server)
        cfg = cfg.replace(engine=engine)
        assert type(cfg.build_algorithm()) is cls
        np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_fedavg_m_on_the_quadratic_toy(engine):
    from test_algorithms import final_weights

    from fedkit.algorithms.fedavgm import FedAvgM

    def server(x, deltas, s):
        s["u"] = -deltas.mean(0) / (0.15 * 3)  # the mean gradient per unit lr and step
        return x + 0.5 * deltas.mean(0), s

    mix = lambda g, s: 0.4 * g + 0.6 * s.get("u", 0.0)  # noqa: E731
    cfg, expected = quadratic_rounds("fedavg_m", server, extra_grad=mix, beta=0.4)
    cfg = cfg.replace(engine=engine)
    assert type(cfg.build_algorithm()) is FedAvgM
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-4, atol=1e-5)
