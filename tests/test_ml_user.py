"""preval used as a recommender / ranking-model engineer uses it (helper qa-ml): pandas frames
as they come out of feature pipelines, the per-query table joined back and grouped, and the
numbers of torchmetrics' retrieval metrics and Spark MLlib's RankingMetrics under the
translations of docs/measures.md.

torchmetrics is not installed (it needs torch): `TorchRef` below is a plain-Python
transcription of its retrieval functions and of `RetrievalMetric.compute`
(src/torchmetrics/functional/retrieval/*.py and retrieval/base.py, torchmetrics at commit
dab0333, 1.8+), sharing no code with preval.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import polars as pl
import pytest

import preval

pd = pytest.importorskip("pandas")


# --------------------------------------------------------------------------------------------
# pandas frames as pipelines write them: every refusal is one line naming what to do
# --------------------------------------------------------------------------------------------


def _one_line_error(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert isinstance(exc.value, preval.PrevalError), type(exc.value)
    assert "\n" not in text
    return text


def test_ids_in_the_pandas_index_are_named_as_such() -> None:
    # the query (and doc) ids in the index, as after groupby(...).apply or set_index: the
    # index is not read (docs/semantics.md, Input shapes), and the error says so
    frame = pd.DataFrame(
        {"query": [1, 1, 2], "doc": ["a", "b", "a"], "score": [0.3, 0.2, 0.1],
         "label": [1, 0, 1]}
    ).set_index(["query", "doc"])  # fmt: skip
    with pytest.raises(preval.MissingColumnError) as info:
        preval.evaluate(frame, ["AP"])
    text = _one_line_error(info)
    assert "missing query column 'query'" in text
    assert "index" in text and "reset_index()" in text
    # reset_index() is the way: AP of query 1 = 1 (relevant a first), of query 2 = 1
    got = preval.evaluate(frame.reset_index(), ["AP"]).collect()
    assert got.rows() == [(1, 1.0), (2, 1.0)]


def test_an_unnamed_pandas_index_is_not_blamed() -> None:
    frame = pd.DataFrame({"qid": [1], "score": [0.3], "label": [1]})
    with pytest.raises(preval.MissingColumnError) as info:
        preval.evaluate(frame, ["AP"])
    text = _one_line_error(info)
    assert "reset_index" not in text and "query='qid'" in text


@pytest.mark.parametrize(
    ("column", "values", "kinds"),
    [
        # an object column of ints and strings (ids read from two sources)
        ("query", [1, "1", 2], "int, str"),
        ("doc", ["a", 7, "c"], "int, str"),
    ],
)
def test_a_pandas_object_column_of_mixed_types_is_one_line(
    column: str, values: list, kinds: str
) -> None:
    # it raised pyarrow's ArrowInvalid ("Could not convert '1' with type str")
    frame = pd.DataFrame({"query": [1, 1, 2], "doc": ["a", "b", "c"], "score": [0.3, 0.2, 0.1],
                          "label": [1, 0, 1]})  # fmt: skip
    frame[column] = pd.Series(values, dtype=object)
    with pytest.raises(preval.MissingColumnError) as info:
        preval.evaluate(frame, ["AP"])
    text = _one_line_error(info)
    for word in (f"'{column}'", f"mixes values of types {kinds}", "astype(str)"):
        assert word in text, text
    # the cure the message names works: ids as strings
    frame[column] = frame[column].astype(str)
    assert preval.evaluate(frame, ["AP"]).collect().height == 2


def test_columns_preval_does_not_read_may_hold_anything() -> None:
    # a feature table's other columns: mixed types, sparse, dicts, arrays. Only the columns
    # an evaluation reads are converted (it failed on any of them); AP of q: relevant a first
    np = pytest.importorskip("numpy")
    frame = pd.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "score": [0.3, 0.2],
                          "label": [1, 0]})  # fmt: skip
    frame["mixed"] = pd.Series([1, "x"], dtype=object)
    frame["sparse"] = pd.arrays.SparseArray([1, 0])
    frame["meta"] = pd.Series([{"a": 1}, {"b": "x"}], dtype=object)
    frame["embedding"] = pd.Series([np.zeros(3), np.ones(3)], dtype=object)
    assert preval.evaluate(frame, ["AP"]).collect().rows() == [("q", 1.0)]
    # a needed column that cannot be converted is named, with why
    frame["label"] = pd.arrays.SparseArray([1, 0])
    with pytest.raises(preval.MissingColumnError) as info:
        preval.evaluate(frame, ["AP"])
    text = _one_line_error(info)
    assert "'label' is pandas column 'label' is sparse" in text and "to_dense()" in text
    # in qrels too
    run = frame[["query", "doc", "score"]]
    qrels = pd.DataFrame({"query": pd.Series(["q", 1], dtype=object), "doc": ["a", "b"],
                          "label": [1, 0]})  # fmt: skip
    with pytest.raises(preval.MissingColumnError) as info:
        preval.evaluate(run, ["AP"], qrels=qrels)
    assert _one_line_error(info).startswith("qrels: missing query column 'query'")


def test_pandas_frames_polars_cannot_convert_are_one_line() -> None:
    twice = pd.DataFrame([["q", 0.3, 1, 0]], columns=["query", "score", "label", "label"])
    with pytest.raises(preval.InputError) as info:
        preval.evaluate(twice, ["AP"])
    assert "'label'" in _one_line_error(info) and "twice" in str(info.value)


def test_column_names_must_be_strings() -> None:
    # pandas' default column labels are integers; Polars names them "0", "1", ...
    frame = pd.DataFrame([["q", 0.3, 1], ["q", 0.2, 0]])
    with pytest.raises(preval.InputError) as info:
        preval.evaluate(frame, ["AP"], query=0, score=1, label=2)
    text = _one_line_error(info)
    assert "query" in text and "string" in text and "'0'" in text
    with pytest.raises(preval.InputError, match="by"):
        preval.evaluate(frame, ["AP"], query="0", score="1", label="2", by=[3])
    # the names as Polars spells them work: one query, relevant first: AP 1
    got = preval.evaluate(frame, ["AP"], query="0", score="1", label="2").collect()
    assert got.rows() == [("q", 1.0)]


def test_ml_column_names_are_hinted() -> None:
    # a recommender's names: user / item / pred / clicked
    frame = pd.DataFrame({"user_id": [1, 1], "item_id": ["a", "b"], "pred": [0.3, 0.2],
                          "clicked": [True, False]})  # fmt: skip
    with pytest.raises(preval.MissingColumnError) as info:
        preval.evaluate(frame, ["AP"])
    text = _one_line_error(info)
    assert "query='user_id'" in text and "label='clicked'" in text and "score='pred'" in text


# --------------------------------------------------------------------------------------------
# the per-query table in an ML workflow
# --------------------------------------------------------------------------------------------


def test_summarize_without_the_query_column_is_refused() -> None:
    # evaluated with query="user": summarize(per_query) without query="user" took the user
    # column for a by key and returned one "summary" row per user (NumQ 1 each)
    frame = pd.DataFrame({"user": [1, 1, 2, 2], "item": ["a", "b", "a", "b"],
                          "pred": [0.9, 0.1, 0.9, 0.1], "label": [1, 0, 0, 1]})  # fmt: skip
    per_query = preval.evaluate(frame, ["AP"], query="user", doc="item", score="pred")
    with pytest.raises(preval.InputError) as info:
        preval.summarize(per_query)
    text = _one_line_error(info)
    assert "query='user'" in text
    # AP: user 1 = 1 (relevant first), user 2 = 1/2 (relevant second): mean 0.75
    got = preval.summarize(per_query, query="user").collect()
    assert got.rows() == [(2, 0.75)]
    # an explicit by needs no query column (a table of one row per system, say)
    assert preval.summarize(per_query, by=[]).collect().rows() == [(2, 0.75)]


def test_per_query_rows_join_back_to_features_and_group_by_segment() -> None:
    # integer user ids, a categorical segment: the per-query table keeps the id dtype so that
    # it merges with the feature table, and by= keeps the segment
    frame = pd.DataFrame({
        "user": [7, 7, 7, 9, 9, 9, 4, 4],
        "item": ["a", "b", "c", "a", "b", "c", "a", "b"],
        "pred": pd.array([0.9, 0.5, 0.1, 0.3, 0.2, 0.8, 0.6, 0.4], dtype="float32"),
        "label": pd.array([1, 0, 1, 0, 1, None, 0, 0], dtype="Int64"),
        "segment": pd.Categorical(["new", "new", "new", "old", "old", "old", "new", "new"]),
    })  # fmt: skip
    opts = {"query": "user", "doc": "item", "score": "pred"}
    per = preval.evaluate(frame, ["AP", "Success@1"], by="segment", **opts).collect()
    # user 7: ranked a(1) b(0) c(1): AP (1 + 2/3)/2 = 5/6, hit at 1; user 9: c (unjudged,
    # non-relevant), a(0), b(1): AP 1/3, no hit at 1; user 4: no relevant: 0, 0
    assert per.select("segment", "user").rows() == [("new", 4), ("new", 7), ("old", 9)]
    assert per["AP"].to_list() == pytest.approx([0.0, 5 / 6, 1 / 3])
    assert per["Success@1"].to_list() == [0.0, 1.0, 0.0]
    features = pd.DataFrame({"user": [4, 7, 9], "age": [20, 30, 40]})
    merged = per.to_pandas().merge(features, on="user")
    assert merged.sort_values("user")["age"].tolist() == [20, 30, 40]
    summary = preval.summarize(per, query="user").collect()
    assert summary.rows() == [
        ("new", 2, pytest.approx(5 / 12), 0.5),
        ("old", 1, pytest.approx(1 / 3), 0.0),
    ]


# --------------------------------------------------------------------------------------------
# torchmetrics' retrieval metrics: a plain-Python transcription of its convention
# --------------------------------------------------------------------------------------------


class TorchRef:
    """torchmetrics' functional retrieval metrics on one query (`preds`, binary `target`, or
    graded for nDCG), transcribed from src/torchmetrics/functional/retrieval/*.py. Since 1.8
    (PR #3160) precision, recall, AP and RR first zero the target of every prediction <= 0
    (``torch.where(preds > 0, target, 0)``), but keep the document in the list; hit rate,
    fall-out, R-precision, nDCG and AUROC read the target as given. The inputs here have no
    tied predictions (torchmetrics orders ties by ``topk``/``argsort``, arbitrarily)."""

    @staticmethod
    def order(preds: list[float]) -> list[int]:
        return sorted(range(len(preds)), key=lambda i: -preds[i])

    @staticmethod
    def positive(preds: list[float], target: list[int]) -> list[int]:
        return [t if p > 0 else 0 for p, t in zip(preds, target, strict=True)]

    @classmethod
    def precision(cls, preds, target, top_k=None, adaptive_k=False) -> float:
        n = len(preds)
        if top_k is None or (adaptive_k and top_k > n):
            top_k = n
        if not sum(target):
            return 0.0
        kept = cls.positive(preds, target)
        return sum(kept[i] for i in cls.order(preds)[:top_k]) / top_k

    @classmethod
    def recall(cls, preds, target, top_k=None) -> float:
        top_k = top_k or len(preds)
        if not sum(target):
            return 0.0
        kept = cls.positive(preds, target)
        return sum(kept[i] for i in cls.order(preds)[:top_k]) / sum(target)

    @classmethod
    def average_precision(cls, preds, target, top_k=None) -> float:
        top_k = top_k or len(preds)
        kept = cls.positive(preds, target)
        ranked = [kept[i] for i in cls.order(preds)[:top_k]]
        positions = [k + 1 for k, t in enumerate(ranked) if t > 0]
        if not positions:
            return 0.0
        return sum((j + 1) / pos for j, pos in enumerate(positions)) / len(positions)

    @classmethod
    def reciprocal_rank(cls, preds, target, top_k=None) -> float:
        top_k = top_k or len(preds)
        kept = cls.positive(preds, target)
        ranked = [kept[i] for i in cls.order(preds)[:top_k]]
        return next((1 / (k + 1) for k, t in enumerate(ranked) if t > 0), 0.0)

    @classmethod
    def hit_rate(cls, preds, target, top_k=None) -> float:
        top_k = top_k or len(preds)
        return float(sum(target[i] for i in cls.order(preds)[:top_k]) > 0)

    @classmethod
    def fall_out(cls, preds, target, top_k=None) -> float:
        top_k = top_k or len(preds)
        negative = [1 - t for t in target]
        if not sum(negative):
            return 0.0
        return sum(negative[i] for i in cls.order(preds)[:top_k]) / sum(negative)

    @classmethod
    def r_precision(cls, preds, target) -> float:
        r = sum(target)
        return sum(target[i] for i in cls.order(preds)[:r]) / r if r else 0.0

    @classmethod
    def ndcg(cls, preds, target, top_k=None) -> float:
        top_k = top_k or len(preds)

        def dcg(gains: list[float]) -> float:
            return sum(g / math.log2(k + 2) for k, g in enumerate(gains[:top_k]))

        ideal = dcg(sorted(target, reverse=True))
        return dcg([target[i] for i in cls.order(preds)]) / ideal if ideal else 0.0

    @classmethod
    def auroc(cls, preds, target) -> float:
        # binary_auroc without ties: the share of (positive, negative) pairs ordered right
        pos = [p for p, t in zip(preds, target, strict=True) if t]
        neg = [p for p, t in zip(preds, target, strict=True) if not t]
        if not pos or not neg:
            return 0.0
        return sum(p > q for p in pos for q in neg) / (len(pos) * len(neg))

    @staticmethod
    def module(metric, queries, action: str = "neg", empty=None) -> float:
        """`RetrievalMetric.compute` (retrieval/base.py): per query the metric, or for a query
        without a positive target (`empty`: without a negative one for fall-out) 1 ("pos"),
        0 ("neg") or nothing ("skip"); the mean, 0.0 when nothing is left."""
        empty = empty or (lambda target: not sum(target))
        values = []
        for preds, target in queries:
            if empty(target):
                if action == "error":
                    msg = "query with no positive target"
                    raise ValueError(msg)
                values += {"pos": [1.0], "neg": [0.0], "skip": []}[action]
            else:
                values.append(metric(preds, target))
        return sum(values) / len(values) if values else 0.0


def test_torch_reference_on_torchmetrics_documented_examples() -> None:
    # the reference reproduces torchmetrics' own docstring examples (the numbers printed
    # there), so that the comparison below compares with torchmetrics, not with a guess
    idx, preds, target = [0, 0, 0, 1, 1, 1, 1], [0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2], [
        0, 0, 1, 0, 1, 0, 1]  # fmt: skip
    queries = [
        ([p for i, p in zip(idx, preds, strict=True) if i == q],
         [t for i, t in zip(idx, target, strict=True) if i == q])
        for q in (0, 1)
    ]  # fmt: skip
    ref = TorchRef
    assert ref.module(ref.average_precision, queries) == pytest.approx(0.7917, abs=5e-5)
    assert ref.module(ref.reciprocal_rank, queries) == pytest.approx(0.75)
    assert ref.module(lambda p, t: ref.precision(p, t, 2), queries) == pytest.approx(0.5)
    assert ref.module(lambda p, t: ref.recall(p, t, 2), queries) == pytest.approx(0.75)
    assert ref.module(ref.r_precision, queries) == pytest.approx(0.75)
    assert ref.module(ref.auroc, queries) == pytest.approx(0.75)
    fall = ref.module(lambda p, t: ref.fall_out(p, t, 2), queries, "pos", lambda t: all(t))
    assert fall == pytest.approx(0.5)
    assert ref.average_precision([0.2, 0.3, 0.5], [1, 0, 1]) == pytest.approx(0.8333, abs=5e-5)
    assert ref.ndcg([0.1, 0.2, 0.3, 4, 70], [10, 0, 0, 1, 5]) == pytest.approx(0.6957, abs=5e-5)
    assert ref.precision([0.2, 0.3, 0.5], [1, 0, 1], top_k=2) == 0.5
    # since 1.8 a prediction <= 0 is never a hit (tests/unittests/retrieval: all-zero preds)
    assert ref.average_precision([0.0, 0.0, 0.0], [1, 0, 1]) == 0.0


def _tm_frame(queries: list[tuple[list[float], list[int]]]) -> pl.DataFrame:
    rows = [
        (f"q{i:02d}", f"d{j:02d}", p, float(t))
        for i, (preds, target) in enumerate(queries)
        for j, (p, t) in enumerate(zip(preds, target, strict=True))
    ]
    schema = {"query": pl.String, "doc": pl.String, "score": pl.Float64, "label": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def _with_action(values: list[float | None], empty: list[bool], action: str) -> float:
    """torchmetrics' `empty_target_action`, applied to preval's per-query values as
    docs/measures.md says: "neg" 0, "pos" 1, "skip" left out, for the queries that are empty
    by the labels as given."""
    kept = []
    for v, e in zip(values, empty, strict=True):
        if e:
            kept += {"pos": [1.0], "neg": [0.0], "skip": []}[action]
        else:
            kept.append(v)
    return sum(kept) / len(kept) if kept else 0.0


def _queries():
    from hypothesis import strategies as st

    # distinct predictions in [-1, 1] (about a quarter <= 0), binary targets
    one = st.integers(1, 7).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(-40, 120), min_size=n, max_size=n, unique=True).map(
                lambda xs: [x / 120 for x in xs]
            ),
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
        )
    )
    return st.lists(one, min_size=1, max_size=6)


def _check_torchmetrics(queries: list[tuple[list[float], list[int]]], k: int) -> None:
    ref, frame = TorchRef, _tm_frame(queries)
    # a prediction <= 0 is never a hit but stays in the list (docs/measures.md, torchmetrics)
    not_retrieved = frame.with_columns(pl.when(pl.col("score") > 0).then(pl.col("score")))
    zero_label = frame.with_columns(
        pl.when(pl.col("score") > 0).then(pl.col("label")).otherwise(0.0).alias("label")
    )
    a = preval.evaluate(
        not_retrieved,
        [f"P@{k}", f"R@{k}", "SetR", "RR", f"RR@{k}", "AP(norm=hits)", f"AP(norm=hits)@{k}"],
    ).collect()
    b = preval.evaluate(zero_label, ["SetP", f"P(norm=min)@{k}"]).collect()
    c = preval.evaluate(frame, [f"Success@{k}", f"FallOut@{k}", "Rprec"]).collect()
    # torchmetrics averages tied gains in nDCG and takes one point per score in AUROC: the
    # translation's tie rules (no ties here: any rule gives these numbers)
    d = preval.evaluate(frame, ["nDCG", f"nDCG@{k}"], ties="expected").collect()
    e = preval.evaluate(frame, ["AUC-ROC"], ties="threshold").collect()
    got = a
    for other in (b, c, d, e):
        got = got.join(other, on="query")
    got = got.sort("query")
    no_pos = [not sum(t) for _, t in queries]
    no_neg = [all(t) for _, t in queries]
    cases = {
        f"P@{k}": lambda p, t: ref.precision(p, t, k),
        "SetP": ref.precision,
        f"P(norm=min)@{k}": lambda p, t: ref.precision(p, t, k, adaptive_k=True),
        f"R@{k}": lambda p, t: ref.recall(p, t, k),
        "SetR": ref.recall,
        "RR": ref.reciprocal_rank,
        f"RR@{k}": lambda p, t: ref.reciprocal_rank(p, t, k),
        "AP(norm=hits)": ref.average_precision,
        f"AP(norm=hits)@{k}": lambda p, t: ref.average_precision(p, t, k),
        f"Success@{k}": lambda p, t: ref.hit_rate(p, t, k),
        "Rprec": ref.r_precision,
        "nDCG": ref.ndcg,
        f"nDCG@{k}": lambda p, t: ref.ndcg(p, t, k),
    }
    for action in ("neg", "pos", "skip"):
        for column, metric in cases.items():
            want = ref.module(metric, queries, action)
            assert _with_action(got[column].to_list(), no_pos, action) == pytest.approx(
                want, abs=1e-12
            ), (column, action)
        # fall-out's empty query has no negative; preval's value is null there
        want = ref.module(lambda p, t: ref.fall_out(p, t, k), queries, action, all)
        assert _with_action(got[f"FallOut@{k}"].to_list(), no_neg, action) == pytest.approx(
            want, abs=1e-12
        )
    # RetrievalAUROC: a query of one class is 0 there, null here
    auroc = [0.0 if v is None else v for v in got["AUC-ROC"].to_list()]
    want = ref.module(ref.auroc, queries, "neg", lambda t: False)
    assert sum(auroc) / len(auroc) == pytest.approx(want, abs=1e-12)


def test_torchmetrics_retrieval_metrics_under_the_documented_translation() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from tests.profiles import examples

    @settings(max_examples=examples(100))
    @given(_queries(), st.integers(1, 5))
    def check(queries, k):
        _check_torchmetrics(queries, k)

    check()


def test_torchmetrics_predictions_at_or_below_zero_worked_example() -> None:
    # preds 0.5, -0.1, 0.3, 0.0 with targets 1, 1, 0, 0: the second relevant document is
    # predicted <= 0, so torchmetrics' RetrievalMAP sees one hit, at rank 1: AP = 1/1 = 1
    # (preval's AP, divided by R = 2, is 0.5); RetrievalPrecision(top_k=5, adaptive_k=True)
    # divides by min(5, 4 documents): 1/4; RetrievalRecall(top_k=3) = 1/2; RetrievalHitRate
    # (top_k=4) reads the target as given: 1
    preds, target = [0.5, -0.1, 0.3, 0.0], [1, 1, 0, 0]
    assert TorchRef.average_precision(preds, target) == 1.0
    assert TorchRef.precision(preds, target, 5, adaptive_k=True) == 0.25
    assert TorchRef.recall(preds, target, 3) == 0.5
    _check_torchmetrics([(preds, target), ([0.2, -0.3], [0, 1])], 3)


# --------------------------------------------------------------------------------------------
# Spark MLlib RankingMetrics: numbers Spark itself gave, pinned
# --------------------------------------------------------------------------------------------


def mllib_rows(seed: int = 7, n: int = 14) -> list[tuple[list[str], list[str], list[float]]]:
    """MLlib's (predicted ids, ground-truth ids, relevance values) rows: some with nothing
    predicted, some with an empty ground truth (never both: such a query has no row here),
    the ground truth listed by descending relevance (MLlib's ideal DCG reads it in order)."""
    rng = random.Random(seed)
    items = [f"i{j:02d}" for j in range(16)]
    rows = []
    for q in range(n):
        pred = rng.sample(items, rng.randint(0 if q % 5 else 1, 9))
        truth = rng.sample(items, rng.randint(0 if pred else 1, 5))
        rel = sorted((float(rng.randint(1, 3)) for _ in truth), reverse=True)
        rows.append((pred, truth, rel))
    return rows


def mllib_frame(rows, graded: bool) -> pl.DataFrame:
    """docs/measures.md's translation: predicted ids ranked in order (score n − i), labelled 1
    (or their relevance value) when in the ground truth, else 0; ground-truth ids not
    predicted are unretrieved rows (null score)."""
    out = []
    for q, (pred, truth, rel) in enumerate(rows):
        value = dict(zip(truth, rel, strict=True)) if graded else dict.fromkeys(truth, 1.0)
        out += [(f"q{q:02d}", d, float(len(pred) - i), value.get(d, 0.0))
                for i, d in enumerate(pred)]  # fmt: skip
        out += [(f"q{q:02d}", d, None, value[d]) for d in truth if d not in pred]
    schema = {"query": pl.String, "doc": pl.String, "score": pl.Float64, "label": pl.Float64}
    return pl.DataFrame(out, schema=schema, orient="row")


# What pyspark.mllib.evaluation.RankingMetrics (Spark 4.3.0, local[1]) gave on `mllib_rows()`,
# once, by hand (/tmp script: RankingMetrics(sc.parallelize(rows)) with (pred, truth) pairs and
# with (pred, truth, rel) triples). The triples gave the very same ndcgAt values as the pairs:
# PySpark's Java stub (PythonMLLibAPI.newRankingMetrics) reads only the first two columns, so
# from Python the relevance values are dropped (docs/measures.md says so).
SPARK_MLLIB = {
    "precisionAt(1)": 0.14285714285714285,
    "recallAt(1)": 0.04761904761904762,
    "meanAveragePrecisionAt(1)": 0.14285714285714285,
    "ndcgAt(1)": 0.14285714285714285,
    "precisionAt(3)": 0.09523809523809525,
    "recallAt(3)": 0.15476190476190477,
    "meanAveragePrecisionAt(3)": 0.08928571428571427,
    "ndcgAt(3)": 0.13038644709143243,
    "precisionAt(5)": 0.07142857142857144,
    "recallAt(5)": 0.1904761904761905,
    "meanAveragePrecisionAt(5)": 0.10714285714285714,
    "ndcgAt(5)": 0.1492484558466175,
    "precisionAt(10)": 0.03571428571428572,
    "recallAt(10)": 0.1904761904761905,
    "meanAveragePrecisionAt(10)": 0.10714285714285714,
    "ndcgAt(10)": 0.1492484558466175,
    "meanAveragePrecision": 0.10714285714285714,
}


class MllibRef:
    """RankingMetrics.scala (apache/spark master, mllib/evaluation) transcribed: per query
    (pred, lab, rel); an empty ground truth scores 0."""

    @staticmethod
    def ratio(pred, lab, k, denominator) -> float:
        return sum(p in set(lab) for p in pred[:k]) / denominator if lab else 0.0

    @classmethod
    def precision_at(cls, pred, lab, rel, k):
        return cls.ratio(pred, lab, k, k)

    @classmethod
    def recall_at(cls, pred, lab, rel, k):
        return cls.ratio(pred, lab, k, len(set(lab)))

    @staticmethod
    def average_precision(pred, lab, rel, k=None):
        labs = set(lab)
        if not labs:
            return 0.0
        k = max(len(pred), len(labs)) if k is None else k
        cnt, total = 0, 0.0
        for i, p in enumerate(pred[: min(k, len(pred))]):
            if p in labs:
                cnt += 1
                total += cnt / (i + 1)
        return total / min(len(labs), k)

    @staticmethod
    def ndcg_at(pred, lab, rel, k):
        labs = set(lab)
        if not labs:
            return 0.0
        values = dict(zip(lab, rel, strict=False))
        dcg = ideal = 0.0
        for i in range(min(max(len(pred), len(labs)), k)):
            discount = 1 / math.log(i + 2)
            if not rel:  # binary
                dcg += discount if i < len(pred) and pred[i] in labs else 0.0
                ideal += discount if i < len(labs) else 0.0
            else:
                dcg += (2 ** values.get(pred[i], 0.0) - 1) * discount if i < len(pred) else 0.0
                ideal += (2 ** values.get(lab[i], 0.0) - 1) * discount if i < len(labs) else 0.0
        return dcg / ideal if ideal else 0.0

    @classmethod
    def mean(cls, name: str, rows, graded: bool) -> float:
        metric, _, k = name.rstrip(")").partition("(")
        fn = {"precisionAt": cls.precision_at, "recallAt": cls.recall_at,
              "meanAveragePrecisionAt": cls.average_precision, "ndcgAt": cls.ndcg_at,
              "meanAveragePrecision": cls.average_precision}[metric]  # fmt: skip
        values = [fn(p, lab, r if graded else [], *([int(k)] if k else [])) for p, lab, r in rows]
        return sum(values) / len(values)


def test_mllib_reference_reproduces_spark() -> None:
    rows = mllib_rows()
    for name, want in SPARK_MLLIB.items():
        assert MllibRef.mean(name, rows, graded=False) == pytest.approx(want, abs=1e-12), name


@pytest.mark.parametrize("graded", [False, True])
def test_mllib_ranking_metrics_by_their_spark_spellings(graded: bool) -> None:
    # preval accepts MLlib's spellings (registry aliases); binary: Spark's own numbers
    rows = mllib_rows()
    per = preval.evaluate(mllib_frame(rows, graded), list(SPARK_MLLIB))
    got = preval.summarize(per).collect().row(0, named=True)
    for name, want in SPARK_MLLIB.items():
        column = preval.parse(name).name
        expected = MllibRef.mean(name, rows, graded) if graded else want
        assert got[column] == pytest.approx(expected, abs=1e-12), name
    if graded:  # the relevance values matter to ndcgAt (and only to it): not PySpark's value
        assert got[preval.parse("ndcgAt(3)").name] != pytest.approx(SPARK_MLLIB["ndcgAt(3)"])


def test_mllib_translation_on_many_queries() -> None:
    # more hits than mllib_rows: predictions drawn mostly from the ground truth
    rng = random.Random(11)
    items = [f"i{j:02d}" for j in range(12)]
    rows = []
    for _ in range(60):
        truth = rng.sample(items, rng.randint(1, 6))
        pred = rng.sample(truth, rng.randint(0, len(truth))) + rng.sample(items, rng.randint(0, 4))
        pred = list(dict.fromkeys(pred))
        rel = sorted((float(rng.randint(1, 4)) for _ in truth), reverse=True)
        rows.append((pred, truth, rel))
    names = [f"{m}({k})" for k in (1, 2, 4, 7) for m in
             ("precisionAt", "recallAt", "meanAveragePrecisionAt", "ndcgAt")]  # fmt: skip
    for graded in (False, True):
        per = preval.evaluate(mllib_frame(rows, graded), [*names, "meanAveragePrecision"])
        got = preval.summarize(per).collect().row(0, named=True)
        for name in [*names, "meanAveragePrecision"]:
            want = MllibRef.mean(name, rows, graded)
            assert got[preval.parse(name).name] == pytest.approx(want, abs=1e-12), name


# --------------------------------------------------------------------------------------------
# peers' metric names: refused with the translation, not a look-alike
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "translation"),
    [
        # 'top_k_accuracy@2' was answered "did you mean 'PairAccuracy@2'?", another measure
        ("top_k_accuracy@2", "Success@k"),
        ("top_k_accuracy_score", "Success@k"),
        ("roc_auc", "AUC-ROC with ties='threshold'"),
        ("roc_auc_score", "AUC-ROC with ties='threshold'"),
        ("average_precision", "AP with ties='threshold'"),
        ("average_precision_score", "AP with ties='threshold'"),
        ("ndcg_score", "nDCG@k with ties='expected'"),
        ("dcg_score", "DCG(base=b)@k with ties='expected'"),
        ("label_ranking_average_precision_score", "AP with ties='threshold'"),
        ("RetrievalMAP", "AP(norm=hits)@k"),
        ("RetrievalMRR", "RR@k"),
        ("RetrievalNormalizedDCG", "nDCG@k with ties='expected'"),
        ("RetrievalPrecision", "P@k"),
        ("RetrievalRecall", "R@k"),
        ("RetrievalHitRate", "Success@k"),
        ("RetrievalFallOut", "FallOut@k"),
        ("RetrievalAUROC", "AUC-ROC with ties='threshold'"),
        ("RetrievalRPrecision", "Rprec"),
        # "HR@10" was answered "did you mean 'R@10'?"
        ("HR@10", "Success@k"),
        ("hit_ratio@10", "Success@k"),
        # Spark ML's RankingEvaluator(metricName=..., k=...): k defaults to 10 there
        ("ndcgAtK@10", "nDCG(dcg=exp-log2)@k"),
        ("precisionAtK", "P@k"),
        ("recallAtK@5", "R@k"),
        ("meanAveragePrecisionAtK@5", "AP(norm=min)@k"),
    ],
)
def test_peer_metric_names_are_translated(request_: str, translation: str) -> None:
    with pytest.raises(preval.MeasureError) as info:
        preval.parse(request_)
    text = _one_line_error(info)
    assert translation in text and "docs/measures.md" in text, text
    assert "did you mean" not in text
    # the translation it names is a request preval takes
    named = translation.split(" with ")[0].replace("@k", "@5").replace("(base=b)", "")
    preval.parse(named)


def test_a_null_segment_is_named_as_a_by_key() -> None:
    # pandas' groupby drops a NaN key by default; preval refuses it, naming the by key (it
    # said "ids must not be null", as for a query id)
    frame = pd.DataFrame({"query": [1, 1, 2, 2], "doc": ["a", "b", "a", "b"],
                          "score": [0.9, 0.5, 0.3, 0.8], "label": [1, 0, 1, 0],
                          "segment": ["x", "x", None, None]})  # fmt: skip
    with pytest.raises(preval.InvalidValueError) as info:
        preval.evaluate(frame, ["AP"], by="segment").collect()
    text = _one_line_error(info)
    assert "column 'segment' is null in 2 rows" in text and "by keys must not be null" in text
    assert "fill" in text
    ids = pd.array([1, None, 2, 2], dtype="Int64")
    with pytest.raises(preval.InvalidValueError, match=r"query.*ids must not be null"):
        preval.evaluate(frame.assign(query=ids), ["AP"]).collect()


def test_integer_ids_turned_float_by_pandas_name_the_cast() -> None:
    # an integer id column with a missing value is float64 in pandas (after a merge, say)
    frame = pd.DataFrame({"query": [1, 1, None], "doc": ["a", "b", "a"],
                          "score": [0.9, 0.5, 0.3], "label": [1, 0, 1]})  # fmt: skip
    with pytest.raises(preval.ColumnTypeError) as info:
        preval.evaluate(frame, ["AP"])
    text = _one_line_error(info)
    assert "query column 'query' has dtype Float64" in text and ".astype('Int64')" in text


def test_soft_labels_need_a_relevance_level() -> None:
    # docs/semantics.md (Relevance): labels in (0, 1) are below the default level 1
    frame = pd.DataFrame({"query": [1, 1, 1], "doc": ["a", "b", "c"], "score": [0.9, 0.5, 0.1],
                          "label": [0.9, 0.1, 0.7]})  # fmt: skip
    got = preval.evaluate(frame, ["AP", "NumRel", "nDCG"]).collect().row(0)
    # nDCG reads gains: DCG = 0.9 + 0.1/log2(3) + 0.7/2, ideal 0.9 + 0.7/log2(3) + 0.1/2
    ndcg = (0.9 + 0.1 / math.log2(3) + 0.35) / (0.9 + 0.7 / math.log2(3) + 0.05)
    assert got == (1, 0.0, 0, pytest.approx(ndcg))
    # at level 0.5, a and c are relevant, ranked 1 and 3: AP = (1/1 + 2/3) / 2
    got = preval.evaluate(frame, ["AP", "NumRel"], relevance_level=0.5).collect().row(0)
    assert got == (1, pytest.approx(5 / 6), 2)


def test_pandas_nan_that_pandas_keeps_apart_from_missing_is_refused() -> None:
    # docs/semantics.md (Input shapes): numpy float64's NaN is pandas' missing value (null
    # here); a nullable Float64 column's 0/0 is a NaN that isna() calls present: refused
    plain = pd.DataFrame({"query": [1, 1], "doc": ["a", "b"], "score": [0.5, float("nan")],
                          "label": [1, 1]})  # fmt: skip
    # b is not retrieved: AP = (1/1) / 2
    assert preval.evaluate(plain, ["AP"]).collect().row(0) == (1, 0.5)
    masked = plain.assign(score=pd.array([0.5, 0.0], dtype="Float64") / pd.array(
        [1.0, 0.0], dtype="Float64"))  # fmt: skip
    assert not masked["score"].isna().any()
    with pytest.raises(preval.InvalidValueError, match="column 'score' is NaN in 1 rows"):
        preval.evaluate(masked, ["AP"]).collect()


# --------------------------------------------------------------------------------------------
# curves on tied scores: scikit-learn's roc_curve and precision_recall_curve
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_threshold_curves_equal_scikit_learn_on_tied_scores(seed: int) -> None:
    np = pytest.importorskip("numpy")
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    n = 60
    scores = rng.integers(0, 7, n) / 6  # many ties
    labels = (rng.random(n) < 0.4).astype(int)
    labels[:2] = [0, 1]  # both classes
    frame = pl.DataFrame({"score": scores, "label": labels,
                          "doc": [f"d{i:02d}" for i in range(n)]})  # fmt: skip
    roc = preval.curve(frame, "roc", query=None, ties="threshold").collect()
    fpr, tpr, thresholds = metrics.roc_curve(labels, scores, drop_intermediate=False)
    np.testing.assert_allclose(roc["fpr"], fpr)
    np.testing.assert_allclose(roc["tpr"], tpr)
    assert roc["score"].to_list()[1:] == pytest.approx(list(thresholds[1:]))
    # scikit-learn lists PR points from low to high thresholds, then (recall 0, precision 1)
    pr = preval.curve(frame, "pr", query=None, ties="threshold").collect()
    precision, recall, _ = metrics.precision_recall_curve(labels, scores)
    np.testing.assert_allclose(pr["recall"], recall[::-1][1:])
    np.testing.assert_allclose(pr["precision"], precision[::-1][1:])
    # the curve's area is the measure's, which is roc_auc_score's
    area = preval.evaluate(frame.with_columns(query=pl.lit("q")), ["AUC-ROC"], ties="threshold")
    assert area.collect()["AUC-ROC"][0] == pytest.approx(metrics.roc_auc_score(labels, scores))
    # per query too, and any input order gives the same points
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=seed)
    again = preval.curve(shuffled, "roc", query=None, ties="threshold").collect()
    np.testing.assert_allclose(again["fpr"], fpr)


def test_curves_refuse_expected_ties() -> None:
    frame = pl.DataFrame({"query": ["q", "q"], "score": [1.0, 1.0], "label": [1, 0]})
    with pytest.raises(preval.InputError) as info:
        preval.curve(frame, "roc", ties="expected")
    text = _one_line_error(info)
    assert "expected" in text and "threshold" in text


def test_plot_lines_under_threshold_ties() -> None:
    from preval.plot import lines

    table = pl.read_parquet(Path(__file__).resolve().parents[1] / "fixtures" / "example.parquet")
    # the mean ROC curve of each system, from per-query threshold curves; its legend's area is
    # the mean threshold AUC-ROC (scikit-learn's roc_auc_score per query)
    roc = lines(table, "roc", by="system", ties="threshold")
    per = preval.evaluate(table, ["AUC-ROC"], by="system", ties="threshold")
    means = preval.summarize(per).collect()
    for line, want in zip(roc.lines, means["AUC-ROC"].to_list(), strict=True):
        assert f"{want:.3f}" in line.label
    with pytest.raises(preval.InputError) as info:
        lines(table, "pr", by="system", ties="threshold")
    assert "pool" in _one_line_error(info)
    pooled = lines(table, "pr", by="system", ties="threshold", pool=True)
    assert len(pooled.lines) == 3


def test_scikit_learn_ndcg_compares_doubles() -> None:
    # ties="expected" finds ties as trec_eval 9 does, in 32-bit floats: two float64 scores 1e-9
    # apart tie there, not in scikit-learn (doubles), where b ranks first: nDCG 1. Tied, the
    # two share the mean gain 1/2: DCG = 1/2 + 1/2 / log2(3). trec_version=10 compares doubles
    metrics = pytest.importorskip("sklearn.metrics")
    np = pytest.importorskip("numpy")
    frame = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "score": [0.1, 0.1 + 1e-9],
                          "label": [0, 1]})  # fmt: skip
    tied = preval.evaluate(frame, ["nDCG"], ties="expected").collect()["nDCG"][0]
    assert tied == pytest.approx(0.5 + 0.5 / math.log2(3))
    doubles = preval.evaluate(frame, ["nDCG"], ties="expected", trec_version=10).collect()
    assert doubles["nDCG"][0] == metrics.ndcg_score([[0, 1]], [[0.1, 0.1 + 1e-9]]) == 1.0
    # on many queries of float64 scores, some equal and some 1e-10 apart
    rng = np.random.default_rng(2)
    n, per = 40, 8
    base = rng.integers(0, 4, (n, per)) / 4
    scores = base + rng.integers(0, 2, (n, per)) * 1e-10
    labels = rng.integers(0, 3, (n, per))
    rows = [(f"q{i:02d}", f"d{j}", scores[i, j], float(labels[i, j]))
            for i in range(n) for j in range(per)]  # fmt: skip
    table = pl.DataFrame(rows, schema=["query", "doc", "score", "label"], orient="row")
    got = preval.evaluate(table, ["nDCG@5"], ties="expected", trec_version=10).collect()
    want = [metrics.ndcg_score([labels[i]], [scores[i]], k=5) for i in range(n)]
    assert got.sort("query")["nDCG@5"].to_list() == pytest.approx(want, abs=1e-12)


def test_scikit_learn_top_k_accuracy_compares_doubles() -> None:
    # top_k_accuracy_score: one query per sample, one doc per class; its ties put the highest
    # class first (doc ids descending, ties="trec"), its scores are doubles (trec_version=10)
    metrics = pytest.importorskip("sklearn.metrics")
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(3)
    n, c = 200, 5
    scores = rng.integers(0, 3, (n, c)) / 2 + rng.integers(0, 2, (n, c)) * 1e-10
    y = rng.integers(0, c, n)
    rows = [(f"s{i:04d}", f"d{j:03d}", scores[i, j], float(y[i] == j))
            for i in range(n) for j in range(c)]  # fmt: skip
    table = pl.DataFrame(rows, schema=["query", "doc", "score", "label"], orient="row")
    for k in (1, 2, 3):
        per = preval.evaluate(table, [f"Success@{k}"], ties="trec", trec_version=10)
        got = preval.summarize(per).collect()[f"Success@{k}"][0]
        assert got == pytest.approx(metrics.top_k_accuracy_score(y, scores, k=k, labels=range(c)))


# --------------------------------------------------------------------------------------------
# a Parquet table as Spark writes it: a directory of parts
# --------------------------------------------------------------------------------------------


def test_a_directory_of_parquet_parts_is_one_table(tmp_path: Path, capsys) -> None:
    from preval.cli import main

    # Spark's layout: part files, _SUCCESS, hidden .crc files, hive partitions (segment=x/)
    table = tmp_path / "predictions.parquet"
    rows = {
        "x": {"query": ["1", "1"], "doc": ["a", "b"], "score": [1.0, 0.5], "label": [1, 0]},
        "y": {"query": ["2", "2"], "doc": ["a", "b"], "score": [1.0, 0.5], "label": [0, 1]},
    }
    for segment, part in rows.items():
        folder = table / f"segment={segment}"
        folder.mkdir(parents=True)
        pl.DataFrame(part).write_parquet(folder / "part-00000.snappy.parquet")
        (folder / ".part-00000.snappy.parquet.crc").write_bytes(b"crc")
    (table / "_SUCCESS").write_bytes(b"")
    # AP: query 1 ranks its relevant document first (1), query 2 second (1/2)
    got = preval.evaluate(table, ["AP"], by="segment").collect()
    assert got.rows() == [("x", "1", 1.0), ("y", "2", 0.5)]
    assert main(["evaluate", str(table), "-m", "AP", "--format", "csv", "-q"]) == 0
    assert capsys.readouterr().out.splitlines() == ["NumQ,AP", "2,0.75"]
    # without the .parquet suffix too (it is no TREC run file)
    renamed = table.rename(tmp_path / "predictions")
    assert preval.evaluate(renamed, ["AP"], by="segment").collect().rows() == got.rows()
    # a directory that is not one table is refused in one line (an empty one raised
    # IsADirectoryError: read as a TREC run file)
    empty = tmp_path / "nothing"
    empty.mkdir()
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    pl.DataFrame(rows["x"]).write_parquet(mixed / "a.parquet")
    pl.DataFrame(rows["y"]).write_csv(mixed / "b.csv")
    for folder in (empty, mixed):
        with pytest.raises(preval.InputError) as info:
            preval.evaluate(folder, ["AP"])
        assert "is a directory" in _one_line_error(info)


def test_a_stream_read_twice_says_so() -> None:
    pa = pytest.importorskip("pyarrow")
    reader = pa.table({"query": ["1", "1"], "doc": ["a", "b"], "score": [1.0, 0.5],
                       "label": [1, 0]}).to_reader()  # fmt: skip
    assert preval.evaluate(reader, ["AP"]).collect().rows() == [("1", 1.0)]
    # the second call found the reader exhausted: pyarrow's "Must pass schema, or at least
    # one RecordBatch" ValueError came through; now the empty input and a warning that says
    # why it may be empty
    with pytest.warns(UserWarning, match="read once"):
        again = preval.evaluate(reader, ["AP"]).collect()
    assert again.height == 0 and again.columns == ["query", "AP"]
    # a reader with no batch at all is the empty input (it raised the same ValueError)
    empty = pa.RecordBatchReader.from_batches(reader.schema, [])
    with pytest.warns(UserWarning, match="gave no rows"):
        assert preval.evaluate(empty, ["AP"]).collect().height == 0


def _tm_tie_average_ndcg(preds: list[float], target: list[float], top_k: int) -> float:
    """torchmetrics' retrieval_normalized_dcg with tied predictions (_tie_average_dcg): each
    group of equal predictions (descending) gets its mean gain times the sum of the discounts
    of its positions, discounts past top_k being 0; the ideal sorts the targets."""
    n = len(preds)
    discount = [1 / math.log2(i + 2) if i < top_k else 0.0 for i in range(n)]
    dcg, start = 0.0, 0
    for value in sorted(set(preds), reverse=True):
        gains = [t for p, t in zip(preds, target, strict=True) if p == value]
        dcg += sum(gains) / len(gains) * sum(discount[start : start + len(gains)])
        start += len(gains)
    ideal = sum(d * g for d, g in zip(discount, sorted(target, reverse=True), strict=True))
    return dcg / ideal if ideal else 0.0


def test_torchmetrics_ndcg_on_tied_predictions() -> None:
    # RetrievalNormalizedDCG(top_k=k) on ties that straddle the cutoff: ties="expected"
    rng = random.Random(5)
    queries = []
    for _ in range(40):
        n = rng.randint(1, 9)
        queries.append(([rng.randint(0, 3) / 4 for _ in range(n)],
                        [float(rng.randint(0, 3)) for _ in range(n)]))  # fmt: skip
    frame = _tm_frame(queries)
    for k in (1, 2, 3, 5):
        got = preval.evaluate(frame, [f"nDCG@{k}"], ties="expected").collect().sort("query")
        want = [_tm_tie_average_ndcg(p, t, k) for p, t in queries]
        assert got[f"nDCG@{k}"].to_list() == pytest.approx(want, abs=1e-12), k


def test_a_rank_column_is_not_a_score() -> None:
    # recommender output often holds a rank (1 = best), not a score; scores rank descending
    frame = pd.DataFrame({"query": [1, 1, 1], "doc": ["a", "b", "c"], "rank": [1, 2, 3],
                          "label": [1, 0, 0]})  # fmt: skip
    with pytest.raises(preval.MissingColumnError) as info:
        preval.evaluate(frame, ["RR"])
    text = _one_line_error(info)
    assert "'rank'" in text and "higher first" in text and "-rank" in text
    # as the docs say: the score is -rank. a ranked first: RR 1 (score='rank' would give 1/3)
    got = preval.evaluate(frame.assign(score=-frame["rank"]), ["RR"]).collect()
    assert got.rows() == [(1, 1.0)]
    backwards = preval.evaluate(frame, ["RR"], score="rank").collect()
    assert backwards.rows() == [(1, pytest.approx(1 / 3))]
