"""Tests of fedkit.data.partition: coverage, sizes, determinism, label rules and error messages."""
from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedkit.data import partition as P
from fedkit.errors import ConfigError

FAST = settings(max_examples=40, deadline=None)

# Parameters under which every partitioner that assigns each sample once succeeds for any label vector.
EXACT_ONCE_PARAMS = {
    "iid": {},
    "dirichlet": {"phi": 0.5, "min_size": 0},
    "shards": {"shards_per_client": 1},
    "labels_per_client": {"k": 1},
    "qskew": {"q": 0.7},
    "quantity": {"beta": 0.5, "min_size": 0},
}


def balanced(n: int, num_classes: int, seed: int) -> np.ndarray:
    """A shuffled label vector in which every class has n // num_classes or one more samples."""
    return np.random.default_rng(seed).permutation(np.arange(n) % num_classes).astype(np.int64)


def assert_exactly_once(parts, n):
    allidx = np.concatenate(parts)
    assert len(allidx) == n
    assert np.array_equal(np.sort(allidx), np.arange(n))


def assert_well_formed(parts, num_clients):
    assert len(parts) == num_clients
    for p in parts:
        assert p.dtype == np.int64
        assert np.all(np.diff(p) > 0)  # sorted, no duplicates within a client


def label_sets(parts, labels):
    return [set(np.unique(labels[p]).tolist()) for p in parts]


random_labels = st.lists(st.integers(0, 9), min_size=1, max_size=300).map(
    lambda v: np.array(v, dtype=np.int64))
seeds = st.integers(0, 2**32 - 1)


# ------------------------------------------------------------------------------------- coverage and sizes


@pytest.mark.parametrize("kind", sorted(EXACT_ONCE_PARAMS))
@FAST
@given(labels=random_labels, data=st.data(), seed=seeds)
def test_every_sample_assigned_exactly_once(kind, labels, data, seed):
    # labels_per_client with k=1 covers every class only when there are at least as many clients as classes
    lo = len(np.unique(labels)) if kind == "labels_per_client" else 1
    num_clients = data.draw(st.integers(lo, len(labels)))
    parts = P.make_partition(kind, labels, num_clients, seed, **EXACT_ONCE_PARAMS[kind])
    assert_well_formed(parts, num_clients)
    assert_exactly_once(parts, len(labels))


@FAST
@given(n=st.integers(1, 500), data=st.data(), seed=seeds)
def test_iid_sizes_differ_by_at_most_one(n, data, seed):
    num_clients = data.draw(st.integers(1, n))
    sizes = [len(p) for p in P.iid(np.zeros(n, dtype=np.int64), num_clients, seed)]
    assert max(sizes) - min(sizes) <= 1


@FAST
@given(num_classes=st.integers(1, 10), num_clients=st.integers(1, 12), phi=st.sampled_from([0.3, 1.0, 10.0]),
       min_size=st.integers(0, 3), seed=seeds)
def test_dirichlet_respects_min_size(num_classes, num_clients, phi, min_size, seed):
    labels = balanced(40 * num_clients, num_classes, seed)
    parts = P.dirichlet(labels, num_clients, seed, phi=phi, min_size=min_size)
    assert_exactly_once(parts, len(labels))
    assert min(len(p) for p in parts) >= min_size


@FAST
@given(labels=random_labels, data=st.data(), seed=seeds)
def test_shards_sizes(labels, data, seed):
    spc = data.draw(st.integers(1, 3))
    num_clients = data.draw(st.integers(1, max(1, len(labels) // spc)))
    if num_clients * spc > len(labels):
        spc = 1
    parts = P.shards(labels, num_clients, seed, shards_per_client=spc)
    assert_exactly_once(parts, len(labels))
    shard_lo = len(labels) // (num_clients * spc)
    for p in parts:
        assert spc * shard_lo <= len(p) <= spc * (shard_lo + 1)


def test_quantity_skews_sizes_not_labels():
    # NIID-Bench iid-diff-quantity: sizes from Dir(beta) (>= min_size each), every client's labels a uniform sample
    labels = balanced(20_000, 10, 0)
    parts = P.quantity(labels, 10, 4, beta=0.5, min_size=10)
    sizes = np.array([len(p) for p in parts])
    assert_exactly_once(parts, len(labels))
    assert sizes.min() >= 10 and sizes.max() > 3 * sizes.min()
    big = parts[int(sizes.argmax())]
    assert np.abs(np.bincount(labels[big], minlength=10) / len(big) - 0.1).max() < 0.03


def test_shards_are_label_sorted_runs():
    labels = balanced(1000, 10, 0)
    parts = P.shards(labels, 50, 3, shards_per_client=2)  # 100 shards of 10 = one class each
    assert all(len(s) <= 2 for s in label_sets(parts, labels))


# ------------------------------------------------------------------------------------- determinism

DETERMINISM_CASES = [
    ("iid", {}),
    ("dirichlet", {"phi": 0.5}),
    ("shards", {}),
    ("labels_per_client", {"k": 2}),
    ("label_groups", {}),
    ("qskew", {"q": 0.5}),
    ("quantity", {"beta": 0.5}),
    ("natural", {"users": np.arange(1000) % 37}),
    ("feddual_dirichlet", {"alpha": 0.5}),
]


@pytest.mark.parametrize("kind,params", DETERMINISM_CASES, ids=[c[0] for c in DETERMINISM_CASES])
def test_same_seed_same_partition_other_seed_differs(kind, params):
    labels = balanced(1000, 10, 0)
    a = P.make_partition(kind, labels, 10, 7, **params)
    b = P.make_partition(kind, labels, 10, 7, **params)
    c = P.make_partition(kind, labels, 10, 8, **params)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_partition_does_not_touch_global_rng():
    np.random.seed(0)
    before = np.random.random()
    np.random.seed(0)
    P.dirichlet(balanced(500, 10, 0), 5, 1, phi=0.3)
    assert np.random.random() == before


# ------------------------------------------------------------------------------------- label rules


@FAST
@given(num_classes=st.integers(1, 8), extra=st.integers(0, 6), data=st.data(), seed=seeds)
def test_labels_per_client_exactly_k_labels(num_classes, extra, data, seed):
    num_clients = num_classes + extra  # >= C, so class i mod C covers every class
    k = data.draw(st.integers(1, num_classes))
    labels = balanced(num_classes * num_clients * 2, num_classes, seed)  # >= num_clients samples per class
    parts = P.labels_per_client(labels, num_clients, seed, k=k)
    assert_exactly_once(parts, len(labels))
    for i, held in enumerate(label_sets(parts, labels)):
        assert len(held) == k
        assert i % num_classes in held


def test_labels_per_client_fewer_clients_than_classes_redraws_to_cover():
    labels = balanced(600, 10, 1)
    parts = P.labels_per_client(labels, 4, 2, k=4)
    assert_exactly_once(parts, len(labels))
    assert all(len(s) == 4 for s in label_sets(parts, labels))


def test_label_groups_taco_setup():
    labels = balanced(2000, 10, 0)
    for seed in range(5):
        group = P.label_group_of(20, seed)
        assert np.bincount(group).tolist() == [7, 7, 6]
        parts = P.label_groups(labels, 20, seed)
        assert_exactly_once(parts, len(labels))
        held = label_sets(parts, labels)
        assert [len(h) for h in held] == [[1, 2, 5][g] for g in group]


@FAST
@given(num_classes=st.integers(2, 12), num_clients=st.integers(10, 30), seed=seeds,
       fractions=st.sampled_from([(0.1, 0.2, 0.5), (0.5, 1.0), (0.3,)]))
def test_label_groups_label_counts(num_classes, num_clients, seed, fractions):
    labels = balanced(num_classes * num_clients * 2, num_classes, seed)
    parts = P.label_groups(labels, num_clients, seed, fractions=fractions)
    assert_exactly_once(parts, len(labels))
    group = P.label_group_of(num_clients, seed, fractions)
    sizes = np.bincount(group, minlength=len(fractions))
    assert sizes.max() - sizes.min() <= 1
    want = [max(1, int(np.floor(f * num_classes + 0.5))) for f in fractions]
    assert [len(h) for h in label_sets(parts, labels)] == [want[g] for g in group]


@FAST
@given(num_classes=st.integers(2, 12), num_clients=st.integers(1, 30), seed=seeds)
def test_qskew_q1_only_home_labels(num_classes, num_clients, seed):
    labels = balanced(300, num_classes, seed)
    parts = P.qskew(labels, num_clients, seed, q=1.0)
    assert_exactly_once(parts, len(labels))
    if num_clients < num_classes:  # DRAG client rule: home client of label l is l mod M
        for m, held in enumerate(label_sets(parts, labels)):
            assert all(lab % num_clients == m for lab in held)
    else:  # FLTrust group rule: group g (contiguous clients) is the home of label g
        for g, members in enumerate(np.array_split(np.arange(num_clients), num_classes)):
            for m in members:
                assert label_sets(parts, labels)[m] <= {g}


@FAST
@given(num_classes=st.integers(2, 12), num_clients=st.integers(1, 30), seed=seeds)
def test_qskew_q0_never_home(num_classes, num_clients, seed):
    labels = balanced(300, num_classes, seed)
    parts = P.qskew(labels, num_clients, seed, q=0.0)
    assert_exactly_once(parts, len(labels))
    held = label_sets(parts, labels)
    if num_clients < num_classes:
        if num_clients > 1:
            for m, h in enumerate(held):
                assert all(lab % num_clients != m for lab in h)
    else:
        for g, members in enumerate(np.array_split(np.arange(num_clients), num_classes)):
            for m in members:
                assert g not in held[m]


def test_qskew_iid_at_q_one_over_c():
    labels = balanced(100_000, 10, 0)
    hist = P.label_histogram(P.qskew(labels, 10, 0, q=0.1), labels, 10).to_numpy()
    assert np.allclose(hist / hist.sum(axis=1, keepdims=True), 0.1, atol=0.015)


@FAST
@given(num_users=st.integers(1, 30), data=st.data(), seed=seeds)
def test_natural_each_client_is_one_user(num_users, data, seed):
    users = data.draw(st.lists(st.integers(0, num_users - 1), min_size=num_users, max_size=300))
    users = np.array(users + list(range(num_users)))  # every user has >= 1 sample
    labels = np.zeros(len(users), dtype=np.int64)
    min_samples = data.draw(st.integers(0, 5))
    eligible = {u for u in range(num_users) if np.sum(users == u) >= min_samples}
    if not eligible:
        min_samples = 0
        eligible = set(range(num_users))
    num_clients = data.draw(st.integers(1, len(eligible)))
    parts = P.natural(labels, num_clients, seed, users=users, min_samples=min_samples)
    assert_well_formed(parts, num_clients)
    chosen = []
    for p in parts:
        owners = np.unique(users[p])
        assert len(owners) == 1 and owners[0] in eligible
        assert np.array_equal(p, np.flatnonzero(users == owners[0]))
        chosen.append(owners[0])
    assert len(set(chosen)) == num_clients


def test_natural_accepts_string_user_ids():
    users = np.array(["f0001", "f0002", "f0001", "f0003", "f0002"])
    parts = P.natural(np.zeros(5, dtype=np.int64), 3, 0, users=users)
    assert sorted(map(tuple, parts)) == [(0, 2), (1, 4), (3,)]


@FAST
@given(num_classes=st.integers(1, 6), num_clients=st.integers(1, 15), alpha=st.sampled_from([0.01, 0.5, 5.0]),
       seed=seeds)
def test_feddual_dirichlet_rule(num_classes, num_clients, alpha, seed):
    labels = balanced(num_classes * 30, num_classes, seed)
    parts = P.feddual_dirichlet(labels, num_clients, seed, alpha=alpha)
    assert_well_formed(parts, num_clients)  # no duplicate within a client
    hist = P.label_histogram(parts, labels, num_classes).to_numpy()
    assert hist.min() >= 1  # every client holds >= 1 sample of every class
    assert hist.max() <= 30


def test_feddual_dirichlet_duplicates_across_clients():
    labels = balanced(1000, 10, 0)
    parts = P.feddual_dirichlet(labels, 100, 42, alpha=0.01)
    allidx = np.concatenate(parts)
    assert len(np.unique(allidx)) < len(allidx)


# ------------------------------------------------------------------------------------- reporting


def test_label_histogram_and_summary():
    labels = np.array([0, 0, 1, 2, 2, 2])
    parts = [np.array([0, 2]), np.array([1, 3, 4, 5])]
    hist = P.label_histogram(parts, labels, 4)
    assert hist.to_numpy().tolist() == [[1, 1, 0, 0], [1, 0, 3, 0]]
    assert list(hist.columns) == [0, 1, 2, 3] and hist.index.name == "client"
    line = P.partition_summary(parts, labels)
    assert "2 clients" in line and "2/3/4" in line and "covers 6 of 6" in line


# ------------------------------------------------------------------------------------- errors

LABELS = balanced(100, 10, 0)


@pytest.mark.parametrize("kind,params,fragment", [
    ("dirichlet", {"phi": -0.5}, "phi must lie in (0, inf), got -0.5"),
    ("dirichlet", {"phi": 0}, "phi must lie in (0, inf), got 0"),
    ("dirichlet", {"phi": np.float64(-0.5)}, "phi must lie in (0, inf), got np.float64(-0.5)"),
    ("dirichlet", {"phi": "0.5"}, "phi must be > 0, got '0.5'"),
    ("dirichlet", {"phi": 1.0, "min_size": -1}, "min_size must lie in [0, inf), got -1"),
    ("feddual_dirichlet", {"alpha": 0.0}, "alpha must lie in (0, inf), got 0.0"),
    ("labels_per_client", {"k": 0}, "k must lie in [1, inf), got 0"),
    ("labels_per_client", {"k": 11}, "got 11"),
    ("label_groups", {"fractions": (0.1, 0.0, 0.5)}, "got 0.0"),
    ("label_groups", {"fractions": (0.1, 1.5)}, "fractions must all lie in (0, 1], got 1.5"),
    ("label_groups", {"fractions": ()}, "fractions must be a non-empty sequence"),
    ("qskew", {"q": 1.5}, "q must lie in [0, 1], got 1.5"),
    ("quantity", {"beta": 0.0}, "beta must lie in (0, inf), got 0.0"),
    ("quantity", {"beta": 0.5, "min_size": 11}, "quantity: no draw out of max_retries=1000"),
    ("qskew", {"q": -0.1}, "got -0.1"),
    ("shards", {"shards_per_client": 0}, "shards_per_client must lie in [1, inf), got 0"),
    ("shards", {"shards_per_client": 20}, "200 shards exceeds the number of training samples (100)"),
    ("natural", {"users": np.arange(100) % 5}, "only 5 users"),
    ("natural", {"users": np.arange(100), "min_samples": 2}, "min_samples=2"),
    ("natural", {"users": np.arange(3)}, "one user id per training sample"),
    ("natural", {"users": None}, "no natural split"),
])
def test_bad_values_name_the_value(kind, params, fragment):
    with pytest.raises(ConfigError) as err:
        P.make_partition(kind, LABELS, 10, 0, **params)
    assert fragment in str(err.value)


def test_unknown_kind_lists_known_kinds():
    with pytest.raises(ConfigError, match="unknown partition kind 'diriclet'") as err:
        P.make_partition("diriclet", LABELS, 10, 0)
    assert all(kind in str(err.value) for kind in P.PARTITIONS)


@pytest.mark.parametrize("num_clients", [0, -3, 2.5])
def test_bad_num_clients(num_clients):
    with pytest.raises(ConfigError, match=f"num_clients must be an integer >= 1, got {num_clients}"):
        P.make_partition("iid", LABELS, num_clients, 0)


def test_more_clients_than_samples():
    with pytest.raises(ConfigError, match=r"num_clients=101 exceeds the number of training samples \(100\)"):
        P.make_partition("iid", LABELS, 101, 0)


def test_bad_seed_and_labels():
    with pytest.raises(ConfigError, match="seed must be an integer >= 0, got -1"):
        P.iid(LABELS, 10, -1)
    with pytest.raises(ConfigError, match="labels must be a 1-D integer array"):
        P.iid(np.zeros((10, 2), dtype=np.int64), 2, 0)


def test_unknown_and_missing_params():
    with pytest.raises(ConfigError) as err:
        P.make_partition("dirichlet", LABELS, 10, 0, phi=0.5, beta=0.1, min_sise=3)
    msg = str(err.value)
    assert "beta, min_sise" in msg and "phi, min_size, max_retries" in msg
    with pytest.raises(ConfigError, match="accepts: none"):
        P.make_partition("iid", LABELS, 10, 0, phi=0.5)
    with pytest.raises(ConfigError, match="'qskew' needs parameter\\(s\\) q"):
        P.make_partition("qskew", LABELS, 10, 0)


def test_dirichlet_min_size_impossible_up_front():
    with pytest.raises(ConfigError, match=r"min_size=11 x num_clients=10 = 110 exceeds .*\(100\)"):
        P.dirichlet(LABELS, 10, 0, phi=1.0, min_size=11)


def test_dirichlet_unreachable_min_size_raises_quickly():
    labels = np.zeros(100, dtype=np.int64)  # one class: 10 clients need exactly 10 samples each
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        P.dirichlet(labels, 10, 0, phi=0.01, min_size=10)
    assert time.perf_counter() - start < 5
    msg = str(err.value)
    assert "max_retries=1000" in msg and "phi=0.01" in msg and "lower min_size or raise phi" in msg


def test_dirichlet_tiny_phi_still_assigns_every_sample():
    labels = np.arange(1000) % 10
    for seed in range(5):
        parts = P.dirichlet(labels, 10, seed, phi=1e-6, min_size=0)
        assert_exactly_once(parts, len(labels))
        assert max(len(p) for p in parts) <= 200  # the n/N cap: a full client takes no further class


def test_uncoverable_label_sets():
    with pytest.raises(ConfigError, match="num_clients=3 x k=2 < 10 classes"):
        P.labels_per_client(LABELS, 3, 0, k=2)
    with pytest.raises(ConfigError, match="cannot cover all 10 classes"):
        P.label_groups(LABELS, 3, 0)  # 1 + 2 + 5 = 8 labels held < 10
