"""preval.agreement and preval.discriminative_power: Kendall's tau-b equals scipy's (ties
too); tau_AP equals a plain-Python reference written from Yilmaz, Aslam & Robertson's formula
(and its expectation over every order of tied systems, enumerated), tau_AP-b a reference
written from Urbano & Marrero's, both the values the ircor package's tests publish, and
hand-derived cases; the swapped pairs are the discordant pairs; discriminative power counts
preval.compare's p-values; building a plan collects nothing."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import preval
from preval.cli import main

from .profiles import examples

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "example.parquet"


def summary(scores: list[float], column: str = "AP") -> pl.DataFrame:
    """A summary table: system s0, s1, ... scoring `scores`."""
    return pl.DataFrame({"system": [f"s{i}" for i in range(len(scores))], column: scores})


def stats_of(a: list[float], b: list[float]) -> dict:
    return (
        preval.agreement(summary(a), summary(b), measure="AP")
        .statistics.collect()
        .row(0, named=True)
    )


# --- plain-Python references (no code shared with preval) -----------------------------------


def ref_tau_ap(reference: list[float], ranked: list[float]) -> float:
    """Yilmaz et al. 2008, tie-free: walk the list `ranked` orders (highest first); at each
    position i > 1, C(i) = the items above i that `reference` also puts above the item at i;
    tau_AP = 2/(n - 1) * sum C(i)/(i - 1) - 1."""
    n = len(ranked)
    order = sorted(range(n), key=lambda k: -ranked[k])
    total = 0.0
    for i in range(1, n):
        item = order[i]
        correct = sum(1 for above in order[:i] if reference[above] > reference[item])
        total += correct / i
    return 2 / (n - 1) * total - 1


def ref_expected_tau_ap(reference: list[float], ranked: list[float]) -> float:
    """The expectation of the tie-free tau_AP over every order of the tied items of both
    lists, each equally likely: enumerate the tie-breaking orders and average."""
    n = len(ranked)
    values = []
    for ref_order in itertools.permutations(range(n)):
        if any(reference[ref_order[k]] < reference[ref_order[k + 1]] for k in range(n - 1)):
            continue  # not an order of `reference` (a tie may go either way)
        strict_ref = [0.0] * n
        for position, item in enumerate(ref_order):
            strict_ref[item] = float(n - position)
        for order in itertools.permutations(range(n)):
            if any(ranked[order[k]] < ranked[order[k + 1]] for k in range(n - 1)):
                continue
            strict = [0.0] * n
            for position, item in enumerate(order):
                strict[item] = float(n - position)
            values.append(ref_tau_ap(strict_ref, strict))
    return sum(values) / len(values)


def ref_tau_ap_b(x: list[float], y: list[float]) -> float:
    """Urbano & Marrero 2017, tau_AP-b: the mean of both directions; in one direction the
    positions are those of `ranked`'s tie groups: for each item outside the top group, the
    items in higher groups that `reference` puts strictly above it, over (first position of
    its group - 1); 2/(items outside the top group) * that sum - 1."""

    def direction(reference: list[float], ranked: list[float]) -> float:
        n = len(ranked)
        total, outside = 0.0, 0
        for i in range(n):
            above = [j for j in range(n) if ranked[j] > ranked[i]]
            if not above:
                continue
            outside += 1
            total += sum(1 for j in above if reference[j] > reference[i]) / len(above)
        return 2 / outside * total - 1

    return (direction(x, y) + direction(y, x)) / 2


# --- Kendall's tau -------------------------------------------------------------------------


scores = st.lists(st.integers(0, 4), min_size=2, max_size=9)


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_kendall_tau_equals_scipy_with_ties(data) -> None:
    a = data.draw(scores)
    b = data.draw(st.lists(st.integers(0, 4), min_size=len(a), max_size=len(a)))
    row = stats_of([float(v) for v in a], [float(v) for v in b])
    expected = stats.kendalltau(a, b).statistic  # tau-b, scipy's default
    if math.isnan(expected):
        assert row["kendall_tau"] is None
    else:
        assert row["kendall_tau"] == pytest.approx(expected, abs=1e-12)
    pairs = list(itertools.combinations(range(len(a)), 2))
    sign = [np.sign(a[i] - a[j]) * np.sign(b[i] - b[j]) for i, j in pairs]
    assert row["concordant"] == sum(s > 0 for s in sign)
    assert row["discordant"] == sum(s < 0 for s in sign)
    assert row["ties_a"] == sum(a[i] == a[j] for i, j in pairs)
    assert row["ties_b"] == sum(b[i] == b[j] for i, j in pairs)


def test_kendall_tau_without_ties_is_tau_a() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.random(12), rng.random(12)
    row = stats_of(a.tolist(), b.tolist())
    assert row["kendall_tau"] == pytest.approx(stats.kendalltau(a, b).statistic, abs=1e-12)
    assert row["kendall_tau"] == pytest.approx(
        (row["concordant"] - row["discordant"]) / row["pairs"], abs=1e-12
    )


# --- tau_AP -------------------------------------------------------------------------------


@settings(max_examples=examples(200), deadline=None)
@given(st.permutations(list(range(8))), st.permutations(list(range(8))))
def test_tau_ap_equals_the_papers_formula(a, b) -> None:
    row = stats_of([float(v) for v in a], [float(v) for v in b])
    assert row["tau_ap"] == pytest.approx(ref_tau_ap(a, b), abs=1e-12)
    symmetric = (ref_tau_ap(a, b) + ref_tau_ap(b, a)) / 2
    assert row["tau_ap_b"] == pytest.approx(symmetric, abs=1e-12)
    assert row["tau_ap_b"] == pytest.approx(ref_tau_ap_b(a, b), abs=1e-12)


@settings(max_examples=examples(100), deadline=None)
@given(st.data())
def test_tau_ap_with_ties_is_its_expectation_over_tie_orders(data) -> None:
    a = data.draw(st.lists(st.integers(0, 3), min_size=2, max_size=5))
    b = data.draw(st.lists(st.integers(0, 3), min_size=len(a), max_size=len(a)))
    row = stats_of([float(v) for v in a], [float(v) for v in b])
    assert row["tau_ap"] == pytest.approx(ref_expected_tau_ap(a, b), abs=1e-12)
    if len(set(a)) > 1 and len(set(b)) > 1:  # outside a single top group, both directions
        assert row["tau_ap_b"] == pytest.approx(ref_tau_ap_b(a, b), abs=1e-12)
    else:
        assert row["tau_ap_b"] is None


def test_tau_ap_hand_derived() -> None:
    # a ranks A > B > C > D. b swaps the top two: B > A > C > D. Walking b:
    #   i=2 (A): above it B, which a puts below A: C(2) = 0, 0/1
    #   i=3 (C): above it B, A, both above C in a: 2/2
    #   i=4 (D): above it B, A, C, all above D in a: 3/3
    # tau_AP = 2/3 * (0 + 1 + 1) - 1 = 1/3; Kendall: 1 discordant of 6 pairs, (5 - 1)/6 = 2/3.
    a = [4.0, 3.0, 2.0, 1.0]
    row = stats_of(a, [3.0, 4.0, 2.0, 1.0])
    assert row["tau_ap"] == pytest.approx(1 / 3)
    assert row["kendall_tau"] == pytest.approx(2 / 3)
    # the same one swap at the bottom: A > B > D > C. i=2 (B): 1/1; i=3 (D): 2/2;
    # i=4 (C): above it A, B, D; a puts A and B above C, not D: 2/3.
    # tau_AP = 2/3 * (1 + 1 + 2/3) - 1 = 7/9: a swap at the bottom costs less; Kendall 2/3.
    row = stats_of(a, [4.0, 3.0, 1.0, 2.0])
    assert row["tau_ap"] == pytest.approx(7 / 9)
    assert row["kendall_tau"] == pytest.approx(2 / 3)


def test_tau_ap_with_a_tie_hand_derived() -> None:
    # a: A > B > C; b ties A and B on top, C last. The two orders of b's tie:
    #   A, B, C: i=2 (B): A above B in a, 1/1; i=3 (C): 2/2; tau_AP = 2/2 * 2 - 1 = 1
    #   B, A, C: i=2 (A): B is not above A in a, 0/1; i=3 (C): 2/2; tau_AP = 2/2 * 1 - 1 = 0
    # tau_AP = (1 + 0)/2 = 1/2.
    # tau_AP-b, a as reference and b's groups as positions: only C is outside the top group
    # (first position 3); a puts A and B strictly above it: 2/2; 2/1 * 1 - 1 = 1. b as
    # reference, a's positions: B (position 2): A above, b ties them: 0/1; C (position 3):
    # A and B above, b puts both above C: 2/2; 2/2 * (0 + 1) - 1 = 0. tau_AP-b = 1/2.
    # Kendall tau-b: (A,B) tied in b, (A,C) and (B,C) concordant: 2 / sqrt(3 * 2).
    row = stats_of([3.0, 2.0, 1.0], [1.0, 1.0, 0.0])
    assert row["tau_ap"] == pytest.approx(0.5)
    assert row["tau_ap_b"] == pytest.approx(0.5)
    assert row["kendall_tau"] == pytest.approx(2 / math.sqrt(6))


# the data and values of the ircor package's tests (Urbano's R implementation of both papers:
# tests/testthat/helper_data.R and test_tauAP.R), to 4 decimals as published there
IRCOR = [
    (
        [0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
        [0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
        [0.9, 0.4, 0.9, 0.9, 0.7, 0.1, 0.2, 0.4, 0.5, 1],
        [0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1],
        (0.8519, 0.7454, 0.8333, 0.7321),
    ),
    (
        [0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
        [0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
        [0.3, 0.6, 0.2, 0.9, 0.6, 0.2, 0.7, 0.8, 0.7, 0.4],
        [0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6],
        (0.2504, 0.2692, 0.2880, 0.2970),
    ),
    (
        [0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
        [0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
        [0.2, 0.6, 0.9, 0.1, 0.5, 0.6, 0.8, 0.4, 1, 0.4],
        [0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2],
        (-0.6971, -0.5558, -0.6680, -0.7047),
    ),
]


@pytest.mark.parametrize(("x", "y", "x_ties", "y_ties", "published"), IRCOR)
def test_tau_ap_equals_ircor(x, y, x_ties, y_ties, published) -> None:
    tau_ap, tau_ap_a, tau_ap_b, tau_ap_b_ties = published
    assert stats_of(x, y)["tau_ap"] == pytest.approx(tau_ap, abs=5e-5)
    assert stats_of(x, y_ties)["tau_ap"] == pytest.approx(tau_ap_a, abs=5e-5)  # tauAP_a
    assert stats_of(x, y)["tau_ap_b"] == pytest.approx(tau_ap_b, abs=5e-5)
    assert stats_of(x_ties, y_ties)["tau_ap_b"] == pytest.approx(tau_ap_b_ties, abs=5e-5)
    assert stats_of(y_ties, x_ties)["tau_ap_b"] == pytest.approx(tau_ap_b_ties, abs=5e-5)


# --- the swapped pairs, the inputs, the edge cases -----------------------------------------


@settings(max_examples=examples(100), deadline=None)
@given(st.data())
def test_swapped_pairs_are_the_discordant_pairs(data) -> None:
    a = data.draw(scores)
    b = data.draw(st.lists(st.integers(0, 4), min_size=len(a), max_size=len(a)))
    result = preval.agreement(summary(a), summary(b), measure="AP")
    swapped = result.swapped.collect()
    expected = {
        (f"s{i}", f"s{j}")
        for i in range(len(a))
        for j in range(len(a))
        if a[i] > a[j] and b[i] < b[j]
    }
    assert set(swapped.select("first", "second").iter_rows()) == expected
    assert swapped.height == result.statistics.collect()["discordant"][0]
    for row in swapped.iter_rows(named=True):
        assert row["a_first"] > row["a_second"] and row["b_first"] < row["b_second"]
        assert row["rank_a_first"] < row["rank_a_second"]
        assert row["rank_b_first"] > row["rank_b_second"]
        assert row["rank_a_first"] == 1 + sum(v > row["a_first"] for v in a)
    assert swapped["rank_a_first"].is_sorted()


def test_per_query_tables_rank_by_their_means() -> None:
    # two query sets of one table, and two measures of one table
    per_query = preval.evaluate(FIXTURE, ["AP", "RR", "P@5"], by="system").collect()
    first = per_query.filter(pl.col("query") < "q150")
    second = per_query.filter(pl.col("query") >= "q150")
    got = preval.agreement(first, second, measure="P@5").statistics.collect()
    means = [
        t.group_by("system").agg(pl.col("P@5").mean()).sort("system")["P@5"].to_list()
        for t in (first, second)
    ]
    assert got["kendall_tau"][0] == pytest.approx(stats.kendalltau(*means).statistic)
    both = preval.agreement(per_query, measure="AP", other="RR").statistics.collect()
    assert both.select("measure_a", "measure_b", "systems", "pairs").row(0) == ("AP", "RR", 3, 3)
    # a summary table and a per-query table rank alike
    summarized = preval.summarize(per_query, by="system")
    mixed = preval.agreement(summarized, per_query, measure="AP").statistics.collect()
    assert mixed["kendall_tau"][0] == 1.0 and mixed["discordant"][0] == 0


def test_building_collects_nothing() -> None:
    calls = []

    def counted(df: pl.DataFrame) -> pl.DataFrame:
        calls.append(df.height)
        return df

    table = summary([0.3, 0.2, 0.1]).with_columns(other=pl.Series([0.1, 0.2, 0.3]))
    lazy = table.lazy().map_batches(counted, schema=table.schema)
    result = preval.agreement(lazy, measure="AP", other="other")
    power = preval.discriminative_power(lazy, measures=["AP"])
    assert calls == []
    assert result.statistics.collect()["kendall_tau"][0] == pytest.approx(-1.0)
    assert calls
    assert isinstance(power.summary, pl.LazyFrame)


def test_agreement_reads_its_tables_once_when_both_frames_are_collected_together() -> None:
    # as preval agreement collects them (statistics and swapped pairs): each read the tables
    calls = []

    def counted(df: pl.DataFrame) -> pl.DataFrame:
        calls.append(df.height)
        return df

    table = summary([0.3, 0.2, 0.1]).with_columns(other=pl.Series([0.1, 0.2, 0.3]))
    lazy = table.lazy().map_batches(counted, schema=table.schema)
    result = preval.agreement(lazy, measure="AP", other="other")
    statistics, swapped = pl.collect_all([result.statistics, result.swapped])
    assert statistics["kendall_tau"][0] == pytest.approx(-1.0) and swapped.height == 3
    assert len(calls) == 1  # one collection of the scores (a and b: one table here)


def test_discriminative_power_compares_once_when_both_frames_are_collected_together(
    monkeypatch,
) -> None:
    # as preval agreement --power collects them: the two deferred frames ran at once in two of
    # Polars' threads, and each made the whole comparison (its resamples: the costly part)
    from preval import meta_evaluation

    calls = []
    compare = meta_evaluation.compare

    def counted(*args, **kwargs):
        calls.append(1)
        return compare(*args, **kwargs)

    monkeypatch.setattr(meta_evaluation, "compare", counted)
    parquet = Path(__file__).resolve().parents[1] / "fixtures" / "example.parquet"
    per_query = preval.evaluate(parquet, ["AP"], by="system")
    power = preval.discriminative_power(per_query, measures=["AP"], n_resamples=100)
    summary_, curve = pl.collect_all([power.summary, power.curve])
    assert len(calls) == 1
    assert (summary_["pairs"][0], curve.height) == (3, 3)


def test_bad_input() -> None:
    with pytest.raises(preval.InputError, match="second measure"):
        preval.agreement(summary([1.0, 2.0]), measure="AP")
    with pytest.raises(preval.InputError, match="missing column 'nDCG'"):
        preval.agreement(summary([1.0, 2.0]), measure="AP", other="nDCG")
    lacking = pl.DataFrame({"system": ["s0", "s9"], "AP": [0.1, 0.2]})
    with pytest.raises(preval.InputError, match=r"missing from table b: \['s9'\]"):
        preval.agreement(lacking, summary([1.0, 2.0]), measure="AP").statistics.collect()
    extra = summary([1.0, 2.0, 3.0])  # s2 is not in a
    with pytest.raises(preval.InputError, match=r"of table b missing from table a: \['s2'\]"):
        preval.agreement(summary([1.0, 2.0]), extra, measure="AP").swapped.collect()
    unscored = pl.DataFrame({"system": ["s0", "s1"], "AP": [0.1, None]})
    with pytest.raises(preval.InputError, match="system 's1' has no score"):
        preval.agreement(unscored, summary([1.0, 2.0]), measure="AP").statistics.collect()
    twice = pl.DataFrame({"system": ["s0", "s0", "s1"], "AP": [0.1, 0.2, 0.3]})
    with pytest.raises(preval.InputError, match="no query column"):
        preval.agreement(twice, summary([1.0, 2.0]), measure="AP").statistics.collect()


def test_one_and_two_systems() -> None:
    one = stats_of([0.5], [0.4])
    assert (one["pairs"], one["kendall_tau"], one["tau_ap"], one["tau_ap_b"]) == (
        0,
        None,
        None,
        None,
    )
    two = stats_of([0.5, 0.4], [0.4, 0.5])
    assert (two["kendall_tau"], two["tau_ap"], two["tau_ap_b"]) == (-1.0, -1.0, -1.0)
    tied = stats_of([0.5, 0.4], [0.4, 0.4])
    assert tied["kendall_tau"] is None and tied["tau_ap"] == 0.0  # expected: 1 or -1


# --- discriminative power ------------------------------------------------------------------


def random_table(systems: int, queries: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.random(queries)
    rows = {"system": [], "query": [], "AP": [], "P@10": []}
    for s in range(systems):
        ap = np.clip(base + rng.normal(0.02 * s, 0.15, queries), 0, 1)
        p10 = np.round(np.clip(ap + rng.normal(0, 0.1, queries), 0, 1), 1)
        rows["system"] += [f"sys{s}"] * queries
        rows["query"] += [f"q{q}" for q in range(queries)]
        rows["AP"] += ap.tolist()
        rows["P@10"] += p10.tolist()
    return pl.DataFrame(rows)


@pytest.mark.parametrize("test", ["randomization", "t", "bootstrap"])
def test_discriminative_power_counts_compares_p_values(test: str) -> None:
    table = random_table(6, 30, seed=3)
    resamples = 200 if test == "bootstrap" else 2000
    power = preval.discriminative_power(table, test=test, n_resamples=resamples, seed=11)
    summary_, curve = power.summary.collect(), power.curve.collect()
    compared = preval.compare(table, test=test, correction="none", n_resamples=resamples,
                              seed=11)  # fmt: skip
    for measure in ("AP", "P@10"):
        p = compared.filter(pl.col("measure") == measure)["p_value"]
        row = summary_.filter(pl.col("measure") == measure).row(0, named=True)
        assert row["pairs"] == 15 == p.len() and row["systems"] == 6 and row["queries"] == 30
        assert row["significant"] == int((p < 0.05).sum())
        assert row["discriminative_power"] == pytest.approx(row["significant"] / 15)
        asl = curve.filter(pl.col("measure") == measure)
        assert asl["rank"].to_list() == list(range(1, 16))
        assert asl["p_value"].to_list() == sorted(p.to_list())


@settings(max_examples=examples(30), deadline=None)
@given(st.integers(1, 4), st.integers(2, 4), st.booleans(), st.integers(0, 10**6))
def test_discriminative_power_edge_cases(queries, systems, identical, seed) -> None:
    table = random_table(systems, queries, seed)
    if identical:  # every system scores alike: no pair can differ
        table = table.with_columns(pl.col("AP").first().over("query"))
    power = preval.discriminative_power(table, measures="AP", test="t", seed=seed)
    row = power.summary.collect().row(0, named=True)
    compared = preval.compare(table, measures="AP", test="t", correction="none")
    assert row["pairs"] == systems * (systems - 1) // 2
    assert row["significant"] == int((compared["p_value"] < 0.05).sum())
    if identical or queries == 1:  # p-values null (t on one query, or no variance)
        assert row["significant"] == 0
    curve = power.curve.collect()
    assert curve["rank"].to_list() == list(range(1, row["pairs"] + 1))
    nulls = curve["p_value"].is_null().to_list()
    assert nulls == sorted(nulls)  # nulls last


def test_discriminative_power_rejects_bad_options() -> None:
    table = random_table(3, 5, 0)
    with pytest.raises(preval.InputError, match="test must be one of"):
        preval.discriminative_power(table, test="z")
    with pytest.raises(preval.InputError, match="alpha must be between"):
        preval.discriminative_power(table, alpha=1.5)


# --- the command line ----------------------------------------------------------------------


def test_cli_agreement(capsys, tmp_path: Path) -> None:
    out_file, swapped = tmp_path / "stats.csv", tmp_path / "swapped.parquet"
    rc = main(["agreement", str(FIXTURE), "-m", "AP", "-m", "nDCG@10", "-m", "P@10",
               "-o", str(out_file), "--swapped", str(swapped)])  # fmt: skip
    out, _ = capsys.readouterr()
    assert rc == 0
    assert out.splitlines()[0].split()[:3] == ["measure_a", "measure_b", "systems"]
    written = pl.read_csv(out_file)
    assert written["measure_b"].to_list() == ["nDCG@10", "P@10"]
    assert written["kendall_tau"].to_list() == [1.0, 1.0]
    assert pl.read_parquet(swapped).height == 0
    rc = main(["agreement", str(FIXTURE), "-m", "AP", "-m", "RR", "--power", "--resamples",
               "500", "--format", "csv"])  # fmt: skip
    out, _ = capsys.readouterr()
    got = pl.read_csv(out.encode())
    assert rc == 0 and got["measure"].to_list() == ["AP", "RR"]
    assert got["discriminative_power"].to_list() == [1.0, 1.0]
    rc = main(["agreement", str(FIXTURE), "-m", "AP"])
    _, err = capsys.readouterr()
    assert rc == 2 and "give a second -m" in err
    # --resamples and --seed are compare's (one row each in OPTIONS), checked before any work
    rc = main(["agreement", str(FIXTURE), "-m", "AP", "-m", "RR", "--power", "--seed", "-1"])
    _, err = capsys.readouterr()
    assert rc == 2 and err.splitlines() == [
        "preval: error: seed must be a whole number >= 0, got -1"
    ]


def test_cli_second_rankings(capsys, tmp_path: Path) -> None:
    # --against: a second per-query table (another query set); --against-qrels: the same run
    # judged by other qrels (here the judgments turned upside down: relevant is non-relevant)
    per_query = preval.evaluate(FIXTURE, ["AP", "P@10"], by="system").collect()
    first, second = tmp_path / "first.parquet", tmp_path / "second.parquet"
    per_query.filter(pl.col("query") < "q150").write_parquet(first)
    per_query.filter(pl.col("query") >= "q150").write_parquet(second)
    rc = main(["agreement", str(first), "--per-query-table", "-m", "P@10", "--against",
               str(second), "--format", "json"])  # fmt: skip
    out, _ = capsys.readouterr()
    expected = preval.agreement(first, second, measure="P@10").statistics.collect()
    assert rc == 0 and pl.read_json(out.encode()).equals(expected)
    root = FIXTURE.parent
    qrels = pl.read_csv(root / "example_qrels.csv", schema_overrides={"query": pl.String})
    fewer = tmp_path / "upside_down_qrels.csv"
    qrels.with_columns(label=(pl.col("label") == 0).cast(pl.Int64)).write_csv(fewer)
    run = root / "example_run.csv"
    rc = main(["agreement", str(run), "--qrels", str(root / "example_qrels.csv"),
               "--against-qrels", str(fewer), "-m", "AP", "--format", "csv"])  # fmt: skip
    out, _ = capsys.readouterr()
    full = preval.evaluate(run, ["AP"], qrels=root / "example_qrels.csv", by="system")
    shallow = preval.evaluate(run, ["AP"], qrels=fewer, by="system")
    expected = preval.agreement(full, shallow, measure="AP").statistics.collect()
    assert rc == 0 and pl.read_csv(out.encode()).equals(expected)
    assert expected["discordant"][0] > 0  # the second judgments did rank the systems anew


def test_a_table_given_as_a_path_is_named_by_its_file(tmp_path) -> None:
    """Bad input names the file: a missing column, a system one ranking lacks."""
    a, b = tmp_path / "sum_a.csv", tmp_path / "sum_b.csv"
    pl.DataFrame({"system": ["s0", "s1"], "AP": [0.1, 0.2]}).write_csv(a)
    pl.DataFrame({"system": ["s0", "s9"], "AP": [0.3, 0.4]}).write_csv(b)
    with pytest.raises(preval.InputError, match=r"^table a .*sum_a\.csv: missing column 'nDCG'"):
        preval.agreement(a, measure="nDCG", other="AP")
    with pytest.raises(preval.InputError, match=r"systems of table a .*sum_a\.csv missing from "
                       r"table b .*sum_b\.csv: \['s1'\]"):  # fmt: skip
        preval.agreement(a, b, measure="AP").statistics.collect()


def test_cli_against_table_is_named_by_its_file(capsys, tmp_path: Path) -> None:
    # the CLI scanned --against itself and handed a frame: the message said "table b" alone
    against = tmp_path / "other.csv"
    against.write_text("system,query,XX\na,q1,0.5\nb,q1,0.2\n")
    rc = main(["agreement", str(FIXTURE), "-m", "AP", "--against", str(against)])
    _, err = capsys.readouterr()
    assert rc == 2
    assert err.splitlines()[-1] == (
        f"preval: error: table b {against}: missing column 'AP' (columns: system, query, XX)"
    )
