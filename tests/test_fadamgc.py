"""FAdamGC and FA-NT: one local step by hand, the y / y_i bookkeeping under selective tracking, LocalAdam, bytes."""
import numpy as np
import pandas as pd
import pytest
import torch
from test_algorithms import ENGINES, W0, client_problem, final_weights, toy_config
from test_run import client_results, digits_config, results

from fedkit import ConfigError, run
from fedkit.algorithms import Settings, make_algorithm
from fedkit.engine import ClientInput
from fedkit.federation import Federation
from fedkit.optim import SGD, Adam

ADAM = Adam(lr=0.01, bias_correction=False)


def client(name):
    alg = make_algorithm(name, Settings(num_clients=4, clients_per_round=2, optimizer=ADAM))
    w0 = torch.linspace(-1, 1, 5)
    y, y_i = torch.tensor([0.2, 0.0, -0.1, 0.3, 0.05]), torch.tensor([0.1, 0.1, 0.1, -0.2, 0.0])
    c = ClientInput(w0, {"y": y, "track": torch.tensor(1.0)}, {"y_i": y_i}, torch.tensor(2.0), 0.01, 1)
    return alg, c, y - y_i


def test_fadamgc_corrects_before_the_moments_and_skips_bias_correction():
    alg, c, correction = client("fadamgc")
    w, local = alg.local_init(c)
    g = torch.tensor([0.5, -0.2, 0.0, 0.1, -0.3])
    w1, local, _ = alg.local_step(w, local, c, lambda _: (g, torch.tensor(0.0)))
    d = g + correction
    m, v = 0.1 * d, 0.001 * d * d  # no bias correction: the first step is inflated by 0.1 / √0.001 ≈ 3.16
    torch.testing.assert_close(w1, c.w0 - 0.01 * m / (v.sqrt() + 1e-8))
    torch.testing.assert_close(local["tracked"], g)  # the raw gradient is what y_i tracks
    up, keep = alg.local_final(w1, local, c._replace(steps=torch.tensor(1.0)), None)
    torch.testing.assert_close(keep["y_i"], g)
    torch.testing.assert_close(up["dy"], g - c.kept["y_i"])


def test_fa_nt_corrects_after_adams_direction():
    alg, c, correction = client("fa_nt")
    w, local = alg.local_init(c)
    g = torch.tensor([0.5, -0.2, 0.0, 0.1, -0.3])
    w1, local, _ = alg.local_step(w, local, c, lambda _: (g, torch.tensor(0.0)))
    d = 0.1 * g / ((0.001 * g * g).sqrt() + 1e-8)  # Adam's direction of the raw gradient
    torch.testing.assert_close(w1, c.w0 - 0.01 * (d + correction))
    torch.testing.assert_close(local["tracked"], d)


def test_a_client_outside_the_tracking_subset_keeps_its_buffer_and_uploads_no_change():
    alg, c, _ = client("fadamgc")
    c = c._replace(recv={**c.recv, "track": torch.tensor(0.0)})
    w, local = alg.local_init(c)
    w1, local, _ = alg.local_step(w, local, c, lambda _: (torch.ones(5), torch.tensor(0.0)))
    up, keep = alg.local_final(w1, local, c, None)
    torch.testing.assert_close(keep["y_i"], c.kept["y_i"])
    assert (up["dy"] == 0).all()
    ups = {"delta": torch.zeros(3, 5), "dy": torch.zeros(3, 5), "track": torch.tensor([1.0, 0.0, 1.0])}
    assert alg.bytes_up(ups).tolist() == [40.0, 20.0, 40.0]


@pytest.mark.parametrize("name", ["fadamgc", "fa_nt"])
def test_y_stays_the_mean_of_every_clients_buffer_under_partial_participation_and_selective_tracking(name):
    cfg = digits_config(algorithm=name, algorithm_args={"tracked": 2}, optimizer_args={"bias_correction": False},
                        lr=0.01, rounds=4)
    fed = Federation(cfg)
    s = fed.initial()
    for rnd in fed.rounds(s):
        after = rnd.after
        torch.testing.assert_close(after.server["y"], after.kept["y_i"].mean(0), rtol=1e-5, atol=1e-7)
        assert rnd.metrics["tracked"].sum() == 2 and len(rnd.clients) == 5
        others = torch.as_tensor(rnd.clients[rnd.metrics["tracked"].cpu().numpy() == 0])
        torch.testing.assert_close(after.kept["y_i"][others], s.kept["y_i"][others])  # untracked: unchanged
        s = after
    assert s.server["y"].abs().sum() > 0


def test_local_adam_is_fedavg_with_the_client_adam_and_sends_only_the_model():
    cfg = digits_config(optimizer="adam", optimizer_args={"bias_correction": False}, lr=0.01)
    local_adam = run(cfg.replace(algorithm="local_adam"), cache=False, progress=False)
    fedavg = run(cfg.replace(algorithm_args={"weighting": "uniform"}), cache=False, progress=False)
    np.testing.assert_allclose(local_adam.weights.numpy(), fedavg.weights.numpy(), rtol=1e-6, atol=1e-7)
    d = local_adam.weights.numel()
    assert (local_adam.clients["bytes_up"] == 4 * d).all() and (local_adam.clients["bytes_down"] == 4 * d).all()


@pytest.mark.parametrize("name", ["fadamgc", "fa_nt"])
def test_engines_give_the_same_history(name):
    cfg = digits_config(algorithm=name, algorithm_args={"tracked": 3}, optimizer_args={"bias_correction": False},
                        lr=0.01, local_steps=None, local_epochs=1)
    seq = run(cfg.replace(engine="sequential"), cache=False, progress=False)
    vec = run(cfg.replace(engine="vectorized"), cache=False, progress=False)
    pd.testing.assert_frame_equal(results(seq), results(vec), rtol=1e-4, atol=1e-5)
    pd.testing.assert_frame_equal(client_results(seq), client_results(vec), rtol=1e-4, atol=1e-5)


def test_bad_settings_are_refused():
    for name in ("fadamgc", "fa_nt", "local_adam"):
        with pytest.raises(ConfigError, match="Adam"):
            make_algorithm(name, Settings(optimizer=SGD()))
    with pytest.raises(ConfigError, match="tracked"):
        make_algorithm("fadamgc", Settings(optimizer=ADAM), tracked=0)
    with pytest.raises(ConfigError, match="tracked=6"):
        make_algorithm("fadamgc", Settings(clients_per_round=5, optimizer=ADAM), tracked=6)


def test_without_bias_correction_a_constant_gradient_is_inflated_by_the_known_factor():
    """m_k = (1 − β1^k) g, v_k = (1 − β2^k) g²: step k moves η (1 − β1^k)/√(1 − β2^k) (≈ 3.16 at k = 1, 6.5 at 10)."""
    alg, c, correction = client("fadamgc")
    c = c._replace(recv={**c.recv, "y": c.kept["y_i"]})  # no correction: ĝ = g
    w, local = alg.local_init(c)
    g = torch.tensor([0.5, -0.2, 0.3, 0.1, -0.3])
    for k in range(1, 11):
        w_next, local, _ = alg.local_step(w, local, c, lambda _: (g, torch.tensor(0.0)))
        factor = (1 - 0.9**k) / (1 - 0.999**k) ** 0.5
        torch.testing.assert_close(w - w_next, 0.01 * factor * g.sign(), rtol=1e-4, atol=0)
        w = w_next
    assert 6.4 < factor < 6.6


@pytest.mark.parametrize("bias_correction", [True, False])
def test_amsgrad_divides_by_the_running_maximum_of_v(bias_correction):
    opt = Adam(lr=0.1, bias_correction=bias_correction, amsgrad=True)
    w, state = torch.zeros(3), opt.init(torch.zeros(3))
    gradients = [torch.tensor([1.0, -2.0, 0.5]), torch.tensor([0.1, 0.1, 3.0]), torch.tensor([0.2, -0.1, 0.0])]
    m, v, v_max = torch.zeros(3), torch.zeros(3), torch.zeros(3)
    for t, g in enumerate(gradients, start=1):
        w_new, state = opt.step(w, g, state, 0.1)
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        v_max = torch.maximum(v_max, v)
        c1, c2 = (1 - 0.9**t, 1 - 0.999**t) if bias_correction else (1.0, 1.0)
        torch.testing.assert_close(w_new, w - 0.1 * (m / c1) / ((v_max / c2).sqrt() + 1e-8))
        w = w_new
    assert (state["v_max"] > state["v"]).any()  # the max was used
    if bias_correction:  # and it is PyTorch's AMSGrad
        p = torch.zeros(3, requires_grad=True)
        reference = torch.optim.Adam([p], lr=0.1, amsgrad=True)
        for g in gradients:
            p.grad = g.clone()
            reference.step()
        torch.testing.assert_close(w, p.detach())


def test_the_special_case_moves_every_coordinate_at_most_eta_l_a_step():
    """β1 = β2 = 0 (Theorem 5.2 / Table 3): the local step is η ĝ ⊘ (|ĝ| + ε); one round of K steps with full
    participation and η_g = 1 moves the global model by at most K η_l in every coordinate."""
    special = Adam(lr=0.01, beta1=0.0, beta2=0.0, bias_correction=False)
    alg = make_algorithm("fadamgc", Settings(num_clients=4, clients_per_round=2, optimizer=special))
    _, c, correction = client("fadamgc")
    w, local = alg.local_init(c)
    g = torch.tensor([0.5, -0.2, 0.0, 0.1, -0.3])
    w1, _, _ = alg.local_step(w, local, c, lambda _: (g, torch.tensor(0.0)))
    d = g + correction
    torch.testing.assert_close(w1, c.w0 - 0.01 * d / (d.abs() + 1e-8))
    cfg = digits_config(algorithm="fadamgc", optimizer="adam", lr=0.01, rounds=2, local_steps=7,
                        optimizer_args={"beta1": 0.0, "beta2": 0.0, "bias_correction": False})
    fed = Federation(cfg.replace(clients_per_round=cfg.num_clients))
    w = fed.initial().w
    for rnd in fed.rounds():
        moved = (rnd.after.w - w).abs().max().item()
        assert 0 < moved <= 7 * 0.01 * (1 + 1e-5)
        w = rnd.after.w


def fadamgc_reference(b, a, rounds, steps, lr, reset_moments):
    """FAdamGC by hand on quadratic clients (exact gradients A_i (w − b_i)), full participation, every client
    tracking, uniform weights, η_g = 1, the client Adam with bias correction; with reset_moments=False each client's
    moments and step count go on from where its last round left them."""
    n, x, y = len(b), np.array(W0), np.zeros(2)
    y_i, m, v, t = np.zeros((n, 2)), np.zeros((n, 2)), np.zeros((n, 2)), np.zeros(n)
    for _ in range(rounds):
        if reset_moments:
            m, v, t = np.zeros((n, 2)), np.zeros((n, 2)), np.zeros(n)
        deltas, dys = [], []
        for i in range(n):
            w, tracked = x.copy(), np.zeros(2)
            for _ in range(steps):
                g = a[i] @ (w - b[i])
                d = g + y - y_i[i]  # the correction before the moments
                t[i] += 1
                m[i], v[i] = 0.9 * m[i] + 0.1 * d, 0.999 * v[i] + 0.001 * d * d
                w = w - lr * (m[i] / (1 - 0.9 ** t[i])) / (np.sqrt(v[i] / (1 - 0.999 ** t[i])) + 1e-8)
                tracked += g
            deltas.append(w - x)
            dys.append(tracked / steps - y_i[i])
            y_i[i] = tracked / steps
        x, y = x + np.mean(deltas, axis=0), y + np.sum(dys, axis=0) / n
    return x


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("reset_moments", [True, False])
def test_kept_moments_carry_over_from_round_to_round(engine, reset_moments):
    cfg = toy_config(engine=engine, algorithm="fadamgc", algorithm_args={"reset_moments": reset_moments},
                     optimizer="adam", lr=0.05, rounds=3)
    b, a, _ = client_problem(cfg)
    expected = fadamgc_reference(b, a, 3, cfg.local_steps, 0.05, reset_moments)
    other = fadamgc_reference(b, a, 3, cfg.local_steps, 0.05, not reset_moments)
    assert np.abs(expected - other).max() > 1e-3  # the switch matters on this problem
    np.testing.assert_allclose(final_weights(cfg), expected, rtol=1e-5, atol=1e-6)
