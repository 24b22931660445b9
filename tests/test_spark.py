"""preval.spark (issue 22): a Spark DataFrame evaluated inside Spark equals the local engine.

The golden values are `preval.evaluate` / `preval.summarize` on the same rows (the local
engine is the reference), plus hand-checked small cases. One local[2] session for the module.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import preval
from tests.spark_session import spark_session

pspark = pytest.importorskip("preval.spark", reason="pyspark is not installed (preval[spark])")
pspark_arrow = pytest.importorskip("preval.spark_arrow")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
JOINED = pl.read_parquet(FIXTURES / "example.parquet")
RUN = pl.read_csv(FIXTURES / "example_run.csv", schema_overrides={"query": pl.String})
QRELS = pl.read_csv(FIXTURES / "example_qrels.csv", schema_overrides={"query": pl.String})

# every measure family of the catalogue, with cutoffs and parameters
ALL = [
    "AP", "AP@10", "AP(norm=min)@10", "GMAP", "P@5", "P(rel=2)@10", "R@10", "RR", "RR@10",
    "Rprec", "nDCG", "nDCG@10", "Success@5", "F@10", "F(beta=0.5)", "Bpref", "GMBpref",
    "IPrec@0.5", "AP11", "infAP", "Judged@10", "SetP", "SetR", "AUC-PR", "AUC-ROC", "MaxF",
    "SetF", "Accuracy", "Specificity", "NumRet", "NumRel", "NumRelRet", "NumNonrelJudgedRet",
    "NumQ",
]  # fmt: skip
CORE = ["AP", "RR", "Rprec", "P@10", "nDCG@10", "NumRet", "NumRel", "NumRelRet"]


@pytest.fixture(scope="module")
def spark():
    return spark_session()


def to_spark(spark, frame: pl.DataFrame):
    return spark.createDataFrame(frame.to_arrow())


def collected(sdf, keys: list[str]) -> pl.DataFrame:
    frame = pl.from_arrow(sdf.toArrow())
    assert isinstance(frame, pl.DataFrame)
    return frame.sort(keys)


def assert_equal_local(
    spark, data, measures, *, qrels=None, keys, num_buckets=None, **kw
) -> pl.DataFrame:
    """Spark's per-query table equals the local engine's exactly: same kernel, same rows."""
    want = preval.evaluate(data, measures, qrels=qrels, **kw).collect()
    sdf = pspark.evaluate(
        to_spark(spark, data),
        measures,
        qrels=None if qrels is None else to_spark(spark, qrels),
        num_buckets=num_buckets,
        **kw,
    )
    got = collected(sdf, keys)
    assert got.height > 0
    assert_frame_equal(got, want, check_exact=True)
    return got


def test_joined_table_every_measure_family_by_system(spark) -> None:
    got = assert_equal_local(spark, JOINED, ALL, by="system", keys=["system", "query"],
                             num_buckets=3)  # fmt: skip
    # queries without a relevant document are there, and score 0 where R divides
    no_rel = got.filter(pl.col("query") == "q040")
    assert no_rel.height == 3 and no_rel["AP"].to_list() == [0.0, 0.0, 0.0]
    assert got["query"].n_unique() == 300  # the 3 unjudged queries are not evaluated


@pytest.mark.parametrize("ties", ["optimistic", "pessimistic"])
def test_tie_rules(spark, ties) -> None:
    assert_equal_local(spark, JOINED, ["AP", "P@10", "nDCG@10", "RR"], by="system",
                       ties=ties, keys=["system", "query"], num_buckets=4)  # fmt: skip


def test_run_with_qrels_joined_inside_spark(spark) -> None:
    got = assert_equal_local(spark, RUN, CORE, qrels=QRELS, by="system",
                             keys=["system", "query"], num_buckets=5)  # fmt: skip
    # every judged query for every system: dense did not answer q033 and scores 0 there
    assert got.height == 3 * 300
    row = got.filter((pl.col("system") == "dense") & (pl.col("query") == "q033"))
    assert row["AP"].item() == 0 and row["NumRet"].item() == 0 and row["NumRel"].item() > 0


def test_queries_retrieved_and_depth(spark) -> None:
    got = assert_equal_local(spark, RUN, CORE, qrels=QRELS, by="system", queries="retrieved",
                             depth=10, keys=["system", "query"], num_buckets=2)  # fmt: skip
    assert got.height == 3 * 300 - 4  # dense and hybrid left two queries each unanswered


def test_system_without_rows_in_a_bucket_still_gets_placeholders(spark) -> None:
    # System B answers only q1; A answers q1..q3; q4 is judged and answered by no one. With
    # many buckets, some bucket holds queries that B did not answer (and q4 one with no run
    # row at all): the local engine scores 0 there for B as for A, and so must every bucket.
    run = pl.DataFrame(
        {
            "system": ["A", "A", "A", "A", "B", "B"],
            "query": ["q1", "q1", "q2", "q3", "q1", "q1"],
            "doc": ["d1", "d2", "d3", "d5", "d1", "d2"],
            "score": [2.0, 1.0, 1.0, 1.0, 1.0, 2.0],
        }
    )
    qrels = pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q3", "q4"],
            "doc": ["d1", "d2", "d3", "d9", "d7"],
            "label": [1, 0, 1, 1, 2],
        }
    )
    from pyspark.sql import functions as F

    queries = spark.createDataFrame([(q,) for q in ["q1", "q2", "q3", "q4"]], "query string")
    for buckets in range(4, 64):
        placed = queries.select(pspark_arrow._bucket(F.col("query"), buckets).alias("b")).toArrow()
        if len(set(placed["b"].to_pylist())) == 4:  # each query alone in its bucket
            break
    else:
        pytest.fail("no bucket count below 64 separates q1..q4")
    measures = ["AP", "P@1", "NumRet", "NumRel"]
    got = assert_equal_local(spark, run, measures, qrels=qrels, by="system",
                             keys=["system", "query"], num_buckets=buckets)  # fmt: skip
    assert got.select("system", "query").rows() == [
        (s, q) for s in "AB" for q in ["q1", "q2", "q3", "q4"]
    ]
    # hand-checked: A ranks d1 (rel) then d2 -> AP 1; B ranks d2 then d1 -> AP 1/2
    assert got["AP"].to_list() == [1.0, 1.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0]
    assert got["NumRel"].to_list() == [1.0, 1.0, 1.0, 1.0] * 2


def test_judged_queries_in_buckets_without_run_rows(spark) -> None:
    # no by: q2 and q3 are judged but not in the run; with 32 buckets some bucket holds
    # judgments and no run row (cogroup gives an empty run table there)
    run = pl.DataFrame({"query": ["q1", "q1"], "doc": ["a", "b"], "score": [1.0, 2.0]})
    qrels = pl.DataFrame({"query": ["q1", "q2", "q3"], "doc": ["a", "a", "c"], "label": [1, 1, 0]})
    for queries, expected in (("judged", ["q1", "q2", "q3"]), ("retrieved", ["q1"])):
        got = assert_equal_local(spark, run, ["AP", "NumRel"], qrels=qrels, queries=queries,
                                 keys=["query"], num_buckets=32)  # fmt: skip
        assert got["query"].to_list() == expected
        assert got["AP"].to_list()[:1] == [0.5]  # b (unjudged) then a (relevant)


def test_by_column_in_qrels_is_a_query_property(spark) -> None:
    segment = pl.col("query").str.slice(1).cast(pl.Int64).mod(2).cast(pl.String)
    run = RUN.filter(pl.col("system") == "bm25").with_columns(segment.alias("segment"))
    qrels = QRELS.with_columns(segment.alias("segment"))
    got = assert_equal_local(spark, run, CORE, qrels=qrels, by="segment",
                             keys=["segment", "query"], num_buckets=3)  # fmt: skip
    assert sorted(got["segment"].unique()) == ["0", "1"]


def test_integer_ids_in_the_run_and_string_ids_in_the_qrels(spark) -> None:
    as_int = pl.col("query").str.slice(1).cast(pl.Int64)
    run = RUN.filter(pl.col("system") != "bm25").with_columns(as_int)
    qrels = QRELS.with_columns(pl.col("query").str.slice(1))
    got = assert_equal_local(spark, run, CORE, qrels=qrels, by="system",
                             keys=["system", "query"], num_buckets=3)  # fmt: skip
    assert got.height == 2 * 300


def test_a_label_column_beside_qrels_is_refused_as_locally(spark) -> None:
    # Spark read only the run's columns it needed with qrels: the label was dropped, silently
    joined = to_spark(spark, JOINED)
    with pytest.raises(preval.InputError, match="holds labels, and the qrels give them too"):
        pspark.evaluate(joined, CORE, qrels=to_spark(spark, QRELS), by="system")


def test_summary_is_sparks_aggregation_equal_to_summarize(spark) -> None:
    measures = ["AP", "GMAP", "P@10", "nDCG@10", "AUC-ROC", "GMBpref", "NumRet", "NumRel",
                "NumRelRet"]  # fmt: skip
    per_query = pspark.evaluate(to_spark(spark, JOINED), measures, by="system", num_buckets=3)
    local = preval.evaluate(JOINED, measures, by="system")
    for by in (None, []):
        got = pl.from_arrow(pspark.summarize(per_query, by=by).toArrow())
        want = preval.summarize(local, by=by).collect()
        assert got.columns == want.columns and got.height == want.height
        # counts are longs (Int64) in both, rates doubles
        assert got.schema == want.schema
        counts = ["NumQ", "NumRet", "NumRel", "NumRelRet"]
        assert [got.schema[c] for c in counts] == [pl.Int64] * 4
        assert got.schema["AP"] == got.schema["GMAP"] == pl.Float64
        for name in want.columns:
            if want[name].dtype == pl.String:
                assert got[name].to_list() == want[name].to_list()
                continue
            for g, w in zip(got[name].to_list(), want[name].to_list(), strict=True):
                assert math.isclose(g, w, rel_tol=1e-12, abs_tol=1e-15), (name, g, w)


def test_hand_checked_small_case_and_default_buckets(spark) -> None:
    # q1: relevant at ranks 1 and 3 of 3, R = 3 (one unretrieved): AP = (1 + 2/3) / 3
    table = pl.DataFrame(
        {
            "query": ["q1", "q1", "q1", "q1", "q2", "q2"],
            "doc": ["a", "b", "c", "d", "a", "b"],
            "score": [3.0, 2.0, 1.0, None, 1.0, 2.0],
            "label": [1, 0, 1, 1, 0, None],
        }
    )
    got = assert_equal_local(spark, table, ["AP", "P@2", "NumRel"], keys=["query"])
    assert got.rows() == [("q1", (1 + 2 / 3) / 3, 0.5, 3.0), ("q2", 0.0, 0.0, 0.0)]


def test_column_names_with_dots_and_at_signs(spark) -> None:
    # Spark reads "a.b" as a struct field unless quoted; the result keeps the user's names
    run = RUN.rename({"system": "run.system", "query": "q.id"})
    qrels = QRELS.rename({"query": "q.id"})
    got = assert_equal_local(spark, run, ["AP", "P@10"], qrels=qrels, by="run.system",
                             query="q.id", keys=["run.system", "q.id"], num_buckets=3)  # fmt: skip
    per_query = pspark.evaluate(to_spark(spark, run), ["AP", "P@10"], qrels=to_spark(spark, qrels),
                                by="run.system", query="q.id", num_buckets=3)  # fmt: skip
    summary = pspark.summarize(per_query, query="q.id")
    assert summary.columns == ["run.system", "NumQ", "AP", "P@10"] and got.height == 900


def test_empty_input_gives_an_empty_table_and_a_zero_summary(spark) -> None:
    empty = to_spark(spark, JOINED.head(0))
    per_query = pspark.evaluate(empty, ["AP", "NumRet"], by="system")
    assert per_query.columns == ["system", "query", "AP", "NumRet"]
    dtypes = dict(per_query.dtypes)
    assert dtypes["NumRet"] == "bigint" and dtypes["AP"] == "double"
    assert per_query.count() == 0
    overall = pspark.summarize(per_query, by=[]).collect()
    want = preval.summarize(preval.evaluate(JOINED.head(0), ["AP", "NumRet"], by="system"),
                            by=[]).collect()  # fmt: skip
    assert [tuple(r) for r in overall] == want.rows() == [(0.0, None, 0.0)]


def test_bad_input_raises_the_local_engines_errors(spark) -> None:
    sdf = to_spark(spark, JOINED)
    with pytest.raises(preval.MissingColumnError, match="score column 'points'"):
        pspark.evaluate(sdf, ["AP"], score="points", num_buckets=1)
    with pytest.raises(preval.MeasureError):
        pspark.evaluate(sdf, ["XYZ@3"], num_buckets=1)
    with pytest.raises(preval.InputError, match="num_buckets"):
        pspark.evaluate(sdf, ["AP"], by="system", num_buckets=0)
    # data rules run on the workers: the job fails with the local engine's message
    dup = pl.concat([JOINED.head(3), JOINED.head(1)])
    lazy = pspark.evaluate(to_spark(spark, dup), ["AP"], by="system", num_buckets=1)
    with pytest.raises(Exception, match="duplicate"):
        lazy.collect()
