"""DRAG Figs. 1–2 on 2-D vectors (fedkit.papers.drag_vectors): the attack round, the manipulation, their checks,
the table behind the figure."""
import math

import matplotlib
import numpy as np
import pytest
import torch

from fedkit.papers import drag_vectors as V

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def attack():
    return V.attack_round(seed=0, clients=10, attackers=4, variance=3.0, draw_rounds=750, robust_c=0.5)


@pytest.fixture(scope="module")
def fig2():
    return V.manipulation(c=0.25)


def test_at_places_vectors_relative_to_r():
    v = V.at(90.0, 2.0)
    a = math.radians(V.R_ANGLE + 90.0)
    np.testing.assert_allclose(v.numpy(), [2 * math.cos(a), 2 * math.sin(a)], atol=1e-15)
    r = V.at(0.0, V.R_NORM)
    assert r.norm().item() == pytest.approx(V.R_NORM)
    assert float(v @ r) == pytest.approx(0.0, abs=1e-12)  # 90° from r


def test_drag_on_a_reversed_upload_by_hand():
    # g = −r: cos = −1, λ = 2c (eq. 10); eq. 11 gives (1 − 2c)(−r) + 2c r = (4c − 1) r (‖g‖ = ‖r‖)
    r = torch.tensor([3.0, 4.0], dtype=torch.float64)
    v, lam, cos = V.drag(-r[None], r, 0.3)
    assert cos.item() == pytest.approx(-1.0) and lam.item() == pytest.approx(0.6)
    np.testing.assert_allclose(v[0].numpy(), 0.2 * r.numpy(), atol=1e-12)
    # eq. 14 of −2 r: rescaled to −r first, so the same (4c − 1) r
    v14, _, _ = V.drag(-2 * r[None], r, 0.3, robust=True)
    np.testing.assert_allclose(v14[0].numpy(), 0.2 * r.numpy(), atol=1e-12)


def test_attack_round_uploads_and_steps(attack):
    a = attack
    assert a.p.shape == (750, 10) and len(a.attackers) == 4 and len(a.draws) == 3000
    assert (a.p[:, ~a.threat.bad] == 1).all()
    t = a.t_show
    shown = a.p[t, a.attackers]
    assert shown.min() < -1 and shown.max() > 1.5 and ((shown > 0) & (shown < 1)).any()
    assert all(not (a.p[s, a.attackers].min() < -1 and a.p[s, a.attackers].max() > 1.5
                    and ((a.p[s, a.attackers] > 0) & (a.p[s, a.attackers] < 1)).any()) for s in range(t))
    g = a.g_round.numpy()
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), np.clip(np.linalg.norm(g, axis=1), 0.7, 1.3))
    np.testing.assert_allclose(a.uploaded.numpy(), a.p[t][:, None] * g, rtol=1e-12)
    steps = list(a.steps.values())
    np.testing.assert_allclose(steps[0].numpy(), g.mean(0), rtol=1e-6)  # eq. 4, equal weights
    np.testing.assert_allclose(steps[1].numpy(), a.uploaded.numpy().mean(0), rtol=1e-6)  # eq. 5
    # robust DRAG (eq. 14) by hand: uploads rescaled to ‖g_0‖ = 1, λ = c (1 − cos)
    u, g0 = a.uploaded.numpy(), a.root.numpy()
    cos = u @ g0 / np.linalg.norm(u, axis=1)
    lam = 0.5 * (1 - cos)
    v = (1 - lam)[:, None] * u / np.linalg.norm(u, axis=1)[:, None] + lam[:, None] * g0
    np.testing.assert_allclose(steps[3].numpy(), v.mean(0), rtol=1e-12)


def test_attack_draws_match_the_normal_law(attack):
    # P(|p| > 1) for N(0, 3) = 2 (1 − Φ(1/√3)) ≈ 0.5637; Φ(0.57735) ≈ 0.71815 from a table
    assert V.share_beyond_one(3.0) == pytest.approx(2 * (1 - 0.71815), abs=1e-4)
    assert V.share_beyond_one(1e-12) == 0.0 and V.share_beyond_one(1e12) == pytest.approx(1.0, abs=1e-5)
    V.check_attack(attack)


def test_check_attack_catches_a_wrong_step(attack):
    bad = V.AttackRound(**{**attack.__dict__, "steps": dict(attack.steps)})
    key = list(bad.steps)[3]
    bad.steps[key] = bad.steps[key] + 1e-3
    with pytest.raises(AssertionError):
        V.check_attack(bad)


def test_attack_round_without_a_shown_round_says_so():
    with pytest.raises(ValueError, match="raise draw_rounds"):
        V.attack_round(seed=0, clients=10, attackers=1, variance=3.0, draw_rounds=1)


def test_attack_report_lines(attack):
    text = V.attack_report(attack).splitlines()
    assert len(text) == 2 + 4 + 2
    assert text[0].startswith(f"attackers {attack.attackers.tolist()}; round {attack.t_show} shown")
    assert "3000 draws of p" in text[1]


def test_manipulation_matches_closed_forms(fig2):
    m = fig2
    th = np.radians(m.theta)
    for c in V.C_CURVES:
        s = m.sweep[c]
        # v = ‖g‖ ((1 − λ) ĝ + λ r̂): along r (1 − λ) cos θ + λ, across r (1 − λ) sin θ, both ÷ ‖g‖
        lam = c * (1 - np.cos(th))
        np.testing.assert_allclose(s["along_v"], (1 - lam) * np.cos(th) + lam, atol=1e-12)
        np.testing.assert_allclose(s["across_v"], (1 - lam) * np.sin(th), atol=1e-12)
        np.testing.assert_allclose(s["norm11"], np.hypot((1 - lam) * np.cos(th) + lam, (1 - lam) * np.sin(th)),
                                   atol=1e-12)
    np.testing.assert_allclose(m.along_g, np.cos(th), atol=1e-12)
    # panel (f): g₃ = −1.8 r ↦ (4c − 1) r: −0.6, 0, +1
    assert [round(V.along_r(m, m.v_f[c][0][2]), 12) for c in V.C_SWEEP] == [-0.6, 0.0, 1.0]
    # panel (e) at c = 1, 120°: λ = 1 − cos 120° = 1.5
    assert m.v_e[1.0][1].item() == pytest.approx(1.5)
    V.check_manipulation(m)


def test_check_manipulation_catches_a_wrong_sweep():
    m = V.manipulation(c=0.25)
    m.sweep[0.25]["lam"] = m.sweep[0.25]["lam"] * 1.01
    with pytest.raises(AssertionError):
        V.check_manipulation(m)


def test_vector_rows_counts_and_values(attack, fig2):
    data = V.vector_rows(attack, fig2)
    counts = data.groupby("panel").size()
    # a: 2 rows per client + root + 4 steps; b: 16 rounds; c: 3000 draws; d: 4 uploads × 3; e: g + 101 c values;
    # f: 3 uploads × (g, rescaled, 3 c); g-i: 5 c values × 181 angles
    assert counts.to_dict() == {"a": 25, "b": 16, "c": 3000, "d": 12, "e": 102, "f": 15, "g-i": 905}
    c_rows = data[data["panel"] == "c"]
    np.testing.assert_allclose(c_rows["p"].to_numpy(), np.round(attack.draws, 9))
    e = data[(data["panel"] == "e") & (data["vector"] == "v_eq11")]
    np.testing.assert_allclose(e["lambda"], np.round(e["c"] * 1.5, 9), atol=1e-9)
    assert str(data["client"].dtype) == "Int64"


def test_draw_makes_nine_panels(attack, fig2):
    import matplotlib.pyplot as plt

    fig = V.draw(attack, fig2)
    assert len(fig.axes) == 9
    assert fig.axes[0].get_title().startswith(f"(a) Fig. 1: one round (t = {attack.t_show})")
    assert fig.axes[8].get_xlim() == (0.0, 180.0)
    plt.close(fig)


def test_manipulation_report_lines(fig2):
    text = V.manipulation_report(fig2).splitlines()
    assert len(text) == 1 + len(V.C_SWEEP) + len(V.C_CURVES)
    assert text[0].startswith("(d) c = 0.25: λ = [")
    # eq. 14 of −1.8 r = (4c − 1) r: −0.60 r, +0.00 r (printed as ±0.00), +1.00 r
    assert text[1].endswith("= -0.60 r") and text[3].endswith("= +1.00 r")
    # c = 1 over θ ∈ [0°, 180°]: λ = 1 − cos θ spans [0, 2]
    assert text[-1].startswith("c = 1.0: λ ∈ [0.00, 2.00]")
