"""While the ``preval`` command starts (importing Polars takes a moment), Ctrl-C, SIGTERM and
SIGHUP end it at once, quietly, with 128 + the signal's number: nothing has been made yet that
needs removing, and a traceback from inside an import helps no one. The first module the
package runs, before the allocator's (which loads ctypes): it imports only what Python has
loaded at start-up. `preval.cli.main` puts
the handlers that clean up in their place before it does any work. The command's imports also
run without garbage collection (`preval._collector`), which `preval.cli.main` resumes.
"""

import itertools
import os
import signal
import sys


def is_the_command(argv: list[str], orig_argv: list[str]) -> bool:
    """Whether a process started as ``preval ...`` or ``python [options] -m preval ...``."""
    if argv and os.path.basename(argv[0]) == "preval":
        return True
    return any(a == "-m" and b == "preval" for a, b in itertools.pairwise(orig_argv))


def _quit(signum: int, frame: object) -> None:
    os._exit(128 + signum)


if is_the_command(sys.argv, getattr(sys, "orig_argv", [])):
    for _name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, _name):
            signal.signal(getattr(signal, _name), _quit)
    from . import _collector  # (once the handlers are in place: a signal here is quiet)

    _collector.hold()
