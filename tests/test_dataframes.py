"""Any dataframe in: pandas, pyarrow, DuckDB and any Arrow PyCapsule stream give exactly what the
Polars frame gives, wherever a function takes a table; anything else is refused by its type."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from polars.testing import assert_frame_equal

import preval

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MEASURES = ["AP", "RR", "P@10", "nDCG@10", "NumRet", "NumRelRet"]


class Capsule:
    """A bare object that speaks only the Arrow PyCapsule stream interface."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._table.__arrow_c_stream__(requested_schema)


def _reader(df: pl.DataFrame) -> pa.RecordBatchReader:
    table = df.to_arrow()
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=97))


_CONNECTION = duckdb.connect()

# each kind of dataframe, made from a Polars DataFrame (a fresh object per call: a stream is
# read once)
KINDS: dict[str, Callable[[pl.DataFrame], object]] = {
    "pandas": lambda df: df.to_pandas(),
    "pyarrow-table": lambda df: df.to_arrow(),
    "pyarrow-batch": lambda df: df.to_arrow().combine_chunks().to_batches()[0],
    "pyarrow-reader": _reader,
    "duckdb": lambda df: _CONNECTION.from_arrow(df.to_arrow()),
    "capsule": lambda df: Capsule(df.to_arrow()),
}


@pytest.fixture(scope="module")
def joined() -> pl.DataFrame:
    return pl.read_parquet(FIXTURES / "example.parquet")


@pytest.fixture(scope="module")
def run_and_qrels() -> tuple[pl.DataFrame, pl.DataFrame]:
    run = pl.read_csv(FIXTURES / "example_run.csv", schema_overrides={"query": pl.String})
    qrels = pl.read_csv(FIXTURES / "example_qrels.csv", schema_overrides={"query": pl.String})
    return run, qrels


@pytest.mark.parametrize("kind", KINDS)
def test_evaluate_any_dataframe_gives_the_polars_result(kind: str, joined: pl.DataFrame) -> None:
    expected = preval.evaluate(joined, MEASURES, by="system").collect()
    got = preval.evaluate(KINDS[kind](joined), MEASURES, by="system").collect()
    assert_frame_equal(got, expected)  # to the last bit: no tolerance
    assert got.height == 900


@pytest.mark.parametrize("kind", KINDS)
def test_run_and_qrels_of_any_kind(kind: str, run_and_qrels) -> None:
    run, qrels = run_and_qrels
    expected = preval.evaluate(run, MEASURES, qrels=qrels, by="system").collect()
    got = preval.evaluate(
        KINDS[kind](run), MEASURES, qrels=KINDS[kind](qrels), by="system"
    ).collect()
    assert_frame_equal(got, expected)
    audit = preval.audit(KINDS[kind](run), qrels=KINDS[kind](qrels), by="system").collect()
    assert_frame_equal(audit, preval.audit(run, qrels=qrels, by="system").collect())


@pytest.mark.parametrize("kind", KINDS)
def test_plan_with_every_engine_reads_a_stream_once(kind: str, run_and_qrels) -> None:
    # the plan looks at its input and its qrels several times: a stream must still be whole
    run, qrels = run_and_qrels
    expected = preval.evaluate(run, ["AP"], qrels=qrels, by="system").collect()
    for engine in ("in-memory", "streaming", "partitioned"):
        plan = preval.plan(KINDS[kind](run), ["AP"], qrels=KINDS[kind](qrels), by="system")
        result = preval.collect(plan, engine=engine)
        assert_frame_equal(result.per_query().collect(), expected)


@pytest.mark.parametrize("kind", KINDS)
def test_tables_of_results_of_any_kind(kind: str, joined: pl.DataFrame) -> None:
    per_query = preval.evaluate(joined, ["AP", "P@10"], by="system").collect()
    assert_frame_equal(
        preval.summarize(KINDS[kind](per_query)).collect(),
        preval.summarize(per_query).collect(),
    )
    assert_frame_equal(
        preval.compare(KINDS[kind](per_query), baseline="bm25"),
        preval.compare(per_query, baseline="bm25"),
    )
    index = ["system", "query"]
    assert_frame_equal(
        preval.to_long(KINDS[kind](per_query), index).collect(),
        preval.to_long(per_query.lazy(), index).collect(),
    )


@pytest.mark.parametrize("kind", KINDS)
def test_curve_of_any_kind(kind: str, joined: pl.DataFrame) -> None:
    one = joined.filter(pl.col("system") == "bm25")
    assert_frame_equal(
        preval.curve(KINDS[kind](one), "roc").collect(), preval.curve(one, "roc").collect()
    )


@pytest.mark.parametrize(
    ("obj", "kind"),
    [({"query": ["q"]}, "builtins.dict"), ([1, 2], "builtins.list"), (3.5, "builtins.float")],
)
def test_anything_else_is_refused_by_its_type(obj: object, kind: str) -> None:
    with pytest.raises(preval.InputError) as info:
        preval.evaluate(obj, ["AP"])
    text = str(info.value)
    assert f"cannot read an object of type {kind}" in text
    assert "pandas DataFrame" in text and "__arrow_c_stream__" in text
    with pytest.raises(preval.InputError, match="qrels: cannot read an object of type"):
        preval.evaluate(pl.DataFrame({"query": ["q"], "doc": ["d"], "score": [1.0]}), ["AP"],
                        qrels=obj)  # fmt: skip


def test_pandas_nan_is_pandas_missing_value() -> None:
    # pandas writes a missing value as NaN (run.merge(qrels, how="outer") does so): read as
    # null, a NaN score is a document not retrieved, a NaN label an unjudged one
    # (docs/semantics.md, Input shapes). Worked example, ranked a, c (b not retrieved):
    # a relevant at rank 1, b relevant but not retrieved, c unjudged: AP = (1/1) / 2 = 0.5,
    # NumRet 2, NumRel 2; a Polars NaN is refused instead.
    pd = pytest.importorskip("pandas")
    nan = float("nan")
    frame = pd.DataFrame(
        {"query": ["1"] * 3, "doc": ["a", "b", "c"], "score": [3.0, nan, 1.0],
         "label": [1.0, 1.0, nan]}
    )  # fmt: skip
    got = preval.evaluate(frame, ["AP", "NumRet", "NumRel"]).collect()
    assert got.rows() == [("1", 0.5, 2, 2)]
    with pytest.raises(preval.InvalidValueError, match="column 'score' is NaN"):
        preval.evaluate(pl.from_pandas(frame, nan_to_null=False), ["AP"]).collect()


def test_integer_ids_of_two_widths_stay_integers() -> None:
    # a run with Int32 ids and qrels with Int64 ids: the per-query table keeps integer query
    # ids (it was String, and did not join back to the user's integer-keyed table). Worked
    # example: q1 ranks a (relevant), b: AP 1; q2 ranks a (not), c (relevant): AP 1/2
    run = pl.DataFrame(
        {"query": [1, 1, 2, 2], "doc": [10, 11, 10, 12], "score": [2.0, 1.0, 2.0, 1.0]},
        schema_overrides={"query": pl.Int32, "doc": pl.Int32},
    )
    qrels = pl.DataFrame({"query": [1, 2, 2], "doc": [10, 10, 12], "label": [1, 0, 1]})
    got = preval.evaluate(run, ["AP"], qrels=qrels).collect()
    assert got.schema["query"] == pl.Int64
    assert got.rows() == [(1, 1.0), (2, 0.5)]
    mine = pl.DataFrame({"query": [1, 2], "topic": ["x", "y"]})
    assert got.join(mine, on="query").height == 2


def test_summarize_of_the_long_form_says_so() -> None:
    table = pl.DataFrame({"query": ["1", "1"], "score": [2.0, 1.0], "label": [1, 0]})
    long = preval.evaluate(table, ["AP"], form="long")
    with pytest.raises(preval.InputError, match="this is the long form") as info:
        preval.summarize(long)
    assert "\n" not in str(info.value)
    # the plain table that is not a per-query table keeps the short message
    with pytest.raises(preval.InputError, match=r"no measure columns found \(expected"):
        preval.summarize(table)
