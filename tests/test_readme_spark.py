"""The README's Spark section tells the truth: its Python blocks run on a local Spark session,
and the output shown after a block is what it prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.spark_session import spark_session

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOC = re.search(r"\n## Spark\n.*?(?=\n## )", README, flags=re.S).group(0)
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", DOC, flags=re.S)
# each Python block with the text block right after it, if any: its printed output
PYTHON = [
    (code, BLOCKS[i + 1][1] if i + 1 < len(BLOCKS) and BLOCKS[i + 1][0] == "text" else None)
    for i, (lang, code) in enumerate(BLOCKS)
    if lang == "python"
]
COMMANDS = [
    line.strip()
    for lang, code in BLOCKS
    if lang == "sh"
    for line in code.splitlines()
    if line.startswith("pip install")
]


@pytest.fixture(scope="module")
def spark():
    return spark_session()


def test_the_section_has_what_the_issue_asks_for() -> None:
    assert len(PYTHON) >= 4
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


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_python_blocks_run_and_print_what_is_shown(
    index: int, spark, tmp_path: Path, monkeypatch, capsys
) -> None:
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    code, shown = PYTHON[index]
    exec(compile(code, f"README.md Spark python block {index}", "exec"), {})
    printed = capsys.readouterr().out
    # what a block writes lands in its own directory, never in the repository
    assert not [p for p in ROOT.iterdir() if p.name.endswith(".parquet")]
    if shown is None:
        assert printed.strip()
    else:
        assert printed == shown
