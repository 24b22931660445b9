"""preval.sql (issue 22): the window-function SQL gives `preval.evaluate`'s values on DuckDB
and on Spark SQL, for every measure it covers, with a joined table or a run and qrels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import preval
from tests.spark_session import spark_session

duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (the test extra has it)")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
JOINED = pl.read_parquet(FIXTURES / "example.parquet")
RUN = pl.read_csv(FIXTURES / "example_run.csv", schema_overrides={"query": pl.String})
QRELS = pl.read_csv(FIXTURES / "example_qrels.csv", schema_overrides={"query": pl.String})
MEASURES = [
    "AP", "AP@10", "GMAP", "RR", "RR@10", "Rprec", "P@10", "P(rel=2)@10", "R@10", "R(rel=2)@20",
    "nDCG", "nDCG@10", "Success@5", "NumRet", "NumRel", "NumRelRet", "NumQ",
]  # fmt: skip
# (data, qrels, keyword arguments) of each case
CASES = {
    "joined-by-system": (JOINED, None, {"by": "system"}),
    "joined-retrieved": (JOINED, None, {"by": "system", "queries": "retrieved"}),
    "joined-level-2-trec10": (JOINED, None, {"by": "system", "relevance_level": 2,
                                             "trec_version": 10}),
    "qrels-by-system": (RUN, QRELS, {"by": "system"}),
    "qrels-retrieved": (RUN, QRELS, {"by": "system", "queries": "retrieved"}),
    "qrels-one-system": (RUN.filter(pl.col("system") == "dense").drop("system"), QRELS, {}),
}  # fmt: skip


def assert_close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Same rows and keys; measures equal up to the order of a sum's terms."""
    assert got.columns == want.columns
    assert got.height == want.height > 0
    measures = preval.summary.measure_columns(want.schema)
    for name in want.columns:
        if name in measures:
            # counts BIGINT (Int64) as in preval.evaluate, rates DOUBLE (Float64)
            assert got[name].dtype == want[name].dtype, (name, got[name].dtype)
            diff = (got[name].cast(pl.Float64) - want[name]).abs().max()
            assert diff is not None and diff <= 1e-12, (name, diff)
        else:
            assert got[name].cast(pl.String).to_list() == want[name].cast(pl.String).to_list()


def local(data, qrels, kw) -> pl.DataFrame:
    return preval.evaluate(data, MEASURES, qrels=qrels, **kw).collect()


@pytest.mark.parametrize("case", CASES)
def test_duckdb_equals_local_engine(case) -> None:
    data, qrels, kw = CASES[case]
    con = duckdb.connect()
    con.register("results", data.to_arrow())
    if qrels is not None:
        con.register("judgments", qrels.to_arrow())
    text = preval.sql(MEASURES, table="results", qrels=None if qrels is None else "judgments",
                      dialect="duckdb", **kw)  # fmt: skip
    assert_close(con.sql(text).pl(), local(data, qrels, kw))


@pytest.fixture(scope="module")
def spark():
    return spark_session()


@pytest.mark.parametrize("case", ["joined-by-system", "qrels-by-system", "qrels-retrieved"])
def test_spark_sql_equals_local_engine(spark, case) -> None:
    data, qrels, kw = CASES[case]
    spark.createDataFrame(data.to_arrow()).createOrReplaceTempView("results")
    if qrels is not None:
        spark.createDataFrame(qrels.to_arrow()).createOrReplaceTempView("judgments")
    text = preval.sql(MEASURES, table="results", qrels=None if qrels is None else "judgments",
                      dialect="spark", **kw)  # fmt: skip
    got = pl.from_arrow(spark.sql(text).toArrow())
    assert isinstance(got, pl.DataFrame)
    assert_close(got, local(data, qrels, kw))


def test_hand_checked_ties_and_integer_doc_ids() -> None:
    # q1: all scores tie. trec_eval breaks ties by doc id descending as strings: "9" > "10" >
    # "1", so the ranking is 9 (rel), 10, 1 (rel): AP = (1 + 2/3) / 2, RR = 1, P@1 = 1.
    table = pl.DataFrame({"query": ["q1"] * 3, "doc": [1, 9, 10], "score": [0.5] * 3,
                          "label": [1, 1, 0]})  # fmt: skip
    text = preval.sql(["AP", "RR", "P@2"], table="t")
    con = duckdb.connect()
    con.register("t", table.to_arrow())
    got = con.sql(text).pl()
    want = preval.evaluate(table, ["AP", "RR", "P@2"]).collect()
    assert got.rows() == want.rows() == [("q1", (1 + 2 / 3) / 2, 1.0, 0.5)]


def test_measures_outside_sql_are_refused() -> None:
    with pytest.raises(preval.MeasureError, match="not available in SQL"):
        preval.sql(["AP", "Bpref"], table="t")
    with pytest.raises(preval.MeasureError, match="norm="):
        preval.sql(["AP(norm=min)@10"], table="t")
    with pytest.raises(preval.InputError, match="dialect"):
        preval.sql(["AP"], table="t", dialect="oracle")


def test_numpy_relevance_level_is_a_sql_number() -> None:
    # preval.evaluate takes numpy numbers as levels; the SQL wrote repr(np.float64(2.0)),
    # "np.float64(2.0)", which DuckDB read as a call to a function float64. Labels 2, 1:
    # at level 2 only the first document is relevant, AP = 1.
    table = pl.DataFrame({"query": ["q"] * 2, "doc": ["a", "b"], "score": [2.0, 1.0],
                          "label": [2, 1]})  # fmt: skip
    con = duckdb.connect()
    con.register("t", table.to_arrow())
    text = preval.sql(["AP", "P@2"], table="t", relevance_level=np.float64(2.0))
    assert con.sql(text).pl().rows() == [("q", 1.0, 0.5)]


def test_null_system_with_qrels_keeps_its_rows() -> None:
    # SQL does not reject null ids (docs/spark-and-sql.md); a null system is one group, as
    # in a joined table. The final join of judged queries to per-query rows compared keys
    # with =, which is never true for null: the null system's query scored 0 on every measure
    # (NumRet 0) though it was answered. Ranking: x (non-relevant), y (relevant): AP = 1/2.
    run = pl.DataFrame({"sys": [None, None], "query": ["a", "a"], "doc": ["x", "y"],
                        "score": [2.0, 1.0]}, schema_overrides={"sys": pl.String})  # fmt: skip
    qrels = pl.DataFrame({"query": ["a"], "doc": ["y"], "label": [1]})
    con = duckdb.connect()
    con.register("run", run.to_arrow())
    con.register("qrels", qrels.to_arrow())
    text = preval.sql(["AP", "NumRet"], table="run", qrels="qrels", by="sys")
    assert con.sql(text).pl().rows() == [(None, "a", 0.5, 2)]
    assert "IS NOT DISTINCT FROM" in preval.sql(["AP"], table="run", qrels="qrels", by="sys",
                                                dialect="spark")  # fmt: skip


def test_scores_beyond_float32_rank_as_infinity() -> None:
    # trec_eval 9 compares scores as float32: a double >= 2**128 - 2**103 (half a step above
    # float32's largest) rounds to inf, so 1e39 and 1e40 tie and the doc id decides: "x" before
    # "w". DuckDB's CAST(1e39 AS FLOAT) raised a conversion error instead.
    # Ranking x (rel), w, v (rel): AP = (1 + 2/3) / 2; trec_version=10 ranks w first: 5/12.
    table = pl.DataFrame({"query": ["q"] * 3, "doc": ["w", "x", "v"],
                          "score": [1e40, 1e39, -1e39], "label": [0, 1, 1]})  # fmt: skip
    con = duckdb.connect()
    con.register("t", table.to_arrow())
    for version, ap in ((9, (1 + 2 / 3) / 2), (10, (1 / 2 + 2 / 3) / 2)):
        text = preval.sql(["AP"], table="t", trec_version=version)
        want = preval.evaluate(table, ["AP"], trec_version=version).collect()
        assert con.sql(text).pl().rows() == want.rows() == [("q", pytest.approx(ap))]
    spark_text = preval.sql(["AP"], table="t", dialect="spark")
    assert "WHEN _s >= 3.4028235677973366e+38 THEN CAST('Infinity' AS DOUBLE)" in spark_text


def test_cli_prints_the_same_sql(capsys: pytest.CaptureFixture[str]) -> None:
    # `preval sql` is preval.sql's face on the command line: the same flags' options give the
    # same text, and a measure outside SQL is one line on stderr with exit code 2
    from preval.cli import main

    args = ["sql", "--table", "run", "--qrels", "qrels", "--by", "system", "--dialect",
            "spark", "-l", "2", "--queries", "retrieved", "-m", "AP", "-m", "P@10"]  # fmt: skip
    assert main(args) == 0
    out, _ = capsys.readouterr()
    want = preval.sql(["AP", "P@10"], table="run", qrels="qrels", by="system",
                      dialect="spark", relevance_level=2, queries="retrieved")  # fmt: skip
    assert out == want + "\n"
    assert main(["sql", "--table", "t", "-m", "Bpref"]) == 2
    _, err = capsys.readouterr()
    assert err.strip().splitlines() == [
        "preval: error: measure 'Bpref' is not available in SQL (SQL measures: AP, GMAP, RR, "
        "Rprec, P, R, nDCG, Success, NumRet, NumRel, NumRelRet, NumQ)"
    ]


@pytest.mark.parametrize(
    "kw",
    [{}, {"qrels": "j", "by": ["system", "v"], "queries": "retrieved", "relevance_level": 2},
     {"by": "s", "trec_version": 10}],
)  # fmt: skip
def test_spark_text_is_the_duckdb_text_but_for_quoting_and_string_type(kw) -> None:
    # the dialects differ in identifier quotes and the string type only, so a fix to one is
    # a fix to the other (the DuckDB text is what test_sql_parity checks against evaluate)
    duck = preval.sql(MEASURES, table="t", **kw)
    spark = preval.sql(MEASURES, table="t", dialect="spark", **kw)
    assert duck.replace('"', "`").replace("VARCHAR", "STRING") == spark
    assert '"' not in spark and "VARCHAR" not in spark
