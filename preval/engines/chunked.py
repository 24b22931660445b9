"""The chunked engine: evaluate input that arrives grouped by query, chunk by chunk.

One lazy plan over the whole input sorts every row before it aggregates, and a sort holds all
its input: at 100M rows that is gigabytes whatever the Polars engine. But a query's measures
need only that query's rows, and most inputs arrive grouped by query (TREC runs, the output of
a retrieval pipeline, a table written per query). This engine reads the input range by range
where a range costs only its rows (a Parquet file, a frame in memory; the ranges then split the
known row count evenly into rounds of `WORKERS` chunks, `balanced`), else as a stream (Polars'
``collect_batches``), cuts it into chunks of about `CHUNK_ROWS` rows (`STREAM_CHUNK_ROWS` from
a stream) at group boundaries (the trailing group of a chunk is carried into the next one),
evaluates each chunk with the very plan `build` makes for the whole input, and spills each
chunk's per-query status to a Parquet file. Memory is bounded by the chunk size, not the input
size, and each query is computed by the same expressions on the same rows in the same order as
in one plan, so the results are identical (tested).

A chunk whose rows already come in ranking order within each query (a TREC run, a pipeline
that writes ranked lists) skips the sort, about two thirds of a chunk's cost: one comparison of
each row with the next tells (`Plan.in_rank_order`); after a first chunk that is not
in order, later chunks are sorted without asking. Those are sorted here, before the plan, by
one packed integer key (`Plan.rank_keys`, trec_eval's tie rule with 32-bit scores),
which sorts faster than the plan's (string, float, string) sort (`permutation`); the plan
then runs presorted. Without qrels, doc ids are not even moved: the plan reads them
only in data checks that do not depend on the order, and an error is worded from the chunk
ranked in full (`evaluate_chunk`).

The price is a precondition: rows of one group, (by..., query), must be contiguous. It is
checked, not assumed: inside each chunk (a group split into several runs of rows) and across
chunks (a group whose rows come back after other groups; not needed when the one group column
ascends from chunk to chunk, `ascends`), raising `NotGroupedError`; ``auto`` then runs
the partitioned engine, which takes rows in any order (`preval.engines`).

Up to `WORKERS` (2) chunks are evaluated at once (threads; Polars releases the GIL) and
`READ_AHEAD` (1) more is read and waits for a worker; results are spilled in input order.
Bad data raises at the first chunk that holds some, with that chunk's count and example: the
rest of a large input is not read for nothing.

With separate qrels, the judgments are read into memory once (they are usually far smaller
than runs) and each chunk joins only its own queries' judgments; the judged queries no chunk
answered get their placeholder rows from one last plan over the qrels alone.

The engines and the CLI are the only places that collect: this is an executor, not a plan.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

import polars as pl

from ..errors import InputError, PrevalError
from ..options import Hints
from ..planner import Plan, Recipe, build
from ..ranking import QUERY, run_number, run_starts
from ..spill import SpillDirectory
from .budget import (
    EVAL_COPIES,
    EVAL_COPIES_QRELS,
    QRELS_COPIES,
    address_space_limit,
    sampled,
    shape,
)
from .checks import ascends, check_across_chunks, check_contiguous
from .judgments import Judgments, read_judgments
from .presort import permutation, rank_rows, runs_of_key
from .reading import balanced, chunks_of, flag_sorted

# Rows per chunk of an input read by range (Parquet, frames): the smaller, the less memory at
# peak (two chunks in flight and one read ahead), but below this each chunk's fixed cost (its
# plan) shows, as nothing else costs much per row (benchmarks/results.md).
CHUNK_ROWS = 500_000
# Rows per chunk of an input read as a stream (TREC, CSV, a lazy plan): producing the rows
# (parsing text) hides smaller chunks' fixed cost, and the stream holds its own read-ahead
STREAM_CHUNK_ROWS = 250_000
# Chunks evaluated at once, each by Polars' thread pool: a lone chunk leaves cores idle
# (reading, and the plan's single-threaded steps); two in flight overlap those, so the
# engine's own sorts need not be parallel too (`permutation`).
WORKERS = 2
# Chunks read ahead of the workers, so that a worker that finishes starts on the next chunk
# at once instead of waiting for the reading thread (two ahead are no faster).
READ_AHEAD = 1
# the column that carries a presorted chunk's run numbers into its plan (`evaluate_chunk`)
RUN_COLUMN = "__preval_run"
# A chunk's `prepare`: the chunk (a frame, or a list of parts) and a function that reads the
# ranking keys of a frame of its rows (`rank_keys_of`) -> the chunk with its groups' rows
# together in one piece of memory, and whether they are in ranking order too
Prepare = Callable[
    [pl.DataFrame | list[pl.DataFrame], Callable[[pl.DataFrame], object]],
    tuple[pl.DataFrame, bool],
]


def collect_chunked(
    ev: Plan,
    *,
    progress: Callable[[int], None] | None = None,
    chunk_rows: int | None = None,
    workers: int = WORKERS,
    chunks: Iterable[pl.DataFrame | list[pl.DataFrame]] | None = None,
    disjoint: bool = False,
    prepare: Prepare | None = None,
    tmp_dir: str | Path | None = None,
    judgments: Judgments | None = None,
    budget: int | None = None,
    read_ahead: int = READ_AHEAD,
) -> Plan:
    """`ev` with its status computed chunk by chunk (see the module docstring).

    `chunks`: the frames to evaluate instead of the source's ranges, each group's rows
    together; `disjoint`: no group is in two of them (the partitioned engine's buckets), so
    there is nothing to check across chunks; `prepare`, run on the worker thread, puts each of
    `chunks` (a frame, or a list of parts) into that shape first: its groups' rows together, in
    one piece of memory. `chunk_rows`: rows per chunk (default `CHUNK_ROWS`, or
    `STREAM_CHUNK_ROWS` for a source read as a stream). `judgments`: the separate qrels already
    in memory (by default read here, `read_judgments`). `budget`: the bytes of data a memory
    limit leaves (`budget.data_budget`): chunk size, workers and read-ahead are chosen to fit
    it (not with `chunks`, whose size their maker chose), else `InputError` before any work.
    """
    if ev.source is None:
        msg = "this evaluation has no source to read in chunks"
        raise InputError(msg)
    recipe = ev.recipe
    if chunk_rows is None:
        chunk_rows = CHUNK_ROWS if ev.source_by_range else STREAM_CHUNK_ROWS
    # once, into memory: each chunk then joins the judgments of its own queries only
    if judgments is None:
        judgments = read_judgments(ev)
    if budget is not None and chunks is None:
        held = 0 if judgments is None else QRELS_COPIES * judgments.table.estimated_size()
        per_row, input_rows = sampled(ev.source)  # (its rows: when the sample is all of it)
        fit = shape(
            budget - held,
            per_row,
            chunk_rows=chunk_rows,
            workers=workers,
            read_ahead=read_ahead,
            text=not ev.source_by_range,
            input_rows=input_rows,
            copies=EVAL_COPIES if judgments is None else EVAL_COPIES_QRELS,
        )
        chunk_rows, workers, read_ahead = fit.chunk_rows, fit.workers, fit.read_ahead
    if ev.source_by_range and chunks is None:
        chunk_rows = balanced(ev.source.select(pl.len()).collect().item(), chunk_rows, workers)

    tmp = SpillDirectory(prefix="preval-", dir=tmp_dir)
    spill = tmp.path
    schema: pl.Schema | None = None
    spilled = 0
    # while every chunk lists its groups in ascending order, each after the last chunk's last,
    # no group can come back in a later chunk: the check across chunks is not needed
    ascending = True
    last: str | int | None = None
    # while the statuses come in query order too (one query key), the per-query table will be
    # flagged as sorted by query: sorting it for output or summary is then free
    in_query_order = not ev.keys
    last_query: str | int | None = None
    rows_read = 0
    first: pl.DataFrame | None = None
    look_for_order = True
    pending: deque[tuple[Future, int, int]] = deque()  # (its work, rows from, rows to)

    def finish() -> None:
        """Spill the oldest pending chunk's status (chunks finish in input order)."""
        nonlocal schema, look_for_order, in_query_order, last_query, spilled
        future, start, rows = pending.popleft()
        try:
            status, in_order = future.result()
        except PrevalError as exc:
            # bad data stops the engine at this chunk: its counts are this chunk's
            if exc.counted:
                part = "one bucket of the queries" if disjoint else (
                    f"the queries of input rows {start + 1:,}-{rows:,}")  # fmt: skip
                engine = "partitioned" if disjoint else "chunked"
                exc.args = (f"{exc} (counted over {part}, where the {engine} engine stopped)",)
                exc.counted = False
            raise
        # input is ranked throughout or not at all, as a rule: after a chunk that is not, the
        # check (~5% of a chunk's time) is not repeated
        look_for_order = look_for_order and in_order
        if in_query_order:
            in_query_order, last_query = ascends(status[QUERY], last_query)
        spilled += 1
        # every part in the first part's schema (a column all null in one chunk is typed)
        schema = schema or status.schema
        # lz4, not zstd: spill files live for one run, so writing fast beats writing small
        status.cast(dict(schema)).write_parquet(spill / f"{spilled:06d}.parquet", compression="lz4")
        if progress is not None:
            progress(rows)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="preval-chunk")
    try:
        if chunks is None:
            chunks = chunks_of(ev.source, ev.group, chunk_rows, by_range=ev.source_by_range)
        for item in chunks:
            # a chunk for `prepare` may come as a list of parts; this thread sees them as one
            chunk = item if isinstance(item, pl.DataFrame) else pl.concat(item, rechunk=False)
            start = rows_read
            rows_read += chunk.height
            if prepare is None:
                item = chunk = flag_sorted(chunk, ev.group)
            if ascending and not disjoint:
                ascending, last = ascends(chunk[ev.group[0]] if len(ev.group) == 1 else None, last)
            if first is None:
                first = chunk.clear()
            if judgments is not None:
                recipe = dataclasses.replace(recipe, qrels=judgments.of(chunk))
            # handed over in a box the worker empties: the chunk's pieces are freed as soon as
            # they are put together (the work item would hold them to the end)
            box = [item]
            del chunk, item
            work = partial(evaluate_chunk, box, recipe, ev.group, look_for_order, prepare)
            pending.append((pool.submit(work), start, rows_read))
            # the pool starts a waiting chunk as soon as a worker is free
            while len(pending) >= workers + read_ahead:
                finish()
        while pending:
            finish()
    except BaseException:
        pool.shutdown(cancel_futures=True)
        tmp.cleanup()
        raise
    pool.shutdown()
    if schema is None:  # no rows at all: nothing to bound, the whole plan is empty
        tmp.cleanup()
        return dataclasses.replace(ev, status=ev.status.collect().lazy())
    status = pl.scan_parquet(spill / "*.parquet")
    if not (ascending or disjoint):
        check_across_chunks(status, ev)
    if in_query_order and judgments is None:  # (with qrels, unanswered queries come last)
        status = status.with_columns(pl.col(QUERY).set_sorted())

    if judgments is not None:
        # judged queries that no chunk answered: one plan over the qrels and an empty run
        # (piece by piece when the judgments were spilled: each piece holds whole queries).
        # Without placeholders it adds no row, and only checks the judgments no chunk's plan
        # checked.
        answered = Hints(placeholders=status.select(*ev.keys, QUERY))
        pads = recipe.semantics.queries != "retrieved"
        unanswered = [
            build(first, dataclasses.replace(recipe, qrels=piece), answered).status.collect()
            for piece in (judgments.in_pieces() if pads else judgments.unchecked_pieces())
        ]
        status = pl.concat([status, *(u.lazy() for u in unanswered)], how="vertical_relaxed")
    return dataclasses.replace(ev, status=status, keep=tmp)


def evaluate_chunk(
    box: list,
    recipe: Recipe,
    group: list[str],
    look_for_order: bool,
    prepare: Prepare | None = None,
) -> tuple[pl.DataFrame, bool]:
    """The status of the chunk in `box` (taken out), and whether its rows came in ranking
    order (False if not asked).

    The chunk arrives in pieces (row groups, the group carried over from the last chunk); it is
    put together here, on a worker thread, first: Polars copies a column in pieces into one in
    every per-group aggregation that reads it, and gathers from pieces slowly. `prepare` (see
    `collect_chunked`) is given the chunk and a function that reads its ranking keys
    (`rank_keys_of`): when it ranks the rows as it groups them, the plan runs presorted.
    """
    chunk = box.pop()
    # a chunk cannot know which judged queries other chunks answer: no placeholders here
    hints = Hints(placeholders=recipe.qrels is None)
    if prepare is None:
        chunk = chunk.rechunk()
    else:
        chunk, ranked = prepare(chunk, partial(rank_keys_of, recipe=recipe, hints=hints))
        chunk = flag_sorted(chunk, group)
        if ranked:
            return evaluate_ranked(chunk, recipe, group, hints), False
    plan = build(chunk, recipe, hints)
    runs = None
    if plan.top_k is not None:
        # the chunk's own rows per query: whether ranking only the top K rows pays
        runs = chunk.select(run_starts(group).sum()).item()
        hints = dataclasses.replace(hints, rows_per_query=chunk.height / max(runs, 1))
        plan = build(chunk, recipe, hints)
    in_order = False
    if look_for_order and plan.in_rank_order is not None:
        in_order = bool(plan.in_rank_order.collect().item())
    # with by= columns too: the group columns stay in place (`rank_rows`), so this beats the
    # plan's sort by system and query as well
    presort = not in_order and plan.rank_keys is not None
    # Groups taken as runs of rows, unless one sorted column, which Polars already slices
    # faster and in less memory than it groups by run number
    sliced = len(group) == 1 and chunk[group[0]].flags["SORTED_ASC"]
    if presort:
        keys = plan.rank_keys.collect(engine="in-memory")
        # the key numbers the runs 0, 1, 2... in its high bits: where the plan groups rows by
        # run, it takes that number rather than comparing each row's group keys with the last
        # row's again
        run_ids = runs_of_key(keys)
        runs = int(run_ids[-1]) + 1
        order = permutation(keys, plan.rank_descending, run_ids=run_ids)
        # Without qrels a plan reads doc ids only per group and in any order (null count,
        # distinct count), except in the examples of an error message: they can stay where
        # they are, and the chunk is ranked in full again only to word an error as one plan
        # does.
        docs = recipe.columns.doc if recipe.qrels is None else None
        still = [*group, docs] if docs in chunk.columns else group

        def rank(still: list[str]) -> pl.DataFrame:
            ranked = rank_rows(chunk, order, still)
            # rows move only within their run: the numbers stay in place
            return ranked if sliced else ranked.with_columns(run_ids.alias(RUN_COLUMN))

        ranked = rank(still)
        if not sliced:
            hints = dataclasses.replace(hints, runs=RUN_COLUMN)
    else:
        ranked = chunk
        if runs is None:
            runs = ranked.select(run_starts(group).sum()).item()
    if in_order or presort:  # no sort in the plan
        hints = dataclasses.replace(hints, presorted=True, contiguous=not sliced)
    engine = _engine(recipe)
    plan = build(ranked, recipe, hints)
    try:
        status = plan.status.collect(engine=engine)
    except PrevalError:
        if not presort or still == group:
            raise
        ranked = rank(group)
        status = build(ranked, recipe, hints).status.collect(engine=engine)
    groups = status.select(pl.struct(*plan.keys, QUERY).n_unique()).item()
    check_contiguous(ranked, group, runs, groups)
    return status, in_order


def rank_keys_of(
    frame: pl.DataFrame, recipe: Recipe, hints: Hints
) -> tuple[pl.DataFrame, tuple[bool, ...]] | None:
    """The ranking keys of `frame`'s rows in its plan, without their groups
    (`Plan.rank_scores`), and their tie columns' descending flags; None when the plan has
    none, or may rank only each query's top K rows."""
    plan = build(frame, recipe, hints)
    if plan.rank_scores is None or plan.top_k is not None:
        return None
    return plan.rank_scores.collect(engine="in-memory"), plan.rank_descending


def evaluate_ranked(
    chunk: pl.DataFrame, recipe: Recipe, group: list[str], hints: Hints
) -> pl.DataFrame:
    """The status of `chunk`, whose groups' rows are together and in ranking order (a
    `prepare` ranked them): its plan runs presorted, each group one run of rows."""
    sliced = len(group) == 1 and chunk[group[0]].flags["SORTED_ASC"]
    run_ids = chunk.select(run_number(group)).to_series()
    runs = int(run_ids[-1]) + 1 if chunk.height else 0
    if not sliced:
        chunk = chunk.with_columns(run_ids.alias(RUN_COLUMN))
    del run_ids
    hints = dataclasses.replace(
        hints, presorted=True, contiguous=not sliced, runs=None if sliced else RUN_COLUMN
    )
    plan = build(chunk, recipe, hints)
    status = plan.status.collect(engine=_engine(recipe))
    groups = status.select(pl.struct(*plan.keys, QUERY).n_unique()).item()
    check_contiguous(chunk, group, runs, groups)
    return status


def _engine(recipe: Recipe) -> str:
    """The Polars engine of a chunk's plan.

    Polars' default engine streams; a chunk's one aggregation runs faster in memory, but
    with qrels the join does not. Streaming maps address space far beyond its data (a
    gigabyte for a chunk of megabytes), more than an address-space limit holds.
    """
    streams = recipe.qrels is not None and address_space_limit() is None
    return "auto" if streams else "in-memory"
