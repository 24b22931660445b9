"""Precision and recall: P, R, Rprec, Success, Hits, F, and the measures of the returned set
(SetP, SetR, SetF, SetRelP, SetAP, Utility, Accuracy, Specificity).

Notation as in ``preval.measures``.
"""

from __future__ import annotations

import math

import polars as pl

from ..errors import MeasureError
from ..ranking import SCORE, Ranking, count
from .registry import ALPHA, BETA, REL, THRESHOLD, Param, Spec, _beta, _norm, _number, measure


@measure(
    "P",
    cutoff="required",
    params={"rel": REL, "norm": _norm("K", "min")},
    aliases=("precision", "precisionAt"),
    trec="P_K",
    top_only=True,
)
def precision(r: Ranking, s: Spec) -> pl.Expr:
    """Precision at K: relevant documents among the top K, divided by K.

    P@K = tp(K)/K; ranks beyond the n retrieved documents count as non-relevant (trec_eval
    ``P_K``, LingPipe ``precisionAt``, Spark MLlib ``precisionAt``). ``norm=min`` divides by
    min(K, n) instead: torchmetrics' ``RetrievalPrecision(top_k=K, adaptive_k=True)`` and
    TF-Ranking's ``PrecisionMetric(topn=K)`` (which divides by the valid documents of the list
    when fewer than K). Defined (0) when R = 0 or nothing was retrieved.
    """
    level, k = s.level(r.default_level), s.cutoff
    found = r.expected_hits(level, k) if r.expected else r.hits(level, k)
    if s.param("norm") == "min":
        return r.safe_div(found, pl.min_horizontal(r.num_ret, pl.lit(k)))
    return r.divide(found, k)


@measure(
    "R",
    cutoff="required",
    params={"rel": REL, "norm": _norm("R", "min")},
    aliases=("recall", "recallAt"),
    trec="recall_K, relative_P_K (norm=min)",
    top_only=True,
    presets={"relative_P": {"norm": "min"}},
)
def recall(r: Ranking, s: Spec) -> pl.Expr:
    """Recall at K: relevant documents in the top K, divided by R.

    R@K = tp(K)/R (trec_eval ``recall_K``, ranx ``recall@k``); ``norm=min`` divides by
    min(R, K) so that a perfect ranking scores 1 even when R > K (trec_eval ``relative_P_K``,
    spelled ``relative_P@K`` here too). 0 when R = 0.
    """
    level, k = s.level(r.default_level), s.cutoff
    R = r.num_rel(level)
    den = pl.min_horizontal(R, pl.lit(k)) if s.param("norm") == "min" else R
    found = r.expected_hits(level, k) if r.expected else r.hits(level, k)
    return r.safe_div(found, den)


def _multiple(text: str) -> float:
    value = float(text)
    if not value > 0 or math.isinf(value):
        msg = "mult must be a positive number"
        raise ValueError(msg)
    return value


@measure(
    "Rprec",
    cutoff="none",
    params={"rel": REL, "mult": Param(_multiple, 1.0, help="rank = mult x R")},
    aliases=("RPrec", "R-prec", "R-precision", "r_precision", "BEP", "Rprec_mult"),
    trec="Rprec, Rprec_mult_x (mult=x)",
)
def r_precision(r: Ranking, s: Spec) -> pl.Expr:
    """R-precision: precision at rank R, the break-even point where precision = recall.

    Rprec = tp(R)/R, ranks beyond n non-relevant (trec_eval ``Rprec``, LingPipe
    ``rPrecision``/``prBreakevenPoint``, ranx ``r-precision``). ``mult=x``: precision at rank
    c = ⌊x·R + 0.9⌋, tp(c)/c (trec_eval ``Rprec_mult_x``; c = R for x = 1). 0 when R = 0
    (1 under ``convention="lingpipe"``).
    """
    level, mult = s.level(r.default_level), s.param("mult")
    R = r.num_rel(level)
    if mult == 1.0:
        value = r.safe_div(r.hits(level, R), R)
    else:  # trec_eval: (long)(x * R + 0.9)
        c = (mult * R.cast(pl.Float64) + 0.9).floor().cast(pl.Int64)
        value = r.safe_div(r.hits(level, c), c)
    if r.convention == "lingpipe":  # LingPipe's rPrecision() is 1 without positives
        return pl.when(R > 0).then(value).otherwise(1.0)
    return value


@measure(
    "Success",
    cutoff="required",
    params={"rel": REL},
    aliases=("success", "hit_rate", "HitRate"),
    trec="success_K",
    top_only=True,
)
def success(r: Ranking, s: Spec) -> pl.Expr:
    """Success at K: 1 if a relevant document is in the top K, else 0 (trec_eval success_K).

    Also ranx ``hit_rate@k``. 0 when R = 0 or nothing is retrieved. Under
    ``ties="expected"``: the chance, over the orders of tied documents, that the first
    relevant document is within K, Σ_{i ≤ K} P(first relevant at rank i) (the hypergeometric
    chance that a tie group straddling K puts a relevant document above it).
    """
    level = s.level(r.default_level)
    if r.expected:
        return r.top(r.first_hit_chance(level), s.cutoff).sum()
    return (r.hits(level, s.cutoff) > 0).cast(pl.Float64)


@measure(
    "Hits",
    cutoff="optional",
    params={"rel": REL},
    aliases=("hits",),
    trec="(ranx hits@k; num_rel_ret without K, but averaged)",
    top_only=True,
)
def hits(r: Ranking, s: Spec) -> pl.Expr:
    """Hits at K: the number of relevant documents in the top K, averaged over queries.

    Hits@K = tp(K) (ranx ``hits@k``; ``hits`` without K: tp(n)). A count per query whose
    summary is the mean, as ranx reports it (`NumRelRet` is the same count summed, as
    trec_eval's ``num_rel_ret``). 0 when R = 0 or nothing is retrieved; a cutoff beyond n
    counts the n retrieved.
    """
    level = s.level(r.default_level)
    if r.expected:
        return r.expected_hits(level, s.cutoff)
    return r.hits(level, s.cutoff).cast(pl.Float64)


@measure(
    "F",
    cutoff="optional",
    params={"rel": REL, "beta": BETA},
    aliases=("F1", "F-measure"),
    trec="set_F (no cutoff)",
    top_only=True,
)
def f_measure(r: Ranking, s: Spec) -> pl.Expr:
    """F-beta of precision and recall at K (all retrieved documents without a cutoff).

    F = (1 + β²)·P·Rc / (β²·P + Rc) with P = tp(K)/K and Rc = tp(K)/R, which simplifies to
    (1 + β²)·tp(K) / (β²·R + K). β > 1 favours recall. Without a cutoff K = n (trec_eval
    ``set_F``). 0 when tp(K) = 0, so also when R = 0 or nothing was retrieved.
    """
    level, beta2 = s.level(r.default_level), s.param("beta") ** 2
    k = r.num_ret if s.cutoff is None else pl.lit(s.cutoff)
    return _f(r, r.hits(level, s.cutoff), k, r.num_rel(level), beta2)


def _f(r: Ranking, tp: pl.Expr, returned: pl.Expr, R: pl.Expr, weight: float) -> pl.Expr:
    """(x + 1)·P·Rc / (x·P + Rc) with P = tp/returned, Rc = tp/R and x = `weight`, in
    trec_eval's order of operations (m_set_F.c): the simplified (x + 1)·tp / (x·R + returned)
    rounds differently (tp = 3, 10 returned, R = 6: 0.375 against trec_eval's
    0.37499999999999994, whose mean over 4 queries prints 0.0938, not trec_eval's 0.0937).
    0 when tp = 0."""
    precision, recall = r.safe_div(tp, returned), r.safe_div(tp, R)
    return r.safe_div((weight + 1.0) * precision * recall, weight * precision + recall)


@measure(
    "SetP",
    cutoff="none",
    params={"rel": REL, "threshold": THRESHOLD},
    aliases=("set_P",),
    trec="set_P",
)
def set_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Precision of the returned set: tp/returned (trec_eval set_P without a threshold).

    Returned = ranked documents with score ≥ threshold; all ranked ones without a threshold.
    0 when nothing is returned.
    """
    tp, fp, _, _ = _set_counts(r, s)
    return r.safe_div(tp, tp + fp)


@measure(
    "SetR",
    cutoff="none",
    params={"rel": REL, "threshold": THRESHOLD},
    aliases=("set_recall", "Sensitivity", "TPR"),
    trec="set_recall",
)
def set_recall(r: Ranking, s: Spec) -> pl.Expr:
    """Recall of the returned set: tp/R (trec_eval set_recall without a threshold).

    Returned = ranked documents with score ≥ threshold. 0 when R = 0.
    """
    tp, _, R, _ = _set_counts(r, s)
    return r.safe_div(tp, R)


def _returned(r: Ranking, s: Spec) -> pl.Expr:
    """Ranked documents returned at the measure's threshold (score >= threshold)."""
    threshold = s.param("threshold")
    if threshold is None:
        return r.retrieved
    return r.retrieved & (pl.col(SCORE) >= threshold)


def _set_counts(r: Ranking, s: Spec) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """(tp, fp, R, N) of the returned set."""
    level = s.level(r.default_level)
    returned = _returned(r, s)
    tp = count(returned & r.judged_rel(level))
    return tp, count(returned) - tp, r.num_rel(level), r.num_negatives(level)


@measure(
    "SetF",
    cutoff="none",
    params={
        "rel": REL,
        "beta": Param(_beta, 1.0, help="trec_eval set_F weight x = beta squared"),
        "fbeta": Param(_beta, None, help="F-beta's beta (preval): x = fbeta^2"),
        "alpha": ALPHA,
        "threshold": THRESHOLD,
    },
    aliases=("set_F",),
    trec="set_F, set_F.x",
)
def set_f(r: Ranking, s: Spec) -> pl.Expr:
    """F of the returned set: (1 + x)·tp / (x·R + returned), returned = score ≥ threshold.

    ``beta=x`` is trec_eval's ``set_F.x`` parameter, and ir_measures' ``SetF(beta=x)``, which
    passes it to trec_eval: the weight x in (x + 1)·P·R / (x·P + R), i.e. β² of F_β
    (``SetF(beta=4)`` is F_2). ``fbeta=b`` is F_b with b as β (x = b², preval's own
    spelling, as in ``F(beta=b)@K`` and scikit-learn's ``fbeta_score``); ``alpha=a`` the seed
    lecture notes' F_α = 1/(α/P + (1 − α)/R), x = 1/α − 1. At most one of the three. Without a
    threshold every ranked document is returned (trec_eval ``set_F``). 0 when tp = 0 (so when
    R = 0 or nothing is returned).
    """
    given = [k for k, _ in s.given if k in ("beta", "fbeta", "alpha")]
    if len(given) > 1:
        msg = f"SetF takes one of beta (trec_eval weight), fbeta, alpha; got {', '.join(given)}"
        raise MeasureError(msg)
    alpha, fbeta = s.param("alpha"), s.param("fbeta")
    if alpha is not None:
        weight = 1.0 / alpha - 1.0
    elif fbeta is not None:
        weight = fbeta**2
    else:
        weight = s.param("beta")
    tp, fp, R, _ = _set_counts(r, s)
    return _f(r, tp, tp + fp, R, weight)


@measure(
    "SetRelP",
    cutoff="none",
    params={"rel": REL},
    aliases=("set_relative_P", "SetRelativeP"),
    trec="set_relative_P",
)
def set_relative_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Relative set precision: tp / min(n, R), precision over the best possible for the set.

    trec_eval ``set_relative_P`` over all n retrieved documents. 0 when n = 0 or R = 0.
    """
    level = s.level(r.default_level)
    tp, R = r.hits(level, None), r.num_rel(level)
    return r.safe_div(tp, pl.min_horizontal(r.num_ret, R))


@measure(
    "SetAP",
    cutoff="none",
    params={"rel": REL},
    aliases=("set_map",),
    trec="set_map",
)
def set_ap(r: Ranking, s: Spec) -> pl.Expr:
    """Unranked set AP: tp² / (n·R), SetP · SetR of the n retrieved documents.

    trec_eval ``set_map``, ir_measures ``SetAP``. 0 when n = 0 or R = 0.
    """
    level = s.level(r.default_level)
    tp = r.hits(level, None).cast(pl.Float64)
    return r.safe_div(tp * tp, r.num_ret * r.num_rel(level))


@measure(
    "Utility",
    cutoff="none",
    params={
        "rel": REL,
        "a": Param(_number, 1.0, help="worth of a relevant retrieved document"),
        "b": Param(_number, -1.0, help="worth of a non-relevant retrieved document"),
        "c": Param(_number, 0.0, help="worth of a relevant document not retrieved"),
        "d": Param(_number, 0.0, help="worth of a non-relevant document not retrieved"),
        "docs": Param(_number, 0.0, help="documents in the collection (trec_eval -N)"),
    },
    aliases=("utility",),
    trec="utility, utility.a,b,c,d",
)
def utility(r: Ranking, s: Spec) -> pl.Expr:
    """Set utility: a·tp + b·(n − tp) + c·(R − tp) + d·(docs + tp − n − R).

    trec_eval ``utility.a,b,c,d`` (default 1, −1, 0, 0), with ``docs`` its ``-N`` collection
    size (0 by default, as there). Averaged over queries in the summary, as trec_eval does.
    Nothing retrieved: c·R + d·(docs − R); may be negative.
    """
    level = s.level(r.default_level)
    tp = r.hits(level, None).cast(pl.Float64)
    n, R = r.num_ret.cast(pl.Float64), r.num_rel(level).cast(pl.Float64)
    a, b, c, d, docs = (s.param(k) for k in ("a", "b", "c", "d", "docs"))
    return a * tp + b * (n - tp) + c * (R - tp) + d * (docs + tp - n - R)


@measure(
    "Accuracy",
    cutoff="none",
    params={"rel": REL, "threshold": THRESHOLD},
    aliases=("accuracy",),
)
def accuracy(r: Ranking, s: Spec) -> pl.Expr:
    """Accuracy at a score cut: (tp + tn) / (R + N), tn = N − fp (negatives not returned).

    Returned = ranked documents with score ≥ threshold (all ranked ones without a threshold).
    0 when R + N = 0.
    """
    tp, fp, R, N = _set_counts(r, s)
    return r.safe_div(tp + N - fp, R + N)


@measure(
    "Specificity",
    cutoff="none",
    params={"rel": REL, "threshold": THRESHOLD},
    aliases=("specificity", "TNR"),
)
def specificity(r: Ranking, s: Spec) -> pl.Expr:
    """Specificity (rejection recall) at a score cut: tn / N, tn = N − fp. Null when N = 0."""
    _, fp, _, N = _set_counts(r, s)
    return pl.when(N > 0).then((N - fp) / N)


@measure(
    "FallOut",
    cutoff="optional",
    params={"rel": REL},
    aliases=("fallout", "fall_out", "Fallout"),
    trec="(torchmetrics RetrievalFallOut)",
)
def fall_out(r: Ranking, s: Spec) -> pl.Expr:
    """Fall-out at K: the share of the query's non-relevant documents ranked in the top K.

    FallOut@K = (min(K, n) − tp(K)) / N, N = the query's negatives as for AUC-ROC (ranked
    non-relevant documents, unjudged ones included, plus unranked labelled non-relevant
    ones, or ``num_negatives``); without K all n ranked documents (1 − Specificity of the
    ranked set). torchmetrics' ``RetrievalFallOut(top_k=K)`` (Manning et al., IR book §8.3).
    Lower is better. Null when N = 0: torchmetrics' functional form gives 0 there, its
    ``RetrievalFallOut`` module follows ``empty_target_action`` (default ``"pos"``: 1).
    """
    level, k = s.level(r.default_level), s.cutoff
    fp = r.top(r.retrieved & ~r.judged_rel(level), k).sum()
    N = r.num_negatives(level)
    return pl.when(N > 0).then(fp / N)


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        msg = "min_precision must be in [0, 1]"
        raise ValueError(msg)
    return value


@measure(
    "RecallAtFixedPrecision",
    cutoff="optional",
    params={
        "rel": REL,
        "min_precision": Param(_share, 0.0, help="the precision a cut must keep"),
    },
    aliases=("recall_at_fixed_precision",),
    trec="(torchmetrics RetrievalRecallAtFixedPrecision)",
)
def recall_at_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Recall at a fixed precision: the best recall of a cut k ≤ K whose precision is at least
    ``min_precision``.

    max {tp(k)/R : k ≤ min(K, n), tp(k)/k ≥ p} (all ranks without K), 0 when no cut
    qualifies or R = 0. torchmetrics' ``RetrievalRecallAtFixedPrecision(min_precision=p,
    max_k=K)`` on one query (ranks past n add no recall). On several queries torchmetrics
    first averages P@k and R@k over the queries and takes the best k of the mean curves:
    max {mean R@k : k ≤ K, mean P@k ≥ p}, a function of preval's summary of P@1..K and
    R@1..K (docs/measures.md). The k it also reports is the largest k reaching that recall
    with precision ≥ p, and K when the recall is 0.
    """
    level, p = s.level(r.default_level), s.param("min_precision")
    kept = r.retrieved & (r.precision(level) >= p)
    best = r.top(pl.when(kept).then(r.recall(level)), s.cutoff).max()
    return best.fill_null(0.0)
