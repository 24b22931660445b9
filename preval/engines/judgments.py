"""The judgments of a chunk's queries, found in qrels read once into memory."""

from __future__ import annotations

import polars as pl

from ..ranking import run_starts
from .reading import flag_sorted


def sorted_by(qrels: pl.DataFrame, key: str) -> pl.DataFrame:
    """`qrels` sorted by `key` (stable; as read if it is already) and flagged as such."""
    if qrels[key].null_count():  # null ids are an error the plan reports; no sorted flag
        return qrels
    if not qrels[key].is_sorted():
        qrels = qrels.sort(key, maintain_order=True)
    return flag_sorted(qrels, [key])


def judgments_of(qrels: pl.DataFrame, chunk: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The judgments of the queries in `chunk` (ids compared as strings if dtypes differ).

    With one query key and sorted qrels, each query's judgments are found by binary search, in
    time proportional to the chunk. A semi join reads all the qrels for every chunk, a cost
    that grows with judgments × chunks.
    """
    # one row per run of equal keys first (the chunk's groups are runs): far fewer to hash
    wanted = chunk.filter(run_starts(keys)).select(keys).unique()
    key = keys[0]
    if len(keys) == 1 and qrels[key].flags["SORTED_ASC"] and qrels[key].dtype == wanted[key].dtype:
        ids = qrels[key]
        start = ids.search_sorted(wanted[key], side="left")
        end = ids.search_sorted(wanted[key], side="right")
        first, count = start.min(), (end - start).sum()
        if first is not None and end.max() - first == count:
            # the judgments are one range of the qrels (run and qrels list the same queries in
            # the same order): a slice, not a gather of every row
            return qrels.slice(first, count)
        rows = pl.int_ranges(start, end, dtype=pl.get_index_type(), eager=True).explode()
        return qrels[rows.drop_nulls().sort()]
    if any(qrels.schema[k] != wanted.schema[k] for k in keys):
        as_str = [pl.col(k).cast(pl.String).alias(f"__preval_{k}") for k in keys]
        other = [f"__preval_{k}" for k in keys]
        return (
            qrels.with_columns(as_str).join(wanted.select(as_str), on=other, how="semi").drop(other)
        )
    return qrels.join(wanted, on=keys, how="semi")
