"""The judgments of a chunk's queries, found in qrels read once into memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial

import polars as pl

from .. import io
from ..errors import InputError
from ..planner import Plan
from ..ranking import run_starts
from .budget import address_space_limit, qrels_floor, too_little
from .reading import flag_sorted


@dataclass(frozen=True)
class Judgments:
    """Separate qrels held in memory for an engine that evaluates a run piece by piece.

    `table`: every judgment, in memory, or a scan of them when they were spilled into buckets
    (the partitioned engine's, for qrels too large to hold); `keys`: the group columns the
    qrels share with the run (the query, and the by-columns that are properties of the
    query); `of`: the judgments a piece of the run needs, at least those of its queries;
    `pieces`: every judgment again, in pieces of whole queries, from which the judged queries
    no piece answered are evaluated last (one piece, `table`, unless spilled); `unchecked`:
    only the judgments no piece's plan has checked, in pieces (default: `in_pieces`). A piece
    that takes a part of the judgments whole (`of`, when the qrels are divided as the run's
    rows are) has them all checked by its plan, the queries it did not answer included; the
    last plan needs no more when it adds no placeholder (queries 'retrieved').
    """

    table: pl.DataFrame | pl.LazyFrame
    keys: list[str]
    of: Callable[[pl.DataFrame], pl.DataFrame]
    pieces: Callable[[], Iterator[pl.DataFrame | pl.LazyFrame]] | None = None
    unchecked: Callable[[], Iterator[pl.DataFrame | pl.LazyFrame]] | None = None

    def in_pieces(self) -> Iterator[pl.DataFrame | pl.LazyFrame]:
        """`pieces`, or `table` as one piece."""
        return iter([self.table]) if self.pieces is None else self.pieces()

    def unchecked_pieces(self) -> Iterator[pl.DataFrame | pl.LazyFrame]:
        """`unchecked`, or every judgment (`in_pieces`)."""
        return self.in_pieces() if self.unchecked is None else self.unchecked()


def read_judgments(ev: Plan) -> Judgments | None:
    """`ev`'s separate qrels read once, each piece's judgments found by value
    (`by_value`); None without separate qrels."""
    read = read_qrels(ev)
    return None if read is None else by_value(*read)


def read_qrels(ev: Plan) -> tuple[pl.DataFrame, list[str]] | None:
    """`ev`'s separate qrels, in memory, and the group columns they share with the run;
    None without separate qrels."""
    scanned = scan_qrels(ev)
    if scanned is None:
        return None
    # a stream holds a third less at peak than one whole read of a text file, and is faster;
    # under an address-space limit it maps far more than it holds (`preval.engines.collect`)
    engine = "in-memory" if address_space_limit() is not None else "streaming"
    table = scanned.collect(engine=engine)
    return table, [c for c in ev.group if c in table.columns]


def qrels_floor_of(ev: Plan) -> int:
    """`budget.qrels_floor` of `ev`'s separate qrels, from their file when they were given as
    a path (a TREC qrels file is a plan by now: its path is among the recipe's sources)."""
    if ev.recipe is None or ev.recipe.qrels is None:
        return 0
    path = dict(ev.recipe.sources).get("qrels")
    return qrels_floor(ev.recipe.qrels if path is None else path)


def qrels_too_large(ev: Plan, budget: int, held: float, engine: str) -> InputError:
    """The one line that refuses qrels `engine` would hold whole (`held` bytes) beyond
    `budget`, naming their file."""
    path = None if ev.recipe is None else dict(ev.recipe.sources).get("qrels")
    named = "" if path is None else f" {path}"
    what = f"the qrels{named} (engine {engine!r} holds them whole)"
    return too_little(budget, held, what, text=not ev.source_by_range)


def scan_qrels(ev: Plan) -> pl.LazyFrame | None:
    """`ev`'s separate qrels, as read into memory by `read_qrels` (None without)."""
    if ev.recipe is None or ev.recipe.qrels is None:
        return None
    columns = ev.recipe.columns
    return io.scan(
        ev.recipe.qrels,
        id_columns=(columns.query, columns.doc, *ev.group[:-1]),
        numeric_columns=(columns.label,),
        what="qrels",
    )


def by_value(table: pl.DataFrame, keys: list[str]) -> Judgments:
    """`table` (qrels), a piece's judgments found by the values of its query keys
    (`judgments_of`; sorted first when there is one key, for its binary search). A piece takes
    every judgment of its queries, and its plan checks them all: the judgments left unchecked
    (`Judgments.unchecked`) are those of the queries no piece held, and those with a null key
    (no query's)."""
    if len(keys) == 1:
        table = sorted_by(table, keys[0])
    taken = Taken()
    return Judgments(
        table, keys, partial(judgments_of, table, keys=keys, taken=taken),
        unchecked=lambda: iter([taken.rest(table, keys)]),
    )  # fmt: skip


@dataclass(frozen=True)
class Taken:
    """The judgments pieces took (`judgments_of`): the row ranges found by binary search in
    sorted qrels (`spans`, columns start and end), and the query keys looked up by a join
    (`keys`)."""

    spans: list[pl.DataFrame] = field(default_factory=list)
    keys: list[pl.DataFrame] = field(default_factory=list)

    def rest(self, qrels: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
        """The judgments of `qrels` no piece took; a null key is no query's: its judgments
        stay (a join matches no null)."""
        if self.spans:
            # the judged queries' ranges are disjoint (one per distinct start; a query without
            # judgments has an empty one): the rest is the gaps between them, sorted
            index = pl.get_index_type()
            spans = pl.concat(self.spans).filter(pl.col("start") < pl.col("end"))
            spans = spans.unique("start").sort("start")
            edge = [pl.Series([0], dtype=index), spans["end"]], [spans["start"], pl.Series(
                [qrels.height], dtype=index)]  # fmt: skip
            gaps = pl.DataFrame({"start": pl.concat(edge[0]), "end": pl.concat(edge[1])})
            gaps = gaps.filter(pl.col("start") < pl.col("end"))
            rows = pl.int_ranges(gaps["start"], gaps["end"], dtype=index, eager=True).explode()
            qrels = qrels[rows.drop_nulls()]
        if self.keys:
            qrels = matching(qrels, pl.concat(self.keys).unique(), keys, how="anti")
        return qrels


def sorted_by(qrels: pl.DataFrame, key: str) -> pl.DataFrame:
    """`qrels` sorted by `key` (stable; as read if it is already) and flagged as such."""
    if qrels[key].null_count():  # null ids are an error the plan reports; no sorted flag
        return qrels
    if not qrels[key].is_sorted():
        qrels = qrels.sort(key, maintain_order=True)
    return flag_sorted(qrels, [key])


def judgments_of(
    qrels: pl.DataFrame, chunk: pl.DataFrame, keys: list[str], *, taken: Taken | None = None
) -> pl.DataFrame:
    """The judgments of the queries in `chunk` (ids compared as strings if dtypes differ),
    recorded in `taken` when given.

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
        if taken is not None:
            taken.spans.append(pl.DataFrame({"start": start, "end": end}))
        first, count = start.min(), (end - start).sum()
        if first is not None and end.max() - first == count:
            # the judgments are one range of the qrels (run and qrels list the same queries in
            # the same order): a slice, not a gather of every row
            return qrels.slice(first, count)
        rows = pl.int_ranges(start, end, dtype=pl.get_index_type(), eager=True).explode()
        return qrels[rows.drop_nulls().sort()]
    if taken is not None:
        taken.keys.append(wanted)
    return matching(qrels, wanted, keys, how="semi")


def matching(qrels: pl.DataFrame, wanted: pl.DataFrame, keys: list[str], how: str) -> pl.DataFrame:
    """The judgments whose `keys` are (``how="semi"``) or are not (``"anti"``) among `wanted`'s
    rows, ids compared as strings if their dtypes differ."""
    if any(qrels.schema[k] != wanted.schema[k] for k in keys):
        as_str = [pl.col(k).cast(pl.String).alias(f"__preval_{k}") for k in keys]
        other = [f"__preval_{k}" for k in keys]
        return qrels.with_columns(as_str).join(wanted.select(as_str), on=other, how=how).drop(other)
    return qrels.join(wanted, on=keys, how=how)
