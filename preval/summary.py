"""MAP-style summary tables: one row per by-group from a per-query table."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import polars as pl

from . import io
from .errors import InputError, MissingColumnError
from .measures import GMAP_FLOOR, Spec, measure_columns
from .options import Intervals, Options, accepts
from .ranking import RELSTRING

# the suffixes of a rate's interval columns (``AP_ci_low``, ``AP_ci_high``): compare's
# ``ci_low``/``ci_high``, after the measure's name; no such name parses as a measure
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"


def default_keys(names: Sequence[str], specs: dict[str, Spec], query: str) -> list[str]:
    """The by keys of a summary without `by`: every column that is neither `query` nor a
    measure nor a ``relstring@k`` column.

    A table with such columns but without `query` is refused: its query column is most likely
    named otherwise (``evaluate(..., query="qid")`` keeps the name), and taken for a key it
    would make every query a group of one (NumQ 1, the "means" the queries' own values).
    """
    keys = [c for c in names if c != query and c not in specs and not c.startswith(RELSTRING)]
    if keys and query not in names:
        guess = keys[-1]  # (evaluate puts the query column after the by keys)
        msg = (
            f"per-query table: no query column {query!r} (columns that are not measures: "
            f"{', '.join(keys)}); name it as evaluate was told, query={guess!r} "
            f"(--query {guess}), or give the groups with by= (by=[] for one overall row)"
        )
        raise MissingColumnError(msg)
    return keys


@accepts("summarize")
def summarize(
    per_query: io.Source,
    *,
    by: str | Sequence[str] | None = None,
    query: str = "query",
    options: Options,
) -> pl.LazyFrame:
    """Aggregate a per-query table (as `evaluate` returns) into one row per by-group.

    ``NumQ`` (the number of queries: of per-query rows, so a row that pools several systems,
    ``by=[]``, counts each (system, query) once) comes first, then every measure column: rates are
    averaged over queries (MAP, MRR ...), counts (``NumRet``, ``NumRel``, ``NumRelRet``,
    ``NumNonrelJudgedRet``, ``NumQ``: `Spec.is_count`) are summed, and ``GMAP`` is
    exp(mean(log(max(AP, 1e-5)))) as trec_eval's ``gm_map``. Counts are Int64 columns
    (whatever their dtype in `per_query`), rates Float64.

    Parameters
    ----------
    per_query
        A wide per-query table (frame or path).
    by
        Grouping columns. Default: every column that is neither `query` nor a measure (the
        `by` keys of the evaluation), nor a ``relstring@k`` column (a String per query, which
        is left out of the summary); ``[]`` for one overall row.
    query
        Name of the query column. With ``by=None`` a table without it is refused (a
        `MissingColumnError` naming the likely one): the query column would otherwise be
        taken for a by key, one "summary" row per query.

    Confidence intervals (``ci=0.95``): each rate gets two more columns after its own,
    ``<measure>_ci_low`` and ``<measure>_ci_high`` (select them with
    ``cs.ends_with("_ci_low", "_ci_high")``), the bounds of its mean per by-group
    (`preval.intervals`): ``ci_method="t"``, Student's t (mean ± t · sd / √n over the n
    queries; a group with several values of a query, an overall row over systems, takes a
    mean over clusters' standard error, docs/how-sure.md);
    ``"percentile"`` and ``"bca"``, the bootstrap over queries with `resamples` resamples
    seeded by `seed` (the exact scheme: `preval.intervals`). The groups that have the same
    queries (the systems of one evaluation) share their resamples: every system and measure
    is resampled on the same resampled query sets, so their intervals are paired; a group
    with other queries (a by key that splits the queries, as a topic type) is resampled
    within its own.
    Counts are sums over a fixed set of queries and get no interval; ``GMAP``'s is that of the
    mean of log(max(AP, 1e-5)), exponentiated. Values are taken as the mean takes them: nulls
    are left out (a resample's mean is over its non-null values), a NaN makes the bounds NaN.
    A group with fewer than 2 queries with a non-null value has null bounds (no interval is
    defined); equal values give a zero-width interval. The plan stays lazy: with a bootstrap
    the per-query values are collected when the plan runs, never when it is built.

    Returns
    -------
    polars.LazyFrame
        Sorted by `by`. With no keys, one row even for an empty input (``NumQ`` 0, rates null).
    """
    # ids as written (a CSV's "007" stays "007", and is not one query with "7")
    given = () if by is None else (by,) if isinstance(by, str) else tuple(by)
    lf = io.scan(per_query, id_columns=(query, *given), what="per-query table")
    schema = lf.collect_schema()
    specs = measure_columns(schema)
    if not specs:
        msg = "per-query table: no measure columns found (expected names like AP, P@10)"
        if {"measure", "value"} <= set(schema.names()):
            msg += (
                "; this is the long form (measure, value columns): summarize the wide one "
                "(evaluate's default form), or pivot it on 'measure'"
            )
        raise InputError(msg)
    if by is None:
        keys = default_keys(schema.names(), specs, query)
    else:
        keys = [by] if isinstance(by, str) else list(dict.fromkeys(by))  # (twice: once)
        missing = [k for k in keys if k not in schema]
        if missing:
            msg = f"per-query table: missing by column(s) {', '.join(missing)}"
            raise InputError(msg)
    if "NumQ" in keys:  # else Polars' DuplicateError when the plan runs
        msg = "per-query table: by column 'NumQ' has the name of the summary's count: rename it"
        raise InputError(msg)
    aggs = [pl.len().cast(pl.Int64).alias("NumQ")]
    for name, spec in specs.items():
        if spec.definition.name == "NumQ":
            continue
        col = pl.col(name)
        if schema[name] == pl.String:  # (a CSV's column without a value: nulls as strings)
            col = col.cast(pl.Float64)
        if spec.summary == "sum":
            agg = col.sum()
        elif spec.summary == "gmean":
            agg = _mean(col.clip(lower_bound=GMAP_FLOOR).log()).exp()
        else:
            agg = _mean(col)
        aggs.append(agg.cast(spec.dtype).alias(name))
    if query in schema:
        # the order of every mean's terms (`_mean`): by query, then by the other columns that
        # are not measures (a query of several systems in an overall row). Once, not in each
        # mean, where Polars would arg-sort the query column again, even one flagged as sorted;
        # a group keeps its rows in the frame's order.
        others = [
            c
            for c in schema.names()
            if c != query and c not in specs and not c.startswith(RELSTRING)
        ]
        lf = lf.sort(query, *others)
    intervals = options.intervals
    rates = {n: s for n, s in specs.items() if s.summary != "sum"}
    if intervals.ci is None or not rates:
        return lf.select(aggs) if not keys else lf.group_by(keys).agg(aggs).sort(keys)
    order = [*keys, "NumQ"]
    for name, spec in specs.items():
        if spec.definition.name != "NumQ":
            order += [name, *([name + CI_LOW, name + CI_HIGH] if name in rates else [])]
    values = {n: _interval_values(n, s) for n, s in rates.items()}
    if intervals.ci_method == "t":
        hidden, cells, moments = {}, [], []
        for i, (name, value) in enumerate(values.items()):
            hidden[name] = [f"__preval_{stat}{i}" for stat in ("mean", "sd", "n", "equal")]
            # equal values: a zero-width interval at the value itself
            equal = pl.when((value.max() == value.min()) & ~value.is_nan().any())
            equal = equal.then(value.min())
            aggs.append(equal.alias(hidden[name][3]))
            if query not in schema:  # every row its own query: independent values
                aggs += [
                    value.mean().alias(hidden[name][0]),
                    value.std().alias(hidden[name][1]),
                    value.count().alias(hidden[name][2]),
                ]
                continue
            # The query is the unit sampled, as the bootstrap resamples queries: a group that
            # pools several values per query (an overall row over systems) is a cluster
            # sample, whose mean S/K (the mean of the values) has the ratio estimator's
            # standard error sqrt(n/(n-1) Σ (s_i - (S/K) k_i)²) / K over the n queries with
            # a value (s_i, k_i: a query's sum and count; Cochran 1977, Sampling Techniques,
            # 6.9), t with n - 1 degrees of freedom. One value per query: sd / √n exactly.
            s, k = f"__preval_s{i}", f"__preval_k{i}"
            cells += [value.sum().alias(s), value.count().alias(k)]
            total, count = pl.col(s).sum(), pl.col(k).sum()
            n = (pl.col(k) > 0).sum()
            spread = ((pl.col(s) - total / count * pl.col(k)) ** 2).sum()
            moments += [
                (total / count).alias(hidden[name][0]),
                # the sd whose sd / √n is that standard error
                ((spread / (n - 1)).sqrt() * n / count).alias(hidden[name][1]),
                n.cast(pl.Int64).alias(hidden[name][2]),
            ]
        out = lf.select(aggs) if not keys else lf.group_by(keys).agg(aggs)
        if cells:
            clusters = lf.group_by([*keys, query]).agg(cells)
            if keys:
                stats = clusters.group_by(keys).agg(moments)
                out = out.join(stats, on=keys, how="left", nulls_equal=True)
            else:
                out = out.join(clusters.select(moments), how="cross")
        out = out.sort(keys) if keys else out
        schema = {**out.collect_schema(), **_bounds_schema(rates)}
        schema = {c: schema[c] for c in order}
        fn = partial(_t_bounds, hidden=hidden, rates=rates, level=intervals.ci, order=order)
        return out.map_batches(fn, schema=schema)
    out = lf.select(aggs) if not keys else lf.group_by(keys).agg(aggs)
    if query not in schema:  # every row its own query
        query = "__preval_row"
        lf = lf.with_row_index(query)
    source = lf.select(*keys, query, *[v.alias(n) for n, v in values.items()])
    bounds_schema = {**{k: schema[k] for k in keys}, **_bounds_schema(rates)}
    fn = partial(_bootstrap_bounds, keys=keys, query=query, rates=rates, intervals=intervals)
    bounds = source.map_batches(fn, schema=bounds_schema)
    if not keys:
        return out.join(bounds, how="cross").select(order)
    return out.join(bounds, on=keys, how="left", nulls_equal=True).sort(keys).select(order)


def _interval_values(name: str, spec: Spec) -> pl.Expr:
    """The values whose mean an interval bounds: the measure's, or for a geometric mean
    (GMAP) the logs it averages (bounds exponentiated back)."""
    col = pl.col(name).cast(pl.Float64)
    return col.clip(lower_bound=GMAP_FLOOR).log() if spec.summary == "gmean" else col


def _bounds_schema(rates: dict[str, Spec]) -> dict[str, pl.DataType]:
    return {f"{n}{suffix}": pl.Float64 for n in rates for suffix in (CI_LOW, CI_HIGH)}


def _bounds_columns(low, high, n, name: str, spec: Spec) -> list[pl.Series]:
    """A rate's bounds as two columns: null where fewer than 2 values (no interval is
    defined), a geometric mean's exponentiated."""
    import numpy as np

    columns = []
    for suffix, bound in ((CI_LOW, low), (CI_HIGH, high)):
        bound = np.asarray(bound, dtype=np.float64)
        bound = np.exp(bound) if spec.summary == "gmean" else bound
        cells = [v if k >= 2 else None for v, k in zip(bound.tolist(), n, strict=True)]
        columns.append(pl.Series(name + suffix, cells, dtype=pl.Float64))
    return columns


def _t_bounds(df: pl.DataFrame, *, hidden, rates, level, order) -> pl.DataFrame:
    """The summary with each rate's t interval (`intervals.t_interval`)."""
    import numpy as np

    from .intervals import t_interval  # numpy and scipy: only for an interval

    columns = []
    for name, (mean, sd, n, equal) in hidden.items():
        counts = df[n].to_numpy()
        value = df[equal].fill_null(float("nan")).to_numpy()
        low, high = t_interval(df[mean].to_numpy(), df[sd].fill_null(0.0).to_numpy(), counts, level)
        low, high = np.where(np.isnan(value), low, value), np.where(np.isnan(value), high, value)
        columns += _bounds_columns(low, high, counts.tolist(), name, rates[name])
    return df.with_columns(columns).select(order)


def _bootstrap_bounds(
    df: pl.DataFrame,
    *,
    keys: list[str],
    query: str,
    rates: dict[str, Spec],
    intervals: Intervals,
) -> pl.DataFrame:
    """The bootstrap bounds of every rate per group (keys..., bounds): the groups that have
    the same queries share one set of resamples (`intervals.bootstrap_means`), in the order
    of their first group (by keys); within a set, queries in ascending order of their id."""
    import numpy as np

    from . import intervals as stats

    names = list(rates)
    m = len(names)
    g, q = "__preval_group", "__preval_query"
    groups = (
        df.select(keys).unique().sort(keys)
        if keys
        else pl.DataFrame([pl.Series("__preval_all", [0])])
    ).with_row_index(g)
    queries = df.select(pl.col(query).unique().sort()).with_row_index(q)
    coded = df.join(queries, on=query, nulls_equal=True)
    coded = (
        coded.join(groups, on=keys, nulls_equal=True)
        if keys
        else coded.with_columns(pl.lit(0, pl.UInt32).alias(g))
    )
    cells = coded.group_by(g, q).agg(
        *[pl.col(n).sum().alias(f"s{j}") for j, n in enumerate(names)],
        *[pl.col(n).count().alias(f"k{j}") for j, n in enumerate(names)],
    )
    # per group and measure: the queries with a value, and whether all values are equal (a
    # zero-width interval); every group a row (the one row of an empty input without keys too)
    spread = (
        groups.select(g)
        .join(
            coded.group_by(g).agg(
                *[
                    ((pl.col(n).max() == pl.col(n).min()) & ~pl.col(n).is_nan().any()).alias(
                        f"e{j}"
                    )
                    for j, n in enumerate(names)
                ],
                *[pl.col(n).min().alias(f"m{j}") for j, n in enumerate(names)],
                # the queries with a value: the units resampled (one query, however many
                # values it pools, has no bootstrap distribution)
                *[
                    pl.col(query).filter(pl.col(n).is_not_null()).n_unique().alias(f"u{j}")
                    for j, n in enumerate(names)
                ],
            ),
            on=g,
            how="left",
        )
        .sort(g)
    )
    sets = (
        cells.group_by(g)
        .agg(pl.col(q).sort().alias("queries"))
        .sort(g)
        .group_by("queries", maintain_order=True)
        .agg(pl.col(g))
    )
    n_groups = groups.height
    low, high = np.full((n_groups, m), np.nan), np.full((n_groups, m), np.nan)
    level = intervals.ci
    for number, (members_q, members_g) in enumerate(sets.iter_rows()):
        qs, gs = np.asarray(members_q), np.asarray(members_g)
        part = cells.filter(pl.col(g).is_in(gs.tolist()))
        row = np.searchsorted(qs, part[q].to_numpy())
        col = np.searchsorted(gs, part[g].to_numpy()) * m
        sums, counts = np.zeros((qs.size, gs.size * m)), np.zeros((qs.size, gs.size * m))
        for j in range(m):
            sums[row, col + j] = part[f"s{j}"].to_numpy()
            counts[row, col + j] = part[f"k{j}"].to_numpy()
        nan = np.isnan(sums)
        sums[nan] = 0.0  # NaN values: the column's bounds are NaN below, as its mean is
        ones = bool((counts == 1).all())
        boot = stats.bootstrap_means(
            sums, None if ones else counts, intervals.resamples, [intervals.seed, number]
        )
        if intervals.ci_method == "percentile":
            lo, hi = stats.percentile_interval(boot, level)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                observed = sums.sum(axis=0) / counts.sum(axis=0)
            accel = stats.acceleration(sums, None if ones else counts)
            lo, hi = stats.bca_interval(boot, observed, accel, level)
        lo[nan.any(axis=0)] = hi[nan.any(axis=0)] = np.nan
        low[gs], high[gs] = lo.reshape(gs.size, m), hi.reshape(gs.size, m)
    columns = [] if not keys else [groups[k] for k in keys]
    for j, name in enumerate(names):
        equal = spread[f"e{j}"].fill_null(False).to_numpy()
        mean = spread[f"m{j}"].cast(pl.Float64).fill_null(float("nan")).to_numpy()
        lo = np.where(equal, mean, low[:, j])  # exactly the value, not its sum's rounding
        hi = np.where(equal, mean, high[:, j])
        n_queries = spread[f"u{j}"].fill_null(0).to_list()
        columns += _bounds_columns(lo, hi, n_queries, name, rates[name])
    return pl.DataFrame(columns)


def _mean(values: pl.Expr) -> pl.Expr:
    """Mean of the non-null values, summed one by one in row order (`summarize` sorts the rows
    by query first), as trec_eval does.

    A floating-point sum depends on the order of its terms, and Polars' own sum and mean are
    free to split and reorder them (differently by engine and by how the rows are chunked):
    a cumulative sum in query order gives the same last digit whatever produced the rows.
    """
    total = values.drop_nulls().cum_sum().last()
    return total / values.count()


def to_long(per_query: io.Source, index: Sequence[str]) -> pl.LazyFrame:
    """Wide per-query table (any dataframe or a path) -> (keys..., query, measure, value),
    measures in column order.

    ``value`` is Float64: one column holds every measure, rates and counts alike, so a count
    (Int64 in the wide form) reads there as ``12.0``; cast the rows of a count back with
    ``pl.col("value").cast(pl.Int64)`` where an integer is wanted.
    """
    taken = [c for c in index if c in ("measure", "value")]
    if taken:
        msg = (
            f"per-query table: key column {taken[0]!r} has the name of a column of the long "
            "form (measure, value): rename it"
        )
        raise InputError(msg)
    per_query = io.scan(per_query, id_columns=tuple(index), what="per-query table")
    schema = per_query.collect_schema()
    # counts (Int64), and a CSV's measure column without a value (read as strings): Float64
    values = [c for c in schema.names() if c not in index and schema[c] != pl.Float64]
    return (
        per_query.with_columns(pl.col(values).cast(pl.Float64))
        .unpivot(index=list(index), variable_name="measure", value_name="value")
        .sort(list(index), maintain_order=True)
    )
