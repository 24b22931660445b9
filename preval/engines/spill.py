"""Spill directories: temporary directories that no exception can leave behind."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import weakref
from pathlib import Path


class SpillDirectory:
    """A new directory under `dir` (default: TMPDIR), removed by `cleanup`, when the object is
    freed, or at the latest when the interpreter exits.

    Unlike `tempfile.TemporaryDirectory`, its removal is arranged before the directory is
    made: a signal raised as an exception (Ctrl-C, the CLI's SIGTERM) the moment the directory
    appears, before any ``try`` of the caller could begin, still removes it.
    """

    def __init__(self, prefix: str = "preval-", dir: str | Path | None = None) -> None:
        parent = Path(tempfile.gettempdir() if dir is None else dir)
        while True:
            path = parent / f"{prefix}{secrets.token_hex(4)}"
            # bound to the path before the directory exists, so it covers every moment after
            self._finalizer = weakref.finalize(self, shutil.rmtree, path, ignore_errors=True)
            try:
                os.mkdir(path, 0o700)
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
