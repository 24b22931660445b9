"""The README tells the truth: its code blocks run and its printed outputs are real."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from preval.measures import markdown_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
# the Spark section's blocks need a Spark session: tests/test_readme_spark.py runs them
SPARK = re.search(r"\n## Spark\n.*?(?=\n## )", README, flags=re.S)
assert SPARK, "the README has a Spark section"
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README.replace(SPARK.group(0), ""), flags=re.S)
PYTHON = [code for lang, code in BLOCKS if lang == "python"]
COMMANDS = [
    line[2:].strip()
    for lang, code in BLOCKS
    if lang == "console"
    for line in code.splitlines()
    if line.startswith("$ ")
]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    return tmp_path


def run_command(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a README command; `pip install ...` is already done by the test environment."""
    parts = [p.strip() for p in command.split("&&")]
    parts = [p for p in parts if not p.startswith("pip install")]
    assert len(parts) == 1, command
    argv = shlex.split(parts[0])
    if argv[0] == "preval":
        argv = [sys.executable, "-m", "preval", *argv[1:]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, timeout=120)


def test_quick_start_is_two_commands() -> None:
    first, second = re.findall(
        r"## Quick start.*?```console\n(.*?)```.*?```console\n(.*?)```", README, flags=re.S
    )[0]
    assert (
        first.strip() == "$ pip install . && preval evaluate fixtures/example.parquet --by system"
    )
    assert second.strip() == "$ pip install '.[test]' && pytest"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install --quiet '.[test]'" in ci and "\npytest" in ci


def test_quick_start_output_is_what_the_readme_shows(workdir: Path) -> None:
    shown = re.search(r"```text\n(system  NumQ.*?)```", README, flags=re.S)
    assert shown
    result = run_command(COMMANDS[0], workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown.group(1)


@pytest.mark.parametrize("command", [c for c in COMMANDS if not c.endswith("pytest")])
def test_readme_commands_run(command: str, workdir: Path) -> None:
    result = run_command(command, workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_readme_python_blocks_run(index: int, workdir: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(workdir)
    exec(compile(PYTHON[index], f"README.md python block {index}", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_readme_measure_table_is_generated_from_the_registry() -> None:
    table = re.search(r"<!-- measures:begin -->\n(.*?)\n<!-- measures:end -->", README, re.S)
    assert table and table.group(1) == markdown_table()


def test_api_reference_is_generated_from_the_docstrings() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_api.py"), "--check"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, "docs/api.md is out of date: run python docs/make_api.py"
