"""Meta-evaluation: do two rankings of the same systems agree, and can a measure tell systems
apart?

`agreement` ranks the systems twice (two measures of one per-query table, one measure of two
tables: two sets of judgments, two query sets, or two summary tables) and reports Kendall's
tau-b, the AP rank correlation tau_AP (Yilmaz, Aslam & Robertson 2008) and its version for
ties in both rankings (Urbano & Marrero 2017), with every pair of systems the two rankings
order differently. `discriminative_power` (Sakai 2006) runs `preval.compare`'s paired test on
every pair of systems and reports the share significant at alpha and the achieved
significance level (ASL) curve.

Both build lazy plans: the numbers are computed when a result is collected (the statistics
need every system at once, so that step collects its small input of one row per system).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

from . import extras, io
from .errors import InputError
from .significance import check_options, compare

STATISTICS = {
    "measure_a": pl.String, "measure_b": pl.String, "systems": pl.Int64, "pairs": pl.Int64,
    "concordant": pl.Int64, "discordant": pl.Int64, "ties_a": pl.Int64, "ties_b": pl.Int64,
    "kendall_tau": pl.Float64, "tau_ap": pl.Float64, "tau_ap_b": pl.Float64,
}  # fmt: skip
SWAPPED = {
    "first": pl.String, "second": pl.String, "rank_a_first": pl.Int64,
    "rank_a_second": pl.Int64, "rank_b_first": pl.Int64, "rank_b_second": pl.Int64,
    "a_first": pl.Float64, "a_second": pl.Float64, "b_first": pl.Float64,
    "b_second": pl.Float64,
}  # fmt: skip
POWER = {
    "measure": pl.String, "test": pl.String, "alpha": pl.Float64, "systems": pl.Int64,
    "queries": pl.Int64, "pairs": pl.Int64, "significant": pl.Int64,
    "discriminative_power": pl.Float64,
}  # fmt: skip
CURVE = {
    "measure": pl.String, "rank": pl.Int64, "p_value": pl.Float64, "system": pl.String,
    "baseline": pl.String,
}  # fmt: skip


class Agreement(NamedTuple):
    """What `agreement` returns: two lazy frames (unpack them, or read them by name)."""

    statistics: pl.LazyFrame
    """One row: the systems, pairs, concordant and discordant pairs, ties, Kendall's tau-b,
    tau_AP (a the reference) and tau_AP-b (symmetric)."""
    swapped: pl.LazyFrame
    """One row per discordant pair: ``first`` is the system ranking `a` puts above
    ``second``, which ranking `b` puts below it; their ranks and scores in both."""


class DiscriminativePower(NamedTuple):
    """What `discriminative_power` returns: two lazy frames, computed by one comparison."""

    summary: pl.LazyFrame
    """One row per measure: the pairs of systems, how many are significant (p < alpha) and
    their share, the discriminative power."""
    curve: pl.LazyFrame
    """The ASL curve: every pair's p-value, sorted ascending per measure, against its rank."""


def agreement(
    a: io.Source,
    b: io.Source | None = None,
    *,
    measure: str,
    other: str | None = None,
    system: str = "system",
    query: str = "query",
) -> Agreement:
    """How far two rankings of the same systems agree: Kendall's tau-b, tau_AP, tau_AP-b and
    the swapped pairs.

    Each ranking orders the systems by a score, highest first: a summary table's value, or a
    per-query table's mean over its rows (the table has a `query` column; null values are
    left out of the mean, as `preval.summarize` does: a system that lacks a query is ranked
    on the others, where `preval.compare` scores it 0 there). The rankings compared are

    * ``agreement(per_query, measure="AP", other="nDCG@10")``: two measures of one table;
    * ``agreement(per_query_a, per_query_b, measure="AP")``: one measure of two tables (two
      sets of judgments, two query sets; summary tables too), `other` naming b's column when
      it differs.

    Both rankings must hold the same systems (an error at collection names those that are not
    in both).

    Statistics, over the n systems and their N = n(n - 1)/2 pairs, with C concordant and D
    discordant pairs (ordered alike / oppositely by a and b), T_a pairs tied in a and T_b
    tied in b:

    * ``kendall_tau``: Kendall's tau-b, (C - D) / sqrt((N - T_a)(N - T_b)), which is tau-a,
      (C - D) / N, without ties (`scipy.stats.kendalltau`'s default). Null with fewer than
      two systems or when one ranking ties every system.
    * ``tau_ap``: the AP rank correlation of Yilmaz, Aslam & Robertson (2008, "A new rank
      correlation coefficient for information retrieval", SIGIR), with `a` the reference and
      positions taken in `b`: tau_AP = 2/(n - 1) · Σ_{i=2..n} C(i)/(i - 1) - 1, where C(i) is
      the number of systems above position i in b that a also ranks above the system at i.
      It weighs swaps near the top of b more. Not symmetric. With ties it is the expected
      value of that formula over every order of the tied systems, each equally likely (in b
      this is Urbano & Marrero's tau_AP-a, 2017, "The treatment of ties in AP correlation",
      ICTIR; a pair tied in a counts 1/2 toward C(i)). Null with fewer than two systems.
    * ``tau_ap_b``: Urbano & Marrero's tau_AP-b, for two rankings neither of which is the
      truth: the mean of the two directions, each 2/m · Σ_i C'(i)/(p_i - 1) - 1 over the m
      systems outside the top tie group, p_i the first position of system i's tie group and
      C'(i) the systems above that group that the other ranking puts strictly above i.
      Without ties it is the mean of tau_AP(a, b) and tau_AP(b, a), the symmetric tau_AP.
      Null when every system is in the top tie group of either ranking.

    Parameters
    ----------
    a, b
        Per-query tables (a `system` and a `query` column) or summary tables (one row per
        system), frames or paths; without `b`, `a` is ranked twice, by `measure` and `other`.
    measure
        The column of `a` that ranks the systems (and of `b`, unless `other` is given).
    other
        The column of `b` (or of `a` when `b` is None) for the second ranking.
    system, query
        The system column, and the query column that marks a per-query table.

    Returns
    -------
    Agreement
        ``statistics`` (one row: ``measure_a``, ``measure_b``, ``systems``, ``pairs``,
        ``concordant``, ``discordant``, ``ties_a``, ``ties_b``, ``kendall_tau``,
        ``tau_ap``, ``tau_ap_b``) and ``swapped`` (one row per discordant pair, sorted by
        the rank in a of ``first`` then of ``second``: ``first``, ``second``,
        ``rank_a_first`` ... ``rank_b_second`` (1 = best; tied systems share the best rank
        of their group), and their scores ``a_first`` ... ``b_second``). Lazy frames: the
        statistics are computed when one is collected.
    """
    if b is None and other is None:
        msg = "agreement: give a second table b, or a second measure other= to rank a by"
        raise InputError(msg)
    other = measure if other is None else other
    b = a if b is None else b
    # each table as messages name it: with its file when it was given as a path
    tables = {side: f"table {side}" + (f" {t}" if isinstance(t, (str, Path)) else "")
              for side, t in (("a", a), ("b", b))}  # fmt: skip
    first = _scores(io.scan(a, what=tables["a"]), measure, system, query, "a", tables["a"])
    second = _scores(io.scan(b, what=tables["b"]), other, system, query, "b", tables["b"])
    both = first.join(second, on="system", how="full", coalesce=True, nulls_equal=True).sort(
        "system"
    )

    # the two frames share one collection of the (small) scores: one evaluation
    scores = _once(lambda: _checked(both.collect(), tables))

    def statistics() -> pl.DataFrame:
        return _statistics(scores(), measure, other)

    def swapped() -> pl.DataFrame:
        return _swapped(scores())

    return Agreement(pl.defer(statistics, schema=STATISTICS), pl.defer(swapped, schema=SWAPPED))


def _scores(
    lf: pl.LazyFrame, column: str, system: str, query: str, side: str, table: str
) -> pl.LazyFrame:
    """One row per system: its score in ranking `side` (a per-query table's mean, or a summary
    table's value) and how many rows gave it; `table` names it in messages."""
    names = lf.collect_schema().names()
    for needed in (system, column):
        if needed not in names:
            msg = f"{table}: missing column {needed!r} (columns: {', '.join(names)})"
            raise InputError(msg)
    return (
        lf.filter(pl.col(system).is_not_null())
        .group_by(pl.col(system).cast(pl.String).alias("system"))
        .agg(
            pl.col(column).cast(pl.Float64).mean().alias(side),
            pl.len().alias(f"{side}_rows"),
            pl.lit(query in names).alias(f"{side}_per_query"),
        )
    )


def _checked(both: pl.DataFrame, tables: dict[str, str]) -> pl.DataFrame:
    """The scores of the systems both rankings hold; an error for any other (`tables` name
    the two rankings' tables)."""
    for side, there in (("a", "b"), ("b", "a")):
        lacking = both.filter(pl.col(there).is_null() & pl.col(f"{there}_rows").is_null())
        if lacking.height:
            names = lacking["system"].to_list()
            msg = f"agreement: systems of {tables[side]} missing from {tables[there]}: {names[:5]}"
            raise InputError(msg)
    for side in ("a", "b"):
        many = both.filter(~pl.col(f"{side}_per_query") & (pl.col(f"{side}_rows") > 1))
        if many.height:
            msg = (
                f"{tables[side]}: system {many['system'][0]!r} has {many[f'{side}_rows'][0]} rows "
                "and no query column: give a summary table (one row per system) or a "
                "per-query table"
            )
            raise InputError(msg)
        if both[side].is_null().any():
            name = both.filter(pl.col(side).is_null())["system"][0]
            msg = f"{tables[side]}: system {name!r} has no score (every value is null)"
            raise InputError(msg)
        if both[side].is_nan().any():
            name = both.filter(pl.col(side).is_nan())["system"][0]
            msg = f"{tables[side]}: system {name!r} scores NaN"
            raise InputError(msg)
    return both


def _signs(x: np.ndarray) -> np.ndarray:
    """sign(x_i - x_j) for every i, j: +1 where i scores higher."""
    return np.sign(x[:, None] - x[None, :])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float | None:
    """Kendall's tau-b of two score vectors: (C - D) / sqrt((N - T_x)(N - T_y)), None when
    undefined (fewer than two items, or one vector all tied)."""
    n = x.size
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    sx, sy = _signs(x)[upper], _signs(y)[upper]
    pairs = n * (n - 1) // 2
    denominator = np.sqrt(float(pairs - np.count_nonzero(sx == 0)) *
                          float(pairs - np.count_nonzero(sy == 0)))  # fmt: skip
    if n < 2 or denominator == 0:
        return None
    return float(np.sum(sx * sy) / denominator)


def _harmonic(n: int) -> np.ndarray:
    """H[k] = 1 + 1/2 + ... + 1/k, H[0] = 0."""
    return np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, n + 1))))


def tau_ap(reference: np.ndarray, ranked: np.ndarray) -> float | None:
    """tau_AP with `reference` the true scores and positions in `ranked` (higher first), as
    the expected value over uniformly random orders of tied systems (module docstring).

    A system x whose tie group in `ranked` holds g systems below s others is at position
    s + j, j = 1..g, each with probability 1/g. Above it are the s systems of higher groups,
    c of which the reference also puts above x (a reference tie counts 1/2), and j - 1 of the
    g - 1 others of its group, drawn at random: each the reference puts above x with
    probability q = (such systems of the group) / (g - 1). So its expected C(i)/(i - 1) is
    (1/g) Σ_{j=1..g} (c + (j - 1) q) / (s + j - 1), the term at position 1 being 0, which the
    harmonic numbers give in closed form.
    """
    n = reference.size
    if n < 2:
        return None
    above_ref = (_signs(reference) < 0) + 0.5 * (_signs(reference) == 0)  # [x, y]: y above x
    np.fill_diagonal(above_ref, 0.0)
    order_sign = _signs(ranked)  # [x, y] < 0: y above x in `ranked`
    higher = order_sign < 0
    same = order_sign == 0
    np.fill_diagonal(same, False)
    s = higher.sum(axis=1)
    g = same.sum(axis=1) + 1
    c = (above_ref * higher).sum(axis=1)
    within = (above_ref * same).sum(axis=1)
    q = np.divide(within, g - 1, out=np.zeros(n), where=g > 1)
    h = _harmonic(n)
    last = s + g - 1  # the positions s + j - 1 run over k = s .. s + g - 1, k = 0 left out
    first = np.maximum(s, 1)
    inverse = h[last] - h[first - 1]  # Σ 1/k
    terms = last - first + 1
    ratio = c * inverse + q * (terms - s * inverse)  # Σ (c + (k - s) q) / k
    return float(2.0 / (n - 1) * np.sum(ratio / g) - 1.0)


def _tau_ap_b_direction(reference: np.ndarray, ranked: np.ndarray) -> float | None:
    """One direction of Urbano & Marrero's tau_AP-b: positions in `ranked` by tie group."""
    order_sign = _signs(ranked)
    higher = order_sign < 0  # [x, y]: y in a higher group of `ranked`
    strictly = _signs(reference) < 0  # [x, y]: the reference puts y strictly above x
    p = higher.sum(axis=1) + 1  # the first position of x's tie group
    outside = p != 1
    if not outside.any():
        return None
    c = (strictly & higher).sum(axis=1)
    return float(2.0 / outside.sum() * np.sum(c[outside] / (p[outside] - 1)) - 1.0)


def tau_ap_b(x: np.ndarray, y: np.ndarray) -> float | None:
    """Urbano & Marrero's symmetric tau_AP-b (module docstring); None when undefined."""
    if x.size < 2:
        return None
    one, two = _tau_ap_b_direction(x, y), _tau_ap_b_direction(y, x)
    return None if one is None or two is None else (one + two) / 2


def _statistics(both: pl.DataFrame, measure: str, other: str) -> pl.DataFrame:
    x, y = both["a"].to_numpy(), both["b"].to_numpy()
    n = x.size
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    sx, sy = _signs(x)[upper], _signs(y)[upper]
    row = {
        "measure_a": measure, "measure_b": other, "systems": n, "pairs": n * (n - 1) // 2,
        "concordant": int(np.count_nonzero(sx * sy > 0)),
        "discordant": int(np.count_nonzero(sx * sy < 0)),
        "ties_a": int(np.count_nonzero(sx == 0)), "ties_b": int(np.count_nonzero(sy == 0)),
        "kendall_tau": kendall_tau_b(x, y), "tau_ap": tau_ap(x, y), "tau_ap_b": tau_ap_b(x, y),
    }  # fmt: skip
    return pl.DataFrame([row], schema=STATISTICS)


def _swapped(both: pl.DataFrame) -> pl.DataFrame:
    ranks = both.with_columns(
        pl.col(side).rank("min", descending=True).cast(pl.Int64).alias(f"rank_{side}")
        for side in ("a", "b")
    ).select("system", "a", "b", "rank_a", "rank_b")
    pairs = ranks.join(ranks, how="cross", suffix="_second").filter(
        (pl.col("a") > pl.col("a_second")) & (pl.col("b") < pl.col("b_second"))
    )
    return pairs.select(
        pl.col("system").alias("first"), pl.col("system_second").alias("second"),
        pl.col("rank_a").alias("rank_a_first"), pl.col("rank_a_second"),
        pl.col("rank_b").alias("rank_b_first"), pl.col("rank_b_second"),
        pl.col("a").alias("a_first"), pl.col("a_second"),
        pl.col("b").alias("b_first"), pl.col("b_second"),
    ).sort("rank_a_first", "rank_a_second", "first", "second")  # fmt: skip


def _once(make: Callable[[], pl.DataFrame]) -> Callable[[], pl.DataFrame]:
    """`make`, run once for the two deferred frames of a result, whichever is collected first:
    collected together (pl.collect_all, as preval agreement does), they run in two of Polars'
    threads at once, and each made it (the whole comparison, or the evaluation). Its error
    too is raised by both, without running it again."""
    lock = threading.Lock()
    done: list[pl.DataFrame] = []
    failed: list[BaseException] = []

    def once() -> pl.DataFrame:
        with lock:
            if failed:
                raise failed[0]
            if not done:
                try:
                    done.append(make())
                except BaseException as exc:
                    failed.append(exc)
                    raise
            return done[0]

    return once


def discriminative_power(
    per_query: io.Source,
    *,
    measures: str | Iterable[str] | None = None,
    test: str = "randomization",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    by: str = "system",
    query: str = "query",
    missing: str = "zero",
) -> DiscriminativePower:
    """Discriminative power (Sakai 2006, "Evaluating evaluation metrics based on the
    bootstrap", SIGIR): how many pairs of systems a measure and a paired test tell apart.

    Every pair of the n systems is compared by `preval.compare` (``baseline=None``, no
    correction: each pair's own p-value, Sakai's achieved significance level, ASL), with the
    same `test`, `n_resamples`, `seed` and `missing` as there, so the p-values are those
    ``preval.compare(per_query, test=test, correction="none", ...)`` gives. The
    discriminative power of a measure is the share of the n(n - 1)/2 pairs with p < alpha;
    the ASL curve plots the pairs' p-values sorted ascending against their rank (a curve
    that stays low longer tells more pairs apart). Sakai used a studentized paired bootstrap
    test (the resampled t statistic of the centred differences); ``test="bootstrap"`` is the
    shift method on the mean, not studentized, whose p-values differ (docs/how-sure.md);
    ``test="randomization"`` (the default) is Fisher's sign-flip test, whose resamples are
    shared by every pair and measure.

    Parameters
    ----------
    per_query
        A wide per-query table (frame or path), as for `preval.compare`.
    measures
        Measure columns (default: every rate, as `compare`).
    test, alpha, n_resamples, seed, missing, by, query
        As for `preval.compare`. A pair whose p-value is null (fewer than two queries for the
        t-test, the bootstrap or Tukey's HSD; a NaN value) is not significant and comes
        last on the curve.

    Returns
    -------
    DiscriminativePower
        ``summary`` (one row per measure: ``measure``, ``test``, ``alpha``, ``systems``,
        ``queries``, ``pairs``, ``significant``, ``discriminative_power``) and ``curve``
        (``measure``, ``rank`` 1..pairs, ``p_value``, and the pair: ``system``,
        ``baseline``). Lazy frames computed together, by one comparison, when the first is
        collected.
    """
    check_options(test, "none", missing, alpha, n_resamples)
    # `compare` needs scipy whatever the test (its t interval): asked here, not in the deferred
    # frames, where collecting both together raised it in one of Polars' threads while the other
    # still ran, and the process then aborted or crashed at exit ('exception not rethrown')
    extras.require("scipy.stats", "discriminative power")
    source = io.scan(per_query, id_columns=(by, query), what="per-query table")
    # one comparison serves both frames (its resamples are the costly part)
    pairs = _once(
        lambda: compare(
            source,
            baseline=None,
            measures=measures,
            by=by,
            query=query,
            test=test,
            correction="none",
            alpha=alpha,
            n_resamples=n_resamples,
            seed=seed,
            missing=missing,
        )
    )

    def summary() -> pl.DataFrame:
        result = pairs()
        systems = len(set(result["system"].to_list()) | set(result["baseline"].to_list()))
        return (
            result.group_by("measure", maintain_order=True)
            .agg(
                pl.col("queries").max(),
                pl.len().alias("pairs"),
                (pl.col("p_value") < alpha).fill_null(False).sum().alias("significant"),
            )
            .select(
                "measure",
                pl.lit(test).alias("test"),
                pl.lit(alpha).alias("alpha"),
                pl.lit(systems).alias("systems"),
                "queries",
                "pairs",
                "significant",
                (pl.col("significant") / pl.col("pairs")).alias("discriminative_power"),
            )
            .cast(POWER)
        )

    def curve() -> pl.DataFrame:
        result = pairs()
        return (
            result.sort(
                "measure", "p_value", "system", "baseline", nulls_last=True, maintain_order=True
            )
            .with_columns(pl.int_range(1, pl.len() + 1).over("measure").alias("rank"))
            .select(list(CURVE))
            .cast(CURVE)
        )

    return DiscriminativePower(pl.defer(summary, schema=POWER), pl.defer(curve, schema=CURVE))
