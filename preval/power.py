"""Statistical power and query-set size for a paired t-test between two systems.

How large a difference in a measure can a paired two-sided t-test over n queries detect, at
level alpha with power 1 - beta, given the standard deviation sd of the per-query differences?
And how many queries are needed to detect a difference delta? Both come from the power of the
paired t-test under the noncentral t distribution (scipy, the stats extra):

    power(delta, sd, n) = P(T' > t*) + P(T' < -t*),  T' ~ t'(n - 1, lambda = delta / sd * sqrt(n)),

with t* = t_{1 - alpha/2, n - 1}, the test's critical value. This is topic-set-size design
(Sakai 2016, "Topic set size design", Information Retrieval Journal 19(3); Webber, Moffat &
Zobel 2008, "Statistical power in retrieval experimentation", CIKM): the sd is estimated from
the per-query differences of the systems at hand (`analysis`), or given.

`analysis` computes, per pair of systems and measure, the number of queries both systems
have, the sd of their differences, the observed mean difference, the minimum detectable
difference over those queries and (with `delta`) the queries needed to detect delta.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

import numpy as np
import polars as pl

from . import extras, io
from .errors import InputError
from .significance import measure_names, require_keys


def _stats():
    return extras.require("scipy.stats", "power and query-set size")


def _check(alpha: float, power: float) -> None:
    if not 0 < alpha < 1:
        msg = f"alpha must be between 0 and 1, got {alpha!r}"
        raise InputError(msg)
    if not alpha < power < 1:
        msg = f"power must be between alpha ({alpha}) and 1, got {power!r}"
        raise InputError(msg)


def paired_t_power(delta, sd, n, *, alpha: float = 0.05) -> np.ndarray:
    """Power of the paired two-sided t-test at level `alpha` over `n` queries, when the true
    mean difference is `delta` and the per-query differences have standard deviation `sd`.

    power = P(T' > t*) + P(T' < -t*), T' noncentral t with n - 1 degrees of freedom and
    noncentrality delta / sd · √n, t* = t_{1-α/2, n-1} (both rejection regions count; the lower
    one matters only for tiny effects).

    Reference: Cohen (1988), Statistical Power Analysis for the Behavioral Sciences, ch. 2;
    Sakai (2016), "Topic set size design", Inf. Retrieval J. 19(3).

    Edge cases: n < 2: NaN (no test); sd 0: 1 where delta ≠ 0, alpha where delta = 0.
    """
    stats = _stats()
    delta, sd, n = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in (delta, sd, n)))
    out = np.full(delta.shape, np.nan)
    ok = n >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        nc = np.where(sd > 0, delta / np.where(sd > 0, sd, 1.0) * np.sqrt(n), 0.0)
    df = np.where(ok, n - 1, 1.0)
    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = np.abs(nc)  # the power is symmetric in the sign of delta
    # the far tail: scipy's nct.cdf returns NaN where it is below about 1e-300 (far beyond
    # the critical value), which is 0 to every digit of a power
    far = np.nan_to_num(stats.nct.cdf(-crit, df, nc), nan=0.0)
    value = stats.nct.sf(crit, df, nc) + far
    out[ok] = value[ok]
    flat = ok & (sd == 0)
    out[flat] = np.where(delta[flat] != 0, 1.0, alpha)
    return out


def detectable_difference(n, sd, *, alpha: float = 0.05, power: float = 0.8) -> np.ndarray:
    """The minimum detectable difference: the smallest delta > 0 that the paired two-sided
    t-test over `n` queries detects with probability `power` at level `alpha`, when the
    per-query differences have standard deviation `sd`.

    delta = d · sd, d the standardized difference (noncentrality d · √n) at which
    `paired_t_power` is `power` (found by Brent's method: power increases with d). Arrays
    broadcast.

    Reference: Webber, Moffat & Zobel (2008), "Statistical power in retrieval
    experimentation", CIKM; Sakai (2016), "Topic set size design", Inf. Retrieval J. 19(3).

    Edge cases: n < 2: NaN; sd 0: 0 (any difference is detected).
    """
    _check(alpha, power)
    optimize = extras.require("scipy.optimize", "power and query-set size")
    n, sd = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(sd, dtype=np.float64))
    out = np.full(n.shape, np.nan)
    for i in np.ndindex(n.shape):
        if n[i] < 2 or not np.isfinite(sd[i]):
            continue
        if sd[i] == 0:
            out[i] = 0.0
            continue

        def short(d: float, k: float = n[i]) -> float:
            return float(paired_t_power(d, 1.0, k, alpha=alpha)[()]) - power

        high = 1.0
        while short(high) < 0:
            high *= 2
        out[i] = optimize.brentq(short, 0.0, high, xtol=1e-15, rtol=1e-15) * sd[i]
    return out


def queries_needed(delta, sd, *, alpha: float = 0.05, power: float = 0.8) -> np.ndarray:
    """The number of queries a paired two-sided t-test needs to detect a true mean
    difference `delta` with probability `power` at level `alpha`, when the per-query
    differences have standard deviation `sd`: the least n ≥ 2 with
    ``paired_t_power(delta, sd, n) >= power`` (power increases with n; found by doubling,
    then bisection over the integers).

    Reference: Sakai (2016), "Topic set size design", Inf. Retrieval J. 19(3) (topic set size
    for the paired t-test); Cohen (1988), ch. 2.

    Edge cases: delta 0: no n suffices (null); sd 0 and delta ≠ 0: 2.
    """
    _check(alpha, power)
    delta, sd = np.broadcast_arrays(
        np.abs(np.asarray(delta, dtype=np.float64)), np.asarray(sd, dtype=np.float64)
    )
    out = np.full(delta.shape, np.nan)
    for i in np.ndindex(delta.shape):
        d, s = delta[i], sd[i]
        if not (np.isfinite(d) and np.isfinite(s)) or d == 0:
            continue

        def enough(n: int, d: float = d, s: float = s) -> bool:
            return bool(paired_t_power(d, s, n, alpha=alpha)[()] >= power)

        low, high = 1, 2  # enough(low) is False (n = 1 has no test)
        while not enough(high):
            low, high = high, high * 2
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (low, mid) if enough(mid) else (mid, high)
        out[i] = high
    return out


def analysis(
    per_query: io.Source,
    *,
    measures: str | Iterable[str] | None = None,
    by: str = "system",
    query: str = "query",
    baseline: str | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    delta: float | None = None,
    sd: float | None = None,
) -> pl.LazyFrame:
    """Power and query-set size of the paired t-test for every pair of systems of a
    per-query table (as `preval.evaluate(..., by="system")` returns), per measure.

    Parameters
    ----------
    per_query
        A wide per-query table (frame or path): a `by` column naming the system, a `query`
        column, one column per measure.
    measures
        Measure columns (default: every rate; counts are left out).
    baseline
        Pair every other system with this one; None: every pair (the system that sorts first
        as the baseline, as `preval.compare`).
    alpha, power
        The test's level (two-sided) and the power asked for (1 - beta).
    delta
        A difference to detect: adds ``queries_needed``.
    sd
        The standard deviation of the per-query differences to assume instead of the observed
        one (e.g. from an earlier collection).

    Returns
    -------
    polars.LazyFrame
        One row per (system, baseline, measure): ``queries`` (both systems have a non-null
        value; the differences are over these; a (system, query) given twice counts once,
        its first row, as in `preval.compare`), ``delta_observed`` (mean difference, system
        minus baseline), ``sd`` (of the differences, ddof 1; or the given `sd`),
        ``detectable`` (`detectable_difference` over ``queries``), ``power_observed``
        (`paired_t_power` at the observed difference) and, with `delta`, ``queries_needed``
        (`queries_needed`; null when delta is 0). Sorted by measure (in the order of
        `measures`, as `preval.compare`), baseline, system. Lazy: the pairs are a join of the
        table with itself, the noncentral t at the end, when the plan runs.
    """
    _check(alpha, power)
    lf = io.scan(per_query, id_columns=(by, query), what="per-query table")
    schema = lf.collect_schema()
    require_keys(schema.names(), (by, query), per_query)
    names = measure_names(schema, measures)  # as compare takes them: every rate by default
    names = list(dict.fromkeys(names))  # a measure asked twice, once (as evaluate)
    if sd is not None and not (sd >= 0):
        msg = f"sd must be a number >= 0, got {sd!r}"
        raise InputError(msg)
    long = (
        lf.filter(pl.col(by).is_not_null())
        # a (system, query) given twice counts once, its first row, as in `preval.compare`
        # and `preval.risk` (a join would pair every copy with every copy)
        .unique(subset=[by, query], keep="first", maintain_order=True)
        .select(
            pl.col(by).cast(pl.String).alias("system"),
            pl.col(query).alias("query"),
            *[pl.col(n).cast(pl.Float64) for n in names],
        )
        .unpivot(index=["system", "query"], variable_name="measure", value_name="value")
        .drop_nulls("value")
    )
    right = long.rename({"system": "baseline", "value": "baseline_value"})
    pairs = long.join(right, on=["query", "measure"], how="inner", nulls_equal=True)
    if baseline is not None:
        pairs = pairs.filter((pl.col("baseline") == baseline) & (pl.col("system") != baseline))
    else:
        pairs = pairs.filter(pl.col("baseline") < pl.col("system"))
    # each pair's differences summed in one order, their sorted order, as a list: a float
    # sum's last bits depend on its order, which a parallel join and aggregation do not fix
    # (the same file gave other digits from run to run); a group's sort().mean() did not fix
    # it, the mean of the sorted list does
    diffs = pl.col(_DIFFS)
    table = (
        pairs.group_by("system", "baseline", "measure")
        .agg(
            pl.len().cast(pl.Int64).alias("queries"),
            (pl.col("value") - pl.col("baseline_value")).sort().alias(_DIFFS),
        )
        .select(
            "system", "baseline", "measure", "queries",
            diffs.list.mean().alias("delta_observed"),
            (diffs.list.std() if sd is None else pl.lit(float(sd))).alias("sd"),
        )
        # the measures in the order asked, as evaluate and compare give them (not by name)
        .sort(pl.col("measure").cast(pl.Enum(names)), "baseline", "system")
    )  # fmt: skip
    out_schema = {**table.collect_schema(), "detectable": pl.Float64, "power_observed": pl.Float64}
    if delta is not None:
        out_schema["queries_needed"] = pl.Int64
    solve = partial(_solve, alpha=alpha, power=power, delta=delta)
    return table.map_batches(solve, schema=out_schema)


_DIFFS = "__preval_differences"


def _solve(df: pl.DataFrame, *, alpha: float, power: float, delta: float | None) -> pl.DataFrame:
    """The noncentral t part of `analysis`, on its small table of pairs."""
    n = df["queries"].to_numpy().astype(np.float64)
    sd = df["sd"].fill_null(float("nan")).to_numpy()
    observed = df["delta_observed"].fill_null(float("nan")).to_numpy()
    columns = [
        pl.Series("detectable", detectable_difference(n, sd, alpha=alpha, power=power)),
        pl.Series("power_observed", paired_t_power(observed, sd, n, alpha=alpha)),
    ]
    if delta is not None:
        needed = queries_needed(np.full(n.shape, delta), sd, alpha=alpha, power=power)
        columns.append(pl.Series("queries_needed", needed).fill_nan(None).cast(pl.Int64))
    return df.with_columns(pl.Series(c.name, c).fill_nan(None) for c in columns)
