"""Average precision and its relatives: AP, GMAP, RR, Bpref, GMBpref, infAP, Judged.

Notation as in ``preval.measures``.
"""

from __future__ import annotations

import polars as pl

from ..errors import MeasureError
from ..ranking import Ranking
from .registry import REL, Spec, _norm, measure


def _expected_precision_sum(r: Ranking, level: float, k: int | None) -> pl.Expr:
    """E[Σ_{k ≤ K, rel_k} tp(k)/k] over the orders of tied documents (McSherry & Najork).

    At the i-th place of a tie group of m documents with g relevant and t relevant above it,
    E[rel · tp] = (g/m)·(t + 1 + (i − 1)(g − 1)/(m − 1)): the document is relevant with
    chance g/m, and then each of the i − 1 places before it in the group holds one of the
    other g − 1 relevant documents with chance (g − 1)/(m − 1).
    """
    before, size, inside, offset = r.tie_groups(r.rel(level))
    others = pl.when(size > 1).then((offset - 1.0) * (inside - 1.0) / (size - 1.0)).otherwise(0.0)
    term = (inside / size) * (before + 1.0 + others) / r.rank
    return r.top(pl.when(r.retrieved).then(term).otherwise(0.0), k).sum()


def _threshold_precision_sum(r: Ranking, level: float) -> pl.Expr:
    """Σ_j (tp(n_j) − tp(n_{j−1})) · tp(n_j)/n_j over the operating points n_j (`point_ends`):
    the relevant documents of a tie group all take the precision at the group's end."""
    end = r.point_ends()
    tp = r.tp(level).filter(r.retrieved).filter(end)
    rank = r.rank.filter(r.retrieved).filter(end)
    return ((tp - tp.shift(1, fill_value=0)) * tp / rank).sum()


@measure(
    "AP",
    cutoff="optional",
    params={"rel": REL, "norm": _norm("R", "min", "hits")},
    aliases=("map", "MAP", "mAP", "map_cut", "AveP", "meanAveragePrecision"),
    trec="map, map_cut_K",
    top_only=True,
    presets={"meanAveragePrecisionAt": {"norm": "min"}},
)
def average_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Average precision: mean of P@k over the ranks k of relevant documents, divided by R.

    AP = (1/D) Σ_{k ≤ K, rel_k} tp(k)/k, with D = R by default (trec_eval ``map`` and
    ``map_cut_K``, ranx); ``norm=min`` uses D = min(R, K); ``norm=hits`` uses D = tp(K), the
    relevant documents in the top K (AP@K of the seed notes, torchmetrics). Spark MLlib's
    ``meanAveragePrecision`` is AP, its ``meanAveragePrecisionAt(K)`` is ``AP(norm=min)@K``
    (alias ``meanAveragePrecisionAt@K``).
    Relevant documents that were not retrieved contribute precision 0.

    Under ``ties="threshold"`` each run of tied scores is one operating point, ranks
    n_1 < n_2 < ... at the ends of the runs: AP = Σ_j (tp(n_j) − tp(n_{j−1})) · tp(n_j)/n_j / R,
    scikit-learn's ``average_precision_score`` (Σ_n (R_n − R_{n−1}) P_n over its distinct
    thresholds) and ``label_ranking_average_precision_score`` (whose rank of a document is
    the number scored at least as high); no cutoff there, a cutoff could split a run.

    Edge cases: 0 when D = 0 (no relevant document, or no hit for ``norm=hits``); 0 for a
    query with nothing retrieved.
    """
    level, k = s.level(r.default_level), s.cutoff
    # the j-th hit, at rank k_j, has precision j / k_j: summed over the hits' ranks, in rank
    # order as trec_eval adds them; reading the short list of hits is cheaper than a running
    # tp over every row. j counts 1, 2, ... up to the number of hits, not the list's
    # `cum_count`, which builds the list a second time (Polars does not share subexpressions
    # in an aggregation)
    norm = s.param("norm")
    if r.expected:
        if norm == "hits":
            msg = "AP(norm=hits) has no closed form under ties='expected' (a ratio of sums)"
            raise MeasureError(msg)
        total = _expected_precision_sum(r, level, k)
    elif r.threshold:
        r.require_no_cutoff(s.name, k)
        total = _threshold_precision_sum(r, level)
    else:
        ranks = r.hit_ranks(level, k)
        total = (pl.int_range(1, r.hits(level, k) + 1, dtype=pl.Int64) / ranks).sum()
    R = r.num_rel(level)
    if norm == "min" and k is not None:
        den = pl.min_horizontal(R, pl.lit(k))
    elif norm == "hits":
        den = r.hits(level, k)
    else:
        den = R
    return r.safe_div(total, den)


@measure(
    "GMAP",
    cutoff="none",
    summary="gmean",
    params={"rel": REL},
    aliases=("gm_map",),
    trec="gm_map",
)
def geometric_map(r: Ranking, s: Spec) -> pl.Expr:
    """Geometric mean of AP over queries (summary); the per-query value is the query's AP.

    GMAP = exp(mean_q log(max(AP_q, 1e-5))), trec_eval ``gm_map``; the 1e-5 floor keeps
    queries with AP = 0 from sending the mean to 0.
    """
    return average_precision(r, s)


@measure(
    "RR",
    cutoff="optional",
    params={"rel": REL},
    aliases=("MRR", "recip_rank", "reciprocal_rank"),
    trec="recip_rank",
    top_only=True,
)
def reciprocal_rank(r: Ranking, s: Spec) -> pl.Expr:
    """Reciprocal rank: 1 / the rank of the first relevant document (within the top K).

    RR@K = max_{k ≤ K, rel_k} 1/k (trec_eval ``recip_rank`` without a cutoff). 0 when no
    relevant document is retrieved (within K), and so when R = 0.
    """
    # not arg_max of the flags, which gave other values in a plan with several systems
    # (tests/test_properties.py, test_systems_are_independent; Polars 2.1)
    level = s.level(r.default_level)
    if r.expected:
        return _expected_rr(r, level, s.cutoff)
    first = r.first_hit(level, s.cutoff)
    return (1.0 / first).fill_null(0.0)


def _expected_rr(r: Ranking, level: float, k: int | None) -> pl.Expr:
    """E[1/rank of the first relevant] (within K) over the orders of tied documents: the sum
    over ranks i of P(the first relevant document is at i) / i (`Ranking.first_hit_chance`)."""
    return r.top(r.first_hit_chance(level) / r.rank, k).sum()


@measure(
    "Bpref",
    cutoff="none",
    params={"rel": REL},
    aliases=("bpref",),
    trec="bpref",
)
def bpref(r: Ranking, s: Spec) -> pl.Expr:
    """Binary preference: how rarely judged non-relevant documents outrank relevant ones.

    Bpref = (1/R) Σ_{relevant retrieved d} (1 − min(n_d, R)/min(N, R)), with n_d the judged
    non-relevant documents ranked above d and N those of the query (trec_eval ``bpref``);
    a term is 1 when n_d = 0. Unjudged documents (no label, or a negative label: pooled but
    not assessed) are ignored. 0 when R = 0.
    """
    level = s.level(r.default_level)
    R, N = r.num_rel(level), r.num_nonrel(level)
    above = (r.judged_nonrel(level) & r.retrieved).cum_sum()
    penalty = r.safe_div(pl.min_horizontal(above, R), pl.min_horizontal(N, R), per_row=True)
    return r.safe_div(pl.when(r.rel(level)).then(1.0 - penalty).otherwise(0.0).sum(), R)


@measure(
    "GMBpref",
    cutoff="none",
    summary="gmean",
    params={"rel": REL},
    aliases=("gm_bpref",),
    trec="gm_bpref",
)
def geometric_bpref(r: Ranking, s: Spec) -> pl.Expr:
    """Geometric mean of Bpref over queries (summary); the per-query value is Bpref.

    exp(mean_q log(max(Bpref_q, 1e-5))), trec_eval ``gm_bpref``.
    """
    return bpref(r, s)


@measure(
    "infAP",
    cutoff="none",
    params={"rel": REL},
    aliases=("infap", "inferred_AP"),
    trec="infAP",
)
def inferred_ap(r: Ranking, s: Spec) -> pl.Expr:
    """Inferred AP (Yilmaz & Aslam 2006): AP estimated from incomplete, sampled judgments.

    At the relevant document of rank k (k > 1), with t = relevant, n = judged non-relevant
    and u = pooled-unjudged (negative label) documents in ranks 1..k−1:
    E[P(k)] = 1/k + ((k−1)/k) · ((t + n + u)/(k−1)) · ((t + ε)/(t + n + 2ε)), ε = 1e-5;
    E[P(1)] = 1. infAP = Σ E[P(k)] / R (trec_eval ``infAP``). Documents absent from the
    judgments occupy ranks but are not counted. 0 when R = 0.
    """
    level = s.level(r.default_level)
    rel, k = r.rel(level), r.rank.cast(pl.Float64)
    t = r.tp(level) - 1  # relevant above: tp(k) counts this relevant document too
    n = (r.judged_nonrel(level) & r.retrieved).cum_sum()
    u = r.pooled_unjudged().cum_sum()
    eps = 1e-5
    expected = 1.0 / k + ((k - 1.0) / k) * ((t + n + u) / (k - 1.0)) * (
        (t + eps) / (t + n + 2 * eps)
    )
    term = pl.when(rel & (k == 1)).then(1.0).when(rel).then(expected).otherwise(0.0)
    return r.safe_div(term.sum(), r.num_rel(level))


@measure(
    "Judged",
    top_only=True,
    cutoff="optional",
    params={"norm": _norm("min", "K")},
    aliases=("judged",),
    trec="(ir_measures Judged)",
)
def judged(r: Ranking, s: Spec) -> pl.Expr:
    """Judged at K: the share of the top min(K, n) ranked documents that has a judgment.

    Judged@K = j(K) / min(K, n), j(K) = documents in the top K with a label ≥ 0, n = ranked
    documents; without a cutoff j(n)/n (ir_measures ``Judged@k`` and ``Judged``, which divide by
    min(K, n) since its PR #48, Dec 2022). ``norm=K`` divides by K instead, counting missing
    ranks beyond n as unjudged (preval before 2026-11). A negative label marks a pooled
    document that was never assessed, as in trec_eval: not judged (ir_measures counts every
    qrels entry, negative labels too). Ties follow the evaluation's rule (ir_measures orders
    them by doc id ascending). 0 when nothing is ranked (ir_measures has no value there: it
    divides by zero); R = 0 does not matter.
    """
    k = s.cutoff
    found = r.top(r.judged(), k).sum()
    if s.param("norm") == "K" and k is not None:
        return r.divide(found, k)
    shown = r.num_ret if k is None else pl.min_horizontal(r.num_ret, pl.lit(k))
    return r.safe_div(found, shown)


@measure(
    "Unjudged",
    top_only=True,
    cutoff="required",
    aliases=("unj",),
    trec="unj_K (trec_eval 10)",
)
def unjudged(r: Ranking, s: Spec) -> pl.Expr:
    """Unjudged at K: the ranked documents in the top K without a judgment, divided by K.

    Unjudged@K = u(K)/K, u(K) = documents in the top K absent from the judgments or with a
    negative label (pooled, never assessed); ranks beyond the n retrieved documents count as
    judged, so this is not 1 − Judged@K when n < K (trec_eval 10's ``unj_K``, I. Soboroff,
    m_unjudged.c, 2023: a "red flag" for a run its test collection covers poorly). After
    ``depth`` and ``judged_only`` (which leaves 0). 0 when nothing is ranked.
    """
    k = s.cutoff
    return r.divide(r.top(r.retrieved & ~r.judged(), k).sum(), k)
