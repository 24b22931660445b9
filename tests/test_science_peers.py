"""Evaluation science checked against independent computations and peers: confidence intervals
(scipy), the bounds for unjudged documents (brute force over every labelling), discriminative
power (scipy's paired t-test), custom measures written as a user would (plain Python), and five
conventions docs/measures.md states where peers disagree (ranx, ir_measures, pytrec_eval).

Significance tests, corrections, power, Kendall's tau and TRisk are in tests/test_stats_peers.py.
"""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import preval

# --- confidence intervals ---------------------------------------------------------------------


def test_a_by_group_of_two_queries_equals_scipy() -> None:
    # A topic type with two queries (a by key that splits the queries). With n = 2 values
    # x1 < x2 the bootstrap mean takes x1 (both draws q1, p = 1/4), (x1 + x2)/2 (p = 1/2)
    # or x2 (p = 1/4): the 2.5% and 97.5% quantiles of B = 4000 resamples are x1 and x2
    # unless fewer than 2.5% of them (100; expected 1000, sd 27) drew q1 twice, which never
    # happens. BCa: the acceleration of two values is 0 (centred cubes cancel), z0 =
    # ndtri((P(<) + P(<=))/2) ~ ndtri(1/2) = 0: the same levels, the same bounds. scipy
    # gives the same; t is scipy's t.interval with 1 degree of freedom.
    frame = pl.DataFrame(
        {
            "system": ["a"] * 5,
            "kind": ["long", "long", "long", "short", "short"],
            "query": ["q1", "q2", "q3", "q4", "q5"],
            "AP": [0.5, 0.1, 0.9, 0.2, 0.6],
        }
    )
    x = np.array([0.2, 0.6])
    want = {
        "t": stats.t.interval(0.95, 1, x.mean(), stats.sem(x)),
        "percentile": (0.2, 0.6),
        "bca": (0.2, 0.6),
    }
    for method, scipy_method in (("percentile", "percentile"), ("bca", "BCa")):
        theirs = stats.bootstrap(
            (x,), np.mean, method=scipy_method, n_resamples=4000, rng=np.random.default_rng(1)
        ).confidence_interval
        assert (theirs.low, theirs.high) == pytest.approx(want[method], abs=1e-12)
    for method, bounds in want.items():
        got = preval.summarize(
            frame, by=["system", "kind"], ci=0.95, ci_method=method, resamples=4000
        ).collect()
        short = got.filter(pl.col("kind") == "short")
        assert (short["AP_ci_low"][0], short["AP_ci_high"][0]) == pytest.approx(bounds, abs=1e-12)


def test_one_query_and_equal_values_as_scipy_has_them() -> None:
    # scipy refuses a bootstrap of one value (no distribution) and has no t interval with 0
    # degrees of freedom: preval's bounds are null. Twelve equal values: scipy's bounds are
    # the value up to rounding (0.1 + 2e-17 for the mean of twelve 0.1s), preval's exactly
    # the value, a zero-width interval.
    with pytest.raises(ValueError, match="two or more observations"):
        stats.bootstrap((np.array([0.3]),), np.mean, n_resamples=100)
    flat = np.full(12, 0.1)
    frame = pl.DataFrame({"system": ["one"] + ["flat"] * 12,
                          "query": [f"q{i:02d}" for i in range(13)],
                          "AP": [0.3, *flat.tolist()]})  # fmt: skip
    for method, scipy_method in (("t", None), ("percentile", "percentile"), ("bca", "BCa")):
        if scipy_method is None:
            theirs = stats.t.interval(0.95, 11, flat.mean(), stats.sem(flat))
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # scipy warns of a degenerate distribution
                ci = stats.bootstrap((flat,), np.mean, method=scipy_method, n_resamples=200,
                                     rng=np.random.default_rng(0)).confidence_interval  # fmt: skip
            theirs = (ci.low, ci.high)
        got = preval.summarize(frame, ci=0.95, ci_method=method, resamples=200).collect()
        one, same = (got.filter(pl.col("system") == s).row(0, named=True) for s in ("one", "flat"))
        assert (one["AP_ci_low"], one["AP_ci_high"]) == (None, None)
        assert (same["AP_ci_low"], same["AP_ci_high"]) == (0.1, 0.1)
        assert (same["AP_ci_low"], same["AP_ci_high"]) == pytest.approx(theirs, abs=1e-15)


def pooled_table(x: np.ndarray, systems: int, shift: float = 0.0) -> pl.DataFrame:
    """Systems s0, s1, ... scoring x + i * shift on queries q00, q01, ..."""
    rows = [(f"s{i}", f"q{j:02d}", float(v + i * shift)) for i in range(systems)
            for j, v in enumerate(x)]  # fmt: skip
    return pl.DataFrame(rows, schema=["system", "query", "AP"], orient="row")


def test_the_t_interval_of_a_pooled_row_counts_queries_not_values() -> None:
    # One overall row (by=[]) pooling 3 systems that score alike on 30 queries: 90 values,
    # but 30 independent queries (what the bootstrap resamples). The mean is x-bar; the
    # query-level (cluster) standard error with s_i = 3 x_i, k_i = 3 per query is
    # sqrt(n/(n-1) sum (s_i - mean k_i)^2) / sum k_i = 3 sqrt(n/(n-1) sum (x_i - x-bar)^2) /
    # (3n) = sd(x)/sqrt(n): the interval is exactly scipy's t interval of the 30 values,
    # 29 degrees of freedom. (Taken as 90 independent values it was 1.8x too narrow.)
    x = np.random.default_rng(0).beta(0.6, 2.0, 30)
    got = preval.summarize(pooled_table(x, 3), by=[], ci=0.95, ci_method="t").collect()
    want = stats.t.interval(0.95, 29, x.mean(), stats.sem(x))
    assert (got["AP_ci_low"][0], got["AP_ci_high"][0]) == pytest.approx(want, rel=1e-12)


def test_the_t_interval_of_a_pooled_row_with_holes_is_the_cluster_formula() -> None:
    # Systems that differ, one value missing (null): the ratio estimator S/K and its
    # query-level standard error sqrt(n/(n-1) sum_i (s_i - (S/K) k_i)^2) / K, t with n - 1
    # degrees of freedom, n the queries with a value (Cochran 1977, Sampling Techniques,
    # 6.9, the variance of a ratio estimate over clusters).
    rng = np.random.default_rng(4)
    table = pooled_table(rng.beta(1.0, 2.0, 12), 2, shift=0.1)
    table = table.with_columns(
        pl.when((pl.col("system") == "s1") & (pl.col("query") == "q03"))
        .then(None)
        .otherwise(pl.col("AP"))
        .alias("AP")
    )
    per = table.group_by("query").agg(
        pl.col("AP").sum().alias("s"), pl.col("AP").count().alias("k")
    )
    s, k = per["s"].to_numpy(), per["k"].to_numpy().astype(float)
    n, mean = s.size, s.sum() / k.sum()
    se = math.sqrt(n / (n - 1) * ((s - mean * k) ** 2).sum()) / k.sum()
    want = stats.t.interval(0.9, n - 1, mean, se)
    got = preval.summarize(table, by=[], ci=0.9, ci_method="t").collect()
    assert got["AP"][0] == pytest.approx(mean, rel=1e-12)
    assert (got["AP_ci_low"][0], got["AP_ci_high"][0]) == pytest.approx(want, rel=1e-12)
    # one value per query (per system): the usual t interval, unchanged
    per_system = preval.summarize(table, ci=0.9, ci_method="t").collect()
    values = table.filter(pl.col("system") == "s1")["AP"].drop_nulls().to_numpy()
    row = per_system.filter(pl.col("system") == "s1")
    want = stats.t.interval(0.9, values.size - 1, values.mean(), stats.sem(values))
    assert (row["AP_ci_low"][0], row["AP_ci_high"][0]) == pytest.approx(want, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 3),
    st.lists(st.lists(st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 1.0])),
                      min_size=3, max_size=3), min_size=1, max_size=7),
)  # fmt: skip
def test_the_pooled_t_interval_is_the_cluster_formula(systems: int, grid) -> None:
    # Any overall row: queries with 0..systems values (nulls anywhere), equal values, one
    # query. Reference in numpy: ratio mean S/K, SE sqrt(n/(n-1) sum (s_i - mean k_i)^2) / K
    # over the n queries with a value; no interval below 2 such queries; zero width when
    # every value is equal.
    rows = [(f"s{j}", f"q{i}", values[j]) for i, values in enumerate(grid)
            for j in range(systems)]  # fmt: skip
    table = pl.DataFrame(rows, schema={"system": pl.String, "query": pl.String,
                                       "AP": pl.Float64}, orient="row")  # fmt: skip
    got = preval.summarize(table, by=[], ci=0.9, ci_method="t").collect().row(0, named=True)
    cells = [[v for v in values[:systems] if v is not None] for values in grid]
    s = np.array([sum(c) for c in cells if c])
    k = np.array([len(c) for c in cells if c], dtype=float)
    if s.size < 2:
        assert (got["AP_ci_low"], got["AP_ci_high"]) == (None, None)
        return
    mean = s.sum() / k.sum()
    if len({v for c in cells for v in c}) == 1:
        assert got["AP_ci_low"] == got["AP_ci_high"] == mean
        return
    se = math.sqrt(s.size / (s.size - 1) * ((s - mean * k) ** 2).sum()) / k.sum()
    want = (mean, mean) if se == 0 else stats.t.interval(0.9, s.size - 1, mean, se)
    assert (got["AP_ci_low"], got["AP_ci_high"]) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("method", ["t", "percentile", "bca"])
def test_a_pooled_row_of_one_query_has_no_interval(method: str) -> None:
    # Two systems on one query: two values, one query. Every resample draws that query, so
    # the bootstrap means are all 0.4: the percentile interval was (0.4, 0.4), a zero-width
    # interval that claimed certainty (and BCa warned "Mean of empty slice"); no interval is
    # defined with one unit sampled (scipy refuses one observation), as t says (df = 0).
    frame = pl.DataFrame({"system": ["a", "b"], "query": ["q1", "q1"], "AP": [0.2, 0.6]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = preval.summarize(frame, by=[], ci=0.95, ci_method=method, resamples=100).collect()
    assert got["AP"][0] == pytest.approx(0.4)
    assert (got["AP_ci_low"][0], got["AP_ci_high"][0]) == (None, None)


def test_the_bootstrap_of_a_pooled_row_is_scipys_cluster_bootstrap() -> None:
    # scipy resamples the query positions (its data), the statistic is the pooled mean over
    # the drawn queries: the cluster bootstrap preval documents. The two draw different
    # resamples: with B = 20000 the standard error of a 2.5% quantile is about
    # sqrt(0.025 * 0.975 / B) / phi(1.96) = 0.019 bootstrap sds (0.027 for the difference of
    # two estimates); 0.2 sd is over 7 standard errors.
    x = np.random.default_rng(7).beta(0.6, 2.0, 25)
    table = pooled_table(x, 3, shift=0.05)
    values = table.pivot(on="system", index="query", values="AP").sort("query").drop("query")
    matrix = values.to_numpy()

    def pooled(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        return matrix[idx.astype(int)].mean(axis=(-1, -2))

    for method, scipy_method in (("percentile", "percentile"), ("bca", "BCa")):
        res = stats.bootstrap(
            (np.arange(x.size),),
            pooled,
            method=scipy_method,
            n_resamples=20_000,
            rng=np.random.default_rng(3),
        )
        sd = res.standard_error
        got = preval.summarize(table, by=[], ci=0.95, ci_method=method, resamples=20_000).collect()
        assert abs(got["AP_ci_low"][0] - res.confidence_interval.low) < 0.2 * sd
        assert abs(got["AP_ci_high"][0] - res.confidence_interval.high) < 0.2 * sd


# --- bounds for unjudged documents ------------------------------------------------------------
# For the measures with no R or ideal in their denominator, docs/semantics.md promises that
# lower and upper bound the value under *every* way the missing judgments could turn out
# (each unjudged retrieved document labelled 0, or anything up to `upper`). Checked by brute
# force: every labelling of the unjudged documents in {0, 1, ..., upper}, evaluated as judged.

RISING = ["P@3", "Success@3", "Hits@3", "NumRelRet", "DCG@3", "RR", "RBP(p=0.5)"]


@st.composite
def one_query(draw):
    n = draw(st.integers(1, 5))
    labels = draw(st.lists(st.sampled_from([None, 0, 1, 2]), min_size=n, max_size=n))
    scores = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))  # ties too
    extra = draw(st.lists(st.sampled_from([0, 1, 2]), min_size=1, max_size=2))
    return labels, scores, extra


def frames(labels, scores, extra) -> tuple[pl.DataFrame, pl.DataFrame]:
    run = pl.DataFrame({"query": "q", "doc": [f"d{i}" for i in range(len(scores))],
                        "score": [float(s) for s in scores]})  # fmt: skip
    judged = [(f"d{i}", lab) for i, lab in enumerate(labels) if lab is not None]
    judged += [(f"x{j}", lab) for j, lab in enumerate(extra)]
    qrels = pl.DataFrame([("q", d, lab) for d, lab in judged],
                         schema={"query": pl.String, "doc": pl.String, "label": pl.Int64},
                         orient="row")  # fmt: skip
    return run, qrels


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    one_query(),
    st.sampled_from([1, 2]),
    st.sampled_from(["trec", "optimistic", "pessimistic", "expected"]),
)
def test_bounds_hold_for_every_labelling_of_the_unjudged(case, upper: int, ties: str) -> None:
    # ties="optimistic"/"pessimistic" order a tie by relevance, so a relabelling moves
    # documents; each of these measures is still monotone in every label (the best / worst
    # order of a tie is a max / min over orders of functions monotone in each label, and
    # "expected" their mean over the orders). RBP and Success have no closed form there.
    labels, scores, extra = case
    no_closed_form = ("RBP", "Success")  # under ties="expected"
    measures = [m for m in RISING if not (ties == "expected" and m.startswith(no_closed_form))]
    run, qrels = frames(labels, scores, extra)
    got = preval.bounds(run, measures, qrels=qrels, upper=upper, ties=ties).collect()
    lower, observed, high = (got.filter(pl.col("bound") == b) for b in ("lower", "observed",
                                                                         "upper"))  # fmt: skip
    unjudged = [i for i, lab in enumerate(labels) if lab is None]
    for choice in itertools.product(range(upper + 1), repeat=len(unjudged)):
        filled = list(labels)
        for i, lab in zip(unjudged, choice, strict=True):
            filled[i] = lab
        run, qrels = frames(filled, scores, extra)
        value = preval.evaluate(run, measures, qrels=qrels, ties=ties).collect()
        for m in measures:
            assert lower[m][0] - 1e-12 <= value[m][0] <= high[m][0] + 1e-12, (m, choice)
    for m in measures:
        assert lower[m][0] <= observed[m][0] <= high[m][0] + 1e-12, m
        if not unjudged:  # everything judged: the three are one
            assert lower[m][0] == observed[m][0] == high[m][0], m


def test_every_measure_has_one_value_when_everything_is_judged() -> None:
    run, qrels = frames([2, 0, 1, 0], [3, 2, 2, 1], [1])
    measures = ["AP", "nDCG@3", "R@3", "Rprec", "Bpref", "Judged@3", "F@3", *RISING]
    got = preval.bounds(run, measures, qrels=qrels).collect()
    assert got["bound"].to_list() == ["lower", "observed", "upper"]
    for m in measures:
        assert got[m].n_unique() == 1, m


def test_bounds_hand_derived() -> None:
    # d0 relevant (label 1), d1 unjudged, d2 non-relevant, d3 unjudged; one more relevant
    # document x0 judged, not retrieved (R = 2 as judged).
    # lower (d1, d3 -> 0): P@3 = 1/3, RR = 1, DCG@3 = 1/log2(2) = 1, NumRelRet = 1,
    #   RBP(p=0.5) = (1 - 0.5)(1) = 0.5, AP = (1/1)/2 = 0.5.
    # upper (d1, d3 -> 1): R = 4; P@3 = 2/3, DCG@3 = 1 + 1/log2(3), NumRelRet = 3,
    #   RBP = 0.5 (1 + 0.5 + 0.125) = 0.8125, AP = (1/1 + 2/2 + 3/4) / 4 = 0.6875.
    run, qrels = frames([1, None, 0, None], [4, 3, 2, 1], [1])
    measures = ["P@3", "RR", "DCG@3", "NumRelRet", "RBP(p=0.5)", "AP"]
    got = preval.bounds(run, measures, qrels=qrels).collect()
    want = {
        "P@3": [1 / 3, 1 / 3, 2 / 3], "RR": [1.0, 1.0, 1.0],
        "DCG@3": [1.0, 1.0, 1 + 1 / math.log2(3)], "NumRelRet": [1, 1, 3],
        "RBP(p=0.5)": [0.5, 0.5, 0.8125], "AP": [0.5, 0.5, 0.6875],
    }  # fmt: skip
    for m, values in want.items():
        assert got[m].to_list() == pytest.approx(values, abs=1e-12), m


# --- meta-evaluation --------------------------------------------------------------------------


def test_discriminative_power_with_the_t_test_counts_scipys_p_values() -> None:
    # Sakai (2006): the share of the n(n-1)/2 system pairs with p < alpha, here with the
    # paired t-test, each pair's p from scipy.stats.ttest_rel.
    rng = np.random.default_rng(1)
    base = rng.beta(1.0, 2.0, 25)
    rows = [(s, f"q{i:02d}", float(np.clip(v + 0.02 * k + rng.normal(0, 0.05), 0, 1)))
            for k, s in enumerate("abcde") for i, v in enumerate(base)]  # fmt: skip
    table = pl.DataFrame(rows, schema=["system", "query", "AP"], orient="row")
    wide = table.pivot(on="system", index="query", values="AP").sort("query")
    p = sorted(stats.ttest_rel(wide[a], wide[b]).pvalue
               for a, b in itertools.combinations("abcde", 2))  # fmt: skip
    power = preval.discriminative_power(table, test="t", alpha=0.05)
    summary, curve = power.summary.collect(), power.curve.collect()
    significant = sum(v < 0.05 for v in p)
    assert 0 < significant < 10  # the case tells pairs apart, and not all of them
    assert summary["pairs"][0] == 10 and summary["significant"][0] == significant
    assert summary["discriminative_power"][0] == pytest.approx(significant / 10)
    assert curve["p_value"].to_list() == pytest.approx(p, rel=1e-10)
    assert curve["rank"].to_list() == list(range(1, 11))


def sakai_asl(z: np.ndarray, resamples: int, seed: int) -> float:
    """Sakai (2006)'s paired bootstrap test, studentized: the differences centred on their
    mean w = z - z-bar are resampled, the ASL is the share of resamples whose t statistic
    w*-bar / (s*/sqrt(n)) reaches |t(z)| (as elinor's BootstrapTest, which cites the paper)."""
    n = z.size
    t = z.mean() / (z.std(ddof=1) / math.sqrt(n))
    w = (z - z.mean())[np.random.default_rng(seed).integers(0, n, (resamples, n))]
    with np.errstate(invalid="ignore", divide="ignore"):
        ts = w.mean(axis=1) / (w.std(axis=1, ddof=1) / math.sqrt(n))
    return float((np.abs(ts) >= abs(t)).mean())


def test_the_bootstrap_test_is_not_sakais_studentized_one() -> None:
    # docs/how-sure.md: preval's test="bootstrap" is the shift method on the mean; Sakai's
    # ASL is studentized. On this pair of 25 queries: preval p = 0.048, Sakai 0.068; with
    # B = 20000 each has a Monte-Carlo sd near sqrt(0.06 * 0.94 / 20000) = 0.0017, so a gap
    # of 0.01 is 4 sds of their difference, and the 0.02 seen is a different test.
    rng = np.random.default_rng(1)
    base = rng.beta(1.0, 2.0, 25)
    rows = [(s, f"q{i:02d}", float(np.clip(v + 0.02 * k + rng.normal(0, 0.05), 0, 1)))
            for k, s in enumerate("abcde") for i, v in enumerate(base)]  # fmt: skip
    table = pl.DataFrame(rows, schema=["system", "query", "AP"], orient="row")
    wide = table.pivot(on="system", index="query", values="AP").sort("query")
    got = preval.compare(table, baseline="a", test="bootstrap", n_resamples=20_000, seed=0)
    ours = got.filter(pl.col("system") == "b")["p_value"][0]
    theirs = sakai_asl((wide["b"] - wide["a"]).to_numpy(), 20_000, 0)
    assert ours < 0.05 < theirs
    assert theirs - ours > 0.01


# --- custom measures, as a user writes them from docs/custom-measures.md -----------------------

RUN = pl.DataFrame({
    "system": ["A"] * 7 + ["B"] * 4,
    "query": ["q1"] * 4 + ["q2"] * 3 + ["q1"] * 2 + ["q2"] * 2,
    "doc": ["a", "b", "c", "d", "e", "f", "g", "c", "a", "g", "z"],
    "score": [4.0, 3.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0, 1.0, 5.0, 4.0],
})  # fmt: skip
QRELS = pl.DataFrame({"query": ["q1", "q1", "q1", "q1", "q2", "q2"],
                      "doc": ["a", "c", "x", "b", "f", "g"],
                      "label": [2, 1, 1, 0, 0, 2]})  # fmt: skip
GAIN_MAP = {0: 0.0, 1: 3.0, 2: 10.0}


def by_hand(fn) -> dict[tuple[str, str], float]:
    """fn(ranked labels (None: unjudged), all judged labels of the query) per (system, query)."""
    judged: dict[str, dict[str, int]] = {}
    for q, d, lab in QRELS.iter_rows():
        judged.setdefault(q, {})[d] = lab
    out = {}
    for (system, q), rows in RUN.group_by("system", "query"):
        ranked = rows.sort(["score", "doc"], descending=True)["doc"].to_list()
        out[(system, q)] = fn([judged[q].get(d) for d in ranked], list(judged[q].values()))
    return out


def custom_values(name: str) -> dict[tuple[str, str], float]:
    got = preval.evaluate(RUN, [name], qrels=QRELS, by="system").collect()
    return {(s, q): v for s, q, v in got.iter_rows()}


@pytest.fixture
def user_measures():
    def mapped_dcg(q: preval.RankedQuery) -> pl.Expr:
        """DCG with my gain map."""
        gain = q.label.replace_strict(GAIN_MAP, default=0.0).fill_null(0.0)
        return q.top(gain / (q.rank + 1).cast(pl.Float64).log(2)).sum()

    def p_at_r(q: preval.RankedQuery) -> pl.Expr:
        """Precision at each query's own cutoff R."""
        hits = q.top(q.relevant & (q.rank <= q.num_rel)).sum()
        return q.safe_div(hits, q.num_rel)

    preval.define_measure("MappedDCG", mapped_dcg)
    preval.define_measure("PatR", p_at_r, cutoff="none")
    yield
    for name in ("MappedDCG", "PatR"):
        preval.remove_measure(name)


def test_custom_measures_equal_plain_python(user_measures) -> None:
    def dcg(ranked, _, k=3):
        return sum(GAIN_MAP.get(lab, 0.0) / math.log2(i + 2)
                   for i, lab in enumerate(ranked[:k]) if lab is not None)  # fmt: skip

    def p_at_r(ranked, judged):
        r = sum(lab >= 1 for lab in judged)
        return sum(lab is not None and lab >= 1 for lab in ranked[:r]) / r if r else 0.0

    for name, fn in (("MappedDCG@3", dcg), ("PatR", p_at_r)):
        want, got = by_hand(fn), custom_values(name)
        assert got.keys() == want.keys()
        for key, value in want.items():
            assert got[key] == pytest.approx(value, abs=1e-12), (name, key)
    # the per-query cutoff R is R-precision: the built-in measure agrees
    assert custom_values("PatR") == pytest.approx(custom_values("Rprec"), abs=1e-12)


@pytest.fixture
def contract_measures():
    """P@k, AP, nDCG@k and RR written from the contract of docs/custom-measures.md."""
    defined = {
        "MyP": (lambda q: q.hits() / q.k, "required"),
        "MyAP": (lambda q: q.safe_div(
            q.top(pl.when(q.relevant).then(q.tp / q.rank).otherwise(0.0)).sum(), q.num_rel),
            "optional"),
        "MyNDCG": (lambda q: q.safe_div(
            q.top(q.gain / (q.rank + 1).cast(pl.Float64).log(2)).sum(), q.ideal_dcg),
            "optional"),
        "MyRR": (lambda q: q.top(pl.when(q.relevant).then(1.0 / q.rank)).max().fill_null(0.0),
                 "optional"),
    }  # fmt: skip
    for name, (fn, cutoff) in defined.items():
        preval.define_measure(name, fn, cutoff=cutoff)
    yield
    for name in defined:
        preval.remove_measure(name)


@pytest.mark.parametrize(
    "options",
    [{}, {"depth": 3}, {"judged_only": True}, {"relevance_level": 2}, {"ties": "optimistic"},
     {"ties": "pessimistic"}, {"unjudged_label": 1}, {"queries": "retrieved"}],
)  # fmt: skip
def test_the_contract_follows_every_option_as_the_built_ins(contract_measures, options) -> None:
    # The RankedQuery's rows and counts already carry depth, judged_only, the level, the tie
    # rule and the relabelling: a measure written from them equals the built-in one. Tied
    # scores, negative (pooled) labels and a judged document never retrieved in every query.
    rng = np.random.default_rng(3)
    run, qrels = [], []
    for q in range(6):
        for i in range(8):
            run.append(("S", f"q{q}", f"d{i}", float(rng.integers(0, 5))))
            if rng.random() < 0.7:
                qrels.append((f"q{q}", f"d{i}", int(rng.choice([-1, 0, 1, 2, 3]))))
        qrels.append((f"q{q}", "extra", 2))
    run = pl.DataFrame(run, schema=["system", "query", "doc", "score"], orient="row")
    qrels = pl.DataFrame(qrels, schema=["query", "doc", "label"], orient="row")
    pairs = [("MyP@3", "P@3"), ("MyP(rel=2)@3", "P(rel=2)@3"), ("MyNDCG@4", "nDCG@4"),
             ("MyAP", "AP"), ("MyAP(rel=2)", "AP(rel=2)"), ("MyAP@3", "AP@3"),
             ("MyRR", "RR")]  # fmt: skip
    got = preval.evaluate(
        run, [m for pair in pairs for m in pair], qrels=qrels, by="system", **options
    ).collect()
    for mine, built_in in pairs:
        assert got[mine].to_list() == pytest.approx(got[built_in].to_list(), abs=1e-12), mine


def test_custom_measures_are_refused_by_sql_and_unknown_to_a_fresh_cli(user_measures) -> None:
    with pytest.raises(preval.MeasureError, match="'PatR' is not available in SQL"):
        preval.sql(["PatR"], table="t")


def test_the_command_line_does_not_know_a_python_definition(capsys) -> None:
    # docs/custom-measures.md: the CLI runs in a process of its own, where a definition made
    # in Python does not exist: the request is an unknown measure, exit code 2, one line
    from preval.cli import main

    example = str(Path(__file__).resolve().parents[1] / "fixtures" / "example.parquet")
    code = main(["evaluate", example, "--by", "system", "-m", "RWHits@10"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("preval: error: unknown measure 'RWHits' in 'RWHits@10'")
    assert "\n" not in err


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (lambda q: q.top(pl.col("grade")).sum(),
         r"^measure Bad: its expression reads a column the ranked rows do not have: "),
        (lambda q: pl.lit("x"), r"^measure Bad: its expression gives String, not a number"),
        (lambda q: q.top(q.rank), r"^measure Bad: its expression gives List\(Int64\), not a "),
        (lambda q: 1 / 0, r"^measure Bad: its function raised ZeroDivisionError: division by"),
    ],
)  # fmt: skip
def test_bad_custom_measures_fail_in_one_line(fn, says: str) -> None:
    preval.define_measure("Bad", fn)
    try:
        with pytest.raises(preval.MeasureError, match=says) as err:
            preval.evaluate(RUN, ["Bad"], qrels=QRELS, by="system").collect()
        assert "\n" not in str(err.value)
    finally:
        preval.remove_measure("Bad")


def test_a_summed_custom_measure_must_be_an_integer_count() -> None:
    # summary="sum" makes an Int64 column: a float sum of gains 1.5 + 2.0 was cut to 3
    def gain_sum(q: preval.RankedQuery) -> pl.Expr:
        return q.top(q.gain).sum()

    preval.define_measure("GainSum", gain_sum, summary="sum")
    try:
        with pytest.raises(preval.MeasureError, match=r"^measure GainSum: summary='sum' makes"):
            preval.evaluate(RUN, ["GainSum"], qrels=QRELS, by="system").collect()
    finally:
        preval.remove_measure("GainSum")
    preval.define_measure("RelSum", lambda q: q.top(q.relevant).sum(), summary="sum")
    try:
        got = preval.evaluate(RUN, ["RelSum", "NumRelRet"], qrels=QRELS, by="system").collect()
        assert got["RelSum"].to_list() == got["NumRelRet"].to_list()
        assert got.schema["RelSum"] == pl.Int64
    finally:
        preval.remove_measure("RelSum")


def test_a_boolean_custom_measure_is_a_number() -> None:
    preval.define_measure("AnyRel", lambda q: q.top(q.relevant).any())
    try:
        got = preval.evaluate(RUN, ["AnyRel@1"], qrels=QRELS, by="system").collect()
        want = preval.evaluate(RUN, ["Success@1"], qrels=QRELS, by="system").collect()
        assert got["AnyRel@1"].to_list() == want["Success@1"].to_list()
    finally:
        preval.remove_measure("AnyRel")


# --- peers' conventions (docs/measures.md, "Peers' names, peers' numbers") -------------------
# Five statements of the docs, each checked by running the peer on a case where peers
# disagree. q1: a (2), b (1), c (0) retrieved, y unjudged, x (2) judged not retrieved;
# q2: d (1) retrieved first, z unjudged, e (1); no judged non-relevant document.
PQRELS = {"q1": {"a": 2, "b": 1, "c": 0, "x": 2}, "q2": {"d": 1, "e": 1}}
PRUN = {"q1": {"a": 0.9, "b": 0.8, "c": 0.7, "y": 0.6}, "q2": {"d": 0.9, "z": 0.5, "e": 0.4}}


def peer_frames(qrels: dict, run: dict) -> tuple[pl.DataFrame, pl.DataFrame]:
    r = pl.DataFrame([(q, d, float(s)) for q, ds in run.items() for d, s in ds.items()],
                     schema=["query", "doc", "score"], orient="row")  # fmt: skip
    j = pl.DataFrame([(q, d, lab) for q, ds in qrels.items() for d, lab in ds.items()],
                     schema=["query", "doc", "label"], orient="row")  # fmt: skip
    return r, j


def preval_values(measure: str, qrels: dict = PQRELS, run: dict = PRUN, **kw) -> list[float]:
    r, j = peer_frames(qrels, run)
    return preval.evaluate(r, [measure], qrels=j, **kw).sort("query").collect()[measure].to_list()


def ranx_values(metric: str, qrels: dict = PQRELS, run: dict = PRUN) -> list[float]:
    ranx = pytest.importorskip("ranx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metric, return_mean=False)
    return [float(v) for v in out]


def test_convention_ranx_level_suffix_drops_lower_gains() -> None:
    # "ranx's nDCG at a level above 1 drops the gains of lower grades: nDCG(gains={1:0})@k
    # for ndcg@k-l2". q1: DCG@3 = 2/log2(2) = 2, ideal (2, 2) = 2 + 2/log2(3) -> 0.6131;
    # q2 has no grade 2: 0.
    want = [2 / (2 + 2 / math.log2(3)), 0.0]
    assert ranx_values("ndcg@3-l2") == pytest.approx(want, abs=1e-7)
    assert preval_values("nDCG(gains={1:0})@3") == pytest.approx(want, abs=1e-12)


def test_convention_bpref_without_judged_non_relevant() -> None:
    # "ranx's bpref divides by zero on a query without judged non-relevant documents
    # (trec_eval and preval: 1 per relevant retrieved)". q2: R = 2, N = 0, d and e retrieved
    # with no judged non-relevant above them: (1/R) sum (1 - 0) = 1. q1: R = 3, N = 1,
    # a and b above c: (1 + 1)/3 = 2/3.
    got = ranx_values("bpref")
    assert got[0] == pytest.approx(2 / 3) and math.isnan(got[1])
    trec = pytrec_eval.RelevanceEvaluator(PQRELS, {"bpref"}).evaluate(PRUN)
    assert [trec[q]["bpref"] for q in ("q1", "q2")] == pytest.approx([2 / 3, 1.0])
    assert preval_values("Bpref") == pytest.approx([2 / 3, 1.0], abs=1e-12)
    # "... and counts negative labels as non-relevant": b (-1) above a and c (1). trec_eval
    # and preval: -1 is pooled, not judged, N = 0: bpref 1. ranx: N = 1, each relevant one
    # below it scores 1 - 1/min(R, N) = 0.
    qrels, run = {"q1": {"a": 1, "b": -1, "c": 1}}, {"q1": {"b": 0.9, "a": 0.8, "c": 0.7}}
    assert ranx_values("bpref", qrels, run) == [0.0]
    assert pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)["q1"]["bpref"] == 1.0
    assert preval_values("Bpref", qrels, run) == [1.0]


def test_convention_ndcg_ignores_the_relevance_level_as_trec_eval() -> None:
    # "preval's nDCG ignores the level, as trec_eval": at level 2, P@3 counts only grade 2
    # (q1: a: 1/3), nDCG@3 still takes every grade's gain (q1: (2 + 1/log2 3) /
    # (2 + 2/log2 3 + 1/2)).
    trec = pytrec_eval.RelevanceEvaluator(PQRELS, {"ndcg_cut.3", "P.3"}, relevance_level=2)
    got = trec.evaluate(PRUN)
    q1 = (2 + 1 / math.log2(3)) / (2 + 2 / math.log2(3) + 1 / 2)
    assert got["q1"]["ndcg_cut_3"] == pytest.approx(q1)
    for measure, peer in (("nDCG@3", "ndcg_cut_3"), ("P@3", "P_3")):
        want = [got[q][peer] for q in ("q1", "q2")]
        assert preval_values(measure, relevance_level=2) == pytest.approx(want, abs=1e-12)


def test_convention_ranx_names_without_a_cutoff_mean_the_whole_run() -> None:
    # "ranx's precision, recall and hit_rate without a cutoff mean the whole run (preval:
    # SetP, SetR, Success@n)": q1 2 relevant of 4 retrieved, R = 3; q2 2 of 3, R = 2.
    for metric, measure, want in (
        ("precision", "SetP", [2 / 4, 2 / 3]),
        ("recall", "SetR", [2 / 3, 1.0]),
        ("hit_rate", "Success@4", [1.0, 1.0]),
    ):
        assert ranx_values(metric) == pytest.approx(want, abs=1e-7), metric
        assert preval_values(measure) == pytest.approx(want, abs=1e-12), measure


def test_convention_a_negative_label_is_not_judged_unlike_ir_measures() -> None:
    # "ir_measures counts every qrels entry as judged, negative labels included; preval
    # follows trec_eval, where a negative label is pooled, not assessed". Top 4: a (1),
    # b (-1), c (0), y (none): ir_measures 3/4, preval 2/4.
    ir_measures = pytest.importorskip("ir_measures")
    qrels, run = {"q1": {"a": 1, "b": -1, "c": 0}}, {"q1": {"a": 0.9, "b": 0.8, "c": 0.7,
                                                            "y": 0.6}}  # fmt: skip
    (peer,) = ir_measures.iter_calc([ir_measures.Judged @ 4], qrels, run)
    assert peer.value == pytest.approx(0.75)
    assert preval_values("Judged@4", qrels, run) == [0.5]
    # "A query with nothing retrieved: ir_measures divides by zero, preval gives 0."
    qrels, run = {"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}, "q2": {}}
    with pytest.raises(ZeroDivisionError):
        list(ir_measures.iter_calc([ir_measures.Judged @ 10], qrels, run))
    assert preval_values("Judged@10", qrels, {"q1": {"a": 1.0}}) == [1.0, 0.0]


@pytest.mark.parametrize("pooled", [False, True])
def test_intervals_equal_scipys_on_the_same_resamples(pooled: bool) -> None:
    # scipy.stats.bootstrap(n_resamples=0, bootstrap_result=...) takes a bootstrap
    # distribution as given: fed preval's resampled means, its percentile and BCa intervals
    # (its own quantiles, z0 and jackknife acceleration) must be preval's, to rounding. Pooled:
    # two values per query (a cluster), scipy's data the query positions and its statistic
    # the pooled mean (its jackknife leaves one query out, as `intervals.acceleration`).
    from preval import intervals

    rng = np.random.default_rng(11)
    if pooled:
        values = rng.beta(0.6, 2.0, (40, 2))
        values[3, 1] = np.nan  # a hole: query 3 has one value
        sums, counts = np.nansum(values, axis=1)[:, None], (~np.isnan(values)).sum(axis=1)
        counts = counts[:, None].astype(float)
        data = np.arange(40)

        def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
            idx = idx.astype(int)
            return sums[idx, 0].sum(axis=-1) / counts[idx, 0].sum(axis=-1)
    else:
        data = rng.beta(0.6, 2.0, 60)
        sums, counts, statistic = data[:, None], None, np.mean
    boot = intervals.bootstrap_means(sums, counts, 3000, [7, 0])
    observed = np.array([sums.sum() / (counts.sum() if pooled else sums.shape[0])])
    ours = {
        "percentile": intervals.percentile_interval(boot, 0.9),
        "BCa": intervals.bca_interval(boot, observed, intervals.acceleration(sums, counts), 0.9),
    }
    for method, (low, high) in ours.items():
        seed = stats.bootstrap((data,), statistic, n_resamples=2, method=method,
                               confidence_level=0.9, rng=np.random.default_rng(0))  # fmt: skip
        seed.bootstrap_distribution = boot[:, 0]
        theirs = stats.bootstrap(
            (data,), statistic, n_resamples=0, bootstrap_result=seed, method=method,
            confidence_level=0.9,
        ).confidence_interval  # fmt: skip
        assert (low[0], high[0]) == pytest.approx((theirs.low, theirs.high), rel=1e-12), method


def test_compares_bootstrap_interval_of_delta_is_scipys_within_monte_carlo_error() -> None:
    # compare(test="bootstrap"): the percentile interval of the paired differences' resampled
    # means, scipy.stats.bootstrap(d, np.mean, method="percentile") on other resamples. With
    # B = 20000 both quantile estimates have a standard error near 0.019 bootstrap sds
    # (0.027 for their difference); 0.2 sd is over 7 of them.
    rng = np.random.default_rng(12)
    base = rng.beta(0.8, 2.0, 40)
    other = np.clip(base + rng.normal(0.03, 0.08, 40), 0, 1)
    table = pl.concat([pooled_table(base, 1), pooled_table(other, 1).with_columns(
        pl.lit("s1").alias("system"))])  # fmt: skip
    got = preval.compare(table, baseline="s0", test="bootstrap", n_resamples=20_000, alpha=0.05)
    res = stats.bootstrap(
        (other - base,), np.mean, method="percentile", n_resamples=20_000,
        rng=np.random.default_rng(5),
    )  # fmt: skip
    row = got.filter(pl.col("system") == "s1").row(0, named=True)
    assert row["delta"] == pytest.approx((other - base).mean(), rel=1e-12)
    sd = res.standard_error
    assert abs(row["ci_low"] - res.confidence_interval.low) < 0.2 * sd
    assert abs(row["ci_high"] - res.confidence_interval.high) < 0.2 * sd
