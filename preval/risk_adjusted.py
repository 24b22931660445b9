"""Risk against a baseline: URisk (TREC 2013 Web track) and TRisk (Dinçer, Macdonald & Ounis
2014), per query and per system, for any measure of a per-query table; ZRisk and GeoRisk
against every system of the table.

Sign convention (the TREC 2013 and 2014 Web tracks' `gdeval.pl -baseline B -riskAlpha A`, and
Dinçer et al.): higher is better. Per query, delta = score - baseline score; a loss
(delta < 0) weighs (1 + alpha) times as much as a win of the same size, so the risk-adjusted
value is delta when delta >= 0 and (1 + alpha) · delta otherwise. URisk is their mean: 0 is
no better than the baseline, negative is losing more (alpha-weighted) than winning. With
alpha = 0 URisk is the mean difference (`preval.compare`'s delta).

ZRisk and GeoRisk (Dinçer, Macdonald & Ounis 2016) need no baseline: each system is measured
against the expectation the whole table of systems sets (`georisk`).
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from . import extras, io, validate
from .errors import InputError
from .significance import EQUAL, MISSING, _check, measure_names, require_keys

SUMMARY = {
    "system": pl.String, "baseline": pl.String, "measure": pl.String, "alpha": pl.Float64,
    "queries": pl.Int64, "wins": pl.Int64, "ties": pl.Int64, "losses": pl.Int64,
    "delta": pl.Float64, "urisk": pl.Float64, "se": pl.Float64, "trisk": pl.Float64,
    "p_value": pl.Float64,
}  # fmt: skip


def risk(
    per_query: io.Source,
    *,
    baseline: str,
    measures: str | Iterable[str] | None = None,
    alpha: float = 1.0,
    by: str = "system",
    query: str = "query",
    missing: str = "zero",
) -> pl.LazyFrame:
    """The risk-adjusted difference of every system with `baseline`, query by query (URisk's
    terms, TREC 2013 Web track).

    Per query q and measure: delta_q = score_q - baseline_q, and the risk-adjusted value
    r_q = delta_q if delta_q >= 0, else (1 + alpha) · delta_q: a loss counts 1 + alpha times
    as much as a win (higher is better, as the Web track's ``gdeval.pl -riskAlpha`` and
    Dinçer, Macdonald & Ounis 2014). URisk is the mean of r_q (`risk_summary`).

    Systems are paired with the baseline on `preval.compare`'s query universe, per measure:
    with ``missing="zero"`` every query any system has, a system (or the baseline) that lacks
    one scoring 0 there (trec_eval ``-c``; ``filled`` marks those rows); with ``"drop"`` only
    the queries every system has. A null value (the measure undefined on the query) takes
    the query out of that measure's universe, as in `preval.compare`; a (system, query)
    given twice counts once, the first row. A NaN value (of the system or of the baseline)
    leaves its query's ``delta`` and ``risk`` null, as `preval.compare` leaves the statistics
    of a pair with a NaN null (`risk_summary` then gives that system null URisk and TRisk).

    Parameters
    ----------
    per_query
        A wide per-query table (frame or path): a `by` column naming the system, a `query`
        column, one column per measure (``preval.evaluate(..., by="system")``).
    baseline
        The system every other one is measured against.
    measures
        Measure columns (default: every rate, as `preval.compare`).
    alpha
        The extra weight of losses, alpha >= 0 (the Web track reported 1, 5 and 10).
    by, query, missing
        As for `preval.compare`.

    Returns
    -------
    polars.LazyFrame
        One row per (system, measure, query), the baseline's own rows left out:
        ``system``, ``baseline``, ``measure``, the query column, ``value``,
        ``baseline_value``, ``delta``, ``risk`` (r_q), ``filled``; sorted by system,
        measure (in the order of `measures`) and query. Polars expressions only; an error at
        collection if `baseline` is not a system of the table.
    """
    return _risk(per_query, baseline, measures, alpha, by, query, missing)[0]


def check_alpha(alpha: float, what: str) -> None:
    """Refuse a risk weight `alpha` below 0 (or NaN): a loss would weigh less than a win."""
    if not alpha >= 0:
        msg = f"{what} alpha must be at least 0, got {alpha!r}"
        raise InputError(msg)


def _risk(per_query, baseline, measures, alpha, by, query, missing) -> tuple[pl.LazyFrame, list]:
    """`risk`'s rows and the measures' names, in the order asked."""
    check_alpha(alpha, "risk")
    rows, systems, names, _ = _rows(per_query, measures, by, query, missing)
    parts = [_one_measure(rows, systems, name, baseline, alpha, by, query, missing)
             for name in names]  # fmt: skip
    # the measures in the order asked, as compare gives them (not by name)
    out = pl.concat(parts).sort("system", pl.col("measure").cast(pl.Enum(names)), query)
    kept = out.collect_schema()
    return out.map_batches(_baseline_found(baseline, by), schema=kept), names


def _rows(per_query: io.Source, measures, by: str, query: str, missing: str):
    """The per-query table's rows (one per (system, query), the first; the system a string),
    its systems, the measure columns taken and its file, if a path, for messages (`risk`'s
    and `georisk`'s input)."""
    _check(missing, MISSING, "missing")
    lf = io.scan(per_query, id_columns=(by, query), what="per-query table")
    schema = lf.collect_schema()
    sources = require_keys(schema.names(), (by, query), per_query)
    names = list(dict.fromkeys(measure_names(schema, measures, sources)))  # (asked twice)
    rows = (
        lf.filter(pl.col(by).is_not_null())
        .with_columns(pl.col(by).cast(pl.String))
        .unique(subset=[by, query], keep="first", maintain_order=True)
    )
    return rows, rows.select(pl.col(by).unique()), names, sources


def _grid(rows, systems, name, by, query, missing) -> pl.LazyFrame:
    """One measure's (system, query, value, filled) grid on its query universe (`risk`'s):
    every system × every query any system has (``missing="zero"``, a lacking value 0 and
    ``filled``) or every system has (``"drop"``); a query with a null value is out."""
    values = rows.select(by, query, pl.col(name).cast(pl.Float64).alias("value")).filter(
        pl.col("value").is_not_null()
    )
    if missing == "zero":
        queries = values.select(pl.col(query).unique())
    else:
        count = systems.select(pl.len().alias("__systems"))
        queries = (
            values.group_by(query)
            .agg(pl.col(by).n_unique().alias("__present"))
            .join(count, how="cross")
            .filter(pl.col("__present") == pl.col("__systems"))
            .select(query)
        )
    # a row whose value is null: undefined there, neither paired nor scored 0 (compare's rule)
    undefined = rows.filter(pl.col(name).is_null()).select(query)
    queries = queries.join(undefined, on=query, how="anti", nulls_equal=True)
    return (
        systems.join(queries, how="cross")
        .join(values, on=[by, query], how="left", nulls_equal=True)
        .with_columns(pl.col("value").is_null().alias("filled"), pl.col("value").fill_null(0.0))
    )


def _one_measure(rows, systems, name, baseline, alpha, by, query, missing) -> pl.LazyFrame:
    """The risk rows of one measure, on that measure's query universe."""
    grid = _grid(rows, systems, name, by, query, missing)
    base = grid.filter(pl.col(by) == baseline).select(
        query, pl.col("value").alias("baseline_value"), pl.col("filled").alias("__base_filled")
    )
    # a NaN value (a missing one is filled) leaves the difference undefined: null, as a pair
    # with a NaN gets null statistics in `preval.compare` (`risk_summary` then nulls the
    # system's URisk and TRisk), rather than a NaN that Polars would rank above every number
    defined = pl.col("value").is_not_nan() & pl.col("baseline_value").is_not_nan()
    delta = pl.when(defined).then(pl.col("value") - pl.col("baseline_value"))
    return (
        grid.filter(pl.col(by) != baseline)
        .join(base, on=query, how="left", nulls_equal=True)
        .select(
            pl.col(by).alias("system"),
            pl.lit(baseline, pl.String).alias("baseline"),
            pl.lit(name, pl.String).alias("measure"),
            pl.col(query),
            "value",
            "baseline_value",
            delta.alias("delta"),
            pl.when(delta >= 0).then(delta).otherwise((1.0 + alpha) * delta).alias("risk"),
            (pl.col("filled") | pl.col("__base_filled")).alias("filled"),
        )
    )


def _baseline_found(baseline: str, by: str):
    def check(df: pl.DataFrame) -> pl.DataFrame:
        if df.height and df["baseline_value"].null_count() == df.height:
            systems = sorted(set(df["system"].to_list()))
            msg = f"baseline {baseline!r} is not a system of column {by!r} (systems: {systems})"
            raise InputError(msg)
        return df

    return check


def risk_summary(
    per_query: io.Source,
    *,
    baseline: str,
    measures: str | Iterable[str] | None = None,
    alpha: float = 1.0,
    by: str = "system",
    query: str = "query",
    missing: str = "zero",
) -> pl.LazyFrame:
    """URisk and TRisk of every system against `baseline`, per measure.

    Over the n queries of `risk` (same parameters), with r_q the risk-adjusted differences:

    * URisk = (1/n) Σ r_q (TREC 2013 Web track; higher is better, 0 is the baseline's level);
    * TRisk = URisk / SE, SE = s_r / √n with s_r the sample standard deviation of the r_q
      (ddof 1): Dinçer, Macdonald & Ounis (2014, "Hypothesis testing for the
      risk-sensitive evaluation of retrieval systems", SIGIR), a paired t-statistic with
      n - 1 degrees of freedom; TRisk > 2 says the system is significantly better than the
      baseline after weighing losses, TRisk < -2 that it is significantly riskier.
      ``p_value`` is its two-sided p-value, 2 · P(T_{n-1} > |TRisk|) (scipy). ddof 1 is
      the t-test's, and the authors' own code's (jforests ``TRiskAwareSAROEval``); dividing
      by n instead (RMIT's ``trisk`` script) gives a TRisk √(n / (n - 1)) times larger.

    Edge cases: a NaN value (not a missing one, a null) makes delta, URisk, SE and TRisk
    null, as in `preval.compare` (its r_q is null in `risk`), and is no win, tie or loss.
    With fewer than two queries, or when every r_q is equal (SE = 0, or at most 1e-12 of
    URisk: equal up to rounding, as 0.6 - 0.5 and 0.2 - 0.1), SE is 0, tiny or
    null and TRisk and its p-value are null.

    Returns
    -------
    polars.LazyFrame
        One row per (system, measure): ``system``, ``baseline``, ``measure``, ``alpha``,
        ``queries``, ``wins``/``ties``/``losses`` (delta > 0, = 0, < 0), ``delta`` (the
        mean difference), ``urisk``, ``se``, ``trisk``, ``p_value``; sorted by measure (in
        the order of `measures`) and system. The p-value is computed when the frame is
        collected (the stats extra).
    """
    rows, names = _risk(per_query, baseline, measures, alpha, by, query, missing)
    n = pl.len()
    se = pl.col("risk").std(ddof=1) / n.sqrt()
    summary = (
        rows.group_by("system", "baseline", "measure")
        .agg(
            n.alias("queries"),
            # a NaN value's null delta (`risk`) is no win, tie or loss
            (pl.col("delta") > 0).sum().alias("wins"),
            (pl.col("delta") == 0).sum().alias("ties"),
            (pl.col("delta") < 0).sum().alias("losses"),
            pl.col("delta").mean(),
            pl.col("risk").mean().alias("urisk"),
            se.alias("se"),
            pl.col("risk").null_count().alias("__undefined"),
        )
        .with_columns(
            # a NaN value (its r_q null in `risk`: a missing one is filled) leaves the means
            # undefined: null, as in `preval.compare`, not the mean of the other queries
            pl.when(pl.col("__undefined") == 0).then(pl.col(c)).alias(c)
            for c in ("delta", "urisk", "se")
        )
        .with_columns(
            pl.lit(alpha, pl.Float64).alias("alpha"),
            # an SE at most 1e-12 of URisk is rounding (r_q equal up to it, as 0.6 - 0.5 and
            # 0.2 - 0.1): equal r_q, no TRisk, rather than one of about 1e15
            pl.when(pl.col("se") > EQUAL * pl.col("urisk").abs())
            .then(pl.col("urisk") / pl.col("se"))
            .alias("trisk"),
        )
        .sort(pl.col("measure").cast(pl.Enum(names)), "system")
    )
    schema = {k: v for k, v in SUMMARY.items() if k != "p_value"}
    summary = summary.select(list(schema)).cast(schema)
    return summary.map_batches(_p_values, schema={**schema, "p_value": pl.Float64})


def _p_values(df: pl.DataFrame) -> pl.DataFrame:
    """The two-sided p-value of each TRisk, a t-statistic with queries - 1 degrees of
    freedom (scipy's stdtr, as `preval.compare`'s t-test)."""
    p = pl.Series("p_value", [None] * df.height, dtype=pl.Float64)
    if df.height and df["trisk"].is_not_null().any():
        special = extras.require("scipy.special", "TRisk's p-value")
        t = df["trisk"].to_numpy(allow_copy=True)
        dof = (df["queries"] - 1).to_numpy().astype(float)
        p = pl.Series("p_value", 2 * special.stdtr(dof, -abs(t)), dtype=pl.Float64)
        p = p.fill_nan(None)
    return df.with_columns(p)


GEORISK = {
    "system": pl.String, "measure": pl.String, "alpha": pl.Float64, "queries": pl.Int64,
    "mean": pl.Float64, "zrisk": pl.Float64, "georisk": pl.Float64,
}  # fmt: skip


def georisk(
    per_query: io.Source,
    *,
    measures: str | Iterable[str] | None = None,
    alpha: float = 1.0,
    by: str = "system",
    query: str = "query",
    missing: str = "zero",
) -> pl.LazyFrame:
    """ZRisk and GeoRisk of every system against all of them, per measure (Dinçer, Macdonald
    & Ounis 2016, "Risk-sensitive evaluation and learning to rank using multiple baselines",
    SIGIR).

    No baseline: the expected score of a system on a query is read off the whole table.
    Per measure, with x_ij the value of system i on query j (c queries):

    * S_i = Σ_j x_ij (the system's total), T_j = Σ_i x_ij (the query's total over the
      systems), N = Σ_ij x_ij;
    * e_ij = S_i · T_j / N, the value expected if the system's share of each query were its
      share of the whole table; z_ij = (x_ij - e_ij) / √e_ij;
    * ZRisk_i(alpha) = Σ_j [z_ij if z_ij >= 0, else (1 + alpha) · z_ij]: a query below
      expectation weighs 1 + alpha times (higher is better; 0 is the expected profile, and
      with alpha = 0 ZRisk is Σ_j z_ij);
    * GeoRisk_i(alpha) = √((S_i / c) · Φ(ZRisk_i(alpha) / c)), Φ the standard normal CDF:
      the geometric mean of the system's mean score and of how far above expectation it
      stays once losses weigh more, in [0, 1] for values in [0, 1].

    Every system is one column of the table, so all are scored on one query universe, per
    measure, as `preval.compare`'s and `risk`'s: with ``missing="zero"`` every query any
    system has, a system lacking one scoring 0 there (trec_eval ``-c``); with ``"drop"`` only
    the queries every system has. A null value (the measure undefined on the query) takes the
    query out for every system; a (system, query) given twice counts once, the first row.

    Edge cases: a cell with e_ij = 0 (a query every system scores 0, or a system scoring 0
    on every query; then x_ij = 0 too) contributes z_ij = 0 (it is as expected) rather than
    0/0; a table of zeros has ZRisk 0 and GeoRisk 0. A single system is its own expectation
    (ZRisk 0, GeoRisk √(mean / 2)). A NaN value makes its query's total, N and so every
    e_ij undefined: ``zrisk`` and ``georisk`` are null for every system on that measure, and
    ``mean`` for the system with the NaN (as `preval.compare` nulls a pair with a NaN).
    Values must be at least 0 (measures in [0, 1]): a negative one is refused
    (`InputError`, when the frame is collected).

    Parameters
    ----------
    per_query
        A wide per-query table (frame or path): a `by` column naming the system, a `query`
        column, one column per measure (``preval.evaluate(..., by="system")``).
    measures
        Measure columns (default: every rate, as `preval.compare`).
    alpha
        The extra weight of queries below expectation, alpha >= 0 (the paper used 1, 5, 10).
    by, query, missing
        As for `preval.compare`.

    Returns
    -------
    polars.LazyFrame
        One row per (system, measure): ``system``, ``measure``, ``alpha``, ``queries`` (c),
        ``mean`` (S_i / c), ``zrisk``, ``georisk``; sorted by measure (in the order of
        `measures`) and system. Polars expressions over the table; Φ is taken on the
        per-system frame (numpy, math.erf).
    """
    check_alpha(alpha, "GeoRisk")
    rows, systems, names, sources = _rows(per_query, measures, by, query, missing)
    parts = [_georisk_measure(rows, systems, name, alpha, by, query, missing)
             for name in names]  # fmt: skip
    # the measures in the order asked, as compare gives them (not by name)
    out = pl.concat(parts).sort(pl.col("measure").cast(pl.Enum(names)), "system")
    checked = out.map_batches(_no_negative(by, query, sources), schema=out.collect_schema())
    phi = pl.col("zrisk").truediv(pl.col("queries")).map_batches(_normal_cdf, pl.Float64)
    return checked.with_columns(
        pl.lit(alpha, pl.Float64).alias("alpha"), (pl.col("mean") * phi).sqrt().alias("georisk")
    ).select(list(GEORISK))


def _georisk_measure(rows, systems, name, alpha, by, query, missing) -> pl.LazyFrame:
    """ZRisk and the mean of every system on one measure, with what `_no_negative` checks."""
    grid = _grid(rows, systems, name, by, query, missing)
    x = pl.col("value")
    s_i, t_j = x.sum().over(by), x.sum().over(query)
    e = s_i * t_j / x.sum()
    # e_ij = 0 only where S_i or T_j is 0 (values >= 0), and then x_ij = 0: as expected, z 0
    # (tested on S_i and T_j, not on e, which is NaN when N = 0)
    z = pl.when((s_i > 0) & (t_j > 0)).then((x - e) / e.sqrt()).otherwise(0.0)
    negative = x < 0
    return (
        grid.with_columns(z.alias("__z"), x.is_nan().any().alias("__nan"))
        .group_by(by)
        .agg(
            pl.len().alias("queries"),
            x.mean().alias("mean"),
            pl.when(pl.col("__z") >= 0)
            .then(pl.col("__z"))
            .otherwise((1.0 + alpha) * pl.col("__z"))
            .sum()
            .alias("zrisk"),
            pl.col("__nan").first(),
            negative.sum().alias("__negative"),
            # the example named: the system's first negative query in query order (the
            # grid's row order is the joins', not the table's)
            pl.col(query).filter(negative).min().cast(pl.String).alias("__query"),
            x.filter(negative).sort_by(pl.col(query).filter(negative)).first().alias("__value"),
        )
        .select(
            pl.col(by).alias("system"),
            pl.lit(name, pl.String).alias("measure"),
            pl.col("queries").cast(pl.Int64),
            # a NaN of the system leaves its mean undefined, and a NaN anywhere every e_ij:
            # null, not NaN (compare's rule for a pair with a NaN)
            pl.col("mean").fill_nan(None),
            pl.when(~pl.col("__nan")).then(pl.col("zrisk")).alias("zrisk"),
            "__negative",
            "__query",
            "__value",
        )
    )


def _no_negative(by: str, query: str, sources: tuple[tuple[str, str], ...]):
    """Refuse a negative value (GeoRisk's expected values and square roots need x >= 0),
    naming the measure, the count and one (system, query); drop the check's columns."""

    def check(df: pl.DataFrame) -> pl.DataFrame:
        bad = df.filter(pl.col("__negative") > 0)
        if bad.height:
            count = int(bad["__negative"].sum())
            row = bad.row(0, named=True)
            msg = (
                f"per-query table: GeoRisk needs values >= 0 (measures in [0, 1]), found "
                f"{count} negative, e.g. measure {row['measure']!r}, {by} {row['system']!r}, "
                f"{query} {row['__query']!r}: {row['__value']}"
            )
            raise InputError(validate.named(msg, sources))
        return df

    return check


def _normal_cdf(s: pl.Series) -> pl.Series:
    """Φ(s), the standard normal CDF, on the small per-system frame (null stays null)."""
    import math

    import numpy as np

    x = s.cast(pl.Float64).to_numpy()
    phi = 0.5 * (1.0 + np.vectorize(math.erf, otypes=[float])(x / math.sqrt(2.0)))
    return pl.Series(s.name, phi, dtype=pl.Float64).fill_nan(None)
