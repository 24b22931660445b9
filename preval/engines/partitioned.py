"""The partitioned engine: evaluate rows in any order, in memory bounded by a budget.

The rows of a query may be anywhere in the input: a join of a run with its qrels, the part files
of a Spark or DuckDB job, shards appended to one another, a pipeline that writes rows as it
scores them. The engine brings each group's rows, (by..., query), together by a hash of the
group keys, then evaluates the grouped rows with the chunked engine's machinery (same plan per
chunk, two workers, statuses spilled), so the results are those of one plan over the input:

* input that fits the memory budget is read whole and its rows are put in the order of their
  hash (`group_together`: one sort of an integer key and one gather, no string comparison);
* larger input is first scattered by ``hash % B`` into B bucket files in a temporary directory
  (one streaming pass; a group's rows all land in one bucket, and B is chosen so that a
  bucket fits the budget and, while the scatter fits, holds one chunk), then each bucket is
  read back and grouped the same way.

No group is in two buckets, so nothing needs checking across chunks, and the order of the
input never matters: only its size decides between the two paths (with separate qrels and
no limit given, within `QRELS_MEMORY` when the input fits). The temporary directory is
removed on success, on error and on interruption; a run never reads another run's spill.
"""

from __future__ import annotations

import contextlib
import math
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial
from pathlib import Path

import polars as pl

from ..errors import InputError
from ..planner import Plan
from ..spill import SpillDirectory, remove_tree
from .budget import (
    EVAL_COPIES,
    EVAL_COPIES_QRELS,
    MAX_BUCKETS,
    QRELS_COPIES,
    SCATTER_BATCH_ROWS,
    OverLimit,
    base,
    read_rows,
    row_bytes,
    scatter_bytes,
    shape,
    spill_buckets,
)
from .chunked import READ_AHEAD, WORKERS, collect_chunked
from .judgments import (
    Judgments,
    by_value,
    qrels_floor_of,
    qrels_too_large,
    read_qrels,
    scan_qrels,
)
from .reading import balanced, ranges

# Bytes the engine may hold by default: the input read whole when it takes at most a third of
# this in memory (the grouped copy and the evaluation of two chunks need the rest), else spilled.
DEFAULT_MEMORY_LIMIT = 4 * 2**30
# With separate qrels and no limit given, the engine stays within this much resident memory
# when it can, as with ``--memory-limit 1GB`` (`QRELS_MEMORY` less `budget.base` for data): a
# TREC run of 10M lines in join order with as many lines of qrels is then spilled,
# qrels and all, in little more time than it takes read whole (each piece's judgments come
# from its own bucket) and in a third of the memory, below trec_eval's; smaller inputs are
# read whole within it
QRELS_MEMORY = 2**30
# separate qrels in memory, per byte of their least size known unread (`qrels_floor`)
QRELS_IN_MEMORY = 2
# separate qrels are spilled into buckets when holding them takes more than this share of
# the budget (`_qrels_to_spill`)
QRELS_SPILL_SHARE = 0.5
# the most buckets spilled qrels are divided into
MAX_SPILL_BUCKETS = 1024
# Rows read to estimate the input's bytes per row.
SAMPLE_ROWS = 100_000
# Spill files are Arrow IPC, uncompressed when the disk has `UNCOMPRESSED_ROOM` times the
# rows' bytes in memory free (a view of a short string takes 16 bytes there, so files can
# outgrow memory): lz4 compression costs about a third of the scatter's CPU, and reading it
# back more than reading plain files. Else lz4, about `SPILL_RATIO` of the bytes in memory.
SPILL_RATIO = 0.6
UNCOMPRESSED_ROOM = 4
# Rows per bucket: fewer, smaller buckets cost more to divide the input among (one more part
# of every batch per bucket) than they save in memory (benchmarks/results.md)
BUCKET_ROWS = 1_000_000
# Rows of the parts each in-memory bucket is divided into as its batches are read (its parts
# are then put in order one by one, the random reads of that in the processor's cache); a
# spilled bucket read back is put in order whole: dividing it again costs more than it saves
PART_ROWS = 200_000
# spilled buckets are sized to one piece of the evaluation's rows with this much to spare: the
# hash spreads groups, not rows, evenly, and a bucket over the piece's rows is divided again
BUCKET_SLACK = 1.15
_BUCKET = "__preval_bucket"
_KEY = "__preval_key"
_ROW = "__preval_row"
# the ranking keys of a bucket's rows and their tie columns' descending flags, or None
RankKeys = Callable[[pl.DataFrame], "tuple[pl.DataFrame, tuple[bool, ...]] | None"]


def collect_partitioned(
    ev: Plan,
    *,
    progress: Callable[[int], None] | None = None,
    memory_limit: int | None = None,
    tmp_dir: str | Path | None = None,
    chunk_rows: int = BUCKET_ROWS,
    workers: int = WORKERS,
    buckets: int | None = None,
) -> Plan:
    """`ev` with its status computed from its rows in any order (see the module docstring).

    `memory_limit` (bytes of data, `budget.data_budget`) decides whether the input is read
    whole or spilled into buckets, and the buckets' rows and the workers (`budget.shape`:
    `InputError` before any work when nothing fits). Without one: with separate qrels, what
    `QRELS_MEMORY` leaves for data, or `DEFAULT_MEMORY_LIMIT` for an input that does not fit
    that; else `DEFAULT_MEMORY_LIMIT`.
    `buckets` forces the spilled path with that many buckets.
    `tmp_dir`: where spill files go (default: the system's temporary directory, ``TMPDIR``).
    """
    if ev.source is None:
        msg = "this evaluation has no source to read"
        raise InputError(msg)
    run = partial(_collect_within, ev, progress=progress, tmp_dir=tmp_dir,
                  chunk_rows=chunk_rows, workers=workers, buckets=buckets)  # fmt: skip
    if memory_limit is not None:
        return run(memory_limit)
    if ev.recipe is not None and ev.recipe.qrels is not None:
        # an input too large to fit `QRELS_MEMORY` takes the default's room, as it did
        # before that cap (refused before any work is done: nothing to undo)
        with contextlib.suppress(OverLimit):
            return run(QRELS_MEMORY - base(not ev.source_by_range))
    return run(DEFAULT_MEMORY_LIMIT)


def _collect_within(
    ev: Plan,
    limit: int,
    *,
    progress: Callable[[int], None] | None,
    tmp_dir: str | Path | None,
    chunk_rows: int,
    workers: int,
    buckets: int | None,
) -> Plan:
    """`collect_partitioned` within `limit` bytes of data."""
    rows, size = _size(ev)
    n = max(1, math.ceil(rows / chunk_rows))
    # with separate qrels whose query keys hash as the run's do, rows go to buckets by those
    # keys alone (all the systems of a query in one bucket) and the judgments are divided the
    # same way, once: each bucket then takes its own part of them. Qrels too large to hold
    # (`_qrels_to_spill`) are spilled into the run's buckets by those keys, not read here
    spilled, held = _qrels_to_spill(ev, limit), 0
    qrels = None if spilled else read_qrels(ev)
    divided = spilled is not None or (qrels is not None and _comparable(ev, *qrels))
    keys = spilled[1] if spilled else qrels[1] if divided else ev.group
    run = partial(
        collect_chunked,
        ev,
        progress=progress,
        workers=workers,
        disjoint=True,
        prepare=partial(rank_together_in_parts, group=ev.group),
        tmp_dir=tmp_dir,
    )
    per_row = size / max(rows, 1)
    if qrels is not None:
        held = QRELS_COPIES * qrels[0].estimated_size()
    copies = EVAL_COPIES if spilled is None and qrels is None else EVAL_COPIES_QRELS
    text = not ev.source_by_range
    fit = None
    if buckets is None and size * 3 <= limit and spilled is None:
        with contextlib.suppress(InputError):  # (then spilled)
            fit = shape(limit - held - size, per_row, chunk_rows=chunk_rows, workers=workers,
                        read_ahead=READ_AHEAD, text=text, input_rows=rows,
                        copies=copies)  # fmt: skip
    in_memory = fit is not None
    if in_memory:
        batch_rows = balanced(rows, fit.chunk_rows, fit.workers)
        n = max(1, math.ceil(rows / batch_rows))
    else:
        what = f"this input ({rows:,} rows, spilled to disk)"
        forced, scatter_held = buckets is not None, held
        if buckets is None:  # the fewest whose scatter and evaluation fit (`spill_buckets`)
            buckets = spill_buckets(limit, size, per_row, held=held, what=what, text=text,
                                    read_rows=read_rows(ev.paths))  # fmt: skip
        if spilled is not None:  # a bucket's judgments take at most a quarter of the budget
            whole = QRELS_COPIES * spilled[2]
            buckets = min(MAX_SPILL_BUCKETS, max(buckets, math.ceil(4 * whole / limit)))
            held = math.ceil(whole / buckets)
        # a spilled bucket is held whole while it is divided into pieces of `chunk_rows`
        what = f"this input ({rows:,} rows, spilled in {buckets} buckets)"
        fit = shape(limit - held - size // buckets, per_row, chunk_rows=chunk_rows,
                    workers=workers, read_ahead=READ_AHEAD, what=what, text=text,
                    input_rows=rows, copies=copies)  # fmt: skip
        if not forced:
            buckets = _one_piece_buckets(buckets, rows, size, per_row, fit.chunk_rows,
                                         limit - scatter_held, read_rows(ev.paths))  # fmt: skip
    run = partial(run, workers=fit.workers, read_ahead=fit.read_ahead)
    judgments = None  # (spilled qrels: once spilled, below)
    if divided and spilled is None:  # as the rows will be: n buckets of parts, or spilled
        division = (n, _parts(batch_rows)) if in_memory else (buckets, 1)
        judgments = _by_bucket(*qrels, *division)
    elif qrels is not None:
        judgments = by_value(*qrels)
    del qrels  # the judgments are held once, as `judgments`, while the run is read
    if in_memory:
        buckets_ = _in_memory_buckets(
            ev.source, keys, n, by_range=ev.source_by_range, batch_rows=batch_rows
        )
        return run(chunks=_drain(buckets_), judgments=judgments)
    spill = SpillDirectory(prefix="preval-buckets-", dir=tmp_dir)
    try:
        spilled_bytes = size + (0 if spilled is None else spilled[2])
        check_free_disk(spill.path, int(spilled_bytes * SPILL_RATIO), rows)
        compression = spill_compression(spill.path, spilled_bytes)
        if spilled is not None:
            scatter(spilled[0], keys, buckets, spill.path / "qrels", compression)
        scatter(ev.source, keys, buckets, spill.path, compression)
        # (a bucket's rows are counted from its files' metadata once: both the read of the
        # bucket and its judgments' division need the count, and each count opens every file)
        rows_of = cache(_bucket_rows)
        if spilled is not None:
            judgments = _spilled_judgments(
                spill.path / "qrels", keys, buckets, spilled[0], spill.path, fit.chunk_rows,
                rows_of=rows_of,
            )  # fmt: skip
        pieces = spilled_buckets(spill.path, keys, fit.chunk_rows, rows_of=rows_of)
        return run(chunks=pieces, judgments=judgments)
    finally:
        spill.cleanup()


def _one_piece_buckets(
    buckets: int,
    rows: int,
    size: int,
    per_row: float,
    chunk_rows: int,
    budget: int,
    read_rows: int,
) -> int:
    """At least `buckets` buckets, as many as make a bucket of `rows` rows one piece of at
    most `chunk_rows` rows (with `BUCKET_SLACK`; `MAX_BUCKETS` at most) when their scatter
    fits `budget`: a bucket read back is then evaluated as it is, where one divided again in
    memory is held whole on the reading thread while both workers wait for its pieces."""
    wanted = min(MAX_BUCKETS, math.ceil(rows * BUCKET_SLACK / max(chunk_rows, 1)))
    if wanted <= buckets or scatter_bytes(wanted, per_row, read_rows, size) > budget:
        return buckets
    return wanted


def _qrels_to_spill(ev: Plan, limit: int) -> tuple[pl.LazyFrame, list[str], int] | None:
    """`ev`'s separate qrels (a scan), the keys they share with the run and their estimated
    bytes in memory (`QRELS_IN_MEMORY` times `qrels_floor_of`), when they are to be spilled
    into buckets rather than held: `QRELS_COPIES` times that is more than `QRELS_SPILL_SHARE`
    of `limit`, and their query keys hash as the run's do. Qrels whose keys do not are held
    if they fit, else refused in one line."""
    scanned = scan_qrels(ev)
    if scanned is None:
        return None
    estimate = QRELS_IN_MEMORY * qrels_floor_of(ev)
    whole = QRELS_COPIES * estimate
    if whole <= limit * QRELS_SPILL_SHARE:
        return None
    schema, q_schema = ev.source.collect_schema(), scanned.collect_schema()
    keys = [c for c in ev.group if c in q_schema]
    if any(schema[k] != q_schema[k] for k in keys):  # (held, found by value, if they fit)
        if whole > limit:
            raise qrels_too_large(ev, limit, whole, "partitioned")
        return None
    return scanned, keys, estimate


def _spilled_judgments(
    folder: Path,
    keys: list[str],
    buckets: int,
    scanned: pl.LazyFrame,
    run_folder: Path,
    chunk_rows: int,
    *,
    rows_of: Callable[[Path], int] | None = None,
) -> Judgments:
    """The judgments spilled into `buckets` under `folder` (`scatter`, by the run's keys): a
    piece of the run takes its bucket's, read when its first piece comes (a bucket's pieces
    come one after another) and divided at once as `spilled_buckets` divides that bucket of
    the run (`run_folder`, into pieces of about `chunk_rows` rows), so that each piece takes its own
    part, found by its first row; the last plan takes them bucket by bucket, and to check them
    only the buckets of which a part was taken by no piece (`Judgments.unchecked`). `rows_of`:
    the rows of a bucket of the run (default `_bucket_rows`)."""
    rows_of = rows_of or _bucket_rows
    index = _bucket_of(keys, buckets)
    empty = pl.DataFrame(schema=scanned.collect_schema())
    files = {b: sorted((folder / f"{_BUCKET}={b}").glob("*.ipc")) for b in range(buckets)}
    held: dict[int, Judgments] = {}
    # per bucket divided so far: whether some of its judgments were in no piece's part
    left: dict[int, bool] = {}

    def bucket(b: int) -> pl.DataFrame:
        return pl.scan_ipc(files[b]).collect() if files[b] else empty

    def release() -> None:
        for b, judgments in held.items():
            left[b] = any(not part.is_empty() for part in judgments.unchecked_pieces())
        held.clear()

    def of(piece: pl.DataFrame) -> pl.DataFrame:
        # the bucket's judgments divided by the hash as its rows were, once: a piece's part
        # is then taken as it is, where a search of the whole bucket's (sorted by id, a
        # string sort) for each piece kept the workers waiting on this thread
        b = piece.head(1).select(index).item()
        if b not in held:
            release()
            pieces = _pieces(rows_of(run_folder / f"{_BUCKET}={b}"), chunk_rows)
            held[b] = _by_bucket(bucket(b), keys, pieces, _parts(chunk_rows), level=2)
        return held[b].of(piece)

    def pieces() -> Iterator[pl.DataFrame]:
        release()
        return (bucket(b) for b in range(buckets))

    def unchecked() -> Iterator[pl.DataFrame]:
        # (a bucket with some part left is read and checked again whole: rarely needed, and
        # cheaper than keeping each bucket's division to the end)
        release()
        return (bucket(b) for b in range(buckets) if files[b] and left.get(b, True))

    every = [f for b in range(buckets) for f in files[b]]
    table = pl.scan_ipc(every) if every else empty.lazy()
    return Judgments(table, keys, of, pieces, unchecked)


def _comparable(ev: Plan, table: pl.DataFrame, keys: list[str]) -> bool:
    """Whether the run's and the qrels' query keys have the same types, so that equal keys
    hash alike (else the judgments of each bucket are looked up by value, `by_value`)."""
    schema = ev.source.collect_schema()
    return all(schema[k] == table.schema[k] for k in keys)


def _by_bucket(
    table: pl.DataFrame, keys: list[str], buckets: int, parts: int, level: int = 0
) -> Judgments:
    """The qrels `table` divided once as the run's rows are (`_bucket_index`): a piece of the
    run takes the part of its bucket, found from its first row (judgments with a null key are
    no query's: they stay in the table, where the last plan reports them). The parts no piece
    took, and those null keys, are the judgments left unchecked (`Judgments.unchecked`)."""
    index = _bucket_index(keys, buckets, parts, level)
    null_key = pl.any_horizontal(pl.col(k).is_null() for k in keys)
    nulls = table.filter(null_key)
    keyed = table if nulls.is_empty() else table.filter(~null_key)
    by_bucket = keyed.with_columns(index).partition_by(_BUCKET, include_key=False, as_dict=True)
    by_bucket = {b: part for (b,), part in by_bucket.items()}
    # every judgment, from the parts (not a copy): the caller may then free `table`
    table = pl.concat([*by_bucket.values(), nulls], rechunk=False)
    empty = table.clear()
    taken: set[int] = set()

    def of(piece: pl.DataFrame) -> pl.DataFrame:
        b = piece.head(1).select(index).item()
        taken.add(b)
        # each query's judgments together, as the chunked engine's come: the plan joins and
        # groups them faster so
        return group_together(by_bucket.get(b, empty), keys)

    def unchecked() -> Iterator[pl.DataFrame]:
        rest = [part for b, part in by_bucket.items() if b not in taken]
        return iter(rest if nulls.is_empty() else [*rest, nulls])

    return Judgments(table, keys, of, unchecked=unchecked)


def _bucket_index(group: list[str], buckets: int, parts: int, level: int = 0) -> pl.Expr:
    """Each row's bucket when rows are divided into `buckets` of `parts` parts each (the keys
    b * parts ... (b + 1) * parts - 1 of `_bucket_of` at `level` make bucket b)."""
    return _bucket_of(group, buckets * parts, level) // parts


def _parts(batch_rows: int) -> int:
    """The parts of each in-memory bucket, for batches of `batch_rows` rows."""
    return max(1, math.ceil(batch_rows / PART_ROWS))


def _bucket_of(group: list[str], buckets: int, level: int = 0) -> pl.Expr:
    """Each row's bucket, 0 .. `buckets` - 1, by the hash of its `group` keys. Each `level`
    reads other bits of the hash, so that a bucket divided again by another level spreads
    over all the new buckets: 0, the spilled or in-memory buckets (and their parts); 2, the
    buckets a spilled bucket is divided into when it is read back."""
    hashed = _hash(group)
    shift = {0: 0, 2: 16}[level]
    if shift:
        hashed = hashed // 2**shift
    return (hashed % buckets).alias(_BUCKET)


def _hash(group: list[str]) -> pl.Expr:
    """The 64-bit hash of each row's group keys, from which every bucket and order here is
    read (the same hash everywhere, so that a group never straddles two buckets)."""
    keys = [pl.col(c) for c in group]
    return keys[0].hash() if len(keys) == 1 else pl.struct(keys).hash()


def _drain(items: list) -> Iterator:
    """The items of `items`, each removed from it as it is handed on (freed once evaluated)."""
    items.reverse()
    while items:
        yield items.pop()


def _in_memory_buckets(
    source: pl.LazyFrame,
    group: list[str],
    n: int,
    *,
    by_range: bool,
    batch_rows: int,
    level: int = 0,
) -> list[list[pl.DataFrame]]:
    """`source`'s rows in `n` buckets of whole groups, each bucket a list of parts of about
    `PART_ROWS` rows (a part's rows in any order, in pieces).

    Read batch by batch, each batch divided at once among the buckets' parts and then
    dropped: the input is held once, and a bucket needs no dividing again on its worker.
    """
    parts = _parts(batch_rows)
    pieces: dict[int, list[pl.DataFrame]] = {}
    batches = (
        ranges(source, batch_rows) if by_range else source.collect_batches(chunk_size=batch_rows)
    )

    def divide(batch: pl.DataFrame) -> None:
        # bucket b's parts are the keys b * parts ... (b + 1) * parts - 1
        keyed = batch.with_columns(_bucket_of(group, n * parts, level))
        for (key,), part in keyed.partition_by(_BUCKET, include_key=False, as_dict=True).items():
            pieces.setdefault(key, []).append(part)

    # each batch is divided on another thread while the next one is read
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="preval-divide") as pool:
        dividing = None
        for batch in batches:
            if dividing is not None:
                dividing.result()
            dividing = pool.submit(divide, batch)
            del batch
        if dividing is not None:
            dividing.result()
    return [
        [pl.concat(pieces[key], rechunk=False) for key in range(b * parts, (b + 1) * parts)
         if key in pieces]
        for b in range(n)
        if any(key in pieces for key in range(b * parts, (b + 1) * parts))
    ]  # fmt: skip


def group_together_in_parts(
    frame: pl.DataFrame | list[pl.DataFrame], group: list[str]
) -> pl.DataFrame:
    """`group_together` on a bucket, part by part, the parts one after the other (their groups
    differ), in one piece of memory.

    Parts of about `PART_ROWS` rows are small enough that the random reads of putting a part's
    rows in order stay in the processor's cache: the bucket is copied once, part after part,
    each part's order found on its own rows, and the rows gathered once by the orders put end
    to end (each part's rows are read from that part's range only). `frame`: a list of parts
    (an in-memory bucket); or a bucket read back from its spill file, put in order whole.
    """
    bucket, heights = _in_parts(frame)
    return _gather_by_part(bucket, heights, partial(_group_order, group=group))


def rank_together_in_parts(
    frame: pl.DataFrame | list[pl.DataFrame], rank_keys: RankKeys, group: list[str]
) -> tuple[pl.DataFrame, bool]:
    """A bucket (as `group_together_in_parts` takes it) with each group's rows together and,
    when `rank_keys` gives the bucket's ranking keys, in ranking order too: one sort per
    part does both (`_rank_order`), where grouping and then ranking takes two sorts and two
    copies of the rows. Returns the frame and whether it is ranked.

    `rank_keys`: the ranking key of the bucket's rows without their groups
    (`Plan.rank_scores`: the score's rank, then tie columns) and the tie columns' descending
    flags, or None when the plan has none (then the rows are only grouped).
    """
    bucket, heights = _in_parts(frame)
    del frame
    ranking = rank_keys(bucket)
    if ranking is None:
        return _gather_by_part(bucket, heights, partial(_group_order, group=group)), False
    keys, descending = ranking

    def order(part: pl.DataFrame, offset: int) -> pl.Series:
        return _rank_order(part, keys.slice(offset, part.height), group, descending)

    return _gather_by_part(bucket, heights, order, with_offset=True), True


def _in_parts(frame: pl.DataFrame | list[pl.DataFrame]) -> tuple[pl.DataFrame, list[int]]:
    """A bucket in one piece of memory, its parts one after the other, and the parts' heights
    (a list of parts is taken as it is; a frame, a spilled bucket read back, is one part:
    dividing it by its hash costs more than the cache saves in putting it in order)."""
    if isinstance(frame, pl.DataFrame):
        return frame.rechunk(), [frame.height]
    heights = [part.height for part in frame]
    return pl.concat(frame, rechunk=True), heights


def _gather_by_part(
    bucket: pl.DataFrame,
    heights: list[int],
    order: Callable[..., pl.Series],
    *,
    with_offset: bool = False,
) -> pl.DataFrame:
    """`bucket`'s rows gathered once by the orders of its parts (`order` of each part's
    rows, and of its offset with `with_offset`), put end to end."""
    if bucket.height == 0:
        return bucket
    orders, offset = [], 0
    for height in heights:
        part = bucket.slice(offset, height)
        orders.append((order(part, offset) if with_offset else order(part)) + offset)
        offset += height
    return bucket.select(pl.all().gather(pl.concat(orders)))


def _rank_order(
    frame: pl.DataFrame, keys: pl.DataFrame, group: list[str], descending: tuple[bool, ...]
) -> pl.Series:
    """The permutation that puts each group's rows of `frame` together and in ranking order:
    groups by their keys' 64-bit hash, then the score's rank (`keys`: `Plan.rank_scores`,
    its first column the rank, 0 .. 2**32), then the tie columns of `keys`
    (`descending` as given, nulls last), then row order, as `presort.permutation` ranks a
    grouped chunk.

    One UInt128 per row, ``hash * 2**64 + rank * 2**31 + row``, sorted by value (as fast as
    an Int64 there, and faster than an arg sort); rows whose hash and rank tie (equal 32-bit
    scores) are put in order by the tie columns on their own. Two groups with one 64-bit
    hash interleave: the chunked engine's check then raises `NotGroupedError`, never a wrong
    number (as `_group_order`).
    """
    hashed = frame.select(_hash(group)).to_series()
    ties = keys.columns[1:]
    parts = keys.select(pl.lit(hashed).alias("h"), pl.col(keys.columns[0]).alias("r"), *ties)
    if frame.height >= 2**31:  # (no bucket is this large: a budget keeps them to millions)
        return parts.select(
            pl.arg_sort_by(
                ["h", "r", *ties],
                descending=[False, False, *descending],
                nulls_last=True,
                maintain_order=True,
                multithreaded=False,
            )
        ).to_series()
    wide = pl.UInt128
    # rank * 2**31 + row fits 64 bits (rank <= 2**32): one widening, one product, one sum
    low = pl.col("r").cast(pl.UInt64) * 2**31 + pl.int_range(pl.len(), dtype=pl.UInt64)
    key = parts.select((pl.col("h").cast(wide) * pl.lit(2**64, wide) + low.cast(wide)).alias(_KEY))
    # on one thread: two buckets are ranked at once, and a part is too small to split
    key = key.to_series().sort(multithreaded=False).to_frame()
    k = pl.col(_KEY)
    # the row before has the same hash and rank: its key differs in the row's bits alone
    after = (k.xor(k.shift(1)) < pl.lit(2**31, wide)).fill_null(False)
    found = key.select(
        (k & pl.lit(2**31 - 1, wide)).cast(pl.get_index_type()).alias(_ROW),
        (after | after.shift(-1).fill_null(False)).alias("tied"),
    )
    del key
    rows = found[_ROW]
    tied = found.select(pl.col("tied").arg_true()).to_series()
    if tied.is_empty():
        return rows
    moved = rows.gather(tied)
    resorted = (
        parts[moved]
        .with_columns(moved.alias(_ROW))
        .sort(
            ["h", "r", *ties, _ROW],
            descending=[False, False, *descending, False],
            nulls_last=True,  # as `presort.permutation`
            multithreaded=False,
        )
    )
    return rows.scatter(tied, resorted[_ROW])


def group_together(
    frame: pl.DataFrame, group: list[str], *, hash_bits: int | None = None
) -> pl.DataFrame:
    """`frame` with the rows of each group (equal `group` keys) next to each other.

    Groups come in the order of their keys' hash, and the rows of a group in their input order
    (which a tie rule or a dedupe may read). See `_group_order`; `hash_bits`, for tests: fewer
    bits of the hash in the sort key, so that groups share them more often.
    """
    if frame.height == 0:
        return frame
    return frame.select(pl.all().gather(_group_order(frame, group, hash_bits)))


def _group_order(frame: pl.DataFrame, group: list[str], hash_bits: int | None = None) -> pl.Series:
    """The permutation that puts each group's rows of `frame` together, in input order.

    The sort key is the top bits of the keys' 64-bit hash above the row number, one Int64,
    sorted by value. Groups whose hashes share those bits would interleave: when any run of
    equal bits holds several hashes, the rows are sorted by the whole hash instead (stable).
    Two groups with one 64-bit hash stay apart only if their rows happen not to interleave;
    if they do, the chunked engine's check raises `NotGroupedError`: never a wrong number.
    """
    n = frame.height
    row_bits = max(n.bit_length(), 1)
    bits = 63 - row_bits if hash_bits is None else hash_bits
    full = frame.select(_hash(group).alias(_KEY)).to_series()
    prefix = (full // 2 ** (64 - bits)).cast(pl.Int64) if bits > 0 else pl.lit(0, pl.Int64)
    key = pl.select((prefix * 2**row_bits + pl.int_range(n, dtype=pl.Int64)).alias(_KEY))
    # on one thread: two buckets are grouped at once, and a part is too small to split
    key = key.to_series().sort(multithreaded=False)
    order = (key % 2**row_bits).cast(pl.get_index_type())
    runs = key // 2**row_bits
    in_order = full.gather(order)
    shared = (runs == runs.shift(1)) & (in_order != in_order.shift(1))
    if not shared.any():
        return order
    return full.to_frame().select(pl.arg_sort_by(_KEY, maintain_order=True)).to_series()


def _size(ev: Plan) -> tuple[int, int]:
    """Rows of `ev`'s source (or a bound from above, `Plan.count_rows`) and its
    estimated bytes in memory (from a sample's bytes per row)."""
    lf = ev.source.lazy()
    rows = lf.select(pl.len()).collect().item() if ev.count_rows is None else ev.count_rows()
    return rows, int(row_bytes(lf, SAMPLE_ROWS) * rows)


def check_free_disk(folder: Path, needed: int, rows: int) -> None:
    free = shutil.disk_usage(folder).free
    if free < needed:
        msg = (
            f"not enough free disk for the partitioned engine's spill in {folder.parent}: "
            f"{rows:,} rows need about {needed / 2**30:.1f} GB, {free / 2**30:.1f} GB are free "
            "(set --tmp-dir or TMPDIR to a larger disk, or raise --memory-limit)"
        )
        raise InputError(msg)


def spill_compression(folder: Path, size: int) -> str:
    """The compression of spill files in `folder` for rows of `size` bytes in memory:
    ``"uncompressed"`` when the disk has `UNCOMPRESSED_ROOM` times that free, else ``"lz4"``."""
    roomy = shutil.disk_usage(folder).free >= UNCOMPRESSED_ROOM * size
    return "uncompressed" if roomy else "lz4"


def scatter(
    source: pl.LazyFrame, group: list[str], buckets: int, folder: Path, compression: str = "lz4"
) -> None:
    """Write `source`'s rows into `buckets` folders of Arrow IPC files by the hash of `group`
    (`compression`: ``"lz4"`` or ``"uncompressed"``, `spill_compression`)."""
    try:
        # each bucket's writer holds one record batch: small ones keep the sink's memory
        # (`budget.scatter_bytes`) nearly that of its reader, whatever the buckets
        source.lazy().sink_ipc(
            pl.PartitionBy(folder, key=_bucket_of(group, buckets), include_key=False),
            compression=compression,
            record_batch_size=SCATTER_BATCH_ROWS,
        )
    except (pl.exceptions.ComputeError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "space" in first.lower():
            msg = f"spilling to {folder.parent} failed: {first} (set --tmp-dir or TMPDIR)"
            raise InputError(msg) from exc
        raise


def spilled_buckets(
    folder: Path,
    group: list[str],
    chunk_rows: int,
    *,
    rows_of: Callable[[Path], int] | None = None,
) -> Iterator:
    """Each bucket's rows, read back (in any order); a bucket of more than `chunk_rows` rows
    read batch by batch and divided in memory into `_pieces` buckets of about that size.

    A bucket's files are removed once the next bucket is asked for (its pieces all taken,
    and `_spilled_judgments` done with its row count): the removal of the spill is spread
    over the evaluation, and files removed before the system wrote them out are never
    written to disk. `rows_of`: a bucket's rows (default `_bucket_rows`)."""
    rows_of = rows_of or _bucket_rows
    for bucket in sorted(folder.glob(f"{_BUCKET}=*")):
        rows = pl.scan_ipc(sorted(bucket.glob("*.ipc")))
        n = _pieces(rows_of(bucket), chunk_rows)
        if n <= 1:
            yield rows.collect()
        else:
            divided = _in_memory_buckets(rows, group, n, by_range=False, batch_rows=chunk_rows,
                                         level=2)  # fmt: skip
            yield from _drain(divided)
        remove_tree(bucket)


def _bucket_rows(bucket: Path) -> int:
    """The rows spilled into the folder `bucket` (from the files' metadata)."""
    files = sorted(bucket.glob("*.ipc"))
    return pl.scan_ipc(files).select(pl.len()).collect().item() if files else 0


def _pieces(rows: int, chunk_rows: int) -> int:
    """The pieces a spilled bucket of `rows` rows is divided into when read back."""
    return max(1, math.ceil(rows / chunk_rows))
