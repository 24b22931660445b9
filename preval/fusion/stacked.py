"""The stacked frame's column names and the expressions the normalisations and methods share
(the contract is in `registry`): ranking within a run (`rank_by`), the fused tie key
(`first_key`), the runs side by side (`wide`) and ranx's left-to-right sum (`ordered_sum`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

QUERY, DOC, RUN, SCORE, RANK = "query", "doc", "run", "score", "rank"
ROW = "_row"  # each row's position in its run's input: the tie-breaker of `rank`
FIRST = "_first"  # run * 2**32 + rank, minimal over the runs holding a doc: the fused tie key
DUPS = "_dups"  # (run, query, doc) rows beyond the first, counted by a method's group_by


def rank_by(keys: Sequence[str], tie: str, *, descending: bool = True) -> pl.Expr:
    """`rank` (UInt32, 1-based) within (run, query): `keys` descending (or ascending), ties by
    `tie` ascending."""
    sign = [-pl.col(k) if descending else pl.col(k) for k in keys]
    return (
        pl.struct(*sign, pl.col(tie)).rank("ordinal").over([RUN, QUERY]).cast(pl.UInt32).alias(RANK)
    )


def first_key() -> pl.Expr:
    """Per (query, doc) group of stacked rows: the first-occurrence key (`FIRST`)."""
    return (pl.col(RUN).cast(pl.UInt64) * 2**32 + pl.col(RANK).cast(pl.UInt64)).min()


def wide(stacked: pl.LazyFrame, runs: int, values: Mapping[str, pl.Expr]) -> pl.LazyFrame:
    """One row per (query, doc) of the stacked frame: for each `values` name and run i, the
    row's value as column ``{name}{i}`` (null when run i lacks the document), the rank as
    ``rank{i}``, the first-occurrence key `FIRST` and the duplicate count `DUPS` (what `finish`
    reads). `values` are expressions over a stacked row (its score, rank ...)."""
    aggs = [
        pl.when(pl.col(RUN) == i).then(pl.col(RANK)).max().alias(f"{RANK}{i}") for i in range(runs)
    ]
    for name, expr in values.items():
        aggs += [
            pl.when(pl.col(RUN) == i).then(expr).max().alias(f"{name}{i}") for i in range(runs)
        ]
    present = pl.sum_horizontal([pl.col(f"{RANK}{i}").is_not_null() for i in range(runs)])
    return (
        stacked.group_by(QUERY, DOC)
        .agg(*aggs, first_key().alias(FIRST), pl.len().alias(DUPS))
        .with_columns((pl.col(DUPS) - present).alias(DUPS))
    )


def ordered_sum(columns: Sequence[pl.Expr]) -> pl.Expr:
    """Σ of `columns` added left to right, a null counting 0: ranx's ``sum([...])`` over the runs
    in order, to the last bit (`pl.sum_horizontal` adds in another order)."""
    total = columns[0].fill_null(0.0)
    for col in columns[1:]:
        total = total + col.fill_null(0.0)
    return total
