"""Counts are integers in every output: the count measures (those a summary sums) are Int64
columns per query and in summaries, whatever the engine and the input's shape; rates are
Float64; the long form's one ``value`` column is Float64 for both."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import preval
from preval.measures import CATALOGUE, parse

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
JOINED = pl.read_parquet(FIXTURES / "example.parquet")
RUN = pl.read_csv(FIXTURES / "example_run.csv", schema_overrides={"query": pl.String})
QRELS = pl.read_csv(FIXTURES / "example_qrels.csv", schema_overrides={"query": pl.String})

COUNTS = ["NumRet", "NumRel", "NumRelRet", "NumNonrelJudgedRet", "NumQ", "NumRet(rel=2)",
          "NumRel(rel=2)"]  # fmt: skip
# Hits is a count per query that a summary averages: a rate there, so Float64 throughout
RATES = ["AP", "GMAP", "P@10", "nDCG@10", "RR", "Hits@10", "TieAtCutoff@5", "Bpref"]
MEASURES = [*RATES, *COUNTS]


def count_names(schema: pl.Schema) -> list[str]:
    return [n for n, s in preval.summary.measure_columns(schema).items() if s.is_count]


def test_the_counts_are_the_measures_a_summary_sums() -> None:
    counts = {name for name, d in CATALOGUE.items() if d.is_count}
    assert counts == {"NumRet", "NumRel", "NumRelRet", "NumNonrelJudgedRet", "NumQ"}
    assert {name for name, d in CATALOGUE.items() if d.summary == "sum"} == counts
    assert parse("num_rel_ret").dtype == pl.Int64 and parse("Hits@10").dtype == pl.Float64


def assert_dtypes(schema: pl.Schema, counts: list[str], rates: list[str]) -> None:
    for name in counts:
        assert schema[name] == pl.Int64, (name, schema[name])
    for name in rates:
        assert schema[name] == pl.Float64, (name, schema[name])


@pytest.mark.parametrize("engine", ["in-memory", "streaming", "chunked", "partitioned"])
def test_per_query_counts_are_int64_on_every_engine(engine: str) -> None:
    plan = preval.plan(JOINED, MEASURES, by="system")
    per_query = preval.collect(plan, engine).per_query().collect()
    assert_dtypes(per_query.schema, ["NumRet", "NumRel", "NumRelRet", "NumNonrelJudgedRet",
                                     "NumQ", "NumRet(rel=2)", "NumRel(rel=2)"], RATES)  # fmt: skip
    assert count_names(per_query.schema) == [parse(c).name for c in COUNTS]
    assert per_query["NumQ"].unique().to_list() == [1]
    # the values are those the Float64 columns held: whole numbers, nothing rounded away
    want = preval.evaluate(JOINED, ["NumRet", "NumRel"], by="system").collect()
    assert per_query.select(want.columns).equals(want)
    assert want["NumRet"].sum() == 11904 + 12134 + 11918


@pytest.mark.parametrize(
    "kw",
    [
        {"qrels": QRELS},  # placeholders: judged queries a system did not answer
        {"qrels": QRELS, "queries": "retrieved", "depth": 5},
        {"qrels": QRELS, "ties": "expected"},
        {"ties": "optimistic", "relevance_level": 2},
        {"convention": "vlfeat"},
    ],
    ids=["qrels", "retrieved-depth", "expected", "optimistic", "vlfeat"],
)
def test_per_query_counts_are_int64_for_every_input_shape(kw: dict) -> None:
    data = RUN if "qrels" in kw else JOINED
    counts = ["NumRet", "NumRel", "NumRelRet", "NumQ"]
    rates = ["AP", "P@10"]
    per_query = preval.evaluate(data, [*rates, *counts], by="system", **kw).collect()
    assert per_query.height > 0
    assert_dtypes(per_query.schema, counts, rates)


def test_empty_input_keeps_the_dtypes() -> None:
    per_query = preval.evaluate(JOINED.clear(), MEASURES, by="system")
    assert_dtypes(per_query.collect_schema(), [parse(c).name for c in COUNTS], RATES)
    summary = preval.summarize(per_query, by=[]).collect()
    assert summary.rows() == [(0, *[None] * len(RATES), *[0] * (len(COUNTS) - 1))]
    assert_dtypes(summary.schema, ["NumQ", "NumRet", "NumRel"], RATES)


def test_summary_counts_are_int64_and_rates_float64() -> None:
    per_query = preval.evaluate(JOINED, MEASURES, by="system")
    for by in (None, [], ["system"]):
        summary = preval.summarize(per_query, by=by).collect()
        counts = [parse(c).name for c in COUNTS]
        assert_dtypes(summary.schema, counts, RATES)
        assert summary.columns[0 if by == [] else 1] == "NumQ"
    overall = preval.summarize(per_query, by=[]).collect()
    assert overall.select("NumQ", "NumRet", "NumRel").row(0) == (900, 35956, 3 * 2651)


def test_summary_of_a_table_with_float_counts_gives_int64() -> None:
    # a per-query table written by an older preval (or by hand) holds its counts as floats
    per_query = preval.evaluate(JOINED, ["AP", "NumRet", "NumQ"], by="system").collect()
    floats = per_query.with_columns(pl.col("NumRet", "NumQ").cast(pl.Float64))
    got = preval.summarize(floats).collect()
    want = preval.summarize(per_query).collect()
    assert got.equals(want)
    assert_dtypes(got.schema, ["NumQ", "NumRet"], ["AP"])


def test_result_summary_and_per_query_agree_on_dtypes() -> None:
    result = preval.collect(preval.plan(RUN, ["AP", "NumRelRet"], qrels=QRELS, by="system"))
    assert_dtypes(result.per_query().collect_schema(), ["NumRelRet"], ["AP"])
    assert_dtypes(result.summary().collect_schema(), ["NumQ", "NumRelRet"], ["AP"])


def test_long_form_value_is_float64_for_rates_and_counts() -> None:
    long = preval.evaluate(JOINED, ["AP", "NumRet", "NumQ"], by="system", form="long").collect()
    assert long.schema == pl.Schema(
        {"system": pl.String, "query": pl.String, "measure": pl.String, "value": pl.Float64}
    )
    assert long["measure"].head(3).to_list() == ["AP", "NumRet", "NumQ"]
    counts = long.filter(pl.col("measure") != "AP")["value"]
    assert (counts == counts.round(0)).all() and counts.min() >= 0
    wide = preval.evaluate(JOINED, ["AP", "NumRet", "NumQ"], by="system").collect()
    assert preval.to_long(wide, ["system", "query"]).collect().equals(long)
