"""ranx 0.3.21's unsupervised fusion methods (`ranx/fusion/`), each one group_by per
(query, doc) over the stacked frame, its runs side by side (`core.wide`), then expressions
across the runs in run order, so that sums add in ranx's order to the last bit.

Notation: for a document d of a query, s_r its (normalised) score in run r, i_r its 0-based
position there (rank - 1), w_r run r's weight, R(d) the runs that retrieved d and |R(d)| their
number, c the query's candidates (documents any run retrieved), n_r run r's documents for the
query. A run that lacks d contributes nothing to a Σ over R(d) (ranx adds 0.0 for it).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .registry import Rule, method
from .stacked import DOC, FIRST, QUERY, RANK, SCORE, ordered_sum, wide

_RANK_BASED = "none"  # min-max keeps a run's order: the rank-based methods need no norm


def _cols(name: str, runs: int) -> list[pl.Expr]:
    return [pl.col(f"{name}{i}") for i in range(runs)]


def _present(runs: int) -> pl.Expr:
    """|R(d)|: the runs that retrieved the document."""
    return pl.sum_horizontal([c.is_not_null() for c in _cols(RANK, runs)]).cast(pl.Float64)


def _out(frame: pl.LazyFrame, score: pl.Expr) -> pl.LazyFrame:
    return frame.select(QUERY, DOC, score.cast(pl.Float64).alias(SCORE), FIRST, "_dups")


def _i(col: str = RANK) -> pl.Expr:
    """A stacked row's 0-based position, as Int64."""
    return pl.col(col).cast(pl.Int64) - 1


def _int_power(base: float, exponent: pl.Expr, bits: int = 32) -> pl.Expr:
    """``base ** exponent`` for a whole `exponent` >= 0 (< 2**`bits`), computed as numba compiles
    ``float ** int`` (ranx's kernels): by repeated squaring, the squares multiplied in from the
    lowest bit up (a factor of 1 where a bit is 0: exact). ``pow`` rounds differently in the
    last bit, which breaks ties of fused scores the other way."""
    result, square = pl.lit(1.0, pl.Float64), base
    for k in range(bits):
        result = result * pl.when((exponent // 2**k) % 2 == 1).then(square).otherwise(1.0)
        square *= square
    return result


def _combine(stacked: pl.LazyFrame, weights: Sequence[float], value: pl.Expr, how) -> pl.LazyFrame:
    """The runs' values of each (query, doc) side by side, then `how(values, runs)`."""
    runs = len(weights)
    w = wide(stacked, runs, {"v": value})
    return _out(w, how(_cols("v", runs), runs))


# --- the Comb family (Fox and Shaw 1993; Lee 1997) ----------------------------------------------

_FOX = (
    'Fox and Shaw, "Combination of Multiple Searches", TREC-2 1993 '
    "(https://trec.nist.gov/pubs/trec2/papers/txt/23.txt)"
)


@method("comb_sum")
def comb_sum(stacked, weights, params, learned) -> pl.LazyFrame:
    """CombSUM: Σ_{r ∈ R(d)} s_r.

    Source: {fox}; ranx ``comb_sum``.
    """
    return _combine(stacked, weights, pl.col(SCORE), lambda v, n: ordered_sum(v))


@method("comb_mnz")
def comb_mnz(stacked, weights, params, learned) -> pl.LazyFrame:
    """CombMNZ: |R(d)| · Σ_{r ∈ R(d)} s_r.

    Source: {fox}; ranx ``comb_mnz``.
    """
    return _combine(stacked, weights, pl.col(SCORE), lambda v, n: ordered_sum(v) * _present(n))


@method("comb_max")
def comb_max(stacked, weights, params, learned) -> pl.LazyFrame:
    """CombMAX: max_r s_r, a missing document counting -1e9 (ranx's placeholder).

    Source: {fox}; ranx ``comb_max``.
    """
    return _combine(
        stacked, weights, pl.col(SCORE),
        lambda v, n: pl.max_horizontal([c.fill_null(-1e9) for c in v]),
    )  # fmt: skip


@method("comb_min")
def comb_min(stacked, weights, params, learned) -> pl.LazyFrame:
    """CombMIN: min_{r ∈ R(d)} s_r (ranx counts a missing document as 1e9).

    Source: {fox}; ranx ``comb_min``.
    """
    return _combine(
        stacked, weights, pl.col(SCORE),
        lambda v, n: pl.min_horizontal([c.fill_null(1e9) for c in v]),
    )  # fmt: skip


def _median(values: list[pl.Expr]) -> pl.Expr:
    """The median of the non-null values: the middle one, or the mean (a + b) / 2 of the two
    middle ones (numba's ``np.median``)."""
    sorted_ = pl.concat_list(values).list.drop_nulls().list.sort()
    n = sorted_.list.len()
    lo, hi = sorted_.list.get((n - 1) // 2), sorted_.list.get(n // 2)
    return (lo + hi) / 2


@method("comb_med")
def comb_med(stacked, weights, params, learned) -> pl.LazyFrame:
    """CombMED: the median of {s_r : r ∈ R(d)} ((a + b) / 2 of the middle two for an even count).

    Source: {fox}; ranx ``comb_med``.
    """
    return _combine(stacked, weights, pl.col(SCORE), lambda v, n: _median(v))


@method("comb_anz")
def comb_anz(stacked, weights, params, learned) -> pl.LazyFrame:
    """CombANZ: Σ_{r ∈ R(d)} s_r / |R(d)|.

    Source: {fox}; ranx ``comb_anz``.
    """
    return _combine(stacked, weights, pl.col(SCORE), lambda v, n: ordered_sum(v) / _present(n))


@method("comb_gmnz", params={"gamma": 1.0})
def comb_gmnz(stacked, weights, params, learned) -> pl.LazyFrame:
    """CombGMNZ: |R(d)|^γ · Σ_{r ∈ R(d)} s_r (γ = 1 is CombMNZ, γ = 0 CombSUM).

    Source: Lee, "Analyses of Multiple Evidence Combination", SIGIR 1997
    (https://doi.org/10.1145/258525.258587); ranx ``comb_gmnz``. ranx has no default γ;
    preval's is 1.0.
    """
    gamma = float(params["gamma"])
    return _combine(
        stacked, weights, pl.col(SCORE), lambda v, n: ordered_sum(v) * _present(n).pow(gamma)
    )


# --- weighted score combinations (Wu and Crestani 2002) -----------------------------------------


@method("wsum", weighted=True)
def wsum(stacked, weights, params, learned) -> pl.LazyFrame:
    """Weighted sum: Σ_{r ∈ R(d)} w_r · s_r.

    Source: ranx ``wsum`` (the linear combination of Vogt and Cottrell, "Fusion Via a Linear
    Combination of Scores", Information Retrieval 1999).
    """
    return _combine(
        stacked, weights, pl.col(SCORE),
        lambda v, n: ordered_sum([c * w for c, w in zip(v, weights, strict=True)]),
    )  # fmt: skip


@method("wmnz", weighted=True)
def wmnz(stacked, weights, params, learned) -> pl.LazyFrame:
    """WMNZ: (Σ_{r ∈ R(d)} s_r) · (Σ_{r ∈ R(d)} w_r).

    Source: Wu and Crestani, "Data fusion with estimated weights", CIKM 2002
    (https://doi.org/10.1145/584792.584908); ranx ``wmnz``.
    """

    def how(v: list[pl.Expr], n: int) -> pl.Expr:
        w = [pl.when(c.is_not_null()).then(pl.lit(wr)) for c, wr in zip(v, weights, strict=True)]
        return ordered_sum(v) * ordered_sum(w)

    return _combine(stacked, weights, pl.col(SCORE), how)


@method("mixed", weighted=True)
def mixed(stacked, weights, params, learned) -> pl.LazyFrame:
    """Mixed: √|R(d)| · Σ_{r ∈ R(d)} w_r · s_r.

    Source: Wu and Crestani, "Data fusion with estimated weights", CIKM 2002
    (https://doi.org/10.1145/584792.584908); ranx ``mixed``.
    """
    return _combine(
        stacked, weights, pl.col(SCORE),
        lambda v, n: ordered_sum([c * w for c, w in zip(v, weights, strict=True)])
        * _present(n).sqrt(),
    )  # fmt: skip


# --- rank-based methods --------------------------------------------------------------------------


@method(
    "rrf", params={"k": 60}, default_norm=_RANK_BASED,
    # k < 0 divides by zero at the top (k = -1) or ranks the top documents backwards
    rules={"k": Rule("a finite number >= 0", lambda v: v >= 0)},
)  # fmt: skip
def rrf(stacked, weights, params, learned) -> pl.LazyFrame:
    """Reciprocal rank fusion: Σ_{r ∈ R(d)} 1 / (k + i_r + 1), k = 60.

    Source: Cormack, Clarke and Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
    individual Rank Learning Methods", SIGIR 2009 (https://doi.org/10.1145/1571941.1572114);
    ranx ``rrf``. Scores are not read, only each run's order.
    """
    k = params["k"]
    return _combine(stacked, weights, 1 / ((k + _i()) + 1), lambda v, n: ordered_sum(v))


_MOURAO = (
    'Mourão, Martins and Magalhães, "Multimodal medical information retrieval with '
    'unsupervised rank fusion", Computerized Medical Imaging and Graphics 2015 '
    "(https://doi.org/10.1016/j.compmedimag.2014.05.006)"
)


def _isr() -> pl.Expr:
    return 1 / (pl.col(RANK).cast(pl.Int64) ** 2)


@method("isr", default_norm=_RANK_BASED)
def isr(stacked, weights, params, learned) -> pl.LazyFrame:
    """ISR (inverse square rank): |R(d)| · Σ_{r ∈ R(d)} 1 / (i_r + 1)².

    Source: {mourao}; ranx ``isr``. Scores are not read, only each run's order.
    """
    return _combine(stacked, weights, _isr(), lambda v, n: ordered_sum(v) * _present(n))


@method("log_isr", default_norm=_RANK_BASED)
def log_isr(stacked, weights, params, learned) -> pl.LazyFrame:
    """Log_ISR: ln|R(d)| · Σ_{r ∈ R(d)} 1 / (i_r + 1)² (0 for a document of one run only).

    Source: {mourao}; ranx ``log_isr``. Scores are not read, only each run's order.
    """
    return _combine(stacked, weights, _isr(), lambda v, n: ordered_sum(v) * _present(n).log())


@method(
    "logn_isr", params={"sigma": 0.01}, default_norm=_RANK_BASED,
    # ln(|R(d)| + σ) must be defined for |R(d)| = 1
    rules={"sigma": Rule("a finite number > -1", lambda v: v > -1)},
)  # fmt: skip
def logn_isr(stacked, weights, params, learned) -> pl.LazyFrame:
    """LogN_ISR: ln(|R(d)| + σ) · Σ_{r ∈ R(d)} 1 / (i_r + 1)², σ = 0.01.

    Source: {mourao}; ranx ``logn_isr``. Scores are not read, only each run's order.
    """
    sigma = float(params["sigma"])
    return _combine(
        stacked, weights, _isr(), lambda v, n: ordered_sum(v) * (_present(n) + sigma).log()
    )


@method(
    "rbc", params={"phi": 0.8}, default_norm=_RANK_BASED,
    # the persistence of a geometric weight (1 - φ) φ^i: outside [0, 1] it grows or flips sign
    rules={"phi": Rule("a number in [0, 1]", lambda v: 0 <= v <= 1)},
)  # fmt: skip
def rbc(stacked, weights, params, learned) -> pl.LazyFrame:
    """Rank-biased centroid: Σ_{r ∈ R(d)} (1 - φ) · φ^{i_r}, φ = 0.8.

    Source: Bailey, Moffat, Scholer and Thomas, "Retrieval Consistency in the Presence of Query
    Variations", SIGIR 2017 (https://doi.org/10.1145/3077136.3080839); ranx ``rbc``. ranx has
    no default φ; preval's is 0.8. Scores are not read, only each run's order.
    """
    phi = float(params["phi"])
    value = (1 - phi) * _int_power(phi, _i())
    return _combine(stacked, weights, value, lambda v, n: ordered_sum(v))


# --- Borda and Condorcet (Aslam and Montague 2001; Montague and Aslam 2002) ------------------


def _with_counts(w: pl.LazyFrame, runs: int) -> pl.LazyFrame:
    """`w` (from `wide`) with c (``_c``) and each run's n_r (``_n{r}``) per query."""
    counts = [pl.col(f"{RANK}{i}").is_not_null().sum().alias(f"_n{i}") for i in range(runs)]
    per_query = w.group_by(QUERY).agg(pl.len().alias("_c"), *counts)
    return w.join(per_query, on=QUERY, how="left")


def _borda_points(runs: int) -> list[pl.Expr]:
    """Each run's Borda points: c - i_r for a retrieved document, (c - n_r + 1) / 2 for one the
    run did not retrieve."""
    c = pl.col("_c").cast(pl.Int64)
    out = []
    for i in range(runs):
        r = pl.col(f"{RANK}{i}").cast(pl.Int64)
        unranked = (c - pl.col(f"_n{i}").cast(pl.Int64) + 1) / 2
        out.append(pl.when(r.is_null()).then(unranked).otherwise(c - (r - 1)).cast(pl.Float64))
    return out


_ASLAM = (
    'Aslam and Montague, "Models for Metasearch", SIGIR 2001 '
    "(https://doi.org/10.1145/383952.384007)"
)


@method("bordafuse", default_norm=_RANK_BASED)
def bordafuse(stacked, weights, params, learned) -> pl.LazyFrame:
    """BordaFuse: Σ_r B_r(d), B_r(d) = c - i_r, or (c - n_r + 1) / 2 where r lacks d.

    Every run votes for every candidate: a document run r did not retrieve shares the points
    left, (c - n_r + 1) / 2.

    Source: {aslam}; ranx ``bordafuse``. A run without the query gives every candidate
    (c + 1) / 2. Scores are not read, only each run's order.
    """
    runs = len(weights)
    w = _with_counts(wide(stacked, runs, {}), runs)
    return _out(w, ordered_sum(_borda_points(runs)))


@method("weighted_bordafuse", weighted=True, default_norm=_RANK_BASED)
def weighted_bordafuse(stacked, weights, params, learned) -> pl.LazyFrame:
    """Weighted BordaFuse: Σ_r w_r · B_r(d), B_r as in BordaFuse.

    Source: {aslam}; ranx ``weighted_bordafuse``.
    """
    runs = len(weights)
    w = _with_counts(wide(stacked, runs, {}), runs)
    points = [p * wr for p, wr in zip(_borda_points(runs), weights, strict=True)]
    return _out(w, ordered_sum(points))


def _condorcet(stacked: pl.LazyFrame, weights: Sequence[float]) -> pl.LazyFrame:
    runs = len(weights)
    w = wide(stacked, runs, {})
    ranks = [f"{RANK}{i}" for i in range(runs)]
    left = w.select(QUERY, DOC, FIRST, "_dups", *ranks)
    right = w.select(QUERY, pl.col(DOC).alias("_y"), *[pl.col(r).alias(f"{r}_y") for r in ranks])
    pairs = left.join(right, on=QUERY, how="inner").filter(pl.col(DOC) != pl.col("_y"))
    ahead, behind = [], []
    for r, wr in zip(ranks, weights, strict=True):
        x, y = pl.col(r), pl.col(f"{r}_y")
        # a missing document is below every retrieved one (ranx: position 1,000,000)
        x_first = x.is_not_null() & (y.is_null() | (x < y))
        y_first = y.is_not_null() & (x.is_null() | (y < x))
        ahead.append(pl.when(x_first).then(pl.lit(wr)).otherwise(0.0))
        behind.append(pl.when(y_first).then(pl.lit(wr)).otherwise(0.0))
    a, b = ordered_sum(ahead), ordered_sum(behind)
    wins = pl.when(a > b).then(1.0).when(a == b).then(0.5).otherwise(0.0)
    copeland = pairs.group_by(QUERY, DOC).agg(wins.sum().alias("_wins"))
    scored = (
        left.join(copeland, on=[QUERY, DOC], how="left")
        .with_columns(pl.col("_wins").fill_null(0.0), pl.len().over(QUERY).alias("_c"))
        .with_columns(
            pl.struct(-pl.col("_wins"), pl.col(FIRST)).rank("ordinal").over(QUERY).alias("_pos")
        )
    )
    return _out(scored, pl.col("_c").cast(pl.Int64) - pl.col("_pos").cast(pl.Int64) + 1)


_CONDORCET_DOC = """

    Order: the Copeland order of the pairwise majority (x beats y when the runs, weighted,
    that rank x above y outweigh those that rank y above x; a tie counts half a win), ties by
    first occurrence; score c - position + 1 (c down to 1, as ranx). Where the majority is a
    strict total order this is ranx's order; where it has ties or cycles ranx's order is that
    of Python's sort with an inconsistent comparator over a set's order: none to reproduce.

    Cost: a self-join of each query's candidates, Σ_q c_q² rows of pairs (10,000 rows for a
    query of 100 candidates), then one group_by: fine for run depths of hundreds, quadratic
    beyond."""


@method("condorcet", default_norm=_RANK_BASED)
def condorcet(stacked, weights, params, learned) -> pl.LazyFrame:
    """Condorcet fusion: the candidates in the order of the runs' pairwise majority vote.

    Source: Montague and Aslam, "Condorcet fusion for improved retrieval", CIKM 2002
    (https://doi.org/10.1145/584792.584881); ranx ``condorcet``. A document a run did not
    retrieve is below every document it did; two it did not retrieve tie there (no vote).
    """
    return _condorcet(stacked, (1.0,) * len(weights))


@method("weighted_condorcet", weighted=True, default_norm=_RANK_BASED)
def weighted_condorcet(stacked, weights, params, learned) -> pl.LazyFrame:
    """Weighted Condorcet fusion: as Condorcet, each run's vote weighted by w_r.

    Source: Montague and Aslam, "Condorcet fusion for improved retrieval", CIKM 2002
    (https://doi.org/10.1145/584792.584881); ranx ``weighted_condorcet``.
    """
    return _condorcet(stacked, weights)


def _fill_docs() -> None:
    """Complete the docstrings' shared parts (sources, Condorcet's order and cost)."""
    for fn in (comb_sum, comb_mnz, comb_max, comb_min, comb_med, comb_anz):
        fn.__doc__ = fn.__doc__.replace("{fox}", _FOX)
    for fn in (isr, log_isr, logn_isr):
        fn.__doc__ = fn.__doc__.replace("{mourao}", _MOURAO)
    for fn in (bordafuse, weighted_bordafuse):
        fn.__doc__ = fn.__doc__.replace("{aslam}", _ASLAM)
    for fn in (condorcet, weighted_condorcet):
        fn.__doc__ = fn.__doc__.rstrip() + _CONDORCET_DOC


_fill_docs()
