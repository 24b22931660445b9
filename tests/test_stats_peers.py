"""preval's statistics against the tools an IR researcher checks them with: statsmodels'
multiple-testing corrections and t-test power, ranx's Tukey HSD, scipy's Wilcoxon with zero
and tied differences, and the edge cases (one query, constant differences).

Peers that are not test dependencies (statsmodels 0.15.0, ranx 0.3.21) give golden values
pasted as literals, each with the call that produced it; scipy is called directly.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from scipy import stats

import preval


def pairs(a: list[float], b: list[float]) -> pl.DataFrame:
    """A per-query table of a baseline A and a system B on the same queries."""
    queries = [f"q{i:02d}" for i in range(len(a))]
    return pl.DataFrame(
        {"system": ["A"] * len(a) + ["B"] * len(b), "query": queries + queries, "AP": a + b}
    )


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
