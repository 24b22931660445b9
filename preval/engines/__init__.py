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
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from .. import io, validate
from ..errors import InputError, PrevalError
from ..planner import Plan
from ..ranking import run_starts
from .budget import (
    MIN_ADDRESS_SPACE,
    QRELS_COPIES,
    address_space_limit,
    check_text_address_space,
    data_budget,
    row_bytes,
    too_little,
)
from .checks import NotGroupedError

if TYPE_CHECKING:  # loaded on first use (`_OUT_OF_CORE`)
    from .chunked import collect_chunked as collect_chunked
    from .partitioned import DEFAULT_MEMORY_LIMIT
    from .partitioned import collect_partitioned as collect_partitioned

ENGINES = ("in-memory", "streaming", "chunked", "partitioned")
CHOICES = ("auto", *ENGINES)

# auto: inputs up to this many bytes run in memory, as one plan
SMALL_BYTES = 2**20
# auto: the same for a frame or a Parquet file given without its size, in rows
SMALL_ROWS = 20_000
# auto: a run with separate qrels up to this many bytes (run + qrels) runs as one streaming
# plan, which joins the judgments as fast as chunks do at that size
SMALL_QRELS_BYTES = 2**28
# auto: rows of the group columns read to tell whether the input is grouped by query
SAMPLE_ROWS = 200_000
# in-memory and streaming engines: resident bytes per byte of input at peak (its sort, the
# plan's columns), for the memory limit
WHOLE_COPIES = 4

# the out-of-core engines load when an input needs one (`_collect`, `__getattr__`): a small
# input runs in memory without their modules (name -> module)
_OUT_OF_CORE = {
    "collect_chunked": "chunked",
    "collect_partitioned": "partitioned",
    "DEFAULT_MEMORY_LIMIT": "partitioned",
}


def __getattr__(name: str) -> Any:
    if name in _OUT_OF_CORE:
        value = getattr(importlib.import_module(f".{_OUT_OF_CORE[name]}", __name__), name)
        globals()[name] = value  # (found directly from now on, and replaceable as before)
        return value
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def _out_of_core(name: str) -> Any:
    """`name` of `_OUT_OF_CORE`, loaded on first use."""
    return globals()[name] if name in globals() else __getattr__(name)


__all__ = [
    "CHOICES",
    "DEFAULT_MEMORY_LIMIT",
    "ENGINES",
    "MIN_ADDRESS_SPACE",
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
    `memory_limit` (bytes) bounds the process's peak resident memory: the engines choose
    their chunk sizes and workers to stay under it (`budget`), and an input that cannot be
    evaluated within it is refused in one line before any work; `tmp_dir` is where
    spill files go (default ``TMPDIR``); `input_bytes`, the size of the input files, lets
    ``auto`` choose without looking at the data when the input is small.
    """
    if engine not in CHOICES:
        msg = f"engine must be one of {', '.join(CHOICES)}, got {engine!r}"
        raise InputError(msg)
    if tmp_dir is not None and not Path(tmp_dir).is_dir():
        msg = f"tmp_dir {tmp_dir}: no such directory (rule: spill files go to an existing one)"
        raise InputError(msg)
    # bytes the engines may spend on data, from the user's limit and an address-space limit
    text = plan.source is not None and not plan.source_by_range
    budget, space = budget_within(memory_limit, "this input", text=text, input_bytes=input_bytes)
    if space is not None and engine == "streaming":
        msg = (
            "engine 'streaming' maps address space far beyond its data (gigabytes for a "
            f"run of megabytes), more than the address-space limit (ulimit -v) of "
            f"{space / 2**30:.2f} GiB can be trusted to hold: use --engine auto, chunked or "
            "partitioned, which size their work to the limit"
        )
        raise InputError(msg)
    try:
        return _collect(plan, engine, progress, budget, tmp_dir, input_bytes, space is not None)
    except PrevalError as exc:
        # a data rule's checker names the file (`Recipe.sources`); a rule checked elsewhere
        # in the plan may say only "input: ..." or "qrels: ...": which file, it can say
        text = str(exc)
        shown = validate.named(text, plan.recipe.sources if plan.recipe else ())
        if shown != text:
            exc.args = (shown,)
        raise
    except (pl.exceptions.PolarsError, OSError) as exc:
        # a malformed CSV (or a compressed file cut short) is found by the reader mid-run, with
        # no file name: said as the CLI says it, with the file and line
        roles = {str(p): role for role, p in (plan.recipe.sources if plan.recipe else ())}
        explained = io.explain(exc, [(roles.get(str(p), "input"), p) for p in plan.paths])
        if explained is None:
            raise
        raise explained from exc


def budget_within(
    memory_limit: int | None, what: str, *, text: bool, input_bytes: int | None = None
) -> tuple[int | None, int | None]:
    """The bytes of data that `memory_limit` and an address-space limit leave
    (`budget.data_budget`), and the address-space limit (`address_space`); refused in one line
    before any work: a limit that is no positive number, an address-space limit below
    `MIN_ADDRESS_SPACE`, text input of `input_bytes` that its readers cannot map
    (`check_text_address_space`), a memory limit below what the process holds beside its data
    (`budget.base`). `what` names the input ("this input", "these runs"); `text`: it is read
    as text (CSV, TREC). Every command that takes ``--memory-limit`` starts here."""
    if memory_limit is not None and memory_limit <= 0:
        msg = f"memory_limit must be a positive number of bytes, got {memory_limit!r}"
        raise InputError(msg)
    space = address_space()
    check_text_address_space(space, input_bytes if text else None)
    budget = data_budget(memory_limit, space, text=text)
    if budget is not None and budget <= 0:
        raise too_little(budget, 0, what, text=text)
    return budget, space


def address_space() -> int | None:
    """The process's address-space limit (``ulimit -v``, RLIMIT_AS) in bytes, None without
    one; raise `InputError` before any work when it is below `MIN_ADDRESS_SPACE`.

    Polars reserves far more address space than it fills (allocator arenas, thread stacks,
    mapped files): under a tight limit an allocation fails inside Polars, which aborts the
    process or leaves its threads waiting, whatever the size of the input. Refusing up front
    is one clear line instead; above the minimum, the engines size their chunks to what the
    limit leaves (`budget.data_budget`).
    """
    soft = address_space_limit()
    if soft is None:
        return None
    if soft < MIN_ADDRESS_SPACE:
        msg = (
            f"the address-space limit (ulimit -v) is {soft / 2**30:.2f} GiB, below the "
            f"{MIN_ADDRESS_SPACE / 2**30:.1f} GiB preval needs to run (Polars reserves address "
            "space beyond the memory it uses); raise it, or bound resident memory instead "
            "(--memory-limit, a cgroup or container memory limit)"
        )
        raise InputError(msg)
    return soft


def _collect(
    plan: Plan,
    engine: str,
    progress: Callable[[int], None] | None,
    budget: int | None,
    tmp_dir: str | Path | None,
    input_bytes: int | None,
    address_limited: bool = False,
) -> Plan:
    chosen = choose(plan, input_bytes, budget) if engine == "auto" else engine
    if chosen == "chunked" and plan.joined_qrels:
        # the run's rows come in its order, then each query's judged documents it did not
        # retrieve: never grouped by query, whatever the run's own order
        from ..measures import parse, reads_judged_rows

        whole = [n for n in plan.measure_names if reads_judged_rows(parse(n))]
        msg = (
            f"engine 'chunked' reads rows grouped by query, but {', '.join(whole)} reads every "
            "judged document: the run is evaluated joined with its qrels, whose unretrieved "
            "judged documents come after the run's rows; use engine 'auto' (or 'streaming', "
            "'partitioned')"
        )
        raise InputError(msg)
    if chosen == "streaming" and address_limited:  # (see `collect`)
        chosen = "chunked" if looks_grouped(plan.source, plan.group) else "partitioned"
    if chosen in ("in-memory", "streaming"):
        if budget is not None and plan.source is not None:
            needed = WHOLE_COPIES * _input_size(plan, input_bytes)
            if needed > budget:
                what = f"this input (engine {chosen!r} holds it whole)"
                raise too_little(budget, needed, what, text=not plan.source_by_range)
        return dataclasses.replace(plan, status=plan.status.collect(engine=chosen).lazy())
    if chosen == "chunked" and budget is not None:
        # the chunked engine holds separate qrels whole: too large ones are not read (reading
        # them alone would exceed the limit); the partitioned engine spills them into buckets
        from .judgments import qrels_floor_of, qrels_too_large

        held = QRELS_COPIES * qrels_floor_of(plan)
        if held > budget and engine == "auto":
            chosen = "partitioned"
        elif held > budget:
            raise qrels_too_large(plan, budget, held, chosen)
    collect_partitioned = _out_of_core("collect_partitioned")
    partitioned = {
        "progress": progress,
        "memory_limit": budget,  # (None: the engine's own default)
        "tmp_dir": tmp_dir,
    }
    if chosen == "partitioned":
        return collect_partitioned(plan, **partitioned)
    try:
        return _out_of_core("collect_chunked")(
            plan, progress=progress, tmp_dir=tmp_dir, budget=budget
        )
    except NotGroupedError:
        if engine != "auto":
            raise
        # the first rows were grouped, later ones are not (shards appended to one another)
        return collect_partitioned(plan, **partitioned)


def choose(plan: Plan, input_bytes: int | None = None, budget: int | None = None) -> str:
    """The engine ``auto`` runs, from the input's size and its first rows.

    Small inputs (at most `SMALL_BYTES` of files, or a run with qrels up to
    `SMALL_QRELS_BYTES` that fits `budget`, the bytes a memory limit leaves for data) run as
    one plan, and so does a run joined with its qrels into one table (`Plan.joined_qrels`);
    larger ones go to the chunked engine when their first `SAMPLE_ROWS` rows are grouped by
    (by..., query), else to the partitioned engine.
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
        and (budget is None or WHOLE_COPIES * input_bytes <= budget)
    ):
        return "streaming"
    grouped = looks_grouped(plan.source, plan.group, SAMPLE_ROWS)
    return "chunked" if grouped else "partitioned"


def _input_size(plan: Plan, input_bytes: int | None) -> int:
    """The input's bytes in memory: a text file's size, else (Parquet, compressed; a frame)
    its rows times a sample's bytes per row."""
    if input_bytes is not None and not plan.source_by_range:
        return input_bytes
    rows = plan.source.select(pl.len()).collect().item()
    return int(rows * row_bytes(plan.source))


def looks_grouped(source: pl.LazyFrame, group: list[str], rows: int = SAMPLE_ROWS) -> bool:
    """Whether the first `rows` rows of `source` hold each group's rows together: as many runs
    of equal `group` keys as distinct groups. Reads only those rows of those columns."""
    head = source.select(group).head(rows).collect()
    if head.height == 0:
        return True
    runs = head.select(run_starts(group).sum()).item()
    distinct = head.select(pl.struct(group).n_unique()).item()
    return runs == distinct
