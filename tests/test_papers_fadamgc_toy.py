"""FAdamGC Fig. 1's 2-D quadratic toy (fedkit.papers.fadamgc_toy): the optimum, gradients, the hand-written client
Adam against fedkit's, the tables and the verdicts."""
import numpy as np
import pandas as pd
import pytest

from fedkit.papers import fadamgc_toy as F


def test_optimum_in_closed_form():
    # A_i = I: w* is the mean of the b_i; A_i = a_i I: the a-weighted mean
    centers = np.array([[1.0, 0.0], [3.0, 2.0]])
    eye = np.stack([np.eye(2), np.eye(2)])
    np.testing.assert_allclose(F.optimum(centers, eye), [2.0, 1.0])
    np.testing.assert_allclose(F.optimum(centers, eye * np.array([1.0, 3.0])[:, None, None]), [2.5, 1.5])
    w = F.optimum()
    np.testing.assert_allclose(F.grads(w).mean(0), 0.0, atol=1e-12)


def test_grads_by_hand():
    g = F.grads(np.array([0.0, 0.0]))
    # client 0: A_0 (0 − b_0) = −[[2, .3], [.3, .5]] @ [2, 0] = [−4, −0.6]
    np.testing.assert_allclose(g[0], [-4.0, -0.6])
    assert g.shape == (F.N, 2)


def test_local_adam_first_step_is_a_scaled_sign():
    x0 = np.array([1.0, -1.0])
    c = np.array([0.5, -100.0])
    g = F.CURVATURES[0] @ (x0 - F.CENTERS[0])  # [−1.7, −0.8]
    k = (1 - 0.9) / np.sqrt(1 - 0.999)
    path, parts = F.local_adam(x0, 0, c, "before", eta=0.01, k_steps=3)
    assert path.shape == (4, 2) and len(parts) == 3
    np.testing.assert_allclose(parts[0]["moments_input"], g + c)
    np.testing.assert_allclose(parts[0]["d"], k * np.sign(g + c), rtol=1e-6)  # the correction flips coordinate 2
    np.testing.assert_allclose(path[1], x0 - 0.01 * parts[0]["step"])
    _, nt = F.local_adam(x0, 0, c, "after", eta=0.01, k_steps=1)
    np.testing.assert_allclose(nt[0]["d"], k * np.sign(g), rtol=1e-6)
    np.testing.assert_allclose(nt[0]["step"], nt[0]["d"] + c)


def test_sweep_rounds():
    assert F.sweep_rounds(0.01, 0.01, 40) == 40
    assert F.sweep_rounds(0.001, 0.01, 40) == 150  # ⌈0.15 / 0.001⌉
    assert F.sweep_rounds(0.03, 0.01, 40) == 40


@pytest.fixture(scope="module")
def observed():
    k, lr = 3, 0.01
    runs = {(m, lr): F.observe(F.toy_config(m, lr, 4, k)) for m in F.METHODS}
    return runs, {m: runs[(m, lr)] for m in F.METHODS}, k, lr


def test_fedkit_client_is_the_hand_recursion(observed):
    runs, main, k, lr = observed
    x1 = main["FAdamGC"]["x"][1]
    for m in F.METHODS:
        for i in range(F.N):
            corr = main[m]["y"][0] - main[m]["y_i"][0, i]
            path, _ = F.local_adam(x1, i, corr, F.PLACEMENT[m], lr, k)
            np.testing.assert_allclose(path, main[m]["paths"][2][i], atol=1e-4, err_msg=m)
    # NT with full participation: x_t − x_{t+1} = K η_l y_{t+1} (the notebook's claim 3)
    r = runs[("FA-NT", lr)]
    np.testing.assert_allclose(r["x"][:-1] - r["x"][1:], k * lr * r["y"], atol=2e-5)
    assert (main["LocalAdam"]["y"] == 0).all()


def test_tables_by_hand():
    w_star = np.zeros(2)
    x = np.array([[3.0, 4.0], [0.0, 1.0]])
    runs = {("FAdamGC", 0.01): {"x": x, "y": np.array([[0.0, 2.0]])}}
    c = F.curves(runs, 0.01, w_star)
    assert list(c["distance_to_optimum"]) == [5.0, 1.0] and set(c["panel"]) == {"b"}
    np.testing.assert_allclose(c["global_grad_norm"], [np.linalg.norm(F.grads(v).mean(0)) for v in x])
    assert F.curves(runs, 0.03, w_star)["panel"].eq("c").all()
    s = F.final_summary(runs, 10, w_star).iloc[0]
    assert (s["rounds"], s["distance"], s["|y|"], s["last move"]) == (1, 1.0, 2.0, pytest.approx(np.hypot(3, 3)))
    assert s["|grad f| / (K eta)"] == pytest.approx(s["|grad f|"] / 0.1)
    main = {m: {"paths": {2: [None, np.array([[0.0, 0.0], [0.0, 2.0]])]}} for m in F.METHODS}
    p = F.path_rows(main, 1, 0.01, w_star)
    assert len(p) == 6 and list(p["step"][:2]) == [0, 1] and p["distance_to_optimum"].iloc[1] == 2.0


def test_verdicts_text():
    summary = pd.DataFrame({"method": ["FAdamGC", "FA-NT", "LocalAdam"] * 2, "eta": [0.1] * 3 + [0.01] * 3,
                            "distance": [0.2, 0.5, 1.0, 0.02, 0.4, 1.0],
                            "sign sums": [(1, 0), (0, 0), (0, 0), (1, 1), (0, 0), (2, 0)]})
    text = F.verdicts(summary, [0.1, 0.01]).splitlines()
    assert text[0].endswith("True") and text[1].endswith("True")
    assert "FAdamGC 0.100, FA-NT 0.800, LocalAdam 1.000" in text[2]
    assert text[3].endswith("False")  # LocalAdam at 0.01 is not sign-balanced


def test_check_catches_a_drifting_fadamgc(observed):
    runs, main, k, lr = observed
    first = {m: F.local_adam(main["FAdamGC"]["x"][1], 1, main[m]["y"][0] - main[m]["y_i"][0, 1], F.PLACEMENT[m],
                             lr, k)[1][0] for m in F.METHODS}
    summary = pd.DataFrame({"method": F.METHODS, "eta": [lr] * 3, "distance": [1.0, 0.5, 0.9]})
    with pytest.raises(AssertionError):  # FAdamGC (0.9) not below half of LocalAdam's (1.0)
        F.check(runs, main, first, summary, [lr], lr, k)


def test_draw_makes_six_panels(observed):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, main, k, lr = observed
    w_star = F.optimum()
    curves = F.curves(runs, lr, w_star)
    final = curves.sort_values("round").groupby(["method", "eta"], sort=False).last().reset_index()
    first = {m: F.local_adam(main[m]["x"][1], 1, main[m]["y"][0] - main[m]["y_i"][0, 1], F.PLACEMENT[m], lr, k)[1][0]
             for m in F.METHODS}
    correction = {m: main[m]["y"][0] - main[m]["y_i"][0, 1] for m in F.METHODS}
    fig = F.draw(main, curves, final, first, correction, 1, lr, k, [lr], w_star, "ci")
    assert len(fig.axes) == 6
    assert fig.axes[0].get_title() == "(a) client 1, round 2: where the correction enters"
    # panel (b)'s distance curves: one line per method, T + 1 points each
    assert [len(line.get_xdata()) for line in fig.axes[4].lines] == [5, 5, 5]
    plt.close(fig)
