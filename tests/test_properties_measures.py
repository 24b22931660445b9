"""The measures of issue #25 against tests/reference.py on hypothesis data (ties, empty
queries, unjudged and unretrieved documents), with separate qrels and as one joined table,
and in the top-K plan (measures with a cutoff only)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import preval
from tests import reference
from tests.test_properties import QUERY_SETS, TIE_RULES, cases, compare, frames, joined, run_dict

# measures that read per-query totals from the qrels only through R (work with separate qrels)
MEASURES = [
    "Judged",
    "Judged@3",
    "Judged(norm=K)@3",
    "SetF",
    "SetF(beta=2)",
    "SetF(fbeta=0.5,rel=2)",
    "Hits",
    "Hits@3",
    "Hits(rel=2)@2",
]
TOP = [m for m in MEASURES if "@" in m]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(case=cases(), ties=TIE_RULES, queries=QUERY_SETS, level=st.sampled_from([1, 2]))
def test_new_measures_match_reference(case, ties, queries, level) -> None:
    run_rows, qrels = case
    want = reference.evaluate(
        run_dict(run_rows), qrels, MEASURES, relevance_level=level, ties=ties, queries=queries
    )
    run, qrels_df = frames(run_rows, qrels)
    got = preval.evaluate(
        run, MEASURES, qrels=qrels_df, ties=ties, queries=queries, relevance_level=level
    ).collect()
    compare(got, want, MEASURES)
    table = joined(run_rows, qrels)
    got = preval.evaluate(table, MEASURES, ties=ties, queries=queries, relevance_level=level)
    compare(got.collect(), want, MEASURES)


@SETTINGS
@given(case=cases(), ties=TIE_RULES)
def test_new_cutoff_measures_in_the_top_k_plan(case, ties) -> None:
    run_rows, qrels = case
    want = reference.evaluate(run_dict(run_rows), qrels, TOP, ties=ties)
    table = joined(run_rows, qrels)
    plan = preval.plan(table, TOP, ties=ties, rows_per_query=1e9)
    assert "top_k" in plan.status.explain()
    compare(plan.per_query().collect(), want, TOP)


@pytest.mark.parametrize("bad", ["Judged(norm=R)@3", "SetF@3", "SetF(beta=0)"])
def test_bad_forms_are_rejected(bad) -> None:
    with pytest.raises(preval.MeasureError):
        preval.measures.parse(bad)
