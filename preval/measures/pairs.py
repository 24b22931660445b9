"""Measures of document pairs and overlaps: PairAccuracy (ir_measures' Accuracy) and Compat.

Notation as in ``preval.measures``.
"""

from __future__ import annotations

import polars as pl

from ..errors import MeasureError
from ..ranking import LABEL, SCORE, Ranking, count
from .registry import REL, Param, Spec, _bool, _persistence, measure


@measure(
    "Compat",
    cutoff="none",
    params={
        "p": Param(_persistence, 0.95, help="RBO persistence"),
        "normalize": Param(_bool, True, help="divide by the ideal ranking's own RBO"),
    },
    aliases=("compat", "compatibility"),
    trec="(ir_measures Compat)",
    judged_rows=True,
)
def compat(r: Ranking, s: Spec) -> pl.Expr:
    """Compatibility (Clarke, Vtyurina & Smucker 2021): rank-biased overlap of the ranking
    with an ideal ranking, divided by the ideal's own (ir_measures ``Compat(p=,normalize=)``).

    The ideal ranks the documents with a positive label, by label, ties by the run's score
    (0 for documents not retrieved) then the run's order, so that ties favour the run.
    RBO to depth D = max(n, ideal size): Σ_{d ≤ D} p^(d−1)·|run_d ∩ ideal_d|/d / Σ_{d ≤ D}
    p^(d−1), the overlap of the top d of both. ``normalize=false`` keeps the raw RBO. The
    relevance level does not apply. Reads every judged document as a row (`reads_judged_rows`).
    0 when nothing is retrieved and nothing is relevant. ir_measures orders tied run scores by
    doc id ascending, preval by its ``ties=`` rule.
    """
    if r.stats == "columns":
        msg = "Compat needs every judged document of the query: join the qrels into one table"
        raise MeasureError(msg)
    if r.depth is not None or r.judged_only:
        msg = "Compat does not combine with depth or judged_only"
        raise MeasureError(msg)
    p = s.param("p")
    label = pl.col(LABEL)
    member = (label > 0).fill_null(False)
    score = pl.when(r.retrieved).then(pl.col(SCORE)).otherwise(0.0)
    keys = [member, label.fill_null(0.0), score, r.position]
    ideal_rank = pl.arg_sort_by(keys, descending=[True, True, True, False]).arg_sort() + 1
    depth = pl.max_horizontal(r.num_ret, count(member))
    d = r.position
    term = pl.when(d <= depth).then(pl.lit(p).pow(d - 1) / d).otherwise(0.0)
    after = term.reverse().cum_sum().reverse()  # Σ_{d' ≥ d} term
    both = r.retrieved & member
    # a document common to both counts in the overlap from depth max(its two ranks) on
    meet = pl.max_horizontal(r.rank, ideal_rank).filter(both) - 1
    overlap = after.gather(meet).sum()
    best = (term * pl.min_horizontal(d, count(member))).sum()
    weights = pl.when(d <= depth).then(pl.lit(p).pow(d - 1)).otherwise(0.0).sum()
    raw = r.safe_div(overlap, weights)
    return r.safe_div(overlap, best) if s.param("normalize") else raw


@measure(
    "PairAccuracy",
    cutoff="optional",
    params={"rel": REL},
    aliases=("pairwise_accuracy", "PairwiseAccuracy"),
    trec="(ir_measures Accuracy@k)",
    top_only=True,
)
def pair_accuracy(r: Ranking, s: Spec) -> pl.Expr:
    """Pairwise accuracy: the share of (relevant, non-relevant) pairs of the top K ranked in
    that order (ir_measures ``Accuracy[@k]``, a diagnostic; not the threshold `Accuracy`).

    1 − Σ_{relevant d in the top K} f_d / (F·h), f_d the non-relevant (or unjudged) documents
    ranked above d, F those in the top K, h the relevant ones. Null (no value, left out of
    the mean, as ir_measures reports none) when no relevant document is in the top K; 1 when
    every one of the top K is relevant (ir_measures divides by zero there).
    """
    level, k = s.level(r.default_level), s.cutoff
    rel = r.rel(level)
    nonrel = r.retrieved & ~rel
    above = nonrel.cum_sum()
    h, f = r.hits(level, k), r.top(nonrel, k).sum()
    ordered = r.top(pl.when(rel).then(above).otherwise(0), k).sum()
    value = 1.0 - ordered.cast(pl.Float64) / (f * h).cast(pl.Float64)
    return pl.when(h == 0).then(None).when(f == 0).then(1.0).otherwise(value)
