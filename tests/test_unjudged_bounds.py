"""Unjudged documents counted relevant or not (the `unjudged_label` option) and the bounds it gives
(`preval.bounds`, ``preval evaluate --bounds``): against a plain-Python reference that relabels
the unjudged retrieved documents and computes AP, P@k, nDCG@k and R by hand, in every engine;
and properties over random runs (hypothesis) for the measures where a bound must hold.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import preval
from preval.engines.chunked import collect_chunked
from preval.engines.partitioned import collect_partitioned

K = 5
MEASURES = ["AP", "P@5", "nDCG@5", "NumRel", "R@5"]


def make_data(seed: int = 3) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = random.Random(seed)
    qrels, run = [], []
    for q in range(10):
        pool = [f"d{q}_{i}" for i in range(14)]
        if q != 9:  # query 9 has no judgment: never evaluated, relabelled or not
            qrels += [(f"q{q}", d, rng.choice([0, 1, 2])) for d in rng.sample(pool, 6)]
        for system in ("A", "B"):
            if system == "B" and q == 2:  # a judged query B did not answer: a placeholder
                continue
            docs = rng.sample(pool, rng.randint(1, 10))
            scores = rng.sample(range(1000), len(docs))  # distinct: no tie rule involved
            run += [(system, f"q{q}", d, s / 3.0) for d, s in zip(docs, scores, strict=True)]
    return (
        pl.DataFrame(run, schema=["system", "query", "doc", "score"], orient="row"),
        pl.DataFrame(qrels, schema=["query", "doc", "label"], orient="row"),
    )


def reference(run: pl.DataFrame, qrels: pl.DataFrame, unjudged: float | None) -> pl.DataFrame:
    """Relabel, then compute by hand: every retrieved document without a judgment in a judged
    query gets `unjudged` (None: stays unjudged, non-relevant, gain 0); R and the ideal DCG
    then count it, for this system's ranking."""
    judged: dict[str, dict[str, float]] = defaultdict(dict)
    for q, d, lab in qrels.iter_rows():
        judged[q][d] = lab
    ranked: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for system, q, d, s in run.iter_rows():
        ranked[(system, q)].append((s, d))
    rows = []
    for system in sorted(set(run["system"])):
        for q in sorted(judged):
            docs = [d for _, d in sorted(ranked.get((system, q), []), reverse=True)]
            labels = dict(judged[q])
            for d in docs:
                if d not in labels and unjudged is not None:
                    labels[d] = unjudged
            lab = [labels.get(d) for d in docs]  # None: unjudged
            rel = [x is not None and x >= 1 for x in lab]
            R = sum(1 for x in labels.values() if x >= 1)
            hits, ap = 0, 0.0
            for i, r in enumerate(rel):
                if r:
                    hits += 1
                    ap += hits / (i + 1)
            gains = [max(x, 0) if x is not None else 0 for x in lab]
            dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:K]))
            ideal = sorted((x for x in labels.values() if x > 0), reverse=True)[:K]
            idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
            rows.append({
                "system": system, "query": q,
                "AP": ap / R if R else 0.0, "P@5": sum(rel[:K]) / K,
                "nDCG@5": dcg / idcg if idcg else 0.0, "NumRel": R,
                "R@5": sum(rel[:K]) / R if R else 0.0,
            })  # fmt: skip
    return pl.DataFrame(rows)


RUN, QRELS = make_data()


def close(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert_frame_equal(got.sort("system", "query"), want, check_exact=False, rel_tol=1e-12)


@pytest.mark.parametrize("unjudged", [None, 0, 1, 2])
def test_equals_the_relabelled_reference(unjudged: float | None) -> None:
    want = reference(RUN, QRELS, unjudged)
    got = preval.evaluate(
        RUN, MEASURES, qrels=QRELS, by="system", unjudged_label=unjudged
    ).collect()
    close(got, want)
    # one joined table (each system's rows and its unretrieved judged documents): the same
    table = RUN.join(
        RUN.select("system").unique().join(QRELS, how="cross"),
        on=["system", "query", "doc"],
        how="full",
        coalesce=True,
    )
    close(preval.evaluate(table, MEASURES, by="system", unjudged_label=unjudged).collect(), want)


@pytest.mark.parametrize("engine", ["in-memory", "streaming", "chunked", "partitioned"])
def test_every_engine(engine: str) -> None:
    want = reference(RUN, QRELS, 1)
    plan = preval.plan(RUN, MEASURES, qrels=QRELS, by="system", unjudged_label=1)
    close(preval.collect(plan, engine=engine).per_query().collect(), want)


def test_small_chunks_and_spilled_buckets() -> None:
    want = reference(RUN, QRELS, 2)
    plan = preval.plan(RUN, MEASURES, qrels=QRELS, by="system", unjudged_label=2)
    chunked = collect_chunked(plan, chunk_rows=6)  # (holds its spill files: keep it)
    close(chunked.per_query().collect(), want)
    spilled = collect_partitioned(plan, buckets=3, chunk_rows=15)
    close(spilled.per_query().collect(), want)


def test_bounds_stack_the_three_evaluations() -> None:
    got = preval.bounds(RUN, MEASURES, qrels=QRELS, by="system").collect()
    assert got.columns[:3] == ["system", "query", "bound"]
    assert got["bound"].unique().sort().to_list() == ["lower", "observed", "upper"]
    for bound, unjudged in (("lower", 0), ("observed", None), ("upper", 1)):
        part = got.filter(pl.col("bound") == bound).drop("bound")
        close(part, reference(RUN, QRELS, unjudged))
    # a summary groups by the bound like any other key
    summary = preval.summarize(got).collect()
    assert summary.columns[:3] == ["system", "bound", "NumQ"]
    assert summary.height == 6
    graded = preval.bounds(RUN, ["nDCG@5"], qrels=QRELS, by="system", upper=2).collect()
    upper = graded.filter(pl.col("bound") == "upper").drop("bound")
    close(upper, reference(RUN, QRELS, 2).select("system", "query", "nDCG@5"))


def test_bounds_refuse_what_they_set_themselves() -> None:
    with pytest.raises(preval.InputError, match="bounds sets the unjudged_label option itself"):
        preval.bounds(RUN, ["AP"], qrels=QRELS, by="system", unjudged_label=1)
    with pytest.raises(preval.InputError, match="below the relevance level"):
        preval.bounds(RUN, ["AP"], qrels=QRELS, by="system", relevance_level=2, upper=1)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "1", True])
def test_the_option_takes_a_finite_label(bad: object) -> None:
    with pytest.raises(preval.InputError, match="unjudged_label must be a finite number"):
        preval.evaluate(RUN, ["AP"], qrels=QRELS, by="system", unjudged_label=bad)


def test_queries_without_judgments_stay_out_and_diversity_is_refused() -> None:
    got = preval.evaluate(RUN, ["AP"], qrels=QRELS, by="system", unjudged_label=1).collect()
    assert "q9" not in got["query"].to_list()
    div = QRELS.with_columns(pl.lit("s1").alias("subtopic"))
    with pytest.raises(preval.MeasureError, match="does not apply to the diversity measures"):
        preval.evaluate(
            RUN, ["alpha_nDCG@5"], qrels=div, by="system", subtopic="subtopic", unjudged_label=1
        )


def test_measures_of_judged_documents() -> None:
    # Every retrieved document of a judged query is judged once relabelled (there are no
    # negative labels here, which stay as given): Judged@5, the judged share of the top
    # min(5, n), is 1 in both bounds, and 0 where nothing was retrieved (B's q2).
    got = preval.bounds(RUN, ["Judged@5", "NumRet"], qrels=QRELS, by="system").collect()
    for bound in ("lower", "upper"):
        part = got.filter(pl.col("bound") == bound)
        want = (part["NumRet"] > 0).cast(pl.Float64)
        assert part["Judged@5"].to_list() == want.to_list()
    observed = got.filter(pl.col("bound") == "observed")
    assert (observed["Judged@5"] < 1).any()  # the data has unjudged documents to relabel


def test_a_worked_example_where_the_upper_ap_is_below_the_observed() -> None:
    # One relevant document, retrieved first; an unjudged document at rank 10.
    # Observed: R = 1, AP = 1/1 = 1. Upper: R = 2, AP = (1/1 + 2/10) / 2 = 0.6 < 1.
    # AP divides by R, which the relabelling raises: the "upper" value is that scenario's,
    # not a bound (docs/semantics.md). P@10 = 2/10 there, above the observed 1/10.
    run = pl.DataFrame({"query": ["q"] * 10, "doc": [f"d{i}" for i in range(10)],
                        "score": [10.0 - i for i in range(10)]})  # fmt: skip
    qrels = pl.DataFrame({"query": ["q"] * 9, "doc": [f"d{i}" for i in range(9)],
                          "label": [1] + [0] * 8})  # fmt: skip
    got = preval.bounds(run, ["AP", "P@10"], qrels=qrels).collect()
    assert got["AP"].to_list() == pytest.approx([1.0, 1.0, 0.6])
    assert got["P@10"].to_list() == pytest.approx([0.1, 0.1, 0.2])


def test_cli_bounds(tmp_path) -> None:
    from preval.cli import main

    RUN.write_csv(tmp_path / "run.csv")
    QRELS.write_csv(tmp_path / "qrels.csv")
    out = tmp_path / "summary.csv"
    argv = ["evaluate", str(tmp_path / "run.csv"), "--qrels", str(tmp_path / "qrels.csv"),
            "--by", "system", "-m", "AP", "-m", "P@5", "--bounds",
            "--summary", str(out), "-q"]  # fmt: skip
    assert main(argv) == 0
    summary = pl.read_csv(out)
    want = preval.summarize(
        preval.bounds(RUN, ["AP", "P@5"], qrels=QRELS, by="system"), by=["system", "bound"]
    ).collect()
    assert_frame_equal(summary, want, check_exact=False, check_dtypes=False)
    argv = [*argv[:-3], "--unjudged-label", "1", "--summary", str(out), "-q"]
    argv.remove("--bounds")
    assert main(argv) == 0
    upper = want.filter(pl.col("bound") == "upper").drop("bound")
    assert_frame_equal(pl.read_csv(out), upper, check_exact=False, check_dtypes=False)


# -- properties -------------------------------------------------------------------------------
# Which measures a bound must hold for, and why. Relabelling an unjudged retrieved document
# 0 changes no relevance flag, gain, R or ideal DCG at relevance level 1 (label 0 < 1, gain
# 0): every measure that does not read whether a document is judged is unchanged, so
# lower == observed for AP, P@k, R@k, RR, nDCG@k, DCG@k, Success@k, NumRelRet, Hits@k.
# Labelling it relevant instead turns flags from false to true and raises gains, and raises R
# and the ideal DCG. A measure increasing in every flag / gain with neither R nor the ideal
# in it can only rise: P@k = tp(k)/k, Success@k, Hits@k, NumRelRet, DCG@k (a sum of
# gain/discount) and RR (the first relevant rank can only move up). AP, R@k, Rprec and nDCG
# divide by R or the ideal, which rise too: no order holds (the worked example above).
EQUAL_WHEN_LOWER = ["AP", "P@3", "R@3", "RR", "nDCG@3", "DCG@3", "Success@3", "NumRelRet",
                    "Hits@3"]  # fmt: skip
RISING = ["P@3", "Success@3", "Hits@3", "NumRelRet", "DCG@3", "RR"]


@st.composite
def runs(draw):
    n_queries = draw(st.integers(1, 4))
    run, qrels = [], []
    for q in range(n_queries):
        n = draw(st.integers(0, 6))
        # each retrieved document: unjudged (None) or a label 0..2; scores may tie
        labels = draw(st.lists(st.sampled_from([None, 0, 1, 2]), min_size=n, max_size=n))
        scores = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        extra = draw(st.lists(st.sampled_from([0, 1, 2]), max_size=3))  # judged, not retrieved
        for i, (lab, s) in enumerate(zip(labels, scores, strict=True)):
            run.append((f"q{q}", f"d{i}", float(s)))
            if lab is not None:
                qrels.append((f"q{q}", f"d{i}", lab))
        qrels += [(f"q{q}", f"x{j}", lab) for j, lab in enumerate(extra)]
    return (
        pl.DataFrame(run, schema={"query": pl.String, "doc": pl.String, "score": pl.Float64},
                     orient="row"),
        pl.DataFrame(qrels, schema={"query": pl.String, "doc": pl.String, "label": pl.Int64},
                     orient="row"),
    )  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_lower_equals_observed_and_upper_rises(data) -> None:
    run, qrels = data
    measures = sorted(set(EQUAL_WHEN_LOWER) | set(RISING))
    got = preval.bounds(run, measures, qrels=qrels).collect()
    lower, observed, upper = (got.filter(pl.col("bound") == b).sort("query")
                              for b in ("lower", "observed", "upper"))  # fmt: skip
    for m in EQUAL_WHEN_LOWER:
        assert lower[m].to_list() == observed[m].to_list(), m
    for m in RISING:
        assert all(o <= u + 1e-12 for o, u in zip(observed[m], upper[m], strict=True)), m
    # R counts every unjudged retrieved document in the upper bound
    n_unjudged = (
        run.join(qrels, on=["query", "doc"], how="anti")
        .filter(pl.col("query").is_in(qrels["query"].implode()))
        .group_by("query")
        .len()
    )
    nums = observed.select("query", pl.col("NumRelRet").alias("o")).join(
        upper.select("query", pl.col("NumRelRet").alias("u")), on="query"
    )
    want = nums.join(n_unjudged, on="query", how="left").with_columns(pl.col("len").fill_null(0))
    assert (want["u"] == want["o"] + want["len"]).all()


def test_spark_takes_the_option() -> None:
    pspark = pytest.importorskip("preval.spark", reason="pyspark is not installed")
    from tests.spark_session import spark_session

    spark = spark_session()
    sdf = pspark.evaluate(
        spark.createDataFrame(RUN.to_arrow()),
        MEASURES,
        qrels=spark.createDataFrame(QRELS.to_arrow()),
        by="system",
        unjudged_label=1,
        num_buckets=3,
    )
    got = pl.from_arrow(sdf.toArrow())
    assert isinstance(got, pl.DataFrame)
    close(got, reference(RUN, QRELS, 1))


def test_the_plans_of_the_bounds_run_with_any_engine() -> None:
    from preval import unjudged

    plans = unjudged.plans(RUN, MEASURES, qrels=QRELS, by="system")
    collected = {name: preval.collect(p, engine="chunked") for name, p in plans.items()}
    got = unjudged.stack(
        {name: c.per_query() for name, c in collected.items()}, ["system", "query"]
    ).collect()
    want = preval.bounds(RUN, MEASURES, qrels=QRELS, by="system").collect()
    assert_frame_equal(got, want)
