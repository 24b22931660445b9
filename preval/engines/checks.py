"""The chunked engine's precondition, checked: each group's rows together, within a chunk and
across chunks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from ..errors import InputError
from ..ranking import QUERY, run_number

if TYPE_CHECKING:
    from ..planner import Plan


class NotGroupedError(InputError):
    """The input's rows are not grouped by (by..., query): the chunked engine cannot run."""


def ascends(column: pl.Series | None, last: str | int | None) -> tuple[bool, str | int | None]:
    """Whether `column` (ids; None: a group of several columns) is sorted ascending without
    nulls and starts after `last`, the previous chunk's last id (None for the first chunk); and
    its own last id.

    Of a chunk's one group column: its groups then all differ from the earlier chunks' ones.
    Most inputs list their queries in order, and the check across chunks hashes every query
    once more, at the end of the run. Of the chunks' statuses:
    the per-query table is then in query order already.
    """
    if (
        column is None
        or not (column.dtype == pl.String or column.dtype.is_integer())
        or column.null_count()
        or column.is_empty()
        or not (column.flags["SORTED_ASC"] or column.is_sorted())
    ):
        return False, None
    return last is None or column[0] > last, column[-1]


def check_contiguous(chunk: pl.DataFrame, group: list[str], runs: int, groups: int) -> None:
    """Every group of the chunk forms one run of rows (`runs` of equal keys, `groups` distinct
    groups seen)."""
    if runs > groups:
        first_split = (
            chunk.with_row_index("__preval_i")
            .with_columns(run_number(group).alias("__preval_run"))
            .group_by(group)
            .agg(pl.col("__preval_run").n_unique().alias("__preval_n"), pl.col("__preval_i").min())
            .filter(pl.col("__preval_n") > 1)
            .sort("__preval_i")
            .row(0, named=True)
        )
        example = {c: first_split[c] for c in group}
        not_grouped(example, group)


def check_across_chunks(status: pl.LazyFrame, ev: Plan) -> None:
    """No group was evaluated in two chunks (the spilled statuses' hashes first; an exact look
    at any collision). Only when the chunks' groups do not ascend (`ascends`)."""
    key = [*ev.keys, QUERY]
    hashes = status.select(pl.struct(*key).hash()).collect().to_series()
    repeated = hashes.filter(hashes.is_duplicated())
    if repeated.is_empty():
        return
    twice = (
        status.filter(pl.struct(*key).hash().is_in(repeated.implode()))
        .group_by(key)
        .len()
        .filter(pl.col("len") > 1)
        .collect()
    )
    if twice.height:
        row = twice.row(0, named=True)
        not_grouped({ev.names[k]: row[k] for k in key}, ev.group)


def not_grouped(example: dict, group: list[str]) -> None:
    shown = ", ".join(f"{c}={v!r}" for c, v in example.items())
    msg = (
        f"input: rows are not grouped by ({', '.join(group)}): the rows of {shown} are split "
        "by rows of other groups (rule: the chunked engine needs each group's rows "
        "together; use --engine partitioned (or auto), which takes rows in any order)"
    )
    raise NotGroupedError(msg)
