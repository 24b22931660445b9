"""The preval command keeps freed pages for reuse (`preval._allocator`); importers do not."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from preval._allocator import KEEP_FREED_PAGES, is_the_command


@pytest.mark.parametrize(
    ("argv", "orig_argv", "expected"),
    [
        (["/venv/bin/preval", "trec"], ["/venv/bin/python", "/venv/bin/preval", "trec"], True),
        (["-m"], ["python", "-m", "preval", "evaluate", "x.parquet"], True),
        (["-m"], ["python", "-u", "-X", "utf8", "-m", "preval"], True),
        (["-m"], ["python", "-m", "pytest", "-q"], False),
        (["-c"], ["python", "-c", "import preval"], False),
        (["/work/script.py"], ["python", "/work/script.py", "-m", "x"], False),
        (["/work/script.py"], ["python", "/work/script.py", "preval"], False),
        (["/work/preval.py"], ["python", "/work/preval.py"], False),
        ([], [], False),
    ],
)
def test_is_the_command(argv, orig_argv, expected) -> None:
    assert is_the_command(argv, orig_argv) is expected


def allocator_setting(code: str, **env: str) -> str:
    """_RJEM_MALLOC_CONF as a fresh interpreter sees it after running `code` then importing
    preval (Polars prepends its own defaults)."""
    environ = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"} | env
    script = f"{code}\nimport os, preval\nprint(os.environ.get('_RJEM_MALLOC_CONF', ''))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environ, check=True
    )
    return done.stdout.strip()


def test_the_command_keeps_freed_pages_and_importers_keep_polars_settings() -> None:
    as_command = "import sys; sys.argv = ['/venv/bin/preval', 'trec']"
    assert allocator_setting(as_command).endswith(KEEP_FREED_PAGES)
    assert KEEP_FREED_PAGES not in allocator_setting("")  # a program importing the library
    # too late once Polars is loaded (its allocator has read its settings), and left alone
    assert KEEP_FREED_PAGES not in allocator_setting(f"import polars; {as_command}")
    # the user's own setting wins
    mine = allocator_setting(as_command, _RJEM_MALLOC_CONF="dirty_decay_ms:0")
    assert mine.endswith("dirty_decay_ms:0")
    assert KEEP_FREED_PAGES not in mine


def test_the_command_puts_pyarrow_on_the_c_allocator_unless_told_otherwise() -> None:
    """pyarrow's default pool (mimalloc) reserves a gigabyte of address space at its first
    allocation; the command uses the C library's, which an address-space limit can afford."""
    as_command = "import sys; sys.argv = ['/venv/bin/preval', 'evaluate']"
    script = (
        f"{as_command}\nimport preval, pyarrow as pa\npa.array([1, 2])\n"
        "print(pa.default_memory_pool().backend_name)"
    )
    environ = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}

    def backend(code: str, **env: str) -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=environ | env, check=True)  # fmt: skip
        return done.stdout.strip()

    assert backend(script) == "system"
    assert backend(script, ARROW_DEFAULT_MEMORY_POOL="jemalloc") in ("jemalloc", "mimalloc")
    importer = script.replace(as_command, "")  # a program importing the library: left alone
    assert backend(importer) != "system" or sys.platform != "linux"
