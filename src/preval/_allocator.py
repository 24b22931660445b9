"""Memory allocator settings for the ``preval`` command's process; imported before Polars loads.

Polars' allocator (jemalloc) hands the pages a program frees back to the system within a second
(Polars sets ``dirty_decay_ms:500,muzzy_decay_ms:1000``, then appends ``_RJEM_MALLOC_CONF``), and
the chunked engine, which frees and allocates the same sizes chunk after chunk, faults them in
again each time (100M Parquet rows: 1.22M page faults, 3.7 s of system time). The command keeps
freed pages for 2 s instead, about the time of a chunk or two. Measured with Polars' setting /
2 s / 10 s: 1G Parquet rows (one run each) 157.6 s / 124.8 s / 125.6 s, peak memory 0.99 /
1.35 / 1.88 GB; 100M rows (three runs each, alternating) 12.30-12.78 / 11.86-12.63 /
11.17-12.06 s at 0.73-0.81 GB; ``preval trec`` on 10M lines (two each) 6.79-6.80 / 6.74-8.51 /
6.43-6.45 s at 1.57-1.63 / 1.64 / 1.77-1.92 GB. 10 s gains little more and holds on to more
memory the longer a run lasts. A program that imports the library keeps Polars' settings, and
a user's own ``_RJEM_MALLOC_CONF`` wins.
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
