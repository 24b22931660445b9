"""What the subcommands share: the input stage (tables or TREC files, read alike by every
command), the engine flags (declared here once), running a plan with the user's engine while a
progress line shows on a terminal, the note that names the query set, and stdout's formats."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from .. import engines, io, report
from ..errors import InputError, PrevalError
from ..options import Options
from ..planner import Plan


class Parser(argparse.ArgumentParser):
    """argparse with preval's one-line usage error (argparse's own exit code is 2 as well)."""

    def error(self, message: str) -> None:
        self.print_usage(sys.stderr)
        self.exit(2, f"preval: error: {message}\n")


# --- the input stage: every command reads tables and TREC files alike ------------------------


@dataclass(frozen=True)
class Inputs:
    """What a command reads, resolved once: `data` and `qrels` as `build_plan` takes them
    under `input_format` (TREC run files as `io.RunFiles`, named: no reader reads their tags
    again); `runs` the TREC run files (empty for a table), `names` the system of each (its
    run tag, or its path when tags repeat) and `tags` its tag (None: none, trec_eval's runid)."""

    data: str | io.RunFiles
    qrels: str | pl.LazyFrame | None
    input_format: str
    runs: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # every file given (inputs and qrels), for sizes and errors
    tags: tuple[str | None, ...] = ()

    def options(self, options: Options) -> Options:
        """`options` with the input format the files were resolved under."""
        return Options.of({"input_format": self.input_format}, options)

    def system(self, name: str | None) -> str | None:
        """A system named by itself or by its run file's path."""
        if name is None or name in self.names or name not in self.runs:
            return name
        return self.names[self.runs.index(name)]


def kind(path: str, input_format: str) -> str:
    """``"table"`` or ``"trec"``: how `path` is read (`io.is_trec`, the library's rule)."""
    return "trec" if io.is_trec(path, input_format) else "table"


STDIN = "/dev/stdin"  # what `-` reads: a stream, copied once by the reader (`io`)


def standard_input(names: Sequence[str | None]) -> list[str | None]:
    """`names` with ``-`` read as standard input (as trec_eval and Unix tools read it:
    ``preval fuse a.run b.run -o - | preval evaluate - --qrels q.txt``); at most one of them,
    since a stream is read once."""
    if sum(name == "-" for name in names) > 1:
        msg = "- (standard input) is given twice: it can be read once; give one input as -"
        raise InputError(msg)
    return [STDIN if name == "-" else name for name in names]


def read_inputs(
    paths: Sequence[str],
    qrels: str | None,
    input_format: str = "auto",
    *,
    subtopic: str | None = None,
    empty_runs: bool = False,
) -> Inputs:
    """The input stage of every command: one table (joined, or a run with `qrels`), or TREC
    run files (one system each, with `qrels`); `qrels` a table or a TREC qrels file (read
    with `subtopic` as its iter column, for the diversity measures). Mixing tables and run
    files, a run file given twice, two runs with one name and run files without judgments
    are refused here, alike for every command; an empty run file too, unless `empty_runs`
    (`preval trec` evaluates it as trec_eval does: it warns that nothing was evaluated)."""
    *paths, qrels = standard_input([*(str(p) for p in paths), qrels])
    kinds = [kind(p, input_format) for p in paths]
    if qrels is not None:  # (`preval trec` evaluates empty files, as trec_eval does)
        io.require_file(qrels, "qrels", empty_ok=empty_runs)
    if "trec" not in kinds:
        if len(paths) > 1:
            msg = (
                f"{paths[0]} and {paths[1]} are tables: give one table (with a system column "
                "for several systems), or TREC run files, one system each"
            )
            raise InputError(msg)
        return Inputs(paths[0], _qrels(qrels, input_format, subtopic, run_is_trec=False),
                      input_format, files=_files(paths, qrels))  # fmt: skip
    if "table" in kinds:
        table = paths[kinds.index("table")]
        msg = (
            f"{table} is a table ({Path(table).suffix}) and {paths[kinds.index('trec')]} a TREC "
            "run file: give either one table with a system column, or TREC run files only, one "
            "system each"
        )
        raise InputError(msg)
    for path in paths:
        io.require_file(path, "run", empty_ok=empty_runs)
    if qrels is None:
        msg = f"TREC run file {paths[0]}: give its judgments with --qrels QRELS"
        raise InputError(msg)
    tags = io.run_tags([Path(p) for p in paths])  # each file's first line, read once here
    names = io.run_names([Path(p) for p in paths], tags)
    seen: dict[str, str] = {}
    for path, name in zip(paths, names, strict=True):
        if name in seen and Path(seen[name]).resolve() == Path(path).resolve():
            msg = f"run file {path} is given twice: give each run once"
            raise InputError(msg)
        if name in seen:
            msg = (
                f"run files {seen[name]} and {path} are both system {name!r}: give each run "
                "once (runs are named by their tag, or by their path when tags repeat)"
            )
            raise InputError(msg)
        seen[name] = path
    both_trec = qrels is None or kind(qrels, input_format) == "trec"
    return Inputs(
        io.RunFiles(paths, names), _qrels(qrels, input_format, subtopic, run_is_trec=True),
        "trec" if both_trec else "auto", tuple(paths), tuple(names), _files(paths, qrels),
        tuple(tags),
    )  # fmt: skip


def _qrels(qrels: str | None, input_format: str, subtopic: str | None, *, run_is_trec: bool):
    """The qrels as `build_plan` takes them beside the run: a path it reads under the format
    passed on, or, for a TREC file beside a table, the file already read as TREC (`build_plan`
    reads a path under one format for both)."""
    if qrels is None or run_is_trec or kind(qrels, input_format) == "table":
        return qrels
    return io.scan_qrels(qrels, subtopic=subtopic)


def _files(paths: Sequence[str], qrels: str | None) -> tuple[str, ...]:
    return (*paths, *([qrels] if qrels is not None else []))


# --- the engine flags: every subcommand that runs an evaluation takes them -------------------


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """``--engine``, ``--memory-limit`` and ``--tmp-dir`` (docs/engines.md)."""
    group = parser.add_argument_group("engine (docs/engines.md; the numbers are the same)")
    group.add_argument(
        "--engine",
        choices=engines.CHOICES,
        default="auto",
        help="execution engine: auto (default: in-memory up to 1 MB, streaming for a run "
        "with qrels up to 256 MB, else chunked when rows are grouped by query and "
        "partitioned when they are not); results are identical",
    )
    group.add_argument(
        "--memory-limit",
        type=parse_size,
        default=None,
        metavar="SIZE",
        help="peak memory to stay under, e.g. 2GB: the engines size their chunks to it, and "
        "an input that cannot fit is refused in one line before any work (default: none; "
        "the partitioned engine spills above 4GB, or 1GB with separate qrels)",
    )
    group.add_argument(
        "--tmp-dir",
        default=None,
        metavar="DIR",
        help="where spill files go (default: TMPDIR, else the system's temporary directory)",
    )


_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "M": 2**20, "MB": 2**20, "G": 2**30,
          "GB": 2**30, "T": 2**40, "TB": 2**40}  # fmt: skip


def parse_size(text: str) -> int:
    """A size such as ``2GB``, ``512M`` or ``1000000`` (bytes), for argparse."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else ""
    if not match or unit not in _UNITS or float(match.group(1)) <= 0:
        msg = f"expected a size such as 2GB, 512MB or a number of bytes, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(float(match.group(1)) * _UNITS[unit])


def collect(
    plan: Plan,
    args: argparse.Namespace,
    inputs: Inputs,
    *,
    phase: str = "evaluating",
    quiet: bool = False,
) -> Plan:
    """Run the plan of `inputs` once with the user's engine (auto: chosen from the input
    files' size), showing its progress on a terminal."""
    if args.tmp_dir is not None and not Path(args.tmp_dir).is_dir():
        msg = f"--tmp-dir {args.tmp_dir}: no such directory"
        raise PrevalError(msg)
    size = sum(Path(p).stat().st_size for p in inputs.files if Path(p).is_file())
    try:
        with progress(phase, quiet=quiet, total=rows_to_read(plan, inputs)) as report_rows:
            return engines.collect(
                plan,
                args.engine,
                progress=report_rows,
                memory_limit=args.memory_limit,
                tmp_dir=args.tmp_dir,
                input_bytes=size,
            )
    except PrevalError as exc:
        _name_the_run_file(exc, inputs)
        raise


def _name_the_run_file(exc: PrevalError, inputs: Inputs) -> None:
    """A data rule broken in a TREC run: the message names the run file (its example's
    system), and says what a run file can do about a NaN score."""
    if not inputs.runs:
        return
    # a run file has no null score: a document not retrieved is a line not written
    text = str(exc).replace(
        "use null for a document that was not retrieved",
        "remove the line, or give the document a number",
    )
    system = (exc.example or {}).get("system")
    if system in inputs.names:
        text = f"{text} (run file {inputs.runs[inputs.names.index(system)]})"
    exc.args = (text,)


_TEXT_TABLES = (".csv", ".tsv", ".tab")


def rows_to_read(plan: Plan, inputs: Inputs) -> Callable[[], int] | None:
    """How to count the rows an engine reports reading, when that costs no evaluation: a
    Parquet file's (or a frame's) row count from its metadata, a TREC run's lines, a CSV's
    lines but the header. None when the engine reads a join of the run with its qrels."""
    if plan.joined_qrels or plan.source is None:
        return None
    if plan.count_rows is not None:  # TREC runs: their lines (an upper bound of their rows)
        return plan.count_rows
    source = plan.source
    if plan.source_by_range:  # Parquet or a frame: the count is in the metadata
        return lambda: source.select(pl.len()).collect().item()
    data = inputs.data
    if isinstance(data, str) and Path(data).suffix.lower() in _TEXT_TABLES:
        return lambda: max(io.count_lines(data) - 1, 0)
    return None


@contextlib.contextmanager
def progress(
    phase: str, *, quiet: bool = False, total: Callable[[], int] | None = None
) -> Iterator[Callable[[int], None] | None]:
    """Phase, rows read and elapsed time on stderr while `phase` runs: on a terminal only,
    silent in pipelines. Yields the callback that reports rows read (None when silent).

    `total` counts the rows to read, in the background (the line shows what it knows
    meanwhile); once it is known and rows are read, the line shows the total, the share read
    and the time left at the pace so far.
    """
    if quiet or not sys.stderr.isatty():
        yield None
        return
    done, start = threading.Event(), time.perf_counter()
    rows: list[int] = [0]
    known: list[int | None] = [None]

    def count() -> None:
        with contextlib.suppress(Exception):  # a total is a nicety, never an error
            known[0] = total()

    def line() -> str:
        elapsed = time.perf_counter() - start
        if not rows[0]:
            return f"preval: {phase} ... {elapsed:.1f} s"
        if not known[0]:
            return f"preval: {phase} ... {rows[0]:,} rows read, {elapsed:.1f} s"
        share = min(rows[0] / known[0], 1.0)
        left = elapsed * (1 - share) / share
        return (
            f"preval: {phase} ... {rows[0]:,} of {known[0]:,} rows read ({share:.0%}), "
            f"{elapsed:.1f} s, about {_duration(left)} left"
        )

    def tick() -> None:
        while not done.wait(0.5):
            sys.stderr.write(f"\r{line()}\x1b[K")
            sys.stderr.flush()

    def report_rows(n: int) -> None:
        rows[0] = n

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    if total is not None:  # a daemon: nobody waits for it
        threading.Thread(target=count, daemon=True).start()
    try:
        yield report_rows
    finally:
        done.set()
        ticker.join()
        sys.stderr.write("\r\x1b[K")  # clear the line before the audit and results
        sys.stderr.flush()


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# --- which queries were averaged: said wherever two conventions give different numbers -------

QUERY_SETS = {
    "judged": "every judged query counts, 0 where nothing was retrieved",
    "retrieved": "judged queries with a result only",
}
AS_TREC_EVAL = {"judged": "as trec_eval -c", "retrieved": "as trec_eval without -c"}


def query_set_note(
    queries: str,
    counts: Sequence[int],
    *,
    per: str = "",
    how: str | None = None,
    what: str = "",
    scope: str = "",
) -> str:
    """One stderr line naming the query set an average was taken over and its size, e.g.
    ``preval: 300 judged queries per system (--queries judged, as trec_eval -c: every judged
    query counts, 0 where nothing was retrieved)``.

    `counts`: the queries of each group (one number when they agree, else their range);
    `per`: what a group is (``"system"``); `how`: the flag that chose the set (default
    ``--queries``, and its trec_eval equivalent); `what`: words before the count; `scope`:
    words after "queries" (which of them count).
    """
    counts = sorted(int(c) for c in counts)
    size = f"{counts[0]:,}" if counts[0] == counts[-1] else f"{counts[0]:,} to {counts[-1]:,}"
    group = f" per {per}" if per else ""
    how = f"--queries {queries}, {AS_TREC_EVAL[queries]}" if how is None else how
    noun = "query" if counts[-1] == 1 else "queries"  # (a range ends above 1)
    sets = f"{queries} {noun}{scope}{group}"
    return f"preval: {what}{size} {sets} ({how}: {QUERY_SETS[queries]})"


# --- stdout -----------------------------------------------------------------------------------


def unwritable_stdout(exc: OSError) -> PrevalError:
    """A failed write to stdout as the one line that names it (a full disk under ``>``). (A
    closed pipe is no such error: the callers let its BrokenPipeError end the command
    quietly, `preval.cli.main`.)"""
    reason = exc.strerror or str(exc)
    msg = f"cannot write standard output: {reason} (free space, or send it elsewhere)"
    return PrevalError(msg)


def stdout_format(text: str) -> str:
    """A format a summary can be printed in, for argparse. Parquet is binary: it goes to a
    file, and asking for it on stdout says so (`refuse_parquet`)."""
    if text == "parquet":  # refused by the subcommand, in the one-line form of every error
        return text
    if text not in report.FORMATS:
        msg = f"invalid choice: {text!r} (choose from {', '.join(report.FORMATS)})"
        raise argparse.ArgumentTypeError(msg)
    return text


def refuse_parquet(fmt: str, example: str) -> None:
    """``--format parquet`` is an error that says where Parquet goes (`example`)."""
    if fmt == "parquet":
        msg = (
            "--format parquet: Parquet is binary and is not printed on stdout; write it to a "
            f"file with {example}"
        )
        raise PrevalError(msg)
