"""Start-up on small files (issue 33): `preval trec` and `preval evaluate` on the fixtures load
what they use and nothing else, and the command's own process loads its modules without
garbage collection (`preval._collector`); a program that imports the library keeps Python's
collection as it was. Each case runs in a fresh interpreter (what a process has imported is
the subject)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# runs `python -m preval ARGS` in this interpreter, as `is_the_command` knows it (the console
# script's name), and reports what it imported and the collector's state after it
AS_THE_COMMAND = """
import gc, json, runpy, sys
sys.argv = ["preval", *sys.argv[1:]]
try:
    runpy.run_module("preval", run_name="__main__")
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "modules": sorted(sys.modules), "enabled": gc.isenabled(),
                  "frozen": gc.get_freeze_count()}), file=sys.stderr)
"""

COMMANDS = {
    "trec": ["trec", "fixtures/trec/qrels.txt", "fixtures/trec/bm25.run"],
    "evaluate": ["evaluate", "fixtures/example.parquet", "--by", "system"],
}
SUBCOMMANDS = ("evaluate", "trec", "plot", "compare", "power", "agreement", "fuse", "fuse_tune",
               "measures", "sql")  # fmt: skip
# what the other subcommands and features bring, and the extras
OTHERS = (
    "numpy", "scipy", "matplotlib", "pyspark", "pandas",
    "preval.significance", "preval.plot", "preval.spark", "preval.spark_arrow",
    "preval.spark_fusion", "preval.fusion", "preval.power", "preval.meta_evaluation",
    "preval.risk_adjusted", "preval.intervals", "preval.curves", "preval.sqlgen",
    "preval.custom", "preval.result", "preval.unjudged",
)  # fmt: skip
# the engines for inputs larger than memory: a small input runs in memory without them
OUT_OF_CORE = tuple(
    f"preval.engines.{m}" for m in ("chunked", "partitioned", "presort", "reading", "judgments")
)
# what only an error's message uses (a hint at a close name, a quoted column name)
ERRORS_ONLY = ("difflib", "shlex")


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def _as_the_command(args: list[str]) -> tuple[subprocess.CompletedProcess[str], dict]:
    done = _python(AS_THE_COMMAND, *args)
    return done, json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_command_on_the_fixtures_imports_only_what_it_uses(name: str) -> None:
    done, state = _as_the_command(COMMANDS[name])
    assert state["code"] == 0, done.stderr
    assert done.stdout.startswith("runid" if name == "trec" else "system  NumQ")
    modules = set(state["modules"])
    assert f"preval.cli.{name}" in modules  # (the report is of the command that ran)
    others = {f"preval.cli.{c}" for c in SUBCOMMANDS if c != name}
    assert sorted(modules & others) == []
    assert sorted(modules & {*OTHERS, *OUT_OF_CORE, *ERRORS_ONLY}) == []


def test_the_command_collects_again_once_loaded() -> None:
    # collection resumes after the imports, and what exists at the end is out of the exit's
    # last collection (frozen); the output is the same as in a process that collects
    done, state = _as_the_command(COMMANDS["trec"])
    assert state["code"] == 0, done.stderr
    assert state["enabled"] is True
    assert state["frozen"] > 10_000  # (the modules' objects: tens of thousands)
    library = _python(
        "import sys\nfrom preval.cli import main\nraise SystemExit(main(sys.argv[1:]))",
        *COMMANDS["trec"],
    )
    assert library.returncode == 0, library.stderr
    assert library.stdout == done.stdout


def test_the_command_loads_its_modules_without_collection() -> None:
    code = (
        "import gc, sys\n"
        "sys.argv = ['preval', 'trec']\n"
        "import preval.cli\n"
        "print(gc.isenabled(), gc.get_freeze_count())\n"
    )
    done = _python(code)
    assert done.stdout.split() == ["False", "0"], done.stderr


def test_a_program_importing_the_library_keeps_its_collection() -> None:
    # not the command: nothing held while preval loads, nothing frozen after main()
    code = (
        "import gc, io, sys\n"
        "import preval, preval.cli\n"
        "held = gc.isenabled()\n"
        "sys.stdout, out = io.StringIO(), sys.stdout\n"
        "code = preval.cli.main(sys.argv[1:])\n"
        "sys.stdout = out\n"
        "print(held, code, gc.isenabled(), gc.get_freeze_count())\n"
    )
    done = _python(code, *COMMANDS["trec"])
    assert done.stdout.split() == ["True", "0", "True", "0"], done.stderr
