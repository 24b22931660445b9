"""Memory allocator settings for the ``preval`` command's process; imported before Polars loads.

Polars' allocator (jemalloc) hands the pages a program frees back to the system within a second
(Polars sets ``dirty_decay_ms:500,muzzy_decay_ms:1000``, then appends ``_RJEM_MALLOC_CONF``), and
the chunked engines, which free and allocate the same sizes chunk after chunk, fault them in
again each time. The command keeps freed pages for 2 s instead, about the time of a chunk or
two: faster at large sizes for somewhat more memory at peak; a longer time gains little more
and holds on to more memory the longer a run lasts (figures in benchmarks/results.md). A
program that imports the library keeps Polars' settings, and a user's own
``_RJEM_MALLOC_CONF`` wins.
"""

import itertools
import os
import sys

KEEP_FREED_PAGES = "dirty_decay_ms:2000,muzzy_decay_ms:2000"


def is_the_command(argv: list[str], orig_argv: list[str]) -> bool:
    """Whether a process started as ``preval ...`` or ``python [options] -m preval ...``."""
    if argv and os.path.basename(argv[0]) == "preval":
        return True
    return any(a == "-m" and b == "preval" for a, b in itertools.pairwise(orig_argv))


# Polars sets the variable when it loads: if it has already, this changes nothing
if is_the_command(sys.argv, getattr(sys, "orig_argv", [])):
    os.environ.setdefault("_RJEM_MALLOC_CONF", KEEP_FREED_PAGES)
