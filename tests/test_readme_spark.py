"""The Spark and SQL page tells the truth: its Spark blocks run on a local Spark session, and
the output shown after a block is what it prints. (tests/test_readme.py runs every other block
of every page, and leaves these out: they need a Spark session.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.spark_session import spark_session
from tests.test_readme import SPARK_PAGE, blocks, needs_spark

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / SPARK_PAGE).read_text(encoding="utf-8")
BLOCKS = blocks(SPARK_PAGE)
# the Python blocks that need Spark, each with its printed output if the page shows it
PYTHON = [b for b in BLOCKS if b.lang == "python" and needs_spark(b.code)]
COMMANDS = [
    line.strip()
    for b in BLOCKS
    if b.lang == "sh"
    for line in b.code.splitlines()
    if line.startswith("pip install")
]


@pytest.fixture(scope="module")
def spark():
    return spark_session()


def test_the_section_has_what_the_issue_asks_for() -> None:
    assert len(PYTHON) >= 3  # a Spark DataFrame, a run with its qrels, Spark SQL
    for needed in ("preval.spark.evaluate", "preval.spark.summarize", "qrels=", "preval.sql",
                   "addArtifacts", "archives", "pip install"):  # fmt: skip
        assert needed in DOC, needed


def test_install_commands_name_extras_that_exist() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    # (tomllib is Python 3.11+; the extras are one line each)
    extras = dict(re.findall(r"^([\w-]+) = \[(.*)\]$", pyproject, flags=re.M))
    assert COMMANDS
    for command in COMMANDS:
        found = re.fullmatch(r"pip install '\.\[(\w+)\]'", command)
        assert found and found.group(1) in extras, command
    assert '"pyspark>=4"' in extras["spark"]


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in PYTHON])
def test_python_blocks_run_and_print_what_is_shown(
    block, spark, tmp_path: Path, monkeypatch, capsys
) -> None:
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    shown = block.output
    exec(block.compiled(), {})
    printed = capsys.readouterr().out
    # what a block writes lands in its own directory, never in the repository
    assert not [p for p in ROOT.iterdir() if p.name.endswith(".parquet")]
    if shown is None:
        assert printed.strip()
    else:
        assert printed == shown
