"""The memory model: how the engines turn ``memory_limit`` (resident memory, bytes) and an
address-space limit set by someone else (``ulimit -v``, RLIMIT_AS) into chunk sizes and worker
counts, and refuse in one line, before any work, what cannot be done within them.

Peak resident memory of a chunked evaluation is modelled as::

    peak ≈ BASE_RSS + judgments + row_bytes × chunk_rows × (EVAL_COPIES × workers + read_ahead)

where `row_bytes` is the input's bytes per row in memory (from a sample), a chunk being
evaluated holds `EVAL_COPIES` times its rows' bytes (the chunk, its ranked copy, the plan's
columns) and one read ahead holds itself. The partitioned engine's buckets are chunks of the
same model (its in-memory path also holds the whole input once). Under an address-space limit
the budget is what the limit leaves after `BASE_ADDRESS` (shared libraries, thread stacks, the
allocators' arenas), divided by `ADDRESS_PER_BYTE` (the allocator maps more than it fills).
The constants are measured (benchmarks/results.md, "memory limit") with some margin.

Spilling (the partitioned engine's input, and a fusion, too large for memory) is a second
phase with its own peak, the scatter: one streaming pass of Polars' ``sink_ipc`` into B bucket
files (`spill_buckets`), modelled as::

    scatter ≈ BASE_RSS + held + row_bytes × (SCATTER_READ_GROUPS × read_rows
                                              + SCATTER_COPIES × SCATTER_BATCH_ROWS × B)

The reader decodes whole row groups of a Parquet file (`read_rows`, the largest of them) and
holds several at once; each bucket's writer holds a record batch of `SCATTER_BATCH_ROWS` rows
(the batch size the sink is given: with Polars' default batch a bucket held about 6 MB at 32
bytes a row, 917 MB in all at 64 buckets and 100M rows). Measured with
``benchmarks/memory_limit.py --scatter`` (results.md, "2026-11-26 (evening)"), peak RSS of the
scatter alone: at 24 bytes a row in row groups of 123k rows, 225 / 271 / 325 / 382 MB for
1 / 64 / 128 / 256 buckets (0.6 MB a bucket: 1.6 x 16,384 x 24 bytes); in row groups of 1M
rows at 32 bytes a row, 421 MB for 8 buckets (10M rows) and 472-517 MB for 1-64 buckets (100M
rows), about six decoded row groups above the 10M floor; and up to 655 MB within a whole run
(36-50 buckets, the sample and row count read first; 680MB was kept with 10 row groups in the
model). With `BASE_RSS` the constants below give 740 MB for that run.
Then each bucket is read back whole, divided into chunks and evaluated: B is the fewest
buckets for which a bucket takes at most `BUCKET_SHARE` of the budget (the rest for its
evaluation) and at most `BUCKET_BYTES`, and the scatter of that many must fit; else one line
says the limit the input needs (`spill_buckets`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from ..errors import InputError

MiB = 2**20
# resident memory of the command beside its chunks: the interpreter, Polars, its thread pool,
# the reader's buffers and the allocator's freed pages (measured floor about 300 MB)
BASE_RSS = 320 * MiB
# more for an input read as a stream of text (CSV, TREC): the reader's buffers and the pass
# that checks each line's fields
TEXT_RSS = 128 * MiB
# resident bytes per byte of separate qrels held in memory (the table and its division)
QRELS_COPIES = 3
# a qrels row in memory takes at least its label (its ids as many bytes as they hold, as
# Polars' estimated_size counts them): a Parquet file's rows times this bound its size from
# below before it is read
QRELS_ROW_BYTES = 8
# and a plain text qrels file (TREC, CSV) at least this share of its bytes: ids take no less
# in memory than in the file, each row's numbers and views more than its separators (a file
# of comment lines would take nothing: hence half)
QRELS_TEXT_SHARE = 0.5
# address space reserved before any data: shared libraries, thread stacks, malloc arenas
# (two, `preval._allocator`), Polars' allocator
BASE_ADDRESS = 1024 * MiB
# address space per byte of resident data at peak (mapped, not all of it touched)
ADDRESS_PER_BYTE = 2.5
# a chunk being evaluated holds this many times its rows' bytes
EVAL_COPIES = 6
# and a chunk joined with separate qrels more: its labels and its queries' judgment
# statistics, the join's tables (measured with TREC runs in join order: results.md, "TREC
# qrels too large to hold")
EVAL_COPIES_QRELS = 16
# the fewest rows per chunk worth running: below, the per-chunk overhead dominates and the
# limit is refused rather than crawled through
MIN_CHUNK_ROWS = 20_000
# rows read to estimate the input's bytes per row
SAMPLE_ROWS = 50_000
# address space per byte of a text input (CSV, TREC) read under an address-space limit: Polars'
# streaming readers (the batches, the pass that checks each line's fields) map it beside the
# chunks whatever their size (a 10M-row CSV of 251 MiB peaked at 2.16 GiB of address space)
TEXT_ADDRESS_PER_BYTE = 6
# the least address space (RLIMIT_AS) any evaluation runs in: `BASE_ADDRESS` and a little data
MIN_ADDRESS_SPACE = 1536 * MiB
# rows of each record batch a spilling sink writes (`scatter`): the buffer each bucket holds
SCATTER_BATCH_ROWS = 16_384
# a bucket's writer holds this many times its batch's bytes (measured 1.6)
SCATTER_COPIES = 3
# decoded row groups the Parquet reader holds while it streams into the sink, with margin
# (measured in benchmarks/results.md, "the scatter in the memory model")
SCATTER_READ_GROUPS = 12
# rows the reader decodes at once when the row groups are not known (not a Parquet file):
# Parquet's usual row group (pyarrow, Spark's 128 MB)
READ_ROWS = 1_048_576
# a spilled bucket takes at most this share of the data budget (the rest: its evaluation) ...
BUCKET_SHARE = 0.25
# ... and at most this many bytes in memory, however large the budget (more buckets cost the
# scatter little, a larger bucket costs its evaluation more)
BUCKET_BYTES = 64 * MiB
# the most buckets the sink writes at once (files open, and their batches)
MAX_BUCKETS = 256


@dataclasses.dataclass(frozen=True)
class Shape:
    """How a chunked evaluation runs: rows per chunk, chunks evaluated at once, read ahead."""

    chunk_rows: int
    workers: int
    read_ahead: int


def address_space_limit() -> int | None:
    """The process's address-space limit (``ulimit -v``, RLIMIT_AS) in bytes, None without."""
    try:
        import resource
    except ImportError:  # (Windows) no such limit
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def row_bytes(source: pl.LazyFrame, rows: int = SAMPLE_ROWS) -> float:
    """The input's bytes per row in memory, from its first `rows` rows."""
    return sampled(source, rows)[0]


def sampled(source: pl.LazyFrame, rows: int = SAMPLE_ROWS) -> tuple[float, int | None]:
    """The input's bytes per row in memory, from its first `rows` rows; and its rows when the
    sample is the whole input (fewer rows than asked for), else None."""
    sample = source.lazy().head(rows).collect()
    whole = sample.height if sample.height < rows else None
    return sample.estimated_size() / max(sample.height, 1), whole


def base(text: bool) -> int:
    """Resident bytes beside the data (`BASE_RSS`, and `TEXT_RSS` for a text input)."""
    return BASE_RSS + (TEXT_RSS if text else 0)


def data_budget(
    memory_limit: int | None, address_space: int | None, *, text: bool = False
) -> int | None:
    """Bytes the engines may spend on data: `memory_limit` less `base`, and what an
    address-space limit leaves (`BASE_ADDRESS`, `ADDRESS_PER_BYTE`, then `base`); None
    without either limit. `text`: the input is read as text (CSV, TREC)."""
    limits = [m for m in (memory_limit, _resident(address_space)) if m is not None]
    return min(limits) - base(text) if limits else None


def _resident(address_space: int | None) -> int | None:
    """The resident memory an address-space limit allows at peak."""
    if address_space is None:
        return None
    return int((address_space - BASE_ADDRESS) / ADDRESS_PER_BYTE) + BASE_RSS


def shape(
    budget: int | None,
    row_bytes: float,
    *,
    chunk_rows: int,
    workers: int,
    read_ahead: int,
    what: str = "this input",
    text: bool = False,
    input_rows: int | None = None,
    copies: int = EVAL_COPIES,
) -> Shape:
    """The largest chunks, up to `chunk_rows` rows and `workers` at once, whose peak fits
    `budget` bytes of data (`data_budget`); one worker and nothing read ahead when two do
    not fit chunks of `MIN_CHUNK_ROWS`. Raise `InputError` when even that does not fit.

    `input_rows`: the input's rows, or a bound from above, when known. No chunk holds more
    rows than the input has, so the least chunk is at most that: a few wide rows (an id of a
    megabyte) are not refused for the width of rows they do not have. `copies`: the bytes a
    chunk being evaluated holds per byte of its rows (`EVAL_COPIES`, or `EVAL_COPIES_QRELS`
    for a chunk joined with separate qrels)."""
    if budget is None:
        return Shape(chunk_rows, workers, read_ahead)
    row_bytes = max(row_bytes, 1.0)
    least = MIN_CHUNK_ROWS if input_rows is None else max(1, min(MIN_CHUNK_ROWS, input_rows))
    for w, ahead in ((workers, read_ahead), (1, 0)):
        rows = int(budget / (row_bytes * (copies * w + ahead)))
        if rows >= least or (w, ahead) == (1, 0):
            break
    if rows < least:
        raise too_little(budget, row_bytes * copies * least, what, text=text)
    return Shape(min(rows, chunk_rows), w, ahead)


def check_text_address_space(address_space: int | None, text_bytes: int | None) -> None:
    """Refuse in one line, before any work, a text input (CSV, TREC) of `text_bytes` that its
    readers cannot read within `address_space` (`TEXT_ADDRESS_PER_BYTE`)."""
    if address_space is None or not text_bytes:
        return
    needed = BASE_ADDRESS + TEXT_ADDRESS_PER_BYTE * text_bytes
    if needed > address_space:
        msg = (
            f"reading {_mb(text_bytes)} of text input (CSV, TREC) needs about "
            f"{needed / 2**30:.1f} GiB of address space, and the limit (ulimit -v) is "
            f"{address_space / 2**30:.2f} GiB: raise it, or give the input as Parquet, which "
            "is read range by range; nothing was written"
        )
        raise InputError(msg)


def qrels_floor(qrels: object) -> int:
    """Bytes that separate `qrels` take in memory at least, known before they are read: a
    frame's size; a Parquet file's rows (its footer) times `QRELS_ROW_BYTES`; a plain text
    file's bytes times `QRELS_TEXT_SHARE`; 0 when unknown (a lazy plan, a compressed file).
    The chunked and partitioned engines hold the qrels whole: an engine refuses, before
    reading them, qrels whose `QRELS_COPIES` times this exceed its budget."""
    if isinstance(qrels, pl.DataFrame):
        return int(qrels.estimated_size())
    if not isinstance(qrels, (str, Path)) or not Path(qrels).is_file():
        return 0
    path = Path(qrels)
    if path.suffix.lower() in (".parquet", ".pq"):
        return QRELS_ROW_BYTES * pl.scan_parquet(path).select(pl.len()).collect().item()
    with path.open("rb") as fh:
        head = fh.read(4)
    compressed = head[:2] == b"\x1f\x8b" or head == b"\x28\xb5\x2f\xfd" or head[:3] in (
        b"BZh", b"\xfd7z",
    )  # fmt: skip
    return 0 if compressed else int(QRELS_TEXT_SHARE * path.stat().st_size)


class OverLimit(InputError):
    """A memory limit that cannot be kept (`too_little`): raised before any work is done."""


def too_little(budget: int, needed: float, what: str, *, text: bool = False) -> OverLimit:
    """The one line that says a limit cannot be kept, and what it would take."""
    floor = base(text)
    msg = (
        f"{what} cannot be evaluated within the memory limit of {_mb(budget + floor)} "
        f"(--memory-limit, or what ulimit -v leaves after the {_mb(BASE_ADDRESS)} of address "
        f"space Polars reserves): it needs at least {_mb(max(needed, 1) + floor)}; nothing "
        "was written, raise the limit"
    )
    return OverLimit(msg)


def _mb(size: float) -> str:
    return f"{size / 2**30:.1f} GB" if size >= 2**30 else f"{size / MiB:.0f} MB"


def read_rows(paths: Sequence[str | Path] = ()) -> int:
    """The rows a reader decodes at once from `paths`: the largest row group of the Parquet
    files among them (their footers only), else `READ_ROWS`."""
    return _row_group_rows(paths)


def _row_group_rows(paths: Sequence[str | Path]) -> int:
    files = [Path(p) for p in paths if Path(p).suffix.lower() in (".parquet", ".pq")]
    files = [f for f in files if f.is_file()]
    if not files:
        return READ_ROWS
    import pyarrow.parquet as pq

    most = 0
    for f in files:
        try:
            meta = pq.ParquetFile(f).metadata
        except (OSError, ValueError):  # (the reader says what is wrong, with the file)
            return READ_ROWS
        most = max([most, *(meta.row_group(i).num_rows for i in range(meta.num_row_groups))])
    return most or READ_ROWS


def scatter_bytes(buckets: int, row_bytes: float, read_rows: int, size: float) -> float:
    """Resident bytes of data while `size` bytes of rows are written into `buckets` bucket
    files (module docstring; no term above the input's own bytes)."""
    rows = size / max(row_bytes, 1.0)
    reading = min(SCATTER_READ_GROUPS * read_rows, rows)
    writing = SCATTER_COPIES * min(SCATTER_BATCH_ROWS * buckets, rows)
    return row_bytes * (reading + writing)


def fewest_buckets(
    budget: float, size: float, held: float = 0, *, most: float | None = None
) -> int:
    """The fewest buckets of `size` bytes in all for which a bucket takes at most
    `BUCKET_SHARE` of what `budget` leaves after `held`, and at most `most` bytes."""
    share = BUCKET_SHARE * (budget - held)
    if most is not None:
        share = min(share, most)
    return max(1, math.ceil(size / share)) if share > 0 else MAX_BUCKETS + 1


def spill_buckets(
    budget: int,
    size: float,
    row_bytes: float,
    *,
    held: float = 0,
    read_rows: int = READ_ROWS,
    what: str = "this input",
    text: bool = False,
) -> int:
    """How many buckets to spill `size` bytes (in memory) of rows into, within `budget` bytes
    of data of which `held` are taken throughout (separate qrels).

    A bucket takes at most `BUCKET_SHARE` of the budget (its evaluation, the rest), so that
    many buckets at least; as many as buckets of `BUCKET_BYTES` (or 1/`MAX_BUCKETS` of the
    input) when their scatter fits (`scatter_bytes`), else the most that fits. Raise
    `InputError`, the one line of `too_little` with the limit it would take, when even the
    fewest do not fit."""

    def least(b: float) -> int:
        return fewest_buckets(b, size, held)

    def fits(b: float) -> bool:
        n = least(b)
        return n <= MAX_BUCKETS and held + scatter_bytes(n, row_bytes, read_rows, size) <= b

    if fits(budget):
        wanted = fewest_buckets(budget, size, held, most=max(BUCKET_BYTES, size / MAX_BUCKETS))
        n = max(wanted, least(budget))
        while n > least(budget) and held + scatter_bytes(n, row_bytes, read_rows, size) > budget:
            n -= 1
        return n
    low, high = budget, max(budget, 1) * 2
    while not fits(high):
        low, high = high, high * 2
    while high - low > MiB:  # the least budget that fits, to the megabyte
        middle = (low + high) / 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    raise too_little(budget, high, what, text=text)
