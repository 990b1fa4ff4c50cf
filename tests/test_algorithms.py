"""Update equations of FedAvg, FedProx and SCAFFOLD checked against hand-written NumPy recursions.

The quadratic toy federation makes local training deterministic gradient descent on
f_i(w) = ½ (w − b_i)ᵀ A_i (w − b_i), so every round has a closed-form answer.
"""
import numpy as np
import pytest
import torch

from fedkit import Config, run
from fedkit.federation import Federation

CENTERS = [[2.0, 0.0], [-1.0, 3.0], [0.5, -2.0], [-3.0, -1.0]]
CURVATURES = [[[2.0, 0.3], [0.3, 0.5]], [[0.4, 0.0], [0.0, 1.5]], [[1.0, -0.4], [-0.4, 1.2]],
              [[0.3, 0.1], [0.1, 0.2]]]
W0 = [1.0, -1.0]


def toy_config(**changes) -> Config:
    base = dict(dataset="quadratic", dataset_args={"centers": CENTERS, "curvatures": CURVATURES},
                partition="natural", partition_args={}, num_clients=4, model="quadratic",
                model_args={"init": W0}, rounds=1, local_steps=3, batch_size=4, lr=0.15, server_lr=1.0,
                engine="sequential", seed=3)
    return Config(**{**base, **changes})


def client_problem(cfg: Config):
    """b_i, A_i of each client as the partition assigned them, and the clients sampled per round."""
    fed = Federation(cfg)
    x = fed.x_train.double().numpy()
    rows = [x[p[0]] for p in fed.parts]
    b = np.array([r[:2] for r in rows])
    a = np.array([r[2:].reshape(2, 2) for r in rows])
    sampled = [fed.sample(t, None) for t in range(1, cfg.rounds + 1)]  # sampling before any expulsion
    return b, a, sampled


def local_gd(w, b, a, steps, lr, extra_grad=lambda y: 0.0):
    y = w.copy()
    for _ in range(steps):
        y = y - lr * (a @ (y - b) + extra_grad(y))
    return y


def final_weights(cfg):
    return run(cfg, cache=False, progress=False).weights.double().numpy()


ENGINES = ["sequential", "vectorized"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("server_lr", [1.0, 0.6])
def test_fedavg_one_round_matches_closed_form(engine, server_lr):
    # K·η_l = 0.45 ≠ 1 and η_g ≠ 1: x_1 = x_0 + η_g Σ_i p_i (y_i − x_0), p_i = n_i / n (all n_i equal here)
    cfg = toy_config(engine=engine, server_lr=server_lr)
    b, a, _ = client_problem(cfg)
    w0 = np.array(W0)
    deltas = [local_gd(w0, b[i], a[i], 3, 0.15) - w0 for i in range(4)]
    expected = w0 + server_lr * np.mean(deltas, axis=0)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_fedavg_partial_participation_three_rounds(engine):
    cfg = toy_config(engine=engine, clients_per_round=2, rounds=3)
    b, a, sampled = client_problem(cfg)
    w = np.array(W0)
    for clients in sampled:
        assert len(clients) == 2
        w = w + np.mean([local_gd(w, b[i], a[i], 3, 0.15) - w for i in clients], axis=0)
    np.testing.assert_allclose(final_weights(cfg), w, rtol=1e-5, atol=1e-6)


def test_data_weighting_is_proportional_to_client_sizes():
    np.testing.assert_allclose(toy_config().build_algorithm().weights(torch.tensor([1, 3])).numpy(), [0.25, 0.75])
    uniform = toy_config(algorithm="scaffold").build_algorithm().weights(torch.tensor([1, 3]))
    np.testing.assert_allclose(uniform.numpy(), [0.5, 0.5])


@pytest.mark.parametrize("engine", ENGINES)
def test_fedprox_adds_proximal_gradient(engine):
    mu = 0.7
    cfg = toy_config(engine=engine, algorithm="fedprox", algorithm_args={"mu": mu}, rounds=2)
    b, a, _ = client_problem(cfg)
    w = np.array(W0)
    for _ in range(2):
        anchor = w.copy()
        w = w + np.mean([local_gd(w, b[i], a[i], 3, 0.15, lambda y: mu * (y - anchor)) - w
                         for i in range(4)], axis=0)
    np.testing.assert_allclose(final_weights(cfg), w, rtol=1e-5, atol=1e-6)


def test_fedprox_with_mu_zero_is_fedavg():
    prox = final_weights(toy_config(algorithm="fedprox", algorithm_args={"mu": 0.0}, rounds=2))
    avg = final_weights(toy_config(rounds=2))
    np.testing.assert_array_equal(prox, avg)


def scaffold_reference(b, a, sampled, n_clients, steps, lr, server_lr, alpha=1.0):
    """SCAFFOLD option II (Karimireddy et al. Alg. 1) written out with NumPy."""
    w = np.array(W0)
    c = np.zeros(2)
    c_i = np.zeros((n_clients, 2))
    for clients in sampled:
        dy, dc = [], []
        for i in clients:
            y = local_gd(w, b[i], a[i], steps, lr, lambda _: alpha * (c - c_i[i]))
            c_plus = c_i[i] - c + (w - y) / (steps * lr)
            dy.append(y - w)
            dc.append(c_plus - c_i[i])
            c_i[i] = c_plus
        w = w + server_lr * np.mean(dy, axis=0)
        c = c + np.sum(dc, axis=0) / n_clients
    return w, c, c_i


@pytest.mark.parametrize("engine", ENGINES)
def test_scaffold_partial_participation_matches_reference(engine):
    # S = 2 of N = 4: the server variate moves by (1/N) Σ Δc_i, not the mean; stale c_i kept
    cfg = toy_config(engine=engine, algorithm="scaffold", clients_per_round=2, rounds=4, server_lr=0.8)
    b, a, sampled = client_problem(cfg)
    expected, _, _ = scaffold_reference(b, a, sampled, 4, 3, 0.15, 0.8)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-4, atol=1e-5)


def test_scaffold_state_keeps_invariant_c_equals_mean_ci():
    # c is the server's; every c_i is held by its client (kept between its rounds, stale when not sampled)
    cfg = toy_config(algorithm="scaffold", clients_per_round=2, rounds=3)
    for rnd in Federation(cfg).rounds():
        s = rnd.after
        torch.testing.assert_close(s.server["c"], s.kept["c_i"].mean(0))
    b, a, sampled = client_problem(cfg)
    _, c, c_i = scaffold_reference(b, a, sampled, 4, 3, 0.15, 1.0)
    np.testing.assert_allclose(s.kept["c_i"].double().numpy(), c_i, rtol=1e-4, atol=1e-5)


def test_scaffold_first_round_equals_fedavg():
    # c = c_i = 0 before the first round, so the first round's model is FedAvg's (uniform weights)
    np.testing.assert_array_equal(final_weights(toy_config(algorithm="scaffold")), final_weights(toy_config()))


def test_scaffold_fixes_client_drift_on_quadratic():
    # with heterogeneous curvatures FedAvg's fixed point is biased; SCAFFOLD's is the optimum
    from fedkit.data.toy import optimum, quadratic

    w_star = optimum(quadratic(CENTERS, CURVATURES))
    avg = final_weights(toy_config(rounds=150, local_steps=10, lr=0.1))
    scaf = final_weights(toy_config(algorithm="scaffold", rounds=150, local_steps=10, lr=0.1))
    assert np.linalg.norm(scaf - w_star) < 1e-3
    assert np.linalg.norm(avg - w_star) > 0.05


@pytest.mark.parametrize("engine", ENGINES)
def test_feddyn_partial_participation_matches_reference(engine):
    """FedDyn Alg. 1 written out with NumPy: local gradient ∇L_i − g_i + α(θ − θ_t), gradient memory
    g_i ← g_i − α(θ_i − θ_t) (stale for clients not sampled), h with 1/N, θ = mean θ_i − h/α."""
    alpha = 0.5
    cfg = toy_config(engine=engine, algorithm="feddyn", algorithm_args={"alpha": alpha}, clients_per_round=2,
                     rounds=4)
    b, a, sampled = client_problem(cfg)
    w, h, g = np.array(W0), np.zeros(2), np.zeros((4, 2))
    for clients in sampled:
        thetas = []
        for i in clients:
            anchor, memory = w.copy(), g[i].copy()
            y = local_gd(w, b[i], a[i], 3, 0.15, lambda v: -memory + alpha * (v - anchor))
            g[i] = memory - alpha * (y - anchor)
            thetas.append(y)
        h = h - alpha * np.sum([y - w for y in thetas], axis=0) / 4
        active = np.mean(thetas, axis=0)
        w = active - h / alpha
    history = run(cfg, cache=False, progress=False)
    np.testing.assert_allclose(history.weights.double().numpy(), w, rtol=1e-5, atol=1e-6)
    assert "test_accuracy_active" in history.rounds  # the active clients' average is reported beside θ


def test_feddyn_first_round_of_full_participation_is_fedavg_with_a_proximal_term():
    # g_i = 0 and h = −α·mean Δ in round 1, so θ_1 = mean θ_i + mean Δ: the cloud model steps twice the average
    alpha = 0.5
    cfg = toy_config(algorithm="feddyn", algorithm_args={"alpha": alpha})
    b, a, _ = client_problem(cfg)
    w0 = np.array(W0)
    thetas = [local_gd(w0, b[i], a[i], 3, 0.15, lambda v: alpha * (v - w0)) for i in range(4)]
    expected = np.mean(thetas, axis=0) + np.mean([y - w0 for y in thetas], axis=0)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-5, atol=1e-6)


def test_feddyn_refuses_a_server_learning_rate():
    from fedkit import ConfigError

    with pytest.raises(ConfigError, match="server_lr=0.5"):
        toy_config(algorithm="feddyn", server_lr=0.5)


def test_fednova_server_step_by_hand():
    from fedkit.algorithms import RoundInfo, Settings, make_algorithm

    nova = make_algorithm("fednova", Settings(num_clients=2))
    ups = {"delta": torch.tensor([[-2.0, 0.0], [0.0, -6.0]]), "a": torch.tensor([2.0, 3.0])}
    info = RoundInfo(1, torch.tensor([0, 1]), torch.tensor([1, 3]), torch.tensor([2.0, 3.0]), 0.1)
    w, _, metrics = nova.aggregate(torch.zeros(2), {}, ups, info)
    # p = (1/4, 3/4), d_i = Δ_i / a_i = (−1, 0), (0, −2), τ_eff = 2/4 + 9/4 = 2.75
    torch.testing.assert_close(w, torch.tensor([-0.6875, -4.125]))


@pytest.mark.parametrize("momentum, mu", [(0.0, 0.0), (0.6, 0.0), (0.0, 0.8)])
def test_fednova_normaliser_is_the_l1_norm_of_the_step_weights(momentum, mu):
    # the solver's update after τ steps is −η Σ_k w_k g_k (g frozen); a_i = Σ_k w_k
    from fedkit.algorithms import Settings, make_algorithm
    from fedkit.optim import SGD

    lr, tau = 0.1, 7
    nova = make_algorithm("fednova", Settings(optimizer=SGD(lr=lr, momentum=momentum)), mu=mu)
    if mu:  # proximal: y_{k+1} − x = (1 − ημ)(y_k − x) − η g, so the k-th gradient carries (1 − ημ)^(τ−1−k)
        weights = [(1 - lr * mu) ** k for k in range(tau)]
    else:  # heavy ball: the k-th gradient (0-based) enters the remaining τ − k steps with 1 + ρ + … + ρ^(τ−1−k)
        weights = [sum(momentum**j for j in range(tau - k)) for k in range(tau)]
    assert float(nova.normaliser(torch.tensor(float(tau)), lr)) == pytest.approx(sum(weights), rel=1e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_fednova_with_equal_steps_is_fedavg(engine):
    # a_i is the same for every client when all τ_i are equal, so τ_eff Σ p_i Δ_i / a_i = Σ p_i Δ_i
    nova = final_weights(toy_config(engine=engine, algorithm="fednova", rounds=2,
                                    optimizer_args={"momentum": 0.5}))
    avg = final_weights(toy_config(engine=engine, rounds=2, optimizer_args={"momentum": 0.5}))
    np.testing.assert_allclose(nova, avg, rtol=1e-5, atol=1e-6)


def test_fednova_with_adam_normalises_by_the_step_count():
    from fedkit import ConfigError
    from fedkit.algorithms import RoundInfo, Settings, make_algorithm
    from fedkit.optim import SGD, Adam

    nova = make_algorithm("fednova", Settings(optimizer=Adam()), mu=0.1)
    steps = torch.tensor([2.0, 6.0])
    ups = {"delta": torch.tensor([[1.0, 0.0], [0.0, 3.0]]), "a": nova.normaliser(steps, 0.01)}
    torch.testing.assert_close(ups["a"], steps)
    info = RoundInfo(1, torch.arange(2), torch.tensor([1, 3]), steps, 0.01)
    w, _, _ = nova.aggregate(torch.zeros(2), {}, ups, info)
    tau_eff = 0.25 * 2 + 0.75 * 6  # Σ p_i τ_i
    torch.testing.assert_close(w, tau_eff * (0.25 * ups["delta"][0] / 2 + 0.75 * ups["delta"][1] / 6))
    with pytest.raises(ConfigError, match="fednova"):
        make_algorithm("fednova", Settings(optimizer=SGD(weight_decay=0.1)))
