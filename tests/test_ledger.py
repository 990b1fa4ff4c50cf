"""The reproduction ledger: the verdict rule on hand-made values, the measures' queries, provenance, and the committed
ledger recomputed from the committed CSVs (no training: `pytest -k ledger` runs in seconds)."""
import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedkit import ledger
from fedkit.errors import FedkitError
from fedkit.ledger import Best, Claim, Gap, Measure, Monotone, Order, Ratio, Threshold, Within

REPO = Path(__file__).resolve().parent.parent


def seeds(**columns) -> pd.DataFrame:
    return pd.DataFrame(columns, index=pd.Index(range(len(next(iter(columns.values())))), name="seed"))


def claim(rule, **kw) -> Claim:
    return Claim("c", "test", "item", "words", "paper", Measure("x.csv", "v"), rule, **kw)


def label(rule, values, **kw) -> str:
    return ledger.decide_values(claim(rule, **kw), values).label


def test_ledger_reproduced_needs_three_agreeing_paired_seeds():
    rule = Order(("A", "B"))
    assert label(rule, seeds(A=[0.9, 0.91, 0.92], B=[0.8, 0.81, 0.82])) == "reproduced"
    assert label(rule, seeds(A=[0.9, 0.91], B=[0.8, 0.81])) == "inconclusive"  # two seeds decide nothing
    assert label(rule, seeds(A=[0.9], B=[0.1])) == "inconclusive"  # nor does one, whatever the gap
    # the ranges overlap (A's worst below B's best), but A beats B on each seed's own partition and initialisation
    assert label(rule, seeds(A=[0.9, 0.85, 0.95], B=[0.8, 0.84, 0.94])) == "reproduced"
    assert label(rule, seeds(A=[0.9, 0.7, 0.92], B=[0.8, 0.81, 0.82])) == "inconclusive"  # the seeds disagree
    # more seeds tolerate a disagreeing one: 5 of 6 decide at the sign test's level, 4 of 5 do not
    assert label(rule, seeds(A=[1, 1, 1, 1, 0, 1], B=[0] * 5 + [0.5])) == "reproduced"
    assert label(rule, seeds(A=[1, 1, 1, 1, 0], B=[0] * 4 + [0.5])) == "inconclusive"


def test_ledger_not_reproduced_when_the_paired_seeds_contradict():
    rule = Order(("A", "B"))
    assert label(rule, seeds(A=[0.5, 0.51, 0.52], B=[0.8, 0.81, 0.82])) == "not reproduced"
    assert label(rule, seeds(A=[0.8, 0.85, 0.9], B=[0.81, 0.86, 0.91])) == "not reproduced"  # overlapping, paired


def test_ledger_ties_have_no_sign_and_the_evidence_is_shown():
    rule = Order(("A", "B"), higher=False)
    rounds = Claim("c", "t", "i", "w", "p", Measure("x.csv", "v", fill=math.inf), rule)
    never = math.nan  # neither run reached the target: a tie, not a contradiction
    verdict = ledger.decide_values(rounds, seeds(A=[never, never, never, 30.0, 20.0],
                                                 B=[never, never, 58.0, 40.0, never]))
    assert (verdict.label, verdict.agreeing) == ("inconclusive", 2)
    assert verdict.reason == ("2 of 5 seeds agree, 1 contradict (deciding takes 3 of 3), margin +10.0; 2 where one "
                              "run never reached it; 2 tied")
    verdict = ledger.decide_values(claim(rule), seeds(A=[10.0, 12.0, 11.0], B=[12.0, 15.0, 12.0]))
    assert verdict.label == "reproduced" and verdict.margin == pytest.approx(2.0)
    assert verdict.low < 2.0 < verdict.high
    assert verdict.reason == "3 of 3 seeds agree, margin +2.00 (90 %: +0.31 … +3.69)"


def test_ledger_false_reproduced_rate_at_three_seeds_is_the_sign_tests_level():
    """Under no difference (each seed's sign a fair coin) 3 seeds decide 'reproduced' with probability 1/8."""
    assert ledger.sign_test(3, 3) == ledger.ALPHA == 0.125
    assert [ledger.seeds_needed(n) for n in range(2, 11)] == [3, 3, 4, 5, 5, 6, 7, 7, 8]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-5, 5).filter(lambda x: abs(x) > 1e-3), min_size=1, max_size=9),
       st.floats(1e-3, 5))
def test_ledger_property_an_agreeing_seed_never_undecides_and_three_seeds_at_least(margins, extra):
    """Adding a seed whose margin agrees with the decided verdict never moves it to inconclusive; no verdict is
    decided on fewer than 3 seeds."""
    rule = Gap("A", "B", at_least=0.0)

    def verdict(ms):
        return ledger.decide_values(claim(rule), seeds(A=list(ms), B=[0.0] * len(ms)))

    before = verdict(margins)
    if before.label != "inconclusive":
        assert before.seeds >= 3 and max(before.agreeing, before.seeds - before.agreeing) >= 3
        sign = 1 if before.label == "reproduced" else -1
        assert verdict([*margins, sign * extra]).label == before.label


def test_ledger_not_comparable_below_the_floor_and_when_nothing_reaches():
    values = seeds(A=[0.11, 0.12, 0.10], B=[0.10, 0.11, 0.12])
    verdict = ledger.decide_values(claim(Order(("A", "B")), floor=0.15, floor_why="chance is 10 %"), values)
    assert (verdict.label, verdict.reason) == ("not comparable", "the runs do not learn: chance is 10 %")
    never = seeds(A=[math.nan] * 3, B=[math.nan] * 3)
    assert label(Order(("A", "B"), higher=False), never) == "not comparable"


def test_ledger_floor_reads_each_quantitys_mean_so_one_lucky_seed_does_not_decide():
    near_chance = claim(Order(("A", "B")), floor=0.15, floor_why="chance is 10 %")
    lucky = seeds(A=[0.16, 0.11, 0.10], B=[0.10, 0.10, 0.09])  # A's mean 12.3 %: one seed above the floor
    assert ledger.decide_values(near_chance, lucky).label == "not comparable"
    learns = seeds(A=[0.16, 0.15, 0.17], B=[0.10, 0.10, 0.09])  # A's mean 16 %: decided as usual
    assert ledger.decide_values(near_chance, learns).label == "reproduced"


def test_ledger_fill_makes_a_run_that_never_reached_lose():
    c = Claim("c", "t", "i", "w", "p", Measure("x.csv", "v", fill=math.inf), Order(("A", "B"), higher=False))
    values = seeds(A=[10.0, 12.0, 11.0], B=[math.nan, 40.0, math.nan])
    verdict = ledger.decide_values(c, values)
    assert verdict.label == "reproduced" and verdict.seeds == 3
    assert "B 40.0 (2 ×)" in verdict.value
    unfilled = Claim("c", "t", "i", "w", "p", Measure("x.csv", "v"), Order(("A", "B"), higher=False))
    assert ledger.decide_values(unfilled, values).label == "inconclusive"  # NaN seeds dropped: one left


def test_ledger_a_seed_never_run_is_left_out_not_counted_as_diverged():
    frame = pd.DataFrame({"method": ["A", "B", "A", "B", "A"], "seed": [0, 0, 1, 1, 2],
                          "v": [0.9, math.nan, 0.8, 0.7, 0.85]})  # B diverged on seed 0 and never ran seed 2
    c = Claim("c", "t", "i", "w", "p", Measure("x.csv", "v", fill=0.0), Order(("A", "B")))
    raw = c.measure.raw(frame)
    assert raw.index.tolist() == [0, 1] and math.isnan(raw.loc[0, "B"])
    verdict = ledger.decide_values(c, raw)
    assert verdict.seeds == 2 and verdict.value == "A 0.85 ± 0.071 · B 0.70 (1 ×)"


def test_ledger_rules_per_seed():
    v = seeds(A=[3.0, 1.0, 2.0], B=[1.0, 2.0, 1.0], C=[0.0, 0.0, 3.0])
    assert Order(("A", "B")).agree(v).tolist() == [True, False, True]
    assert Order(("A", "B", "C")).agree(v).tolist() == [True, False, False]
    assert Best("A").agree(v).tolist() == [True, False, False]
    assert Best("B", higher=False, others=("A",)).agree(v).tolist() == [True, False, True]
    assert Gap("A", "B", at_least=1.0).agree(v).tolist() == [True, False, True]
    assert Gap("A", "B", at_most=0.0).agree(v).tolist() == [False, True, False]
    assert Ratio("A", "B", at_least=2.0).agree(v).tolist() == [True, False, True]
    assert Within("A", 2.0, 0.5).agree(v).tolist() == [False, False, True]
    assert Threshold("C", at_most=0.0).agree(v).tolist() == [True, True, False]
    assert Monotone(("C", "B", "A")).agree(v).tolist() == [True, False, False]


def test_ledger_best_is_refuted_by_one_separated_better_method():
    v = seeds(A=[0.5, 0.52, 0.51], B=[0.6, 0.61, 0.62], C=[0.1, 0.2, 0.3])
    assert label(Best("A"), v) == "not reproduced"


def test_ledger_deterministic_claims_need_one_evaluation():
    v = seeds(A=[1.0], B=[0.0])
    assert label(Order(("A", "B")), v, deterministic="a computed toy") == "reproduced"
    assert label(Order(("B", "A")), v, deterministic="a computed toy") == "not reproduced"


def test_ledger_measure_reduces_rounds_per_run():
    rows = [{"round": r, "acc": a, "method": m, "seed": s, "fig": "x"}
            for m, s, curve in [("A", 0, [0.1, 0.5, 0.9, 0.8]), ("A", 1, [0.1, 0.2, 0.3, 0.4]),
                                ("B", 0, [0.1, 0.6, 0.7, 0.95]), ("B", 1, [0.1, 0.9, 0.9, 0.9])]
            for r, a in enumerate(curve)]
    frame = pd.DataFrame(rows)
    last = Measure("x.csv", "acc", reduce="last").values(frame)
    assert last.loc[0, "A"] == 0.8 and last.loc[1, "B"] == 0.9
    best = Measure("x.csv", "acc", reduce="best").values(frame)
    assert best.loc[0, "A"] == 0.9 and best.loc[0, "B"] == 0.95
    tail = Measure("x.csv", "acc", reduce="tail:2").values(frame)
    assert tail.loc[0, "A"] == pytest.approx(0.85)
    reach = Measure("x.csv", "acc", reduce="reach:0.85").raw(frame)
    assert reach.loc[0, "A"] == 2 and math.isnan(reach.loc[1, "A"]) and reach.loc[0, "B"] == 3
    spread = Measure("x.csv", "acc", reduce="tailstd:0.5").values(frame)
    assert list(ledger.tail(np.arange(101), 0.1)) == list(range(91, 101))  # 10 % of rounds 0-100: 91-100
    assert list(ledger.tail(np.arange(4), 0.1)) == [3] and list(ledger.tail(np.arange(4), 2)) == [2, 3]
    assert spread.loc[1, "A"] == pytest.approx(pd.Series([0.3, 0.4]).std())
    with pytest.raises(FedkitError, match=r"no column\(s\) \['nope'\]"):
        Measure("x.csv", "nope").values(frame)
    with pytest.raises(FedkitError, match=r"no rows for \['C'\]"):
        Measure("x.csv", "acc", reduce="last", names=("A", "C")).values(frame)
    with pytest.raises(FedkitError, match="more than one row per"):
        Measure("x.csv", "acc").values(frame)  # per-round rows without a reduce


def test_ledger_missing_csv_is_not_run_only_with_a_reason(tmp_path):
    named = Claim("c", "p", "i", "w", "v", Measure("gone.csv", "v"), Order(("A", "B")), missing="no CIFAR-100 offline")
    verdict = ledger.decide(named, "small", tmp_path)
    assert (verdict.label, verdict.reason) == ("not run", "no CIFAR-100 offline")
    assert ledger.decide(named, "paper", tmp_path).reason == ledger.GPU_MISSING
    silent = Claim("c", "p", "i", "w", "v", Measure("gone.csv", "v"), Order(("A", "B")))
    with pytest.raises(FedkitError, match="gone.csv is missing"):
        ledger.decide(silent, "small", tmp_path)


def test_ledger_claim_ids_are_unique_and_every_label_is_one_of_five():
    claims = ledger.claims()
    assert len({c.id for c in claims}) == len(claims) > 0
    frame = ledger.ledger_frame(claims, REPO / "figures")
    assert set(frame["verdict"]) <= set(ledger.LABELS)


def test_ledger_every_small_verdict_has_three_seeds_or_says_why():
    frame = pd.read_csv(REPO / "figures" / "ledger.csv")
    small = frame[(frame["scale"] == "small") & (frame["seeds"] < ledger.MIN_SEEDS)]
    reason = r"\d seeds?(?: \(a verdict needs \d\))?: "  # "1 seed (a verdict needs 3): why" or "…; 2 seeds: why"
    said = small["why"].str.startswith(("computed", ledger.UNCHECKABLE)) | small["why"].str.contains(reason)
    silent = small[~said & (small["verdict"] != "not run")]
    assert silent.empty, f"fewer than {ledger.MIN_SEEDS} seeds and no reason: {list(silent['id'])}"


def test_ledger_matches_the_committed_data():
    """figures/ledger.csv and REPRODUCTION.md's tables are what the claims give on the committed CSVs."""
    assert ledger.differences(REPO) == []


def test_ledger_provenance_is_written_beside_each_table(tmp_path, monkeypatch):
    from fedkit.figures import save_table

    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path))
    small = save_table(pd.DataFrame({"a": [1]}), "demo", "t", scale="small")
    paper = save_table(pd.DataFrame({"a": [1]}), "demo", "t", scale="paper")
    assert small == tmp_path / "demo" / "t.csv" and paper == tmp_path / "demo" / "paper" / "t.csv"
    meta = json.loads(ledger.provenance_path(small).read_text())
    assert meta["scale"] == "small" and meta["threads"] >= 1 and isinstance(meta["runs"], dict)
    assert meta["commit"] is None or len(meta["commit"]) == 40


def test_a_table_is_written_without_float_noise_and_reads_back_as_written(tmp_path, monkeypatch):
    from fedkit.figures import save_table

    monkeypatch.setenv("FEDKIT_FIGURES", str(tmp_path))
    table = pd.DataFrame({"accuracy": [100 * 0.9905, 100 * 0.8757, 3.0], "loss": [0.1 + 0.2, 0.24523677368164062,
                                                                                 float("inf")]})
    assert 100 * 0.9905 != 99.05 and 0.1 + 0.2 != 0.3  # the products carry float noise, the CSV does not
    written = save_table(table, "demo", "t", scale="small")
    assert written.read_text().splitlines() == ["accuracy,loss", "99.05,0.3", "87.57,0.245236773681641", "3.0,inf"]
    back = pd.read_csv(written)
    assert (back.dtypes == "float64").all() and (back["accuracy"] - table["accuracy"]).abs().max() < 1e-12


def test_no_committed_csv_carries_the_float_noise_save_table_drops():
    """A number written as 14.399999999999999 or 87.57000000000001 (a short decimal's nearest double printed in
    full) is one that save_table now writes as 14.4 or 87.57: a committed CSV rendered before it was cleaned once."""
    import re

    noisy = re.compile(r"(?<![\w.])-?\d+\.\d*(?:0{6,}|9{6,})\d{1,2}(?![\w.])")
    found = {}
    for csv in sorted((REPO / "figures").rglob("*.csv")):
        hits = [m.group(0) for m in noisy.finditer(csv.read_text(encoding="utf-8"))
                if len(m.group(0).lstrip("-").replace(".", "").lstrip("0")) > 15]
        if hits:
            found[str(csv.relative_to(REPO))] = hits[:2]
    assert not found, found


def test_ledger_staleness_follows_git(tmp_path):
    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@t")
    git("config", "user.name", "t")
    (tmp_path / "alg.py").write_text("a = 1\n")
    git("add", ".")
    git("commit", "-qm", "one")
    first = git("rev-parse", "HEAD")
    assert ledger._changed_since(tmp_path, first, ["alg.py"]) == []
    (tmp_path / "alg.py").write_text("a = 2\n")
    git("commit", "-qam", "two")
    assert ledger._changed_since(tmp_path, first, ["alg.py"]) == ["alg.py"]
    assert ledger._changed_since(tmp_path, "0" * 40, ["alg.py"]) == ["(commit 0000000000 unknown to git)"]


def test_cifar10_rows_say_the_full_set_is_not_offline_at_paper_scale(tmp_path):
    rows = [Claim(f"x-{i}", "taco", item, "claim", "paper", Measure("absent.csv", "v"), Best("A"))
            for i, item in enumerate([f"Table II, {ledger.CIFAR10_SUBSET}, mean α", "Table II, MNIST, mean α"])]
    cifar, mnist = ledger.with_cifar10_missing_at_paper(rows)
    assert ledger.decide(cifar, "paper", tmp_path).reason.startswith("CIFAR-10 is not offline")
    assert mnist.paper_missing == ledger.GPU_MISSING


def test_paper_plan_reasons_replace_only_the_generic_wait_by_id_first(tmp_path):
    rows = [Claim("x-fmnist", "feddual", "item", "claim", "paper", Measure("t.csv", "v"), Best("A")),
            Claim("x-cifar", "feddual", "item", "claim", "paper", Measure("t.csv", "v"), Best("A")),
            Claim("x-other", "feddual", "item", "claim", "paper", Measure("u.csv", "v"), Best("A")),
            Claim("x-gone", "feddual", "item", "claim", "paper", Measure("t.csv", "v"), Best("A"),
                  paper_missing="SVHN is not offline")]
    here, gone = ledger.paper_plan(23, 479.3), ledger.paper_plan(0, 0, "CIFAR-10", 6)
    fmnist, cifar, other, kept = ledger.with_paper_plan(rows, {"t.csv": here, "x-cifar": gone})
    assert ledger.decide(fmnist, "paper", tmp_path).reason == (
        "paper scale not run yet: its notebook's 23 runs with data here ≈ 8.0 h of local training on the idle 2-core "
        f"CPU (`fedkit figures --scale paper --plan`, {ledger.PAPER_PLAN_RUN})")
    assert cifar.paper_missing == "CIFAR-10: not offline here, for its notebook's 6 paper-scale runs (not predicted)"
    assert other.paper_missing == ledger.GPU_MISSING and kept.paper_missing == "SVHN is not offline"
    both = ledger.paper_plan(33, 291.5, "CIFAR-10", 15)
    assert both.startswith(ledger.WAITING)
    assert both.endswith("; 15 runs need CIFAR-10, not offline here (not predicted)")


def plan_rows(name: str) -> set[tuple[int, str, int]]:
    """(runs left with data here: listed − done − archived − not predicted, their hours, runs not predicted) of each
    notebook row of a committed plan, benchmarks/results/<name>/plan.txt."""
    import re

    rows = set()
    for line in (REPO / "benchmarks/results" / name / "plan.txt").read_text(encoding="utf-8").splitlines():
        listed = re.match(r"\w+/\w+\s+(\d+)\s", line)
        left = re.search(r"\s([\d.]+)(?: \+ (\d+) runs not predicted)?$", line)
        if listed and left:
            trained = sum(int(n) for n in re.findall(r"(\d+) (?:done|archived)", line))
            unpredicted = int(left[2] or 0)
            rows.add((int(listed[1]) - trained - unpredicted, f"{float(left[1]) / 60:,.1f}", unpredicted))
    return rows


def test_paper_plan_reasons_quote_the_committed_plan():
    """Every paper-scale reason's numbers are one notebook row of a committed plan: a dated reason's (its runs left
    with data here, their hours, and its runs not predicted where it quotes them) of ledger.PAPER_PLAN's plan, an
    undated one's runs not predicted (data missing here, which no run changes) of any plan committed."""
    import re

    latest = plan_rows(ledger.PAPER_PLAN)
    every = latest | plan_rows("2026-11-28-paper-plan")
    reasons = {c.paper_missing for c in ledger.claims()
               if c.paper_missing and (ledger.PAPER_PLAN_RUN in c.paper_missing or "not predicted" in c.paper_missing)}
    assert len(reasons) >= 10 and len(latest) >= 10 and len(every) >= 20
    for reason in reasons:
        left = re.search(r"its notebook's (\d+) runs with data here ≈ ([\d,.]+) h", reason)
        lacking = re.search(r"(\d+) (?:paper-scale )?runs (?:need|\(not)", reason)
        quoted = ((int(left[1]), left[2]) if left else ()) + ((int(lacking[1]),) if lacking else ())
        rows = latest if left else every
        assert any(quoted == (row if left and lacking else row[:2] if left else row[2:]) for row in rows), reason


def test_ledger_summary_fits_a_screen_and_lists_every_headline():
    text = (REPO / "REPRODUCTION.md").read_text(encoding="utf-8")
    begin, end = ledger.BEGIN.format(paper=ledger.SUMMARY), ledger.END.format(paper=ledger.SUMMARY)
    assert text.startswith("# Reproduction status\n\n" + begin)
    block = text[text.index(begin) + len(begin):text.index(end)].strip().splitlines()
    assert len(block) <= 40
    heads = [c for c in ledger.claims() if c.headline]
    assert {c.paper for c in heads} == set(ledger.PAPERS)  # every paper names its headlines
    assert sum(line.startswith("- **") for line in block) == len(heads)


def test_ledger_tables_code_long_reasons_once_and_collapse_claims_never_run():
    frame = pd.read_csv(REPO / "figures" / "ledger.csv")
    table = ledger.markdown_table(frame, "taco")
    codes = ledger.reason_codes(frame[frame["paper"] == "taco"], "taco")
    assert codes and all(f"- **{code}**: " in table for code in codes.values())
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert not any(part in row for part in codes for row in rows)  # each long reason is written once, in the legend
    idle = frame[frame["paper"] == "taco"].groupby("id")["verdict"].agg(set).eq({"not run"}).sum()
    assert idle > 0 and len(rows) < frame[frame["paper"] == "taco"]["id"].nunique()


def test_the_prose_cites_only_csvs_that_exist():
    """Every CSV that README.md or REPRODUCTION.md names (a path from the checkout, or a bare name under figures/)
    is committed."""
    import re

    committed = {p.name for p in (REPO / "figures").rglob("*.csv")}
    for doc in ("README.md", "REPRODUCTION.md"):
        for name in re.findall(r"`([A-Za-z0-9_./-]+\.csv)`", (REPO / doc).read_text(encoding="utf-8")):
            assert ((REPO / name).exists() if "/" in name else name in committed), f"{doc} cites {name}"


def test_ledger_stale_reads_both_scales(tmp_path):
    for folder in (tmp_path / "test", tmp_path / "test" / "paper"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "x.csv").write_text("method,seed,v\nA,0,1\n")
    found = ledger.stale([claim(Order(("A", "B")))], tmp_path, REPO)
    assert [why.split(" ")[0] for _, why in found] == ["test/x.csv", "test/paper/x.csv"]  # neither has provenance


def test_ledger_tables_keep_cells_short_and_give_sibling_claims_one_row():
    frame = pd.read_csv(REPO / "figures" / "ledger.csv")
    for paper in frame["paper"].unique():
        table = ledger.markdown_table(frame, paper)
        rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
        cells = [cell.strip() for row in rows for cell in row.strip("| ").split(" | ")]
        assert max(len(line) for cell in cells for line in cell.split("<br>")) <= ledger.CELL, paper
    taco = frame[(frame["paper"] == "taco") & (frame["scale"] == "small")]
    siblings = taco.groupby(["item", "fedkit_value"])["id"].nunique()
    merged = ledger.markdown_table(frame, "taco")
    assert siblings.max() > 1 and merged.count("<br>(b) ") >= (siblings > 1).sum()  # one row, (a), (b), ...


def test_value_cells_drop_spreads_only_when_too_long():
    row = {"fedkit_value": " · ".join(f"M{i} 60.0 ± 1.23" for i in range(3)), "seeds": 3}
    assert ledger._value_cell(row) == "M0 60.0 ± 1.23 · M1 60.0 ± 1.23 · M2 60.0 ± 1.23 (3 seeds)"
    row = {"fedkit_value": " · ".join(f"Method{i} 60.0 ± 1.23" for i in range(9)), "seeds": 3}
    assert ledger._value_cell(row).endswith("Method8 60.0 (3 seeds, means)") and "±" not in ledger._value_cell(row)


def test_a_methods_slice_of_feddual_table1_decides_the_claims_between_its_methods(tmp_path):
    """A render of some of Table 1's methods (the notebook's ``methods``) decides each claim between two of them;
    "best of the nine" still needs all nine and stays not run, with its paper-scale reason."""
    from fedkit.papers import feddual_claims

    finals = {"FedAvg": [0.80, 0.81, 0.80], "SCAFFOLD": [0.70, 0.70, 0.69], "FedNova": [0.77, 0.73, 0.69]}
    (tmp_path / "feddual" / "paper").mkdir(parents=True)
    pd.DataFrame([{"method": m, "seed": s, "final_accuracy": a, "dataset": "fmnist"}
                  for m, accs in finals.items() for s, a in enumerate(accs)]
                 ).to_csv(tmp_path / "feddual" / "paper" / "table1_fmnist.csv", index=False)
    claims = {c.id: c for c in feddual_claims.CLAIMS}
    verdict = lambda cid: ledger.decide(claims[cid], "paper", tmp_path)
    assert verdict("feddual-t1-fmnist-scaffold-fails").label == "reproduced"  # 10, 11, 11 points: ≥ 5 on each seed
    assert verdict("feddual-t1-fmnist-fednova-fails").label == "inconclusive"  # 3, 8, 11 points: 2 of 3 seeds
    best = verdict("feddual-t1-fmnist-best")
    assert best.label == "not run" and "paper scale not run yet" in best.reason


def test_a_slice_refutes_a_best_of_claim_but_never_reproduces_it(tmp_path):
    """FedDUAL below FedAvg on every seed of a five-method slice contradicts "best of the nine" whatever the other
    four reach: not reproduced, naming them. FedDUAL above the five decides nothing: the others could beat it."""
    from fedkit.papers import feddual_claims

    claim = {c.id: c for c in feddual_claims.CLAIMS}["feddual-t1-fmnist-best"]
    folder = tmp_path / "feddual" / "paper"
    folder.mkdir(parents=True)

    def slice_with(feddual: list[float]) -> ledger.Verdict:
        finals = {"FedAvg": [0.80, 0.81, 0.80], "FedProx": [0.81, 0.82, 0.79], "FedNova": [0.75, 0.73, 0.69],
                  "SCAFFOLD": [0.68, 0.69, 0.67], "FedDUAL": feddual}
        pd.DataFrame([{"method": m, "seed": s, "final_accuracy": a, "dataset": "fmnist"}
                      for m, accs in finals.items() for s, a in enumerate(accs)]
                     ).to_csv(folder / "table1_fmnist.csv", index=False)
        return ledger.decide(claim, "paper", tmp_path)

    refuted = slice_with([0.78, 0.80, 0.78])
    assert refuted.label == "not reproduced" and refuted.seeds == 3 and refuted.agreeing == 0
    assert refuted.margin == pytest.approx(-100 * (0.03 + 0.02 + 0.02) / 3)  # below the best present on each seed
    assert refuted.reason.endswith("among the 5 quantities rendered so far: FedBN, FedDyn, MOON, FedPVR cannot undo it")
    assert slice_with([0.90, 0.90, 0.90]).label == "not run"  # best of five is not best of nine
    assert slice_with([0.78, 0.90, 0.90]).label == "not run"  # 1 of 3 contradicts: too few to refute


def test_within_restricts_a_rule_to_the_quantities_present_only_where_the_rest_cannot_undo_a_contradiction():
    assert Best("a").within(("a", "b")) == Best("a")
    assert Best("a", others=("b", "c")).within(("a", "c", "d")) == Best("a", others=("c",))
    assert Best("a").within(("b", "c")) is None and Best("a").within(("a",)) is None  # nothing to beat, or no a
    assert Best("a", others=("b",)).within(("a", "c")) is None
    assert Order(("a", "b", "c"), higher=False).within(("a", "c")) == Order(("a", "c"), higher=False)
    assert Order(("a", "b", "c")).within(("b", "d")) is None
    assert Monotone(("x", "y", "z")).within(("x", "z")) == Monotone(("x", "z"))
    for rule in (Gap("a", "b", at_least=1.0), Ratio("a", "b", at_most=2.0), Threshold("a", at_least=0.5),
                 Within("a", 1.0, 0.1)):
        assert rule.within(("a", "b")) is None  # these need their own quantities, and read nothing else


def test_taco_fig2_claims_read_table5s_runs_at_every_seed_at_paper_scale(tmp_path):
    """At paper scale Fig. 2's grid runs at seed 0 only (the figure); the claims read Table V's runs at each seed,
    as the small scale does, from Table V's CSV."""
    from fedkit.papers import taco_claims

    claims = {c.id: c for c in taco_claims.CLAIMS}
    finals = {"FedAvg": [0.58, 0.68, 0.74], "FedProx": [0.57, 0.69, 0.74], "Scaffold": [0.55, 0.67, 0.73],
              "STEM": [0.20, 0.30, 0.25]}
    (tmp_path / "taco" / "paper").mkdir(parents=True)
    pd.DataFrame([{"dataset": "fmnist", "method": m, "seed": s, "final_accuracy": a}
                  for m, accs in finals.items() for s, a in enumerate(accs)]
                 ).to_csv(tmp_path / "taco" / "paper" / "table5_round_to_accuracy_label_groups.csv", index=False)
    verdict = lambda cid: ledger.decide(claims[cid], "paper", tmp_path)
    assert verdict("taco-fig2-fmnist-scaffold-below").label == "reproduced"
    assert verdict("taco-fig2-fmnist-stem-above").label == "not reproduced"
    prox = verdict("taco-fig2-fmnist-fedprox-below")  # below on seed 0, above on seed 1, tied on seed 2
    assert (prox.label, prox.agreeing, prox.seeds) == ("inconclusive", 1, 3)
    assert ledger.measure_at(claims["taco-fig2-fmnist-stem-above"], "small").source == "fig2_re_evaluation.csv"


def test_taco_fig7_reads_gamma_star_at_each_scales_own_1_over_k(tmp_path):
    """γ* ≈ 1/K: the small scale's K = 20 (1/K = 0.05) compares the grid's 0.1 with γ = 1, the paper's K = 100 the
    grid's 0.01. The same CSV, where 0.01 beats γ = 1 on every seed and 0.1 loses to it, decides them apart."""
    from fedkit.papers import taco, taco_claims

    assert [taco.nearest_one_over_k(k) for k in (20, 100, 1000, 3)] == [0.1, 0.01, 0.001, 1.0]
    near = {c.id: c for c in taco_claims.CLAIMS}["taco-fig7-mnist-near-1-over-k"]
    finals = {0.0: [80, 81, 82], 0.001: [80, 81, 82], 0.01: [95, 96, 97], 0.1: [85, 86, 87], 1.0: [90, 91, 92]}
    frame = pd.DataFrame([{"dataset": "mnist", "gamma": g, "seed": s, "final accuracy": a}
                          for g, accs in finals.items() for s, a in enumerate(accs)])
    for folder in (tmp_path / "taco", tmp_path / "taco" / "paper"):
        folder.mkdir(parents=True, exist_ok=True)
        frame.to_csv(folder / "fig7_gamma_sensitivity.csv", index=False)
    assert ledger.decide(near, "small", tmp_path).label == "not reproduced"
    assert ledger.decide(near, "paper", tmp_path).label == "reproduced"
    rules = ledger.ledger_frame([near], tmp_path).set_index("scale")["rule"]
    assert (rules["small"], rules["paper"]) == ("γ = 0.1 > γ = 1", "γ = 0.01 > γ = 1")


def test_feddual_fig13_at_table1s_alpha_reads_table1s_runs_at_paper_scale():
    """Fig. 13's paper-scale column at Table 1's α lists exactly Table 1's runs (the same configs), so its claim reads
    Table 1's CSV, all nine methods; the other α read the heterogeneity CSV."""
    from fedkit.papers import feddual, feddual_claims

    heterogeneity = feddual.runs("fig13_fig14_heterogeneity", "paper")
    at_table1 = {c.key() for label, c in heterogeneity.items() if label.startswith("α=0.01/")}
    assert at_table1 and at_table1 <= {c.key() for c in feddual.runs("table1_fig3_fig4_methods", "paper").values()}
    claims = {c.id: c for c in feddual_claims.CLAIMS}
    table1 = ledger.measure_at(claims["feddual-fig13-best-0.01"], "paper")
    assert table1.source == "table1_fmnist.csv" and set(table1.names) == set(feddual.METHODS)
    for other in ("feddual-fig13-best-0.1", "feddual-fig13-best-1"):
        assert ledger.measure_at(claims[other], "paper").source == "fig13_fig14_heterogeneity_seeds.csv"
    assert ledger.measure_at(claims["feddual-fig13-best-0.01"], "small").source == "fig13_fig14_heterogeneity_seeds.csv"


def test_every_checkable_niid_bench_cell_is_decided_at_paper_scale_from_its_archived_stack_of_3_seeds():
    """Each parity cell a run can contradict has a paper-scale verdict, read from 3 seeds the run archive holds,
    trained as one stack."""
    from fedkit import archive
    from fedkit.papers import peers_claims

    runs = archive.read(REPO / "figures" / "peers" / "paper" / "runs" / "niid_bench.parquet")
    stacks = {frozenset([key, *run.provenance["stacked_with"]]) for key, run in runs.items()
              if run.config["algorithm_args"].get("correction_at") != "in_optimizer"}
    parity = [peers_claims.parity(*cell, method) for cell in peers_claims.FLOWER for method in peers_claims.METHODS]
    checkable = [claim for claim in parity if not claim.uncheckable]
    assert len(stacks) == len(checkable) and all(len(stack) == 3 for stack in stacks)
    frame = pd.read_csv(REPO / "figures" / "ledger.csv").set_index(["id", "scale"])
    for claim in checkable:
        row = frame.loc[(claim.id, "paper")]
        assert row["verdict"] not in ("not run", "not comparable") and row["seeds"] == 3, claim.id
