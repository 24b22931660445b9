"""The measures of issue #25 against tests/reference.py on hypothesis data (ties, empty
queries, unjudged and unretrieved documents), with separate qrels and as one joined table,
and in the top-K plan (measures with a cutoff only)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import preval
from tests import reference
from tests.profiles import examples
from tests.test_properties import QUERY_SETS, TIE_RULES, cases, frames, joined, run_dict

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
    "DCG",
    "DCG@3",
    "DCG(dcg=exp-log2)@2",
    "DCG(gains={0:-1;2:5})",
    "RBP",
    "RBP(p=0.5)@3",
    "RBP(gain=label,rel=2,p=0.9)",
    "RBPResid",
    "RBPResid(p=0.5)",
    "ERR",
    "ERR@2",
    "ERR(max_grade=2)@3",
    "Rprec(mult=0.4)",
    "Rprec(mult=2,rel=2)",
    "SetRelP",
    "SetAP(rel=2)",
    "Utility",
    "Utility(a=2,b=-0.5,c=-1,d=0.25,docs=50)",
    "binG",
    "binG(rel=2)",
    "PairAccuracy",
    "PairAccuracy@3",
    "PairAccuracy(rel=2)@2",
    "SDCG(max_rel=3)@3",
    "SDCG(max_rel=2,min_rel=1)@5",
    "INST(max_rel=3)",
    "INST(T=2,max_rel=2)",
    "INSQ(max_rel=3)",
    "INSQ(T=0.5,max_rel=1)",
    "NERR8(max_rel=3)@3",
    "BPM(max_rel=3)@3",
    "BPM(T=2,max_rel=2)@10",
    "NERR9(max_rel=2)@5",
    "NERR10(max_rel=3)",
    "NERR10(max_rel=1,p=0.5)",
    "NERR11(max_rel=3)",
    "NERR11(T=2,max_rel=2)",
]
# measures that read an ideal DCG of a gain other than the linear one: one joined table only,
# until evaluate builds their ideal columns from separate qrels (measures.ideal_keys)
ROWS_ONLY = [
    "nDCG(dcg=exp-log2)",
    "nDCG(dcg=exp-log2)@3",
    "nDCG(gains={1:3.5;2:9})@2",
    "nDCG(gains={0:-1;3:1})",
    "RBP(gain=scaled,p=0.9)",
    "Compat",
    "Compat(p=0.5,normalize=false)",
    "G",
    "ndcg_rel",
    "Rndcg",
    "G(gains={1:3;2:0.5})",
    "ndcg_rel(gains={0:-1;2:4})",
    "Rndcg(gains={1:2;3:2})",
]
TOP = [m for m in MEASURES if preval.measures.parse(m).definition.top_only and "@" in m]


def compare(got, want, measures) -> None:
    """Each measure's column (its canonical name) against the reference's value."""
    assert got["query"].to_list() == sorted(want)
    for row in got.iter_rows(named=True):
        for m in measures:
            column, value = preval.measures.parse(m).name, want[row["query"]][m]
            if value is None:  # no value (PairAccuracy without a relevant document)
                assert row[column] is None, (row, m)
            else:
                assert row[column] == pytest.approx(value, abs=1e-9), (row, m)


SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


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
    every = [*MEASURES, *ROWS_ONLY]
    want = reference.evaluate(
        run_dict(run_rows), qrels, every, relevance_level=level, ties=ties, queries=queries
    )
    got = preval.evaluate(table, every, ties=ties, queries=queries, relevance_level=level)
    compare(got.collect(), want, every)


@SETTINGS
@given(case=cases(), ties=TIE_RULES)
def test_new_cutoff_measures_in_the_top_k_plan(case, ties) -> None:
    run_rows, qrels = case
    want = reference.evaluate(run_dict(run_rows), qrels, TOP, ties=ties)
    table = joined(run_rows, qrels)
    plan = preval.plan(table, TOP, ties=ties, rows_per_query=1e9)
    assert "top_k" in plan.status.explain()
    compare(plan.per_query().collect(), want, TOP)


@pytest.mark.parametrize(
    "bad",
    ["Judged(norm=R)@3", "SetF@3", "SetF(beta=0)", "nDCG(dcg=exp)", "nDCG(gains={1})",
     "nDCG(gains={1.5:2})", "nDCG(gains={1:2},dcg=exp-log2)", "DCG(gains=)"],
)  # fmt: skip
def test_bad_forms_are_rejected(bad) -> None:
    with pytest.raises(preval.MeasureError):
        preval.measures.parse(bad)
