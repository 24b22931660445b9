"""MAP-style summary tables: one row per by-group from a per-query table."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from . import io
from .errors import InputError, MeasureError
from .measures import GMAP_FLOOR, Spec, parse
from .ranking import RELSTRING


def measure_columns(schema: pl.Schema) -> dict[str, Spec]:
    """Columns of a per-query table that are measures (their names parse as one)."""
    found = {}
    for name in schema.names():
        try:
            found[name] = parse(name, hint=False)
        except MeasureError:
            continue
    return found


def summarize(
    per_query: io.Source,
    *,
    by: str | Sequence[str] | None = None,
    query: str = "query",
) -> pl.LazyFrame:
    """Aggregate a per-query table (as `evaluate` returns) into one row per by-group.

    ``NumQ`` (the number of queries) comes first, then every measure column: rates are
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
        Name of the query column.

    Returns
    -------
    polars.LazyFrame
        Sorted by `by`. With no keys, one row even for an empty input (``NumQ`` 0, rates null).
    """
    lf = io.scan(per_query, what="per-query table")
    schema = lf.collect_schema()
    specs = measure_columns(schema)
    if not specs:
        msg = "per-query table: no measure columns found (expected names like AP, P@10)"
        raise InputError(msg)
    if by is None:
        keys = [
            c
            for c in schema.names()
            if c != query and c not in specs and not c.startswith(RELSTRING)
        ]
    else:
        keys = [by] if isinstance(by, str) else list(by)
        missing = [k for k in keys if k not in schema]
        if missing:
            msg = f"per-query table: missing by column(s) {', '.join(missing)}"
            raise InputError(msg)
    aggs = [pl.len().cast(pl.Int64).alias("NumQ")]
    for name, spec in specs.items():
        if spec.definition.name == "NumQ":
            continue
        col = pl.col(name)
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
    if not keys:
        return lf.select(aggs)
    return lf.group_by(keys).agg(aggs).sort(keys)


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
    per_query = io.scan(per_query, what="per-query table")
    schema = per_query.collect_schema()
    values = [c for c in schema.names() if c not in index and schema[c].is_integer()]
    return (
        per_query.with_columns(pl.col(values).cast(pl.Float64))
        .unpivot(index=list(index), variable_name="measure", value_name="value")
        .sort(list(index), maintain_order=True)
    )
