"""Engines: how an evaluation plan is executed. One entry, `collect`; one module per engine.

All give identical results; they differ in speed and memory by the shape of the input:

* ``in-memory`` and ``streaming``: Polars' own engines on the whole plan (small inputs);
* ``chunked``: rows grouped by (by..., query), read in chunks of whole queries, memory bounded
  by the chunk (`chunked`);
* ``partitioned``: rows in any order, brought together by a hash of the query, read whole or
  spilled into buckets by a memory budget (`partitioned`);
* ``auto``: chosen before any work from cheap facts: the input's size, and whether the first
  rows are grouped by query (`choose`).

The plan (`preval.evaluate`) knows nothing of engines; engines read the plan's source and
options and rebuild it per chunk.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import polars as pl

from .. import io
from ..errors import InputError, PrevalError
from ..planner import Plan
from ..ranking import run_starts
from .checks import NotGroupedError
from .chunked import collect_chunked
from .partitioned import DEFAULT_MEMORY_LIMIT, collect_partitioned

ENGINES = ("in-memory", "streaming", "chunked", "partitioned")
CHOICES = ("auto", *ENGINES)

# the least address space (RLIMIT_AS) an evaluation runs in: Polars, its allocator and its
# threads reserve about this much on 2 cores before the data (benchmarks/results.md)
MIN_ADDRESS_SPACE = 2 * 2**30
# auto: inputs up to this many bytes run in memory, as one plan
SMALL_BYTES = 2**20
# auto: the same for a frame or a Parquet file given without its size, in rows
SMALL_ROWS = 20_000
# auto: a run with separate qrels up to this many bytes (run + qrels) runs as one streaming
# plan, which joins the judgments as fast as chunks do at that size
SMALL_QRELS_BYTES = 2**28
# auto: rows of the group columns read to tell whether the input is grouped by query
SAMPLE_ROWS = 200_000

__all__ = [
    "CHOICES",
    "DEFAULT_MEMORY_LIMIT",
    "ENGINES",
    "NotGroupedError",
    "choose",
    "collect",
    "looks_grouped",
]


def collect(
    plan: Plan,
    engine: str = "auto",
    *,
    progress: Callable[[int], None] | None = None,
    memory_limit: int | None = None,
    tmp_dir: str | Path | None = None,
    input_bytes: int | None = None,
) -> Plan:
    """`plan` with its per-query status computed by `engine` (one of `CHOICES`).

    `progress` is called with the rows read so far (chunked and partitioned engines);
    `memory_limit` (bytes) bounds what the partitioned engine reads at once; `tmp_dir` is where
    spill files go (default ``TMPDIR``); `input_bytes`, the size of the input files, lets
    ``auto`` choose without looking at the data when the input is small.
    """
    if engine not in CHOICES:
        msg = f"engine must be one of {', '.join(CHOICES)}, got {engine!r}"
        raise InputError(msg)
    if tmp_dir is not None and not Path(tmp_dir).is_dir():
        msg = f"tmp_dir {tmp_dir}: no such directory (rule: spill files go to an existing one)"
        raise InputError(msg)
    if memory_limit is not None and memory_limit <= 0:
        msg = f"memory_limit must be a positive number of bytes, got {memory_limit!r}"
        raise InputError(msg)
    space = address_space()
    if space is not None and memory_limit is None:
        # what Polars reserves beyond its data is not the partitioned engine's to spend
        memory_limit = min(DEFAULT_MEMORY_LIMIT, max(2**28, space - MIN_ADDRESS_SPACE))
    try:
        return _collect(plan, engine, progress, memory_limit, tmp_dir, input_bytes)
    except PrevalError as exc:
        # a data rule found mid-run says "input: ..." or "qrels: ...": which file, it can say
        for role, path in plan.sources:
            text = str(exc)
            if text.startswith(f"{role}: "):
                exc.args = (f"{role} {path}: {text[len(role) + 2 :]}",)
        raise
    except pl.exceptions.PolarsError as exc:
        # a malformed CSV is found by the reader mid-run, with no file name: said as the CLI
        # says it, with the file and line
        explained = io.explain(exc, list(plan.paths))
        if explained is None:
            raise
        raise explained from exc


def address_space() -> int | None:
    """The process's address-space limit (``ulimit -v``, RLIMIT_AS) in bytes, None without
    one; raise `InputError` before any work when it is below `MIN_ADDRESS_SPACE`.

    Polars reserves far more address space than it fills (allocator arenas, thread stacks,
    mapped files): under a tight limit an allocation fails inside Polars, which aborts the
    process or leaves its threads waiting, whatever the size of the input. Refusing up front
    is one clear line instead.
    """
    try:
        import resource
    except ImportError:  # (Windows) no such limit
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    if soft < MIN_ADDRESS_SPACE:
        msg = (
            f"the address-space limit (ulimit -v) is {soft / 2**30:.2f} GiB, below the "
            f"{MIN_ADDRESS_SPACE / 2**30:.0f} GiB preval needs to run (Polars reserves address "
            "space beyond the memory it uses); raise it, or bound resident memory instead "
            "(--memory-limit, a cgroup or container memory limit)"
        )
        raise InputError(msg)
    return soft


def _collect(
    plan: Plan,
    engine: str,
    progress: Callable[[int], None] | None,
    memory_limit: int | None,
    tmp_dir: str | Path | None,
    input_bytes: int | None,
) -> Plan:
    chosen = choose(plan, input_bytes) if engine == "auto" else engine
    if chosen in ("in-memory", "streaming"):
        return dataclasses.replace(plan, status=plan.status.collect(engine=chosen).lazy())
    partitioned = {"progress": progress, "memory_limit": memory_limit, "tmp_dir": tmp_dir}
    if chosen == "partitioned":
        return collect_partitioned(plan, **partitioned)
    try:
        return collect_chunked(plan, progress=progress, tmp_dir=tmp_dir)
    except NotGroupedError:
        if engine != "auto":
            raise
        # the first rows were grouped, later ones are not (shards appended to one another)
        return collect_partitioned(plan, **partitioned)


def choose(plan: Plan, input_bytes: int | None = None) -> str:
    """The engine ``auto`` runs, from the input's size and its first rows.

    Small inputs (at most `SMALL_BYTES` of files, or a run with qrels up to
    `SMALL_QRELS_BYTES`) run as one plan, and so does a run joined with its qrels into one
    table (`Plan.joined_qrels`); larger ones go to the chunked engine when their first
    `SAMPLE_ROWS` rows are grouped by (by..., query), else to the partitioned engine.
    """
    if plan.source is None:
        return "in-memory"
    if input_bytes is None and plan.source_by_range:  # a frame or Parquet: rows are cheap to count
        small = plan.source.select(pl.len()).collect().item() <= SMALL_ROWS
    else:
        small = input_bytes is not None and input_bytes <= SMALL_BYTES
    if small:
        return "in-memory"
    if plan.joined_qrels:  # reading the join piece by piece would run it again for each piece
        return "streaming"
    if (
        plan.recipe is not None
        and plan.recipe.qrels is not None
        and input_bytes is not None
        and input_bytes <= SMALL_QRELS_BYTES
    ):
        return "streaming"
    grouped = looks_grouped(plan.source, plan.group, SAMPLE_ROWS)
    return "chunked" if grouped else "partitioned"


def looks_grouped(source: pl.LazyFrame, group: list[str], rows: int = SAMPLE_ROWS) -> bool:
    """Whether the first `rows` rows of `source` hold each group's rows together: as many runs
    of equal `group` keys as distinct groups. Reads only those rows of those columns."""
    head = source.select(group).head(rows).collect()
    if head.height == 0:
        return True
    runs = head.select(run_starts(group).sum()).item()
    distinct = head.select(pl.struct(group).n_unique()).item()
    return runs == distinct
