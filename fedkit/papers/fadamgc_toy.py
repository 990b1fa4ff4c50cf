"""FAdamGC Fig. 1 computed on a 2-D quadratic toy (notebooks/fadamgc/fig1_correction_placement): where the gradient
correction y − y_i enters the client Adam — before its moments (GC, FAdamGC) or after (NT, FA-NT) — against
LocalAdam, with N = 4 clients f_i(w) = ½ (w − b_i)ᵀ A_i (w − b_i), full participation and τ = N.

``observe`` runs a method through ``Federation.rounds()`` and keeps x_t, y, y_i and the local paths of two rounds;
``local_adam`` replays one client's local steps by hand (the check that fedkit's client program is the recursion
written here); ``curves``, ``final_summary``, ``check`` and ``verdicts`` are the notebook's tables and claims.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..config import Config
from ..federation import Federation
from . import fadamgc as P

METHODS = ["LocalAdam", "FA-NT", "FAdamGC"]
COLORS = {"LocalAdam": "tab:gray", "FA-NT": "tab:blue", "FAdamGC": "tab:orange"}
PLACEMENT = {"LocalAdam": "before", "FA-NT": "after", "FAdamGC": "before"}  # LocalAdam: a zero correction
CENTERS = np.array([[2.0, 0.0], [-1.0, 3.0], [0.5, -2.0], [-3.0, -1.0]])  # b_i
CURVATURES = np.array([[[2.0, 0.3], [0.3, 0.5]], [[0.4, 0.0], [0.0, 1.5]], [[1.0, -0.4], [-0.4, 1.2]],
                       [[0.3, 0.1], [0.1, 0.2]]])  # A_i (symmetric positive definite)
TOY = {"centers": CENTERS.tolist(), "curvatures": CURVATURES.tolist()}
N = len(CENTERS)


def optimum(centers=CENTERS, curvatures=CURVATURES) -> np.ndarray:
    """The minimiser of the average loss: ∇f = (1/N) Σ A_i (w − b_i) = 0 ⇒ w* = (Σ A_i)⁻¹ Σ A_i b_i."""
    return np.linalg.solve(curvatures.sum(0), np.einsum("uij,uj->i", curvatures, centers))


def grads(w, centers=CENTERS, curvatures=CURVATURES) -> np.ndarray:
    """Every client's gradient A_i (w − b_i) at w, [N, d]."""
    return np.einsum("uij,uj->ui", curvatures, w - centers)


def toy_config(method, eta, n_rounds, local_steps, seed=0, device="cpu") -> Config:
    """The toy federation for ``method`` (P.METHODS: τ = None, so every sampled client, all N, tracks)."""
    algorithm, args, optimizer = P.METHODS[method]
    return Config(dataset="quadratic", dataset_args=TOY, partition="natural", partition_args={}, num_clients=N,
                  model="quadratic", model_args={"init": [3.0, 3.0]}, algorithm=algorithm, algorithm_args=args,
                  optimizer=optimizer, optimizer_args=P.ADAM, rounds=n_rounds, local_steps=local_steps,
                  batch_size=8, lr=eta, seed=seed, device=device, engine="sequential")


def observe(cfg: Config, trace_rounds=(1, 2)) -> dict:
    """x_t for t = 0..T ([T+1, d]), y and y_i after every round (zeros for LocalAdam, which keeps none), and every
    client's local path in ``trace_rounds``."""
    fed = Federation(cfg)
    s = fed.initial()
    n = cfg.num_clients
    xs, ys, yis, paths = [s.w.double().numpy()], [], [], {}
    none = torch.zeros(n, s.w.numel())
    for rnd in fed.rounds(s, trace=True):
        t = rnd.info.t
        xs.append(rnd.after.w.double().numpy())
        ys.append(rnd.after.server.get("y", none[0]).double().numpy())
        yis.append(rnd.after.kept.get("y_i", none).double().numpy())
        if t in trace_rounds:
            order = list(rnd.clients)
            paths[t] = [np.stack([v.double().numpy() for v in rnd.result.paths[order.index(i)]]) for i in range(n)]
    return {"x": np.stack(xs), "y": np.stack(ys), "y_i": np.stack(yis), "paths": paths}


def sweep_rounds(eta, lr, rounds) -> int:
    """The main runs (η_l = lr) run ``rounds``; the others long enough for FAdamGC to settle (≈ 0.15/η_l rounds)."""
    return rounds if eta == lr else max(rounds, int(np.ceil(0.15 / eta)))


def local_adam(x0, i, correction, placement, eta, k_steps, b1=0.9, b2=0.999, eps=1e-8):
    """Client i's K local Adam steps (no bias correction) from x0 with the correction placed "before" the moments
    (GC: m, v see g + c) or "after" them (NT: the step is Adam(g) + c); the path [K+1, d] and each step's parts."""
    x, m, v = x0.copy(), np.zeros_like(x0), np.zeros_like(x0)
    path, parts = [x.copy()], []
    for _ in range(k_steps):
        g = CURVATURES[i] @ (x - CENTERS[i])
        fed = g + correction if placement == "before" else g  # what the moments see
        m, v = b1 * m + (1 - b1) * fed, b2 * v + (1 - b2) * fed * fed
        d = m / (np.sqrt(v) + eps)
        step = d + correction if placement == "after" else d
        parts.append({"g": g, "moments_input": fed, "d": d, "step": step})
        x = x - eta * step
        path.append(x.copy())
    return np.stack(path), parts


def curves(runs: dict, lr, w_star) -> pd.DataFrame:
    """One row per (method, η_l, round): x_t, ‖x_t − w*‖ and ‖∇f(x_t)‖; panel b at η_l = lr, c otherwise."""
    rows = []
    for (m, eta), r in runs.items():
        for t, x in enumerate(r["x"]):
            rows.append({"panel": "b" if eta == lr else "c", "method": m, "eta": eta, "round": t, "step": np.nan,
                         "w0": x[0], "w1": x[1], "distance_to_optimum": np.linalg.norm(x - w_star),
                         "global_grad_norm": np.linalg.norm(grads(x).mean(0))})
    return pd.DataFrame(rows)


def path_rows(main: dict, client, lr, w_star) -> pd.DataFrame:
    """Panel (a): one row per local step of ``client`` in round 2, per method."""
    return pd.DataFrame([{"panel": "a", "method": m, "eta": lr, "round": 2, "step": k, "w0": x[0], "w1": x[1],
                          "distance_to_optimum": np.linalg.norm(x - w_star),
                          "global_grad_norm": np.linalg.norm(grads(x).mean(0))}
                         for m in METHODS for k, x in enumerate(main[m]["paths"][2][client])])


def final_summary(runs: dict, local_steps, w_star) -> pd.DataFrame:
    """Per run at its last round: distance to w*, ‖∇f‖ and ‖∇f‖/(Kη_l), ‖y‖, the last move, and the sign sums of
    the clients' gradient coordinates (0, 0: a sign-balance point)."""
    summary = []
    for (m, eta), r in runs.items():
        x = r["x"][-1]
        g = grads(x)
        grad_norm = np.linalg.norm(g.mean(0))
        summary.append({"method": m, "eta": eta, "rounds": len(r["x"]) - 1, "distance": np.linalg.norm(x - w_star),
                        "|grad f|": grad_norm, "|grad f| / (K eta)": grad_norm / (local_steps * eta),
                        "|y|": np.linalg.norm(r["y"][-1]), "last move": np.linalg.norm(r["x"][-1] - r["x"][-2]),
                        "sign sums": tuple(np.sign(g).sum(0).astype(int))})
    return pd.DataFrame(summary).sort_values(["eta", "method"], ascending=[False, True])


def check(runs: dict, main: dict, first: dict, summary, etas, lr, local_steps) -> None:
    """The notebook's claims: 1. all methods start round 2 at the same x_1; 2. y is the mean of the y_i, GC's y_i the
    mean raw gradient of round 1's path, NT's (x_0 − x_K)/(Kη_l); 3. NT: x_t − x_{t+1} = Kη_l y_{t+1};
    4. LocalAdam keeps its drift, FAdamGC removes most of it and its rest shrinks with η_l;
    5. the first step from zero moments is a scaled sign (1 − β1)/√(1 − β2) · sign."""
    xs1 = np.stack([main[m]["x"][1] for m in METHODS])
    np.testing.assert_allclose(xs1, xs1[[0, 0, 0]], atol=1e-6)
    for m in ("FA-NT", "FAdamGC"):
        np.testing.assert_allclose(main[m]["y"], main[m]["y_i"].mean(1), atol=1e-5, err_msg=m)
    for i in range(N):
        path = main["FAdamGC"]["paths"][1][i]
        raw_mean = np.mean([CURVATURES[i] @ (w - CENTERS[i]) for w in path[:-1]], 0)
        np.testing.assert_allclose(main["FAdamGC"]["y_i"][0, i], raw_mean, rtol=1e-4, atol=1e-5)
        path = main["FA-NT"]["paths"][1][i]
        np.testing.assert_allclose(main["FA-NT"]["y_i"][0, i], (path[0] - path[-1]) / (local_steps * lr), rtol=1e-4,
                                   atol=1e-4)
    for eta in etas:
        r = runs[("FA-NT", eta)]
        np.testing.assert_allclose(r["x"][:-1] - r["x"][1:], local_steps * eta * r["y"], atol=2e-5)
    end = summary[summary["eta"] == lr].set_index("method")
    assert end.loc["LocalAdam", "distance"] > 0.2, end
    assert end.loc["FAdamGC", "distance"] < 0.5 * end.loc["LocalAdam", "distance"], end
    gc_bias = summary[summary["method"] == "FAdamGC"].set_index("eta")["distance"]
    assert gc_bias[min(etas)] < 0.2 * gc_bias[max(etas)], gc_bias
    for m in METHODS:
        np.testing.assert_allclose(first[m]["d"], 0.1 / np.sqrt(0.001) * np.sign(first[m]["moments_input"]),
                                   rtol=1e-6)


def verdicts(summary, etas) -> str:
    """Which method ends closer to w* at every η_l, how the distance scales with η_l, and the sign-balance points."""
    bias = {m: summary[summary["method"] == m].set_index("eta")["distance"] for m in METHODS}
    gc_bias, nt_bias, la_bias = bias["FAdamGC"], bias["FA-NT"], bias["LocalAdam"]
    small, large = min(etas), max(etas)
    balanced = summary[summary["method"] != "FAdamGC"]["sign sums"].map(lambda s: s == (0, 0))
    return "\n".join([
        f"FAdamGC ends closer to w* than LocalAdam at every η_l: {bool((gc_bias < la_bias).all())}",
        f"FA-NT ends closer to w* than LocalAdam at every η_l: {bool((nt_bias < la_bias).all())}",
        f"distance at η_l = {small} / distance at η_l = {large}: FAdamGC {gc_bias[small] / gc_bias[large]:.3f}, "
        f"FA-NT {nt_bias[small] / nt_bias[large]:.3f}, LocalAdam {la_bias[small] / la_bias[large]:.3f}",
        f"LocalAdam and FA-NT end at sign-balance points (every coordinate's sign sum 0) at every η_l: "
        f"{balanced.all()}"])


# ---- the figure -------------------------------------------------------------------------------------------------
def _arrows(ax, vectors, title):
    """Vectors from the origin (descent directions: −v is drawn), each (vector, colour, label, linestyle)."""
    span = max(np.abs(v).max() for v, *_ in vectors) * 1.25
    for v, color, text, ls in vectors:
        ax.annotate("", -v, (0, 0), arrowprops={"arrowstyle": "->", "color": color, "lw": 2, "ls": ls})
        ax.text(*(-v * 1.04), text, color=color, fontsize=8, ha="left" if v[0] <= 0 else "right",
                va="bottom" if v[1] <= 0 else "top")
    ax.axhline(0, color="0.9", lw=0.8)
    ax.axvline(0, color="0.9", lw=0.8)
    ax.set(xlim=(-span, span), ylim=(-span, span), aspect="equal", title=title)


def draw(main, curves_frame, final, first, correction, client, lr, local_steps, etas, w_star, scale):
    """Fig. 1: (a) client ``client``'s local steps of round 2 and the first step's GC / NT directions, (b) the global
    iterates and their distance to w*, (c) the final distance against η_l."""
    import matplotlib.pyplot as plt

    grid = np.linspace(-4, 4, 161)
    gx, gy = np.meshgrid(grid, grid)
    pts = np.stack([gx, gy], -1)
    quad = lambda i: 0.5 * np.einsum("...i,ij,...j->...", pts - CENTERS[i], CURVATURES[i], pts - CENTERS[i])
    f_global = np.mean([quad(i) for i in range(N)], 0)
    f_client = quad(client)
    x1 = main["FAdamGC"]["x"][1]

    fig = plt.figure(figsize=(16, 9.5))
    ax_path, ax_gc, ax_nt = (fig.add_subplot(2, 3, k) for k in (1, 2, 3))
    ax_plane, ax_dist, ax_eta = (fig.add_subplot(2, 3, k) for k in (4, 5, 6))

    shown = np.concatenate([main[m]["paths"][2][client] for m in METHODS])  # (a) round 2's local steps from x_1
    lo, hi = shown.min(0) - 0.25, shown.max(0) + 0.25
    ax_path.contour(gx, gy, f_client, levels=40, colors="0.85", linewidths=0.6)
    ax_path.contour(gx, gy, f_global, levels=40, colors="tab:red", alpha=0.25, linewidths=0.6)
    for m in METHODS:
        path = main[m]["paths"][2][client]
        ax_path.plot(path[:, 0], path[:, 1], ".-", color=COLORS[m], label=f"{m}: K = {local_steps} local steps")
    g1 = grads(x1)
    for vec, style, text in [(-g1[client], "0.4", "−∇f_i(x_1)"), (-g1.mean(0), "tab:red", "−∇f(x_1)")]:
        u = 0.35 * (hi - lo).min() * vec / np.linalg.norm(vec)
        ax_path.annotate("", x1 + u, x1, arrowprops={"arrowstyle": "->", "color": style, "lw": 1.5})
        ax_path.text(*(x1 + 1.08 * u), text, color=style, fontsize=8)
    ax_path.plot(*x1, "ko", ms=5, label="x_1 (the same for all three)")
    ax_path.set(xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]), aspect="equal",
                title=f"(a) client {client}, round 2: where the correction enters")
    ax_path.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=2)

    gc, nt = first["FAdamGC"], first["FA-NT"]
    _arrows(ax_gc, [(gc["g"], "0.4", "−g", "-"), (correction["FAdamGC"], "tab:green", "−(y − y_i)", "--"),
                    (gc["moments_input"], "tab:red", "−(g + y − y_i) → moments", "-"),
                    (first["LocalAdam"]["step"], "0.6", "−Adam(g): LocalAdam step", ":"),
                    (gc["step"], "tab:orange", "−Adam(g + y − y_i): GC step", "-")],
            "(a) GC: correct the gradient, then Adam\n(first local step of round 2: gradients, and Adam's directions)")
    _arrows(ax_nt, [(nt["d"], "0.4", "−d = −Adam(g)", "-"), (correction["FA-NT"], "tab:green", "−(y − y_i)", "--"),
                    (nt["step"], "tab:blue", "−(d + y − y_i): NT step", "-")],
            "(a) NT: Adam of the raw gradient, then correct\n(first local step of round 2; direction units)")

    # (b) the global iterates in the plane, with the lines ∂_j f_i = 0 (a coordinate's gradient sign flips there)
    ax_plane.contour(gx, gy, f_global, levels=30, colors="0.85", linewidths=0.6)
    for i in range(N):
        for j, ls in ((0, ":"), (1, "-.")):  # a_j · (w − b_i) = 0, a_j the j-th row of A_i
            a = CURVATURES[i][j]
            if abs(a[1]) > abs(a[0]):
                ax_plane.plot(grid, CENTERS[i, 1] - a[0] / a[1] * (grid - CENTERS[i, 0]), ls, color="0.6", lw=0.7)
            else:
                ax_plane.plot(CENTERS[i, 0] - a[1] / a[0] * (grid - CENTERS[i, 1]), grid, ls, color="0.6", lw=0.7)
    for m in METHODS:
        x = main[m]["x"]
        ax_plane.plot(x[:, 0], x[:, 1], ".-", color=COLORS[m], ms=3, lw=1, label=m)
        ax_plane.plot(*x[-1], "o", color=COLORS[m], ms=7)
    ax_plane.scatter(CENTERS[:, 0], CENTERS[:, 1], c="k", marker="s", s=25, label="client optima b_i")
    ax_plane.plot(*w_star, "r*", ms=15, label="global optimum w*")
    ax_plane.set(xlim=(-3.5, 3.5), ylim=(-3.5, 3.5), aspect="equal",
                 title="(b) global model x_t over rounds\n(dotted/dash-dot: ∂f_i/∂w_1 = 0 / ∂f_i/∂w_2 = 0)")
    ax_plane.legend(fontsize=7, loc="lower left")

    for m in METHODS:
        part = curves_frame[(curves_frame["method"] == m) & (curves_frame["eta"] == lr)]
        ax_dist.semilogy(part["round"], part["distance_to_optimum"], color=COLORS[m], label=m)
    ax_dist.set(xlabel="round", ylabel="‖x_t − w*‖",
                title=f"(b) distance to the global optimum (η_l = {lr}, K = {local_steps})")
    ax_dist.legend(fontsize=8)

    for m in METHODS:  # (c) where each method stalls, against η_l (K fixed)
        part = final[final["method"] == m].sort_values("eta")
        ax_eta.loglog(part["eta"], part["distance_to_optimum"], "o-", color=COLORS[m], label=m)
    ax_eta.loglog(etas, [local_steps * e for e in etas], "k:", lw=1, label="K η_l")
    ax_eta.set(xlabel="η_l", ylabel="‖x_T − w*‖ at the last round", title="(c) final distance against the local rate")
    ax_eta.set_xticks(etas, [f"{e:g}" for e in etas], minor=False)
    ax_eta.set_xticks([], minor=True)
    ax_eta.legend(fontsize=8)
    fig.suptitle(f"FAdamGC Fig. 1, computed: 2-D quadratic toy, {N} clients, full participation, τ = N, "
                 f"Adam (0.9, 0.999) without bias correction (scale={scale})", fontsize=11)
    fig.tight_layout()
    return fig
