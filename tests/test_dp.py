"""DP-FedAvg (``algorithm="dp"``, McMahan et al. 2018, Alg. 1) against hand recursions on quadratic clients, and its
accountant (fedkit.privacy, Google's dp-accounting) against the library's own published numbers.

On the quadratic toy federation local training is deterministic gradient descent, so each client's update Δ_i is
known in closed form; a round of DP-FedAvg is then x_{t+1} = x_t + η_g ((1/m) Σ_i Δ_i min(1, C/‖Δ_i‖) + σ g_t), with
σ = z·C/m and g_t the standard normal draw of round t, which ``round_noise`` redraws from the run's seed.
"""
import math

import numpy as np
import pandas as pd
import pytest
import torch
from test_algorithms import W0, client_problem, final_weights, local_gd, toy_config
from test_run import Killed, client_results, digits_config, results

from fedkit import ConfigError, run
from fedkit.algorithms import Settings, make_algorithm
from fedkit.algorithms.dp import clip_updates, round_noise
from fedkit.federation import Federation
from fedkit.privacy import config_epsilon, epsilon

ENGINES = ["sequential", "vectorized"]


def hand_deltas(w, b, a, clients, steps=3, lr=0.15):
    return np.array([local_gd(w, b[i], a[i], steps, lr) - w for i in clients])


def clipped(deltas, clip):
    return np.array([d * min(1.0, clip / np.linalg.norm(d)) for d in deltas])


def first_round_norms():
    cfg = toy_config()
    b, a, _ = client_problem(cfg)
    return np.linalg.norm(hand_deltas(np.array(W0), b, a, range(4)), axis=1)


def test_clip_scales_a_long_update_to_exactly_c_and_leaves_a_short_one_untouched():
    delta = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0], [-1.2, 0.5]])
    out, norms = clip_updates(delta, 1.0)
    torch.testing.assert_close(norms, torch.tensor([5.0, 0.5, 0.0, 1.3]))
    torch.testing.assert_close(out[0], torch.tensor([0.6, 0.8]))
    assert float(out[0].norm()) == pytest.approx(1.0, rel=1e-7) and float(out[3].norm()) == pytest.approx(1.0, rel=1e-7)
    assert torch.equal(out[1], delta[1]) and torch.equal(out[2], delta[2])  # below C (and zero): bit for bit
    unclipped, _ = clip_updates(delta, math.inf)
    assert torch.equal(unclipped, delta)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("server_lr", [1.0, 0.6])
def test_one_round_without_noise_clips_the_clients_above_c_and_averages_uniformly(engine, server_lr):
    norms = first_round_norms()
    clip = float(np.median(norms))  # two clients above C, two below
    assert (norms > clip).sum() == 2 and (norms < clip).sum() == 2
    cfg = toy_config(engine=engine, server_lr=server_lr, algorithm="dp",
                     algorithm_args={"clip": clip, "noise_multiplier": 0.0})
    b, a, _ = client_problem(cfg)
    w0 = np.array(W0)
    deltas = hand_deltas(w0, b, a, range(4))
    expected = w0 + server_lr * clipped(deltas, clip).mean(0)
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-5, atol=1e-6)
    history = run(cfg, cache=False, progress=False)
    logged = history.clients.sort_values("client")
    np.testing.assert_allclose(logged["update_norm"], norms, rtol=1e-5)
    assert logged["clipped"].tolist() == [float(n > clip) for n in norms]


@pytest.mark.parametrize("engine", ENGINES)
def test_noise_is_z_c_over_m_times_the_runs_own_standard_normal_draw(engine):
    # m = 2 of N = 4 sampled a round, three rounds, C below some clients' norms: the hand recursion redraws g_t
    z, clip, seed = 0.7, 0.8, 5
    cfg = toy_config(engine=engine, clients_per_round=2, rounds=3, seed=seed, algorithm="dp",
                     algorithm_args={"clip": clip, "noise_multiplier": z})
    b, a, sampled = client_problem(cfg)
    sigma = z * clip / 2
    w = np.array(W0)
    for t, clients in enumerate(sampled, start=1):
        average = clipped(hand_deltas(w, b, a, clients), clip).mean(0)
        w = w + average + sigma * round_noise(seed, t, 2).double().numpy()
    np.testing.assert_allclose(final_weights(cfg), w, rtol=1e-5, atol=1e-6)
    # the noise each round added, read off the run itself: x_t − x_{t−1} − mean of the clipped uploads = σ g_t
    for rnd in Federation(cfg).rounds():
        noise = rnd.after.w - rnd.after.w_prev - clip_updates(rnd.uploads["delta"], clip)[0].mean(0)
        torch.testing.assert_close(noise / round_noise(seed, rnd.info.t, 2), torch.full((2,), sigma), rtol=1e-4,
                                   atol=0)


def test_the_standard_normal_draw_of_a_round_has_unit_deviation_and_depends_on_seed_and_round():
    # fixed seeds: the bound is checked once on these draws (it cannot fail by chance); 10⁶ coordinates
    g = round_noise(0, 1, 1_000_000).double()
    assert abs(float(g.mean())) < 5e-3 and abs(float(g.std()) - 1) < 5e-3
    assert torch.equal(round_noise(3, 2, 5), round_noise(3, 2, 5))
    assert not torch.equal(round_noise(3, 2, 5), round_noise(4, 2, 5))
    assert not torch.equal(round_noise(3, 2, 5), round_noise(3, 3, 5))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("base, args", [("fedavg", {}), ("fedprox", {"mu": 0.3}), ("fedavg_m", {"beta": 0.5}),
                                        ("fedadam", {})])
def test_no_noise_and_no_clip_is_the_wrapped_algorithm_bit_for_bit(engine, base, args):
    cfg = toy_config(engine=engine, clients_per_round=3, rounds=3, algorithm=base,
                     algorithm_args={**args, "weighting": "uniform"})
    private = cfg.replace(algorithm="dp", algorithm_args={"base": base, "clip": None, "noise_multiplier": 0.0, **args})
    np.testing.assert_array_equal(final_weights(private), final_weights(cfg))


def test_a_run_is_reproducible_resumes_exactly_and_its_noise_follows_the_seed(tmp_path):
    cfg = digits_config(algorithm="dp", algorithm_args={"clip": 0.5, "noise_multiplier": 1.0}, rounds=4)
    whole = run(cfg, cache=False, progress=False)
    assert torch.equal(whole.weights, run(cfg, cache=False, progress=False).weights)

    def kill_at_round_2(record, w):
        if record["round"] == 2:
            raise Killed

    with pytest.raises(Killed):
        run(cfg, cache=tmp_path, progress=False, callbacks=(kill_at_round_2,))
    resumed = run(cfg, cache=tmp_path, progress=False)
    assert torch.equal(whole.weights, resumed.weights)
    pd.testing.assert_frame_equal(results(whole), results(resumed), check_exact=True)
    pd.testing.assert_frame_equal(client_results(whole), client_results(resumed), check_exact=True)
    other = run(cfg.replace(seed=2), cache=False, progress=False)
    assert not torch.equal(whole.weights, other.weights)
    assert whole.clients["clipped"].max() == 1.0  # C = 0.5 binds on this run


@pytest.mark.parametrize("args, named", [({"base": "scaffold"}, "base"), ({"base": "taco"}, "base"),
                                         ({"base": "fltrust", "root_samples": 16}, "base"),
                                         ({"weighting": "data"}, "weighting"),
                                         ({"clip": None}, "clip"), ({"clip": 0.0}, "clip"),
                                         ({"noise_multiplier": -1.0}, "noise_multiplier"),
                                         ({"base": "nope"}, "nope")])
def test_what_the_mechanism_does_not_cover_is_refused_by_name(args, named):
    with pytest.raises(ConfigError, match=named):
        toy_config(algorithm="dp", algorithm_args=args).build_algorithm()


def test_a_model_with_averaged_batchnorm_statistics_is_refused():
    from torch import nn

    from fedkit.layout import Layout

    layout = Layout(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)))
    with pytest.raises(ConfigError, match="BatchNorm"):
        make_algorithm("dp", Settings(layout=layout))
    make_algorithm("dp", Settings(layout=layout), base="fedbn")  # FedBN keeps them on the clients


def test_the_wrapper_reports_uniform_weighting_and_the_bases_optimizer():
    alg = toy_config(algorithm="dp", algorithm_args={"base": "fedavg"}).build_algorithm()
    assert alg.weighting == alg.base.weighting == "uniform"
    assert alg.noise_std(4) == pytest.approx(1.0 * 1.0 / 4)
    cfg = toy_config(algorithm="dp", algorithm_args={"base": "local_adam"})
    assert type(cfg.build_algorithm().optimizer).__name__ == "Adam"


# ---- the accountant


def test_epsilon_reproduces_dp_accountings_published_gaussian_example():
    # dp-accounting 0.6.0, dp_accounting/rdp/rdp_privacy_accountant_test.py, test_compute_epsilon_delta_gaussian:
    # "noise multiplier is chosen to obtain exactly (1,1e-6)-DP": one full-batch Gaussian of multiplier 4.530877117,
    # RDP orders 1.000, 1.001, ..., 99.999, gives ε = 1 (assertAlmostEqual: 7 places)
    orders = [0.001 * i for i in range(1000, 100000)]
    assert epsilon(1, 1.0, 4.530877117, 1e-6, orders=orders) == pytest.approx(1.0, abs=5e-8)


def test_epsilon_agrees_with_dp_accountings_published_rdp_of_a_poisson_sampled_gaussian():
    # the same file, test_compute_rdp_poisson_sampled_gaussian: 50 rounds at q = 0.01, z = 2.5 have RDP
    # 6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02 at orders 1.5, 2.5, 5, 50, 100;
    # the library's conversion of those published values to ε is what epsilon() returns at those orders
    from dp_accounting.rdp import compute_epsilon

    orders = [1.5, 2.5, 5, 50, 100]
    published = [6.70579741e-04, 1.08548710e-03, 2.18075656e-03, 2.38460375e-02, 1.67416308e02]
    for delta in (1e-5, 1e-3):
        expected, _ = compute_epsilon(orders, published, delta)
        assert epsilon(50, 0.01, 2.5, delta, orders=orders) == pytest.approx(expected, rel=1e-6)
    assert epsilon(50, 0.01, 2.5, 1e-5, orders=orders) == pytest.approx(0.158764, abs=1e-6)


def test_pld_matches_the_analytic_gaussian_mechanism():
    # one Gaussian mechanism of multiplier σ (q = 1, T = 1) is exactly (ε, δ)-DP with
    # δ = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) (Balle & Wang 2018, Thm. 8); the PLD accountant is near-exact,
    # RDP an upper bound
    from scipy.optimize import brentq
    from scipy.stats import norm

    sigma, delta = 2.0, 1e-5
    exact = brentq(lambda e: norm.cdf(0.5 / sigma - e * sigma) - math.exp(e) * norm.cdf(-0.5 / sigma - e * sigma)
                   - delta, 1e-6, 20)
    assert epsilon(1, 1.0, sigma, delta, accountant="pld") == pytest.approx(exact, abs=2e-3)
    assert epsilon(1, 1.0, sigma, delta) > exact


def test_epsilon_grows_with_rounds_and_sampling_and_shrinks_with_noise():
    base = epsilon(50, 0.1, 1.0, 1e-5)
    assert epsilon(100, 0.1, 1.0, 1e-5) > base > epsilon(50, 0.05, 1.0, 1e-5)
    assert epsilon(50, 0.1, 2.0, 1e-5) < base
    assert epsilon(0, 0.1, 1.0, 1e-5) == 0 and epsilon(10, 0.1, 0.0, 1e-5) == math.inf


@pytest.mark.parametrize("bad", [dict(rounds=-1), dict(rounds=2.5), dict(sampling_rate=1.5), dict(delta=0.0),
                                 dict(noise_multiplier=math.nan), dict(accountant="moments")])
def test_epsilon_refuses_bad_arguments_by_name(bad):
    args = {**dict(rounds=10, sampling_rate=0.1, noise_multiplier=1.0, delta=1e-5), **bad}
    with pytest.raises(ValueError, match=next(iter(bad))):
        epsilon(**args)


def test_config_epsilon_reads_rounds_rate_and_noise_from_a_dp_config():
    cfg = toy_config(algorithm="dp", algorithm_args={"noise_multiplier": 1.3}, clients_per_round=2, rounds=20)
    assert config_epsilon(cfg, 1e-5) == epsilon(20, 0.5, 1.3, 1e-5)
    assert config_epsilon(cfg, 1e-5, rounds=5) == epsilon(5, 0.5, 1.3, 1e-5)
    with pytest.raises(ValueError, match="algorithm='dp'"):
        config_epsilon(toy_config(), 1e-5)
