"""The conventions peers' users bring (issue 34, item 7): scikit-learn, Spark MLlib, torchmetrics
and TF-Ranking, each case taken from the peer's own tests or documented examples.

Every case copies only the peer's inputs and expected number, cites the file and test it comes
from, and asserts preval's value under the translation of docs/measures.md ("Translation
tables"), to 1e-9 where the peer states its number exactly (an expression, or a value we
derive in a comment), else to the peer's own tolerance. Cases preval cannot reproduce are
listed once, in `UNSUPPORTED`, with the reason.

scikit-learn itself (installed) is also asked directly on random tie-heavy data (Hypothesis),
and Spark's ``BinaryClassificationMetrics.areaUnderPR`` is checked against a plain-Python
transcription of its Scala source (`spark_area_under_pr`) and against numbers Spark itself
gave on tied data (`SPARK_PROBE`).
"""

from __future__ import annotations

import itertools
import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import preval
from tests.profiles import examples

Lists = Sequence[tuple[Sequence[float | None], Sequence[float | None]]]  # (scores, labels)


def frame(lists: Lists) -> pl.DataFrame:
    """One joined table: query i, doc j, the j-th score and label of list i (a None score is
    an unretrieved document, a None label an unjudged one)."""
    rows = [
        (f"q{i:03d}", f"d{j:03d}", s, lab)
        for i, (scores, labels) in enumerate(lists)
        for j, (s, lab) in enumerate(zip(scores, labels, strict=True))
    ]
    schema = {"query": pl.String, "doc": pl.String, "score": pl.Float64, "label": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def per_query(lists: Lists, measure: str, **kw: Any) -> list[float | None]:
    got = preval.evaluate(frame(lists), [measure], **kw).collect().sort("query")
    return got[preval.parse(measure).name].to_list()


def mean(lists: Lists, measure: str, **kw: Any) -> float:
    """preval's summary: the mean over queries of the per-query values (nulls left out)."""
    per = preval.evaluate(frame(lists), [measure], **kw)
    return preval.summarize(per).collect()[preval.parse(measure).name][0]


# --------------------------------------------------------------------------------------------
# Translations of the peers' input shapes
# --------------------------------------------------------------------------------------------


def columns(y_true: list[list[float]], y_score: list[list[float]]) -> Lists:
    """scikit-learn's average="macro": one query per column (label) of the 2-d arrays."""
    return [
        ([row[c] for row in y_score], [row[c] for row in y_true]) for c in range(len(y_true[0]))
    ]


def rows(y_true: list[list[float]], y_score: list[list[float]]) -> Lists:
    """scikit-learn's average="samples" (and the label ranking metrics): one query per row."""
    return list(zip(y_score, y_true, strict=True))


def flat(y_true: list[list[float]], y_score: list[list[float]]) -> Lists:
    """scikit-learn's average="micro": every cell in one query."""
    return [([s for r in y_score for s in r], [t for r in y_true for t in r])]


def one(y_true: Sequence[float], y_score: Sequence[float]) -> Lists:
    """A binary problem: one query."""
    return [(list(y_score), list(y_true))]


def indexed(indexes: list[int], preds: list[float], target: list[float]) -> Lists:
    """torchmetrics' (indexes, preds, target): one query per index."""
    out: dict[int, tuple[list[float], list[float]]] = {}
    for i, p, t in zip(indexes, preds, target, strict=True):
        out.setdefault(i, ([], []))
        out[i][0].append(p)
        out[i][1].append(float(t))
    return [out[i] for i in sorted(out)]


def lists_of(labels: list[list[float]], scores: list[list[float]]) -> Lists:
    """TF-Ranking's (labels, predictions) batches: one query per list; a label < 0 is TF's
    padding (masked out), so it is dropped."""
    out = []
    for lab, sc in zip(labels, scores, strict=True):
        kept = [(s, x) for s, x in zip(sc, lab, strict=True) if x >= 0]
        out.append(([s for s, _ in kept], [x for _, x in kept]))
    return out


def mllib(*cases: tuple) -> Lists:
    """Spark MLlib RankingMetrics' (predicted ids, ground-truth ids[, relevance]) rows.

    The predicted ids are ranked in order (score n − i); every ground-truth id is relevant
    (label 1), or with relevance values, labelled with its value (for ndcgAt); a ground-truth
    id not predicted is an unretrieved row, a predicted id outside the ground truth a judged
    non-relevant one (label 0), so that a query with an empty ground truth still counts (0).
    """
    out = []
    for case in cases:
        pred, lab = case[0], case[1]
        rel = dict(zip(lab, case[2], strict=True)) if len(case) > 2 else dict.fromkeys(lab, 1.0)
        scores: list[float | None] = [float(len(pred) - i) for i in range(len(pred))]
        labels: list[float | None] = [rel.get(p, 0.0) for p in pred]
        missing = [x for x in lab if x not in pred]
        out.append((scores + [None] * len(missing), labels + [rel[x] for x in missing]))
    return out


# --------------------------------------------------------------------------------------------
# The cases
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A peer's expected `value` for `data` and preval's `measure` (with `options`); `how`
    reads preval's value: "mean" (the summary), or a function of the per-query values."""

    id: str
    value: float
    data: Lists
    measure: str
    options: dict[str, Any] = field(default_factory=dict)
    how: str | Callable[[list[Any]], float] = "mean"
    tol: float = 1e-9


SK = "sklearn/metrics/tests/test_ranking.py"
T = {"ties": "threshold"}
E = {"ties": "expected"}
TREC = {"ties": "trec"}  # doc ids d000, d001, ... descending: the last column first

SKLEARN = [
    # test_precision_recall_curve_toydata: average_precision_score, binary
    Case("sk-ap-1", 1.0, one([0, 1], [0, 1]), "AP", T),
    Case("sk-ap-2", 0.5, one([0, 1], [1, 0]), "AP", T),
    Case("sk-ap-3", 0.5, one([1, 0], [1, 1]), "AP", T),
    Case("sk-ap-4", 1.0, one([1, 0], [1, 0]), "AP", T),
    Case("sk-ap-5", 0.5, one([1, 0], [0.5, 0.5]), "AP", T),
    Case("sk-ap-6", 0.0, one([0, 0], [0.25, 0.75]), "AP", T),  # no positive: 0 in both
    Case("sk-ap-7", 1.0, one([1, 1], [0.25, 0.75]), "AP", T),
    # test_precision_recall_curve_toydata: multilabel averages (macro: per column; samples:
    # per row; micro: all cells as one ranking). "weighted" is in UNSUPPORTED.
    Case("sk-ap-macro-1", 0.5, columns([[0, 1], [0, 1]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-samples-1", 1.0, rows([[0, 1], [0, 1]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-micro-1", 1.0, flat([[0, 1], [0, 1]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-macro-2", 0.5, columns([[0, 1], [0, 1]], [[0, 1], [1, 0]]), "AP", T),
    Case("sk-ap-samples-2", 0.75, rows([[0, 1], [0, 1]], [[0, 1], [1, 0]]), "AP", T),
    Case("sk-ap-micro-2", 0.5, flat([[0, 1], [0, 1]], [[0, 1], [1, 0]]), "AP", T),
    Case("sk-ap-macro-3", 0.5, columns([[1, 0], [0, 1]], [[0, 1], [1, 0]]), "AP", T),
    Case("sk-ap-samples-3", 0.5, rows([[1, 0], [0, 1]], [[0, 1], [1, 0]]), "AP", T),
    Case("sk-ap-micro-3", 0.5, flat([[1, 0], [0, 1]], [[0, 1], [1, 0]]), "AP", T),
    Case("sk-ap-macro-4", 0.0, columns([[0, 0], [0, 0]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-samples-4", 0.0, rows([[0, 0], [0, 0]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-micro-4", 0.0, flat([[0, 0], [0, 0]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-macro-5", 1.0, columns([[1, 1], [1, 1]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-samples-5", 1.0, rows([[1, 1], [1, 1]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-micro-5", 1.0, flat([[1, 1], [1, 1]], [[0, 1], [0, 1]]), "AP", T),
    Case("sk-ap-macro-6", 0.5, columns([[1, 0], [0, 1]], [[0.5, 0.5], [0.5, 0.5]]), "AP", T),
    Case("sk-ap-samples-6", 0.5, rows([[1, 0], [0, 1]], [[0.5, 0.5], [0.5, 0.5]]), "AP", T),
    Case("sk-ap-micro-6", 0.5, flat([[1, 0], [0, 1]], [[0.5, 0.5], [0.5, 0.5]]), "AP", T),
    # test_average_precision_constant_values: one threshold, AP = the share of positives
    Case("sk-ap-constant", 0.25, one([1, 0, 0, 0] * 25, [1.0] * 100), "AP", T),
    # test_roc_curve_toydata: roc_auc_score (single-class inputs: nan there, null here)
    Case("sk-roc-1", 1.0, one([0, 1], [0, 1]), "AUC-ROC", T),
    Case("sk-roc-2", 0.0, one([0, 1], [1, 0]), "AUC-ROC", T),
    Case("sk-roc-3", 0.5, one([1, 0], [1, 1]), "AUC-ROC", T),
    Case("sk-roc-4", 1.0, one([1, 0], [1, 0]), "AUC-ROC", T),
    Case("sk-roc-5", 0.5, one([1, 0], [0.5, 0.5]), "AUC-ROC", T),
    Case("sk-roc-samples-1", 1.0, rows([[0, 1], [0, 1]], [[0, 1], [0, 1]]), "AUC-ROC", T),
    Case("sk-roc-micro-1", 1.0, flat([[0, 1], [0, 1]], [[0, 1], [0, 1]]), "AUC-ROC", T),
    Case("sk-roc-samples-2", 0.5, rows([[0, 1], [0, 1]], [[0, 1], [1, 0]]), "AUC-ROC", T),
    Case("sk-roc-micro-2", 0.5, flat([[0, 1], [0, 1]], [[0, 1], [1, 0]]), "AUC-ROC", T),
    Case("sk-roc-macro-3", 0.0, columns([[1, 0], [0, 1]], [[0, 1], [1, 0]]), "AUC-ROC", T),
    Case("sk-roc-samples-3", 0.0, rows([[1, 0], [0, 1]], [[0, 1], [1, 0]]), "AUC-ROC", T),
    Case("sk-roc-micro-3", 0.0, flat([[1, 0], [0, 1]], [[0, 1], [1, 0]]), "AUC-ROC", T),
    Case("sk-roc-macro-4", 0.5, columns([[1, 0], [0, 1]], [[0.5] * 2] * 2), "AUC-ROC", T),
    Case("sk-roc-samples-4", 0.5, rows([[1, 0], [0, 1]], [[0.5] * 2] * 2), "AUC-ROC", T),
    Case("sk-roc-micro-4", 0.5, flat([[1, 0], [0, 1]], [[0.5] * 2] * 2), "AUC-ROC", T),
    # test_dcg_ties: dcg_score averages over ties (ties="expected"), ignore_ties=True is the
    # input order of a stable sort of -score ... whose ties keep the input order
    Case(
        "sk-dcg-ties-1",
        sum(1 / math.log2(i) for i in range(2, 7)) * 2.0,
        one([0, 1, 2, 3, 4], [0] * 5),
        "DCG",
        E,
    ),
    Case(
        "sk-dcg-ties-2",
        (1 / math.log2(2) + 1 / math.log2(3)) * 3.5
        + (1 / math.log2(4) + 1 / math.log2(5) + 1 / math.log2(6)) * 1.0,
        one([0, 1, 2, 3, 4], [0, 0, 0, 1, 1]),
        "DCG",
        E,
    ),
    # ignore_ties=True ranks by np.argsort(y_score)[:, ::-1]: a stable sort reversed puts the
    # highest column first among ties, ties="trec" with doc ids d000... descending
    Case(
        "sk-dcg-ignore-ties-1",
        sum(x / math.log2(i + 2) for i, x in enumerate([4, 3, 2, 1, 0])),
        one([0, 1, 2, 3, 4], [0] * 5),
        "DCG",
        TREC,
    ),
    Case(
        "sk-dcg-ignore-ties-2",
        sum(x / math.log2(i + 2) for i, x in enumerate([4, 3, 2, 1, 0])),
        one([0, 1, 2, 3, 4], [0, 0, 0, 1, 1]),
        "DCG",
        TREC,
    ),
    # test_ndcg_toy_examples: y_true = 3·eye(7)[:5], y_score = 6..0 (no ties)
    *[
        Case(
            f"sk-dcg-toy-{i}-{tag}",
            3 / math.log2(i + 2),
            one([3.0 if j == i else 0.0 for j in range(7)], list(range(6, -1, -1))),
            "DCG",
            o,
        )
        for i in range(5)
        for tag, o in (("ignore-ties", {}), ("ties", E))
    ],
    *[
        Case(
            f"sk-dcg-log10-{i}",
            3 / math.log10(i + 2),
            one([3.0 if j == i else 0.0 for j in range(7)], list(range(6, -1, -1))),
            "DCG(base=10)",
        )
        for i in range(5)
    ],
    *[
        Case(
            f"sk-ndcg-toy-{i}",
            1 / math.log2(i + 2),
            one([3.0 if j == i else 0.0 for j in range(7)], list(range(6, -1, -1))),
            "nDCG",
        )
        for i in range(5)
    ],
    Case(
        "sk-dcg-toy-mean",
        sum(3 / math.log2(i + 2) for i in range(5)) / 5,
        [([6, 5, 4, 3, 2, 1, 0], [3.0 if j == i else 0 for j in range(7)]) for i in range(5)],
        "DCG",
    ),
    Case(
        "sk-dcg-toy-ones",
        sum(3 / math.log2(i) for i in range(2, 9)),
        [([6, 5, 4, 3, 2, 1, 0], [3.0] * 7)] * 5,
        "DCG",
    ),
    Case("sk-ndcg-toy-ones", 1.0, [([6, 5, 4, 3, 2, 1, 0], [3.0] * 7)] * 5, "nDCG"),
]

# check_lrap_toy (test_label_ranking_avp): label_ranking_average_precision_score is AP under
# ties="threshold" (each label's rank is the number of labels scored at least as high)
LRAP_TOY = [
    ([0, 1], [0.25, 0.75], 1),
    ([0, 1], [0.75, 0.25], 1 / 2),
    ([1, 1], [0.75, 0.25], 1),
    ([0, 0, 1], [0.25, 0.5, 0.75], 1),
    ([0, 1, 0], [0.25, 0.5, 0.75], 1 / 2),
    ([0, 1, 1], [0.25, 0.5, 0.75], 1),
    ([1, 0, 0], [0.25, 0.5, 0.75], 1 / 3),
    ([1, 0, 1], [0.25, 0.5, 0.75], (2 / 3 + 1 / 1) / 2),
    ([1, 1, 0], [0.25, 0.5, 0.75], (2 / 3 + 1 / 2) / 2),
    ([0, 0, 1], [0.75, 0.5, 0.25], 1 / 3),
    ([0, 1, 0], [0.75, 0.5, 0.25], 1 / 2),
    ([0, 1, 1], [0.75, 0.5, 0.25], (1 / 2 + 2 / 3) / 2),
    ([1, 0, 0], [0.75, 0.5, 0.25], 1),
    ([1, 0, 1], [0.75, 0.5, 0.25], (1 + 2 / 3) / 2),
    ([1, 1, 0], [0.75, 0.5, 0.25], 1),
    ([1, 1, 1], [0.75, 0.5, 0.25], 1),
    ([0, 0, 1], [0.5, 0.75, 0.25], 1 / 3),
    ([0, 1, 0], [0.5, 0.75, 0.25], 1),
    ([0, 1, 1], [0.5, 0.75, 0.25], (1 + 2 / 3) / 2),
    ([1, 0, 0], [0.5, 0.75, 0.25], 1 / 2),
    ([1, 0, 1], [0.5, 0.75, 0.25], (1 / 2 + 2 / 3) / 2),
    ([1, 1, 0], [0.5, 0.75, 0.25], 1),
    ([1, 1, 1], [0.5, 0.75, 0.25], 1),
    # tie handling
    ([1, 0], [0.5, 0.5], 0.5),
    ([0, 1], [0.5, 0.5], 0.5),
    ([1, 1], [0.5, 0.5], 1),
    ([0, 0, 1], [0.25, 0.5, 0.5], 0.5),
    ([0, 1, 0], [0.25, 0.5, 0.5], 0.5),
    ([0, 1, 1], [0.25, 0.5, 0.5], 1),
    ([1, 0, 0], [0.25, 0.5, 0.5], 1 / 3),
    ([1, 0, 1], [0.25, 0.5, 0.5], (2 / 3 + 1 / 2) / 2),
    ([1, 1, 0], [0.25, 0.5, 0.5], (2 / 3 + 1 / 2) / 2),
    ([1, 1, 1], [0.25, 0.5, 0.5], 1),
    ([1, 1, 0], [0.5, 0.5, 0.5], 2 / 3),
    ([1, 1, 1, 0], [0.5, 0.5, 0.5, 0.5], 3 / 4),
]
SKLEARN += [
    Case(f"sk-lrap-toy-{i}", want, one(t, s), "AP", T) for i, (t, s, want) in enumerate(LRAP_TOY)
]
# check_lrap_only_ties: all scores tied, n_relevant of n_labels relevant -> n_relevant/n_labels
SKLEARN += [
    Case(f"sk-lrap-ties-{n}-{r}", r / n, one([1] * r + [0] * (n - r), [1.0] * n), "AP", T)
    for n in range(2, 10)
    for r in range(1, n)
]
# check_lrap_without_tie_and_increasing_score: first and last label relevant, descending
# scores -> (2/n + 1)/2
SKLEARN += [
    Case(
        f"sk-lrap-ends-{n}",
        (2 / n + 1) / 2,
        one([1] + [0] * (n - 2) + [1], [n - 1.0 - i for i in range(n)]),
        "AP",
        T,
    )
    for n in range(2, 10)
]


# test_top_k_accuracy_score, _ties, _multiclass_with_labels: top_k_accuracy_score is Success@k
# with one query per sample, one document per class (label 1 for the true class). Its ties
# put the highest class index first (a stable argsort reversed): ties="trec", doc ids
# (d000, d001, ...) descending.
TOPK_SCORES = [[0.4, 0.3, 0.2, 0.1], [0.1, 0.3, 0.4, 0.2], [0.4, 0.1, 0.2, 0.3],
               [0.3, 0.2, 0.4, 0.1]]  # fmt: skip
TOPK_TIES = [[5, 5, 7, 0], [1, 5, 5, 5], [0, 0, 3, 3], [1, 1, 1, 1]]


def samples(y_true: list[int], y_score: list[list[float]]) -> Lists:
    return [(row, [1.0 if c == t else 0.0 for c in range(len(row))])
            for t, row in zip(y_true, y_score, strict=True)]  # fmt: skip


SKLEARN += [
    *[
        Case(f"sk-topk-{k}", want, samples([0, 1, 2, 3], TOPK_SCORES), f"Success@{k}", TREC)
        for k, want in ((1, 0.25), (2, 0.5), (3, 0.75))
    ],
    *[
        Case(f"sk-topk-ties-{k}", want, samples([0, 1, 2, 3], TOPK_TIES), f"Success@{k}", TREC)
        for k, want in ((1, 0.25), (2, 0.5), (3, 1.0))
    ],
    # labels=[0, 1, 2, 3] (and ["a", "b", "d", "e"] with "a" -> 0, "e" -> 3), k = 2
    *[
        Case(f"sk-topk-labels-{i}", want, samples(y, TOPK_SCORES), "Success@2", TREC)
        for i, (y, want) in enumerate(
            (([0, 1, 1, 2], 0.75), ([0, 1, 1, 1], 0.5), ([1, 1, 1, 1], 0.5), ([0, 3, 3, 0], 0.75))
        )
    ],
]

# Spark MLlib: RankingMetricsSuite.scala ("Ranking metrics: MAP, NDCG, Recall" and "... with
# relevance", "MAP, NDCG, Recall with few predictions (SPARK-14886)"). The third list has an
# empty ground truth: MLlib averages its 0 in (`mllib` labels its predictions 0).
MLLIB_RUN = mllib(
    ([1, 6, 2, 7, 8, 3, 9, 10, 4, 5], [1, 2, 3, 4, 5]),
    ([4, 1, 5, 6, 2, 7, 3, 8, 9, 10], [1, 2, 3]),
    ([1, 2, 3, 4, 5], []),
)
MLLIB_GRADED = mllib(
    ([1, 6, 2, 7, 8, 3, 9, 10, 4, 5], [1, 2, 3, 4, 5], [3.0, 2.0, 1.0, 1.0, 1.0]),
    ([4, 1, 5, 6, 2, 7, 3, 8, 9, 10], [1, 2, 3], [2.0, 0.0, 0.0]),
    ([1, 2, 3, 4, 5], [], []),
)
MLLIB_FEW = mllib(([1, 6, 2], [1, 2, 3, 4, 5]), ([], [1, 2, 3]))
# MAP: hits of list 1 at ranks 1, 3, 6, 9, 10 (R = 5), of list 2 at 2, 5, 7 (R = 3)
MLLIB_MAP = ((1 + 2 / 3 + 3 / 6 + 4 / 9 + 5 / 10) / 5 + (1 / 2 + 2 / 5 + 3 / 7) / 3) / 3
SPARK_RANKING = [
    *[
        Case(f"mllib-{name}-{k}", want, MLLIB_RUN, f"{name}({k})")
        for name, k, want in (
            ("precisionAt", 1, 1 / 3),
            ("precisionAt", 2, 1 / 3),
            ("precisionAt", 3, 1 / 3),
            ("precisionAt", 4, 0.75 / 3),
            ("precisionAt", 5, 0.8 / 3),
            ("precisionAt", 10, 0.8 / 3),
            ("precisionAt", 15, 8 / 45),
            ("recallAt", 1, 1 / 15),
            ("recallAt", 2, 8 / 45),
            ("recallAt", 3, 11 / 45),
            ("recallAt", 4, 11 / 45),
            ("recallAt", 5, 16 / 45),
            ("recallAt", 10, 2 / 3),
            ("recallAt", 15, 2 / 3),
            ("ndcgAt", 3, 1 / 3),
            # meanAveragePrecisionAt(k): Σ P@hit / min(R, k); at k = 3 list 1 (1 + 2/3)/3,
            # list 2 (1/2)/3
            ("meanAveragePrecisionAt", 1, 1 / 3),
            ("meanAveragePrecisionAt", 2, 0.25),
            ("meanAveragePrecisionAt", 3, ((1 + 2 / 3) / 3 + (1 / 2) / 3) / 3),
        )
    ],
    Case("mllib-map", MLLIB_MAP, MLLIB_RUN, "meanAveragePrecision"),
    Case("mllib-map-rounded", 0.355026, MLLIB_RUN, "meanAveragePrecision", tol=1e-5),
    Case("mllib-map-at-3-rounded", 0.24074, MLLIB_RUN, "meanAveragePrecisionAt(3)", tol=1e-5),
    # the suite's own tolerance (absTol 1e-5) for its rounded nDCG literals
    Case("mllib-ndcgAt-5", 0.328788, MLLIB_RUN, "ndcgAt(5)", tol=1e-5),
    Case("mllib-ndcgAt-10", 0.487913, MLLIB_RUN, "ndcgAt(10)", tol=1e-5),
    Case("mllib-ndcgAt-15", 0.487913, MLLIB_RUN, "ndcgAt(15)", tol=1e-5),
    # with relevance values: P, R and MAP count every ground-truth id as relevant (the
    # suite's numbers are those of the binary test); ndcgAt uses 2^rel − 1
    Case(
        "mllib-graded-map",
        MLLIB_MAP,
        mllib(
            ([1, 6, 2, 7, 8, 3, 9, 10, 4, 5], [1, 2, 3, 4, 5]),
            ([4, 1, 5, 6, 2, 7, 3, 8, 9, 10], [1, 2, 3]),
            ([1, 2, 3, 4, 5], []),
        ),
        "meanAveragePrecision",
    ),
    Case("mllib-graded-ndcgAt-3", 0.511959, MLLIB_GRADED, "ndcgAt(3)", tol=1e-5),
    Case("mllib-graded-ndcgAt-5", 0.487806, MLLIB_GRADED, "ndcgAt(5)", tol=1e-5),
    Case("mllib-graded-ndcgAt-10", 0.518700, MLLIB_GRADED, "ndcgAt(10)", tol=1e-5),
    Case("mllib-graded-ndcgAt-15", 0.518700, MLLIB_GRADED, "ndcgAt(15)", tol=1e-5),
    Case("mllib-few-precisionAt-1", 0.5, MLLIB_FEW, "precisionAt(1)"),
    Case("mllib-few-precisionAt-2", 0.25, MLLIB_FEW, "precisionAt(2)"),
    Case("mllib-few-ndcgAt-1", 0.5, MLLIB_FEW, "ndcgAt(1)"),
    # ndcgAt(2): list 1 hits rank 1 of an ideal of two: 1/(1 + 1/log2(3)), list 2 0
    Case("mllib-few-ndcgAt-2", 1 / (1 + 1 / math.log2(3)) / 2, MLLIB_FEW, "ndcgAt(2)"),
    Case("mllib-few-ndcgAt-2-rounded", 0.30657, MLLIB_FEW, "ndcgAt(2)", tol=1e-5),
    Case("mllib-few-recallAt-1", 0.1, MLLIB_FEW, "recallAt(1)"),
    Case("mllib-few-recallAt-2", 0.1, MLLIB_FEW, "recallAt(2)"),
]

# Spark MLlib: BinaryClassificationMetricsSuite.scala, "binary evaluation metrics": seven
# (score, label) pairs, thresholds 0.8, 0.6, 0.4, 0.1 with tp 1, 3, 3, 4 and fp 0, 1, 2, 3
# (4 positives, 3 negatives). The suite compares areaUnderROC and areaUnderPR with
# AreaUnderCurve.of of these curves; here the trapezoids are summed by hand.
SPARK_PAIRS = [(0.1, 0.0), (0.1, 1.0), (0.4, 0.0), (0.6, 0.0), (0.6, 1.0), (0.6, 1.0), (0.8, 1.0)]
SPARK_BINARY = [([s for s, _ in SPARK_PAIRS], [lab for _, lab in SPARK_PAIRS])]
_REC, _PREC = [1 / 4, 3 / 4, 3 / 4, 1.0], [1.0, 3 / 4, 3 / 5, 4 / 7]
_FPR = [0.0, 1 / 3, 2 / 3, 1.0]
# ROC: (0, 0), (fpr, recall)..., (1, 1); PR: (0, P_1), (recall, precision)...
SPARK_ROC = sum(
    (x1 - x0) * (y0 + y1) / 2
    for (x0, y0), (x1, y1) in zip(
        [(0.0, 0.0), *zip(_FPR, _REC, strict=True)],
        [*zip(_FPR, _REC, strict=True), (1.0, 1.0)],
        strict=True,
    )
)
SPARK_PR = sum(
    (x1 - x0) * (y0 + y1) / 2
    for (x0, y0), (x1, y1) in zip(
        [(0.0, _PREC[0]), *zip(_REC, _PREC, strict=True)][:-1],
        list(zip(_REC, _PREC, strict=True)),
        strict=True,
    )
)
SPARK_BINARY_CASES = [
    Case("spark-areaUnderROC", SPARK_ROC, SPARK_BINARY, "areaUnderROC", T),
    Case("spark-areaUnderPR", SPARK_PR, SPARK_BINARY, "areaUnderPR", T),
    # fMeasureByThreshold: the best F1 is 0.75 (threshold 0.6), F2 5PR/(4P+R) at 0.1: 20/23
    Case("spark-fMeasure-max", 0.75, SPARK_BINARY, "MaxF", T),
    Case("spark-fMeasure2-max", 5 * (4 / 7) / (4 * 4 / 7 + 1), SPARK_BINARY, "MaxF(beta=2)", T),
    # "all examples have positive label" / "negative label": preval has no value where the
    # ROC or PR axis is undefined (test_spark_all_one_class_has_no_value_here)
]
# Spark itself (pyspark 4.0.x, local[2]) on tied scores, asked once with
# BinaryClassificationMetrics(sc.parallelize(pairs, 2)).areaUnderPR / .areaUnderROC; a live
# session costs minutes on a loaded two-core machine, so the numbers are written down here
# (test_area_under_pr_is_sparks_formula checks the formula on random data)
SPARK_PROBE = [
    ([(0.8, 0.0), (0.8, 0.0), (0.8, 1.0), (0.2, 1.0), (0.2, 0.0)], 0.35, 0.41666666666666663),
    ([(0.9, 1.0), (0.8, 0.0), (0.7, 1.0), (0.6, 0.0)], 0.7916666666666666, 0.75),
    ([(0.9, 0.0), (0.8, 1.0), (0.7, 1.0), (0.6, 0.0)], 0.41666666666666663, 0.5),
]
for _i, (_pairs, _pr, _roc) in enumerate(SPARK_PROBE):
    _data = [([s for s, _ in _pairs], [lab for _, lab in _pairs])]
    SPARK_BINARY_CASES += [
        Case(f"spark-probe-pr-{_i}", _pr, _data, "areaUnderPR", T, tol=1e-15),
        Case(f"spark-probe-roc-{_i}", _roc, _data, "areaUnderROC", T, tol=1e-15),
    ]

# torchmetrics: the documented examples of src/torchmetrics/retrieval/*.py and
# functional/retrieval/*.py (the same inputs as tests/unittests/retrieval/*)
TM_IDX = [0, 0, 0, 1, 1, 1, 1]
TM_PREDS = [0.2, 0.3, 0.5, 0.1, 0.3, 0.5, 0.2]
TM_TARGET = [0, 0, 1, 0, 1, 0, 1]
TM = indexed(TM_IDX, TM_PREDS, TM_TARGET)
TM_ONE = one([1, 0, 1], [0.2, 0.3, 0.5])
TM_CURVE = indexed(
    [0, 0, 0, 0, 1, 1, 1], [0.4, 0.01, 0.5, 0.6, 0.2, 0.3, 0.5], [1, 0, 0, 1, 1, 0, 1]
)
TORCHMETRICS = [
    Case("tm-fallout-2", 0.5, TM, "FallOut@2"),  # RetrievalFallOut(top_k=2)
    Case("tm-hitrate-2", 0.5, indexed(TM_IDX, TM_PREDS, [1, 0, 0, 0, 1, 0, 1]), "Success@2"),
    Case("tm-map", 0.7916666666666666, TM, "AP"),  # (1 + (1/2 + 2/3)/2)/2 = 0.79166...
    Case("tm-recall-2", 0.75, TM, "R@2"),
    Case("tm-rprecision", 0.75, TM, "Rprec"),
    Case("tm-precision-2", 0.5, TM, "P@2"),
    Case("tm-mrr", 0.75, TM, "RR"),
    Case("tm-auroc", 0.75, TM, "AUC-ROC", T),
    Case("tm-ndcg", 0.8467, TM, "nDCG", E, tol=5e-5),  # tensor(0.8467): 4 decimals
    # RetrievalRecallAtFixedPrecision(min_precision=0.8) -> (0.5, 1): mean curves P@1..4 =
    # (1, 0.5, 0.6667, 0.5), R@1..4 = (0.5, 0.5, 1, 1); per query here, the same 0.5
    Case("tm-recall-at-precision", 0.5, TM_CURVE, "RecallAtFixedPrecision(min_precision=0.8)"),
    # functional forms, one query
    Case("tm-f-ap", (1 + 2 / 3) / 2, TM_ONE, "AP"),  # tensor(0.8333)
    Case("tm-f-fallout-2", 1.0, TM_ONE, "FallOut@2"),
    Case("tm-f-hitrate-2", 1.0, TM_ONE, "Success@2"),
    Case("tm-f-precision-2", 0.5, TM_ONE, "P@2"),
    Case("tm-f-rprecision", 0.5, TM_ONE, "Rprec"),
    Case("tm-f-recall-2", 0.5, TM_ONE, "R@2"),
    Case("tm-f-rr", 0.5, one([0, 1, 0], [0.2, 0.3, 0.5]), "RR"),
    Case("tm-f-auroc", 0.5, TM_ONE, "AUC-ROC", T),
    # retrieval_normalized_dcg(tensor([.1, .2, .3, 4, 70]), tensor([10, 0, 0, 1, 5])):
    # linear gains: DCG = 5 + 1/log2(3) + 10/log2(6), IDCG = 10 + 5/log2(3) + 1/log2(4)
    Case(
        "tm-f-ndcg",
        (5 + 1 / math.log2(3) + 10 / math.log2(6)) / (10 + 5 / math.log2(3) + 1 / math.log2(4)),
        one([10, 0, 0, 1, 5], [0.1, 0.2, 0.3, 4, 70]),
        "nDCG",
        E,
    ),
    # retrieval_precision_recall_curve(..., max_k=2): P@1, P@2 = 1, 0.5; R@1, R@2 = 0.5
    Case("tm-f-curve-p1", 1.0, TM_ONE, "P@1"),
    Case("tm-f-curve-p2", 0.5, TM_ONE, "P@2"),
    Case("tm-f-curve-r1", 0.5, TM_ONE, "R@1"),
    Case("tm-f-curve-r2", 0.5, TM_ONE, "R@2"),
    # RetrievalPrecisionRecallCurve(max_k=4): the mean curves of the docstring
    *[
        Case(f"tm-curve-p{k}", p, TM_CURVE, f"P@{k}")
        for k, p in ((1, 1.0), (2, 0.5), (3, 2 / 3), (4, 0.5))
    ],
    *[
        Case(f"tm-curve-r{k}", rc, TM_CURVE, f"R@{k}")
        for k, rc in ((1, 0.5), (2, 0.5), (3, 1.0), (4, 1.0))
    ],
    # tests/unittests/retrieval/test_map.py etc.: all-zero predictions score 0 (torchmetrics
    # >= 1.8 counts no document with a prediction <= 0: those are unretrieved here)
    Case("tm-zero-preds-map", 0.0, one([1, 0, 1], [None, None, None]), "AP"),
    Case("tm-zero-preds-mrr", 0.0, one([1, 0, 1], [None, None, None]), "RR"),
]

# TF-Ranking: tensorflow_ranking/python/metrics_test.py and keras/metrics_test.py
TF_SCORES = [[1.0, 3.0, 2.0], [1.0, 2.0, 3.0]]
TF_LABELS = [[0.0, 0.0, 1.0], [0.0, 1.0, 2.0]]
TF = lists_of(TF_LABELS, TF_SCORES)
TF3 = lists_of(
    [[0.0, 0.0, 1.0], [0.0, 1.0, 2.0], [0.0, 1.0, 0.0]],
    [[1.0, 3.0, 2.0], [1.0, 2.0, 3.0], [3.0, 1.0, 2.0]],
)


def dcg(
    label: float,
    rank: int,
    gain: Callable = lambda x: 2**x - 1,
    discount: Callable = lambda r: 1 / math.log2(r + 1),
) -> float:
    return gain(label) * discount(rank)


def weighted_arp(values: list[float | None], data: Lists) -> float:
    """TF-Ranking's mean of ARP over lists, weighted by each list's Σ labels."""
    weights = [sum(max(x or 0.0, 0.0) for x in labels) for _, labels in data]
    return sum(v * w for v, w in zip(values, weights, strict=True)) / sum(weights)  # type: ignore[operator]


TF_RANKING = [
    # test_make_mean_reciprocal_rank_fn; keras test_mean_reciprocal_rank
    Case("tfr-mrr-1", 0.5, TF[:1], "RR"),
    Case("tfr-mrr-2", (0.5 + 1.0) / 2, TF, "RR"),
    Case("tfr-mrr-top1", (0.0 + 1.0) / 2, TF, "RR@1"),
    Case("tfr-mrr-3", (1 / 2 + 1 / 1 + 1 / 3) / 3, TF3, "RR"),
    Case("tfr-mrr-3-top1", (0 + 1 / 1 + 0) / 3, TF3, "RR@1"),
    Case("tfr-mrr-3-top2", (1 / 2 + 1 / 1 + 0) / 3, TF3, "RR@2"),
    Case(
        "tfr-mrr-ragged",
        (1 / 2 + 1 + 1 / 2) / 3,
        lists_of(
            [[1.0, 0.0, 0.0], [0.0, 2.0], [2.0, 0.0, 1.0, 0.0]],
            [[1.0, 2.0, 0.0], [1.0, 2.0], [3.0, 4.0, 2.0, 1.0]],
        ),
        "RR",
    ),
    # test_make_hits_fn
    Case("tfr-hits-1", 1.0, lists_of([[0.0, 0.0, 1.0]], [[1.0, 3.0, 2.0]]), "Success@3"),
    Case(
        "tfr-hits-top1", 0.5, lists_of([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0]], TF_SCORES), "Success@1"
    ),
    # test_make_average_relevance_position_fn; keras ARPMetric docstring
    Case("tfr-arp-1", 2.0, TF[:1], "ARP"),
    Case("tfr-arp-2", (1 * 2 + 2 * 1 + 1 * 2) / 4, TF, "ARP", how=lambda v: weighted_arp(v, TF)),
    Case("tfr-arp-doc", 2.5, lists_of([[0.0, 1.0, 1.0]], [[3.0, 1.0, 2.0]]), "ARP"),
    Case(
        "tfr-arp-ragged",
        1.75,
        lists_of([[0.0, 1.0], [1.0, 2.0, 0.0]], [[2.0, 1.0], [2.0, 5.0, 4.0]]),
        "ARP",
        how=lambda v: weighted_arp(
            v, lists_of([[0.0, 1.0], [1.0, 2.0, 0.0]], [[2.0, 1.0], [2.0, 5.0, 4.0]])
        ),
    ),
    # test_make_precision_fn: without topn the list size divides (all valid)
    Case("tfr-precision-all", 1 / 3, TF[:1], "P(norm=min)@3"),
    Case("tfr-precision-1", 0.0, TF[:1], "P(norm=min)@1"),
    Case("tfr-precision-2", 1 / 2, TF[:1], "P(norm=min)@2"),
    Case("tfr-precision-mean", (1 / 3 + 2 / 3) / 2, TF, "P(norm=min)@3"),
    # test_make_recall_fn
    Case("tfr-recall-all", 1.0, lists_of([[1.0, 0.0, 1.0]], [[1.0, 3.0, 2.0]]), "R@3"),
    Case("tfr-recall-1", 0.0, lists_of([[1.0, 0.0, 1.0]], [[1.0, 3.0, 2.0]]), "R@1"),
    Case("tfr-recall-2", 0.5, lists_of([[1.0, 0.0, 1.0]], [[1.0, 3.0, 2.0]]), "R@2"),
    Case(
        "tfr-recall-mean-2",
        (1 / 2 + 2 / 2) / 2,
        lists_of([[1.0, 0.0, 1.0], [0.0, 1.0, 2.0]], TF_SCORES),
        "R@2",
    ),
    # test_make_mean_average_precision_fn (its _ap: relevance >= 1, divided by all relevant)
    Case("tfr-map-1", 1 / 2, TF[:1], "AP"),
    Case("tfr-map-top1", 0.0, TF[:1], "AP@1"),
    Case("tfr-map-top2", 1 / 2, TF[:1], "AP@2"),
    Case("tfr-map-mean", (1 / 2 + 1.0) / 2, TF, "AP"),
    # test_make_normalized_discounted_cumulative_gain_fn (default gain 2^l − 1)
    Case(
        "tfr-ndcg-1", (dcg(0, 1) + dcg(1, 2) + dcg(0, 3)) / dcg(1, 1), TF[:1], "nDCG(dcg=exp-log2)"
    ),
    Case("tfr-ndcg-mean", ((dcg(1, 2)) / dcg(1, 1) + 1.0) / 2, TF, "nDCG(dcg=exp-log2)"),
    # gain identity and discount 1/rank: the test's expected value is the DCG (ideal 1)
    Case("tfr-ndcg-mod", dcg(1, 2, lambda x: x, lambda r: 1 / r), TF[:1], "nDCG(discount=inverse)"),
    # test_make_discounted_cumulative_gain_fn
    Case("tfr-dcg-1", dcg(0, 1) + dcg(1, 2) + dcg(0, 3), TF[:1], "DCG(dcg=exp-log2)"),
    Case("tfr-dcg-mean", (dcg(1, 2) + dcg(2, 1) + dcg(1, 2)) / 2, TF, "DCG(dcg=exp-log2)"),
    Case("tfr-dcg-mod", dcg(1, 2, lambda x: x, lambda r: 1 / r), TF[:1], "DCG(discount=inverse)"),
]

CASES = SKLEARN + SPARK_RANKING + SPARK_BINARY_CASES + TORCHMETRICS + TF_RANKING

# The peers' cases preval does not reproduce, in one place, with the reason.
UNSUPPORTED = {
    "sklearn average_precision_score / roc_auc_score (average='weighted')": (
        "a support-weighted mean over labels: preval's summary is the plain mean (the "
        "per-query AP and NumRel give it: Σ AP·NumRel / Σ NumRel)"
    ),
    "sklearn roc_auc_score(max_fpr=...), torchmetrics RetrievalAUROC(max_fpr=...)": (
        "McClish's standardised partial AUC: not a preval measure"
    ),
    "sklearn coverage_error, label_ranking_loss": "not preval measures",
    "sklearn / Spark / TF-Ranking sample or example weights": "preval has no weights",
    "Spark BinaryClassificationMetrics(numBins > 0)": "down-sampled curves: not reproduced",
    "sklearn top_k_accuracy_score with a 1-d (binary) y_score": (
        "a threshold on one score (0.5 or 0), a classifier's accuracy, not a ranking"
    ),
}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_peer_case(case: Case) -> None:
    if case.how == "mean":
        got = mean(case.data, case.measure, **case.options)
    else:
        assert callable(case.how)
        got = case.how(per_query(case.data, case.measure, **case.options))
    assert got == pytest.approx(case.value, abs=case.tol), (case.id, got, case.value)


def test_case_ids_are_unique_and_unsupported_are_not_cases() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) > 150
    assert all(reason for reason in UNSUPPORTED.values())


def test_lrap_rows_without_relevant_labels() -> None:
    # check_zero_or_all_relevant_labels: LRAP gives 1 to a row with no relevant (or only
    # relevant) labels; preval's AP gives 0 without a relevant document, 1 with only relevant
    # ones: the translation fills the first with 1 (NumRel = 0)
    data = [([0.3, 0.1, 0.2], [0, 0, 0]), ([0.3, 0.1, 0.2], [1, 1, 1]), ([0.0] * 3, [1, 1, 1])]
    got = preval.evaluate(frame(data), ["AP", "NumRel"], ties="threshold").collect()
    lrap_values = got.select(
        pl.when(pl.col("NumRel") == 0).then(1.0).otherwise(pl.col("AP")).alias("lrap")
    )["lrap"]
    assert lrap_values.to_list() == [1.0, 1.0, 1.0]
    assert got["AP"].to_list() == [0.0, 1.0, 1.0]


def test_spark_all_one_class_has_no_value_here() -> None:
    # BinaryClassificationMetricsSuite: all positive -> areaUnderROC = areaUnderPR = 1, all
    # negative -> 0; preval: no ROC axis without negatives or positives, no PR recall axis
    # without positives (null), as scikit-learn's nan
    for labels in ([1.0, 1.0], [0.0, 0.0]):
        got = preval.evaluate(
            frame([([0.5, 0.5], labels)]), ["areaUnderROC", "AUC-PR"], ties="threshold"
        ).collect()
        assert got["AUC-ROC"][0] is None
    got = preval.evaluate(frame([([0.5, 0.5], [1.0, 1.0])]), ["areaUnderPR"], ties="threshold")
    assert got.collect()["AUC-PR(start=first)"][0] == 1.0


# --------------------------------------------------------------------------------------------
# scikit-learn asked directly, on tie-heavy data
# --------------------------------------------------------------------------------------------

SCORES = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])


@st.composite
def binary_lists(draw: Any, min_queries: int = 1) -> Lists:
    """Queries of 1-12 documents, scores from five values (many ties), labels 0/1, each
    query with at least one positive and one negative (scikit-learn's AUC needs both)."""
    n = draw(st.integers(min_queries, 4))
    out = []
    for _ in range(n):
        size = draw(st.integers(2, 12))
        labels = draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=size, max_size=size))
        labels[0], labels[1] = 1.0, 0.0
        scores = draw(st.lists(SCORES, min_size=size, max_size=size))
        out.append((scores, labels))
    return out


@settings(max_examples=examples(200), deadline=None)
@given(binary_lists(), st.booleans())
def test_threshold_ties_equal_scikit_learn(data: Lists, shuffle: bool) -> None:
    from sklearn.metrics import (
        auc,
        average_precision_score,
        label_ranking_average_precision_score,
        precision_recall_curve,
        roc_auc_score,
    )

    table = frame(data)
    if shuffle:  # the order of the input rows never matters under ties="threshold"
        table = table.reverse()
    measures = ["AP", "AUC-ROC", "AUC-PR", "MaxF"]
    got = preval.evaluate(table, measures, ties="threshold").collect().sort("query")
    for (scores, labels), row in zip(data, got.iter_rows(named=True), strict=True):
        assert row["AP"] == pytest.approx(average_precision_score(labels, scores), abs=1e-12)
        lrap = label_ranking_average_precision_score([labels], [scores])
        assert row["AP"] == pytest.approx(lrap, abs=1e-12)
        assert row["AUC-ROC"] == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
        precision, recall, _ = precision_recall_curve(labels, scores)
        assert row["AUC-PR"] == pytest.approx(auc(recall, precision), abs=1e-12)
        f1 = [
            2 * p * r / (p + r)
            for p, r in zip(precision[:-1], recall[:-1], strict=True)
            if p + r > 0
        ]
        assert row["MaxF"] == pytest.approx(max(f1, default=0.0), abs=1e-12)


@settings(max_examples=examples(30), deadline=None)
@given(binary_lists(), st.sampled_from(["chunked", "partitioned"]))
def test_threshold_ties_in_every_engine(data: Lists, engine: str) -> None:
    # the same numbers from the chunked and partitioned engines, and from separate qrels
    measures = ["AP", "AUC-ROC", "areaUnderPR", "MaxF", "NumRel"]
    table = frame(data)
    want = preval.evaluate(table, measures, ties="threshold").collect()
    with tempfile.TemporaryDirectory() as tmp:  # the engines read files
        path = Path(tmp) / "table.parquet"
        table.write_parquet(path)
        plan = preval.plan(path, measures, ties="threshold")
        got = preval.collect(plan, engine=engine).per_query().collect()
    assert got.equals(want)
    run, qrels = table.drop("label"), table.select("query", "doc", "label")
    separate = preval.evaluate(run, measures, qrels=qrels, ties="threshold").collect()
    assert separate.equals(want)


def spark_area_under_pr(scores: Sequence[float], labels: Sequence[float]) -> float:
    """Spark MLlib's BinaryClassificationMetrics.areaUnderPR, transcribed: one point per
    distinct score, descending, with the cumulative counts there (recall = tp/P, precision =
    tp/(tp + fp)); the curve (0, p_1), (r_1, p_1), (r_2, p_2), ... (pr() since SPARK-21806);
    AreaUnderCurve.of sums trapezoids of consecutive points."""
    positives = sum(1 for x in labels if x > 0.5)
    tp = fp = 0
    points = []
    for s in sorted(set(scores), reverse=True):
        tp += sum(1 for x, lab in zip(scores, labels, strict=True) if x == s and lab > 0.5)
        fp += sum(1 for x, lab in zip(scores, labels, strict=True) if x == s and lab <= 0.5)
        points.append((tp / positives, tp / (tp + fp)))
    curve = [(0.0, points[0][1]), *points]
    return sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in itertools.pairwise(curve))


@settings(max_examples=examples(200), deadline=None)
@given(binary_lists())
def test_area_under_pr_is_sparks_formula(data: Lists) -> None:
    got = preval.evaluate(frame(data), ["areaUnderPR"], ties="threshold").collect()
    for (scores, labels), value in zip(data, got.sort("query")["AUC-PR(start=first)"], strict=True):
        assert value == pytest.approx(spark_area_under_pr(scores, labels), abs=1e-12)


# --------------------------------------------------------------------------------------------
# The new measures against plain-Python references
# --------------------------------------------------------------------------------------------


@st.composite
def graded_lists(draw: Any) -> Lists:
    n = draw(st.integers(1, 4))
    out = []
    for _ in range(n):
        size = draw(st.integers(1, 10))
        labels = draw(
            st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0]), min_size=size, max_size=size)
        )
        # distinct as 32-bit floats too: no tie rule enters
        scores = draw(st.lists(st.integers(0, 1000), min_size=size, max_size=size, unique=True))
        out.append((scores, labels))
    return out


def ranked(scores: Sequence[float], labels: Sequence[float]) -> list[float]:
    return [lab for _, lab in sorted(zip(scores, labels, strict=True), key=lambda p: -p[0])]


@settings(max_examples=examples(100), deadline=None)
@given(graded_lists(), st.integers(1, 12), st.sampled_from([0.0, 0.3, 0.5, 0.8, 1.0]))
def test_new_measures_equal_plain_python(data: Lists, k: int, p: float) -> None:
    ms = [
        "FallOut",
        f"FallOut@{k}",
        f"P(norm=min)@{k}",
        "ARP",
        f"DCG(base=10)@{k}",
        f"DCG(discount=inverse)@{k}",
        f"nDCG(discount=inverse)@{k}",
        f"nDCG(base=10)@{k}",
        f"nDCG@{k}",
        f"RecallAtFixedPrecision(min_precision={p})@{k}",
        f"RecallAtFixedPrecision(min_precision={p})",
    ]
    got = preval.evaluate(frame(data), ms).collect().sort("query")
    got = got.rename({preval.parse(m).name: m for m in ms})  # defaults leave the name
    for (scores, labels), row in zip(data, got.iter_rows(named=True), strict=True):
        rels = ranked(scores, labels)
        n, R = len(rels), sum(1 for x in rels if x >= 1)
        N = n - R
        fp_k = sum(1 for x in rels[:k] if x < 1)
        assert row["FallOut"] == (pytest.approx(1.0) if N else None)
        assert row[f"FallOut@{k}"] == (pytest.approx(fp_k / N) if N else None)
        hits = sum(1 for x in rels[:k] if x >= 1)
        assert row[f"P(norm=min)@{k}"] == pytest.approx(hits / min(k, n))
        total = sum(rels)
        arp = sum((i + 1) * x for i, x in enumerate(rels)) / total if total else 0.0
        assert row["ARP"] == pytest.approx(arp)
        dcg10 = sum(x / math.log10(i + 2) for i, x in enumerate(rels[:k]))
        assert row[f"DCG(base=10)@{k}"] == pytest.approx(dcg10)
        inv = sum(x / (i + 1) for i, x in enumerate(rels[:k]))
        ideal_inv = sum(x / (i + 1) for i, x in enumerate(sorted(rels, reverse=True)[:k]))
        assert row[f"DCG(discount=inverse)@{k}"] == pytest.approx(inv)
        assert row[f"nDCG(discount=inverse)@{k}"] == pytest.approx(
            inv / ideal_inv if ideal_inv else 0.0
        )
        assert row[f"nDCG(base=10)@{k}"] == pytest.approx(row[f"nDCG@{k}"], abs=1e-12)
        for cut, name in (
            (k, f"RecallAtFixedPrecision(min_precision={p})@{k}"),
            (n, f"RecallAtFixedPrecision(min_precision={p})"),
        ):
            best = 0.0
            for j in range(1, min(cut, n) + 1):
                tp = sum(1 for x in rels[:j] if x >= 1)
                if R and tp / j >= p:
                    best = max(best, tp / R)
            assert row[name] == pytest.approx(best)


def test_mllib_spellings_reach_spark_path_names() -> None:
    # the spellings are the registry's (aliases and presets), so every face reads them
    assert preval.parse("meanAveragePrecisionAt(10)").name == "AP(norm=min)@10"
    assert preval.parse("ndcgAt(10)").name == "nDCG(dcg=exp-log2)@10"
    assert preval.parse("precisionAt(5)").name == "P@5"
    assert preval.parse("recallAt(5)").name == "R@5"
    assert preval.parse("meanAveragePrecision").name == "AP"
    assert preval.parse("areaUnderPR").name == "AUC-PR(start=first)"
    assert preval.parse("areaUnderROC").name == "AUC-ROC"


def test_threshold_refuses_what_it_does_not_define() -> None:
    data = frame([([0.5, 0.5, 0.1], [1.0, 0.0, 1.0])])
    with pytest.raises(preval.MeasureError, match="ties='threshold'"):
        preval.evaluate(data, ["P@2"], ties="threshold").collect()
    with pytest.raises(preval.MeasureError, match="cutoff"):
        preval.evaluate(data, ["AP@2"], ties="threshold").collect()
    with pytest.raises(preval.MeasureError, match="discount=inverse"):
        preval.evaluate(data, ["DCG(base=10,discount=inverse)"]).collect()


@settings(max_examples=examples(60), deadline=None)
@given(graded_lists(), st.integers(1, 4))
def test_new_cutoff_measures_in_the_top_k_plan(data: Lists, k: int) -> None:
    # with many rows per query the plan ranks only each query's top k rows (the top-K plan):
    # the same numbers as the full sort, with the query totals from all rows
    ms = [f"P(norm=min)@{k}", f"DCG(base=10)@{k}", f"nDCG(discount=inverse)@{k}", f"nDCG@{k}"]
    table = frame(data)
    want = preval.evaluate(table, ms).collect()
    top = preval.plan(table, ms, rows_per_query=10_000)
    assert top.top_k == k  # the top-K plan was chosen
    assert preval.collect(top).per_query().collect().equals(want)


@settings(max_examples=examples(60), deadline=None)
@given(binary_lists(), st.sampled_from(["trec", "lingpipe"]))
def test_threshold_auc_roc_is_the_mean_of_the_bounds(data: Lists, convention: str) -> None:
    # a tie group is a straight segment of the ROC curve: the area under it is the mean of the
    # optimistic (relevant first) and pessimistic (relevant last) staircases
    table, ms = frame(data), ["AUC-ROC", "AUC-PR(interpolate=true)", "AUC-PR"]
    kw = {"convention": convention}
    got = preval.evaluate(table, ms, ties="threshold", **kw).collect()
    best = preval.evaluate(table, ms, ties="optimistic", **kw).collect()
    worst = preval.evaluate(table, ms, ties="pessimistic", **kw).collect()
    for g, b, w in zip(got["AUC-ROC"], best["AUC-ROC"], worst["AUC-ROC"], strict=True):
        assert g == pytest.approx((b + w) / 2, abs=1e-12)
    # the PR areas are defined (no error, a value for every query with a positive)
    assert got["AUC-PR"].null_count() == 0
    assert got["AUC-PR(interpolate=true)"].null_count() == 0
