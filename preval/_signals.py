"""The signals that end a command (Ctrl-C, SIGTERM, SIGHUP), held back while a step that must
not be cut in two runs: outputs renamed into place (`preval.report.Outputs`), a directory
removed (`preval.spill.remove_tree`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

ENDING = {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)}


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold back Ctrl-C, SIGTERM and SIGHUP in the block; they are raised again, in order, when
    it ends. (Main thread only, where Python runs its handlers. A signal mask would not do:
    the kernel gives a process's signal to any thread that does not block it, one of Polars'
    say, and Python then runs the handler in the main thread all the same.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    # the handlers to put back, read before any is swapped: a signal raised between two swaps
    # leaves none of the holding ones in place
    before = {s: signal.getsignal(s) for s in ENDING}
    try:
        for s in before:
            signal.signal(s, lambda signum, frame: held.append(signum))
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(held):
            signal.raise_signal(s)
