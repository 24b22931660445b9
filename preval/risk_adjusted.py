"""Risk against a baseline: URisk (TREC 2013 Web track) and TRisk (Dinçer, Macdonald & Ounis
2014), per query and per system, for any measure of a per-query table.

Sign convention (the TREC 2013 and 2014 Web tracks' `gdeval.pl -baseline B -riskAlpha A`, and
Dinçer et al.): higher is better. Per query, delta = score - baseline score; a loss
(delta < 0) weighs (1 + alpha) times as much as a win of the same size, so the risk-adjusted
value is delta when delta >= 0 and (1 + alpha) · delta otherwise. URisk is their mean: 0 is
no better than the baseline, negative is losing more (alpha-weighted) than winning. With
alpha = 0 URisk is the mean difference (`preval.compare`'s delta).
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from . import extras, io
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


def _risk(per_query, baseline, measures, alpha, by, query, missing) -> tuple[pl.LazyFrame, list]:
    """`risk`'s rows and the measures' names, in the order asked."""
    if not alpha >= 0:
        msg = f"risk alpha must be at least 0, got {alpha!r}"
        raise InputError(msg)
    _check(missing, MISSING, "missing")
    lf = io.scan(per_query, id_columns=(by, query), what="per-query table")
    schema = lf.collect_schema()
    require_keys(schema.names(), (by, query), per_query)
    names = list(dict.fromkeys(measure_names(schema, measures)))  # (a measure asked twice)
    rows = (
        lf.filter(pl.col(by).is_not_null())
        .with_columns(pl.col(by).cast(pl.String))
        .unique(subset=[by, query], keep="first", maintain_order=True)
    )
    systems = rows.select(pl.col(by).unique())
    parts = [_one_measure(rows, systems, name, baseline, alpha, by, query, missing)
             for name in names]  # fmt: skip
    # the measures in the order asked, as compare gives them (not by name)
    out = pl.concat(parts).sort("system", pl.col("measure").cast(pl.Enum(names)), query)
    kept = out.collect_schema()
    return out.map_batches(_baseline_found(baseline, by), schema=kept), names


def _one_measure(rows, systems, name, baseline, alpha, by, query, missing) -> pl.LazyFrame:
    """The risk rows of one measure, on that measure's query universe."""
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
    grid = (
        systems.join(queries, how="cross")
        .join(values, on=[by, query], how="left", nulls_equal=True)
        .with_columns(pl.col("value").is_null().alias("filled"), pl.col("value").fill_null(0.0))
    )
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
