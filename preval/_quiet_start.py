"""While the ``preval`` command starts (importing Polars takes a moment), Ctrl-C, SIGTERM and
SIGHUP end it at once, quietly, with 128 + the signal's number: nothing has been made yet that
needs removing, and a traceback from inside an import helps no one. `preval.cli.main` puts
the handlers that clean up in their place before it does any work.
"""

import os
import signal
import sys

from ._allocator import is_the_command


def _quit(signum: int, frame: object) -> None:
    os._exit(128 + signum)


if is_the_command(sys.argv, getattr(sys, "orig_argv", [])):
    for _name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, _name):
            signal.signal(getattr(signal, _name), _quit)
