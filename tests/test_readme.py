"""The README and the pages of docs/ tell the truth: their code blocks run, their printed
outputs are real and their links lead somewhere.

Every page is checked: README.md and every docs/*.md but the generated docs/api.md (which
has a test of its own below). Each ```python block is executed in a temporary directory that
holds `fixtures`; a ```text block right after it (blank lines only between) is what it
prints. Each `$ ` line of a ```console block is run there (`pip install ...` parts are done
by the test environment; `preval` is `python -m preval`), and a block of one command followed
by a ```text block must print that (its first lines, if its last line is `...`). Blocks that
need a Spark session are run by tests/test_readme_spark.py instead.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from preval.measures import markdown_table

ROOT = Path(__file__).resolve().parents[1]
GENERATED = {"docs/api.md"}  # written by docs/make_api.py, checked against the docstrings
DOCS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
PAGES = ["README.md", *[p for p in DOCS if p not in GENERATED]]
SPARK_PAGE = "docs/spark-and-sql.md"  # its Spark blocks: tests/test_readme_spark.py
README = (ROOT / "README.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Block:
    page: str  # path from the repository root
    line: int  # line of the opening fence, 1-based
    lang: str
    code: str
    output: str | None  # the ```text block right after it, if any: what it prints

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def compiled(self):
        """The code, compiled so that a traceback names the page and its line."""
        return compile("\n" * self.line + self.code, str(ROOT / self.page), "exec")


def blocks(page: str) -> list[Block]:
    """The fenced blocks of a page, in order; a text block right after a block is its output."""
    lines = (ROOT / page).read_text(encoding="utf-8").split("\n")
    found: list[tuple[int, str, str, int]] = []  # (line, lang, code, closing line)
    i = 0
    while i < len(lines):
        fence = re.match(r"```(\w*)\s*$", lines[i])
        if fence:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```")
            code = "".join(f"{s}\n" for s in lines[i + 1 : end])
            found.append((i + 1, fence.group(1), code, end))
            i = end + 1
        else:
            i += 1
    result = []
    for k, (line, lang, code, end) in enumerate(found):
        output = None
        if k + 1 < len(found) and found[k + 1][1] == "text":
            between = lines[end + 1 : found[k + 1][0] - 1]
            if not any(s.strip() for s in between):
                output = found[k + 1][2]
        result.append(Block(page, line, lang, code, output))
    return result


def needs_spark(code: str) -> bool:
    return bool(re.search(r"^\s*(from|import) (pyspark|preval\.spark)\b", code, flags=re.M))


BLOCKS = [block for page in PAGES for block in blocks(page)]
PYTHON = [b for b in BLOCKS if b.lang == "python" and not needs_spark(b.code)]
SPARK = [b for b in BLOCKS if b.lang == "python" and needs_spark(b.code)]
# (page:line of the command, the command)
COMMANDS = [
    (f"{b.page}:{b.line + n}", line[2:].strip())
    for b in BLOCKS
    if b.lang == "console"
    for n, line in enumerate(b.code.splitlines(), start=1)
    if line.startswith("$ ")
]
# what a console block of one command prints (the ```text block after it), by the command's
# page:line; a last line `...` shows the first lines only
SHOWN = {
    f"{b.page}:{b.line + 1}": b.output
    for b in BLOCKS
    if b.lang == "console" and b.output is not None and b.code.count("\n$ ") == 0
}


def _stderr_shown() -> dict[str, str]:
    """A second ```text block right after a command's output, all of whose lines are
    ``preval: ...``: what it says on stderr, by the command's page:line."""
    found = {}
    for i, b in enumerate(BLOCKS[:-2]):
        out, err = BLOCKS[i + 1], BLOCKS[i + 2]
        if f"{b.page}:{b.line + 1}" not in SHOWN or err.lang != "text" or err.page != b.page:
            continue
        lines = (ROOT / b.page).read_text(encoding="utf-8").split("\n")
        end = out.line + out.code.count("\n")  # (0-based: the line after the closing fence)
        between = lines[end + 1 : err.line - 1]
        if not any(s.strip() for s in between) and all(
            s.startswith("preval: ") for s in err.code.splitlines()
        ):
            found[f"{b.page}:{b.line + 1}"] = err.code
    return found


SHOWN_STDERR = _stderr_shown()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    return tmp_path


def run_command(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a page's command; `pip install ...` is already done by the test environment."""
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
    page, first = COMMANDS[0]
    assert page.startswith("README.md:") and first.endswith("--by system")
    result = run_command(first, workdir)
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown.group(1)


@pytest.mark.parametrize(
    ("where", "command"),
    [pytest.param(w, c, id=w) for w, c in COMMANDS if not c.endswith("pytest")],
)
def test_console_commands_run(where: str, command: str, workdir: Path) -> None:
    result = run_command(command, workdir)
    assert result.returncode == 0, result.stderr
    shown = SHOWN.get(where)
    if shown is not None and shown.endswith("\n...\n"):
        assert result.stdout.startswith(shown.removesuffix("...\n")), where
    elif shown is not None:
        assert result.stdout == shown, where
    if where in SHOWN_STDERR:
        assert set(SHOWN_STDERR[where].splitlines()) <= set(result.stderr.splitlines()), where
    argv = shlex.split(command)
    written = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-o", "--output")]
    if written and written[0] != "-" and argv[1] == "fuse":
        # preval fuse says what it wrote on stderr: stdout holds results only (the run, with -o -)
        assert (workdir / written[0]).stat().st_size > 0
    else:
        assert result.stdout.strip()
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in PYTHON])
def test_python_blocks_run(block: Block, workdir: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(workdir)
    exec(block.compiled(), {})
    printed = capsys.readouterr().out
    if block.output is None:
        assert printed.strip()
    else:
        assert printed == block.output


def test_every_page_has_code_that_runs() -> None:
    # a page whose blocks the parser missed would pass unchecked
    for page in PAGES:
        assert page == "README.md" or page.startswith("docs/")
    assert {b.page for b in PYTHON} >= {"README.md", "docs/measures.md", "docs/trec.md"}
    assert len(PYTHON) + len(SPARK) >= 10 and len(COMMANDS) >= 15
    assert len(SHOWN) >= 5  # the printed outputs of commands are compared too
    assert SHOWN_STDERR  # and what one says on stderr


def test_spark_blocks_are_on_the_spark_page() -> None:
    # test_readme_spark.py runs the Spark blocks of that page; one elsewhere would run nowhere
    assert SPARK and {b.page for b in SPARK} == {SPARK_PAGE}


def test_install_commands_name_extras_that_exist() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    # (tomllib is Python 3.11+) the keys of the extras' table
    table = pyproject.split("[project.optional-dependencies]\n")[1].split("\n[")[0]
    extras = set(re.findall(r"^([\w-]+) = \[", table, flags=re.M))
    named = [
        (b.id, name)
        for b in BLOCKS
        if b.lang in ("sh", "console")
        for name in re.findall(r"pip install '\.\[(\w+)\]'", b.code)
    ]
    assert {"plot", "stats", "spark", "test"} <= {name for _, name in named}
    for where, name in named:
        assert name in extras, where


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES)
def test_links_lead_somewhere(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code is not a link
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (ROOT / page).parent / path if path else ROOT / page
        assert linked.exists(), f"{page}: {target}"
        if anchor:
            assert linked.suffix == ".md", f"{page}: {target}"
            headings = re.findall(r"^#+ (.*)$", linked.read_text(encoding="utf-8"), flags=re.M)
            assert anchor in {_slug(h) for h in headings}, f"{page}: {target}"


@pytest.mark.parametrize("page", [p for p in PAGES if p != "README.md"])
def test_pages_have_a_title_and_a_way_back(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    assert text.startswith("# "), page
    assert "](../README.md" in text, page


def test_measure_table_is_generated_from_the_registry() -> None:
    page = (ROOT / "docs" / "measures.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- measures:begin -->\n(.*?)\n<!-- measures:end -->", page, re.S)
    assert table and table.group(1) == markdown_table()


def test_api_reference_is_generated_from_the_docstrings() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_api.py"), "--check"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, "docs/api.md is out of date: run python docs/make_api.py"
