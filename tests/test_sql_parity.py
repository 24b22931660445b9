"""preval.sql on DuckDB against preval.evaluate on random small runs: per-query values and the
summary (mean, summed counts, GMAP's floored geometric mean) agree to 1e-12, under every option
the SQL takes (relevance_level, queries, trec_version, by), on a joined table and on a run
with separate qrels. The data is built to hit the edges: scores tied in float64 and only in
float32, +-inf, -0.0, null scores (unretrieved), doc ids compared as strings ("9" > "10"),
integer and string query ids, queries without relevant documents, judged queries with no
retrieved rows, unjudged retrieved documents, negative, fractional and graded labels."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import preval

duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (the test extra has it)")

MEASURES = [
    "AP", "AP@3", "AP(rel=2)", "GMAP", "RR", "RR@2", "RR(rel=0)", "Rprec", "Rprec(rel=2)",
    "P@1", "P@3", "P(rel=2)@3", "R@3", "R(rel=2)@5", "nDCG", "nDCG@1", "nDCG@3",
    "Success@1", "Success(rel=2)@3", "NumRet", "NumRel", "NumRel(rel=3)", "NumRelRet",
    "NumRelRet(rel=2)", "NumQ",
]  # fmt: skip
# 0.1 and 0.1 + 1e-12 tie as float32 only (trec_version 9), -0.0 ties with 0.0
# 1e39 and 1e40 are inf as float32 (tie), distinct doubles
SCORES = [None, 0.1, 0.1 + 1e-12, 0.5, 0.0, -0.0, 2.0, -3.0, math.inf, -math.inf, 1e39, 1e40, -1e39]
LABELS = [None, -1, 0, 0.5, 1, 2, 3]
# doc ids whose string order is not their numeric order; the first six also as integers
DOCS = ["1", "2", "9", "10", "11", "90", "d", "D", "é"]


def doc_ids(draw, frame: pl.DataFrame, numeric: bool) -> pl.DataFrame:
    """The doc column as strings, or (numeric ids only) as integers half of the time."""
    if numeric and draw(st.booleans()):
        return frame.with_columns(pl.col("doc").cast(pl.Int64))
    return frame


OPTIONS = st.fixed_dictionaries({
    "relevance_level": st.sampled_from([1, 2, 0, -1, 0.5, np.float64(2.0)]),  # (numpy: a fix)
    "queries": st.sampled_from(["judged", "retrieved"]),
    "trec_version": st.sampled_from([9, 10]),
    "by": st.sampled_from(["system", None]),  # None: system a's rows alone
})  # fmt: skip


@st.composite
def joined_tables(draw) -> pl.DataFrame:
    """(system, query, doc, score, label) rows, unique per (system, query, doc)."""
    int_queries, numeric = draw(st.booleans()), draw(st.booleans())
    docs = DOCS[:6] if numeric else DOCS
    rows = []
    for system in ("a", "b"):
        for q in draw(st.sets(st.integers(1, 4), max_size=4)):
            for d in draw(st.sets(st.sampled_from(docs), max_size=len(docs))):
                score, label = draw(st.sampled_from(SCORES)), draw(st.sampled_from(LABELS))
                rows.append((system, q if int_queries else f"q{q}", d, score, label))
    schema = {"system": pl.String, "query": pl.Int64 if int_queries else pl.String,
              "doc": pl.String, "score": pl.Float64, "label": pl.Float64}  # fmt: skip
    return doc_ids(draw, pl.DataFrame(rows, schema=schema, orient="row"), numeric)


@st.composite
def runs_and_qrels(draw) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run (system, query, doc, score) and judgments (query, doc, label; no null label)."""
    int_queries, numeric = draw(st.booleans()), draw(st.booleans())
    docs = DOCS[:6] if numeric else DOCS
    run, qrels = [], []
    for system in ("a", "b"):
        for q in draw(st.sets(st.integers(1, 4), max_size=4)):
            for d in draw(st.sets(st.sampled_from(docs), max_size=len(docs))):
                score = draw(st.sampled_from(SCORES))
                run.append((system, q if int_queries else f"q{q}", d, score))
    for q in draw(st.sets(st.integers(1, 5), max_size=5)):
        for d in draw(st.sets(st.sampled_from(docs), min_size=1, max_size=len(docs))):
            qrels.append((q if int_queries else f"q{q}", d, draw(st.sampled_from(LABELS[1:]))))
    qtype = pl.Int64 if int_queries else pl.String
    run_schema = {"system": pl.String, "query": qtype, "doc": pl.String, "score": pl.Float64}
    qrels_schema = {"query": qtype, "doc": pl.String, "label": pl.Float64}
    # (run and judgments may hold the doc ids as different types: joined as strings)
    run_frame = pl.DataFrame(run, schema=run_schema, orient="row")
    qrels_frame = pl.DataFrame(qrels, schema=qrels_schema, orient="row")
    return doc_ids(draw, run_frame, numeric), doc_ids(draw, qrels_frame, numeric)


def summary_sql(per_query: str) -> str:
    """The warehouse's summary of the per-query view: means, summed counts, GMAP floored at
    1e-5 (trec_eval's gm_map), as docs/spark-and-sql.md writes it."""
    counts = ["NumRet", "NumRel", "NumRel(rel=3)", "NumRelRet", "NumRelRet(rel=2)", "NumQ"]
    parts = []
    for m in MEASURES:
        if m in counts:
            parts.append(f'SUM("{m}") AS "{m}"')
        elif m == "GMAP":
            parts.append('EXP(AVG(LN(GREATEST("GMAP", 1e-5)))) AS "GMAP"')
        else:
            parts.append(f'AVG("{m}") AS "{m}"')
    return f"SELECT system, {', '.join(parts)} FROM {per_query} GROUP BY system ORDER BY system"


def check(con, data: pl.DataFrame, qrels: pl.DataFrame | None, options: dict) -> None:
    if options["by"] is None:
        data = data.filter(pl.col("system") == "a").drop("system")
    text = preval.sql(MEASURES, table="results", qrels=None if qrels is None else "judgments",
                      **options)  # fmt: skip
    con.register("results", data.to_arrow())
    if qrels is not None:
        con.register("judgments", qrels.to_arrow())
    got = con.sql(text).pl()
    want = preval.evaluate(data, MEASURES, qrels=qrels, **options).collect()
    if options["by"] is None:  # the one system's rows, keyed as the others for the comparison
        got, want = (df.select(pl.lit("a").alias("system"), pl.all()) for df in (got, want))
    keys = ["system", "query"]
    assert got.columns == want.columns
    got = got.with_columns(pl.col("query").cast(pl.String)).sort(keys)
    want = want.with_columns(pl.col("query").cast(pl.String)).sort(keys)
    assert got.select(keys).rows() == want.select(keys).rows()
    for m in MEASURES:
        assert got[m].dtype == want[m].dtype, m
        assert got[m].to_list() == pytest.approx(want[m].to_list(), rel=1e-12, abs=1e-12), m
    con.register("per_query", got.to_arrow())
    summary = con.sql(summary_sql("per_query")).pl()
    expected = preval.summarize(want, by="system").collect().sort("system")
    assert summary["system"].to_list() == expected["system"].to_list()
    for m in MEASURES:
        assert summary[m].to_list() == pytest.approx(expected[m].to_list(), rel=1e-12), m


@settings(max_examples=60)
@given(data=joined_tables(), options=OPTIONS)
def test_joined_table_sql_equals_evaluate(data, options) -> None:
    check(duckdb.connect(), data, None, options)


@settings(max_examples=60)
@given(tables=runs_and_qrels(), options=OPTIONS)
def test_run_and_qrels_sql_equals_evaluate(tables, options) -> None:
    check(duckdb.connect(), *tables, options)
