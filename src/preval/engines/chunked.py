"""The chunked engine: evaluate input that arrives grouped by query, chunk by chunk.

One lazy plan over the whole input sorts every row before it aggregates, and a sort holds all
its input: at 100M rows that is gigabytes whatever the Polars engine. But a query's measures
need only that query's rows, and most inputs arrive grouped by query (TREC runs, the output
of a retrieval pipeline, a table written per query). This engine reads the input range by
range where a range costs only its rows (a Parquet file, a frame in memory; the ranges then
split the known row count evenly into rounds of `WORKERS` chunks, `_balanced`), else as a
stream (Polars' ``collect_batches``), cuts it into chunks of about `CHUNK_ROWS` rows at group
boundaries (the trailing group of a chunk is carried into the next one), evaluates each chunk
with the very plan `build` makes for the whole input, and spills each chunk's per-query
status to a Parquet file. Memory is bounded by the chunk size, not the input size, and each
query is computed by the same expressions on the same rows in the same order as in one plan,
so the results are identical (tested).

A chunk whose rows already come in ranking order within each query (a TREC run, a pipeline
that writes ranked lists) skips the sort, about two thirds of a chunk's cost: one comparison of
each row with the next tells (`Evaluation.in_rank_order`); after a first chunk that is not
in order, later chunks are sorted without asking. Those are sorted here, before the plan, by
one packed integer key (`Evaluation.rank_keys`, trec_eval's tie rule with 32-bit scores),
which sorts faster than the plan's (string, float, string) sort (`_permutation`); the plan
then runs presorted. Without qrels, doc ids are not even moved: the plan reads them
only in data checks that do not depend on the order, and an error is worded from the chunk
ranked in full (`_evaluate`).

The price is a precondition: rows of one group, (by..., query), must be contiguous. It is
checked, not assumed: inside each chunk (a group split into several runs of rows) and across
chunks (a group whose rows come back after other groups; not needed when the one group column
ascends from chunk to chunk, `_ascending`), raising `NotGroupedError`; ``auto`` then runs
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
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path

import polars as pl

from .. import io
from ..errors import InputError, PrevalError
from ..evaluate import Evaluation, Recipe, build
from ..options import Hints
from ..ranking import QUERY, RANK_BITS, run_number, run_starts

# Rows per chunk: from 1M to 4M rows per chunk run at the same speed; the smaller, the less
# memory at peak.
CHUNK_ROWS = 2_000_000
# Chunks evaluated at once, each by Polars' thread pool: a lone chunk leaves cores idle
# (reading, and the plan's single-threaded steps); two in flight overlap those, so the
# engine's own sorts need not be parallel too (`_permutation`).
WORKERS = 2
# Chunks read ahead of the workers, so that a worker that finishes starts on the next chunk
# at once instead of waiting for the reading thread (two ahead are no faster).
READ_AHEAD = 1
# the column that carries a presorted chunk's run numbers into its plan (`_evaluate`)
RUN_COLUMN = "__preval_run"


class NotGroupedError(InputError):
    """The input's rows are not grouped by (by..., query): the chunked engine cannot run."""


def collect_chunked(
    ev: Evaluation,
    *,
    progress: Callable[[int], None] | None = None,
    chunk_rows: int = CHUNK_ROWS,
    workers: int = WORKERS,
    chunks: Iterable[pl.DataFrame | list[pl.DataFrame]] | None = None,
    disjoint: bool = False,
    prepare: Callable[[pl.DataFrame | list[pl.DataFrame]], pl.DataFrame] | None = None,
    tmp_dir: str | Path | None = None,
) -> Evaluation:
    """`ev` with its status computed chunk by chunk (see the module docstring).

    `chunks`: the frames to evaluate instead of the source's ranges, each group's rows
    together; `disjoint`: no group is in two of them (the partitioned engine's buckets), so
    there is nothing to check across chunks; `prepare`, run on the worker thread, puts each
    of `chunks` (a frame, or a list of parts) into that shape first: its groups' rows
    together, in one piece of memory.
    """
    if ev.source is None:
        msg = "this evaluation has no source to read in chunks"
        raise InputError(msg)
    recipe = ev.recipe
    qrels = recipe.qrels
    if qrels is not None:
        # once, into memory: each chunk then joins the judgments of its own queries only
        columns = recipe.columns
        qrels = io.scan(
            qrels,
            id_columns=(columns.query, columns.doc, *ev.group[:-1]),
            numeric_columns=(columns.label,),
            what="qrels",
        ).collect()
    if ev.source_by_range and chunks is None:
        chunk_rows = _balanced(ev.source.select(pl.len()).collect().item(), chunk_rows, workers)
    query_keys = [c for c in ev.group if qrels is None or c in qrels.columns]
    if qrels is not None and len(query_keys) == 1:
        qrels = _sorted_by(qrels, query_keys[0])

    tmp = tempfile.TemporaryDirectory(prefix="preval-", dir=tmp_dir)
    spill = Path(tmp.name)
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
    pending: deque[tuple[Future, int]] = deque()

    def finish() -> None:
        """Spill the oldest pending chunk's status (chunks finish in input order)."""
        nonlocal schema, look_for_order, in_query_order, last_query, spilled
        future, rows = pending.popleft()
        status, in_order = future.result()
        # input is ranked throughout or not at all, as a rule: after a chunk that is not, the
        # check (~5% of a chunk's time) is not repeated
        look_for_order = look_for_order and in_order
        if in_query_order:
            in_query_order, last_query = _ascending(status[QUERY], last_query)
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
            chunks = _chunks(ev.source, ev.group, chunk_rows, by_range=ev.source_by_range)
        for item in chunks:
            # a chunk for `prepare` may come as a list of parts; this thread sees them as one
            chunk = item if isinstance(item, pl.DataFrame) else pl.concat(item, rechunk=False)
            rows_read += chunk.height
            if prepare is None:
                item = chunk = _flag_sorted(chunk, ev.group)
            if ascending and not disjoint:
                ascending, last = _ascending(
                    chunk[ev.group[0]] if len(ev.group) == 1 else None, last
                )
            if first is None:
                first = chunk.clear()
            if qrels is not None:
                recipe = dataclasses.replace(recipe, qrels=_judgments_of(qrels, chunk, query_keys))
            # handed over in a box the worker empties: the chunk's pieces are freed as soon as
            # they are put together (the work item would hold them to the end)
            box = [item]
            del chunk, item
            work = partial(_evaluate, box, recipe, ev.group, look_for_order, prepare)
            pending.append((pool.submit(work), rows_read))
            # the pool starts a waiting chunk as soon as a worker is free
            while len(pending) >= workers + READ_AHEAD:
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
        _check_across_chunks(status, ev)
    if in_query_order and qrels is None:  # (with qrels, unanswered queries come last)
        status = status.with_columns(pl.col(QUERY).set_sorted())

    if qrels is not None:
        # judged queries that no chunk answered: one plan over the qrels and an empty run
        answered = Hints(placeholders=status.select(*ev.keys, QUERY))
        unanswered = build(first, dataclasses.replace(recipe, qrels=qrels), answered)
        unanswered = unanswered.status.collect()
        status = pl.concat([status, unanswered.lazy()], how="vertical_relaxed")
    return dataclasses.replace(ev, status=status, keep=tmp)


def _evaluate(
    box: list,
    recipe: Recipe,
    group: list[str],
    look_for_order: bool,
    prepare: Callable[[pl.DataFrame | list[pl.DataFrame]], pl.DataFrame] | None = None,
) -> tuple[pl.DataFrame, bool]:
    """The status of the chunk in `box` (taken out), and whether its rows came in ranking
    order (False if not asked).

    The chunk arrives in pieces (row groups, the group carried over from the last chunk); it is
    put together here, on a worker thread, first: Polars copies a column in pieces into one in
    every per-group aggregation that reads it, and gathers from pieces slowly.
    """
    chunk = box.pop()
    chunk = chunk.rechunk() if prepare is None else _flag_sorted(prepare(chunk), group)
    # a chunk cannot know which judged queries other chunks answer: no placeholders here
    hints = Hints(placeholders=recipe.qrels is None)
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
    # with by= columns too: the group columns stay in place (`_ranked`), so this beats the
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
        run_ids = _run_ids(keys)
        runs = int(run_ids[-1]) + 1
        order = _permutation(keys, plan.rank_descending, run_ids=run_ids)
        # Without qrels a plan reads doc ids only per group and in any order (null count,
        # distinct count), except in the examples of an error message: they can stay where
        # they are, and the chunk is ranked in full again only to word an error as one plan
        # does.
        docs = recipe.columns.doc if recipe.qrels is None else None
        still = [*group, docs] if docs in chunk.columns else group

        def rank(still: list[str]) -> pl.DataFrame:
            ranked = _ranked(chunk, order, still)
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
    # Polars' default engine streams; a chunk's one aggregation runs faster in memory, but
    # with qrels the join does not
    engine = "in-memory" if recipe.qrels is None else "auto"
    plan = build(ranked, recipe, hints)
    try:
        status = plan.status.collect(engine=engine)
    except PrevalError:
        if not presort or still == group:
            raise
        ranked = rank(group)
        status = build(ranked, recipe, hints).status.collect(engine=engine)
    groups = status.select(pl.struct(*plan.keys, QUERY).n_unique()).item()
    _check_contiguous(ranked, group, runs, groups)
    return status, in_order


def _chunks(
    source: pl.LazyFrame, group: list[str], chunk_rows: int, *, by_range: bool = False
) -> Iterator[pl.DataFrame]:
    """The input as frames of about `chunk_rows` rows that end at a group boundary (in pieces:
    `_evaluate` puts each together on its worker thread)."""
    pending: list[pl.DataFrame] = []
    size = 0
    for batch in (
        _ranges(source, chunk_rows) if by_range else source.collect_batches(chunk_size=chunk_rows)
    ):
        pending.append(batch)
        size += batch.height
        if size < chunk_rows:
            continue
        frame = pl.concat(pending, rechunk=False)
        cut = _last_group_start(frame, group)
        if cut == 0:  # one group fills the chunk: keep reading until it ends
            pending = [frame]
            continue
        yield frame.slice(0, cut)
        pending, size = [frame.slice(cut)], frame.height - cut
    if size:
        yield pl.concat(pending, rechunk=False)


def _balanced(total: int, chunk_rows: int, workers: int) -> int:
    """Rows per chunk, at most `chunk_rows`, that cut `total` rows into whole rounds of
    `workers` chunks of about the same size.

    With chunks of `chunk_rows` a last round would often hold one chunk and leave a worker
    idle (10M rows: six chunks of 1.67M rows rather than five of 2M with the fifth alone).
    """
    rounds = max(1, -(-total // (chunk_rows * workers)))  # ceiling divisions
    return max(1, -(-total // (rounds * workers)))


def _ranges(source: pl.LazyFrame, rows: int) -> Iterator[pl.DataFrame]:
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


def _flag_sorted(chunk: pl.DataFrame, group: list[str]) -> pl.DataFrame:
    """`chunk` with its group columns flagged as sorted where they are (ascending, no nulls).

    Most inputs list their queries in order. Polars then groups by slices instead of hashing
    the keys, about twice as fast. A flag is only set after checking it (cheap), so results
    cannot change.
    """
    flagged = [
        pl.col(c).set_sorted() for c in group if chunk[c].null_count() == 0 and chunk[c].is_sorted()
    ]
    return chunk.with_columns(flagged) if flagged else chunk


def _ascending(column: pl.Series | None, last: str | int | None) -> tuple[bool, str | int | None]:
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


def _ranked(chunk: pl.DataFrame, order: pl.Series, still: list[str]) -> pl.DataFrame:
    """`chunk` with each group's rows in ranking order (`order`, from `_permutation`), except
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


def _run_ids(keys: pl.DataFrame) -> pl.Series:
    """The run number of each row (0, 1, 2... in row order), from the packed key."""
    return keys.select(pl.col(keys.columns[0]) // 2**RANK_BITS).to_series()


def _permutation(
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
    `limit` bits left, one arg sort does it all. `run_ids`: `_run_ids(keys)`, if known.
    """
    key = keys.columns[0]
    index = pl.int_range(pl.len(), dtype=pl.Int64)
    runs = _run_ids(keys) if run_ids is None else run_ids
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


def _last_group_start(frame: pl.DataFrame, group: list[str], window: int = 4096) -> int:
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


def _check_contiguous(chunk: pl.DataFrame, group: list[str], runs: int, groups: int) -> None:
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
        _not_grouped(example, group)


def _check_across_chunks(status: pl.LazyFrame, ev: Evaluation) -> None:
    """No group was evaluated in two chunks (the spilled statuses' hashes first; an exact look
    at any collision). Only when the chunks' groups do not ascend (`_ascending`)."""
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
        _not_grouped({ev.names[k]: row[k] for k in key}, ev.group)


def _not_grouped(example: dict, group: list[str]) -> None:
    shown = ", ".join(f"{c}={v!r}" for c, v in example.items())
    msg = (
        f"input: rows are not grouped by ({', '.join(group)}): the rows of {shown} are split "
        "by rows of other groups (rule: the chunked engine needs each group's rows "
        "together; use --engine partitioned (or auto), which takes rows in any order)"
    )
    raise NotGroupedError(msg)


def _sorted_by(qrels: pl.DataFrame, key: str) -> pl.DataFrame:
    """`qrels` sorted by `key` (stable; as read if it is already) and flagged as such."""
    if qrels[key].null_count():  # null ids are an error the plan reports; no sorted flag
        return qrels
    if not qrels[key].is_sorted():
        qrels = qrels.sort(key, maintain_order=True)
    return _flag_sorted(qrels, [key])


def _judgments_of(qrels: pl.DataFrame, chunk: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
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
