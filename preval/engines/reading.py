"""Reading the input of the chunked engines: ranges of rows, chunks that end at a group
boundary, sorted flags (the part of the chunked engine that runs on the reading thread)."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from ..ranking import run_starts


def chunks_of(
    source: pl.LazyFrame, group: list[str], chunk_rows: int, *, by_range: bool = False
) -> Iterator[pl.DataFrame]:
    """The input as frames of about `chunk_rows` rows that end at a group boundary (in pieces:
    `evaluate_chunk` puts each together on its worker thread)."""
    pending: list[pl.DataFrame] = []
    size = 0
    for batch in (
        ranges(source, chunk_rows) if by_range else source.collect_batches(chunk_size=chunk_rows)
    ):
        pending.append(batch)
        size += batch.height
        if size < chunk_rows:
            continue
        frame = pl.concat(pending, rechunk=False)
        cut = last_group_start(frame, group)
        if cut == 0:  # one group fills the chunk: keep reading until it ends
            pending = [frame]
            continue
        yield frame.slice(0, cut)
        pending, size = [frame.slice(cut)], frame.height - cut
    if size:
        yield pl.concat(pending, rechunk=False)


def balanced(total: int, chunk_rows: int, workers: int) -> int:
    """Rows per chunk, at most `chunk_rows`, that cut `total` rows into whole rounds of
    `workers` chunks of about the same size.

    With chunks of `chunk_rows` a last round would often hold one chunk and leave a worker
    idle (10M rows: six chunks of 1.67M rows rather than five of 2M with the fifth alone).
    """
    rounds = max(1, -(-total // (chunk_rows * workers)))  # ceiling divisions
    return max(1, -(-total // (rounds * workers)))


def ranges(source: pl.LazyFrame, rows: int) -> Iterator[pl.DataFrame]:
    """`source` read `rows` rows at a time, each range on its own.

    Polars' stream (``collect_batches``) reads ahead of the consumer and holds more memory at
    peak, for no gain in speed.
    """
    offset = 0
    while True:
        frame = source.slice(offset, rows).collect()
        if frame.height:
            yield frame
        if frame.height < rows:
            return
        offset += rows


def flag_sorted(chunk: pl.DataFrame, group: list[str]) -> pl.DataFrame:
    """`chunk` with its group columns flagged as sorted where they are (ascending, no nulls).

    Most inputs list their queries in order. Polars then groups by slices instead of hashing
    the keys, about twice as fast. A flag is only set after checking it (cheap), so results
    cannot change.
    """
    flagged = [
        pl.col(c).set_sorted() for c in group if chunk[c].null_count() == 0 and chunk[c].is_sorted()
    ]
    return chunk.with_columns(flagged) if flagged else chunk


def last_group_start(frame: pl.DataFrame, group: list[str], window: int = 4096) -> int:
    """Row index where the frame's last run of equal group keys starts.

    Looked for in a window at the end of the frame, widened until the run starts inside it
    (the whole frame at most): a chunk's last group is short, and this runs on the reading
    thread for every chunk.
    """
    while True:
        offset = max(frame.height - window, 0)
        last = frame.slice(offset).select(pl.arg_where(run_starts(group)).last()).item()
        if last or offset == 0:  # a start at the window's first row may be no start at all
            return offset + int(last or 0)
        window *= 16
