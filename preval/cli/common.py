"""What the subcommands share: the engine flags (declared here once), running a plan with the
user's engine while a progress line shows on a terminal, and the formats of stdout."""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .. import engines, report
from ..errors import PrevalError
from ..planner import Plan


class Parser(argparse.ArgumentParser):
    """argparse with preval's one-line usage error (argparse's own exit code is 2 as well)."""

    def error(self, message: str) -> None:
        self.print_usage(sys.stderr)
        self.exit(2, f"preval: error: {message}\n")


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
        help="what the partitioned engine may hold, e.g. 2GB (default 4GB): larger inputs "
        "are spilled to disk in buckets",
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
    paths: Sequence[str | None],
    *,
    phase: str = "evaluating",
    quiet: bool = False,
) -> Plan:
    """Run the plan once with the user's engine (auto: chosen from the input files' size),
    showing its progress on a terminal."""
    if args.tmp_dir is not None and not Path(args.tmp_dir).is_dir():
        msg = f"--tmp-dir {args.tmp_dir}: no such directory"
        raise PrevalError(msg)
    size = sum(Path(p).stat().st_size for p in paths if p and Path(p).is_file())
    with progress(phase, quiet=quiet) as report_rows:
        return engines.collect(
            plan,
            args.engine,
            progress=report_rows,
            memory_limit=args.memory_limit,
            tmp_dir=args.tmp_dir,
            input_bytes=size,
        )


@contextlib.contextmanager
def progress(phase: str, *, quiet: bool = False) -> Iterator[Callable[[int], None] | None]:
    """Phase, rows read and elapsed time on stderr while `phase` runs: on a terminal only,
    silent in pipelines. Yields the callback that reports rows read (None when silent)."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    done, start = threading.Event(), time.perf_counter()
    rows = [0]

    def tick() -> None:
        while not done.wait(0.5):
            read = f"{rows[0]:,} rows read, " if rows[0] else ""
            sys.stderr.write(f"\rpreval: {phase} ... {read}{time.perf_counter() - start:.1f} s")
            sys.stderr.flush()

    def report_rows(n: int) -> None:
        rows[0] = n

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield report_rows
    finally:
        done.set()
        thread.join()
        sys.stderr.write("\r\x1b[K")  # clear the line before the audit and results
        sys.stderr.flush()


# --- stdout -----------------------------------------------------------------------------------


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
