"""Running the command as a user does: ``python -m preval ARGS`` in a subprocess (the real
exit code, stdin and stdout, no traceback), with this checkout's preval imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_m(
    *args: object, stdin: bytes | None = None, text: bool = True, timeout: float = 60
) -> subprocess.CompletedProcess:
    """``python -m preval ARGS``, its stdout and stderr captured as text (bytes with
    ``text=False``, which `stdin`, the bytes fed to it, needs)."""
    if stdin is not None and text:
        msg = "stdin is bytes: pass text=False"
        raise ValueError(msg)
    return subprocess.run(
        [sys.executable, "-m", "preval", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=text,
        timeout=timeout,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
