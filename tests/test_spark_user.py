"""A data engineer's checks of preval's Spark face: `preval.spark.evaluate` / `summarize`,
`preval.sql(..., dialect="spark")` run in Spark SQL, `preval.spark.fuse`, and Parquet
directories written by Spark read by the CLI. The reference is always the local engine
(`preval.evaluate`, `preval.summarize`, `preval.fuse`) on the same rows. Random data is
few examples (each one costs Spark jobs) on one local[2] session for the module."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import preval
from tests import test_sql_parity as sql_parity  # its random tables with SQL's edge cases
from tests.spark_session import spark_session

pspark = pytest.importorskip("preval.spark", reason="pyspark is not installed (preval[spark])")

# few examples: each runs two or three Spark jobs on a shared two-core machine
FEW = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate],
)  # no shrinking: each try is a job

MEASURES = [
    "AP", "AP@3", "AP(rel=2)", "GMAP", "P@2", "P(rel=2)@3", "R@3", "RR", "RR@2", "Rprec",
    "nDCG", "nDCG@3", "Success@1", "Bpref", "infAP", "Judged@3", "SetP", "AUC-ROC",
    "NumRet", "NumRel", "NumRelRet", "NumNonrelJudgedRet", "NumQ",
]  # fmt: skip
# ties in float64 and only in float32 (0.1, 0.1 + 1e-12), -0.0 and 0.0, null (unretrieved)
SCORES = [None, 0.1, 0.1 + 1e-12, 0.5, 0.5, 0.0, -0.0, 2.0, -3.0]
LABELS = [None, -1, 0, 1, 2, 3]  # graded, negative, null (unjudged)
DOCS = ["1", "2", "9", "10", "11", "d", "D"]  # "9" > "10" as strings
OPTIONS = st.fixed_dictionaries({
    "ties": st.sampled_from(["trec", "optimistic", "pessimistic"]),
    "queries": st.sampled_from(["judged", "retrieved"]),
    "relevance_level": st.sampled_from([1, 2]),
    "depth": st.sampled_from([None, 3]),
})  # fmt: skip


@pytest.fixture(scope="module")
def spark():
    return spark_session()


def to_spark(spark, frame: pl.DataFrame):
    return spark.createDataFrame(frame.to_arrow())


def collected(sdf) -> pl.DataFrame:
    frame = pl.from_arrow(sdf.toArrow())
    assert isinstance(frame, pl.DataFrame)
    return frame


def assert_same_table(got: pl.DataFrame, want: pl.DataFrame, keys: list[str]) -> None:
    """Same columns, dtypes and keys; numbers equal to 1e-12 (nulls and NaNs alike)."""
    assert got.schema == want.schema
    got, want = got.sort(keys, nulls_last=True), want.sort(keys, nulls_last=True)
    assert got.select(keys).rows() == want.select(keys).rows()
    for name in want.columns:
        if name in keys:
            continue
        for g, w in zip(got[name].to_list(), want[name].to_list(), strict=True):
            if w is None or (isinstance(w, float) and math.isnan(w)):
                assert g is None or math.isnan(g), (name, g, w)
            else:
                assert g == pytest.approx(w, rel=1e-12, abs=1e-12), (name, g, w)


@st.composite
def joined_tables(draw) -> pl.DataFrame:
    """(system, team, query, doc, score, label), unique per (system, query, doc); ids as
    integers or strings."""
    int_queries, int_docs = draw(st.booleans()), draw(st.booleans())
    docs = DOCS[:5] if int_docs else DOCS
    rows = []
    for system in draw(st.sets(st.sampled_from("abc"), min_size=1, max_size=3)):
        for q in draw(st.sets(st.integers(1, 5), max_size=4)):
            for d in draw(st.sets(st.sampled_from(docs), max_size=len(docs))):
                score, label = draw(st.sampled_from(SCORES)), draw(st.sampled_from(LABELS))
                rows.append((system, q % 2, q if int_queries else f"q{q}", d, score, label))
    schema = {"system": pl.String, "team": pl.Int32,
              "query": pl.Int64 if int_queries else pl.String, "doc": pl.String,
              "score": pl.Float64, "label": pl.Int64}  # fmt: skip
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.with_columns(pl.col("doc").cast(pl.Int64)) if int_docs else frame


@st.composite
def runs_and_qrels(draw) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run (system, query, doc, score) of several systems and judgments (query, doc,
    label): judged queries no system answered, answered queries without judgments,
    unjudged retrieved and unretrieved judged documents; query ids integers or strings,
    on each side independently (the local engine joins them as strings)."""
    run_int, qrels_int = draw(st.booleans()), draw(st.booleans())
    run, qrels = [], []
    for system in draw(st.sets(st.sampled_from("abc"), min_size=1, max_size=3)):
        for q in draw(st.sets(st.integers(1, 5), max_size=4)):
            for d in draw(st.sets(st.sampled_from(DOCS), max_size=len(DOCS))):
                run.append((system, q if run_int else str(q), d, draw(st.sampled_from(SCORES))))
    for q in draw(st.sets(st.integers(1, 6), max_size=5)):
        for d in draw(st.sets(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS))):
            label = draw(st.sampled_from(LABELS[1:]))
            qrels.append((q if qrels_int else str(q), d, label))
    run_schema = {"system": pl.String, "query": pl.Int64 if run_int else pl.String,
                  "doc": pl.String, "score": pl.Float64}  # fmt: skip
    qrels_schema = {"query": pl.Int64 if qrels_int else pl.String, "doc": pl.String,
                    "label": pl.Int64}  # fmt: skip
    return (pl.DataFrame(run, schema=run_schema, orient="row"),
            pl.DataFrame(qrels, schema=qrels_schema, orient="row"))  # fmt: skip


def check_evaluate(spark, data, qrels, by, options, buckets) -> None:
    """Spark's per-query table and summary equal the local engine's."""
    want = preval.evaluate(data, MEASURES, qrels=qrels, by=by, **options)
    sdf = pspark.evaluate(to_spark(spark, data), MEASURES, by=by, num_buckets=buckets,
                          qrels=None if qrels is None else to_spark(spark, qrels),
                          **options)  # fmt: skip
    want_pq = want.collect()
    keys = [*([by] if isinstance(by, str) else by), "query"]
    assert_same_table(collected(sdf), want_pq, keys)
    # the schema Spark declares (before any job) is the local table's too, and the one the
    # docs promise: a long for a count, else a double; ids and keys keep their types
    assert collected(sdf.limit(0)).schema == want_pq.schema
    declared = dict(sdf.dtypes)
    for m in MEASURES:
        assert declared[m] == ("bigint" if preval.measures.parse(m).is_count else "double"), m
    spark_type = {pl.Int64: "bigint", pl.String: "string"}  # (with qrels, as local joins them)
    assert declared["query"] == spark_type[want_pq.schema["query"]]
    got_summary = collected(pspark.summarize(sdf))
    assert_same_table(got_summary, preval.summarize(want_pq).collect(), keys[:-1])


@FEW
@given(data=joined_tables(), options=OPTIONS, by=st.sampled_from([["system"], ["system", "team"]]),
       buckets=st.integers(1, 4))  # fmt: skip
def test_joined_table_random(spark, data, options, by, buckets) -> None:
    check_evaluate(spark, data, None, by, options, buckets)


@FEW
@given(tables=runs_and_qrels(), options=OPTIONS, buckets=st.integers(1, 4))
def test_run_and_qrels_random(spark, tables, options, buckets) -> None:
    run, qrels = tables
    check_evaluate(spark, run, qrels, "system", options, buckets)


@pytest.mark.parametrize("dtype", [pl.Int64, pl.Int32])
def test_integer_query_ids_with_a_system_missing_from_a_bucket(spark, dtype) -> None:
    # B answers q1 only, so with q1 and q2 in separate buckets, q2's bucket lacks B and the
    # kernel makes up a query id for it: with integer ids it compared the largest id with
    # `dtype.max()`, a Polars expression, and the job failed ("the truth value of an Expr is
    # ambiguous"). The local engine scores B's unanswered q2 as 0.
    run = pl.DataFrame({"system": ["A", "A", "B"], "query": [1, 2, 1], "doc": ["x", "y", "x"],
                        "score": [1.0, 1.0, 1.0]}, schema_overrides={"query": dtype})  # fmt: skip
    qrels = pl.DataFrame({"query": [1, 2], "doc": ["x", "y"], "label": [1, 1]},
                         schema_overrides={"query": dtype})  # fmt: skip
    from pyspark.sql import functions as F

    from preval.spark_arrow import _bucket

    ids = spark.createDataFrame([(1,), (2,)], f"query {'int' if dtype == pl.Int32 else 'long'}")
    placed = collected(
        ids.select(*[_bucket(F.col("query"), b).alias(str(b)) for b in range(2, 64)])
    )
    buckets = next(int(b) for b in placed.columns if placed[b].n_unique() == 2)  # one job
    want = preval.evaluate(run, ["AP", "NumRet"], qrels=qrels, by="system").collect()
    got = pspark.evaluate(to_spark(spark, run), ["AP", "NumRet"], qrels=to_spark(spark, qrels),
                          by="system", num_buckets=buckets)  # fmt: skip
    assert_same_table(collected(got), want, ["system", "query"])
    assert want.rows() == [("A", 1, 1.0, 1), ("A", 2, 1.0, 1), ("B", 1, 1.0, 1), ("B", 2, 0.0, 0)]


# --- preval.sql(..., dialect="spark") run in Spark SQL ------------------------------------------


def spark_sql_summary(view: str, measures: list[str], by: str) -> str:
    """The summary as docs/spark-and-sql.md writes it: means, summed counts, GMAP floored."""
    parts = []
    for m in measures:
        spec = preval.measures.parse(m)
        if spec.is_count:
            parts.append(f"SUM(`{m}`) AS `{m}`")
        elif m == "GMAP":
            parts.append("EXP(AVG(LN(GREATEST(`GMAP`, 1e-5)))) AS `GMAP`")
        else:
            parts.append(f"AVG(`{m}`) AS `{m}`")
    return f"SELECT {by}, {', '.join(parts)} FROM {view} GROUP BY {by} ORDER BY {by}"


def check_spark_sql(
    spark, data: pl.DataFrame, qrels: pl.DataFrame | None, options: dict, ansi: bool
) -> None:
    # the docs say the text runs in ANSI mode (Spark 4's default) or not
    spark.conf.set("spark.sql.ansi.enabled", str(ansi).lower())
    try:
        _check_spark_sql(spark, data, qrels, options)
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")


def _check_spark_sql(spark, data: pl.DataFrame, qrels: pl.DataFrame | None, options: dict) -> None:
    if options["by"] is None:
        data = data.filter(pl.col("system") == "a").drop("system")
    text = preval.sql(sql_parity.MEASURES, table="results", dialect="spark",
                      qrels=None if qrels is None else "judgments", **options)  # fmt: skip
    to_spark(spark, data).createOrReplaceTempView("results")
    if qrels is not None:
        to_spark(spark, qrels).createOrReplaceTempView("judgments")
    got = collected(spark.sql(text))
    want = preval.evaluate(data, sql_parity.MEASURES, qrels=qrels, **options).collect()
    if options["by"] is None:
        got, want = (df.select(pl.lit("a").alias("system"), pl.all()) for df in (got, want))
    # SQL gives string query ids with qrels= (documented): compare them as strings
    got, want = (df.with_columns(pl.col("query").cast(pl.String)) for df in (got, want))
    assert_same_table(got, want, ["system", "query"])
    to_spark(spark, got).createOrReplaceTempView("per_query")
    summary = collected(spark.sql(spark_sql_summary("per_query", sql_parity.MEASURES, "system")))
    expected = preval.summarize(want, by="system").collect().sort("system")
    assert summary["system"].to_list() == expected["system"].to_list()
    for m in sql_parity.MEASURES:
        assert summary[m].to_list() == pytest.approx(expected[m].to_list(), rel=1e-12), m


@FEW
@given(data=sql_parity.joined_tables(), options=sql_parity.OPTIONS, ansi=st.booleans())
def test_spark_sql_joined_table_random(spark, data, options, ansi) -> None:
    check_spark_sql(spark, data, None, options, ansi)


@FEW
@given(tables=sql_parity.runs_and_qrels(), options=sql_parity.OPTIONS, ansi=st.booleans())
def test_spark_sql_run_and_qrels_random(spark, tables, options, ansi) -> None:
    check_spark_sql(spark, *tables, options, ansi)


def test_cli_spark_sql_runs_in_spark(spark, capsys: pytest.CaptureFixture[str]) -> None:
    # `preval sql --dialect spark` prints text that Spark SQL runs, to evaluate's numbers
    from pathlib import Path

    from preval.cli import main

    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    run = pl.read_csv(fixtures / "example_run.csv", schema_overrides={"query": pl.String})
    qrels = pl.read_csv(fixtures / "example_qrels.csv", schema_overrides={"query": pl.String})
    run = run.filter(pl.col("query") < "q040")  # small
    to_spark(spark, run).createOrReplaceTempView("run")
    to_spark(spark, qrels).createOrReplaceTempView("qrels")
    args = ["sql", "--table", "run", "--qrels", "qrels", "--by", "system", "--dialect", "spark",
            "-l", "2", "--queries", "retrieved", "-m", "map", "-m", "P_10", "-m", "ndcg_cut_10",
            "-m", "num_rel"]  # fmt: skip
    assert main(args) == 0
    text = capsys.readouterr().out
    got = collected(spark.sql(text))
    measures = ["map", "P_10", "ndcg_cut_10", "num_rel"]
    want = preval.evaluate(run, measures, qrels=qrels, by="system", relevance_level=2,
                           queries="retrieved").collect()  # fmt: skip
    assert got.height == want.height > 0
    assert_same_table(got, want, ["system", "query"])


# --- bad input through the Spark face -----------------------------------------------------------


def spark_error(action) -> str:
    """The preval message inside the Spark job's failure (the worker's last error line)."""
    with pytest.raises(Exception) as info:  # a PythonException around preval's error
        action()
    text = str(info.value)
    start = text.rfind("preval.errors.")
    assert start >= 0, text[-2000:]
    return text[start:].splitlines()[0].split(": ", 1)[1]


def local_error(action) -> str:
    with pytest.raises(preval.PrevalError) as info:
        action()
    return str(info.value)


RUN = pl.DataFrame({"system": ["a", "a", "b", "b"], "query": ["1", "1", "2", "2"],
                    "doc": ["x", "y", "x", "y"], "score": [1.0, 2.0, 3.0, 2.0]})  # fmt: skip
QRELS = pl.DataFrame({"query": ["1", "1", "2"], "doc": ["x", "y", "x"], "label": [1, 0, 2]})
NAN = pl.when(pl.col("doc") == "y").then(float("nan"))
NULL_ID = pl.when(pl.col("doc") == "y").then(None)
BAD_INPUTS = {
    "duplicate run row": (pl.concat([RUN, RUN.head(1)]), QRELS),
    "NaN score": (RUN.with_columns(NAN.otherwise(pl.col("score")).alias("score")), QRELS),
    "null query id": (RUN.with_columns(NULL_ID.otherwise(pl.col("query")).alias("query")), QRELS),
    "null doc id": (RUN.with_columns(NULL_ID.otherwise(pl.col("doc")).alias("doc")), QRELS),
    "duplicate qrels row": (RUN, pl.concat([QRELS, QRELS.head(1)])),
    "null qrels label": (RUN, QRELS.with_columns(pl.lit(None, pl.Int64).alias("label"))),
    "NaN qrels label": (RUN, QRELS.with_columns(NAN.otherwise(pl.col("label")).alias("label"))),
    "null qrels query": (RUN, QRELS.with_columns(NULL_ID.otherwise("query").alias("query"))),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_data_fails_the_job_with_the_local_message(spark, case) -> None:
    # one bucket: the worker sees the whole table, so the message (rule, count, example) is
    # the local engine's word for word
    run, qrels = BAD_INPUTS[case]
    want = local_error(lambda: preval.evaluate(run, ["AP"], qrels=qrels, by="system").collect())
    sdf = pspark.evaluate(to_spark(spark, run), ["AP"], qrels=to_spark(spark, qrels),
                          by="system", num_buckets=1)  # fmt: skip
    assert spark_error(sdf.collect) == want


def test_bad_columns_raise_on_the_driver_as_locally(spark) -> None:
    # the message about a missing column listed the columns Spark had selected ("columns
    # present: query, doc"), not the input's (system, query, doc)
    for run, qrels in ((RUN.drop("score"), QRELS), (RUN, QRELS.drop("label")),
                       (RUN.with_columns(pl.col("score").cast(pl.String)), QRELS)):  # fmt: skip
        want = local_error(lambda r=run, q=qrels: preval.evaluate(r, ["AP"], qrels=q))
        got = local_error(
            lambda r=run, q=qrels: pspark.evaluate(to_spark(spark, r), ["AP"],
                                                   qrels=to_spark(spark, q), num_buckets=1)
        )  # fmt: skip
        assert got == want


def test_a_count_from_one_of_several_buckets_says_so(spark) -> None:
    # 20 queries, each with one document twice: the local engine counts 40 rows. A worker
    # counts the rows of its own bucket of queries; the message gave that count as the
    # table's ("input: 10 rows repeat ..."), a wrong number in an error message. It now says
    # that the count is one bucket's.
    table = pl.DataFrame({"query": [f"q{i}" for i in range(20)] * 2, "doc": ["x"] * 40,
                          "score": [1.0] * 40, "label": [1] * 40})  # fmt: skip
    assert "input: 40 rows repeat" in local_error(lambda: preval.evaluate(table, ["AP"]).collect())
    message = spark_error(pspark.evaluate(to_spark(spark, table), ["AP"], num_buckets=4).collect)
    assert "rows repeat a (query, doc) pair" in message
    assert message.endswith(
        "(counted in the one bucket of whole queries, of 4, that failed: the table may hold more)"
    )


# --- fusion inside Spark against preval.fuse ----------------------------------------------------


def fusion_runs(seed: int) -> list[pl.DataFrame]:
    """Three runs with tied scores (a few integer values), runs missing some queries."""
    import numpy as np

    rng = np.random.default_rng(seed)
    runs = []
    for r in range(3):
        rows = [
            (f"q{q}", f"d{d}", float(rng.integers(0, 4)))
            for q in range(8 - r)
            for d in rng.choice(12, size=int(rng.integers(1, 9)), replace=False)
        ]
        runs.append(pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row"))
    return runs


FUSIONS = [("rrf", None), ("comb_sum", None), ("comb_mnz", "min-max"), ("comb_sum", "min-max")]


@pytest.mark.parametrize(("method", "norm"), FUSIONS)
def test_spark_fusion_equals_preval_fuse(spark, method, norm) -> None:
    runs = fusion_runs(7)
    want = preval.fuse(runs, method, norm, ties="trec").collect().sort("query", "rank")
    got = collected(pspark.fuse([to_spark(spark, r) for r in runs], method, norm, ties="trec",
                                num_buckets=3)).sort("query", "rank")  # fmt: skip
    assert got.columns == want.columns == ["query", "doc", "score", "rank"]
    assert got.schema["rank"] == pl.Int64  # documented: a long (Spark has no unsigned type)
    assert got.select("query", "doc").rows() == want.select("query", "doc").rows()
    assert got["rank"].to_list() == want["rank"].to_list()
    assert (got["score"] - want["score"]).abs().max() <= 1e-12


def test_spark_fusion_bad_run_is_named_as_locally(spark) -> None:
    # a run given in a dict is named by its key in preval.fuse's messages; the Spark kernel
    # got the runs as a list and said "in run run1" for the run named "bad"
    good, bad = fusion_runs(1)[:2]
    bad = pl.concat([bad, bad.head(1)])
    want = local_error(lambda: preval.fuse({"good": good, "bad": bad}, "rrf").collect())
    assert "in run bad " in want
    fused = pspark.fuse({"good": to_spark(spark, good), "bad": to_spark(spark, bad)}, "rrf",
                        num_buckets=1)  # fmt: skip
    assert spark_error(fused.collect) == want
    # several buckets: the count is the failing bucket's, and the message says so
    nan = bad.with_columns(pl.lit(float("nan")).alias("score"))
    fused = pspark.fuse([to_spark(spark, good), to_spark(spark, nan)], "rrf", num_buckets=3)
    message = spark_error(fused.collect)
    assert message.startswith("run 1: column 'score' is NaN in ")
    assert message.endswith("of 3, that failed: the table may hold more)")


# --- Parquet directories written by Spark, read by the CLI --------------------------------------


def test_cli_reads_a_spark_directory_with_hive_partitions(spark, tmp_path) -> None:
    # Spark writes part files, _SUCCESS, .crc files and system=.../query=.../ folders (values
    # escaped: "bm 25/x" is system=bm 25%2Fx). The partition values reach the system and
    # query columns as the strings they were: "007" was read as the integer 7, which the
    # qrels' "007" did not match, and every query scored 0 with no error.
    from preval.cli import main

    run = pl.DataFrame({
        "system": ["bm 25/x", "bm 25/x", "bm 25/x", "01", "01", "1"],
        "query": ["007", "007", "010", "007", "010", "010"],
        "doc": ["a", "b", "c", "b", "a", "c"], "score": [2.0, 1.0, 1.0, 3.0, 1.0, 2.0],
    })  # fmt: skip
    qrels = pl.DataFrame({"query": ["007", "007", "010"], "doc": ["a", "b", "c"],
                          "label": [1, 0, 2]})  # fmt: skip
    folder = tmp_path / "run"
    to_spark(spark, run).write.partitionBy("system", "query").parquet(str(folder))
    assert (folder / "_SUCCESS").exists() and (folder / "system=bm 25%2Fx" / "query=007").is_dir()
    qrels.write_csv(tmp_path / "qrels.csv")
    out = tmp_path / "per_query.parquet"
    args = ["evaluate", str(folder), "--qrels", str(tmp_path / "qrels.csv"), "--by", "system",
            "-m", "AP", "-m", "NumRelRet", "--per-query", str(out), "--summary", "-"]  # fmt: skip
    assert main(args) == 0
    want = preval.evaluate(run, ["AP", "NumRelRet"], qrels=qrels, by="system").collect()
    assert_same_table(pl.read_parquet(out), want, ["system", "query"])
    # hand-checked, systems "01", "1", "bm 25/x" by query: 01 ranks b (not relevant) first
    # for 007 and lacks c for 010; 1 did not answer 007; bm 25/x ranks a, then c, first
    assert want["AP"].to_list() == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]


def test_null_system_is_refused_with_a_real_example(spark) -> None:
    # with qrels, a bucket without some system gets one made-up row (query 'q3~preval') so
    # that the local engine scores that system's unanswered queries 0; for the null system
    # that row was itself refused, and the job's message gave the made-up query as the
    # example of a null system. Only q1's bucket (the real null row) fails now.
    run = pl.DataFrame({"system": [None, "A", "A", "A", "A"],
                        "query": ["q1", "q1", "q2", "q3", "q4"], "doc": ["x"] * 5,
                        "score": [1.0] * 5}, schema_overrides={"system": pl.String})  # fmt: skip
    qrels = pl.DataFrame({"query": ["q1", "q2", "q3", "q4"], "doc": ["x"] * 4, "label": [1] * 4})
    want = local_error(lambda: preval.evaluate(run, ["AP"], qrels=qrels, by="system").collect())
    assert want.endswith("example: query 'q1', doc 'x'")
    sdf = pspark.evaluate(to_spark(spark, run), ["AP"], qrels=to_spark(spark, qrels),
                          by="system", num_buckets=8)  # (q1 alone in its bucket)  # fmt: skip
    message = spark_error(sdf.collect)
    assert "~preval" not in message
    assert message.startswith(want + " (counted in the one bucket")
