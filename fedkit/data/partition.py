"""Client partitions of a training set: pure functions of the labels and a seed.

Every partitioner is called as ``fn(labels, num_clients, seed, **params)``, draws from its own
``numpy.random.default_rng(seed)`` (never the global RNG) and returns one sorted int64 array of
training-sample indices per client. All of them assign every sample to exactly one client except:

* ``natural`` covers only the samples of the users it picks (the others are left out);
* ``feddual_dirichlet`` may give one sample to several clients, as FedDUAL's own code does.

"Class c" means the c-th smallest distinct label value present in ``labels`` (so class c is label c for the
usual labels 0..C-1). Every "redraw until ..." loop is bounded and ends in a ConfigError that says which
parameter to change. Parameters carry their range as the registries' options do (``Annotated[float, "(0, inf)"]``;
the partitioner checks it). ``make_partition`` is the entry point that configs use.
"""
from __future__ import annotations

import inspect
import math
import typing
from typing import Annotated

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..registry import check, is_int, is_real

_MAX_REDRAWS = 1000  # bound on the label-set redraws of labels_per_client and label_groups


# ---------------------------------------------------------------------------------------------- validation


def _show(value) -> str:
    return repr(value) if isinstance(value, str) else str(value)  # str: np.float64(-0.5) shows as -0.5


def _need(ok: bool, name: str, rule: str, value) -> None:
    if not ok:
        raise ConfigError(f"{name} must be {rule}, got {_show(value)}")


def _positive(name: str, x) -> None:
    _need(is_real(x) and x > 0, name, "> 0", x)


def _int_at_least(name: str, x, lo: int) -> None:
    _need(is_int(x) and x >= lo, name, f"an integer >= {lo}", x)


def _check_fractions(fractions) -> tuple[float, ...]:
    try:
        values = tuple(fractions)
    except TypeError:
        values = ()
    _need(len(values) > 0, "fractions", "a non-empty sequence of numbers in (0, 1]", fractions)
    for f in values:
        if not (is_real(f) and 0 < f <= 1):
            raise ConfigError(f"fractions must all lie in (0, 1], got {_show(f)} in {_show(fractions)}")
    return values


def _prepare(labels, num_clients, seed) -> np.ndarray:
    """Check the arguments every partitioner shares; return the labels as a numpy array."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ConfigError(f"labels must be a 1-D integer array, got shape {labels.shape} "
                          f"and dtype {labels.dtype}")
    _int_at_least("num_clients", num_clients, 1)
    if num_clients > len(labels):
        raise ConfigError(f"num_clients={num_clients} exceeds the number of training samples ({len(labels)})")
    _int_at_least("seed", seed, 0)
    return labels


# ---------------------------------------------------------------------------------------------- helpers


def _group_indices(assign: np.ndarray, num_groups: int) -> list[np.ndarray]:
    """Indices i with assign[i] == g, for g = 0..num_groups-1, each sorted (stable sort keeps index order)."""
    order = np.argsort(assign, kind="stable")
    return np.split(order, np.cumsum(np.bincount(assign, minlength=num_groups))[:-1])


def _class_indices(labels: np.ndarray) -> list[np.ndarray]:
    """Sample indices of each class, classes in sorted order of the label values present."""
    classes, cls = np.unique(labels, return_inverse=True)
    return _group_indices(cls, len(classes))


def _finish(parts) -> list[np.ndarray]:
    return [np.sort(np.asarray(p, dtype=np.int64)) for p in parts]


def _deal_labels(by_class: list[np.ndarray], hold: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Split each class's shuffled samples into equal chunks among the clients holding it (hold[i, c]).

    This is the dealing step of NIID-Bench ``noniid-#label{k}``; a client holding a class with fewer samples
    than holders may get none of it. Every class must have at least one holder.
    """
    parts = [[] for _ in range(hold.shape[0])]
    for c, idx in enumerate(by_class):
        holders = np.flatnonzero(hold[:, c])
        for i, chunk in zip(holders, np.array_split(rng.permutation(idx), len(holders)), strict=True):
            parts[i].append(chunk)
    return _finish(np.concatenate(p) for p in parts)


def _skewed_target(rng: np.random.Generator, home: np.ndarray, num_targets: int, q: float) -> np.ndarray:
    """Per sample: its home target with probability q, else one of the other targets uniformly."""
    if num_targets == 1:
        return home.copy()
    other = rng.integers(0, num_targets - 1, size=len(home))
    other += other >= home  # skip the home target
    return np.where(rng.random(len(home)) < q, home, other)


# ---------------------------------------------------------------------------------------------- partitioners


def iid(labels, num_clients: int, seed: int) -> list[np.ndarray]:
    """Random split into num_clients parts whose sizes differ by at most one."""
    labels = _prepare(labels, num_clients, seed)
    rng = np.random.default_rng(seed)
    return _finish(np.array_split(rng.permutation(len(labels)), num_clients))


def dirichlet(labels, num_clients: int, seed: int, phi: Annotated[float, "(0, inf)"],
              min_size: Annotated[int, "[0, inf)"] = 10,
              max_retries: Annotated[int, "[1, inf)"] = 1000) -> list[np.ndarray]:
    """Per-class Dirichlet(phi) split, NIID-Bench ``noniid-labeldir`` (algorithms-seed §0.3 P-DIR).

    For every class: shuffle its samples, draw p ~ Dir_N(phi), zero the share of every client that already
    holds >= n/N samples, renormalise and cut the class at the cumulative proportions. The whole draw is
    repeated until every client has >= min_size samples, at most max_retries times.
    """
    labels = _prepare(labels, num_clients, seed)
    _positive("phi", phi)
    _int_at_least("min_size", min_size, 0)
    _int_at_least("max_retries", max_retries, 1)
    n = len(labels)
    if min_size * num_clients > n:
        raise ConfigError(f"min_size={min_size} x num_clients={num_clients} = {min_size * num_clients} "
                          f"exceeds the number of training samples ({n}); lower min_size")
    rng = np.random.default_rng(seed)
    by_class = _class_indices(labels)
    cap = n / num_clients
    for _ in range(max_retries):
        parts = [[] for _ in range(num_clients)]
        sizes = np.zeros(num_clients, dtype=np.int64)
        for idx in by_class:
            idx = rng.permutation(idx)
            # Zeroing the capped clients of a Dir_N(phi) draw and renormalising gives a Dir(phi) draw over the
            # uncapped clients (Dirichlet aggregation property); drawing that directly cannot end in 0/0 when
            # a tiny phi underflows. Some client is always uncapped while samples remain.
            uncapped = np.flatnonzero(sizes < cap)
            share = np.zeros(num_clients)
            share[uncapped] = rng.dirichlet(np.full(len(uncapped), float(phi)))
            cuts = (np.cumsum(share) * len(idx)).astype(np.int64)[:-1]
            for i, chunk in enumerate(np.split(idx, cuts)):
                parts[i].append(chunk)
                sizes[i] += len(chunk)
        if sizes.min() >= min_size:
            return _finish(np.concatenate(p) for p in parts)
    raise ConfigError(f"dirichlet: no draw out of max_retries={max_retries} gave every client >= "
                      f"min_size={min_size} samples with phi={phi} and num_clients={num_clients} "
                      f"({n} samples); lower min_size or raise phi")


def quantity(labels, num_clients: int, seed: int, beta: Annotated[float, "(0, inf)"],
             min_size: Annotated[int, "[0, inf)"] = 10,
             max_retries: Annotated[int, "[1, inf)"] = 1000) -> list[np.ndarray]:
    """Quantity skew, NIID-Bench ``iid-diff-quantity``: client sizes from shares q ~ Dir_N(beta), labels IID.

    The shuffled training set is cut at the cumulative shares; the draw of q is repeated until every client has
    >= min_size samples, at most max_retries times.
    """
    labels = _prepare(labels, num_clients, seed)
    _positive("beta", beta)
    _int_at_least("min_size", min_size, 0)
    _int_at_least("max_retries", max_retries, 1)
    n = len(labels)
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    for _ in range(max_retries):
        cuts = (np.cumsum(rng.dirichlet(np.full(num_clients, float(beta)))) * n).astype(np.int64)[:-1]
        if np.diff(cuts, prepend=0, append=n).min() >= min_size:
            return _finish(np.split(order, cuts))
    raise ConfigError(f"quantity: no draw out of max_retries={max_retries} gave every client >= min_size={min_size} "
                      f"samples with beta={beta} and num_clients={num_clients} ({n} samples); lower min_size or "
                      "raise beta")


def shards(labels, num_clients: int, seed: int, shards_per_client: Annotated[int, "[1, inf)"] = 2) -> list[np.ndarray]:
    """McMahan et al. (2017) shards: sort by label, cut into num_clients*shards_per_client equal shards
    (sizes differ by at most one) and give each client shards_per_client of them at random."""
    labels = _prepare(labels, num_clients, seed)
    _int_at_least("shards_per_client", shards_per_client, 1)
    num_shards = num_clients * shards_per_client
    if num_shards > len(labels):
        raise ConfigError(f"num_clients x shards_per_client = {num_shards} shards exceeds the number of "
                          f"training samples ({len(labels)}); lower shards_per_client={shards_per_client}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(labels))  # random order within a label
    pieces = np.array_split(perm[np.argsort(labels[perm], kind="stable")], num_shards)
    deal = rng.permutation(num_shards).reshape(num_clients, shards_per_client)
    return _finish(np.concatenate([pieces[s] for s in row]) for row in deal)


def labels_per_client(labels, num_clients: int, seed: int, k: Annotated[int, "[1, inf)"] = 2) -> list[np.ndarray]:
    """NIID-Bench ``noniid-#label{k}`` (algorithms-seed §0.3 P-LABELS).

    Client i holds class i mod C plus k-1 further distinct classes drawn uniformly; each class's samples are
    split equally among its holders. NIID-Bench leaves the samples of a class nobody holds unassigned; here
    the label sets are redrawn (bounded) until every class is held, so every sample is assigned once.
    """
    labels = _prepare(labels, num_clients, seed)
    by_class = _class_indices(labels)
    num_classes = len(by_class)
    rule = f"an integer in [1, {num_classes}] (the number of classes)"
    _need(is_int(k) and 1 <= k <= num_classes, "k", rule, k)
    if num_clients * k < num_classes:
        raise ConfigError(f"labels_per_client: num_clients={num_clients} x k={k} < {num_classes} classes, so "
                          "some class would be held by nobody; raise k or num_clients")
    rng = np.random.default_rng(seed)
    for _ in range(_MAX_REDRAWS):
        hold = np.zeros((num_clients, num_classes), dtype=bool)
        for i in range(num_clients):
            home = i % num_classes
            hold[i, home] = True
            hold[i, rng.choice(np.delete(np.arange(num_classes), home), size=k - 1, replace=False)] = True
        if hold.any(axis=0).all():
            return _deal_labels(by_class, hold, rng)
    raise ConfigError(f"labels_per_client: no draw out of {_MAX_REDRAWS} had every one of the {num_classes} "
                      f"classes held by a client (k={k}, num_clients={num_clients}); raise k or num_clients")


def _draw_groups(rng: np.random.Generator, num_clients: int, num_groups: int) -> np.ndarray:
    group = np.empty(num_clients, dtype=np.int64)
    for g, members in enumerate(np.array_split(rng.permutation(num_clients), num_groups)):
        group[members] = g
    return group


def label_group_of(num_clients: int, seed: int, fractions=(0.1, 0.2, 0.5)) -> np.ndarray:
    """Group id (index into fractions) of each client in ``label_groups`` with the same seed.

    Clients are split at random into len(fractions) groups as equal as possible (20 -> 7/7/6). This is the
    first draw label_groups makes from its generator, so both agree for the same seed.
    """
    _int_at_least("num_clients", num_clients, 1)
    _int_at_least("seed", seed, 0)
    fractions = _check_fractions(fractions)
    return _draw_groups(np.random.default_rng(seed), num_clients, len(fractions))


def label_groups(labels, num_clients: int, seed: int, fractions=(0.1, 0.2, 0.5)) -> list[np.ndarray]:
    """TACO's "synthetic" groups A/B/C (TACO Sec. IV-A; algorithms-seed §1.10, register T7).

    Clients of group g (see label_group_of) each hold round(fractions[g] * C) classes (half up, at least 1)
    chosen at random; each class's samples are split equally among its holders. Label sets are redrawn
    (bounded) until every class is held by at least one client.
    """
    labels = _prepare(labels, num_clients, seed)
    fractions = _check_fractions(fractions)
    by_class = _class_indices(labels)
    num_classes = len(by_class)
    rng = np.random.default_rng(seed)
    group = _draw_groups(rng, num_clients, len(fractions))
    per_group = np.array([max(1, math.floor(f * num_classes + 0.5)) for f in fractions])
    count = per_group[group]
    if count.sum() < num_classes:
        raise ConfigError(f"label_groups: {num_clients} clients holding {per_group.tolist()} classes per "
                          f"group cannot cover all {num_classes} classes; raise num_clients or "
                          f"fractions={fractions}")
    for _ in range(_MAX_REDRAWS):
        hold = np.zeros((num_clients, num_classes), dtype=bool)
        for i in range(num_clients):
            hold[i, rng.choice(num_classes, size=count[i], replace=False)] = True
        if hold.any(axis=0).all():
            return _deal_labels(by_class, hold, rng)
    raise ConfigError(f"label_groups: no draw out of {_MAX_REDRAWS} had every one of the {num_classes} "
                      f"classes held by a client (fractions={fractions}, num_clients={num_clients}); "
                      "raise num_clients or fractions")


def qskew(labels, num_clients: int, seed: int, q: Annotated[float, "[0, 1]"]) -> list[np.ndarray]:
    """q-heterogeneity of FLTrust / DRAG (DRAG §4.7, register G4).

    A sample of class l goes to its home with probability q, else to one of the other homes uniformly.
    With M = num_clients < C classes the home is client l mod M (DRAG's client rule). With M >= C the
    clients form C contiguous groups of floor/ceil(M/C) members, the home is group l (FLTrust's group rule)
    and the sample goes to a uniformly random member of the chosen group. q = 1 gives clients only their
    home classes; q = 1/M (client rule) or 1/C (group rule) is IID.
    """
    labels = _prepare(labels, num_clients, seed)
    _need(is_real(q) and 0 <= q <= 1, "q", "in [0, 1]", q)
    classes, cls = np.unique(labels, return_inverse=True)
    num_classes = len(classes)
    rng = np.random.default_rng(seed)
    if num_clients < num_classes:
        client = _skewed_target(rng, cls % num_clients, num_clients, q)
    else:
        groups = np.array_split(np.arange(num_clients), num_classes)
        first = np.array([g[0] for g in groups])
        size = np.array([len(g) for g in groups])
        group = _skewed_target(rng, cls, num_classes, q)
        client = first[group] + rng.integers(0, size[group])
    return _finish(_group_indices(client, num_clients))


def natural(labels, num_clients: int, seed: int, users,
            min_samples: Annotated[int, "[0, inf)"] = 0) -> list[np.ndarray]:
    """LEAF natural split: num_clients users picked uniformly at random among those with >= min_samples
    samples; client i holds all samples of the i-th picked user (users in sorted id order).

    Covers only the picked users' samples; the rest of the training set is assigned to nobody.
    ``users`` gives the user id of every training sample (FedData.users).
    """
    labels = _prepare(labels, num_clients, seed)
    if users is None:
        raise ConfigError("natural needs users (a user id per training sample); "
                          "this data set has no natural split")
    users = np.asarray(users)
    if users.shape != labels.shape:
        raise ConfigError(f"users must give one user id per training sample: got shape {users.shape} for "
                          f"{len(labels)} samples")
    _int_at_least("min_samples", min_samples, 0)
    ids, inverse, counts = np.unique(users, return_inverse=True, return_counts=True)
    eligible = np.flatnonzero(counts >= min_samples)
    if len(eligible) < num_clients:
        raise ConfigError(f"natural: only {len(eligible)} users have >= min_samples={min_samples} samples, "
                          f"fewer than num_clients={num_clients}; lower num_clients or min_samples")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(eligible, size=num_clients, replace=False))
    by_user = _group_indices(inverse, len(ids))
    return _finish(by_user[u] for u in chosen)


def feddual_dirichlet(labels, num_clients: int, seed: int, alpha: Annotated[float, "(0, inf)"]) -> list[np.ndarray]:
    """FedDUAL's own Dirichlet split (``Data Prepration.py``; algorithms-seed §0.3/§2.6 P-FEDDUAL-CODE).

    For each class c draw p_c ~ Dir(alpha * 1_N); client i gets max(1, floor(p_ci * n_c)) samples of c drawn
    without replacement, independently of the other clients. The one partitioner that does not assign each
    sample exactly once: a sample may go to several clients (or none), and every client holds >= 1 sample
    of every class.
    """
    labels = _prepare(labels, num_clients, seed)
    _positive("alpha", alpha)
    rng = np.random.default_rng(seed)
    by_class = _class_indices(labels)
    shares = rng.dirichlet(np.full(num_clients, float(alpha)), size=len(by_class))
    parts = [[] for _ in range(num_clients)]
    for idx, share in zip(by_class, shares, strict=True):
        take = np.clip((share * len(idx)).astype(np.int64), 1, len(idx))
        for i in range(num_clients):
            parts[i].append(rng.choice(idx, size=take[i], replace=False))
    return _finish(np.concatenate(p) for p in parts)


PARTITIONS = {
    "iid": iid,
    "dirichlet": dirichlet,
    "quantity": quantity,
    "shards": shards,
    "labels_per_client": labels_per_client,
    "label_groups": label_groups,
    "qskew": qskew,
    "natural": natural,
    "feddual_dirichlet": feddual_dirichlet,
}


def check_partition_args(kind: str, params: dict, supplied: tuple[str, ...] = ()) -> None:
    """Raise ConfigError unless ``params`` suit PARTITIONS[kind]: known names, every required one given (but those
    the caller ``supplied`` itself, such as a data set's ``users``), and each value within its annotation."""
    if not isinstance(kind, str) or kind not in PARTITIONS:
        raise ConfigError(f"unknown partition kind {kind!r}; known kinds: {', '.join(sorted(PARTITIONS))}")
    fn = PARTITIONS[kind]
    accepted = list(inspect.signature(fn).parameters.values())[3:]  # after labels, num_clients, seed
    names = [p.name for p in accepted]
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise ConfigError(f"partition {kind!r} got unknown parameter(s) {', '.join(unknown)}; "
                          f"it accepts: {', '.join(names) or 'none'}")
    missing = [p.name for p in accepted
               if p.default is inspect.Parameter.empty and p.name not in params and p.name not in supplied]
    if missing:
        raise ConfigError(f"partition {kind!r} needs parameter(s) {', '.join(missing)}")
    hints = typing.get_type_hints(fn, include_extras=True)
    for name, value in params.items():
        if typing.get_origin(hints.get(name)) is Annotated:
            check(f"partition {kind!r}: {name}", value, hints[name])


def make_partition(kind: str, labels, num_clients: int, seed: int, **params) -> list[np.ndarray]:
    """Partition ``labels`` with PARTITIONS[kind] after checking the kind and the parameters
    (``check_partition_args``)."""
    check_partition_args(kind, params)
    return PARTITIONS[kind](labels, num_clients, seed, **params)


# ---------------------------------------------------------------------------------------------- reporting


def label_histogram(parts: list[np.ndarray], labels, num_classes: int) -> pd.DataFrame:
    """Counts per client (rows) and class (columns 0..num_classes-1), for plots."""
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ConfigError(f"labels must lie in [0, num_classes={num_classes}), got range "
                          f"[{labels.min()}, {labels.max()}]")
    counts = np.zeros((len(parts), num_classes), dtype=np.int64)
    for i, p in enumerate(parts):
        counts[i] = np.bincount(labels[p], minlength=num_classes)
    return pd.DataFrame(counts, index=pd.RangeIndex(len(parts), name="client"),
                        columns=pd.RangeIndex(num_classes, name="class"))


def partition_summary(parts: list[np.ndarray], labels) -> str:
    """One line: client sizes (min/median/max), mean classes per client, samples covered, duplicates."""
    labels = np.asarray(labels)
    sizes = np.array([len(p) for p in parts])
    classes = np.mean([len(np.unique(labels[p])) for p in parts])
    assigned = np.concatenate(parts)
    covered = len(np.unique(assigned))
    line = (f"{len(parts)} clients; size min/median/max {sizes.min()}/{np.median(sizes):g}/{sizes.max()}; "
            f"{classes:.2f} classes per client on average; covers {covered} of {len(labels)} samples")
    duplicates = len(assigned) - covered
    return line + (f", {duplicates} duplicate assignments" if duplicates else "")
