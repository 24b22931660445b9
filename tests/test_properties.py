"""preval against the independent plain-Python reference (tests/reference.py), on data that
hypothesis builds to break evaluators: ties, empty queries, unjudged and unretrieved docs."""

from __future__ import annotations

import math
import random

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import preval
import preval.engines
from tests import reference
from tests.profiles import examples

MEASURES = [
    "AP",
    "AP@3",
    "AP(norm=min)@3",
    "AP(norm=hits)@3",
    "AP(rel=2)",
    "P@1",
    "P@3",
    "P(rel=2)@3",
    "R@3",
    "R(norm=min)@2",
    "R(rel=3)@5",
    "RR",
    "RR@2",
    "Rprec",
    "Rprec(rel=2)",
    "nDCG",
    "nDCG@3",
    "nDCG(dcg=exp-log2)@3",
    "nDCG(gains={2:7})@2",
    "Success@2",
    "F",
    "F@3",
    "F(beta=0.5)@3",
    "F(beta=2,rel=2)",
    "NumRet",
    "NumRel",
    "NumRelRet",
    "NumQ",
    "GMAP",
    "Bpref",
    "Bpref(rel=2)",
    "GMBpref",
    "IPrec@0",
    "IPrec@0.3",
    "IPrec(rel=2)@0.5",
    "IPrec@1",
    "AP11",
    "infAP",
    "Judged@3",
    "SetP",
    "SetR",
    "NumNonrelJudgedRet",
]
DOCS = [f"d{i}" for i in range(7)]
SCORES = st.one_of(
    st.sampled_from([0.0, 0.5, 1.0, 0.1, 0.1 + 1e-12, -2.0]),  # heavy ties, float32 collisions
    st.floats(-10, 10, allow_nan=False, allow_infinity=False),
    st.sampled_from([math.inf, -math.inf]),
)
LABELS = st.sampled_from([-1, 0, 0, 1, 2, 3])
TIE_RULES = st.sampled_from(["trec", "input", "optimistic", "pessimistic"])
QUERY_SETS = st.sampled_from(["judged", "retrieved"])


@st.composite
def cases(draw):
    """A run (rows in input order) and qrels over a few queries, any of them possibly empty."""
    queries = draw(
        st.lists(st.sampled_from(["q1", "q2", "q3", "q4"]), unique=True, min_size=1, max_size=4)
    )
    run_rows, qrels = [], {}
    for q in queries:
        retrieved = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=7))
        run_rows += [(q, d, draw(SCORES)) for d in retrieved]
        if draw(st.booleans()) or not retrieved:
            judged = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=7))
            qrels[q] = {d: draw(LABELS) for d in judged}
    return run_rows, qrels


def frames(run_rows, qrels):
    run = pl.DataFrame(
        run_rows, schema={"query": pl.String, "doc": pl.String, "score": pl.Float64}, orient="row"
    )
    judged = [(q, d, lab) for q, docs in qrels.items() for d, lab in docs.items()]
    qrels_df = pl.DataFrame(
        judged, schema={"query": pl.String, "doc": pl.String, "label": pl.Int64}, orient="row"
    )
    return run, qrels_df


def joined(run_rows, qrels) -> pl.DataFrame:
    """One table: run rows in input order with their labels, then judged unretrieved rows."""
    rows, seen = [], set()
    for q, d, s in run_rows:
        rows.append((q, d, s, qrels.get(q, {}).get(d)))
        seen.add((q, d))
    for q, docs in qrels.items():
        rows += [(q, d, None, lab) for d, lab in docs.items() if (q, d) not in seen]
    schema = {"query": pl.String, "doc": pl.String, "score": pl.Float64, "label": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def run_dict(run_rows):
    run: dict[str, dict[str, float]] = {}
    for q, d, s in run_rows:
        run.setdefault(q, {})[d] = s
    return run


def compare(
    got: pl.DataFrame, want: dict[str, dict[str, float]], measures: list[str] = MEASURES
) -> None:
    assert got["query"].to_list() == sorted(want)
    for row in got.iter_rows(named=True):
        for m in measures:
            assert row[m] == pytest.approx(want[row["query"]][m], abs=1e-9), (row["query"], m)


SETTINGS = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(
    case=cases(),
    ties=TIE_RULES,
    queries=QUERY_SETS,
    level=st.sampled_from([1, 2]),
)
def test_run_and_qrels_match_reference(case, ties, queries, level) -> None:
    run_rows, qrels = case
    want = reference.evaluate(
        run_dict(run_rows), qrels, MEASURES, relevance_level=level, ties=ties, queries=queries
    )
    run, qrels_df = frames(run_rows, qrels)
    got = preval.evaluate(
        run, MEASURES, qrels=qrels_df, ties=ties, queries=queries, relevance_level=level
    ).collect()
    compare(got, want)
    summary = preval.summarize(got).collect().row(0, named=True)
    expected = reference.summarize(want)
    assert summary["NumQ"] == len(want)
    for m in MEASURES if want else []:
        assert summary[m] == pytest.approx(expected[m], abs=1e-9), m


@SETTINGS
@given(
    case=cases(),
    ties=TIE_RULES,
    queries=QUERY_SETS,
)
def test_joined_table_matches_reference(case, ties, queries) -> None:
    run_rows, qrels = case
    want = reference.evaluate(run_dict(run_rows), qrels, MEASURES, ties=ties, queries=queries)
    got = preval.evaluate(joined(run_rows, qrels), MEASURES, ties=ties, queries=queries)
    compare(got.collect(), want)


# Measures that read every judged document of a query as a row: with separate qrels the plan
# joins the judgments into one table first (evaluate._joined_table)
JUDGED_ROW_MEASURES = ["G", "ndcg_rel", "Rndcg", "Compat", "Compat(p=0.8,normalize=false)",
                       "RBP(gain=scaled)", "RBP(gain=scaled,p=0.5)@3", "AP", "nDCG@3"]  # fmt: skip


@SETTINGS
@given(case=cases(), other=cases(), ties=TIE_RULES, queries=QUERY_SETS)
def test_measures_of_judged_rows_take_separate_qrels(case, other, ties, queries) -> None:
    # two systems over one set of qrels: each equals the reference on its own run, and a
    # judged query a system did not answer counts for it (scores 0, trec_eval -c)
    (run_a, qrels), (run_b, _) = case, other
    run_b = [row for row in run_b if row[0] != "q1"]  # b never answers q1
    options = {"ties": ties, "queries": queries}
    frame_a, qrels_df = frames(run_a, qrels)
    frame_b, _ = frames(run_b, qrels)
    both = pl.concat([frame_a.with_columns(system=pl.lit("a")),
                      frame_b.with_columns(system=pl.lit("b"))])  # fmt: skip
    plan = preval.plan(both, JUDGED_ROW_MEASURES, qrels=qrels_df, by="system", **options)
    got = preval.engines.collect(plan, "in-memory").per_query().collect()
    for system, rows in (("a", run_a), ("b", run_b)):
        if not rows:  # a system without rows is not seen at all
            assert system not in got["system"].to_list()
            continue
        want = reference.evaluate(run_dict(rows), qrels, JUDGED_ROW_MEASURES, **options)
        part = got.filter(pl.col("system") == system).sort("query")
        assert part["query"].to_list() == sorted(want)
        for row in part.iter_rows(named=True):
            for m in JUDGED_ROW_MEASURES:
                column = preval.measures.parse(m).name
                assert row[column] == pytest.approx(want[row["query"]][m], abs=1e-9), (m, row)
    assert preval.engines.choose(plan, input_bytes=2**40) == "streaming"  # one plan, not pieces
    for engine in ("streaming", "partitioned"):
        assert (
            preval.engines.collect(plan, engine)
            .per_query()
            .collect()
            .sort("system", "query")
            .equals(got.sort("system", "query"))
        ), engine


@settings(max_examples=examples(60), deadline=None)
@given(case=cases(), seed=st.integers(0, 2**32 - 1))
def test_trec_ties_do_not_depend_on_input_order(case, seed) -> None:
    run_rows, qrels = case
    shuffled = list(run_rows)
    random.Random(seed).shuffle(shuffled)
    run, qrels_df = frames(run_rows, qrels)
    run2, _ = frames(shuffled, qrels)
    a = preval.evaluate(run, MEASURES, qrels=qrels_df).collect()
    b = preval.evaluate(run2, MEASURES, qrels=qrels_df).collect()
    assert a.equals(b)


@settings(max_examples=examples(60), deadline=None)
@given(case=cases(), by_order=st.permutations(["s1", "s2", "s3"]))
def test_systems_are_independent(case, by_order) -> None:
    # Evaluating three copies of a run as three systems in one plan equals evaluating it alone.
    run_rows, qrels = case
    run, qrels_df = frames(run_rows, qrels)
    alone = preval.evaluate(run, MEASURES, qrels=qrels_df).collect()
    many = pl.concat([run.with_columns(system=pl.lit(s)) for s in by_order])
    together = preval.evaluate(many, MEASURES, qrels=qrels_df, by="system").collect()
    for s in by_order:
        part = together.filter(pl.col("system") == s).drop("system")
        if run.height:
            assert part.equals(alone)


@SETTINGS
@given(
    case=cases(),
    depth=st.sampled_from([None, 1, 2, 4]),
    judged_only=st.booleans(),
    version=st.sampled_from([9, 10]),
    queries=QUERY_SETS,
)
def test_depth_judged_only_and_version_match_reference(
    case, depth, judged_only, version, queries
) -> None:
    run_rows, qrels = case
    options = {
        "depth": depth,
        "judged_only": judged_only,
        "trec_version": version,
        "queries": queries,
    }
    want = reference.evaluate(run_dict(run_rows), qrels, MEASURES, **options)
    run, qrels_df = frames(run_rows, qrels)
    compare(preval.evaluate(run, MEASURES, qrels=qrels_df, **options).collect(), want)
    compare(preval.evaluate(joined(run_rows, qrels), MEASURES, **options).collect(), want)


@settings(max_examples=examples(40), deadline=None)
@given(case=cases(), depth=st.sampled_from([None, 2]), judged_only=st.booleans(),
       queries=QUERY_SETS)  # fmt: skip
def test_engines_give_identical_results(case, depth, judged_only, queries) -> None:
    # issue 5: in-memory and streaming execution must not differ, in either input shape
    run_rows, qrels = case
    run, qrels_df = frames(run_rows, qrels)
    options = {"depth": depth, "judged_only": judged_only, "queries": queries}
    for per_query in (
        preval.evaluate(run, MEASURES, qrels=qrels_df, **options),
        preval.evaluate(joined(run_rows, qrels), MEASURES, **options),
    ):
        in_memory = per_query.collect()
        assert per_query.collect(engine="streaming").equals(in_memory)
        summary = preval.summarize(per_query)
        assert summary.collect(engine="streaming").equals(summary.collect())


# The measures whose value reads only the top K ranked rows and per-query totals: requested
# on their own, the plan ranks only each query's top K rows (planner.aggregate.aggregate_top).
TOP_MEASURES = [
    m
    for m in MEASURES
    if preval.measures.parse(m).definition.top_only
    and isinstance(preval.measures.parse(m).cutoff, int)
]
import preval.planner.aggregate as _AGGREGATE  # noqa: E402

_PLANNER = preval.planner
Hints = preval.options.Hints


def test_top_measures_get_the_top_k_plan() -> None:
    # the properties below compare the two plans: they must really differ
    assert len(TOP_MEASURES) >= 12
    empty = pl.DataFrame(schema=SCHEMA)
    many = {"rows_per_query": 10 * 5}  # 10 x the largest cutoff of TOP_MEASURES (R@5)
    assert "top_k" in preval.plan(empty, TOP_MEASURES, **many).status.explain()
    for measures, options in (
        (TOP_MEASURES, {}),  # no estimate of the rows per query: rank every row
        (TOP_MEASURES, {"rows_per_query": 10 * 5 - 1}),  # too few rows per query to pay
        ([*TOP_MEASURES, "AP"], many),
        (TOP_MEASURES, {**many, "depth": 3}),
        (TOP_MEASURES, {**many, "judged_only": True}),
        (TOP_MEASURES, {**many, "convention": "lingpipe"}),
    ):
        assert "top_k" not in preval.plan(empty, measures, **options).status.explain(), options
    # rows already in ranking order: nothing to gain from ranking only the top K
    presorted = Hints(rows_per_query=10 * 5, presorted=True)
    plan = preval.plan(empty, TOP_MEASURES, **many)
    assert "top_k" not in _PLANNER.build(empty, plan.recipe, presorted).status.explain()


SCHEMA = {"query": pl.String, "doc": pl.String, "score": pl.Float64, "label": pl.Int64}
TOP = {"rows_per_query": 1e9}  # forces the top-K plan where the measures allow it


@SETTINGS
@given(
    case=cases(),
    ties=TIE_RULES,
    queries=QUERY_SETS,
    level=st.sampled_from([1, 2]),
    version=st.sampled_from([9, 10]),
)
def test_top_k_plan_matches_reference(case, ties, queries, level, version) -> None:
    run_rows, qrels = case
    options = {"ties": ties, "queries": queries, "relevance_level": level}
    want = reference.evaluate(
        run_dict(run_rows), qrels, TOP_MEASURES, trec_version=version, **options
    )
    table = joined(run_rows, qrels)
    got = preval.plan(table, TOP_MEASURES, trec_version=version, **options, **TOP)
    compare(got.per_query().collect(), want, TOP_MEASURES)


@settings(max_examples=examples(60), deadline=None)
@given(case=cases(), other=cases(), ties=st.sampled_from(["trec", "input", "optimistic"]))
def test_top_k_plan_equals_the_full_plan(case, other, ties) -> None:
    # bit for bit, per query, audit and summary, with two systems, in every engine
    table = pl.concat(
        [
            joined(*case).with_columns(system=pl.lit("a")),
            joined(*other).with_columns(system=pl.lit("b")),
        ]
    ).sort("system", "query", maintain_order=True)  # grouped, for the chunked engine
    top = preval.plan(table, TOP_MEASURES, by="system", ties=ties, **TOP)
    full = preval.plan(table, TOP_MEASURES, by="system", ties=ties)
    assert "top_k" in top.status.explain() and "top_k" not in full.status.explain()
    want = preval.engines.collect(full, "in-memory")
    for engine in ("in-memory", "streaming", "chunked", "partitioned"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_AGGREGATE, "TOP_K_SHARE", 0)  # chunks of these tiny queries use it too
            got = preval.engines.collect(top, engine)
        assert got.per_query().collect().equals(want.per_query().collect()), engine
        assert got.audit().collect().equals(want.audit().collect()), engine
        assert (
            preval.summarize(got.per_query())
            .collect()
            .equals(preval.summarize(want.per_query()).collect())
        ), engine


@settings(max_examples=examples(100), deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.sampled_from([True, False, None])),
        max_size=30,
    )
)
def test_count_is_the_sum_of_a_flag(rows) -> None:
    # ranking.count replaces flag.sum() in every aggregation: same numbers, nulls as false,
    # in one group or many, in memory and streaming
    from preval.ranking import count

    frame = pl.DataFrame(rows, schema={"q": pl.String, "flag": pl.Boolean}, orient="row").lazy()
    for engine in ("in-memory", "streaming"):
        got = frame.group_by("q").agg(count(pl.col("flag")).alias("n")).sort("q")
        queries = sorted({g for g, _ in rows})
        want = [(q, sum(f is True for g, f in rows if g == q)) for q in queries]
        assert got.collect(engine=engine).rows() == want
        assert frame.select(count(~pl.col("flag"))).collect(engine=engine).item() == sum(
            f is False for _, f in rows
        )
