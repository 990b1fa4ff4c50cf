"""fedkit.analysis.alternation against values worked out by hand."""
import math

import numpy as np
import pandas as pd
import pytest
import torch

from fedkit.algorithms.tailored import eq7_factors, tailored_coefficients
from fedkit.analysis import alternation as alt


def test_majority_labels_by_hand():
    labels = np.array([0, 1, 1, 0, 0, 1, 1])
    parts = [np.array([0, 1, 2]), np.array([3, 4]), np.array([5, 6, 0]), np.array([0, 1]), np.array([], int)]
    # client 0: labels 0,1,1 → 1; client 1: 0,0 → 0; client 2: 1,1,0 → 1; client 3: 0,1 tie → 0; client 4 empty
    np.testing.assert_array_equal(alt.majority_labels(parts, labels), [1, 0, 1, 0, -1])


def frame():
    # rounds 1..4, clients 0,1 (camp 0) and 2 (camp 1); client 1 expelled in round 3 (absent in round 4)
    rows = [(1, 0, 0.9, 0), (1, 1, 0.7, 0), (1, 2, 0.1, 0),
            (2, 0, 0.2, 0), (2, 1, 0.0, 0), (2, 2, 0.8, 0),
            (3, 0, 0.8, 0), (3, 1, 0.6, 1), (3, 2, 0.3, 0),
            (4, 0, 0.1, 0), (4, 2, 0.9, 0)]
    return pd.DataFrame(rows, columns=["round", "client", "alpha", "expelled"])


def test_camp_gap_and_flips_by_hand():
    clients = frame()
    alpha = alt.alpha_matrix(clients)
    assert alpha.shape == (4, 3) and math.isnan(alpha.loc[4, 1])
    gap = alt.camp_gap(alpha, np.array([0, 0, 1]), 0, 1)
    # round 1: (0.9+0.7)/2 − 0.1 = 0.7; round 2: 0.1 − 0.8 = −0.7; round 3: 0.7 − 0.3 = 0.4; round 4: 0.1 − 0.9
    np.testing.assert_allclose(gap.to_numpy(), [0.7, -0.7, 0.4, -0.8])
    assert alt.sign_flip_fraction(gap) == 1.0
    assert alt.sign_flip_fraction([1.0, 2.0, -1.0, np.nan, 3.0]) == pytest.approx(1 / 2)  # pairs (1,2), (2,−1)
    assert alt.sign_flip_fraction([0.0, 1.0]) != alt.sign_flip_fraction([0.0, 1.0])  # no usable pair: NaN
    # κ = 0.6: client 0 above/below/above/below → 3 of 3 pairs change; client 1 above, below, above (rounds
    # 1–3) → 2 of 2; client 2 below, above, below, above → 3 of 3
    flips = alt.crossing_flip_fraction(alpha, 0.6)
    np.testing.assert_allclose(flips.to_numpy(), [1.0, 1.0, 1.0])
    steady = alt.crossing_flip_fraction(pd.DataFrame({0: [0.9, 0.8, 0.2]}, index=[1, 2, 3]), 0.6)
    assert steady[0] == pytest.approx(0.5)
    summary = alt.alternation_summary(clients, np.array([0, 0, 1]), 0.6)
    assert summary["gap sign flips"] == 1.0 and summary["rounds"] == 4
    assert summary["mean |gap|"] == pytest.approx((0.7 + 0.7 + 0.4 + 0.8) / 4)
    assert summary["client crossing flips"] == 1.0 and summary["share α ≥ κ"] == pytest.approx(6 / 11)
    # one camp (an IID split): no gap, the rest as before
    single = alt.alternation_summary(clients, np.array([0, 0, 0]), 0.6)
    assert single["rounds"] == 4 and np.isnan(single["gap sign flips"]) and np.isnan(single["mean |gap|"])
    assert single["client crossing flips"] == 1.0 and single["share α ≥ κ"] == pytest.approx(6 / 11)


def test_expulsion_rounds_and_main_camps():
    assert alt.expulsion_rounds(frame()).to_dict() == {1: 3}
    assert alt.main_camps(np.array([1, 0, 1, 2, -1, 0, 1])) == (1, 0)  # counts 1: 3, 0: 2, 2: 1
    with pytest.raises(ValueError):
        alt.main_camps(np.array([1, 1]))


def test_eq7_factors_by_hand():
    # norms 3 and 1 (sum 4): size factors 1 − 3/4 and 1 − 1/4. Mean upload m = (1.5, 0.5), ‖m‖ = √2.5:
    # cos((3, 0), m) = 4.5 / (3√2.5) = 1.5/√2.5, cos((0, 1), m) = 0.5/√2.5
    d = torch.tensor([[3.0, 0.0], [0.0, 1.0]])
    size, cosine = eq7_factors(d)
    np.testing.assert_allclose(size.numpy(), [0.25, 0.75])
    np.testing.assert_allclose(cosine.numpy(), [1.5 / math.sqrt(2.5), 0.5 / math.sqrt(2.5)], rtol=1e-6)
    # against the mean, a client pointing away is clipped to 0
    _, cosine = eq7_factors(torch.tensor([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.1]]))
    assert cosine[2] == 0
    # the product is TACO's α (eq. 7), either sign of Δ
    d = torch.randn(5, 7, generator=torch.Generator().manual_seed(0))
    for sign in (1, -1):
        size, cosine = eq7_factors(sign * d)
        torch.testing.assert_close(size * cosine, tailored_coefficients(d))


def test_eq7_trace_matches_recorded_alpha():
    from fedkit.papers import taco

    cfg = taco.config("adult", "ci", "TACO", engine="vectorized", rounds=2)
    trace = alt.eq7_trace(cfg, rounds=2)
    assert sorted(trace["round"].unique()) == [1, 2]
    np.testing.assert_allclose(trace["product"], trace["alpha"], rtol=1e-5, atol=1e-6)
    assert ((trace["size"] > 0) & (trace["size"] < 1)).all()
