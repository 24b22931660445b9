"""Score normalisations, per run and query: ranx 0.3.21's seven (`ranx/normalization/`), each a
Polars expression over the (run, query) window, with ranx's guards and edge cases.

In the formulas, s is a document's score in its run and query, n the run's documents for the
query, i the document's 0-based position (rank - 1), c the query's candidates (documents any run
retrieved for it). ``max(x, 1e-9)`` is ranx's guard against a zero denominator: a query whose
scores are all equal (or hold one document) normalises to 0 (min-max, sum, zmuv).
"""

from __future__ import annotations

import polars as pl

from .registry import norm
from .stacked import DOC, FIRST, QUERY, RANK, RUN, SCORE, first_key, rank_by

_G = [RUN, QUERY]
_EPS = 1e-9  # ranx's floor of every denominator


def _total(expr: pl.Expr) -> pl.Expr:
    """The sum of `expr` over the (run, query) window, added one by one in rank order, as ranx's
    loops add them: Polars' own sum adds in another order, and a last bit of difference
    breaks a tie of fused scores the other way."""
    return expr.sort_by(RANK).cum_sum().last().over(_G)


def _scored(stacked: pl.LazyFrame, expr: pl.Expr) -> pl.LazyFrame:
    return stacked.with_columns(expr.alias(SCORE))


@norm("none")
def none(stacked: pl.LazyFrame) -> pl.LazyFrame:
    """No normalisation: the scores as the runs give them."""
    return stacked


@norm("min-max")
def min_max(stacked: pl.LazyFrame) -> pl.LazyFrame:
    """Min-max: (s - min) / max(max - min, 1e-9); all-equal scores (or one document) give 0.

    Source: ranx ``min_max_norm`` (Lee, "Analyses of Multiple Evidence Combination", SIGIR 1997).
    The order of the run is unchanged.
    """
    s = pl.col(SCORE)
    lo, hi = s.min().over(_G), s.max().over(_G)
    return _scored(stacked, (s - lo) / pl.max_horizontal(hi - lo, pl.lit(_EPS)))


@norm("min-max-inverted")
def min_max_inverted(stacked: pl.LazyFrame) -> pl.LazyFrame:
    """Min-max inverted: (max - s) / max(max - min, 1e-9), for runs whose low scores are best.

    Source: ranx ``min_max_norm(invert=True)``. The run is ranked again by the new scores
    (ranx sorts it again): ascending original score, tied documents kept in their order.
    """
    s = pl.col(SCORE)
    lo, hi = s.min().over(_G), s.max().over(_G)
    out = _scored(stacked, (hi - s) / pl.max_horizontal(hi - lo, pl.lit(_EPS)))
    return out.with_columns(rank_by([SCORE], tie=RANK))


@norm("max")
def max_(stacked: pl.LazyFrame) -> pl.LazyFrame:
    """Max: s / max(max, 1e-9) (a run whose scores are all <= 0 is divided by 1e-9, as ranx).

    Source: ranx ``max_norm`` (Lee 1997). The order of the run is unchanged.
    """
    s = pl.col(SCORE)
    return _scored(stacked, s / pl.max_horizontal(s.max().over(_G), pl.lit(_EPS)))


@norm("sum")
def sum_(stacked: pl.LazyFrame) -> pl.LazyFrame:
    """Sum: (s - min) / max(Σs - n·min, 1e-9), the shifted scores summing to 1.

    Source: ranx ``sum_norm`` (Montague and Aslam, "Relevance Score Normalization for
    Metasearch", CIKM 2001). The order of the run is unchanged.
    """
    s = pl.col(SCORE)
    lo = s.min().over(_G)
    denominator = _total(s) - lo * pl.len().over(_G)
    return _scored(stacked, (s - lo) / pl.max_horizontal(denominator, pl.lit(_EPS)))


@norm("zmuv")
def zmuv(stacked: pl.LazyFrame) -> pl.LazyFrame:
    """ZMUV (zero mean, unit variance): (s - mean) / max(std, 1e-9), std the population one.

    Source: ranx ``zmuv_norm`` (Montague and Aslam 2001). The order of the run is unchanged.
    """
    s = pl.col(SCORE)
    # numpy's mean and std as numba compiles them: sums in order, the std a power 0.5
    mean = _total(s) / pl.len().over(_G)
    std = (_total((s - mean) ** 2) / pl.len().over(_G)) ** 0.5
    return _scored(stacked, (s - mean) / pl.max_horizontal(std, pl.lit(_EPS)))


@norm("rank")
def rank(stacked: pl.LazyFrame) -> pl.LazyFrame:
    """Rank: 1 - i / n: 1 for the top document, 1/n for the last.

    Source: ranx ``rank_norm`` (Renda and Straccia, "Web Metasearch: Rank vs. Score Based Rank
    Aggregation Methods", SAC 2003). The order of the run is unchanged.
    """
    i = pl.col(RANK).cast(pl.Int64) - 1
    return _scored(stacked, 1 - i / pl.len().over(_G))


@norm("borda")
def borda(stacked: pl.LazyFrame) -> pl.LazyFrame:
    """Borda: 1 - i / c, or 0.5 - (n - 1) / (2c) for a candidate the run did not retrieve.

    The candidates a run did not retrieve get the mean of the points left, and are added to
    the run as rows.

    Source: ranx ``borda_norm`` (Renda and Straccia 2003). A run without the query gives every
    candidate (c + 1) / (2c). The run is ranked again: its documents first, in their order, then
    the added ones by first occurrence (the fused tie rule); ranx leaves them in the iteration
    order of a Python set, which changes from one process to the next.
    """
    candidates = stacked.group_by(QUERY, DOC).agg(first_key().alias(FIRST))
    candidates = candidates.with_columns(pl.len().over(QUERY).alias("_c"))
    counts = stacked.group_by(RUN, QUERY).agg(pl.len().alias("_n"))
    runs = stacked.select(pl.col(RUN).unique())
    full = (
        candidates.join(runs, how="cross")
        .join(stacked.select(QUERY, DOC, RUN, RANK), on=[QUERY, DOC, RUN], how="left")
        .join(counts, on=[RUN, QUERY], how="left")
        .with_columns(pl.col("_n").fill_null(0))
    )
    c, n, r = pl.col("_c").cast(pl.Int64), pl.col("_n").cast(pl.Int64), pl.col(RANK)
    absent = r.is_null()
    score = pl.when(absent).then(0.5 - (n - 1) / (2 * c)).otherwise(1 - (r.cast(pl.Int64) - 1) / c)
    new_rank = (
        pl.when(absent)
        .then(n + pl.col(FIRST).rank("ordinal").over([RUN, QUERY, absent]))
        .otherwise(r)
    )
    return full.select(
        QUERY, DOC, RUN, score.cast(pl.Float64).alias(SCORE), new_rank.cast(pl.UInt32).alias(RANK)
    )
