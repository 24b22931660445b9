"""The pages say what to install before an example needs it: each code block of README.md and
docs/ is run on a bare install (the extras and the test extra's packages blocked, as
tests/test_install.py blocks them), and one that fails for want of a package must follow the
page's `pip install` of it. tests/test_readme.py runs the same blocks where everything is
installed, so a missing step would pass there (compare.md's examples needed scipy before the
page said so; spark-and-sql.md's SQL examples import duckdb, which no extra installs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.test_install import BLOCKED
from tests.test_readme import BLOCKS, PAGES, ROOT

# module -> what a page must say to install it (an extra of preval's, or the package itself)
INSTALLS = {
    "scipy": "'.[stats]'",
    "matplotlib": "'.[plot]'",
    "pyspark": "'.[spark]'",
    "pandas": "'.[spark]'",
    "duckdb": "pip install duckdb",
}
EXTRAS = {"stats": "scipy", "plot": "matplotlib", "spark": "pyspark"}

# Run in a fresh interpreter, in a directory holding `fixtures`: each block of one page, in
# order, the optional packages blocked; prints, as JSON, each failing block's line and the
# package it wanted (None: it failed for another reason, which test_readme.py reports).
RUNNER = r"""
import contextlib, io, json, re, shlex, sys
for name in BLOCKED:
    sys.modules[name] = None
from preval.cli import main

def wanted(text):
    extra = re.search(r"pip install 'preval\[(\w+)\]'", text)
    if extra:
        return EXTRAS[extra[1]]
    missing = re.search(r"No module named '(\w+)|import of (\w+) halted", text)
    return (missing[1] or missing[2]) if missing else None

failed = {}
for line, lang, code in json.load(sys.stdin):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            if lang == "python":
                exec(compile(code, "block", "exec"), {})
            else:
                argv = shlex.split(code)[1:]
                if main(argv) != 0:
                    failed[line] = wanted(err.getvalue())
        except SystemExit as exc:
            if exc.code:
                failed[line] = wanted(err.getvalue())
        except BaseException as exc:
            failed[line] = wanted(f"{exc!r} {exc}")
print(json.dumps(failed))
"""


def _runnable(page: str) -> list[tuple[int, str, str]]:
    """(line, language, code) of the page's Python blocks and `preval` commands."""
    found = []
    for b in BLOCKS:
        if b.page != page:
            continue
        if b.lang == "python":
            found.append((b.line, "python", b.code))
        elif b.lang == "console":
            for n, line in enumerate(b.code.splitlines(), start=1):
                command = line[2:].split("&&")[-1].strip()
                if line.startswith("$ ") and command.startswith("preval "):
                    found.append((b.line + n, "console", command))
    return found


@pytest.mark.parametrize("page", [p for p in PAGES if _runnable(p)])
def test_a_page_says_what_to_install_before_an_example_needs_it(page: str, tmp_path) -> None:
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    code = RUNNER.replace("BLOCKED", repr(BLOCKED)).replace("EXTRAS", repr(EXTRAS))
    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(_runnable(page)), cwd=tmp_path,
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = (ROOT / page).read_text(encoding="utf-8").split("\n")
    for line, module in json.loads(done.stdout.splitlines()[-1]).items():
        if module is None or module not in INSTALLS:
            continue  # (not a missing package: test_readme.py runs the block for real)
        before = "\n".join(lines[: int(line)])
        if page == "README.md":  # the README's install section names every extra once
            before = re.split(r"\n## Quick start", "\n".join(lines))[0]
        assert INSTALLS[module] in before, f"{page}:{line} needs {module}: say so before"
