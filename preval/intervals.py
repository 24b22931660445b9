"""Confidence intervals of a mean over queries: Student's t, and the bootstrap over queries
(percentile and BCa) with resamples shared by every system and measure on one query set.

`preval.summarize(..., ci=0.95)` calls these on the per-query values of each by-group. They
work on numpy arrays, one column per (group, measure), the queries as rows:

* ``sums``: the sum of each query's non-null values in the column (one value per query in a
  per-system table; several in an overall row that pools systems), NaN when a value is NaN;
* ``counts``: how many non-null values each query has in the column (0 or 1 per system).

The mean of a column is ``sums.sum() / counts.sum()``, the mean of the non-null values as
`preval.summarize` takes it. A bootstrap resample draws queries (rows), not values: each
query brings all its values, so a pooled row is resampled by query (a cluster bootstrap).

The resample scheme (documented exactly so that it can be reproduced): the query sets are
numbered s = 0, 1, ... (`preval.summarize`: in the order of their first group); the resamples
of set s come in streams of `STREAM` = 16, stream k drawn by ``rng =
numpy.random.default_rng([seed, s, k])``, and each resample of a stream, in turn, draws n
query positions (the set's queries in ascending order of their id) with replacement, ``idx =
rng.integers(0, n, size=n)``. Every column on that set takes the mean over those queries,
``(c @ sums) / (c @ counts)`` with ``c = numpy.bincount(idx, minlength=n)``. One matrix
product per stream of resamples serves every system and measure at once, and the intervals of
two systems on the same queries are paired: they come from the same resampled query sets.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import numpy as np

from . import extras

METHODS = ("t", "percentile", "bca")
# the counts of this many bytes of resamples are held at once (resamples x queries), at least
# one stream's
BLOCK_BYTES = 64 * 2**20
# resamples drawn from one generator (`bootstrap_means`): the unit of work of a thread
STREAM = 16
# numpy's draws release the GIL: the streams of a block are drawn on every core, then one
# matrix product per stream (on BLAS's own threads, never two at once) takes them
THREADS = min(4, os.cpu_count() or 1)


def t_interval(
    mean: np.ndarray, sd: np.ndarray, n: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Student's t interval of a mean: mean ± t_{1-α/2, n-1} · sd / √n, α = 1 - confidence.

    `mean`, `sd` (the sample standard deviation, ddof 1) and `n` (non-null values) are arrays
    of one shape. The interval assumes independent values from a normal distribution (by the
    central limit theorem, approximately for any distribution of finite variance); it is
    what ``scipy.stats.t.interval(confidence, n - 1, mean, sd / sqrt(n))`` and
    ``scipy.stats.ttest_1samp(x, 0).confidence_interval(confidence)`` give.

    Reference: Student (1908), "The probable error of a mean", Biometrika 6(1).

    Edge cases: fewer than 2 values: NaN bounds (no standard deviation, no degrees of
    freedom); sd 0 (all values equal): both bounds are the mean, a zero-width interval.
    """
    stats = extras.require("scipy.stats", "the t interval")
    mean, sd, n = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (mean, sd, n)))
    ok = n >= 2
    quantile = np.full(mean.shape, np.nan)
    quantile[ok] = stats.t.ppf(0.5 + confidence / 2, n[ok] - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = np.where(sd == 0, 0.0, quantile * sd / np.sqrt(n))
    half = np.where(ok, half, np.nan)
    return mean - half, mean + half


def bootstrap_means(
    sums: np.ndarray, counts: np.ndarray | None, resamples: int, entropy: Sequence[int]
) -> np.ndarray:
    """The means of `resamples` bootstrap resamples of the queries (rows), every column at
    once: a resamples x columns matrix.

    Resample b draws n query positions uniformly with replacement and counts how often each
    query was drawn, ``c_b = bincount(idx, minlength=n)``; the mean of column j is
    ``(c_b @ sums[:, j]) / (c_b @ counts[:, j])`` (``counts`` None: every query has one
    value, the mean is ``c_b @ sums[:, j] / n``). The counts of a stream of resamples form a
    matrix C, and C @ sums is one float64 matrix product for every column: the work is one
    draw and one count per (resample, query), and one multiply-add per (resample, query,
    column), with no gathering of values by index.

    The draws: the resamples come in streams of `STREAM` = 16 (the last one shorter); stream
    k uses ``rng = numpy.random.default_rng([*entropy, k])`` and each of its resamples, in
    turn, ``idx = rng.integers(0, n, size=n)``. The streams are independent, so they are
    drawn on `THREADS` threads at once, and the numbers depend neither on how many threads
    nor on the blocks.

    A resample whose drawn queries hold no non-null value of a column has a NaN mean there.

    Reference: Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 6 (the
    bootstrap estimate of a statistic's distribution by resampling the observations).
    """
    n, m = sums.shape
    out = np.empty((resamples, m))
    # a block of counts: whole streams, as many as BLOCK_BYTES holds (at least one)
    per_block = max(1, BLOCK_BYTES // (8 * max(n, 1) * STREAM))
    c = np.empty((min(resamples, per_block * STREAM), n))

    def stream(k: int, first: int) -> None:  # stream k into the rows of c from `first`
        rng = np.random.default_rng([*entropy, k])
        for i in range(first, first + min(STREAM, resamples - k * STREAM)):
            # one call per resample (the draws depend on the calls' sizes); int64 draws,
            # which bincount takes without a copy
            c[i] = np.bincount(rng.integers(0, n, size=n), minlength=n)

    streams = -(-resamples // STREAM)
    threads = 1 if THREADS < 2 or n * resamples < 2**22 else THREADS  # small: no pool
    with ThreadPoolExecutor(threads) if threads > 1 else nullcontext() as pool:
        for k0 in range(0, streams, per_block):
            ks = range(k0, min(streams, k0 + per_block))
            offsets = [(k - k0) * STREAM for k in ks]
            if pool is None:
                for k, first in zip(ks, offsets, strict=True):
                    stream(k, first)
            else:  # the draws on every core; the matrix product below on BLAS's threads
                list(pool.map(stream, ks, offsets))
            start, stop = k0 * STREAM, min(resamples, (k0 + len(ks)) * STREAM)
            block = c[: stop - start]
            # one product per stream: BLAS adds in an order that depends on the product's
            # shape, so one product per block made the last bits of a mean (and so BCa's count
            # of means below the observed one) depend on BLOCK_BYTES; a stream's shape does
            # not depend on the blocks. (counts are small integers: exact in any order)
            totals = np.concatenate(
                [block[i : i + STREAM] @ sums for i in range(0, stop - start, STREAM)]
            )
            if counts is None:
                out[start:stop] = totals / n
            else:
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[start:stop] = totals / (block @ counts)
    return out


def percentile_interval(boot: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap percentile interval: the α/2 and 1 - α/2 quantiles of each column's
    bootstrap means (`boot`, resamples x columns), α = 1 - confidence.

    Quantiles are numpy's default (``method="linear"``: the order statistic at (B - 1)·q,
    interpolated), as ``scipy.stats.bootstrap(..., method="percentile")`` takes them.
    Resamples with a NaN mean (no value drawn) are left out.

    Reference: Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 13.3.
    """
    alpha = 1 - confidence
    levels = np.broadcast_to(np.array([alpha / 2, 1 - alpha / 2]), (boot.shape[1], 2))
    return _quantiles(boot, levels)


def acceleration(sums: np.ndarray, counts: np.ndarray | None) -> np.ndarray:
    """BCa's acceleration â of the mean, from the jackknife, in closed form.

    â = Σ_i d_i³ / (6 (Σ_i d_i²)^{3/2}), d_i = θ̂(·) - θ̂(i), where θ̂(i) is the mean without
    query i: (S - s_i) / (K - k_i) (S, K: the column's total sum and count; s_i, k_i: query
    i's) and θ̂(·) the average of the n leave-one-out means. With one value per query this is
    Σ(x_i - x̄)³ / (6 (Σ(x_i - x̄)²)^{3/2}) (the (n - 1) factors cancel): no resampling needed.
    A column whose d_i are all 0 (equal values) has â = 0.

    Reference: Efron & Tibshirani (1993), An Introduction to the Bootstrap, eq. 14.15.
    """
    if counts is None:
        centred = sums - sums.mean(axis=0)
        num, den = (centred**3).sum(axis=0), (centred**2).sum(axis=0)
    else:
        total, k = sums.sum(axis=0), counts.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            leave_one_out = (total - sums) / (k - counts)
        with warnings.catch_warnings():  # a column of one query leaves no value: NaN, no warning
            warnings.simplefilter("ignore", RuntimeWarning)
            d = np.nanmean(leave_one_out, axis=0) - leave_one_out
        d = np.where(np.isnan(d), 0.0, d)  # a query whose removal leaves no value
        num, den = (d**3).sum(axis=0), (d**2).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / (6 * den**1.5), 0.0)


def bca_interval(
    boot: np.ndarray, observed: np.ndarray, accel: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap BCa interval (bias-corrected and accelerated), per column.

    With ẑ₀ = Φ⁻¹(p̂), p̂ the share of bootstrap means below the observed mean θ̂ (a mean
    equal to θ̂ counts one half, as scipy does), â the acceleration (`acceleration`) and
    z_α = Φ⁻¹(α/2): the bounds are the quantiles of the bootstrap means at

        α₁ = Φ(ẑ₀ + (ẑ₀ + z_α) / (1 - â (ẑ₀ + z_α))),
        α₂ = Φ(ẑ₀ + (ẑ₀ + z_{1-α}) / (1 - â (ẑ₀ + z_{1-α}))),

    taken as in `percentile_interval`. Equal to ``scipy.stats.bootstrap(...,
    method="BCa")`` on the same resamples.

    Reference: Efron & Tibshirani (1993), An Introduction to the Bootstrap, ch. 14.3,
    eq. 14.10 and 14.14.

    Edge case: every bootstrap mean equal to θ̂ (equal values) gives ẑ₀ = 0, â = 0: the
    percentile interval, of zero width.
    """
    special = extras.require("scipy.special", "the BCa interval")
    alpha = 1 - confidence
    valid = ~np.isnan(boot)
    b = valid.sum(axis=0)
    below = (boot < observed).sum(axis=0) + (boot <= observed).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z0 = special.ndtri(below / (2 * b))
        levels = []
        for z in (special.ndtri(alpha / 2), special.ndtri(1 - alpha / 2)):
            levels.append(special.ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z))))
    return _quantiles(boot, np.stack(levels, axis=1))


def _quantiles(boot: np.ndarray, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each column's quantiles of its non-NaN values at its own two levels (`levels`:
    columns x 2), numpy's linear method: the sorted values at h = (B - 1)·q, interpolated
    between the order statistics ⌊h⌋ and ⌊h⌋ + 1. NaN where a level is NaN."""
    ordered = np.sort(boot, axis=0)  # NaN last
    b = (~np.isnan(boot)).sum(axis=0)
    out = np.full(levels.shape, np.nan)
    cols = np.arange(boot.shape[1])
    for j in range(2):
        q = levels[:, j]
        ok = ~np.isnan(q) & (b > 0)
        h = np.where(ok, (b - 1) * np.clip(np.nan_to_num(q), 0, 1), 0.0)
        lo = np.floor(h).astype(np.intp)
        hi = np.minimum(lo + 1, np.maximum(b - 1, 0))
        t = h - lo
        a, c = ordered[lo, cols], ordered[hi, cols]
        # numpy's lerp: from the nearer end, so that a quantile at an order statistic is it
        value = np.where(t >= 0.5, c - (c - a) * (1 - t), a + (c - a) * t)
        out[:, j] = np.where(ok, value, np.nan)
    return out[:, 0], out[:, 1]
