"""TACO's eqs. 6–10 and 15 against hand-written NumPy, and the invariants of algorithms-seed §1.12."""
import re

import numpy as np
import pandas as pd
import pytest
import torch

from fedkit import Config, ConfigError, run
from fedkit.algorithms import RoundInfo, Settings, make_algorithm
from fedkit.algorithms.taco import tailored_coefficients, tailored_mean
from fedkit.engine import ClientInput
from fedkit.federation import Federation
from fedkit.layout import Layout
from fedkit.models import QuadraticPoint
from fedkit.optim import SGD
from tests.test_algorithms import CURVATURES, W0, client_problem, final_weights, local_gd, toy_config

ENGINES = ["sequential", "vectorized"]
K, LR = 3, 0.15  # K·η_l = 0.45 ≠ 1, so unit mistakes in eqs. 8/9 show
LAYOUT = Layout(QuadraticPoint((6,)))  # the toy model: one 2-vector of parameters


def settings(num_clients, local_steps, rounds, lr=0.1, server_lr=1.0):
    return Settings(num_clients=num_clients, clients_per_round=num_clients, rounds=rounds, local_steps=local_steps,
                    server_lr=server_lr, optimizer=SGD(lr=lr))


def round_info(t, clients, sizes, steps, lr=0.1):
    return RoundInfo(t, clients=clients, sizes=sizes, steps=torch.full((len(clients),), float(steps)), lr=lr)


def np_alpha(d):
    """Eq. 7 in NumPy, rows of d are TACO-sign uploads Δ_i = w_{i,0} − w_{i,K}."""
    mean = d.mean(0)
    norms = np.linalg.norm(d, axis=1)
    cos = d @ mean / np.maximum(norms * np.linalg.norm(mean), 1e-12)
    return (1 - norms / norms.sum()) * np.maximum(cos, 0)


def taco_reference(b, a, rounds, gamma, server_lr=1.0, alpha0=0.1):
    """TACO Algorithm 2 written out (full participation, no freeloaders): returns w_T, z_T and the α's."""
    n = len(b)
    w, w_prev = np.array(W0), np.array(W0)
    alpha, delta_g, alpha_bar = np.full(n, alpha0), np.zeros(2), alpha0
    for _ in range(rounds):
        ups = np.array([w - local_gd(w, b[i], a[i], K, LR, lambda _: gamma * (1 - alpha[i]) * delta_g)
                        for i in range(n)])  # eq. 8, uploads in eq. 5's sign
        alpha = np_alpha(ups)  # eq. 7
        mean = alpha @ ups / alpha.sum()
        delta_g = mean / (K * LR)  # eq. 9
        w_prev, w = w, w - server_lr * K * LR * delta_g  # eq. 6 with η_g = server_lr · K η_l
        alpha_bar = alpha.mean()
    z = w + (1 - alpha_bar) * (w - w_prev)  # eq. 15
    return w, z, alpha


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("gamma,server_lr", [(0.5, 1.0), (2.0, 0.7)])
def test_three_rounds_match_algorithm_2(engine, gamma, server_lr):
    cfg = toy_config(engine=engine, algorithm="taco", algorithm_args={"gamma": gamma, "detect": False},
                     rounds=3, local_steps=K, lr=LR, server_lr=server_lr)
    b, a, _ = client_problem(cfg)
    w, z, alpha = taco_reference(b, a, 3, gamma, server_lr)
    h = run(cfg, cache=False, progress=False)
    np.testing.assert_allclose(h.weights.double().numpy(), w, rtol=1e-5, atol=1e-6)
    last = h.clients[h.clients["round"] == 3].sort_values("client")
    np.testing.assert_allclose(last["alpha"], alpha, rtol=1e-4, atol=1e-6)
    assert "test_accuracy_z" in h.rounds and "test_loss_z" in h.rounds
    # z_T is logged through its test loss: the toy's loss at z equals the mean objective at the reference z
    fed = Federation(cfg)
    expected_loss = fed.evaluate(torch.tensor(z, dtype=torch.float32))[1]
    assert h.rounds["test_loss_z"].iloc[-1] == pytest.approx(expected_loss, rel=1e-4)


def test_gamma_zero_without_tailored_aggregation_is_fedavg_bit_for_bit():
    taco = toy_config(algorithm="taco", algorithm_args={"gamma": 0.0, "tailored_aggregation": False},
                      rounds=4, clients_per_round=3)
    avg = toy_config(algorithm_args={"weighting": "uniform"}, rounds=4, clients_per_round=3)
    np.testing.assert_array_equal(final_weights(taco), final_weights(avg))


def test_equal_alphas_give_the_plain_mean_of_local_models():
    d = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
    np.testing.assert_allclose(tailored_mean(d, torch.full((3,), 0.4)).numpy(), d.mean(0).numpy(), rtol=1e-6)


def test_eq9_is_invariant_to_rescaling_all_alphas():
    d = torch.randn(5, 7, generator=torch.Generator().manual_seed(0))
    alpha = torch.rand(5, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(tailored_mean(d, alpha), tailored_mean(d, 3.7 * alpha))


def test_eq7_by_hand_and_its_range():
    d = torch.tensor([[3.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    # mean = (2/3, 1/3); norms 3, 1, 1 (sum 5); cosines 2/√5, 1/√5, −2/√5 → clipped to 0
    expected = [(1 - 3 / 5) * 2 / 5**0.5, (1 - 1 / 5) * 1 / 5**0.5, 0.0]
    np.testing.assert_allclose(tailored_coefficients(d).numpy(), expected, rtol=1e-6)
    alpha = tailored_coefficients(torch.randn(50, 9, generator=torch.Generator().manual_seed(2)))
    assert (alpha >= 0).all() and (alpha < 1).all()


def test_a_client_uploading_the_mean_of_the_others_has_cosine_one():
    others = torch.randn(4, 6, generator=torch.Generator().manual_seed(3))
    d = torch.cat([others.mean(0, keepdim=True), others])
    norms = d.norm(dim=1)
    assert tailored_coefficients(d)[0].item() == pytest.approx(1 - (norms[0] / norms.sum()).item(), rel=1e-5)


def test_zero_uploads_do_not_divide_by_zero():
    alpha = tailored_coefficients(torch.zeros(3, 4))
    assert torch.equal(alpha, torch.zeros(3))
    torch.testing.assert_close(tailored_mean(torch.ones(3, 4), alpha), torch.ones(4))


def test_freeloader_counter_and_expulsion_eq10():
    alg = make_algorithm("taco", settings(num_clients=3, local_steps=2, rounds=10), kappa=0.5, lam=2)
    w = torch.zeros(2)
    state = alg.init(w, LAYOUT)
    clients = torch.arange(3)
    # client 0 uploads the mean direction with a small norm (α high); 1 and 2 disagree with each other
    ups = {"delta": -torch.tensor([[1.0, 1.0], [4.0, -1.0], [-1.0, 4.0]])}
    for t in range(3):
        w, state, metrics = alg.aggregate(w, state, ups, round_info(t + 1, clients, torch.ones(3), 2))
        alpha = metrics["alpha"]
        assert alpha[0] >= 0.5 > max(alpha[1], alpha[2])
        assert state["count"].tolist() == [min(t + 1, 3), 0, 0]
        assert state["expelled"].tolist() == [t >= 1, False, False]  # "≥ λ" with λ = 2 counts
    assert alg.eligible(state).tolist() == [False, True, True]


@pytest.mark.parametrize("n", [2, 3, 5, 20])
def test_identical_benign_updates_expel_everyone_at_round_lambda(n):
    """IID property of eqs. 7 and 10: n clients with the same update have cos = 1 and size factor 1 − 1/n, so
    α_i = 1 − 1/n for all; with κ ≤ 1 − 1/n every client counts every round and all are expelled at round λ
    (κ = 0.6 and n ≥ 3: the paper's defaults expel an IID federation of honest clients; n = 2 gives α = 0.5)."""
    alg = make_algorithm("taco", settings(num_clients=n, local_steps=2, rounds=20), kappa=0.6)
    assert alg.lam == 4  # T/5
    state, w = alg.init(torch.zeros(2), LAYOUT), torch.zeros(2)
    ups = {"delta": torch.tensor([[0.3, -0.2]]).expand(n, -1)}
    expelled_in = []
    for t in range(1, 7):
        w, state, metrics = alg.aggregate(w, state, ups, round_info(t, torch.arange(n), torch.ones(n), 2))
        torch.testing.assert_close(metrics["alpha"], torch.full((n,), 1 - 1 / n))
        expelled_in.append(int(state["expelled"].sum()))
    assert expelled_in == ([0, 0, 0, n, n, n] if 1 - 1 / n >= 0.6 else [0] * 6)


def test_expel_rule_strictly_more_than_lambda():
    alg = make_algorithm("taco", settings(num_clients=3, local_steps=2, rounds=10), kappa=0.5, lam=2, expel_rule=">")
    state, w = alg.init(torch.zeros(2), LAYOUT), torch.zeros(2)
    ups = {"delta": -torch.tensor([[1.0, 1.0], [4.0, -1.0], [-1.0, 4.0]])}
    expelled = []
    for t in range(3):
        w, state, _ = alg.aggregate(w, state, ups, round_info(t + 1, torch.arange(3), torch.ones(3), 2))
        expelled.append(bool(state["expelled"][0]))
    assert expelled == [False, False, True]


def test_defaults_resolve_gamma_to_one_over_k_and_lambda_to_t_over_5():
    fed = Federation(toy_config(algorithm="taco", local_steps=4, rounds=20))
    assert fed.algorithm.gamma == 0.25 and fed.algorithm.lam == 4
    assert [make_algorithm("taco", settings(3, 2, rounds)).lam for rounds in (1, 6, 50, 51)] == [1, 2, 10, 11]


@pytest.mark.parametrize("args,message", [({"gamma": -1}, "gamma must lie in [0, inf), got -1"),
                                          ({"lam": 0}, "lam must lie in [1, inf), got 0"),
                                          ({"lam": 2.5}, "lam"),
                                          ({"expel_rule": "=="}, "expel_rule must be"),
                                          ({"alpha0": 2}, "alpha0 must lie in [0, 1], got 2")])
def test_bad_hyper_parameters(args, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        Config(algorithm="taco", algorithm_args=args)


def test_taco_needs_fixed_local_steps():
    with pytest.raises(ConfigError, match="local_steps"):
        Federation(toy_config(algorithm="taco", local_steps=None, local_epochs=1))


def test_freeloaders_are_detected_and_expelled_on_real_data():
    cfg = Config(dataset="digits", partition="label_groups", partition_args={}, num_clients=10, model="mlp",
                 model_args={"hidden": [32]}, algorithm="taco", rounds=10, local_steps=5, batch_size=16, lr=0.1,
                 threat="freeloaders", threat_args={"count": 4}, seed=0)
    h = run(cfg, cache=False, progress=False)
    fed = Federation(cfg)
    last = h.clients.groupby("client").last()
    free = pd.Series(fed.threat.bad, index=range(10))
    assert (last.loc[free[free].index, "expelled"] == 1).all()  # TPR = 100 %
    assert (last.loc[free[~free].index, "expelled"] == 0).all()  # FPR = 0 %
    assert not h.clients.loc[h.clients["round"] == 10, "honest"].eq(False).any()  # expelled: not sampled
    free_alpha = h.clients[~h.clients["honest"]]["alpha"].mean()
    assert free_alpha > h.clients[h.clients["honest"]]["alpha"].mean()


def tailored_reference(b, a, rounds, step_extra, alpha0=0.1):
    """Fig. 6 variants: client i's baseline term scaled by (1 − α_i) (eq. 7 on the method's own uploads)."""
    w, alpha = np.array(W0), np.full(len(b), alpha0)
    for _ in range(rounds):
        anchor = w.copy()
        ups = np.array([local_gd(anchor, b[i], a[i], K, LR, lambda y: step_extra(y, anchor, 1 - alpha[i]))
                        for i in range(len(b))]) - anchor
        alpha = np_alpha(-ups)
        w = anchor + ups.mean(0)
    return w, alpha


@pytest.mark.parametrize("engine", ENGINES)
def test_taco_enhanced_fedprox(engine):
    mu = 0.8
    cfg = toy_config(engine=engine, algorithm="tailored", algorithm_args={"base": "fedprox", "mu": mu},
                     rounds=3, local_steps=K, lr=LR)
    b, a, _ = client_problem(cfg)
    w, alpha = tailored_reference(b, a, 3, lambda y, anchor, scale: mu * scale * (y - anchor))
    h = run(cfg, cache=False, progress=False)
    np.testing.assert_allclose(h.weights.double().numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.clients[h.clients["round"] == 3].sort_values("client")["alpha"], alpha, rtol=1e-4)


def test_taco_enhanced_scaffold_scales_the_correction():
    # with c = c_i = 0 in round 1 both variants coincide; afterwards they differ, and plain "scaffold" is SCAFFOLD
    plain = final_weights(toy_config(algorithm="scaffold", rounds=1))
    tailored = final_weights(toy_config(algorithm="tailored", algorithm_args={"base": "scaffold"}, rounds=1))
    np.testing.assert_array_equal(plain, tailored)
    cfg = toy_config(algorithm="tailored", algorithm_args={"base": "scaffold"}, rounds=2)
    fed = Federation(cfg)
    s = fed.initial()
    w = s.w
    out = fed.round(s)
    alpha = out.after.server["tailored_alpha"][out.info.clients]
    g, c, c_i = torch.ones(2), out.after.server["c"], out.after.kept["c_i"][0]
    recv = {"c": c, "tailored_alpha": alpha[0]}
    client = ClientInput(w, recv, {"c_i": c_i}, torch.tensor(float(K)), LR, 2)
    torch.testing.assert_close(fed.algorithm.direction(g, w, client), g + (1 - alpha[0]) * (c - c_i))


def test_correction_modes_of_the_local_step():
    g, delta = torch.tensor([1.0, -2.0]), torch.tensor([4.0, 2.0])
    recv = {"alpha": torch.tensor(0.25), "Delta": delta}
    client = ClientInput(g, recv, {}, torch.tensor(3.0), 0.1, 1)
    expected = {"uniform": g + 0.5 * delta, "tailored": g + 0.5 * 0.75 * delta, "none": g}  # eq. 8 is "tailored"
    for mode, value in expected.items():
        alg = make_algorithm("taco", settings(num_clients=2, local_steps=3, rounds=5), gamma=0.5, correction=mode)
        torch.testing.assert_close(alg.direction(g, g, client), value)
    with pytest.raises(ConfigError, match="correction must be"):
        make_algorithm("taco", correction="partial")


def test_a_run_whose_clients_are_all_expelled_ends_early_and_says_why(tmp_path):
    # every optimum lies up and to the right of w_0, so every upload has a positive cosine to their mean
    centers = [[5.0, 4.0], [6.0, 7.0], [4.0, 6.0], [7.0, 5.0]]
    cfg = toy_config(algorithm="taco", algorithm_args={"kappa": 1e-9, "lam": 1}, local_steps=2, rounds=5,
                     dataset_args={"centers": centers, "curvatures": CURVATURES})
    history = run(cfg, cache=tmp_path, progress=False)
    assert history.clients.groupby("client")["expelled"].max().all()
    assert history.ended_early == "no eligible client left after round 1 (every honest client was expelled)"
    assert history.rounds["round"].tolist() == [0, 1] and not history.diverged
    assert run(cfg, cache=tmp_path, progress=False).ended_early == history.ended_early  # kept by the cache
    # with evaluation every 5 rounds, the model training ended on (round 1's) is still evaluated
    sparse = run(cfg.replace(eval_every=5), cache=False, progress=False)
    assert sparse.rounds["test_loss"].tolist() == history.rounds["test_loss"].tolist()


@pytest.mark.parametrize("engine", ["sequential", "vectorized"])
def test_a_run_ends_when_only_freeloaders_remain_eligible(engine):
    # round 1 expels the two honest clients sampled with the freeloaders; no honest client is left to train
    centers = [[5.0, 4.0], [6.0, 7.0], [4.0, 6.0], [7.0, 5.0]]
    cfg = toy_config(algorithm="taco", algorithm_args={"kappa": 1e-9, "lam": 1}, local_steps=2, rounds=3,
                     dataset_args={"centers": centers, "curvatures": CURVATURES}, engine=engine,
                     threat="freeloaders", threat_args={"count": 2})
    history = run(cfg, cache=False, progress=False)
    assert history.ended_early is not None and "every honest client was expelled" in history.ended_early
    assert history.rounds["round"].iloc[-1] < 3 and not history.diverged


def test_alpha_bar_over_the_clients_still_in():
    # eq. 14 after an expulsion: ᾱ over the round's clients, or over those not expelled by it
    info = RoundInfo(1, torch.arange(3), torch.ones(3), torch.full((3,), 2.0), 0.1)
    ups = {"delta": -torch.tensor([[1.0, 0.0], [1.0, 0.1], [-1.0, 0.0]])}  # eq. 5: d = [[1, 0], [1, .1], [-1, 0]]
    alpha = tailored_coefficients(-ups["delta"])
    assert alpha[2] == 0 and alpha[0] > 0.5 and alpha[1] > 0.5  # the two aligned clients cross κ = 0.5
    for mode, expected in (("round", alpha.mean()), ("remaining", alpha[2])):
        alg = make_algorithm("taco", settings(num_clients=3, local_steps=2, rounds=10), kappa=0.5, lam=1,
                             alpha_bar=mode)
        _, state, _ = alg.aggregate(torch.zeros(2), alg.init(torch.zeros(2), LAYOUT), ups, info)
        assert state["expelled"].tolist() == [True, True, False]
        torch.testing.assert_close(state["alpha_bar"], expected)
