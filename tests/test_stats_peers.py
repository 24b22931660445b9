"""preval's statistics against the tools an IR researcher checks them with: statsmodels'
multiple-testing corrections and t-test power, ranx's Tukey HSD, scipy's Wilcoxon with zero
and tied differences, and the edge cases (one query, constant differences).

Peers that are not test dependencies (statsmodels 0.15.0, ranx 0.3.21) give golden values
pasted as literals, each with the call that produced it; scipy is called directly.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import polars as pl
import pytest
from scipy import stats

import preval
from preval import power
from preval.cli import main
from preval.errors import InputError
from preval.significance import corrected_p, universe
from tests.test_compare import by_pair, tie_free_per_query


def pairs(a: list[float], b: list[float]) -> pl.DataFrame:
    """A per-query table of a baseline A and a system B on the same queries."""
    queries = [f"q{i:02d}" for i in range(len(a))]
    return pl.DataFrame(
        {"system": ["A"] * len(a) + ["B"] * len(b), "query": queries + queries, "AP": a + b}
    )


# --- multiple comparisons: statsmodels ------------------------------------------------------
P = [0.01, 0.04, 0.03, 0.04, 0.2, 0.0005]  # a tie (0.04 twice), unsorted
MULTIPLETESTS = {  # statsmodels 0.15.0: multipletests(P, method=m)[1].tolist()
    "holm": [0.05, 0.12, 0.12, 0.12, 0.2, 0.003],
    "bonferroni": [0.06, 0.24, 0.18, 0.24, 1.0, 0.003],
    "fdr_bh": [0.030000000000000002, 0.048, 0.048, 0.048, 0.2, 0.003],
}


@pytest.mark.parametrize("method", sorted(MULTIPLETESTS))
def test_corrections_equal_statsmodels_multipletests(method: str) -> None:
    assert corrected_p(P, method) == pytest.approx(MULTIPLETESTS[method], abs=1e-15)
    # a null p-value (a comparison without a test) is no member of the family
    with_null = corrected_p([*P[:2], None, *P[2:]], method)
    assert with_null[2] is None
    assert [v for v in with_null if v is not None] == pytest.approx(MULTIPLETESTS[method])


# --- power: statsmodels' TTestPower (a paired t-test is a one-sample t-test) ----------------
def test_power_equals_statsmodels_ttestpower() -> None:
    # TTestPower().power(effect_size=0.1, nobs=300, alpha=0.05, alternative="two-sided")
    assert float(power.paired_t_power(0.02, 0.2, 300)) == pytest.approx(0.40780935289326653)
    # TTestPower().power(effect_size=1/3, nobs=10, alpha=0.01, alternative="two-sided")
    got = float(power.paired_t_power(0.1, 0.3, 10, alpha=0.01))
    assert got == pytest.approx(0.0448930842275142, rel=1e-12)
    # TTestPower().solve_power(effect_size=0.4, alpha=0.05, power=0.9, ...) = 67.62...: the
    # least whole number of queries is its ceiling
    assert int(power.queries_needed(0.1, 0.25, power=0.9)) == math.ceil(67.62139364383712)
    # TTestPower().solve_power(effect_size=0.08, alpha=0.05, power=0.8, ...) = 1228.31
    assert int(power.queries_needed(0.016, 0.2)) == math.ceil(1228.3065677399675)
    # TTestPower().solve_power(nobs=50, alpha=0.05, power=0.8, ...) = 0.40418...: the
    # standardized detectable difference (statsmodels' root finder stops at about 1e-8)
    got = float(power.detectable_difference(50, 0.2))
    assert got == pytest.approx(0.2 * 0.4041829997377859, rel=1e-7)


# --- Tukey's HSD: ranx ------------------------------------------------------------------------
# ranx 0.3.21 on tests/data/compare (benchmarks/peers/ranx_compare_golden.py prints them):
# compare(qrels, runs, ["map", "ndcg@10", "mrr"], stat_test="tukey", make_comparable=True,
#         rounding_digits=20).comparisons[x, y][metric]["p_value"]
RANX_TUKEY = {
    ("a", "b", "AP"): 0.004963003592259541, ("a", "b", "nDCG@10"): 0.0011180533626367062,
    ("a", "b", "RR"): 0.09860070137892274, ("a", "c", "AP"): 0.45305690503564555,
    ("a", "c", "nDCG@10"): 0.11637757619374867, ("a", "c", "RR"): 0.2969459969140673,
    ("b", "c", "AP"): 0.1172078383719668, ("b", "c", "nDCG@10"): 0.22754504140492904,
    ("b", "c", "RR"): 0.8289738507231977,
}  # fmt: skip


def test_tukey_equals_ranx_and_ignores_the_pairing() -> None:
    per_query = tie_free_per_query()
    got = by_pair(preval.compare(per_query, test="tukey", correction="holm"))
    paired = by_pair(preval.compare(per_query, test="t", correction="none"))
    for key, p in RANX_TUKEY.items():
        assert got[key]["p_value"] == pytest.approx(p, rel=1e-9)
        assert got[key]["p_corrected"] == got[key]["p_value"]  # no correction on top
    # Tukey's HSD is the one-way (unpaired) test: on a-b AP it is weaker than the paired
    # t-test even though it is one of only three comparisons (ranx's "student": 0.00188)
    assert paired["a", "b", "AP"]["p_value"] < got["a", "b", "AP"]["p_value"] / 2


# --- Wilcoxon: zero and tied differences ------------------------------------------------------
def test_wilcoxon_drops_zero_differences_as_scipy_wilcox() -> None:
    base = [0.10, 0.20, 0.30, 0.40, 0.50, 0.15, 0.25, 0.35, 0.45, 0.55, 0.60, 0.70]
    # two zero differences, and |d| = 0.25 three times (a tie): exact sums of quarters
    diff = [0.0, 0.0, 0.25, 0.25, -0.25, 0.125, 0.375, -0.0625, 0.5, 0.1875, 0.3125, 0.4375]
    system = [b + d for b, d in zip(base, diff, strict=True)]
    got = preval.compare(pairs(base, system), baseline="A", test="wilcoxon", correction="none")
    x, y = np.array(system), np.array(base)
    expected = stats.wilcoxon(x, y, zero_method="wilcox").pvalue
    assert got["p_value"][0] == pytest.approx(expected, rel=1e-12)
    # Wilcoxon's rule: the zeros are dropped and the test runs on the ten others. With zeros
    # or ties and at most 13 differences, scipy's method="auto" (1.17) enumerates all 2^10
    # sign assignments: p = 22 / 1024, the share whose signed-rank sum W+ is as far from
    # its mean as the observed one (computed here without scipy's test)
    nonzero = (x - y)[x != y]
    ranks = stats.rankdata(np.abs(nonzero))  # average ranks: 0.25 is tied three times
    centre = ranks.sum() / 2
    observed = abs(ranks[nonzero > 0].sum() - centre)
    signs = np.array(list(itertools.product((0, 1), repeat=nonzero.size)))
    extreme = np.abs(signs @ ranks - centre) >= observed - 1e-9
    assert extreme.mean() == 22 / 1024
    assert got["p_value"][0] == pytest.approx(22 / 1024, rel=1e-12)
    # Pratt's rule (zeros ranked, then dropped) is another number: not preval's
    assert stats.wilcoxon(x, y, zero_method="pratt").pvalue != pytest.approx(expected)


# --- edge cases -------------------------------------------------------------------------------
def test_one_query_has_no_bootstrap_test() -> None:
    # one query resamples to itself: without the rule the bootstrap gave p = 1 / (R + 1),
    # "significant" on one query, and a zero-width interval
    got = preval.compare(pairs([0.2], [0.5]), baseline="A", test="bootstrap", n_resamples=999)
    row = got.row(0, named=True)
    assert (row["p_value"], row["ci_low"], row["ci_high"]) == (None, None, None)
    assert row["significant"] is False
    assert row["delta"] == pytest.approx(0.3)
    two = preval.compare(pairs([0.2, 0.3], [0.5, 0.35]), baseline="A", test="bootstrap")
    assert two["p_value"][0] is not None


def test_equal_nonzero_differences_give_the_t_test_p_zero() -> None:
    base = [0.5, 0.25, 0.125, 0.75]
    table = pairs(base, [b + 0.5 for b in base])  # d = 0.5 exactly on every query
    row = preval.compare(table, baseline="A", test="t", correction="none").row(0, named=True)
    with warnings.catch_warnings():  # scipy warns of "catastrophic cancellation": sd 0
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = stats.ttest_rel(np.array(base) + 0.5, np.array(base)).pvalue  # t = inf
    assert row["p_value"] == expected == 0.0
    assert row["effect_size"] is None
    assert row["ci_low"] == row["ci_high"] == 0.5


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization", "bootstrap", "tukey"])
def test_a_nan_value_leaves_its_comparisons_untested(test: str) -> None:
    nan = float("nan")
    table = pl.DataFrame(
        {
            "system": ["a"] * 5 + ["b"] * 5 + ["c"] * 5,
            "query": [f"q{i}" for i in range(5)] * 3,
            "AP": [0.1, 0.2, 0.3, 0.4, 0.5, 0.3, 0.3, 0.6, 0.5, 0.9, 0.2, nan, 0.4, 0.6, 0.7],
        }
    )
    got = by_pair(preval.compare(table, test=test, correction="holm", n_resamples=999))
    for pair in (("a", "c", "AP"), ("b", "c", "AP")):  # c's mean difference is undefined
        row = got[pair]
        assert row["delta"] is None and row["relative_delta"] is None
        # before: the resampling tests compared with a NaN mean, counted no resample as
        # extreme and called the pair significant at p = 1 / (R + 1); Wilcoxon and Tukey
        # gave NaN p-values that counted in the Holm family
        assert (row["p_value"], row["p_corrected"], row["ci_low"]) == (None, None, None)
        assert row["significant"] is False
    if test != "tukey":  # Tukey's HSD pools every system's variance: the NaN reaches a-b
        clean = preval.compare(table.filter(pl.col("system") != "c"), test=test,
                               correction="none", n_resamples=999)  # fmt: skip
        # the pair without the NaN is a family of one: Holm leaves its p-value alone
        assert got["a", "b", "AP"]["p_corrected"] == pytest.approx(clean["p_value"][0])


def test_universe_names_the_systems_it_needs() -> None:
    table = pairs([0.1, 0.2], [0.3, 0.4]).vstack(pairs([0.1, 0.2], [0.5, 0.6]).filter(system="B")
                                                  .with_columns(system=pl.lit("C")))  # fmt: skip
    x, present = universe(table, "AP", "system", "query", ["C", "A", "B"], "zero")
    assert x.tolist() == [[0.5, 0.1, 0.3], [0.6, 0.2, 0.4]]  # queries x systems as asked
    assert present.all()
    with pytest.raises(InputError, match="every system of column 'system'"):
        universe(table, "AP", "system", "query", ["A", "B"], "zero")  # was a Polars cast error


def test_a_repeated_row_counts_once_in_power_as_in_compare_and_risk() -> None:
    # B gives q3 twice: its first row counts (compare's and risk's rule); the power
    # analysis's self-join used to pair both copies, 4 queries and a delta of 0.275
    table = pl.DataFrame(
        {
            "system": ["A", "A", "A", "B", "B", "B", "B"],
            "query": ["q1", "q2", "q3", "q1", "q2", "q3", "q3"],
            "AP": [0.1, 0.2, 0.3, 0.3, 0.3, 0.5, 0.9],
        }
    )
    d = np.array([0.3 - 0.1, 0.3 - 0.2, 0.5 - 0.3])  # the first rows' differences
    row = power.analysis(table, baseline="A").collect().row(0, named=True)
    assert row["queries"] == 3
    assert row["delta_observed"] == pytest.approx(d.mean())
    assert row["sd"] == pytest.approx(d.std(ddof=1))
    assert preval.compare(table, baseline="A")["delta"][0] == pytest.approx(d.mean())
    risk = preval.risk_summary(table, baseline="A", alpha=0).collect()
    assert risk["urisk"][0] == pytest.approx(d.mean())


def test_differences_equal_up_to_rounding_are_equal() -> None:
    base = [0.1, 0.5, 0.3, 0.7]
    table = pairs(base, [b + 0.1 for b in base])
    d = np.array([b + 0.1 for b in base]) - np.array(base)
    assert d.std(ddof=1) > 0  # 0.1 apart in decimal, not in binary floating point
    with warnings.catch_warnings():  # "catastrophic cancellation": a t from the rounding
        warnings.simplefilter("ignore", RuntimeWarning)
        assert stats.ttest_rel(d, np.zeros(4)).statistic > 1e14
    row = preval.compare(table, baseline="A", test="t", correction="none").row(0, named=True)
    # as exactly equal differences: t infinite, p 0, no effect size (was d_z = 2.8e15)
    assert row["p_value"] == 0.0
    assert row["effect_size"] is None
    assert row["ci_low"] == row["ci_high"] == pytest.approx(0.1)
    # TRisk: every r_q equal, so null as documented (was 4.4e15 with p = 2.6e-47)
    risk = preval.risk_summary(table, baseline="A", alpha=1).collect().row(0, named=True)
    assert risk["urisk"] == pytest.approx(0.1)
    assert (risk["trisk"], risk["p_value"]) == (None, None)


def test_the_paper_caption_names_no_correction_on_tukey(capsys) -> None:
    argv = ["compare", "fixtures/example.parquet", "-m", "AP", "--test", "tukey"]
    assert main([*argv, "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    # compare applies none (the studentized range holds the level): the caption said "holm"
    assert "(Tukey's HSD, family-wise per measure, alpha = 0.05)" in out
    assert "holm" not in out


def test_a_nan_value_is_no_win_and_leaves_urisk_null() -> None:
    nan = float("nan")
    table = pairs([0.2, nan, 0.3], [0.5, 0.4, 0.6])
    row = preval.risk_summary(table, baseline="A", alpha=1).collect().row(0, named=True)
    # Polars orders NaN above every number: the NaN difference counted as a third win
    assert (row["wins"], row["ties"], row["losses"]) == (2, 0, 0)
    assert (row["delta"], row["urisk"], row["se"], row["trisk"]) == (None, None, None, None)
    got = preval.compare(table, baseline="A").row(0, named=True)
    assert (got["wins"], got["delta"]) == (2, None)  # compare's rule, the same
