"""Measures of your own (`preval.define_measure`): equal to a plain-Python reference in every
engine and on Spark, in the grammar (parse, did-you-mean, `preval measures`), in summaries and
comparisons, and refused with one clear line when the name or the function is wrong.

The references below share no code with preval: they rank each (system, query)'s documents by
score (scores are distinct, so no tie rule is involved) and compute the values with Python
arithmetic on lists.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import preval
from preval.engines.chunked import collect_chunked
from preval.engines.partitioned import collect_partitioned
from preval.measures import Param

K = 5


# -- the measures under test, module-level so that Spark's workers import them by reference --
def discounted_precision(q: preval.RankedQuery) -> pl.Expr:
    """Sum of 1/rank^p over the relevant documents in the top k."""
    weight = pl.lit(1.0) / q.rank.cast(pl.Float64).pow(q.param("p"))
    return q.top(pl.when(q.relevant).then(weight).otherwise(0.0)).sum()


def my_ndcg(q: preval.RankedQuery) -> pl.Expr:
    """nDCG@k from the contract: DCG of the top k over the ideal DCG at k."""
    dcg = q.top(q.gain / (q.rank + 1).cast(pl.Float64).log(2)).sum()
    return q.safe_div(dcg, q.ideal_dcg)


def unjudged_retrieved(q: preval.RankedQuery) -> pl.Expr:
    """Unjudged documents in the top k (a count, summed in summaries)."""
    return q.top(q.label.is_null()).sum()


def precision_over_r(q: preval.RankedQuery) -> pl.Expr:
    """tp(k) / (fp(k) + R): reads tp, fp and R."""
    last_tp = q.top(q.tp).max().fill_null(0)
    last_fp = q.top(q.fp).max().fill_null(0)
    return q.safe_div(last_tp, last_fp + q.num_rel)


DEFINED = {
    "DiscP": dict(fn=discounted_precision, params={"p": 1.0}),
    "MyNDCG": dict(fn=my_ndcg, cutoff="required"),
    "UnjRet": dict(fn=unjudged_retrieved, summary="sum"),
    "TPoverFPR": dict(fn=precision_over_r),
}
MEASURES = ["DiscP@5", "DiscP(p=2)@5", "DiscP", "MyNDCG@5", "UnjRet@5", "TPoverFPR@5",
            "nDCG@5"]  # fmt: skip


def define_all() -> None:
    for name, kw in DEFINED.items():
        preval.define_measure(name, replace=True, **kw)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def measures():
    define_all()
    yield
    for name in DEFINED:
        if name in preval.CATALOGUE:
            preval.remove_measure(name)


# -- data and the plain-Python reference ---------------------------------------------------
def make_data(seed: int = 7) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = random.Random(seed)
    qrels, run = [], []
    for q in range(12):
        pool = [f"d{q}_{i}" for i in range(15)]
        if q != 11:  # query 11 is judged by nobody: never evaluated
            qrels += [(f"q{q}", d, rng.choice([0, 0, 1, 2])) for d in rng.sample(pool, 9)]
        for system in ("A", "B", "C"):
            if system == "C" and q in (3, 4):  # judged queries C did not answer: placeholders
                continue
            docs = rng.sample(pool, rng.randint(1, 12))
            scores = rng.sample(range(1000), len(docs))  # distinct: no ties
            run += [(system, f"q{q}", d, s / 7.0) for d, s in zip(docs, scores, strict=True)]
    qrels_df = pl.DataFrame(qrels, schema=["query", "doc", "label"], orient="row")
    run_df = pl.DataFrame(run, schema=["system", "query", "doc", "score"], orient="row")
    return run_df, qrels_df


def reference(run: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    labels: dict[str, dict[str, int]] = defaultdict(dict)
    for q, d, lab in qrels.iter_rows():
        labels[q][d] = lab
    ranked: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for system, q, d, s in run.iter_rows():
        ranked[(system, q)].append((s, d))
    out = []
    for system in sorted(set(run["system"])):
        for q in sorted(labels):
            docs = [d for _, d in sorted(ranked.get((system, q), []), reverse=True)]
            lab = [labels[q].get(d) for d in docs]
            rel = [x is not None and x >= 1 for x in lab]
            R = sum(1 for x in labels[q].values() if x >= 1)

            def disc(p: float, k: int | None, rel: list[bool] = rel) -> float:
                return sum(1 / (i + 1) ** p for i, r in enumerate(rel[:k]) if r)

            gains = [max(x or 0, 0) for x in lab]
            dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:K]))
            ideal = sorted(labels[q].values(), reverse=True)[:K]
            idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal) if g > 0)
            tp, fp = sum(rel[:K]), len(rel[:K]) - sum(rel[:K])
            out.append({
                "system": system, "query": q,
                "DiscP@5": disc(1.0, K), "DiscP(p=2)@5": disc(2.0, K), "DiscP": disc(1.0, None),
                "MyNDCG@5": dcg / idcg if idcg > 0 else 0.0,
                "UnjRet@5": sum(1 for x in lab[:K] if x is None),
                "TPoverFPR@5": tp / (fp + R) if fp + R > 0 else 0.0,
                "nDCG@5": dcg / idcg if idcg > 0 else 0.0,
            })  # fmt: skip
    return pl.DataFrame(out).with_columns(pl.col("UnjRet@5").cast(pl.Int64))


RUN, QRELS = make_data()
WANT = reference(RUN, QRELS)


def close(got: pl.DataFrame, want: pl.DataFrame = WANT) -> None:
    assert_frame_equal(got.sort("system", "query"), want, check_exact=False, rel_tol=1e-12)


def test_equals_the_reference_with_separate_qrels() -> None:
    close(preval.evaluate(RUN, MEASURES, qrels=QRELS, by="system").collect())


def test_equals_the_reference_on_one_joined_table() -> None:
    # the joined table: each system's rows with labels, plus its unretrieved judged documents
    systems = RUN.select("system").unique()
    judged = systems.join(QRELS, how="cross")
    table = RUN.join(judged, on=["system", "query", "doc"], how="full", coalesce=True)
    close(preval.evaluate(table, MEASURES, by="system").collect())


@pytest.mark.parametrize("engine", ["in-memory", "streaming", "chunked", "partitioned"])
def test_every_engine(engine: str) -> None:
    plan = preval.plan(RUN, MEASURES, qrels=QRELS, by="system")
    close(preval.collect(plan, engine=engine).per_query().collect())


def test_small_chunks_and_spilled_buckets() -> None:
    plan = preval.plan(RUN, MEASURES, qrels=QRELS, by="system")
    # (the collected plan holds its spill directory: keep it while reading)
    chunked = collect_chunked(plan, chunk_rows=7)
    close(chunked.per_query().collect())
    spilled = collect_partitioned(plan, buckets=3, chunk_rows=20)
    close(spilled.per_query().collect())


def test_summaries_and_comparisons_read_them_as_measures() -> None:
    per_query = preval.evaluate(RUN, MEASURES, qrels=QRELS, by="system")
    summary = preval.summarize(per_query, by="system").collect().sort("system")
    want = WANT.group_by("system").agg(
        pl.col("DiscP@5").mean(), pl.col("UnjRet@5").sum()
    ).sort("system")  # fmt: skip
    assert summary["UnjRet@5"].dtype == pl.Int64  # summary="sum": a count, summed
    assert summary["UnjRet@5"].to_list() == want["UnjRet@5"].to_list()
    assert summary["DiscP@5"].to_list() == pytest.approx(want["DiscP@5"].to_list(), rel=1e-12)
    table = preval.compare(per_query, measures=["DiscP@5"], by="system")
    assert set(table["measure"]) == {"DiscP@5"}
    assert table.height == 3  # the pairs of A, B and C


def test_in_the_grammar_and_the_catalogue(capsys) -> None:
    spec = preval.parse("discp( p = 2 )@10")  # names are read case-blind, as the others
    assert spec.name == "DiscP(p=2)@10"
    assert preval.parse("DiscP(p=1)@10").name == "DiscP@10"  # the default drops out
    assert preval.parse("DiscP(rel=2)@10").name == "DiscP(rel=2)@10"
    from preval.cli import main

    assert main(["measures"]) == 0
    listed = capsys.readouterr().out
    assert "DiscP(rel=,p=)[@K]" in listed
    assert "Sum of 1/rank^p" in listed
    assert "MyNDCG(rel=)@K" in listed


@pytest.mark.parametrize(
    ("request_", "says"),
    [
        ("DiscPP@5", "did you mean 'DiscP@5'?"),
        ("DiscP5", "did you mean 'DiscP@5'?"),
        ("DiscP(q=2)@5", "DiscP takes (rel, p)"),
        ("DiscP(p=x)@5", "bad value for p"),
        ("MyNDCG", "MyNDCG needs a cutoff"),
    ],
)
def test_misspelled_requests_get_the_usual_messages(request_: str, says: str) -> None:
    with pytest.raises(preval.MeasureError, match=None) as err:
        preval.parse(request_)
    assert says in str(err.value)


def test_names_that_clash_or_do_not_parse_are_refused() -> None:
    fn = discounted_precision
    for name, says in [
        ("AP", "the name of the measure 'AP'"),
        ("map", "an alias of the measure 'AP'"),
        ("ndcg_cut", "an alias of the measure 'nDCG'"),
        ("Hits10", "not ending in a digit"),
        ("my measure", "expected a letter"),
        ("P@5", "expected a letter"),
    ]:
        with pytest.raises(preval.MeasureError) as err:
            preval.define_measure(name, fn)
        assert says in str(err.value), (name, str(err.value))
    with pytest.raises(preval.MeasureError, match="built in: it cannot be replaced"):
        preval.define_measure("AP", fn, replace=True)
    with pytest.raises(preval.MeasureError, match="cannot remove 'AP': a built-in"):
        preval.remove_measure("AP")
    with pytest.raises(preval.MeasureError, match="summary must be one of"):
        preval.define_measure("Other", fn, summary="median")
    with pytest.raises(
        preval.MeasureError, match=r"rel \(the relevance level\) is a parameter of every"
    ):
        preval.define_measure("Other", fn, params={"rel": 2.0})
    with pytest.raises(preval.MeasureError, match="must be a float, int, bool or str"):
        preval.define_measure("Other", fn, params={"p": [1]})
    assert "Other" not in preval.CATALOGUE


def test_redefinition_needs_replace() -> None:
    with pytest.raises(preval.MeasureError, match="already defined: pass replace=True"):
        preval.define_measure("DiscP", discounted_precision)

    def twice(q: preval.RankedQuery) -> pl.Expr:
        return 2 * discounted_precision(q)

    preval.define_measure("DiscP", twice, params={"p": 1.0}, replace=True)
    got = preval.evaluate(RUN, ["DiscP@5"], qrels=QRELS, by="system").collect()
    assert got["DiscP@5"].to_list() == pytest.approx((2 * WANT["DiscP@5"]).to_list())


def test_a_function_that_does_not_return_an_expression() -> None:
    # refused at definition: the probe request (default parameters) returns a number
    with pytest.raises(preval.MeasureError, match="Bad: its function returned float"):
        preval.define_measure("Bad", lambda q: 0.5)
    assert "Bad" not in preval.CATALOGUE

    # a function that returns an expression on the probe only: refused at its first use,
    # naming the measure
    def odd(q: preval.RankedQuery) -> pl.Expr:
        return q.top(q.rank).sum() if q.param("p") == 1 else None  # type: ignore[return-value]

    preval.define_measure("Odd", odd, params={"p": 1})
    try:
        with pytest.raises(preval.MeasureError, match="Odd: its function returned NoneType"):
            preval.evaluate(RUN, ["Odd(p=2)@5"], qrels=QRELS, by="system")
    finally:
        preval.remove_measure("Odd")


def test_params_of_every_type_and_a_param_object() -> None:
    def flagged(q: preval.RankedQuery) -> pl.Expr:
        base = q.top(q.relevant).sum().cast(pl.Float64) * q.param("scale")
        return base + (100.0 if q.param("flag") else 0.0) + len(q.param("tag"))

    positive = Param(float, 1.0, help="scale")
    preval.define_measure(
        "Flagged", flagged, params={"scale": positive, "flag": False, "tag": "ab"}
    )
    try:
        got = preval.evaluate(
            RUN, ["Flagged(scale=0.5,flag=true,tag=xyz)@5"], qrels=QRELS, by="system"
        ).collect()
        assert got.height == WANT.height
        first = got.sort("system", "query").row(0, named=True)
        # A, q0: hits in the top 5 from the reference's own ranking
        ranked = RUN.filter(system="A", query="q0").sort("score", descending=True).head(K)
        rel = QRELS.filter(pl.col("query") == "q0", pl.col("label") >= 1)["doc"].to_list()
        n = sum(d in rel for d in ranked["doc"])
        assert first["Flagged(flag=true,scale=0.5,tag=xyz)@5"] == 0.5 * n + 100 + 3
    finally:
        preval.remove_measure("Flagged")


def test_expected_ties_refuse_a_custom_measure() -> None:
    with pytest.raises(preval.MeasureError, match="no closed form under ties='expected'"):
        preval.evaluate(RUN, ["DiscP@5"], qrels=QRELS, by="system", ties="expected").collect()


# -- Spark ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark", reason="pyspark is not installed (preval[spark])")
    from tests.spark_session import spark_session

    return spark_session()


def test_spark_ships_the_definitions(spark) -> None:
    pspark = pytest.importorskip("preval.spark")

    # a measure defined inside the test: no module on the workers has it, so it travels
    # with the job (pickled by value) and is registered there before the bucket is evaluated
    def local_only(q: preval.RankedQuery) -> pl.Expr:
        return q.top(q.relevant.cast(pl.Float64) * 3.0).sum()

    preval.define_measure("LocalOnly", local_only)
    try:
        measures = [*MEASURES, "LocalOnly@5"]
        sdf = pspark.evaluate(
            spark.createDataFrame(RUN.to_arrow()),
            measures,
            qrels=spark.createDataFrame(QRELS.to_arrow()),
            by="system",
            num_buckets=3,
        )
        got = pl.from_arrow(sdf.toArrow())
        assert isinstance(got, pl.DataFrame)
        want = preval.evaluate(RUN, measures, qrels=QRELS, by="system").collect()
        assert_frame_equal(got.sort("system", "query"), want, check_exact=True)
        close(got.drop("LocalOnly@5"))
        summary = pl.from_arrow(pspark.summarize(sdf, by="system").toArrow())
        assert "DiscP@5" in summary.columns
    finally:
        preval.remove_measure("LocalOnly")
