"""The reproduction ledger: each paper's claims as data, decided from the committed CSVs by one verdict rule.

A ``Claim`` names a paper's figure or table, the claim in words, the paper's value, a ``Measure`` (a query over a
committed CSV giving one value per seed and quantity, e.g. per method) and a ``Rule`` that says, seed by seed,
whether the values agree with the claim. ``decide`` turns that into one of five labels, the same for every paper:

- **reproduced**: at least ``MIN_SEEDS`` seeds, and enough of them agree with the claim for a one-sided sign test on
  the paired per-seed margins at level ``ALPHA`` (3 of 3, 4 of 4, 5 of 5, 5 of 6, 6 of 7, 7 of 8, ...);
- **not reproduced**: as many seeds contradict it;
- **inconclusive**: fewer than ``MIN_SEEDS`` seeds (a single seed decides nothing, whatever its sign), or neither
  count is enough;
- **not comparable**: the runs do not learn (every quantity's mean over the seeds under the claim's floor, e.g.
  within a few points of chance, or no run reaches the target): the claim's ``floor_why`` says what the floor is.
  The floor reads means, so one lucky seed of a near-chance quantity does not make the claim decidable. A claim
  that no result could contradict (its ``uncheckable`` says why, e.g. a peer's band that admits every accuracy) is
  not comparable at every scale, with or without runs;
- **not run**: the data or the hardware is missing; the claim's ``missing`` (small scale) or ``paper_missing`` (paper
  scale) names which. A slice of a notebook (some of a claim's quantities rendered) can still refute a "best of" or
  an ordering claim: a seed that contradicts it on the quantities present contradicts it whatever the others do.

Each claim is decided at both scales: small from ``figures/<paper>/<file>``, paper from
``figures/<paper>/paper/<file>``. ``ledger_frame`` is the machine-readable ledger (figures/ledger.csv) and
``markdown_tables`` REPRODUCTION.md's tables; ``fedkit ledger`` writes both, ``fedkit ledger --check`` compares.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import itertools
import json
import math
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binomtest
from scipy.stats import t as student_t

from .errors import FedkitError

LABELS = ("reproduced", "not reproduced", "inconclusive", "not comparable", "not run")
MIN_SEEDS = 3
ALPHA = 0.125  # the sign test's level: the chance that 3 of 3 seeds agree when each seed's sign is a fair coin
SCALES = ("small", "paper")
PAPERS = ("taco", "feddual", "fadamgc", "drag", "peers")
WAITING = "paper scale not run yet"  # how every reason of a claim whose paper-scale data is here begins
GPU_MISSING = f"{WAITING} (`fedkit figures --scale paper --plan` lists its runs)"
UNCHECKABLE = "no result can contradict it"  # how the reason of a claim with ``uncheckable`` begins


def tail(values, n: float):
    """The last ``n`` of a run's per-round ``values``, or, with n < 1, the last fraction n of them (at least one)."""
    return values[-(max(1, int(n * len(values))) if n < 1 else int(n)):]


# ---- measures: a committed CSV -> one value per (seed, quantity) ------------------------------------------------

@dataclass(frozen=True)
class Measure:
    """Rows of ``source`` (a CSV under figures/<paper>/) filtered by ``where`` (column → value or list of values),
    one value per (``seed``, ``by``) from column ``value``. A per-round CSV is first reduced per run by ``reduce``:
    "last" (the last round's value), "best" (the highest value over the rounds), "tail:N" (the mean of the last N
    rounds; N < 1: that fraction of the rounds),
    "tailstd:N" (their standard deviation: how steady a run ends), or "reach:T" (the first round whose value is ≥ T;
    a run that never reaches it gets NaN). ``fill`` replaces NaN (a diverged run, or one that never
    reached the target) by a value, e.g. 0 for accuracy or the round cap + 1 for rounds, so that it loses a
    comparison; without ``fill`` a seed with a NaN is dropped. ``seed=None``: the CSV holds one row per quantity
    with no seed column (old single-seed files), read as seed 0; so is a CSV that lacks the ``seed`` column (one
    seed, written before its notebook ran seeds). ``percent``: values shown × 100."""
    source: str
    value: str
    by: str = "method"
    where: dict = field(default_factory=dict)
    seed: str | None = "seed"
    reduce: str | None = None
    fill: float | None = None
    percent: bool = False
    names: tuple = ()  # quantities to keep, in this order (default: all, in the CSV's order)

    def raw(self, frame: pd.DataFrame, partial: bool = False) -> pd.DataFrame:
        """Seeds × quantities before ``fill`` (NaN where a run diverged or never reached a target). ``partial``: a
        quantity of ``names`` without rows is left out (a slice of the notebook rendered), not an error."""
        missing = [c for c in (self.value, self.by, *self.where) if c not in frame]
        if missing:
            raise FedkitError(f"{self.source}: no column(s) {missing}; columns: {list(frame.columns)}")
        rows = frame
        for column, wanted in self.where.items():
            wanted = list(wanted) if isinstance(wanted, (list, tuple, set)) else [wanted]
            rows = rows[rows[column].isin(wanted)]
        rows = rows.assign(_seed=rows[self.seed] if self.seed and self.seed in frame else 0)
        if self.reduce is not None and not rows.empty:
            groups = rows.groupby(["_seed", self.by], sort=False)
            rows = pd.Series({key: self._reduce(group) for key, group in groups}, dtype=float, name=self.value)
            rows = rows.rename_axis(["_seed", self.by]).reset_index()
        if rows.empty:
            raise FedkitError(f"{self.source}: no rows where {self.where}")
        if rows.duplicated(["_seed", self.by]).any():
            raise FedkitError(f"{self.source}: more than one row per (seed, {self.by}) after {self.where}")
        table = rows.pivot(index="_seed", columns=self.by, values=self.value)
        order = list(self.names) or list(dict.fromkeys(rows[self.by]))
        absent = [n for n in order if n not in table]
        order = [n for n in order if n in table] if partial else order
        if absent and not partial:
            raise FedkitError(f"{self.source}: no rows for {absent} in column {self.by!r} where {self.where}")
        table = table[order].astype(float).rename_axis(index="seed", columns=None)
        ran = rows.groupby(["_seed", self.by]).size().unstack().reindex(index=table.index, columns=order).notna()
        return table[ran.all(axis=1).to_numpy()]  # a seed that has not run every quantity is not compared

    def values(self, frame: pd.DataFrame) -> pd.DataFrame:
        table = self.raw(frame)
        return table if self.fill is None else table.fillna(self.fill)

    def _reduce(self, run: pd.DataFrame) -> float:
        """One run's rows (its rounds, in order) reduced to one value."""
        kind, _, arg = self.reduce.partition(":")
        values = run[self.value].to_numpy(dtype=float)
        if kind == "last":
            return float(values[-1])
        if kind == "best":
            return float(np.nanmax(values)) if np.isfinite(values).any() else math.nan
        if kind in ("tail", "tailstd"):
            last = tail(values, float(arg))
            return float(np.mean(last) if kind == "tail" else np.std(last, ddof=1))
        if kind == "reach":
            hit = np.flatnonzero(values >= float(arg))
            rounds = run["round"].to_numpy() if "round" in run else np.arange(len(run))
            return float(rounds[hit[0]]) if len(hit) else math.nan
        raise FedkitError(f"unknown reduce {self.reduce!r}: 'last', 'best', 'tail:N', 'tailstd:N' or 'reach:T'")


# ---- rules: values -> does each seed agree with the claim? --------------------------------------------------------

class Rule:
    """``agree(values)``: per seed, whether the values agree with the claim. ``margins(values)``: per seed, by how
    much, in the measure's units (positive: agrees), each seed's quantities compared with each other or with the
    claim's threshold on that seed (paired). ``text``: the rule in words."""

    def agree(self, values: pd.DataFrame) -> pd.Series:
        raise NotImplementedError

    def margins(self, values: pd.DataFrame) -> pd.Series:
        raise NotImplementedError

    def within(self, names: tuple) -> Rule | None:
        """This rule over the quantities ``names`` alone, where a seed that contradicts it contradicts the whole rule
        whatever the quantities left out (e.g. "best of nine" over five); None where the others could undo it."""
        return None


def _beats(a: pd.Series, b: pd.Series, higher: bool) -> pd.Series:
    return a > b if higher else a < b


def _lead(a: pd.Series, b: pd.Series, higher: bool) -> pd.Series:
    """By how much ``a`` beats ``b`` on each seed (negative: it loses)."""
    return a - b if higher else b - a


def _least(columns: list[pd.Series], index) -> pd.Series:
    """The smallest margin per seed: a claim made of several comparisons holds by its weakest one."""
    return pd.concat(columns, axis=1).min(axis=1) if columns else pd.Series(np.inf, index=index)


@dataclass(frozen=True)
class Order(Rule):
    """``names[0]`` beats ``names[1]`` beats ... (higher values if ``higher``, else lower, e.g. rounds to a target).
    A seed agrees when every neighbouring pair is in order; its margin is the smallest lead of a pair."""
    names: tuple
    higher: bool = True

    def agree(self, values):
        ok = pd.Series(True, index=values.index)
        for a, b in zip(self.names, self.names[1:]):
            ok &= _beats(values[a], values[b], self.higher)
        return ok

    def margins(self, values):
        return _least([_lead(values[a], values[b], self.higher) for a, b in zip(self.names, self.names[1:])],
                      values.index)

    def within(self, names):
        kept = tuple(n for n in self.names if n in names)
        return dataclasses.replace(self, names=kept) if len(kept) > 1 else None

    @property
    def text(self):
        return (" > " if self.higher else " < ").join(map(str, self.names)) + ("" if self.higher else
                                                                                 " (lower is better)")


@dataclass(frozen=True)
class Best(Rule):
    """``name`` beats every other quantity (or those in ``others``)."""
    name: str
    others: tuple = ()
    higher: bool = True

    def _others(self, values):
        return [c for c in (self.others or values.columns) if c != self.name]

    def agree(self, values):
        ok = pd.Series(True, index=values.index)
        for other in self._others(values):
            ok &= _beats(values[self.name], values[other], self.higher)
        return ok

    def margins(self, values):
        return _least([_lead(values[self.name], values[o], self.higher) for o in self._others(values)], values.index)

    def within(self, names):
        others = tuple(o for o in self.others if o in names)
        rivals = others if self.others else tuple(n for n in names if n != self.name)  # no others: every column
        return dataclasses.replace(self, others=others) if self.name in names and rivals else None

    @property
    def text(self):
        return f"{self.name} {'highest' if self.higher else 'lowest'}" + (f" of {', '.join(self.others)}"
                                                                          if self.others else "")


@dataclass(frozen=True)
class Gap(Rule):
    """``a`` − ``b`` ≥ ``at_least`` on every seed (``at_most`` instead: ≤); the margin is the room left."""
    a: str
    b: str
    at_least: float | None = None
    at_most: float | None = None

    def _holds(self, diff):
        return diff >= self.at_least if self.at_least is not None else diff <= self.at_most

    def agree(self, values):
        return self._holds(values[self.a] - values[self.b])

    def margins(self, values):
        diff = values[self.a] - values[self.b]
        return diff - self.at_least if self.at_least is not None else self.at_most - diff

    @property
    def text(self):
        return (f"{self.a} − {self.b} ≥ {self.at_least:g}" if self.at_least is not None
                else f"{self.a} − {self.b} ≤ {self.at_most:g}")


@dataclass(frozen=True)
class Ratio(Rule):
    """``a`` / ``b`` within [``at_least``, ``at_most``] on every seed (either bound may be None)."""
    a: str
    b: str
    at_least: float | None = None
    at_most: float | None = None

    def agree(self, values):
        ratio = values[self.a] / values[self.b]
        ok = pd.Series(True, index=values.index)
        if self.at_least is not None:
            ok &= ratio >= self.at_least
        if self.at_most is not None:
            ok &= ratio <= self.at_most
        return ok

    def margins(self, values):
        ratio = values[self.a] / values[self.b]
        lows = [] if self.at_least is None else [ratio - self.at_least]
        return _least(lows + ([] if self.at_most is None else [self.at_most - ratio]), values.index)

    @property
    def text(self):
        lo = "" if self.at_least is None else f"{self.at_least:g} ≤ "
        hi = "" if self.at_most is None else f" ≤ {self.at_most:g}"
        return f"{lo}{self.a} / {self.b}{hi}"


@dataclass(frozen=True)
class Within(Rule):
    """``name`` within ``tolerance`` of ``value`` (both in the measure's units) on every seed."""
    name: str
    value: float
    tolerance: float

    def agree(self, values):
        return (values[self.name] - self.value).abs() <= self.tolerance

    def margins(self, values):
        return self.tolerance - (values[self.name] - self.value).abs()

    @property
    def text(self):
        return f"|{self.name} − {self.value:g}| ≤ {self.tolerance:g}"


@dataclass(frozen=True)
class Threshold(Rule):
    """``name`` ≥ ``at_least`` (or ≤ ``at_most``) on every seed."""
    name: str
    at_least: float | None = None
    at_most: float | None = None

    def agree(self, values):
        v = values[self.name]
        return v >= self.at_least if self.at_least is not None else v <= self.at_most

    def margins(self, values):
        v = values[self.name]
        return v - self.at_least if self.at_least is not None else self.at_most - v

    @property
    def text(self):
        return f"{self.name} ≥ {self.at_least:g}" if self.at_least is not None else f"{self.name} ≤ {self.at_most:g}"


@dataclass(frozen=True)
class Monotone(Rule):
    """The values rise (or fall) along ``names`` on every seed, e.g. accuracy over α = 0.01, 0.1, 1."""
    names: tuple
    increasing: bool = True

    def _order(self):
        return Order(tuple(reversed(self.names)) if self.increasing else self.names, higher=True)

    def agree(self, values):
        return self._order().agree(values)

    def margins(self, values):
        return self._order().margins(values)

    def within(self, names):
        kept = tuple(n for n in self.names if n in names)
        return dataclasses.replace(self, names=kept) if len(kept) > 1 else None

    @property
    def text(self):
        return (" < " if self.increasing else " > ").join(map(str, self.names))


# ---- claims and verdicts --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Claim:
    """One claim of a paper. ``measure`` reads the committed CSV; ``rule`` decides each seed. ``floor``: below it
    (every quantity's mean over the seeds, before ``fill``) the runs do not learn and the claim is not comparable,
    ``floor_why`` says what the floor is (e.g. "chance is 10 %"). ``missing``: the small scale cannot run this claim
    (name the data or hardware); ``paper_missing`` likewise at paper scale (default: not run yet, needs a GPU).
    ``caveat``: a remark the verdict carries, e.g. a tuned value at the edge of its grid. ``uncheckable``: why no
    result could contradict the claim (it is then not comparable at every scale, and no run is needed for it)."""
    id: str
    paper: str
    item: str
    claim: str
    paper_value: str
    measure: Measure | None
    rule: Rule | None
    floor: float | None = None
    floor_why: str = ""
    missing: str | None = None
    paper_missing: str | None = GPU_MISSING
    caveat: str = ""
    deterministic: str = ""  # why no seed can change the result (a computed toy): one evaluation then decides
    headline: bool = False  # one of its paper's headline claims, listed in REPRODUCTION.md's summary
    paper_measure: Measure | None = None  # the query at paper scale, where its rows differ from small's (stand-ins)
    paper_rule: Rule | None = None  # the rule at paper scale, where the paper's setting names other quantities
    uncheckable: str = ""


@dataclass(frozen=True)
class Verdict:
    label: str
    reason: str
    seeds: int
    value: str  # the measured values, formatted
    agreeing: int | None = None  # seeds that agree with the claim (None: not decided on seeds)
    margin: float = math.nan  # the mean paired margin over the seeds (shown units), and its 90 % interval
    low: float = math.nan
    high: float = math.nan


def measure_at(claim: Claim, scale: str) -> Measure | None:
    return claim.paper_measure if scale == "paper" and claim.paper_measure is not None else claim.measure


def rule_at(claim: Claim, scale: str) -> Rule | None:
    return claim.paper_rule if scale == "paper" and claim.paper_rule is not None else claim.rule


def source_path(claim: Claim, scale: str, root: Path) -> Path:
    folder = root / claim.paper if scale == "small" else root / claim.paper / "paper"
    return folder / measure_at(claim, scale).source


def decide(claim: Claim, scale: str, root: Path) -> Verdict:
    """The verdict of ``claim`` at ``scale`` from the CSVs under ``root`` (figures/). A claim that names what is
    missing at this scale is not run, even where its CSV exists without its rows (a data set the notebook could not
    load), unless the rows of a slice already refute it (``_refuted_by_a_slice``)."""
    if claim.uncheckable:
        return Verdict("not comparable", f"{UNCHECKABLE}: {claim.uncheckable}", 0, "—")
    claim = dataclasses.replace(claim, rule=rule_at(claim, scale))
    missing = claim.missing if scale == "small" else claim.paper_missing
    measure = measure_at(claim, scale)
    path = source_path(claim, scale, root) if measure is not None else None
    raw = frame = None
    if path is not None and path.exists():
        frame = _read(path, path.stat().st_mtime_ns)  # an unreadable file is an error, whatever the claim says
        try:
            raw = measure.raw(frame)
        except FedkitError:
            if not missing:
                raise
    if raw is None:
        refuted = _refuted_by_a_slice(claim, measure, frame) if frame is not None else None
        if refuted is not None:
            return refuted
        if missing:
            return Verdict("not run", missing, 0, "—")
        raise FedkitError(f"claim {claim.id}: its CSV {path} is missing (and the claim names no reason)")
    return decide_values(claim, raw, measure)


def _refuted_by_a_slice(claim: Claim, measure: Measure, frame: pd.DataFrame) -> Verdict | None:
    """Not reproduced on the quantities a slice of the notebook rendered, where the rule allows it (``Rule.within``):
    each seed that contradicts it there contradicts it whatever the others do, so the sign test decides; else None."""
    try:
        raw = measure.raw(frame, partial=True)
    except FedkitError:
        return None
    rule = claim.rule.within(tuple(raw.columns)) if claim.rule is not None else None
    if rule is None:
        return None
    verdict = decide_values(dataclasses.replace(claim, rule=rule), raw, measure)
    if verdict.label != "not reproduced":
        return None
    absent = [str(n) for n in measure.names if n not in raw.columns]
    return dataclasses.replace(verdict, reason=f"{verdict.reason}, among the {len(raw.columns)} quantities rendered "
                                               f"so far: {', '.join(absent)} cannot undo it")


# The `fedkit figures --scale paper --plan` the paper-scale "not run" reasons cite, committed under
# benchmarks/results/<PAPER_PLAN>/: the 2-core CPU idle (the campaign's workers just finished), probes at 1 torch
# thread, local training only. Its reasons name the plan by its date.
PAPER_PLAN = "2026-11-29-paper-plan-late"
PAPER_PLAN_RUN = PAPER_PLAN[:10]


def paper_plan(runs: int, minutes: float, missing: str = "", not_predicted: int = 0) -> str:
    """Why a paper-scale CSV is not run, from ``PAPER_PLAN_RUN``'s plan: its notebook's ``runs`` runs left whose data
    is here would take ``minutes`` of local training on the idle 2-core CPU; its other ``not_predicted`` runs need
    ``missing``, data this machine lacks (with no run on data here, the reason is that data)."""
    if not runs:
        return f"{missing}: not offline here, for its notebook's {not_predicted} paper-scale runs (not predicted)"
    plan = (f"{WAITING}: its notebook's {runs} runs with data here ≈ {minutes / 60:,.1f} h of local training on the "
            f"idle 2-core CPU (`fedkit figures --scale paper --plan`, {PAPER_PLAN_RUN})")
    return f"{plan}; {not_predicted} runs need {missing}, not offline here (not predicted)" if missing else plan


def with_paper_plan(claims: list[Claim], reasons: dict[str, str]) -> list[Claim]:
    """``claims`` with each one that waits only for a paper-scale run (``GPU_MISSING``) carrying the reason keyed by
    its id or, failing that, by its paper-scale CSV's file name (``paper_plan``)."""
    out = []
    for c in claims:
        measure = measure_at(c, "paper")
        reason = reasons.get(c.id, reasons.get(measure.source) if measure is not None else None)
        out.append(dataclasses.replace(c, paper_missing=reason) if c.paper_missing == GPU_MISSING and reason else c)
    return out


CIFAR10_SUBSET = "CIFAR-10 (small: 4k subset)"  # how an item names CIFAR-10 rows that run its real 4k subset at small


def with_cifar10_missing_at_paper(claims: list[Claim]) -> list[Claim]:
    """``claims`` with each CIFAR-10 row (its item names ``CIFAR10_SUBSET``) saying why it is not run at paper scale:
    the full set is not offline."""
    why = "CIFAR-10 is not offline (the small scale runs its 4k subset; paper scale needs the full set)"
    return [dataclasses.replace(c, paper_missing=why) if CIFAR10_SUBSET in c.item else c for c in claims]


@functools.lru_cache(maxsize=64)
def _read(path: Path, mtime_ns: int) -> pd.DataFrame:
    """A committed CSV, read once per version of the file (many claims query the same one)."""
    try:
        return pd.read_csv(path)
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise FedkitError(f"{path} cannot be read as a CSV: {' '.join(str(err).splitlines())}") from None


def sign_test(k: int, n: int) -> float:
    """The one-sided sign test's p-value: the chance that at least ``k`` of ``n`` seeds agree when each agrees with
    probability 1/2 (the paired margins' sign a fair coin: no real difference)."""
    return float(binomtest(k, n, 0.5, alternative="greater").pvalue) if n else 1.0


def seeds_needed(n: int) -> int:
    """The fewest agreeing seeds of ``n`` that decide (n + 1: none can)."""
    return next((k for k in range(n + 1) if sign_test(k, n) <= ALPHA), n + 1)


def margin_interval(margins: pd.Series) -> tuple[float, float, float]:
    """The mean paired margin and its two-sided 90 % Student-t interval (the mean alone for equal margins)."""
    m = margins.to_numpy(dtype=float)
    mean = float(m.mean())
    if len(m) < 2 or not np.isfinite(m).all() or m.std() == 0:
        return mean, mean, mean
    half = float(student_t.ppf(0.95, len(m) - 1) * m.std(ddof=1) / math.sqrt(len(m)))
    return mean, mean - half, mean + half


def decide_values(claim: Claim, raw: pd.DataFrame, measure: Measure | None = None) -> Verdict:
    """The verdict of ``claim`` on its measure's values (seeds × quantities, before ``fill``): the seeds' paired
    margins decided by the sign test (``sign_test``, ``ALPHA``), their mean and interval shown as the evidence."""
    m = measure or claim.measure
    values = raw if m.fill is None else raw.fillna(m.fill)
    values = values.dropna()
    shown = format_values(raw, m)
    if raw.isna().all().all() or (claim.floor is not None and not (raw.mean() >= claim.floor).any()):
        why = claim.floor_why or ("no run reaches the target" if raw.isna().all().all() else "")
        return Verdict("not comparable", f"the runs do not learn: {why}".rstrip(": "), len(values), shown)
    n = len(values)
    if n < MIN_SEEDS and not claim.deterministic:
        return Verdict("inconclusive", f"{n} seed{'s' * (n != 1)} (a verdict needs {MIN_SEEDS})", n, shown)
    agree, margins = claim.rule.agree(values), claim.rule.margins(values)
    tie = ~agree & ~(margins < 0)  # equal values, or neither run reached the target: a seed without a sign
    k, against = int(agree.sum()), int((~agree & ~tie).sum())
    if claim.deterministic:
        label = "reproduced" if k == n else "not reproduced" if k == 0 else "inconclusive"
        why = f"computed: {claim.deterministic}" if k in (0, n) else f"the seeds disagree ({k} of {n} agree)"
        return Verdict(label, why, n, shown, k)
    scale = 100.0 if m.percent else 1.0
    signed = k + against
    finite = margins[~tie & np.isfinite(margins)]  # an infinite margin: one run never reached the target
    mean, low, high = (scale * x for x in margin_interval(finite)) if len(finite) else (math.nan,) * 3
    evidence = (f", margin {_signed(mean)}" + (f" (90 %: {_signed(low)} … {_signed(high)})" if high > low else "")
                if len(finite) else "")
    evidence += f"; {signed - len(finite)} where one run never reached it" if len(finite) < signed else ""
    evidence += f"; {n - signed} tied" if signed < n else ""
    seeds = Verdict("", "", n, shown, k, mean, low, high)
    if sign_test(k, signed) <= ALPHA:
        return dataclasses.replace(seeds, label="reproduced", reason=f"{k} of {n} seeds agree{evidence}")
    if sign_test(against, signed) <= ALPHA:
        return dataclasses.replace(seeds, label="not reproduced", reason=f"{against} of {n} seeds contradict "
                                                                         f"it{evidence}")
    need = seeds_needed(signed)
    takes = f"{need} of {signed}" if need <= signed else f"{MIN_SEEDS} seeds with a sign"
    return dataclasses.replace(seeds, label="inconclusive", reason=f"{k} of {n} seeds agree, {against} contradict "
                                                                   f"(deciding takes {takes}){evidence}")


def _signed(x: float) -> str:
    return ("+" if x > 0 else "") + _number(x)


def format_values(values: pd.DataFrame, measure: Measure) -> str:
    """'DRAG 24.2 ± 0.8 · FLTrust 11.6 ± 0.5' (mean ± std over seeds, ddof 1; one seed: the value; '(k ×)': k runs
    diverged or never reached the target)."""
    scale = 100.0 if measure.percent else 1.0
    cells = []
    for name in values.columns:
        v = values[name]
        finite = v.dropna()
        if finite.empty:
            cells.append(f"{name} ×")
            continue
        spread = finite.std() if finite.max() > finite.min() else 0.0  # equal values: no rounding noise as spread
        text = _number(scale * finite.mean()) + (f" ± {_number(scale * spread)}" if len(finite) > 1 else "")
        lost = len(v) - len(finite)
        cells.append(f"{name} {text}" + (f" ({lost} ×)" if lost else ""))
    return " · ".join(cells)


def _number(x: float) -> str:
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}" if abs(x) >= 0.1 or x == 0 else f"{x:.2g}"


# ---- the ledger of all papers ------------------------------------------------------------------------------------

def claims(papers=PAPERS) -> list[Claim]:
    """Every registered claim: ``fedkit.papers.<paper>_claims.CLAIMS`` for each paper that has such a module."""
    out = []
    for paper in papers:
        try:
            module = importlib.import_module(f"fedkit.papers.{paper}_claims")
        except ModuleNotFoundError as err:
            if err.name != f"fedkit.papers.{paper}_claims":
                raise
            continue
        out += module.CLAIMS
    ids = [c.id for c in out]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise FedkitError(f"claim ids used twice: {repeated}")
    return out


def ledger_frame(all_claims: list[Claim], root: Path) -> pd.DataFrame:
    """One row per (claim, scale): paper, item, claim, paper value, fedkit value, seeds, scale, verdict, why, source."""
    rows = []
    for c in all_claims:
        for scale in SCALES:
            v = decide(c, scale, root)
            source = "" if c.measure is None else str(source_path(c, scale, root).relative_to(root))
            rows.append({"paper": c.paper, "id": c.id, "item": c.item, "claim": c.claim, "rule": _rule_text(c, scale),
                         "paper_value": c.paper_value, "fedkit_value": v.value, "seeds": v.seeds, "scale": scale,
                         "verdict": v.label, "why": v.reason + (f"; {c.caveat}" if c.caveat else ""),
                         "seeds_agreeing": v.agreeing, "margin": _rounded(v.margin), "margin_low": _rounded(v.low),
                         "margin_high": _rounded(v.high), "source": source})
    return pd.DataFrame(rows)


def _rounded(x: float) -> float:
    return float(f"{x:.4g}") if math.isfinite(x) else x


def _rule_text(c: Claim, scale: str) -> str:
    rule = rule_at(c, scale)
    return "" if rule is None else rule.text


def headlines(all_claims: list[Claim], *ids: str) -> list[Claim]:
    """``all_claims`` with the claims ``ids`` marked as their paper's headline claims."""
    unknown = set(ids) - {c.id for c in all_claims}
    if unknown:
        raise FedkitError(f"headline claims {sorted(unknown)} are not claims")
    return [dataclasses.replace(c, headline=c.id in ids) for c in all_claims]


BEGIN, END = "<!-- ledger:{paper} (generated by `fedkit ledger`; edit the claims, not this table) -->", \
    "<!-- /ledger:{paper} -->"
SUMMARY = "summary"
NAMES = {"taco": "TACO", "feddual": "FedDUAL", "fadamgc": "FAdamGC", "drag": "DRAG", "peers": "Peers (NIID-Bench)"}
CODED = 60  # a reason's part longer than this, used more than once in a paper's table, or longer than 2 × this,
# is shown as a code defined once under the table
CELL = 160  # the longest a table cell (a line of it, where sibling claims share a row) is written


def _parts(why: str) -> list[str]:
    return [part for part in str(why).split("; ") if part]


def reason_codes(rows: pd.DataFrame, paper: str) -> dict[str, str]:
    """The codes of a paper's table (``<P>1``, ``<P>2``, ...): each long reason part used more than once, or very
    long, by first use; then, in a verdict cell still longer than ``CELL`` characters, its longest parts until the
    cell fits."""
    used = pd.Series([part for why in rows["why"] for part in _parts(why)], dtype=object)
    tally = used.value_counts()
    coded = [part for part in dict.fromkeys(used)
             if len(part) > 2 * CODED or (len(part) > CODED and tally[part] > 1)]

    def numbered():
        return {part: f"{paper[0].upper()}{i}" for i, part in enumerate(coded, 1)}

    for verdict, why in zip(rows["verdict"], rows["why"]):
        for part in sorted(_parts(why), key=len, reverse=True):
            if len(_why(verdict, why, numbered())) <= CELL - len("(a) "):  # a sibling's line is labelled
                break
            if part not in coded:
                coded.append(part)
    return numbered()


def _why(verdict: str, why: str, codes: dict[str, str]) -> str:
    parts = [f"[{codes[p]}]" if p in codes else p for p in _parts(why)]
    return f"**{verdict}**" + (": " + "; ".join(parts) if parts else "")


def markdown_table(ledger: pd.DataFrame, paper: str) -> str:
    """REPRODUCTION.md's table for ``paper``: both scales side by side, long reasons as codes defined under it, and
    the claims not run at either scale for the same reasons as one row."""
    rows = ledger[ledger["paper"] == paper]
    small = rows[rows["scale"] == "small"].set_index("id")
    large = rows[rows["scale"] == "paper"].set_index("id")
    codes = reason_codes(rows, paper)
    lines = ["| item | claim | paper | fedkit small | verdict small | fedkit paper | verdict paper |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    idle = (small["verdict"] == "not run") & (large.loc[small.index, "verdict"] == "not run")
    shown = small[~idle]
    shared = [(r["item"], _value_cell(r), _value_cell(large.loc[cid])) for cid, r in shown.iterrows()]
    for (item, value_small, value_paper), group in itertools.groupby(zip(shared, shown.index), key=lambda x: x[0]):
        ids = [cid for _, cid in group]  # sibling claims: one item, the same measured values
        lines.append("| " + " | ".join(_cell(x) for x in (
            item, _siblings(small.loc[ids, "claim"]), _siblings(small.loc[ids, "paper_value"]), value_small,
            _siblings(_why(v, w, codes) for v, w in zip(small.loc[ids, "verdict"], small.loc[ids, "why"])),
            value_paper,
            _siblings(_why(v, w, codes) for v, w in zip(large.loc[ids, "verdict"], large.loc[ids, "why"])))) + " |")
    waiting = small[idle].assign(paper_why=large.loc[small[idle].index, "why"])
    for (why_small, why_paper), group in waiting.groupby(["why", "paper_why"], sort=False):
        items = "; ".join(dict.fromkeys(",".join(item.split(",")[:2]) for item in group["item"]))
        lines.append("| " + " | ".join(_cell(x) for x in (
            items, f"{len(group)} claims (`figures/ledger.csv`)", "", "—", _why("not run", why_small, codes), "—",
            _why("not run", why_paper, codes))) + " |")
    tallies = [f"{scale} scale " + ", ".join(f"{tally[lab]} {lab}" for lab in LABELS if lab in tally)
               for scale, tally in (("small", small["verdict"].value_counts()),
                                    ("paper", large["verdict"].value_counts()))]
    legend = "".join(f"\n- **{code}**: {_cell(part)}" for part, code in codes.items())
    return "\n".join(lines) + "\n\nVerdicts: " + "; ".join(tallies) + "." + (f"\n\nCodes:{legend}" if legend else "")


def _siblings(texts) -> str:
    """Sibling claims' cells in one: '(a) …<br>(b) …'; a single claim's cell as it is."""
    texts = list(texts)
    return texts[0] if len(texts) == 1 else "<br>".join(f"({chr(97 + i)}) {t}" for i, t in enumerate(texts))


def _value_cell(r) -> str:
    """fedkit's values and seed count; the means alone where the spreads would make the cell longer than ``CELL``
    (ledger.csv keeps them)."""
    seeds = f"{r['seeds']} seed{'' if r['seeds'] == 1 else 's'}" if r["seeds"] else ""
    text = str(r["fedkit_value"]) + (f" ({seeds})" if seeds else "")
    if len(text) > CELL:
        means = ", ".join(filter(None, (seeds, "means")))
        text = re.sub(r" ± [^ ]+", "", str(r["fedkit_value"])) + f" ({means})"
    return text


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def summary(ledger: pd.DataFrame, all_claims: list[Claim], root: Path) -> str:
    """REPRODUCTION.md's first screen: the verdict counts per paper and scale with what ran at paper scale and what
    waits, then each paper's headline claims small → paper with their deciding evidence."""
    toy = {c.id for c in all_claims if c.deterministic}
    lines = ["| paper | scale | " + " | ".join(LABELS) + " | toy | paper-scale runs | waiting for a run / for data |",
             "| --- | --- |" + " ---: |" * (len(LABELS) + 1) + " --- | --- |"]
    for (paper, scale), group in ledger.groupby(["paper", "scale"], sort=False):
        tally = group["verdict"].value_counts()
        toys = int((group["verdict"].isin(("reproduced", "not reproduced")) & group["id"].isin(toy)).sum())
        ran, waits = _coverage(root, group) if scale == "paper" else ("", "")
        lines.append(f"| {NAMES.get(paper, paper)} | {scale} | " + " | ".join(str(tally.get(lab, 0)) for lab in LABELS)
                     + f" | {toys} | {ran} | {waits} |")
    lines += ["", "toy: decided on a computed toy only (no seed can change it). **Headline claims**, small → paper "
                  "scale:", ""]
    by_id = ledger.set_index(["id", "scale"])
    for c in all_claims:
        if c.headline:
            small, large = by_id.loc[(c.id, "small")], by_id.loc[(c.id, "paper")]
            item = ",".join(c.item.split(",")[:2])
            lines.append(f"- **{NAMES.get(c.paper, c.paper)}**, {item}: {c.claim}. Small **{small['verdict']}** "
                         f"({_evidence(small)}) → paper **{large['verdict']}** ({_evidence(large)}).")
    return "\n".join(lines)


def _evidence(row) -> str:
    """A verdict's deciding evidence, or, not run or not comparable, why in short."""
    first = _parts(row["why"])[0]
    if row["verdict"] == "not comparable":
        return "the runs do not learn"
    if row["verdict"] == "not run":
        return "its runs wait" if first.startswith(WAITING) else first.split(" (")[0]
    return first


def _coverage(root: Path, rows: pd.DataFrame) -> tuple[str, str]:
    """A paper's renders at paper scale (CSVs, devices, seeds), and its claims waiting for a run whose data is here
    and for data that is not offline (or a stand-in that runs at small scale only)."""
    paper = rows["paper"].iloc[0]
    renders = [json.loads(p.read_text()) for p in sorted((root / paper / "paper").glob("*.provenance.json"))]
    devices = sorted({d for r in renders for d in r.get("devices", [])})
    seeds = sorted({len(r.get("seeds", [])) for r in renders})
    waits = rows[rows["verdict"] == "not run"]
    pending = int(waits["why"].str.startswith(WAITING).sum())
    span = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}–{seeds[-1]}" if seeds else ""
    ran = f"{len(renders)} CSVs, {' + '.join(devices)}, {span} seeds" if renders else "none"
    return ran, f"{pending} / {len(waits) - pending}"


def render_reproduction(text: str, ledger: pd.DataFrame, head: str | None = None) -> str:
    """``text`` (REPRODUCTION.md) with every generated table block replaced by the ledger's table, and the summary
    block by ``head``."""
    blocks = {paper: markdown_table(ledger, paper) for paper in ledger["paper"].unique()}
    if head is not None:
        blocks[SUMMARY] = head
    for name, table in blocks.items():
        begin, end = BEGIN.format(paper=name), END.format(paper=name)
        pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
        if not pattern.search(text):
            raise FedkitError(f"REPRODUCTION.md has no block for {name!r}: add the two lines\n{begin}\n{end}")
        block = f"{begin}\n{table}\n{end}"
        text = pattern.sub(lambda _, block=block: block, text)
    return text


def counts(ledger: pd.DataFrame) -> pd.DataFrame:
    """Verdicts per paper and scale (the closing notes' 'before and after')."""
    table = ledger.groupby(["paper", "scale", "verdict"]).size().unstack("verdict", fill_value=0)
    return table.reindex(columns=[lab for lab in LABELS if lab in table.columns])


# ---- provenance and staleness ---------------------------------------------------------------------------------

def provenance_path(csv: Path) -> Path:
    return csv.with_suffix(".provenance.json")


def stale(all_claims: list[Claim], root: Path, repo: Path) -> list[tuple[str, str]]:
    """(claim id, why) for each claim whose CSV, at either scale, has no provenance, or whose algorithm files changed
    in a commit after the one the CSV was written at."""
    import inspect

    from .algorithms import ALGORITHMS

    out = []
    for c in all_claims:
        for scale in SCALES:
            if measure_at(c, scale) is None:
                continue
            csv = source_path(c, scale, root)
            if not csv.exists():
                continue
            meta_file = provenance_path(csv)
            if not meta_file.exists():
                out.append((c.id, f"{csv.relative_to(root)} records no provenance (written before provenance "
                                  "existed)"))
                continue
            meta = json.loads(meta_file.read_text())
            algorithms = sorted({a for run in meta.get("runs", {}).values() for a in run.get("algorithms", [])})
            files = [str(Path(inspect.getsourcefile(ALGORITHMS[a])).relative_to(repo))
                     for a in algorithms if a in ALGORITHMS]
            changed = _changed_since(repo, meta.get("commit"), files)
            if changed:
                out.append((c.id, f"{csv.relative_to(root)}: changed since {meta['commit'][:10]}: "
                                  f"{', '.join(changed)}"))
    return out


def _changed_since(repo: Path, commit: str | None, files: list[str]) -> list[str]:
    if not commit or not files:
        return []
    done = subprocess.run(["git", "diff", "--name-only", commit, "HEAD", "--", *files], cwd=repo,
                          capture_output=True, text=True)
    if done.returncode != 0:
        return [f"(commit {commit[:10]} unknown to git)"]
    return done.stdout.split()


# ---- the files: figures/ledger.csv and REPRODUCTION.md ------------------------------------------------------------

def build(repo: Path, papers=PAPERS) -> tuple[str, str]:
    """The ledger CSV's text and REPRODUCTION.md's text, recomputed from the claims and the committed CSVs."""
    found = claims(papers)
    frame = ledger_frame(found, repo / "figures")
    head = summary(frame, found, repo / "figures") if tuple(papers) == PAPERS else None
    return frame.to_csv(index=False), render_reproduction((repo / "REPRODUCTION.md").read_text(encoding="utf-8"),
                                                          frame, head)


def differences(repo: Path) -> list[str]:
    """What disagrees between the committed ledger files and the ledger recomputed from the data (empty: none)."""
    csv_text, md_text = build(repo)
    out = []
    committed = repo / "figures" / "ledger.csv"
    if not committed.exists() or committed.read_text(encoding="utf-8") != csv_text:
        out.append("figures/ledger.csv differs from the verdicts recomputed from the committed CSVs")
    if (repo / "REPRODUCTION.md").read_text(encoding="utf-8") != md_text:
        out.append("REPRODUCTION.md's ledger tables differ from the ledger")
    return out


def write(repo: Path) -> pd.DataFrame:
    """Write figures/ledger.csv and REPRODUCTION.md's tables; return the verdict counts."""
    csv_text, md_text = build(repo)
    (repo / "figures" / "ledger.csv").write_text(csv_text, encoding="utf-8")
    (repo / "REPRODUCTION.md").write_text(md_text, encoding="utf-8")
    return counts(pd.read_csv(repo / "figures" / "ledger.csv"))
