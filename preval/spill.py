"""Spill directories: temporary directories that no exception can leave behind, and that the
next run removes when a process that could not clean up (killed, aborted) left one."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import weakref
from pathlib import Path

from . import _signals

try:
    import fcntl
except ImportError:  # (Windows) the pid alone tells
    fcntl = None  # type: ignore[assignment]

# every spill directory's name: preval-<kind>-<pid>-<random>; the pid says whose it is
_NAME = re.compile(r"preval-(?:[a-z]+-)?(\d+)-[0-9a-f]{8}")
# a lock its owner holds while it lives: the kernel lets it go when the process dies, however it
# dies, and a pid seen from another pid namespace (containers sharing a /tmp) proves nothing
_LOCK = ".owner"
# a directory without its lock yet is one being made, unless it is older than this
_YOUNG_SECONDS = 60


class SpillDirectory:
    """A new directory under `dir` (default: TMPDIR), removed by `cleanup`, when the object is
    freed, or at the latest when the interpreter exits.

    Unlike `tempfile.TemporaryDirectory`, its removal is arranged before the directory is
    made: a signal raised as an exception (Ctrl-C, the CLI's SIGTERM) the moment the directory
    appears, before any ``try`` of the caller could begin, still removes it. A process killed
    outright (SIGKILL, an abort) cannot clean up: its directory carries its pid, and the next
    spill directory made in the same folder removes those of processes that no longer run
    (`remove_stale`).
    """

    def __init__(self, prefix: str = "preval-", dir: str | Path | None = None) -> None:
        parent = Path(temp_dir() if dir is None else dir)
        remove_stale(parent)
        while True:
            path = parent / f"{prefix}{os.getpid()}-{os.urandom(4).hex()}"
            lock: list[int] = []  # the lock's descriptor, once held
            # bound to the path before the directory exists, so it covers every moment after
            self._finalizer = weakref.finalize(self, _remove, path, lock)
            try:
                os.mkdir(path, 0o700)
                lock.append(_hold(path / _LOCK))
            except FileExistsError:  # another directory's name: not ours to remove
                self._finalizer.detach()
                continue
            except BaseException:  # at once, not when a traceback that holds `self` is freed
                self._finalizer()
                raise
            break
        self.path = path

    def cleanup(self) -> None:
        """Remove the directory and everything in it (once; later calls do nothing)."""
        self._finalizer()


def temp_dir() -> str:
    """The system's temporary directory (``TMPDIR``, ...: `tempfile.gettempdir`), found with the
    ending signals held back (`_signals.held`).

    The first call in a process tries each candidate by making a file of a random name in it
    (``8ta2jvc9``), writing it and removing it; an exception raised by a signal's handler as
    the file is made, before the ``try`` that removes it (Ctrl-C, the CLI's SIGTERM and
    SIGHUP), left it behind in the user's temporary directory. Later calls return the cached
    answer.
    """
    with _signals.held():
        return tempfile.gettempdir()


def remove_stale(parent: Path) -> list[Path]:
    """Remove the spill directories under `parent` whose process no longer runs; return them.

    Only directories named as `SpillDirectory` names them, owned by this user, are looked at;
    one whose pid is alive (that process, or another that took its number) is left alone.
    """
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:  # an unreadable folder: making the directory will say so
        return removed
    for entry in entries:
        match = _NAME.fullmatch(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        if _abandoned(Path(entry.path), int(match.group(1))):
            remove_tree(entry.path)
            removed.append(Path(entry.path))
    return removed


def _hold(path: Path) -> int:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _remove(path: Path, lock: list[int]) -> None:
    for fd in lock:
        os.close(fd)
    remove_tree(path)


def remove_tree(path: str | Path) -> None:
    """Remove the directory `path` and everything in it, as ``shutil.rmtree(path,
    ignore_errors=True)``, with the ending signals held back until it is done (`_signals.held`).

    Python 3.11's rmtree closes each directory's descriptor and then sets a flag that its
    ``finally`` reads to close it if that did not happen: an exception raised by a signal's
    handler between the two (Ctrl-C, the CLI's SIGTERM and SIGHUP) closes it a second time,
    whose ``[Errno 9] Bad file descriptor`` then replaces the interruption (the command said
    that, not "terminated"), and which may close a file another thread (Polars) has just opened
    under the same number.
    """
    with _signals.held():
        shutil.rmtree(path, ignore_errors=True)


def _abandoned(path: Path, pid: int) -> bool:
    """Whether no live process owns the spill directory `path` (made by process `pid`)."""
    try:
        fd = os.open(path / _LOCK, os.O_RDONLY)
    except FileNotFoundError:  # being made right now, or made by a process that died at once
        try:
            old = time.time() - path.stat().st_mtime > _YOUNG_SECONDS
        except OSError:
            return False
        return old and not _alive(pid)
    except OSError:
        return False
    try:
        if fcntl is None:
            return not _alive(pid)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its owner lives
            return False
        return True
    finally:
        os.close(fd)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True
