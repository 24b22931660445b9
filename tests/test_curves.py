"""Curves: the LingPipe page and vl_pr's numbers (golden), scikit-learn on untied data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import preval
from preval.curves import curve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def lingpipe() -> pl.DataFrame:
    return pl.read_csv(FIXTURES / "lingpipe.csv", schema_overrides={"doc": pl.String})


def points(frame: pl.LazyFrame, x: str, y: str) -> list[tuple[float, float]]:
    df = frame.collect()
    assert df["point"].to_list() == list(range(df.height))
    return [(round(a, 2), round(b, 2)) for a, b in zip(df[x], df[y], strict=True)]


# LingPipe page (seed 000): 10 cases + 1 missed positive; 5 positives, 6 negatives. The page
# prints prCurve(false) with {0.60, 0.38} twice by mistake: the curve has 11 points.
PR = [(0.0, 1.0), (0.2, 0.5), (0.2, 0.33), (0.4, 0.5), (0.6, 0.6), (0.6, 0.5), (0.6, 0.43),
      (0.6, 0.38), (0.8, 0.44), (0.8, 0.4), (1.0, 0.0)]  # fmt: skip
PR_INTERPOLATED = [(0.0, 1.0), (0.2, 0.6), (0.4, 0.6), (0.6, 0.6), (0.8, 0.44), (1.0, 0.0)]
ROC = [(0.0, 0.0), (0.17, 0.0), (0.17, 0.2), (0.33, 0.2), (0.33, 0.4), (0.33, 0.6),
       (0.5, 0.6), (0.67, 0.6), (0.83, 0.6), (0.83, 0.8), (1.0, 0.8), (1.0, 1.0)]  # fmt: skip
ROC_INTERPOLATED = [(0.0, 0.0), (0.17, 0.2), (0.33, 0.6), (0.5, 0.6), (0.67, 0.6), (0.83, 0.8),
                    (1.0, 1.0)]  # fmt: skip


def test_lingpipe_pr_curves(lingpipe: pl.DataFrame) -> None:
    got = curve(lingpipe, "pr", convention="lingpipe")
    assert points(got, "recall", "precision") == PR
    got = curve(lingpipe, "pr", convention="lingpipe", interpolate=True)
    assert points(got, "recall", "precision") == PR_INTERPOLATED


def test_lingpipe_roc_curves(lingpipe: pl.DataFrame) -> None:
    # ROC x is 1 - specificity: the page writes { 1 - 0.83, 0.00 } for (0.17, 0.00)
    assert points(curve(lingpipe, "roc", convention="lingpipe"), "fpr", "tpr") == ROC
    got = curve(lingpipe, "roc", convention="lingpipe", interpolate=True)
    assert points(got, "fpr", "tpr") == ROC_INTERPOLATED


def test_curve_scores_are_thresholds(lingpipe: pl.DataFrame) -> None:
    df = curve(lingpipe, "pr", convention="lingpipe").collect()
    # limit points have no threshold; rank 1 (-1.21, no) is dropped (recall = precision = 0)
    assert df["score"].to_list() == [None, -1.27, -1.39, -1.47, -1.60, -1.65, -1.79, -1.80,
                                     -2.01, -3.70, None]  # fmt: skip


def vlfeat_example() -> pl.DataFrame:
    # The same ranking with VLFeat's labels (+1 / -1); the missed positive has score -inf
    # (not retrieved), so NumPositives is not even needed: 5 positives, 6 negatives.
    lp = pl.read_csv(FIXTURES / "lingpipe.csv", schema_overrides={"doc": pl.String})
    return lp.with_columns(
        pl.col("score").fill_null(float("-inf")),
        pl.when(pl.col("label") == 1).then(1).otherwise(-1).alias("label"),
    )


def trapezoid(xs: list[float], ys: list[float]) -> float:
    return sum(
        (x2 - x1) * (y1 + y2) / 2 for x1, x2, y1, y2 in zip(xs, xs[1:], ys, ys[1:], strict=False)
    )


def test_vlfeat_info_numbers() -> None:
    # vl_pr: rank-0 point (0, 1), then one point per sample down to rank 10 (recall 0.8: the
    # -inf positive is never retrieved).
    # info.auc = trapezoids where recall moves: (0+.5)/2·.2 + (1/3+.5)/2·.2 + (.5+.6)/2·.2
    #          + (.375+4/9)/2·.2 = 0.325278
    # info.ap = (1/2 + 2/4 + 3/5 + 4/9)/5 = 0.408889 (precision where a positive is recalled)
    # info.ap_interp_11 = mean over t = 0, .1, ..., 1 of max{precision : recall >= t}, 0 when
    #   no point reaches t: (1 + 6·0.6 + 2·4/9 + 0 + 0)/11 = 0.498990
    df = curve(vlfeat_example(), "pr", convention="vlfeat").collect()
    recall, precision = df["recall"].to_list(), df["precision"].to_list()
    assert len(df) == 11 and (recall[0], precision[0]) == (0.0, 1.0)
    assert trapezoid(recall, precision) == pytest.approx(0.325278, abs=5e-7)
    hits = [p for r0, r1, p in zip(recall, recall[1:], precision[1:], strict=False) if r1 > r0]
    assert sum(hits) / 5 == pytest.approx(0.408889, abs=5e-7)
    eleven = [max([p for r, p in zip(recall, precision, strict=True) if r >= t / 10] or [0.0])
              for t in range(11)]  # fmt: skip
    assert sum(eleven) / 11 == pytest.approx(0.498990, abs=5e-7)


def test_vlfeat_include_inf_and_counts() -> None:
    data = vlfeat_example()
    # include_inf ranks the -inf positive last: recall reaches 1
    df = curve(data, "pr", convention="vlfeat", include_inf=True).collect()
    assert df["recall"].to_list()[-1] == 1.0 and len(df) == 12
    # NumPositives as a total: 7 positives -> recall 4/7 at the end
    df = curve(data, "pr", convention="vlfeat", num_positives=7).collect()
    assert df["recall"].to_list()[-1] == pytest.approx(4 / 7)
    with pytest.raises(preval.InputError, match="num_positives=3"):
        curve(data, "pr", convention="vlfeat", num_positives=3).collect()
    # label 0 counts as neither class; vl_pr keeps the sample, repeating the previous point
    zero = data.with_columns(pl.when(pl.col("doc") == "c0").then(0).otherwise(pl.col("label"))
                             .alias("label"))  # fmt: skip
    got = curve(zero, "pr", convention="vlfeat").collect()
    assert got["recall"][:2].to_list() == [0.0, 0.0]
    assert got["precision"][:2].to_list() == [1.0, 1.0]


@pytest.mark.parametrize("prior", [None, 0.5, 0.1])
@pytest.mark.parametrize("label0", [False, True])
def test_vlfeat_curve_equals_the_vl_pr_port(prior, label0) -> None:
    from tests.reference_curves import vl_pr

    data = vlfeat_example()
    if label0:
        data = data.with_columns(
            pl.when(pl.col("doc").is_in(["c0", "c5"])).then(0).otherwise(pl.col("label"))
            .alias("label")
        )  # fmt: skip
    got = curve(data, "pr", convention="vlfeat", normalize_prior=prior).collect()
    recall, precision, _ = vl_pr(data["label"].to_list(), data["score"].to_list(),
                                 normalize_prior=prior)  # fmt: skip
    # vl_pr floors tp at 1e-10 before dividing: where tp = 0 its precision is ~1e-9, ours 0
    np.testing.assert_allclose(got["recall"], recall, atol=1e-8)
    np.testing.assert_allclose(got["precision"], precision, atol=1e-8)


def test_per_query_and_pooled() -> None:
    df = pl.DataFrame({"query": ["a", "a", "b", "b"], "doc": ["1", "2", "3", "4"],
                       "score": [0.9, 0.1, 0.8, 0.2], "label": [1, 0, 0, 1]})  # fmt: skip
    per_query = curve(df, "roc").collect()
    assert per_query.columns == ["query", "point", "fpr", "tpr", "score"]
    assert per_query.filter(pl.col("query") == "a")["tpr"].to_list() == [0.0, 1.0, 1.0]
    pooled = curve(df, "roc", query=None).collect()
    assert pooled.columns == ["point", "fpr", "tpr", "score"]
    assert pooled["score"].to_list() == [None, 0.9, 0.8, 0.2, 0.1]


@pytest.mark.parametrize("seed", range(5))
def test_roc_matches_scikit_learn_without_ties(seed: int) -> None:
    sklearn = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    n = 200
    scores = rng.permutation(n) / n + rng.normal(0, 0.3, n)  # distinct scores
    labels = (rng.random(n) < 0.3).astype(int)
    df = pl.DataFrame({"score": scores, "label": labels})
    ours = curve(df, "roc", query=None).collect()
    fpr, tpr, _ = sklearn.roc_curve(labels, scores, drop_intermediate=False)
    np.testing.assert_allclose(ours["fpr"], fpr)
    np.testing.assert_allclose(ours["tpr"], tpr)
    auc = trapezoid(ours["fpr"].to_list(), ours["tpr"].to_list())
    assert auc == pytest.approx(sklearn.roc_auc_score(labels, scores))
    # scikit-learn lists PR points from low to high thresholds, then (recall 0, precision 1)
    pr = curve(df, "pr", query=None).collect()
    precision, recall, _ = sklearn.precision_recall_curve(labels, scores)
    np.testing.assert_allclose(pr["recall"], recall[::-1][1:])
    np.testing.assert_allclose(pr["precision"], precision[::-1][1:])


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        (lambda df: df.with_columns(pl.lit(float("nan")).alias("score")),
         preval.InvalidValueError, ["'score'", "NaN", "11 rows"]),
        (lambda df: pl.concat([df, df.head(1)]), preval.DuplicateError, ["2 rows", "'c0'"]),
        (lambda df: df.with_columns(pl.lit(None, dtype=pl.String).alias("query")),
         preval.InvalidValueError, ["'query'", "null"]),
    ],
)  # fmt: skip
def test_curve_enforces_the_input_rules(lingpipe, change, error, words) -> None:
    with pytest.raises(error) as info:
        curve(change(lingpipe), "pr").collect()
    assert all(word in str(info.value) for word in words), str(info.value)


def test_curve_rejects_missing_columns_and_bad_kinds(lingpipe) -> None:
    with pytest.raises(preval.MissingColumnError, match="'label'"):
        curve(lingpipe.drop("label"), "pr")
    with pytest.raises(preval.InputError, match="kind"):
        curve(lingpipe, "det")
    with pytest.raises(preval.InputError, match="convention"):
        curve(lingpipe, "pr", convention="sklearn")


@pytest.mark.parametrize(
    "change",
    [
        lambda df: df.drop("score"),
        lambda df: df.with_columns(pl.col("label").cast(pl.String)),
        lambda df: df.with_columns(pl.lit(1.5).alias("query")),  # float ids: rejected
        lambda df: df.with_columns(pl.lit([1], dtype=pl.List(pl.Int64)).alias("doc")),
    ],
)
def test_curve_reads_its_input_as_evaluate_does(lingpipe, change) -> None:
    # one input stage (preval.inputs): the same table gets the same error, word for word
    bad = change(lingpipe)
    with pytest.raises(preval.PrevalError) as by_curve:
        curve(bad, "pr")
    with pytest.raises(preval.PrevalError) as by_evaluate:
        preval.evaluate(bad, ["AP"])
    assert type(by_curve.value) is type(by_evaluate.value)
    assert str(by_curve.value) == str(by_evaluate.value)


def test_pooled_curves_allow_doc_ids_repeated_across_queries() -> None:
    df = pl.DataFrame({"query": ["a", "b"], "doc": ["d1", "d1"], "score": [0.9, 0.1],
                       "label": [1, 0]})  # fmt: skip
    assert curve(df, "roc", query=None).collect()["tpr"].to_list() == [0.0, 1.0, 1.0]
    with pytest.raises(preval.DuplicateError):
        curve(df.with_columns(pl.lit("a").alias("query")), "roc").collect()


# a run and its qrels (worked example): query a retrieves d1 (relevant), d2 (judged
# non-relevant) and d3 (unjudged) and misses the relevant d5; query b retrieves only the
# unjudged d4 and misses the relevant d6; query c is judged (d7) and not answered at all
RUN = pl.DataFrame({"query": ["a", "a", "a", "b"], "doc": ["d1", "d2", "d3", "d4"],
                    "score": [0.9, 0.8, 0.7, 0.5]})  # fmt: skip
QRELS = pl.DataFrame({"query": ["a", "a", "a", "b", "c"], "doc": ["d1", "d2", "d5", "d6", "d7"],
                      "label": [1, 0, 1, 1, 1]})  # fmt: skip


def _joined_by_hand(run: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    """The run's rows with their labels (null: unjudged) and a row with no score for each
    judged document the run did not retrieve, in queries the run answered or not."""
    labelled = run.join(qrels, on=["query", "doc"], how="left")
    missed = qrels.join(run, on=["query", "doc"], how="anti").with_columns(
        pl.lit(None, dtype=pl.Float64).alias("score")
    )
    return pl.concat([labelled, missed.select(labelled.columns)])


@pytest.mark.parametrize("kind", ["pr", "roc"])
@pytest.mark.parametrize("queries", ["judged", "retrieved"])
def test_curve_joins_a_run_with_its_qrels_as_evaluate_does(kind, queries) -> None:
    got = curve(RUN, kind, qrels=QRELS, queries=queries).collect()
    table = _joined_by_hand(RUN, QRELS)
    if queries == "retrieved":  # trec_eval's default: only the queries with a result
        table = table.filter(pl.col("query") != "c")
    expected = curve(table, kind).collect()
    assert got.equals(expected), (got, expected)


def test_curve_with_qrels_counts_the_missed_relevant_documents() -> None:
    pr = curve(RUN, "pr", qrels=QRELS, queries="retrieved").collect()
    # a: 2 relevant (d1, and d5 never retrieved): recall 1/2 after d1, d2 and d3
    a = pr.filter(pl.col("query") == "a")
    assert a["recall"].to_list() == [0.5, 0.5, 0.5]
    assert a["precision"].to_list() == pytest.approx([1.0, 0.5, 1 / 3])
    # b: its one relevant document (d6) missed, the unjudged d4 is not relevant
    assert pr.filter(pl.col("query") == "b")[["recall", "precision"]].rows() == [(0.0, 0.0)]
    assert set(pr["query"]) == {"a", "b"}


def test_curve_reads_trec_run_files_with_their_qrels() -> None:
    run_file, qrels_file = "fixtures/trec/bm25.run", "fixtures/trec/qrels.txt"
    got = curve(run_file, "roc", qrels=qrels_file).collect()
    assert got.columns[:2] == ["system", "query"] and set(got["system"]) == {"bm25"}
    fields = ["query", "q0", "doc", "rank", "score", "system"]
    run = pl.read_csv(run_file, separator="\t", has_header=False, new_columns=fields)
    qrels = pl.read_csv(qrels_file, separator=" ", has_header=False,
                        new_columns=["query", "iter", "doc", "label"])  # fmt: skip
    table = run.select("system", "query", "doc", "score")
    expected = curve(table, "roc", qrels=qrels.drop("iter"), by="system").collect()
    assert got.equals(expected)
    with pytest.raises(preval.InputError, match="a run has no labels; give its judgments"):
        curve(run_file, "roc")
