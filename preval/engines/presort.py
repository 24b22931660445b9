"""Presorting a chunk by the packed key (`ranking.packed_sort_keys`) before its plan runs:
the permutation, computed faster than an arg sort, and the rows moved by it."""

from __future__ import annotations

import polars as pl

from ..ranking import RANK_BITS


def rank_rows(chunk: pl.DataFrame, order: pl.Series, still: list[str]) -> pl.DataFrame:
    """`chunk` with each group's rows in ranking order (`order`, from `permutation`), except
    for the columns `still`, which stay as they are.

    Rows move only within their run of equal group keys (the packed key sorts by run first),
    so the group columns, which must be in `still`, keep their values and stay flagged as
    sorted, rather than gathered. A
    column in `still` that is not a group column keeps each value in its group, not at its
    rank.
    """
    moved = [c for c in chunk.columns if c not in still]
    # indexing by names, not `select`, which spends time putting columns in order
    return chunk[still].hstack(chunk[moved][order])[chunk.columns]


def runs_of_key(keys: pl.DataFrame) -> pl.Series:
    """The run number of each row (0, 1, 2... in row order), from the packed key."""
    return keys.select(pl.col(keys.columns[0]) // 2**RANK_BITS).to_series()


def permutation(
    keys: pl.DataFrame,
    descending: tuple[bool, ...],
    limit: int = 63,
    *,
    run_ids: pl.Series | None = None,
) -> pl.Series:
    """The permutation that sorts `keys`: its first column (the packed key, ascending, runs of
    rows numbered 0, 1, 2... in its bits from `ranking.RANK_BITS` up), then the other columns
    (`descending` as given, nulls last), then row order: ``arg_sort_by(keys, nulls_last=True,
    maintain_order=True)``, computed faster.

    Polars sorts the values of an Int64 column faster than it sorts row numbers by it, and an
    arg sort by a second, string column costs more again. So each row's position within its
    run goes into the key's low bits, the values are sorted, and the positions read back; rows
    whose keys tie (equal 32-bit scores, a few percent of rows) are then put in order by the
    other columns on their own. When the positions do not fit in the
    `limit` bits left, one arg sort does it all. `run_ids`: `runs_of_key(keys)`, if known.
    """
    key = keys.columns[0]
    index = pl.int_range(pl.len(), dtype=pl.Int64)
    runs = runs_of_key(keys) if run_ids is None else run_ids
    # runs are numbered 0, 1, 2... in row order: the first row of run r is the sum of the runs'
    # lengths before it (cheaper than a forward fill of each run's first row number)
    lengths = runs.rle().struct.field("len")
    start = (lengths.cum_sum() - lengths).cast(pl.Int64).gather(runs)  # of the row's run
    frame = keys.select(key, start.alias("start")).with_columns(at=index - pl.col("start"))
    bits = int(frame["at"].max() or 0).bit_length()
    largest = frame[key].max()
    if largest is None or largest >= 2 ** (limit - bits):
        by = pl.arg_sort_by(
            keys.columns,
            descending=[False, *descending],
            nulls_last=True,
            maintain_order=True,
            multithreaded=False,
        )
        return keys.select(by).to_series()
    scale = 2**bits
    values = frame.select(pl.col(key) * scale + pl.col("at"), "start")
    # on one thread: `WORKERS` chunks are in flight, so splitting one sort over the pool only
    # adds its overhead
    values = values.with_columns(values[key].sort(multithreaded=False))
    # a run keeps its rows' positions, so the sorted values' runs line up with `start`
    ordered = values.select(
        # keys are never negative: a mask reads the low bits (cheaper than `%`); row numbers
        # fit the index type: wrapping skips a range check per value
        (pl.col("start") + (pl.col(key) & (scale - 1)))
        .cast(pl.get_index_type(), wrap_numerical=True)
        .alias("row"),
        (pl.col(key) // scale).alias(key),
    )
    same = pl.col(key).eq(pl.col(key).shift(1)) | pl.col(key).eq(pl.col(key).shift(-1))
    tied = ordered.select(same.fill_null(False).arg_true()).to_series()
    rows = ordered["row"]
    if tied.is_empty():
        return rows
    moved = rows.gather(tied)
    resorted = (
        keys[moved]
        .with_columns(moved.alias("__preval_row"))
        .sort(
            [*keys.columns, "__preval_row"],
            descending=[False, *descending, False],
            nulls_last=True,  # as the plan's sort (null doc ids: only an error's example)
            multithreaded=False,
        )
    )
    return rows.scatter(tied, resorted["__preval_row"])
