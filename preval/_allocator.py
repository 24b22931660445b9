"""Memory allocator settings for the ``preval`` command's process; imported before Polars loads.

Polars' allocator (jemalloc) hands the pages a program frees back to the system within a second
(Polars sets ``dirty_decay_ms:500,muzzy_decay_ms:1000``, then appends ``_RJEM_MALLOC_CONF``), and
the chunked engines, which free and allocate the same sizes chunk after chunk, fault them in
again each time. The command keeps freed pages for 2 s instead, about the time of a chunk or
two: faster at large sizes for somewhat more memory at peak; a longer time gains little more
and holds on to more memory the longer a run lasts (figures in benchmarks/results.md). A
program that imports the library keeps Polars' settings, and a user's own
``_RJEM_MALLOC_CONF`` wins. The command also caps glibc's malloc arenas (`MALLOC_ARENAS`),
unless the user set ``MALLOC_ARENA_MAX``, and points pyarrow at the C library's allocator
(`ARROW_POOL`) unless the user set ``ARROW_DEFAULT_MEMORY_POOL``.
"""

import os
import sys

from ._quiet_start import is_the_command  # (named here too: the command's own test)

KEEP_FREED_PAGES = "dirty_decay_ms:2000,muzzy_decay_ms:2000"
# glibc's malloc, which Python and Polars' threads use beside jemalloc, reserves a 64 MiB arena
# for each thread that allocates, up to 8 per core: a gigabyte of address space on 2 cores
# that an address-space limit (ulimit -v) counts. Two arenas halve the command's address space
# at the same speed (benchmarks/results.md, memory limit).
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h
# pyarrow's default pool (mimalloc) reserves a gigabyte of address space at its first
# allocation, which the command makes only to read Parquet footers: under an address-space
# limit (ulimit -v) that gigabyte is what the evaluation lacks. The C library's malloc reserves
# nothing beyond what it is asked for.
ARROW_POOL = "system"


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """At most `arenas` glibc malloc arenas from now on (as ``MALLOC_ARENA_MAX``); False where
    the C library has no ``mallopt`` (not glibc) or refuses."""
    import ctypes

    try:
        return ctypes.CDLL(None).mallopt(_M_ARENA_MAX, arenas) == 1
    except (OSError, AttributeError):
        return False


# Polars sets the variable when it loads: if it has already, this changes nothing
if is_the_command(sys.argv, getattr(sys, "orig_argv", [])):
    os.environ.setdefault("_RJEM_MALLOC_CONF", KEEP_FREED_PAGES)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", ARROW_POOL)
    if "MALLOC_ARENA_MAX" not in os.environ:
        limit_malloc_arenas()
