"""Writing a fusion: a TREC run (``query Q0 doc rank score tag``) or a table (Parquet, CSV, TSV),
always to a temporary file beside the target renamed into place (no partial file on an error or
a signal), and fusing out of core when the runs do not fit the memory budget.

Out of core, the partitioned engine's spiller does the work (`preval.engines.partitioned`):
the stacked rows of every run are scattered by a hash of the query into bucket files (one
streaming pass, whole queries per bucket), then each bucket is read back (divided again when it
is large), fused on its own (a fusion is per query), and its fused rows spilled sorted by query;
the fused buckets are then merged by query (Polars' streaming ``merge_sorted``) into the output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from .. import io, report
from ..engines import budget_within
from ..engines.budget import (
    BUCKET_SHARE,
    MIN_CHUNK_ROWS,
    SCATTER_BATCH_ROWS,
    read_rows,
    spill_buckets,
    too_little,
)
from ..engines.partitioned import (
    DEFAULT_MEMORY_LIMIT,
    SAMPLE_ROWS,
    SPILL_RATIO,
    check_free_disk,
    scatter,
    spilled_buckets,
)
from ..errors import InputError
from ..spill import SpillDirectory
from . import core
from .core import DOC, QUERY, RANK, SCORE

# (a .json name holding a TREC run would be a trap: JSON and NDJSON are tables too)
TABLES = {".parquet", ".pq", ".csv", ".tsv", ".json", ".ndjson", ".jsonl"}
# the fused plan holds several copies of its input (ranks, the runs side by side, the sort):
# in memory when the stacked rows take at most this share of the budget (RRF on the streaming
# engine holds about 9 times the stacked rows' bytes: benchmarks/results.md)
IN_MEMORY_SHARE = 12
# fused parts merged at once (fewer when the budget says so), each holding about this much
# while merged (benchmarks/results.md: a merge of every part at once outgrew the limit)
MERGE_FAN_IN = 8
MERGE_PART_BYTES = 64 * 2**20
# the most rows of a bucket fused at once out of core (fewer when the budget says so): the
# fused pieces are merged at the end, one record batch of each at a time
BUCKET_ROWS = 4_000_000


def is_table(path: str | Path) -> bool:
    """Whether `path` is written as a table (by its suffix); any other path is a TREC run."""
    return Path(path).suffix.lower() in TABLES


def check_target(path: str | Path) -> None:
    """Refuse a target before any work: its directory exists and is writable, it is no
    directory."""
    if is_table(path):
        report.check_target(path)
    else:  # (a TREC run: any suffix)
        report.check_place(path)


def write(fused: pl.LazyFrame | pl.DataFrame, path: str | Path, *, tag: str | None = None) -> None:
    """Write `fused` (query, doc, score, rank: `preval.fuse`'s columns) to `path`: a table by
    its suffix (`TABLES`), else a TREC run with `tag` as its run tag (without one: the
    ``system`` column of ``preval.fuse(..., system=NAME)``, else ``fused``). Streamed by
    Polars' sinks where the plan allows; renamed into place only when complete."""
    check_target(path)
    fused = fused.lazy()
    if is_table(path):
        with report.Outputs() as out:
            out.write(fused, path)
        return
    if tag is None and "system" in fused.collect_schema():
        run_tag = pl.col("system").cast(pl.String).alias("tag")
    else:
        run_tag = pl.lit(tag or "fused", pl.String).alias("tag")
    trec = fused.select(
        pl.col(QUERY).cast(pl.String), pl.lit("Q0"), pl.col(DOC).cast(pl.String),
        pl.col(RANK), pl.col(SCORE), run_tag,
    )  # fmt: skip
    trec = trec.map_batches(_trec_ids, schema=trec.collect_schema(), streamable=True)
    with report.Outputs() as out:  # (renamed into place when complete; a stream, copied)
        tmp = str(path)
        try:
            tmp = out.stage(path)
            trec.sink_csv(tmp, separator=" ", include_header=False, quote_style="never")
        except (pl.exceptions.PolarsError, OSError) as exc:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else "write failed"
            text = text.replace(tmp, str(path))
            msg = (
                f"cannot write {path}: {text} (nothing was written; free space or choose "
                "another path)"
            )
            raise InputError(msg) from exc


def _trec_ids(df: pl.DataFrame) -> pl.DataFrame:
    """A map_batches check: raise on an id a TREC line cannot hold (empty, or with whitespace,
    which splits the line into other fields: ``q 1 Q0 d1 ...`` reads back as query ``q``)."""
    what = {QUERY: "query id", DOC: "doc id", "tag": "run tag"}
    for col in what:
        bad = df.filter(pl.col(col).str.contains(r"\s") | (pl.col(col).str.len_bytes() == 0))
        if bad.height:
            fix = "choose another tag" if col == "tag" else "write a table (.parquet, .csv)"
            msg = (
                f"cannot write a TREC run: {what[col]} {bad[col][0]!r} is empty or holds "
                f"whitespace (rule: a TREC line is split on whitespace); {fix}"
            )
            raise InputError(msg)
    return df


def fuse_to(
    runs: io.Source | Sequence[io.Source] | Mapping[str, io.Source],
    path: str | Path,
    method: str = "rrf",
    norm: str | None = None,
    weights: Sequence[float] | None = None,
    *,
    tag: str | None = None,
    memory_limit: int | None = None,
    tmp_dir: str | Path | None = None,
    buckets: int | None = None,
    query: str = QUERY,
    doc: str = DOC,
    score: str = SCORE,
    input_format: str = "auto",
    duplicates: str = "error",
    ties: str = "input",
    **params: Any,
) -> int:
    """Fuse `runs` and write the result to `path` (`write`) within `memory_limit` bytes of
    peak resident memory (without one, 4 GB of data, the partitioned engine's default): in
    memory when the stacked runs take at most 1/`IN_MEMORY_SHARE` of what the limit leaves for
    data (`engines.budget.data_budget`), else out of core (module docstring) in the buckets of
    the engines' memory model (`engines.budget.spill_buckets`), refused in one line before any
    work when that cannot fit; `buckets` forces the spilled path with that many buckets.
    Returns the fused rows written."""
    weights, params = core.ranx_params(weights, params)
    m = core.get_method(method)
    core.get_norm(norm, m)
    core.resolve_params(m, params)
    core.check_ties(ties)
    check_target(path)
    # an output on a run's path would replace the run being fused
    given = list(runs.values()) if isinstance(runs, Mapping) else runs
    given = [given] if isinstance(given, (str, Path)) else given
    named = (
        [r for r in given if isinstance(r, (str, Path))] if isinstance(given, (list, tuple)) else []
    )
    report.check_distinct({"output": path}, named)
    # the limits, before any run is read: the engines' floor (the process beside its data)
    paths = [p for _, p in core._named(runs) if isinstance(p, (str, Path))]
    text = any(not _by_range(p) for p in paths)
    budget, _ = budget_within(memory_limit, "these runs", text=text)
    stacked = core.stack(
        runs, query=query, doc=doc, score=score, input_format=input_format,
        duplicates=duplicates, ties=ties,
    )  # fmt: skip
    tag = tag or m.name
    limit = DEFAULT_MEMORY_LIMIT if budget is None else budget
    raw = stacked.raw
    rows, size = _size(raw, stacked.line_count, paths if len(paths) == stacked.runs else [])
    per_row = size / max(rows, 1)
    n_runs = stacked.runs

    def fused_of(frame: pl.LazyFrame) -> pl.LazyFrame:
        ranked = core.rank_rows(frame, stacked.ties)
        return core.apply(
            ranked, method, norm=norm, weights=weights, runs=n_runs, params=params,
            labels=core.run_labels(stacked),
        )  # fmt: skip

    if buckets is None and size * IN_MEMORY_SHARE <= limit:
        # the streaming engine: about half the CPU time of the in-memory one here
        fused = fused_of(raw).collect(engine="streaming")
        write(_named(fused, stacked.columns), path, tag=tag)
        return fused.height
    what = f"these runs ({rows:,} rows, fused out of core)"
    if buckets is None:
        # the stacked runs are read side by side: each run's reader holds its row groups
        reading = read_rows(paths) * max(1, len(paths))
        buckets = spill_buckets(limit, size, per_row, read_rows=reading, what=what,
                                text=text)  # fmt: skip
    # a bucket is held whole (at most `BUCKET_SHARE` of the budget) while its pieces are fused
    # one by one, each in `IN_MEMORY_SHARE` times its bytes
    piece_rows = int((1 - BUCKET_SHARE) * limit / (IN_MEMORY_SHARE * max(per_row, 1.0)))
    if piece_rows < MIN_CHUNK_ROWS:
        needed = IN_MEMORY_SHARE * per_row * MIN_CHUNK_ROWS / (1 - BUCKET_SHARE)
        raise too_little(limit, needed, what, text=text)
    piece_rows = min(piece_rows, BUCKET_ROWS)
    spill = SpillDirectory(prefix="preval-fuse-", dir=tmp_dir)
    try:
        check_free_disk(spill.path, int(size * SPILL_RATIO), rows)
        scattered = spill.path / "buckets"
        scattered.mkdir()
        scatter(raw, [QUERY], buckets, scattered)
        parts = []
        for i, piece in enumerate(spilled_buckets(scattered, [QUERY], piece_rows)):
            if isinstance(piece, list):  # a part of a large bucket, divided when read
                piece = pl.concat(piece, rechunk=False)
            part = spill.path / f"fused-{i:05d}.ipc"
            fused = fused_of(piece.lazy()).collect(engine="streaming")
            del piece
            # small record batches: the merge holds one batch of every part at once
            fused.write_ipc(part, compression="lz4", record_batch_size=SCATTER_BATCH_ROWS)
            del fused
            parts.append(part)
        # merged a few parts at a time into files first: a streaming merge holds a buffer of
        # each of its inputs, and a hundred inputs outgrow any limit
        fan_in = max(2, min(MERGE_FAN_IN, int(BUCKET_SHARE * limit / MERGE_PART_BYTES)))
        level = 0
        while len(parts) > fan_in:
            level += 1
            merged_parts = []
            for j in range(0, len(parts), fan_in):
                group = parts[j : j + fan_in]
                out = spill.path / f"merged-{level}-{j:05d}.ipc"
                _merge([pl.scan_ipc(p) for p in group], stacked).sink_ipc(
                    out, compression="lz4", record_batch_size=SCATTER_BATCH_ROWS
                )
                for done in group:
                    done.unlink()
                merged_parts.append(out)
            parts = merged_parts
        merged = _merge([pl.scan_ipc(p) for p in parts], stacked)
        write(_named(merged, stacked.columns), path, tag=tag)
        return sum(pl.scan_ipc(p).select(pl.len()).collect().item() for p in parts)
    finally:
        spill.cleanup()


def _named(fused: pl.LazyFrame | pl.DataFrame, columns: tuple[str, str, str]) -> pl.LazyFrame:
    """`fused` under the caller's column names, for a table (a TREC run has its own)."""
    return core.present(fused.lazy(), columns)


def _merge(parts: list[pl.LazyFrame], stacked: core.Stacked) -> pl.LazyFrame:
    """The fused buckets (each sorted by query, its queries in no other) merged by query, in a
    tree of streaming merges."""
    if not parts:
        schema = stacked.frame.collect_schema()
        return pl.LazyFrame(
            schema={QUERY: schema[QUERY], DOC: schema[DOC], SCORE: pl.Float64, RANK: pl.UInt32}
        )
    while len(parts) > 1:
        parts = [
            parts[i].merge_sorted(parts[i + 1], key=QUERY) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)
        ]
    return parts[0]


def _by_range(path: str | Path) -> bool:
    """Whether a run file is read range by range (Parquet, Arrow IPC), not as text."""
    return Path(path).suffix.lower() in (".parquet", ".pq", ".ipc", ".arrow", ".feather")


def _size(raw: pl.LazyFrame, line_count: int | None, paths: list[str | Path]) -> tuple[int, int]:
    """Rows of the stacked runs (a TREC run's lines bound them from above, Parquet footers
    count them; counting the stacked plan itself reads every row) and their estimated bytes
    in memory, from a sample's bytes per row. `paths`: every run's file, or none."""
    if line_count is not None:
        rows = line_count
    elif paths and all(Path(p).suffix.lower() in (".parquet", ".pq") for p in paths):
        rows = sum(pl.scan_parquet(p).select(pl.len()).collect().item() for p in paths)
    else:
        rows = raw.select(pl.len()).collect().item()
    sample = raw.head(SAMPLE_ROWS).collect()
    per_row = sample.estimated_size() / max(sample.height, 1)
    return rows, int(per_row * rows)
