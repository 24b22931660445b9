"""Measures of the precision-recall and ROC curves: IPrec, AP11, AUC-PR, AUC-ROC, MaxF.

Notation as in ``preval.measures``.
"""

from __future__ import annotations

import polars as pl

from ..ranking import Ranking
from .registry import BETA, INTERPOLATE, REL, Param, Spec, measure

START = Param(
    str, "one", ("one", "first"),
    help="first PR point: (0, 1), or (0, precision at the first operating point) as Spark",
)  # fmt: skip


def _iprec(r: Ranking, level: float, recall: float) -> pl.Expr:
    """max tp(k)/k over relevant ranks k holding at least the cutoff's relevant documents."""
    if r.convention != "trec":
        # LingPipe and VLFeat: the best precision of the curve's points with recall >= r,
        # counting the point (recall 0, precision 1); LingPipe's 1e-13 absorbs 0.1*3 != 0.3
        reached = r.retrieved & (r.recall(level) + 1e-13 >= recall)
        best = r.precision(level).filter(reached.fill_null(False)).max().fill_null(0.0)
        return pl.lit(1.0) if recall <= 1e-13 else best
    R = r.num_rel(level).cast(pl.Float64)
    if r.trec_version < 10:
        needed = (recall * R + 0.9).floor()  # trec_eval 9: (long)(p*R + 0.9)
    else:
        needed = (recall * R + 0.5).floor()  # trec_eval 10: lround(p*R)
    tp = r.tp(level)
    reached = r.rel(level) & (tp >= pl.max_horizontal(needed, pl.lit(1.0)))
    return (tp / r.rank).filter(reached).max().fill_null(0.0)


@measure(
    "IPrec",
    cutoff="required",
    params={"rel": REL},
    aliases=("iprec_at_recall",),
    trec="iprec_at_recall_r",
    fraction=True,
)
def interpolated_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Interpolated precision at recall r: the best precision once recall r is reached.

    IPrec@r = max_{k: rel_k, tp(k) ≥ c} tp(k)/k with c = ⌊r·R + 0.9⌋ (trec_eval 9
    ``iprec_at_recall``) or c = round(r·R) with ``trec_version=10``, and c ≥ 1. 0 when
    recall r is never reached, and so when R = 0. Under ``convention="lingpipe"`` or
    ``"vlfeat"``: the best precision of the PR curve's points with recall ≥ r, including
    the point (recall 0, precision 1), so IPrec@0 = 1.
    """
    return _iprec(r, s.level(r.default_level), s.cutoff)


@measure(
    "AP11",
    cutoff="none",
    params={"rel": REL},
    aliases=("11pt", "11pt_avg", "11-pt"),
    trec="11pt_avg",
)
def eleven_point(r: Ranking, s: Spec) -> pl.Expr:
    """11-point interpolated average precision: mean of IPrec@0, 0.1, ..., 1 (trec 11pt_avg).

    Each IPrec follows the cutoff rule of the trec_eval version (see IPrec). 0 when R = 0.
    """
    level = s.level(r.default_level)
    # Summed in trec_eval's order, from IPrec@1 down to IPrec@0 (m_11pt_avg.c walks its
    # cutoffs from the last): the last bit differs otherwise, and a mean can print differently
    # (0.3813 for trec_eval's 0.3812, tests/test_trec_input.py). The optimizer may re-associate
    # a chain of `+` (and sum_horizontal fixes no order); a prefix sum is sequential by
    # definition.
    points = pl.concat_list([_iprec(r, level, i / 10) for i in range(10, -1, -1)])
    return r.divide(points.list.eval(pl.element().cum_sum()).list.last(), 11)


def _pr_points(r: Ranking, level: float) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Recall, precision and tp at the operating points, in rank order: every ranked row, or
    under ``ties="threshold"`` the end of each run of tied scores (`point_ends`)."""
    ranked, end = r.retrieved, r.point_ends()
    return (
        r.recall(level).filter(ranked).filter(end),
        r.precision(level).filter(ranked).filter(end),
        r.tp(level).filter(ranked).filter(end),
    )


def _trapezoids(x: pl.Expr, y: pl.Expr, x0: float, y0: float | pl.Expr) -> pl.Expr:
    """Σ (x_i − x_{i−1})(y_i + y_{i−1})/2 over consecutive points, from the point (x0, y0)."""
    return ((x - x.shift(1, fill_value=x0)) * (y + y.shift(1, fill_value=y0)) / 2).sum()


@measure(
    "AUC-PR",
    cutoff="none",
    params={"rel": REL, "interpolate": INTERPOLATE, "start": START},
    aliases=("AUCPR", "PR-AUC", "AUPRC", "auc_pr"),
    trec="(vl_pr info.auc, LingPipe areaUnderPrCurve)",
    presets={"areaUnderPR": {"start": "first"}},
)
def auc_pr(r: Ranking, s: Spec) -> pl.Expr:
    """Area under the precision-recall curve of the convention (trapezoids).

    ``trec`` and ``vlfeat`` (vl_pr ``info.auc``): trapezoids from the rank-0 point
    (recall 0, precision 1) through every ranked document; with ``interpolate=true`` the
    curve is piecewise constant, Σ Δrecall · interpolated precision (vl_pr: then equal to AP
    from interpolated precision). ``lingpipe`` (``areaUnderPrCurve``): trapezoids over
    LingPipe's curve, (0, 1) … (1, 0), without points of recall and precision 0; interpolated,
    over its pruned interpolated curve. ``start=first`` starts the curve at (0, P_1), the
    precision of the first operating point, instead of (0, 1): Spark MLlib's
    ``BinaryClassificationMetrics.areaUnderPR`` (since SPARK-21806, Spark 2.3), which with
    ``ties="threshold"`` it equals: trapezoids over (0, P_1), (R_1, P_1), (R_2, P_2), ... at
    Spark's distinct scores (alias ``areaUnderPR``). Under ``ties="threshold"`` the points
    are the ends of the runs of tied scores (`Ranking.point_ends`). Null when R = 0 (no
    recall axis; Spark gives 0 there).
    """
    level = s.level(r.default_level)
    recall, precision, tp = _pr_points(r, level)
    interpolate = s.param("interpolate")
    y0: float | pl.Expr = precision.first() if s.param("start") == "first" else 1.0
    if r.convention == "lingpipe":
        if interpolate:  # the first point of each recall: where tp grows (relevant ranks)
            grows = tp > tp.shift(1, fill_value=0)
            x, y = recall.filter(grows), precision.cum_max(reverse=True).filter(grows)
        else:  # points with recall = precision = 0 are dropped: ranks before the first hit
            hit = tp > 0
            x, y = recall.filter(hit), precision.filter(hit)
        closing = (1.0 - x.last().fill_null(0.0)) * y.last().fill_null(1.0) / 2  # to (1, 0)
        area = _trapezoids(x, y, 0.0, y0) + closing
    elif interpolate:
        step = recall - recall.shift(1, fill_value=0.0)
        area = (step * precision.cum_max(reverse=True)).sum()
    else:
        area = _trapezoids(recall, precision, 0.0, y0)
    return pl.when(r.num_rel(level) > 0).then(area)


@measure(
    "AUC-ROC",
    cutoff="none",
    params={"rel": REL, "interpolate": INTERPOLATE},
    aliases=("AUCROC", "ROC-AUC", "AUROC", "auc_roc", "AUC", "areaUnderROC"),
    trec="(LingPipe areaUnderRocCurve; roc_auc_score with ties=threshold)",
)
def auc_roc(r: Ranking, s: Spec) -> pl.Expr:
    """Area under the ROC curve: trapezoids from (0, 0) through every ranked document to (1, 1).

    A point per ranked document: (FP/N, TP/R), N = negatives (ranked non-relevant plus
    unranked labelled non-relevant, or ``num_negatives``). The documents not ranked close
    the curve with a straight line to (1, 1), as one tie at the bottom (LingPipe's limit
    point; scikit-learn's roc_auc_score on untied data). Tied scores are separate points,
    except under ``ties="threshold"``, which keeps one point per run of tied scores
    (`Ranking.point_ends`): scikit-learn's ``roc_auc_score`` and Spark MLlib's
    ``areaUnderROC`` (alias) exactly, and the mean of this measure under
    ``ties="optimistic"`` and ``ties="pessimistic"``. ``interpolate=true``: LingPipe's
    interpolated ROC (the last point of each false positive rate). Null when R = 0 or N = 0
    (scikit-learn raises there; Spark gives 0 without positives, 1 without negatives).
    """
    level = s.level(r.default_level)
    R, N = r.num_rel(level), r.num_negatives(level)
    negative = (r.retrieved & ~r.judged_rel(level)).cum_sum()
    end = r.point_ends()
    tpr = (r.tp(level) / R).filter(r.retrieved).filter(end)
    fpr = (negative / N).filter(r.retrieved).filter(end)
    if s.param("interpolate"):  # keep a point when the next one (or (1, 1)) moves right
        keep = fpr != fpr.shift(-1, fill_value=1.0)
        tpr, fpr = tpr.filter(keep), fpr.filter(keep)
    closing = (1.0 - fpr.last().fill_null(0.0)) * (1.0 + tpr.last().fill_null(0.0)) / 2
    return pl.when((R > 0) & (N > 0)).then(_trapezoids(fpr, tpr, 0.0, 0.0) + closing)


@measure(
    "MaxF",
    cutoff="none",
    params={"rel": REL, "beta": BETA},
    aliases=("max_f", "maxF"),
    trec="(LingPipe maximumFMeasure)",
)
def max_f(r: Ranking, s: Spec) -> pl.Expr:
    """Maximum F-beta over the operating points: max_k (1 + β²)·tp(k) / (β²·R + k).

    The best F of any cut of the ranking (LingPipe ``maximumFMeasure``; limit points have
    F = 0). Under ``ties="threshold"`` the cuts are the score thresholds (the ends of the
    runs of tied scores): the maximum of Spark's ``fMeasureByThreshold`` or of F over
    scikit-learn's ``precision_recall_curve``. 0 when no relevant document is ranked, and
    so when R = 0.
    """
    level, beta2 = s.level(r.default_level), s.param("beta") ** 2
    f = (1.0 + beta2) * r.tp(level) / (beta2 * r.num_rel(level) + r.rank)
    return f.filter(r.retrieved).filter(r.point_ends()).max().fill_null(0.0)
