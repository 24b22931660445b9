"""The ``preval`` command: a thin layer over the library, one module per subcommand.

This module assembles the parser from the subcommands (each module's ``add_parser`` and
``run``), handles signals and turns errors into exit codes: 0 on success, 2 on bad input or
usage (one line ``preval: error: ...``), 130 on Ctrl-C, 143 on SIGTERM, 129 on SIGHUP, and
141 when the
reader of stdout leaves early (``preval trec ... | head -1``), quietly, as a Unix tool that
SIGPIPE ends.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import weakref
from collections.abc import Sequence
from functools import partial
from types import FrameType
from typing import TextIO

import polars as pl

from .. import __version__, _collector, io, report
from ..errors import PrevalError
from . import common

# the subcommands, each the module of its name: imported when used, so that a command pays
# for its own imports only (`preval trec` does not load compare's numpy)
COMMANDS = (
    "evaluate",
    "trec",
    "plot",
    "compare",
    "power",
    "agreement",
    "fuse",
    "measures",
    "sql",
)
PIPE_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader left


def parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``preval`` parser: one subparser per subcommand module, which runs it; only the
    command's own when `argv` starts with a command's name."""
    top = common.Parser(
        prog="preval",
        description="Evaluate ranked results for many queries at once (AP, P@k, nDCG ...).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"preval {__version__}")
    sub = top.add_subparsers(dest="command", required=True, parser_class=common.Parser)
    first = next(iter(sys.argv[1:] if argv is None else argv), None)
    for name in [first] if first in COMMANDS else COMMANDS:
        command = importlib.import_module(f"{__name__}.{name}")
        command.add_parser(sub).set_defaults(handler=command.run)
    if first not in COMMANDS:  # the top-level help shows it; a named command never does
        top.epilog = importlib.import_module(f"{__name__}.evaluate").EXAMPLES
    top.set_defaults(parsers=sub.choices)  # (an unknown flag is told with its command's usage)
    return top


class Terminated(BaseException):
    """SIGTERM (sent by `timeout`, job schedulers, container stops) or SIGHUP (a closed
    terminal, a dropped ssh session), raised in the main thread so that temporary files and
    spill directories are removed on the way out, as on Ctrl-C (raised as KeyboardInterrupt),
    and never inside a function Polars called or a finalizer (`_deferred`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: FrameType | None) -> None:
    if _deferred(frame):
        _again(signum)
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def _deferred(frame: FrameType | None) -> bool:
    """Whether the signal's handler runs where an exception must not be raised, so that the
    signal waits (`_again`):
    - in Polars' code, or a function Polars called (the checks that `map_batches` runs): the
      exception would be a panic inside Polars, with its Rust backtrace, not an exception the
      command can clean up after;
    - in a `weakref.finalize` callback (a spill directory being removed, `preval.spill`): the
      exception would be printed as ignored, with its traceback, and the removal left half
      done."""
    while frame is not None:
        code = frame.f_code
        if code is _FINALIZE_CALL or f"{os.sep}polars{os.sep}" in code.co_filename:
            return True
        frame = frame.f_back
    return False


_FINALIZE_CALL = weakref.finalize.__call__.__code__


def _again(signum: int) -> None:
    """Send `signum` to this process again shortly, for its handler to run in preval's own code
    (between two of Polars' calls, or once the running one returns)."""
    timer = threading.Timer(0.05, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


# the signals that end the command, cleaning up (SIGINT is Python's KeyboardInterrupt)
ENDING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        try:
            command = parser(argv)  # (the subcommand's modules are loaded now)
            _collector.loaded()
            args, unknown = command.parse_known_args(argv)
            if unknown:  # told by the command's parser: its usage, not the top level's
                words = " ".join(unknown)
                args.parsers[args.command].error(f"unrecognized arguments: {words}")
            del args.parsers
        except SystemExit:  # --help, --version, a usage error: printed, then flushed here
            sys.stdout.flush()
            raise
        code = _main(args)
        sys.stdout.flush()  # a closed pipe shows here at the latest, not at the exit
        return code
    except BrokenPipeError:
        # the reader of stdout left (`| head -1`): nothing more to say, as Unix tools do
        _stdout_to_devnull()
        return PIPE_CLOSED
    finally:
        io.release_copies()  # (a stream's or a decoded file's copy: read by this command only)
        _collector.ending()


def _main(args: argparse.Namespace) -> int:
    previous = {}
    if threading.current_thread() is threading.main_thread():
        # (the command's quiet start-up handlers, `preval._quiet_start`, end here)
        previous = {s: signal.signal(s, _terminate) for s in (signal.SIGINT, *ENDING)}
    report.WRITTEN.clear()
    named = sys.stdout is sys.__stdout__ and sys.stdout is not None
    if named:  # (a test's captured stdout is its own business)
        sys.stdout = _Stdout(sys.stdout)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(f"preval: interrupted; {_outputs_left()}", file=sys.stderr)
        return 130
    except Terminated as ended:
        print(f"preval: terminated; {_outputs_left()}", file=sys.stderr)
        return 128 + ended.signum
    finally:
        if named:
            sys.stdout = sys.__stdout__
        for s, handler in previous.items():
            signal.signal(s, handler)


class _Stdout:
    """stdout, whose failure to write (a full disk under ``> out.txt``, ``> /dev/full``, an
    I/O error) is said naming it: the bare error says only ``[Errno 28] No space left on
    device``, which could be any file. A closed pipe stays a BrokenPipeError (`main`)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:  # (the reader left: `main` ends quietly)
            raise
        except OSError as exc:
            raise common.unwritable_stdout(exc) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:  # (the reader left: `main` ends quietly)
            raise
        except OSError as exc:
            raise common.unwritable_stdout(exc) from exc

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _outputs_left() -> str:
    """What an ended command leaves: nothing, or its outputs, when the signal came while they
    were put in place (held back until all were: complete, never a mix)."""
    if not report.WRITTEN:
        return "no output written"
    return "its outputs were complete and are written: " + ", ".join(map(str, report.WRITTEN))


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that what is still buffered cannot fail again when
    Python flushes it on the way out (its "Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's captured stdout)
        pass


def _run(args: argparse.Namespace) -> int:
    try:
        return args.handler(args)
    except PrevalError as exc:
        # a hint names a flag only when this command has it (`PrevalError.spoken`)
        print(f"preval: error: {exc.spoken(partial(hasattr, args), cli=True)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # not bad input: the reader of stdout left (`main`)
        raise
    except (MemoryError, RuntimeError) as exc:
        # under an address-space limit (ulimit -v) that the engines' sizing did not foresee, an
        # allocation or a thread's stack fails in Python's code: one line, not a traceback
        if isinstance(exc, RuntimeError) and "can't start new thread" not in str(exc):
            raise
        msg = (
            f"out of memory ({_memory_limits()}): {_failed(exc)}; nothing was written: raise "
            "the limit, or give a lower --memory-limit"
        )
        print(f"preval: error: {msg}", file=sys.stderr)
        return 2
    except (pl.exceptions.PolarsError, OSError) as exc:
        # Unreadable files and malformed CSV surface here mid-run: still bad input, not a
        # crash, and said with the file's name and line, not the reader's class names
        inputs = [(n, getattr(args, n, None)) for n in ("input", "qrels")]
        explained = io.explain(exc, [*inputs, *getattr(args, "runs", [])])
        if explained is not None:
            print(f"preval: error: {explained}", file=sys.stderr)
            return 2
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable input"
        print(f"preval: error: {first}", file=sys.stderr)
        return 2


def _memory_limits() -> str:
    """The process's address-space limit, as the error of an allocation that failed says it."""
    from ..engines.budget import address_space_limit

    space = address_space_limit()
    if space is None:
        return "no address-space limit: the machine's memory"
    return f"address-space limit, ulimit -v, {space / 2**30:.2f} GiB"


def _failed(exc: BaseException) -> str:
    """What failed: a thread that could not start, or an allocation."""
    return "a thread could not start" if isinstance(exc, RuntimeError) else "an allocation failed"
