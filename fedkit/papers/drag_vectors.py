"""DRAG Figs. 1–2 computed on 2-D vectors: the random-scaling attack (§III, eq. 5) and the vector manipulation
(eqs. 10, 11, 14), by fedkit's own threat, ``divergence``/``dragged`` and server steps.

``attack_round`` builds Fig. 1 (one attacked round of M clients, A attackers, and the draws of p),
``manipulation`` builds Fig. 2 (the uploads of panels d–f and the angle sweep of g–i); ``check_attack`` and
``check_manipulation`` assert what the paper says of them against formulas written out by hand; ``vector_rows``
is the table behind the figure and ``draw`` the figure itself (notebooks/drag/fig1_fig2_vector_manipulation).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import erf, sqrt

import numpy as np
import pandas as pd
import torch

from ..algorithms import RoundInfo, Settings, make_algorithm
from ..algorithms.drag import divergence, dragged
from ..threats import RandomScaling

R_ANGLE = 15.0  # direction of the reference r (degrees)
R_NORM = 1.5
C_SWEEP = (0.1, 0.25, 0.5)  # Remark 2's regime λ ≤ 1: c = 0.1 (CIFAR-10), 0.25 (EMNIST), robust 0.5
C_CURVES = (*C_SWEEP, 1.0)  # c = 1 lets λ exceed 1 (Remark 2: the g component is reversed)
TOL = 1e-12
SHOWN_ROUNDS = np.arange(16)  # panel (b): one attacker's uploads over these rounds


def np2(x):
    return x.detach().cpu().numpy()


def at(angle, norm=1.0, device="cpu"):
    """A 2-D float64 vector at ``angle`` degrees from r (r itself lies at R_ANGLE from the x axis), of length norm."""
    a = np.radians(R_ANGLE + angle)
    return torch.tensor([np.cos(a), np.sin(a)], dtype=torch.float64, device=device) * norm


def drag(g, ref, c, robust=False):
    """(v, λ, cos) of eq. 11 (robust=False) or eq. 14 (robust=True) for the uploads g [n, 2], by fedkit."""
    lam, cos = divergence(g, ref, c)  # eq. 10
    return dragged(g, ref, lam, robust), lam, cos


def round_info(n, root=None, device="cpu"):
    """Round 0 of n clients with equal data sizes (FedAvg's weights are then 1/S, eq. 4), root update ``root``."""
    ones = torch.ones(n, dtype=torch.float64, device=device)
    return RoundInfo(0, clients=torch.arange(n), sizes=ones, steps=ones, lr=0.1, root_delta=root)


@dataclass
class AttackRound:
    """Fig. 1: the threat, p [T, M] (1 for a benign client), the attackers' draws, one shown round t_show with its
    benign updates g_round [M, 2], uploads (eq. 5), root update and the server step of each aggregator."""
    threat: RandomScaling
    p: np.ndarray
    attackers: np.ndarray
    draws: np.ndarray
    g_round: torch.Tensor
    t_show: int
    uploaded: torch.Tensor
    root: torch.Tensor
    steps: dict
    fltrust_log: dict
    robust_log: dict
    variance: float
    robust_c: float

    @property
    def clients(self):
        return np.arange(self.p.shape[1])


def attack_round(seed=0, clients=10, attackers=4, variance=3.0, draw_rounds=750, robust_c=0.5, device="cpu"):
    """One attacked round of ``clients`` clients of which ``attackers`` upload p·g (p ~ N(0, variance), eq. 5).

    The benign updates are 2-D stand-ins for local-SGD updates: directions 35° ± 20°, lengths 0.7–1.3; the trusted
    root update points at 35°. The round shown is the first with a reversal (p < −1), a scale-up (p > 1.5) and a
    scale-down (0 < p < 1) among the attackers."""
    f64 = {"dtype": torch.float64, "device": device}
    M = clients
    threat = RandomScaling(count=attackers, variance=variance)
    threat.choose(M, np.random.default_rng(seed))
    ids = np.arange(M)
    bad = np.flatnonzero(threat.bad)
    p = np.stack([threat.scales(ids, t) for t in range(draw_rounds)])  # [T, M], p_m^t
    draws = p[:, bad].ravel()
    gen = np.random.default_rng(seed + 1)
    angles = np.radians(35.0 + 20.0 * gen.standard_normal(M))
    g_round = torch.tensor(np.stack([np.cos(angles), np.sin(angles)], 1) * gen.uniform(0.7, 1.3, (M, 1)), **f64)
    shown = p[:, bad]
    t_show = next((t for t in range(draw_rounds) if shown[t].min() < -1 and shown[t].max() > 1.5
                   and ((shown[t] > 0) & (shown[t] < 1)).any()), None)
    if t_show is None:
        raise ValueError(f"no round among {draw_rounds} reverses, scales up and scales down at once: "
                         "raise draw_rounds or the attacker count")
    zero = torch.zeros(2, **f64)
    uploaded = threat.uploads(ids, {"delta": g_round}, zero, zero, t_show)["delta"]
    root = torch.tensor([np.cos(np.radians(35.0)), np.sin(np.radians(35.0))], **f64)
    fedavg = make_algorithm("fedavg", Settings(num_clients=M))
    info = lambda r=None: round_info(M, r, device)
    steps = {  # the server step Δ from w = 0; FedAvg's weights are float32 in fedkit, so its steps are float32
        "FedAvg, no attack (eq. 4)": fedavg.aggregate(zero.float(), {}, {"delta": g_round.float()}, info())[0].double(),
        "FedAvg, attacked (eq. 5)": fedavg.aggregate(zero.float(), {}, {"delta": uploaded.float()}, info())[0].double(),
    }
    steps["FLTrust, attacked"], _, fltrust_log = make_algorithm("fltrust", Settings(num_clients=M)).aggregate(
        zero, {}, {"delta": uploaded}, info(root))
    robust_step, _, robust_log = make_algorithm("drag_robust", Settings(num_clients=M), c=robust_c).aggregate(
        zero, {}, {"delta": uploaded}, info(root))
    steps[f"robust DRAG c = {robust_c}, attacked (eq. 14)"] = robust_step
    return AttackRound(threat, p, bad, draws, g_round, t_show, uploaded, root, steps, fltrust_log, robust_log,
                       variance, robust_c)


def attack_report(a: AttackRound) -> str:
    """The lines Fig. 1's notebook prints: the round shown, the draws' statistics, each server step."""
    d = a.draws
    lines = [f"attackers {a.attackers.tolist()}; round {a.t_show} shown, their p = "
             f"{a.p[a.t_show, a.attackers].round(2).tolist()}",
             f"{len(d)} draws of p: mean {d.mean():+.3f}, variance {d.var(ddof=1):.3f} (σ² = {a.variance}), "
             f"reversed (p < 0) {np.mean(d < 0):.3f}, |p| > 1 {np.mean(np.abs(d) > 1):.3f}, "
             f"|p| > 2 {np.mean(np.abs(d) > 2):.3f}"]
    for name, step in a.steps.items():
        step = np2(step)
        cos_root = step @ np2(a.root) / (np.linalg.norm(step) * np.linalg.norm(np2(a.root)))
        lines.append(f"{name:40s} Δ = {step.round(3)}  ‖Δ‖ = {np.linalg.norm(step):.3f}  cos(Δ, r) = {cos_root:+.3f}")
    lines.append(f"FLTrust trust scores: {np2(a.fltrust_log['trust']).round(2).tolist()}")
    lines.append(f"robust DRAG λ:        {np2(a.robust_log['lambda']).round(2).tolist()}")
    return "\n".join(lines)


def share_beyond_one(variance):
    """P(|p| > 1) for p ~ N(0, variance): 2 (1 − Φ(1/σ))."""
    return 2 * (1 - 0.5 * (1 + erf(1 / sqrt(variance) / sqrt(2))))


def check_attack(a: AttackRound) -> None:
    """Fig. 1's claims, asserted: benign clients upload unchanged, attackers p·g; p ~ N(0, σ²) (variance within 10 %,
    half reversed, P(|p| > 1) as in closed form, over ≥ 2000 draws); the server steps equal eq. 5's mean, FLTrust's
    Σ TS ḡ / Σ TS with TS = ReLU(cos(g, g_0)) and eq. 14's mean, computed here by hand."""
    p, draws, t = a.p, a.draws, a.t_show
    assert (p[:, ~a.threat.bad] == 1).all() and a.threat.bad.sum() == len(a.attackers)
    np.testing.assert_allclose(np2(a.uploaded), p[t][:, None] * np2(a.g_round), rtol=1e-12)
    assert len(draws) >= 2000, len(draws)
    assert abs(draws.var(ddof=1) - a.variance) <= 0.1 * a.variance, draws.var(ddof=1)
    assert abs(np.mean(draws < 0) - 0.5) < 0.05, np.mean(draws < 0)
    p_scaled = share_beyond_one(a.variance)
    assert abs(np.mean(np.abs(draws) > 1) - p_scaled) < 0.05, (np.mean(np.abs(draws) > 1), p_scaled)
    assert p[t, a.attackers].min() < -1 and p[t, a.attackers].max() > 1.5  # the round shown reverses and rescales
    u, g0 = np2(a.uploaded), np2(a.root)
    steps = list(a.steps.values())
    np.testing.assert_allclose(np2(steps[0]), np2(a.g_round).mean(0), rtol=1e-6)
    np.testing.assert_allclose(np2(steps[1]), u.mean(0), rtol=1e-6)
    cos_u = u @ g0 / (np.linalg.norm(u, axis=1) * np.linalg.norm(g0))
    ts = np.maximum(cos_u, 0.0)
    np.testing.assert_allclose(np2(a.fltrust_log["trust"]), ts, atol=1e-12)
    bar_u = u * (np.linalg.norm(g0) / np.linalg.norm(u, axis=1))[:, None]
    np.testing.assert_allclose(np2(steps[2]), ts @ bar_u / ts.sum(), rtol=1e-12)
    lam_u = a.robust_c * (1 - cos_u)
    v_u = (1 - lam_u)[:, None] * bar_u + lam_u[:, None] * g0  # eq. 14
    np.testing.assert_allclose(np2(steps[3]), v_u.mean(0), rtol=1e-12)
    assert (ts[p[t] < 0] == 0).all()  # FLTrust drops the reversed uploads (every benign g within 90° of g_0 here)


@dataclass
class Manipulation:
    """Fig. 2: panels (d) several uploads at c, (e) one upload as c grows, (f) eq. 14, (g)–(i) the angle sweep."""
    r: torch.Tensor
    c: float
    d_angles: list
    g_d: torch.Tensor
    v_d: torch.Tensor
    lam_d: torch.Tensor
    cos_d: torch.Tensor
    ref_d: torch.Tensor
    g_e: torch.Tensor
    c_path: np.ndarray
    v_path: torch.Tensor
    v_e: dict
    g_f: torch.Tensor
    f_names: list
    v_f: dict
    g_f_scaled: torch.Tensor
    theta: np.ndarray
    g_norm: float
    g_s: torch.Tensor
    r_hat: torch.Tensor
    r_perp: torch.Tensor
    sweep: dict
    along_g: np.ndarray
    across_g: np.ndarray


def manipulation(c=0.25, device="cpu") -> Manipulation:
    """Every vector of Fig. 2 at the reference r (R_NORM at R_ANGLE), with c the DRAG c of panel (d)."""
    r = at(0.0, R_NORM, device)  # the reference, drawn yellow as in the paper's Fig. 2
    # (d) eq. 11 at c for uploads at several angles to r (and of several lengths)
    d_angles, d_norms = [40.0, 100.0, 150.0, -70.0], [1.0, 1.2, 0.8, 0.9]
    g_d = torch.stack([at(a, n, device) for a, n in zip(d_angles, d_norms)])
    v_d, lam_d, cos_d = drag(g_d, r, c)
    ref_d = (g_d.norm(dim=1) / r.norm())[:, None] * r  # the normalised reference (‖g‖/‖r‖) r of eq. 11
    # (e) eq. 11 for one upload at 120° as c grows
    g_e = at(120.0, 1.0, device)[None]
    c_path = np.linspace(0.0, 1.0, 101)
    v_path = torch.cat([drag(g_e, r, float(cc))[0] for cc in c_path])
    v_e = {cc: drag(g_e, r, cc) for cc in C_CURVES}
    # (f) eq. 14: a scaled-up upload, a scaled-down one and an exactly reversed, scaled one (−1.8 r)
    g_f = torch.stack([at(60.0, 2.6, device), at(-110.0, 0.35, device), -1.8 * r])
    f_names = ["g₁ (60°, ×2.6)", "g₂ (−110°, ×0.35)", "g₃ = −1.8 r"]
    v_f = {cc: drag(g_f, r, cc, robust=True) for cc in C_SWEEP}
    g_f_scaled = (r.norm() / g_f.norm(dim=1))[:, None] * g_f  # (‖r‖/‖g‖) g of eq. 14
    # (g)–(i) the sweep over the angle θ between g and r
    theta = np.arange(0.0, 180.5, 1.0)
    g_norm = 0.8
    g_s = torch.stack([at(a, g_norm, device) for a in theta])
    r_hat = r / r.norm()
    r_perp = torch.stack([-r_hat[1], r_hat[0]])
    sweep = {}
    for cc in (0.0, *C_CURVES):
        v11, lam, cos = drag(g_s, r, cc)
        v14, _, _ = drag(g_s, r, cc, robust=True)
        sweep[cc] = {"v11": v11, "v14": v14, "lam": np2(lam), "cos": np2(cos),
                     "along_v": np2(v11 @ r_hat) / g_norm, "across_v": np2(v11 @ r_perp) / g_norm,
                     "along_v14": np2(v14 @ r_hat) / r.norm().item(), "norm11": np2(v11.norm(dim=1)) / g_norm,
                     "norm14": np2(v14.norm(dim=1)) / r.norm().item()}
    along_g, across_g = np2(g_s @ r_hat) / g_norm, np2(g_s @ r_perp) / g_norm
    return Manipulation(r, c, d_angles, g_d, v_d, lam_d, cos_d, ref_d, g_e, c_path, v_path, v_e, g_f, f_names, v_f,
                        g_f_scaled, theta, g_norm, g_s, r_hat, r_perp, sweep, along_g, across_g)


def along_r(m: Manipulation, v) -> float:
    """v's component along r in units of ‖r‖ (eq. 14 maps −s r to (4c − 1) r)."""
    return np2(v @ m.r_hat).item() / m.r.norm().item()


def manipulation_report(m: Manipulation) -> str:
    lines = [f"(d) c = {m.c}: λ = {np2(m.lam_d).round(3).tolist()}, cos = {np2(m.cos_d).round(3).tolist()}"]
    for cc in C_SWEEP:
        lines.append(f"(f) c = {cc}: eq. 14 of −1.8 r = {np2(m.v_f[cc][0][2]).round(4).tolist()} "
                     f"= {along_r(m, m.v_f[cc][0][2]):+.2f} r")
    for cc in C_CURVES:
        s = m.sweep[cc]
        lines.append(f"c = {cc}: λ ∈ [{s['lam'].min():.2f}, {s['lam'].max():.2f}], largest gain along r "
                     f"{(s['along_v'] - m.along_g).max():.3f}·‖g‖, min ‖v‖/‖g‖ {s['norm11'].min():.3f}")
    return "\n".join(lines)


def check_manipulation(m: Manipulation) -> None:
    """Fig. 2's caption and Remarks 2–3, asserted on fedkit's vectors: λ = c (1 − cos θ) ∈ [0, 2c] (eq. 10); v's
    component along r grows by exactly ‖g‖ c (1 − cos θ)², across r it is × (1 − λ) (eq. 11); for c ≤ 0.5
    ‖v‖ ≤ ‖g‖ (eq. 11), ‖v‖ ≤ ‖r‖ (eq. 14) and diversity is kept; at c = 1 the g component reverses beyond 90°;
    c = 0 is FedAvg; eq. 14 maps −s r to (4c − 1) r and ignores any positive rescaling of an upload."""
    theta, along_g, across_g, r = m.theta, m.along_g, m.across_g, m.r
    cos_theta = np.cos(np.radians(theta))
    for cc in C_CURVES:
        s = m.sweep[cc]
        np.testing.assert_allclose(s["cos"], cos_theta, atol=1e-12)
        np.testing.assert_allclose(s["lam"], cc * (1 - cos_theta), atol=1e-12)  # eq. 10, in [0, 2c]
        assert (s["lam"] >= -TOL).all() and (s["lam"] <= 2 * cc + TOL).all()
        np.testing.assert_allclose(s["along_v"] - along_g, cc * (1 - cos_theta) ** 2, atol=1e-12)
        np.testing.assert_allclose(s["across_v"], (1 - s["lam"]) * across_g, atol=1e-12)
        np.testing.assert_allclose(s["norm14"], s["norm11"], atol=1e-12)  # same shape, different length
    for cc in C_SWEEP:  # c ≤ 0.5: λ ≤ 1
        s = m.sweep[cc]
        assert (s["along_v"] >= along_g - TOL).all(), cc  # v has the larger component along r at every angle
        assert (s["along_v14"] >= along_g - TOL).all(), cc  # eq. 14 as well (relative to ‖r‖)
        assert (s["lam"] <= 1 + TOL).all() and (s["across_v"] * across_g >= -TOL).all(), cc  # diversity kept
        assert (s["norm11"] <= 1 + TOL).all(), cc  # ‖v‖ ≤ ‖g‖ (eq. 11)
        assert (s["norm14"] <= 1 + TOL).all(), cc  # ‖v‖ ≤ ‖r‖ (eq. 14)
        assert (drag(m.g_d, r, cc)[0].norm(dim=1) <= m.g_d.norm(dim=1) + TOL).all(), cc  # panel (d)'s uploads too
        assert (m.v_f[cc][0].norm(dim=1) <= r.norm() + TOL).all(), cc  # and panel (f)'s
    s = m.sweep[1.0]  # Remark 2: at c = 1, λ > 1 exactly beyond 90°, and there g's component across r is reversed
    beyond, inside = (theta > 90) & (theta < 180), theta < 90
    assert (s["lam"][beyond] > 1).all() and (s["lam"][inside] < 1).all()
    assert (s["across_v"][beyond] * across_g[beyond] < 0).all()
    assert (s["across_v"][inside] * across_g[inside] >= 0).all()
    np.testing.assert_array_equal(np2(m.sweep[0.0]["v11"]), np2(m.g_s))  # c = 0: v = g (DRAG ≡ FedAvg)
    np.testing.assert_array_equal(np2(drag(m.g_d, r, 0.0)[0]), np2(m.g_d))
    for cc in C_SWEEP:  # eq. 14 maps an exactly reversed, scaled upload to (4c − 1) r
        np.testing.assert_allclose(np2(m.v_f[cc][0][2]), (4 * cc - 1) * np2(r), atol=1e-12)
    for cc in C_SWEEP:  # eq. 14 is invariant to any positive rescaling of an upload (the scaling half of the attack)
        base = np2(drag(m.g_s, r, cc, robust=True)[0])
        for factor in (1e-3, 0.3, 1.7, 5.0, 1e3):
            np.testing.assert_allclose(np2(drag(factor * m.g_s, r, cc, robust=True)[0]), base, atol=1e-12)
    # panel (e): the path of v as c grows passes through the marked points, and at c = 1 the g part is reversed
    marked = [int(round(cc * (len(m.c_path) - 1))) for cc in C_SWEEP]
    np.testing.assert_allclose(np2(m.v_path[marked]), np2(torch.cat([m.v_e[cc][0] for cc in C_SWEEP])), atol=1e-12)
    assert m.v_e[1.0][1].item() > 1


def vector_rows(a: AttackRound, m: Manipulation) -> pd.DataFrame:
    """The numbers behind every panel: one row per panel, vector, c, angle or draw."""
    p, t_show, g_np, u_np = a.p, a.t_show, np2(a.g_round), np2(a.uploaded)
    trust, lam_a = np2(a.fltrust_log["trust"]), np2(a.robust_log["lambda"])
    rows = []
    for k in a.clients:
        kind = "attacker" if a.threat.bad[k] else "benign"
        rows.append({"panel": "a", "vector": f"g_{kind}", "client": k, "round": t_show, "p": p[t_show, k],
                     "x": g_np[k, 0], "y": g_np[k, 1]})
        rows.append({"panel": "a", "vector": f"upload_{kind}", "client": k, "round": t_show, "p": p[t_show, k],
                     "x": u_np[k, 0], "y": u_np[k, 1], "trust": trust[k], "lambda": lam_a[k], "c": a.robust_c})
    g0 = np2(a.root)
    rows.append({"panel": "a", "vector": "r_root", "x": g0[0], "y": g0[1]})
    for name, step in a.steps.items():
        rows.append({"panel": "a", "vector": f"step: {name}", "x": np2(step)[0], "y": np2(step)[1]})
    m0, A = a.attackers[0], len(a.attackers)
    rows += [{"panel": "b", "vector": "upload_in_g_units", "client": m0, "round": t, "p": p[t, m0], "x": p[t, m0]}
             for t in SHOWN_ROUNDS]
    rows += [{"panel": "c", "vector": "p_draw", "draw": k, "client": a.attackers[k % A], "round": k // A, "p": pk}
             for k, pk in enumerate(a.draws)]
    for k in range(len(m.d_angles)):
        for name, vec in (("g", m.g_d), ("r_normalised", m.ref_d), ("v_eq11", m.v_d)):
            rows.append({"panel": "d", "vector": name, "c": m.c, "angle_deg": m.d_angles[k], "x": np2(vec[k])[0],
                         "y": np2(vec[k])[1], "lambda": m.lam_d[k].item(), "cos": m.cos_d[k].item()})
    g_e_np = np2(m.g_e[0])
    rows.append({"panel": "e", "vector": "g", "angle_deg": 120.0, "x": g_e_np[0], "y": g_e_np[1]})
    for cc, v in zip(m.c_path, np2(m.v_path)):
        rows.append({"panel": "e", "vector": "v_eq11", "c": cc, "angle_deg": 120.0, "x": v[0], "y": v[1],
                     "lambda": cc * (1 - np.cos(np.radians(120.0)))})
    for k, name in enumerate(m.f_names):
        rows.append({"panel": "f", "vector": f"g: {name}", "x": np2(m.g_f[k])[0], "y": np2(m.g_f[k])[1]})
        rows.append({"panel": "f", "vector": f"g_rescaled: {name}", "x": np2(m.g_f_scaled[k])[0],
                     "y": np2(m.g_f_scaled[k])[1]})
        for cc in C_SWEEP:
            v, lam, cos = m.v_f[cc]
            rows.append({"panel": "f", "vector": f"v_eq14: {name}", "c": cc, "x": np2(v[k])[0], "y": np2(v[k])[1],
                         "lambda": lam[k].item(), "cos": cos[k].item(), "along_r": np2(v[k] @ m.r_hat).item()})
    for cc in (0.0, *C_CURVES):
        s = m.sweep[cc]
        for j, angle in enumerate(m.theta):
            rows.append({"panel": "g-i", "vector": "angle_sweep", "c": cc, "angle_deg": angle, "lambda": s["lam"][j],
                         "cos": s["cos"][j], "along_r": s["along_v"][j], "along_r_g": m.along_g[j],
                         "across_r": s["across_v"][j], "across_r_g": m.across_g[j],
                         "norm_ratio_eq11": s["norm11"][j], "norm_ratio_eq14": s["norm14"][j]})
    return pd.DataFrame(rows).astype({"client": "Int64", "round": "Int64", "draw": "Int64"}).round(9)



# ---- the figure -------------------------------------------------------------------------------------------------
COLORS_C = {0.1: "tab:green", 0.25: "tab:blue", 0.5: "tab:purple", 1.0: "tab:red"}
R_COLOR, G_COLOR, V_COLOR = "gold", "tab:blue", "black"  # the paper's Fig. 2 colours: r yellow, g blue, v black


def arrow(ax, vec, color, label=None, start=(0.0, 0.0), lw=2.0, ls="-", alpha=1.0, zorder=3):
    """An arrow from ``start`` to ``start + vec``; with ``label``, a legend entry in the same style."""
    vec, start = np.asarray(vec, float), np.asarray(start, float)
    ax.annotate("", xy=start + vec, xytext=start, zorder=zorder, arrowprops={
        "arrowstyle": "-|>", "color": color, "lw": lw, "ls": ls, "alpha": alpha, "shrinkA": 0, "shrinkB": 0,
        "mutation_scale": 14})
    if label:
        ax.plot([], [], color=color, lw=lw, ls=ls, alpha=alpha, label=label)


def frame(ax, points, pad=0.25):
    """Equal-aspect limits that hold the origin and every point, padded, with the axes drawn faintly."""
    pts = np.vstack([np.zeros((1, 2)), *[np.atleast_2d(q) for q in points]])
    lo, hi = pts.min(0) - pad, pts.max(0) + pad
    ax.set(xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]), aspect="equal")
    ax.axhline(0, color="0.9", lw=0.8, zorder=0)
    ax.axvline(0, color="0.9", lw=0.8, zorder=0)


def draw_attack(axes, a: AttackRound) -> None:
    """Panels (a)–(c) of Fig. 1 on the three axes."""
    ax_a, ax_b, ax_c = axes
    p, t_show, g_np, u_np, M, A = a.p, a.t_show, np2(a.g_round), np2(a.uploaded), len(a.clients), len(a.attackers)
    for k in a.clients:
        if a.threat.bad[k]:
            arrow(ax_a, g_np[k], "tab:red", lw=1.0, ls="--", alpha=0.5)
            arrow(ax_a, u_np[k], "tab:red", lw=1.8)
            ax_a.text(*(u_np[k] * 1.06), f"p = {p[t_show, k]:+.2f}", color="tab:red", fontsize=9,
                      ha="left" if u_np[k][0] >= 0 else "right")
        else:
            arrow(ax_a, g_np[k], "0.2", lw=1.2)
    ax_a.plot([], [], color="0.2", lw=1.2, label="benign upload g_m")
    ax_a.plot([], [], color="tab:red", lw=1.8, label="attacker's upload p·g_m (eq. 5)")
    ax_a.plot([], [], color="tab:red", lw=1.0, ls="--", alpha=0.5, label="attacker's honest g_m")
    arrow(ax_a, np2(a.root), R_COLOR, "root reference r (eq. 13)", lw=3)
    step_styles = [("tab:green", 5.0, 4), ("tab:orange", 2.5, 7), ("tab:cyan", 3.8, 5), ("tab:blue", 2.2, 6)]
    for (name, step), (col, width, z) in zip(a.steps.items(), step_styles):
        arrow(ax_a, np2(step), col, f"Δ: {name}, ‖Δ‖ = {np2(step.norm()).item():.2f}", lw=width, zorder=z)
    frame(ax_a, [g_np, u_np * 1.25, *[np2(s) for s in a.steps.values()]], pad=0.3)
    ax_a.set_ylim(top=ax_a.get_ylim()[1] + 1.0)  # room for the legend
    ax_a.set(title=f"(a) Fig. 1: one round (t = {t_show}) of M = {M} clients, A = {A} attackers\n"
                   "uploads and the server step Δ of each aggregator", xlabel="coordinate 1", ylabel="coordinate 2")
    ax_a.legend(fontsize=8.5, loc="upper left")

    m0 = a.attackers[0]  # (b) one attacker's uploads over rounds, in units of its honest g
    for t in SHOWN_ROUNDS:
        pt = p[t, m0]
        col = "tab:red" if pt < 0 else ("tab:orange" if pt > 1 else "goldenrod")
        arrow(ax_b, (pt, 0.0), col, start=(0.0, t), lw=2.2)
        ax_b.text(pt + (0.08 if pt >= 0 else -0.08), t, f"{pt:+.2f}", va="center", ha="left" if pt >= 0 else "right",
                  fontsize=8)
    ax_b.axvline(1.0, color="0.2", ls="--", lw=1.2, label="honest upload g (p = 1)")
    ax_b.axvline(0.0, color="0.6", lw=0.8)
    ax_b.plot([], [], color="tab:red", lw=2.2, label="p < 0: reversed")
    ax_b.plot([], [], color="tab:orange", lw=2.2, label="p > 1: scaled up")
    ax_b.plot([], [], color="goldenrod", lw=2.2, label="0 < p < 1: scaled down")
    span = np.abs(p[SHOWN_ROUNDS, m0]).max() + 0.8
    ax_b.set(xlim=(-span, span), ylim=(SHOWN_ROUNDS[-1] + 0.8, -0.8), ylabel="round t",
             xlabel="upload p·g, in units of the honest g (along g)",
             title=f"(b) Fig. 1: attacker {m0}'s upload ĝ = p·g, rounds 0–{SHOWN_ROUNDS[-1]}\n"
                   f"(p from RandomScaling.scales, σ² = {a.variance})")
    ax_b.legend(fontsize=8.5, loc="upper right", bbox_to_anchor=(1.0, 0.9))

    draws, var = a.draws, a.variance  # (c) the distribution of p
    xs = np.linspace(-7, 7, 401)
    ax_c.hist(draws, bins=50, density=True, color="tab:red", alpha=0.45,
              label=f"{len(draws)} draws of p ({A} attackers × {len(p)} rounds)")
    ax_c.plot(xs, np.exp(-xs**2 / (2 * var)) / np.sqrt(2 * np.pi * var), "k", lw=2, label=f"N(0, σ² = {var:g}) density")
    ax_c.axvspan(-7, 0, color="tab:red", alpha=0.06, label=f"reversed (p < 0): {np.mean(draws < 0):.1%} of draws")
    for x0 in (-1, 1):
        ax_c.axvline(x0, color="0.5", ls=":", lw=1)
    ax_c.set(xlim=(-7, 7), xlabel="p", ylabel="density",
             title=f"(c) Fig. 1: p ~ N(0, 3): sample variance {draws.var(ddof=1):.2f}, "
                   f"|p| > 1 in {np.mean(np.abs(draws) > 1):.1%}")
    ax_c.legend(fontsize=8.5, loc="upper left")


def draw_uploads(axes, m: Manipulation) -> None:
    """Panels (d)–(f) of Fig. 2: eq. 11 for several uploads, eq. 11 as c grows, eq. 14."""
    ax_d, ax_e, ax_f = axes
    r, r_np, c = m.r, np2(m.r), m.c
    arrow(ax_d, r_np, R_COLOR, "reference r", lw=3.5)
    for k, (g, ref, v) in enumerate(zip(np2(m.g_d), np2(m.ref_d), np2(m.v_d))):
        lab = k == 0
        arrow(ax_d, ref, R_COLOR, "(‖g‖/‖r‖) r" if lab else None, lw=1.5, ls="--")
        arrow(ax_d, g, G_COLOR, "upload g" if lab else None, lw=2)
        arrow(ax_d, v, V_COLOR, f"v, eq. 11 (c = {c})" if lab else None, lw=2)
        ax_d.plot(*np.stack([g, v]).T, ":", color="0.5", lw=1)
        ax_d.text(*(g * 1.08), f"{m.d_angles[k]:+.0f}°, λ = {m.lam_d[k].item():.2f}", color=G_COLOR, fontsize=9,
                  ha="left" if g[0] >= 0 else "right")
    frame(ax_d, [np2(m.g_d) * 1.3, np2(m.ref_d), np2(m.v_d), r_np])
    ax_d.set(title=f"(d) Fig. 2, eq. 11 (c = {c}): v = (1 − λ) g + λ (‖g‖/‖r‖) r\nλ = c (1 − cos(g, r)) (eq. 10); "
                   "angles measured from r", xlabel="coordinate 1", ylabel="coordinate 2")
    ax_d.legend(fontsize=8.5, loc="lower left")

    g_e_np = np2(m.g_e[0])  # (e) eq. 11 as c grows
    arrow(ax_e, r_np, R_COLOR, "reference r", lw=3.5)
    arrow(ax_e, np2(m.g_e[0].norm() / r.norm() * r), R_COLOR, "(‖g‖/‖r‖) r", lw=1.5, ls="--")
    arrow(ax_e, g_e_np, G_COLOR, "upload g (120° from r)", lw=2.2)
    vp = np2(m.v_path)
    ax_e.plot(vp[:, 0], vp[:, 1], "-", color="0.6", lw=1, label="tip of v for c ∈ [0, 1]")
    for cc in C_CURVES:
        v, lam, _ = m.v_e[cc]
        arrow(ax_e, np2(v[0]), COLORS_C[cc], f"v, c = {cc:g} (λ = {lam.item():.2f})", lw=2)
    frame(ax_e, [g_e_np * 1.1, vp, r_np])
    ax_e.set_ylim(top=2.1)  # room for the legend
    ax_e.set(title="(e) Fig. 2, eq. 11 for one upload as c grows\n(c = 1: λ = 1.5 > 1, the g component is reversed)",
             xlabel="coordinate 1", ylabel="coordinate 2")
    ax_e.legend(fontsize=8.5, loc="upper center", ncol=2)

    arrow(ax_f, r_np, R_COLOR, "reference r (root update, eq. 13)", lw=3.5)  # (f) eq. 14
    markers = {0.1: "s", 0.25: "o", 0.5: "^"}
    for k, (g, gs) in enumerate(zip(np2(m.g_f), np2(m.g_f_scaled))):
        arrow(ax_f, g, G_COLOR, "upload g (scaled / reversed)" if k == 0 else None, lw=1.2, ls="--", alpha=0.7)
        arrow(ax_f, gs, G_COLOR, "(‖r‖/‖g‖) g" if k == 0 else None, lw=2)
        tip = g if np.linalg.norm(g) > np.linalg.norm(gs) else gs  # label the longer of g and its rescaled copy
        ax_f.text(*(tip * 1.06), m.f_names[k], color=G_COLOR, fontsize=9, ha="left" if tip[0] >= 0 else "right")
        for cc in C_SWEEP:
            v = np2(m.v_f[cc][0][k])
            arrow(ax_f, v, COLORS_C[cc], lw=1.4)
            ax_f.plot(*v, markers[cc], color=COLORS_C[cc], ms=8, mfc="none" if k != 2 else COLORS_C[cc], zorder=6,
                      label=f"v, eq. 14, c = {cc:g}" if k == 0 else None)
    ax_f.text(0.98, 0.02, "g₃ = −1.8 r ↦ (4c − 1) r:\n" + "\n".join(
        f"c = {cc:g}: {along_r(m, m.v_f[cc][0][2]):+.1f} r" for cc in C_SWEEP),
        transform=ax_f.transAxes, ha="right", va="bottom", fontsize=9, bbox={"fc": "white", "ec": "0.7"})
    frame(ax_f, [np2(m.g_f), np2(m.g_f_scaled), r_np], pad=0.45)
    ax_f.set(title="(f) eq. 14 (robust): v = (1 − λ)(‖r‖/‖g‖) g + λ r\n"
                   "the reversed upload g₃ = −1.8 r lands on (4c − 1) r (filled markers)",
             xlabel="coordinate 1", ylabel="coordinate 2")
    ax_f.legend(fontsize=8.5, loc="upper left")


def draw_sweep(axes, m: Manipulation) -> None:
    """Panels (g)–(i) of Fig. 2 against the angle between g and r: λ, the components along / across r, ‖v‖."""
    ax_g, ax_h, ax_i = axes
    theta, sweep = m.theta, m.sweep
    angle = {"xlabel": "angle between g and r (degrees)", "xlim": (0, 180), "xticks": range(0, 181, 30)}
    for cc in C_CURVES:
        ax_g.plot(theta, sweep[cc]["lam"], color=COLORS_C[cc], lw=2, label=f"c = {cc:g}")
    ax_g.axhline(1.0, color="k", ls="--", lw=1, label="λ = 1: beyond it 1 − λ < 0 (g reversed)")
    ax_g.axvline(90, color="0.6", ls=":", lw=1)
    ax_g.set(ylabel="λ = c (1 − cos θ)", title="(g) eq. 10: degree of divergence λ ∈ [0, 2c]", **angle)
    ax_g.legend(fontsize=8.5, loc="upper left")

    ax_h.plot(theta, m.along_g, "k", lw=2.5, label="g along r: cos θ")
    ax_h.plot(theta, m.across_g, "k:", lw=2, label="g across r: sin θ")
    for cc in C_CURVES:
        ax_h.plot(theta, sweep[cc]["along_v"], color=COLORS_C[cc], lw=2, label=f"v along r, c = {cc:g}")
        ax_h.plot(theta, sweep[cc]["across_v"], ":", color=COLORS_C[cc], lw=1.6)
    ax_h.axhline(0, color="0.6", lw=0.8)
    ax_h.axvline(90, color="0.6", ls=":", lw=1)
    ax_h.set(ylabel="component ÷ ‖g‖", title="(h) eq. 11: v along r ≥ g along r at every angle (Remark 2)\n"
             "dotted: across r, × (1 − λ); reversed where λ > 1 (c = 1, θ > 90°)", **angle)
    ax_h.legend(fontsize=8.5, loc="lower left")

    for cc in C_CURVES:
        ax_i.plot(theta, sweep[cc]["norm11"], color=COLORS_C[cc], lw=2, label=f"c = {cc:g}")
    ax_i.axhline(1.0, color="k", ls="--", lw=1, label="‖v‖ = ‖g‖ (eq. 11) / ‖r‖ (eq. 14)")
    ax_i.set(ylabel="‖v‖/‖g‖ (eq. 11) = ‖v‖/‖r‖ (eq. 14)",
             title="(i) length of v: ≤ ‖g‖ (eq. 11), ≤ ‖r‖ (eq. 14) while c ≤ 0.5", **angle)
    ax_i.legend(fontsize=8.5, loc="lower left")


def draw(a: AttackRound, m: Manipulation):
    """The 3 × 3 figure: Fig. 1 (a)–(c), Fig. 2 (d)–(f) and the sweep (g)–(i)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 3, figsize=(19, 21))
    draw_attack(axes[0], a)
    draw_uploads(axes[1], m)
    draw_sweep(axes[2], m)
    fig.suptitle("DRAG Figs. 1–2 computed by fedkit on 2-D vectors: the random-scaling attack (RandomScaling, eq. 5) "
                 "and the vector manipulation (eqs. 10, 11, 14)", fontsize=13)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    return fig
