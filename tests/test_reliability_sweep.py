"""The hidden suite of issue 32, in the open: files as real tools and real users make them,
across every subcommand that reads them and the library.

Every case gives either the numbers the same input gives in its clean form (the UTF-16 file
re-encoded to UTF-8, the gzip file decompressed, the comment lines removed: an independent
check, since the clean form takes the ordinary path), or exactly one line on stderr with exit 2
that names the file (and the line where the input has one). In every case no input file is
changed, and nothing is left behind: no partial output, no hidden ``.tmp`` beside a target, no
spill directory in TMPDIR.

Families: encodings, compressions, shapes, outputs, limits (RLIMIT_FSIZE, RLIMIT_NOFILE,
RLIMIT_AS, ``--memory-limit``) and signals (SIGINT, SIGTERM, SIGHUP at random moments of a run,
SIGPIPE). The command runs in this process (`preval.cli.main`) wherever it can; a limit or a
signal needs its own process. The fast profile runs the in-process cases and a few of the
others; the thorough profile (``CI``) runs every delay and every limit.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import settings

import preval
from preval.cli import main
from preval.errors import InputError, PrevalError

ROOT = Path(__file__).resolve().parents[1]
BOM = "\ufeff"
ZSTD = shutil.which("zstd")


def thorough() -> bool:
    return settings.get_current_profile_name() == "thorough"


# --- the clean inputs -------------------------------------------------------------------------
# three queries, two runs; every run line's third line (line 3) is a judged document, so that a
# case that breaks line 3 breaks a line that counts

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d4 1\nq2 0 d5 1\nq3 0 d7 1\n"
RUN_A = (
    "q1 Q0 d1 1 0.9 A\nq1 Q0 d2 2 0.8 A\nq1 Q0 d3 3 0.7 A\nq2 Q0 d5 1 0.95 A\n"
    "q2 Q0 d6 2 0.5 A\nq3 Q0 d8 1 0.3 A\nq3 Q0 d7 2 0.2 A\n"
)
RUN_B = (
    "q1 Q0 d3 1 3 B\nq1 Q0 d1 2 2 B\nq2 Q0 d4 1 5 B\nq2 Q0 d6 2 4 B\nq2 Q0 d5 3 1 B\n"
    "q3 Q0 d7 1 1 B\n"
)
LABELS = {tuple(line.split()[::2][:2]): line.split()[3] for line in QRELS.splitlines()}


def _joined() -> str:
    """Both runs joined with the qrels as one CSV table (system column), line 3 a judged row."""
    rows = ["query,doc,score,label,system"]
    for run in (RUN_A, RUN_B):
        for line in run.splitlines():
            q, _, d, _, s, tag = line.split()
            rows.append(f"{q},{d},{s},{LABELS.get((q, d), '')},{tag}")
    return "\n".join(rows) + "\n"


def _run_table() -> str:
    rows = ["query,doc,score"] + [
        ",".join(line.split()[i] for i in (0, 2, 4)) for line in RUN_A.splitlines()
    ]
    return "\n".join(rows) + "\n"


CLEAN = {"qrels": QRELS, "run": RUN_A, "table": _joined(), "runcsv": _run_table()}
NAMES = {"qrels": "qrels", "run": "runA", "table": "table.csv", "runcsv": "runA.csv"}
TREC = ("run", "qrels")


def _commands(f: dict[str, str]) -> dict[str, list[str]]:
    """Each subcommand's arguments, with the files `f` (role -> path) and outputs in f["dir"]."""
    run, qrels, table, other = f["run"], f["qrels"], f["table"], f["runB"]
    return {
        "evaluate": ["evaluate", run, "--qrels", qrels, "-m", "AP", "-m", "P@5", "-q"],
        "trec": ["trec", "-q", "-m", "map", "-m", "P.5", qrels, run],
        "compare": ["compare", run, other, "--qrels", qrels, "-m", "AP"],
        "power": ["power", run, other, "--qrels", qrels, "-m", "AP"],
        "agreement": ["agreement", run, other, "--qrels", qrels, "-m", "AP", "-m", "P@5"],
        "fuse": ["fuse", run, other, "-o", f"{f['dir']}/fused.run"],
        "evaluate-table": ["evaluate", table, "--by", "system", "-m", "AP", "-m", "P@5", "-q"],
        "compare-table": ["compare", table, "-m", "AP"],
        "power-table": ["power", table, "-m", "AP"],
        "agreement-table": ["agreement", table, "-m", "AP", "-m", "P@5"],
        "fuse-table": ["fuse", f["runcsv"], other, "-o", f"{f['dir']}/fused.csv"],
        "evaluate-qrelscsv": ["evaluate", f["runcsv"], "--qrels", qrels, "-m", "AP", "-q"],
    }


# which commands read each role
READERS = {
    "run": ("evaluate", "trec", "compare", "power", "agreement", "fuse"),
    "qrels": ("evaluate", "trec", "compare", "power", "agreement", "evaluate-qrelscsv"),
    "table": ("evaluate-table", "compare-table", "power-table", "agreement-table"),
    "runcsv": ("fuse-table", "evaluate-qrelscsv"),
}
# the library: each role read by `preval.evaluate`/`preval.collect`/`preval.fuse`
API_READERS = {
    "run": ("evaluate", "collect", "fuse"),
    "qrels": ("evaluate", "collect"),
    "table": ("evaluate", "collect"),
    "runcsv": ("fuse",),
}


def _api(kind: str, f: dict[str, str]) -> pl.DataFrame:
    if kind == "evaluate" and f["role"] == "table":
        return preval.evaluate(f["table"], ["AP", "P@5"], by="system").collect().sort(pl.all())
    if kind == "evaluate":
        return preval.evaluate(f["run"], ["AP", "P@5"], qrels=f["qrels"]).collect()
    if kind == "collect" and f["role"] == "table":
        plan = preval.plan(f["table"], ["AP", "P@5"], by="system")
        return preval.collect(plan).per_query().collect().sort(pl.all())
    if kind == "collect":
        plan = preval.plan(f["run"], ["AP"], qrels=f["qrels"])
        return preval.collect(plan).per_query().collect()
    run = f["runcsv"] if f["role"] == "runcsv" else f["run"]
    return preval.fuse([run, f["runB"]]).collect().sort(pl.all())


# --- cases ------------------------------------------------------------------------------------

SAME, ERROR, EITHER, ANY = "same", "error", "either", "any"


@dataclass(frozen=True)
class Case:
    """A variant of one role's clean file: `make` turns the clean text into the bytes of the file
    (named `suffix` after the clean name); `clean` the text it must read as (default: the clean
    text); `expect` SAME (those numbers), ERROR (one line, exit 2, naming the file, and `line`),
    EITHER (one of the two) or ANY (exit 0, or one line with exit 2); `kind` a file that is no
    regular file ("dir", "missing", "devnull")."""

    name: str
    make: Callable[[str], bytes] | None = None
    roles: tuple[str, ...] = ("run", "qrels", "table", "runcsv")
    suffix: str = ""
    expect: str = SAME
    line: int | None = None
    clean: Callable[[str], str] | None = None
    kind: str = "file"
    skip: tuple[str, ...] = ()  # commands that cannot show this case (their output differs)
    words: tuple[str, ...] = ()  # the error names these too (an encoding, a compression)
    needs: str | None = None
    expect_by: dict[str, str] = field(default_factory=dict)  # per command


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _at(n: int, change: Callable[[str], str]) -> Callable[[str], str]:
    """`text` with line `n` (1-based) changed."""

    def apply(text: str) -> str:
        lines = _lines(text)
        lines[n - 1] = change(lines[n - 1])
        return "".join(lines)

    return apply


def _utf8(f: Callable[[str], str]) -> Callable[[str], bytes]:
    return lambda text: f(text).encode("utf-8")


def _doc_of(line: str) -> str:
    """The doc id of a run, qrels or CSV line."""
    if "," in line:
        return line.split(",")[1]
    return line.split()[2]


def _in_doc(extra: str) -> Callable[[str], str]:
    """A line whose doc id has `extra` appended."""
    return lambda line: line.replace(_doc_of(line), _doc_of(line) + extra, 1)


def _zstd(data: bytes) -> bytes:
    done = subprocess.run([ZSTD, "-q", "-c"], input=data, capture_output=True, check=True)
    return done.stdout


def _zip(data: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "a.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("run.txt", data)
        return path.read_bytes()


def _cut(compress: Callable[[bytes], bytes]) -> Callable[[str], bytes]:
    def make(text: str) -> bytes:
        data = compress((text * 40).encode())
        return data[: len(data) // 2]

    return make


def _long_line(text: str) -> str:
    """A row of query q3 below its others, for a document with a 1 MB id, judged non-relevant."""
    doc = "x" * 2**20
    first = _lines(text)[0]
    if first.startswith("query,doc,score,label"):
        return text + f"q3,{doc},0.1,0,A\n"
    if first.startswith("query,doc,score"):
        return text + f"q3,{doc},0.1\n"
    if len(first.split()) == 4:
        return text + f"q3 0 {doc} 0\n"
    return text + f"q3 Q0 {doc} 3 0.1 A\n"


def _set_field(line: str, index_trec: int, index_csv: int, value: str) -> str:
    if "," in line:
        parts = line.rstrip("\n").split(",")
        parts[index_csv] = value
        return ",".join(parts) + "\n"
    parts = line.split()
    parts[index_trec] = value
    return " ".join(parts) + "\n"


def _score(value: str) -> Callable[[str], str]:
    return lambda line: _set_field(line, 4, 2, value)


def _at_doc(doc: str, change: Callable[[str], str]) -> Callable[[str], str]:
    """`text` with the first line of document `doc` changed (line 1 of a TREC file is line 2
    of a CSV file, after its header)."""

    def apply(text: str) -> str:
        lines = _lines(text)
        i = next(i for i, line in enumerate(lines) if _doc_of(line) == doc)
        lines[i] = change(lines[i])
        return "".join(lines)

    return apply


def _label(value: str) -> Callable[[str], str]:
    return lambda line: _set_field(line, 3, 3, value)


def _comment_at_3(text: str) -> str:
    lines = _lines(text)
    return "".join([*lines[:2], "# a comment line\n", *lines[2:]])


def _no_comment(text: str) -> str:
    return "".join(line for line in _lines(text) if not line.startswith("#"))


def _spaced(text: str) -> str:
    """Fields separated by runs of blanks, with blanks before and after (trec_eval's split)."""
    return "".join("  " + "\t ".join(line.split()) + " \t\n" for line in _lines(text))


CASES: list[Case] = [
    # encodings
    Case("utf8-bom", _utf8(lambda t: BOM + t)),
    Case("utf16le-bom", lambda t: (BOM + t).encode("utf-16-le")),
    Case("utf16be-bom", lambda t: (BOM + t).encode("utf-16-be")),
    Case("utf16-bom-crlf", lambda t: (BOM + t.replace("\n", "\r\n")).encode("utf-16-le")),
    Case("utf16le-no-bom", lambda t: t.encode("utf-16-le"), expect=ERROR, words=("UTF-16",)),
    Case("utf16be-no-bom", lambda t: t.encode("utf-16-be"), expect=ERROR, words=("UTF-16",)),
    Case("utf32-bom", lambda t: t.encode("utf-32"), expect=EITHER),
    Case(
        "latin1-doc",
        lambda t: _at(3, _in_doc("\xe9"))(t).encode("latin-1"),
        expect=ERROR,
        line=3,
        words=("UTF-8",),
    ),
    Case(
        "cp1252-doc", lambda t: _at(3, _in_doc("\u2019"))(t).encode("cp1252"), expect=ERROR, line=3
    ),
    Case("utf8-doc", _utf8(_at(3, _in_doc("\u00e9\u4e2d"))), clean=_at(3, _in_doc("\u00e9\u4e2d"))),
    Case("nul-byte", _utf8(_at(3, _in_doc("\x00"))), expect=ERROR, line=3),
    Case("lone-cr-in-line", _utf8(_at(3, _in_doc("\rX"))), expect=ERROR, line=3),
    Case("lone-cr-line-end", _utf8(_at(3, lambda s: s.replace("\n", "\r"))), expect=ERROR, line=3),
    Case("crlf", _utf8(lambda t: t.replace("\n", "\r\n"))),
    Case("crlf-mixed", _utf8(lambda t: t.replace("\n", "\r\n", 2))),
    Case("cr-only", _utf8(lambda t: t.replace("\n", "\r")), expect=ERROR),
    Case("bom-and-crlf", _utf8(lambda t: BOM + t.replace("\n", "\r\n"))),
    # compressions: gzip and zstd are read (by their first bytes, as Polars reads them), bzip2
    # and xz are decompressed first; a zip archive is refused, by name
    Case("gz", lambda t: gzip.compress(t.encode()), suffix=".gz"),
    Case("gz-bom", lambda t: gzip.compress((BOM + t).encode()), suffix=".gz"),
    Case("gz-crlf", lambda t: gzip.compress(t.replace("\n", "\r\n").encode()), suffix=".gz"),
    Case(
        "gz-utf16",
        lambda t: gzip.compress((BOM + t).encode("utf-16-le")),
        suffix=".gz",
        expect=EITHER,
    ),
    Case(
        "gz-multistream",
        lambda t: gzip.compress(t[:20].encode()) + gzip.compress(t[20:].encode()),
        suffix=".gz",
    ),
    Case(
        "gz-latin1",
        lambda t: gzip.compress(_at(3, _in_doc("\xe9"))(t).encode("latin-1")),
        suffix=".gz",
        expect=ERROR,
        line=3,
    ),
    Case("gz-name-plain", _utf8(str), suffix=".gz"),
    Case("gz-truncated", _cut(gzip.compress), suffix=".gz", expect=ERROR),
    Case("gz-garbage", lambda t: b"\x1f\x8b\x08\x00" + os.urandom(200), suffix=".gz", expect=ERROR),
    Case(
        "gz-empty",
        lambda t: gzip.compress(b""),
        suffix=".gz",
        expect=ERROR,
        expect_by={"trec": ANY, "fuse": ANY, "fuse-table": ANY},
    ),
    Case("gz-binary", lambda t: gzip.compress(bytes(range(256)) * 4), suffix=".gz", expect=ERROR),
    Case("zst", lambda t: _zstd(t.encode()), suffix=".zst", needs="zstd"),
    Case("zst-truncated", _cut(lambda b: _zstd(b)), suffix=".zst", expect=ERROR, needs="zstd"),
    Case("bz2", lambda t: bz2.compress(t.encode()), suffix=".bz2"),
    Case("bz2-truncated", _cut(bz2.compress), suffix=".bz2", expect=ERROR),
    Case("xz", lambda t: lzma.compress(t.encode()), suffix=".xz"),
    Case("xz-truncated", _cut(lzma.compress), suffix=".xz", expect=ERROR),
    Case("xz-name-plain", _utf8(str), suffix=".xz"),
    Case("zip", lambda t: _zip(t.encode()), suffix=".zip", expect=ERROR, words=("zip",)),
    Case("zip-truncated", lambda t: _zip(t.encode())[:40], suffix=".zip", expect=ERROR),
    # shapes
    # an empty run: trec_eval evaluates it (nothing), fusion fuses the others; else an error
    Case(
        "empty",
        lambda t: b"",
        expect=ERROR,
        expect_by={"trec": ANY, "fuse": ANY, "fuse-table": ANY},
    ),
    Case("header-only", lambda t: _lines(t)[0].encode(), roles=("table", "runcsv"), expect=ANY),
    Case("no-final-newline", _utf8(lambda t: t.rstrip("\n"))),
    Case("trailing-blank-lines", _utf8(lambda t: t + "\n\n\n")),
    # (a CSV line of spaces is a row of one empty field: a short row)
    Case("trailing-blank-lines-with-spaces", _utf8(lambda t: t + "\n \t\n  \n"), roles=TREC),
    Case("blank-line-inside", _utf8(lambda t: t.replace("\n", "\n\n", 3))),
    Case("comment-line", _utf8(_comment_at_3), roles=TREC, clean=_no_comment),
    Case("comment-line-csv", _utf8(_comment_at_3), roles=("table", "runcsv"), expect=ERROR, line=3),
    Case("tabs-and-runs-of-blanks", _utf8(_spaced), roles=TREC),
    Case("very-long-line", _utf8(_long_line), skip=("fuse", "fuse-table"), clean=lambda t: t),
    Case(
        "short-line",
        _utf8(
            _at(
                3,
                lambda s: (
                    s.rsplit(s.split()[-1] if "," not in s else s.split(",")[-1], 1)[0].rstrip(" ,")
                    + "\n"
                ),
            )
        ),
        expect=ERROR,
        line=3,
    ),
    Case(
        "huge-integer-label",
        _utf8(_at(2, _label("99999999999999999999"))),
        roles=("qrels", "table"),
        expect=EITHER,
        clean=_at(2, _label("1")),
    ),
    Case(
        "label-word", _utf8(_at(3, _label("yes"))), roles=("qrels", "table"), expect=ERROR, line=3
    ),
    Case("label-float", _utf8(_at(3, _label("1.5"))), roles=("qrels",), expect=ERROR, line=3),
    Case("label-inf", _utf8(_at(3, _label("inf"))), roles=("qrels", "table"), expect=ERROR),
    Case("label-minus-inf", _utf8(_at(3, _label("-inf"))), roles=("qrels", "table"), expect=ERROR),
    Case("label-nan", _utf8(_at(3, _label("nan"))), roles=("qrels", "table"), expect=ERROR),
    Case(
        "score-inf-top",
        _utf8(_at_doc("d1", _score("inf"))),
        roles=("run", "table", "runcsv"),
        expect=EITHER,
        clean=_at_doc("d1", _score("1e300")),
        skip=("fuse", "fuse-table"),
    ),
    Case(
        "score-minus-inf-bottom",
        _utf8(_at_doc("d3", _score("-inf"))),
        roles=("run", "table", "runcsv"),
        expect=EITHER,
        clean=_at_doc("d3", _score("-1e300")),
        skip=("fuse", "fuse-table"),
    ),
    Case("score-nan", _utf8(_at(3, _score("nan"))), roles=("run", "table", "runcsv"), expect=ERROR),
    Case(
        "score-word",
        _utf8(_at(3, _score("abc"))),
        roles=("run", "table", "runcsv"),
        expect=ERROR,
        line=3,
    ),
    Case(
        "score-exponent",
        _utf8(_at_doc("d1", _score("9e-1"))),
        roles=("run", "table", "runcsv"),
        clean=_at_doc("d1", _score("0.9")),
    ),
    Case("duplicate-line", _utf8(lambda t: t + _lines(t)[2]), expect=ERROR),
    Case("directory", kind="dir", expect=ERROR),
    Case("missing", kind="missing", expect=ERROR),
    Case(
        "dev-null",
        kind="devnull",
        expect=ERROR,
        expect_by={"trec": ANY, "fuse": ANY, "fuse-table": ANY},
    ),
]


# each case with each command that reads its role
def _sample(params: list, share: int) -> list:
    """Every parameter under the thorough profile (CI); else one in `share`, spread over the
    list (every case keeps some of its commands), so that a contributor's run stays short."""
    return params if thorough() else params[::share]


# known failures, each with the file and function that would need the change (not this
# sweep's to make): (case, role, command or API kind) -> reason
KNOWN: dict[tuple[str, str, str], str] = {}


def _known(request: pytest.FixtureRequest, case: Case, role: str, command: str) -> None:
    reason = KNOWN.get((case.name, role, command))
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=False))


CLI_PARAMS = _sample(
    [
        pytest.param(case, role, command, id=f"{case.name}-{role}-{command}")
        for case in CASES
        for role in case.roles
        for command in READERS[role]
        if command not in case.skip
    ],
    4,
)
API_PARAMS = _sample(
    [
        pytest.param(case, role, kind, id=f"{case.name}-{role}-api-{kind}")
        for case in CASES
        for role in case.roles
        for kind in API_READERS[role]
        if case.kind == "file" and f"{kind}" not in case.skip
    ],
    16,
)


# --- running a case ---------------------------------------------------------------------------


def _write_inputs(folder: Path, texts: dict[str, str]) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {"dir": str(folder), "runB": str(folder / "runB")}
    (folder / "runB").write_text(RUN_B)
    for role, text in texts.items():
        path = folder / NAMES[role]
        path.write_text(text)
        files[role] = str(path)
    return files


def _place(case: Case, role: str, folder: Path, files: dict[str, str]) -> Path:
    """Put the case's file in the place of `role`'s clean file; return its path."""
    Path(files[role]).unlink()
    path = Path(files[role] + case.suffix)
    if case.kind == "dir":
        path.mkdir()
    elif case.kind == "missing":
        pass
    elif case.kind == "devnull":
        path = Path(os.devnull)
    else:
        path.write_bytes(case.make(CLEAN[role]))
    files[role] = str(path)
    return path


@pytest.fixture
def tmp_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A TMPDIR of the test's own, empty, checked after the case."""
    folder = tmp_path / "TMPDIR"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return folder


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


_golden: dict[tuple[str, str, str], tuple[int, str, bytes]] = {}


def _outputs(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.glob("fused.*")))


def golden(capsys, tmp_path: Path, command: str, role: str, clean: str) -> tuple[int, str, bytes]:
    """The command's exit code, stdout and output file on the clean inputs (`clean` for
    `role`)."""
    key = (command, role, clean)
    if key not in _golden:
        folder = tmp_path / "clean"
        files = _write_inputs(folder, CLEAN | {role: clean})
        code, out, err = _cli(capsys, _commands(files)[command])
        assert code == 0, f"the clean input fails: {err}"
        _golden[key] = (code, out.replace(str(folder), "<dir>"), _outputs(folder))
        shutil.rmtree(folder)
    return _golden[key]


def assert_one_line(err: str, path: Path | str, case: Case) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"not one line:\n{err}"
    (line,) = lines
    assert line.startswith("preval: error: "), line
    assert "Traceback" not in err and "panicked" not in err
    assert str(path) in line or Path(path).name in line, f"the file is not named: {line}"
    if case.line is not None:
        assert re.search(rf"\bline {case.line}\b", line), f"line {case.line} not named: {line}"
    for word in case.words:
        assert word.lower() in line.lower(), f"{word!r} not said: {line}"


def _expect(case: Case, command: str) -> str:
    return case.expect_by.get(command, case.expect)


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize(("case", "role", "command"), CLI_PARAMS)
def test_cli_case(
    request, capsys, tmp_path: Path, tmp_env: Path, case: Case, role: str, command: str
) -> None:
    _known(request, case, role, command)
    if case.needs == "zstd" and ZSTD is None:
        pytest.skip("no zstd command")
    clean = (case.clean or (lambda t: t))(CLEAN[role])
    want = golden(capsys, tmp_path, command, role, clean)
    folder = tmp_path / "case"
    files = _write_inputs(folder, CLEAN)
    path = _place(case, role, folder, files)
    before = _snapshot(folder)
    code, out, err = _cli(capsys, _commands(files)[command])
    expect = _expect(case, command)
    assert "Traceback" not in err, err
    if code == 2 and expect in (ERROR, EITHER, ANY):
        assert_one_line(err, path, case)
    elif expect == ANY:
        assert code == 0, err
    else:
        assert expect in (SAME, EITHER), f"read without an error (exit {code}): {err}\n{out}"
        assert code == 0, err
        assert (code, out.replace(str(folder), "<dir>"), _outputs(folder)) == want, err
    after = _snapshot(folder)
    produced = {n for n in after if n.startswith("fused.")} if code == 0 else set()
    assert {n: v for n, v in after.items() if n not in produced} == before, "files changed"
    assert list(tmp_env.iterdir()) == [], "left in TMPDIR"


@pytest.mark.parametrize(("case", "role", "kind"), API_PARAMS)
def test_api_case(request, tmp_path: Path, tmp_env: Path, case: Case, role: str, kind: str):
    _known(request, case, role, f"api-{kind}")
    if case.needs == "zstd" and ZSTD is None:
        pytest.skip("no zstd command")
    clean = (case.clean or (lambda t: t))(CLEAN[role])
    files = _write_inputs(tmp_path / "clean", CLEAN | {role: clean}) | {"role": role}
    want = _api(kind, files)
    folder = tmp_path / "case"
    files = _write_inputs(folder, CLEAN) | {"role": role}
    path = _place(case, role, folder, files)
    before = _snapshot(folder)
    expect = ANY if case.expect_by else case.expect
    try:
        got = _api(kind, files)
    except (pl.exceptions.ComputeError, OSError) as exc:
        # `preval.evaluate` and `preval.fuse` return a lazy plan, which the caller collects:
        # what Polars' reader finds while it runs is Polars' error (`preval.collect` and the
        # command name the file and line)
        assert kind != "collect" and expect in (ERROR, EITHER, ANY), f"refused: {exc}"
    except PrevalError as exc:
        assert expect in (ERROR, EITHER, ANY), f"refused: {exc}"
        text = str(exc)
        assert "\n" not in text.strip(), text
        assert str(path) in text or path.name in text, f"the file is not named: {text}"
        if case.line is not None:
            assert re.search(rf"\bline {case.line}\b", text), text
        assert isinstance(exc, InputError), type(exc)
    else:
        assert expect in (SAME, EITHER, ANY), "read without an error"
        if expect != ANY:
            assert got.equals(want), (got, want)
    assert _snapshot(folder) == before
    # a stream's copy (a bzip2 file decompressed) lives as long as the process: none here
    assert [p for p in tmp_env.iterdir() if not p.name.startswith("preval-stream-")] == []


# --- files that are not regular files, read by a command in its own process ------------------


# as root, permissions do not bind: the command runs without the capabilities that bypass them
SETPRIV = shutil.which("setpriv")
UNPRIVILEGED = (
    [SETPRIV, "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
    if os.geteuid() == 0 and SETPRIV
    else []
)


def _command(args: list[str], unprivileged: bool = False, **kw) -> subprocess.CompletedProcess[str]:
    if unprivileged and os.geteuid() == 0 and not SETPRIV:
        pytest.skip("root without setpriv: permissions do not bind")
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")} | kw.pop("env", {})
    prefix = UNPRIVILEGED if unprivileged else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "preval", *args], capture_output=True, text=True,
        timeout=120, check=False, env=env, **kw,
    )  # fmt: skip


@pytest.mark.parametrize("role", TREC)
@pytest.mark.parametrize("command", ["evaluate", "trec", "compare"])
def test_a_named_pipe_reads_as_its_file(tmp_path: Path, role: str, command: str) -> None:
    if not thorough() and command != "trec":
        pytest.skip("thorough profile (CI) only")
    folder = tmp_path / "case"
    files = _write_inputs(folder, CLEAN)
    plain = _command(_commands(files)[command], cwd=folder)
    assert plain.returncode == 0, plain.stderr
    Path(files[role]).unlink()
    os.mkfifo(files[role])
    tmp = tmp_path / "TMPDIR"
    tmp.mkdir()
    child = subprocess.Popen(  # the writer: a shell, so that the pipe closes when it is done
        ["sh", "-c", f"printf '%s' \"$0\" > {files[role]}", CLEAN[role]]
    )
    done = _command(_commands(files)[command], cwd=folder, env={"TMPDIR": str(tmp)})
    child.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain.stdout
    assert list(tmp.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "setuid"), reason="POSIX only")
@pytest.mark.parametrize("command", ["evaluate", "trec", "evaluate-table", "fuse"])
def test_an_unreadable_file_is_one_line(tmp_path: Path, command: str) -> None:
    if not thorough() and command not in ("trec", "evaluate-table"):
        pytest.skip("thorough profile (CI) only")
    # as root every file is readable: the command runs as nobody then
    folder = Path(tempfile.mkdtemp(prefix="preval-sweep-"))
    try:
        folder.chmod(0o755)
        files = _write_inputs(folder / "in", CLEAN)
        (folder / "in").chmod(0o777)
        role = "table" if command.endswith("table") else "run"
        Path(files[role]).chmod(0)
        done = _command(_commands(files)[command], cwd=folder, env={"TMPDIR": str(folder)},
                        unprivileged=True)  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert_one_line(done.stderr, files[role], Case("unreadable"))
        assert "ermission" in done.stderr
        assert sorted(p.name for p in folder.iterdir()) == ["in"]
    finally:
        shutil.rmtree(folder)


# --- outputs ----------------------------------------------------------------------------------


def _table_files(folder: Path) -> dict[str, str]:
    return _write_inputs(folder, CLEAN)


OUTPUT_COMMANDS = {
    "evaluate": lambda f, o: [
        "evaluate",
        f["table"],
        "--by",
        "system",
        "-m",
        "AP",
        "-q",
        "--per-query",
        o,
    ],
    "evaluate-summary": lambda f, o: [
        "evaluate",
        f["table"],
        "--by",
        "system",
        "-m",
        "AP",
        "-q",
        "--summary",
        o,
    ],
    "compare": lambda f, o: ["compare", f["table"], "-m", "AP", "--output", o],
    "power": lambda f, o: ["power", f["table"], "-m", "AP", "-o", o],
    "agreement": lambda f, o: ["agreement", f["table"], "-m", "AP", "-m", "P@5", "-o", o],
    "fuse": lambda f, o: ["fuse", f["run"], f["runB"], "-o", o],
}
# each target for a command whose input is `f[main]` (fuse reads runs, the others a table)
TARGETS = {
    "missing-dir": lambda f, main: f"{f['dir']}/no/such/out.csv",
    "existing-dir": lambda f, main: f"{f['dir']}/adir.csv",
    "the-input": lambda f, main: f[main],
    "the-input-by-another-name": lambda f, main: f"{f['dir']}/../case/./{Path(f[main]).name}",
    "a-symlink-to-the-input": lambda f, main: f"{f['dir']}/link-{main}",
    "the-second-run": lambda f, main: f["runB"] if main == "run" else f"{f['dir']}/adir.csv",
}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("command", list(OUTPUT_COMMANDS))
def test_an_output_that_cannot_be_written_is_one_line(
    capsys, tmp_path: Path, tmp_env: Path, command: str, target: str
) -> None:
    folder = tmp_path / "case"
    files = _table_files(folder)
    (folder / "adir.csv").mkdir()
    main = "run" if command == "fuse" else "table"
    (folder / f"link-{main}").symlink_to(files[main])
    out = TARGETS[target](files, main)
    before = _snapshot(folder)
    code, _, err = _cli(capsys, OUTPUT_COMMANDS[command](files, out))
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("preval: error: "), err
    assert _snapshot(folder) == before, "a file changed"
    assert list(tmp_env.iterdir()) == []


def test_two_outputs_on_one_path_are_one_line(capsys, tmp_path: Path, tmp_env: Path) -> None:
    folder = tmp_path / "case"
    files = _table_files(folder)
    before = _snapshot(folder)
    out = str(folder / "out.csv")
    args = ["evaluate", files["table"], "-m", "AP", "-q", "--per-query", out, "--summary", out]
    code, _, err = _cli(capsys, args)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert _snapshot(folder) == before


@pytest.mark.parametrize("command", ["evaluate", "fuse", "compare"])
def test_a_read_only_folder_is_one_line_naming_the_target(tmp_path: Path, command: str) -> None:
    if not thorough() and command != "evaluate":
        pytest.skip("thorough profile (CI) only")
    folder = Path(tempfile.mkdtemp(prefix="preval-sweep-"))
    try:
        folder.chmod(0o755)
        files = _write_inputs(folder / "in", CLEAN)
        shut = folder / "shut"
        shut.mkdir(mode=0o555)
        shut.chmod(0o555)
        out = str(shut / "out.csv")
        args = {
            "evaluate": ["evaluate", files["table"], "-m", "AP", "-q", "--per-query", out],
            "fuse": ["fuse", files["run"], files["runB"], "-o", out],
            "compare": ["compare", files["table"], "-m", "AP", "--output", out],
        }[command]
        done = _command(args, cwd=folder, env={"TMPDIR": str(folder / "in")}, unprivileged=True)
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert out in line and ".tmp" not in line, line
        assert list(shut.iterdir()) == []
    finally:
        shutil.rmtree(folder)


# --- limits -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A run of ~2M rows (200k in the fast profile) as Parquet and as a TREC run with qrels."""
    folder = tmp_path_factory.mktemp("big")
    rows = 2_000_000 if thorough() else 200_000
    rng = np.random.default_rng(7)
    label = (rng.random(rows) > 0.9).astype(np.int64)
    frame = pl.DataFrame(
        {
            "query": np.arange(rows) // 100,
            "doc": np.arange(rows),
            "score": np.round(rng.random(rows) + label, 4),
            "label": label,
        }
    ).with_columns(pl.format("q{}", "query").alias("query"), pl.format("d{}", "doc").alias("doc"))
    frame.write_parquet(folder / "big.parquet", row_group_size=50_000)
    ranked = frame.with_columns(
        pl.col("score").rank("ordinal", descending=True).over("query").alias("rank")
    )
    ranked.select(
        "query", pl.lit("Q0").alias("q0"), "doc", "rank", "score", pl.lit("t").alias("tag")
    ).write_csv(folder / "big.run", separator=" ", include_header=False)
    frame.filter(pl.col("label") > 0).select(
        "query", pl.lit("0").alias("iter"), "doc", "label"
    ).write_csv(folder / "big.qrels", separator=" ", include_header=False)
    return {"parquet": folder / "big.parquet", "run": folder / "big.run",
            "qrels": folder / "big.qrels"}  # fmt: skip


def _limited(args: list[str], folder: Path, limits: dict[int, int]) -> subprocess.CompletedProcess:
    def apply() -> None:
        for which, value in limits.items():
            resource.setrlimit(which, (value, value))

    # (no bytecode written under the limit: CPython would leave a cut .pyc for the next run)
    env = {"TMPDIR": str(folder / "tmp"), "PYTHONDONTWRITEBYTECODE": "1"}
    return _command(args, cwd=folder, env=env, preexec_fn=apply)


def _work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    (folder / "tmp").mkdir(parents=True)
    return folder


def _assert_finished_or_one_line(done, folder: Path, outputs: set[str], *words: str) -> None:
    assert "Traceback" not in done.stderr and "panicked" not in done.stderr, done.stderr
    left = {p.name for p in folder.iterdir()} - {"tmp"}
    assert list((folder / "tmp").iterdir()) == [], "left in TMPDIR"
    if done.returncode == 0:
        assert left == outputs, left
        return
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("preval: error: "), done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert left == set(), left


FSIZE = [4096] if not thorough() else [1, 4096, 100_000, 1_000_000]


@pytest.mark.parametrize("fsize", FSIZE)
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_file_size_limit_is_one_line_and_no_partial_output(big, tmp_path, fsize, suffix):
    folder = _work(tmp_path)
    out = folder / f"pq{suffix}"
    args = ["evaluate", str(big["parquet"]), "-m", "AP", "-q", "--per-query", str(out)]
    done = _limited(args, folder, {resource.RLIMIT_FSIZE: fsize})
    # a limit below the input's size stops even its reader (the kernel's EFBIG): either way
    # one line that names the limit, and no output; or, with room enough, the whole output
    _assert_finished_or_one_line(done, folder, {out.name}, "ulimit -f")


@pytest.mark.parametrize("nofile", [16, 20, 32])
@pytest.mark.parametrize("command", ["trec", "evaluate", "fuse"])
def test_few_file_descriptors_finish_or_say_so(tmp_path: Path, nofile: int, command: str):
    if not thorough() and (nofile != 20 or command != "trec"):
        pytest.skip("thorough profile (CI) only")
    folder = _work(tmp_path)
    files = _write_inputs(tmp_path / "in", CLEAN) | {"dir": str(folder)}
    plain = _command(_commands(files)[command], cwd=folder)
    assert plain.returncode == 0, plain.stderr
    (folder / "fused.run").unlink(missing_ok=True)
    done = _limited(_commands(files)[command], folder, {resource.RLIMIT_NOFILE: nofile})
    _assert_finished_or_one_line(done, folder, {"fused.run"} if command == "fuse" else set())
    if done.returncode == 0:
        assert done.stdout == plain.stdout


AS = [1536, 1024, 512] if thorough() else [512]


@pytest.mark.parametrize("space_mb", AS)
@pytest.mark.parametrize("what", ["parquet", "trec"])
def test_an_address_space_limit_finishes_or_is_one_line(big, tmp_path, space_mb, what):
    folder = _work(tmp_path)
    out = folder / "pq.parquet"
    if what == "parquet":
        args = ["evaluate", str(big["parquet"]), "-m", "AP", "-q", "--per-query", str(out)]
    else:
        args = ["trec", "-m", "map", str(big["qrels"]), str(big["run"])]
    done = _limited(args, folder, {resource.RLIMIT_AS: space_mb * 2**20})
    outputs = {out.name} if what == "parquet" else set()
    _assert_finished_or_one_line(done, folder, outputs)
    if space_mb <= 512:
        assert done.returncode == 2 and "limit" in done.stderr, done.stderr


@pytest.mark.parametrize("what", ["evaluate", "trec", "fuse"])
def test_a_memory_limit_below_the_minimum_is_one_line(big, tmp_path: Path, what: str) -> None:
    if not thorough() and what != "evaluate":
        pytest.skip("thorough profile (CI) only")
    folder = _work(tmp_path)
    out = folder / "out.parquet"
    args = {
        "evaluate": ["evaluate", str(big["parquet"]), "-m", "AP", "--per-query", str(out)],
        "trec": ["trec", "-m", "map", str(big["qrels"]), str(big["run"])],
        "fuse": ["fuse", str(big["run"]), str(big["run"]), "-o", str(out)],
    }[what]
    done = _limited([*args, "--memory-limit", "1MB"], folder, {})
    assert done.returncode == 2, done.stderr
    _assert_finished_or_one_line(done, folder, set(), "memory limit")


# --- signals ----------------------------------------------------------------------------------

SIGNALS = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}
# Ctrl-C while the interpreter itself starts (its site module, its streams): CPython's words
EARLY = "Fatal Python error: init_"
# the package's first lines, before its handlers are in place (`preval._quiet_start`)
FIRST_LINES = (f"preval{os.sep}__init__.py", f"preval{os.sep}_quiet_start.py")


def _before_preval(err: str) -> bool:
    """Whether `err` is CPython's, for a Ctrl-C before preval's handlers could be installed."""
    if err.startswith(EARLY):
        return True
    lines = err.strip().splitlines()
    if not lines or lines[-1] != "KeyboardInterrupt":
        return False
    # each frame of preval's is the handlers' module, or the package's line that imports it
    frames = [
        (line, lines[i + 1] if i + 1 < len(lines) else "")
        for i, line in enumerate(lines)
        if "File " in line and f"{os.sep}preval{os.sep}" in line
    ]
    return all(
        FIRST_LINES[1] in line or (FIRST_LINES[0] in line and "_quiet_start" in source)
        for line, source in frames
    )


# seconds after the start: before Polars is imported, while the input is read, while the
# per-query Parquet is written and renamed (where each falls depends on the machine: random
# moments over the whole run cover them)
DELAYS = [0.05, 0.8] if not thorough() else [0.0, 0.02, 0.1, 0.3, 0.6, 1.0, 1.5, 2.5]
FAST_SKIPS = {("SIGTERM", 0.05), ("SIGHUP", 0.05)}  # (a contributor's run: 4 of the 6)


def _signalled(args: list[str], folder: Path, signum: int, delay: float):
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", ""),
           "TMPDIR": str(folder / "tmp")}  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "preval", *args], cwd=folder, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(delay)
    child.send_signal(signum)
    out, err = child.communicate(timeout=120)
    return child.returncode, out, err


@pytest.mark.parametrize("delay", DELAYS)
@pytest.mark.parametrize("name", list(SIGNALS))
@pytest.mark.parametrize("engine", ["auto", "partitioned"])
def test_a_signal_at_any_moment_leaves_nothing(big, tmp_path, name, delay, engine) -> None:
    if not thorough() and (engine == "partitioned" or (name, delay) in FAST_SKIPS):
        pytest.skip("thorough profile (CI) only")
    folder = _work(tmp_path)
    out = folder / "pq.parquet"
    args = ["evaluate", str(big["parquet"]), "-m", "AP", "-m", "nDCG@10", "-q",
            "--per-query", str(out), "--engine", engine]  # fmt: skip
    jitter = random.Random(f"{name}{delay}").uniform(0, 0.05)
    code, _, err = _signalled(args, folder, getattr(signal, name), delay + jitter)
    if _before_preval(err):
        # Ctrl-C while CPython itself starts (its site module, runpy), before the first line
        # of preval's that installs the quiet handlers can run: CPython's own words (a "Fatal
        # Python error", or its KeyboardInterrupt and stack); nothing was made
        assert {p.name for p in folder.iterdir()} == {"tmp"}
        assert list((folder / "tmp").iterdir()) == []
        return
    assert "Traceback" not in err and "panicked" not in err, err
    assert list((folder / "tmp").iterdir()) == [], "spill left in TMPDIR"
    left = {p.name for p in folder.iterdir()} - {"tmp"}
    assert code in (0, SIGNALS[name], -getattr(signal, name)), (code, err)
    assert len(err.strip().splitlines()) <= 1, err
    # nothing, or the whole output: the signal came after it was renamed into place (a
    # signal held back during the renames, or one during the interpreter's exit, which the
    # start-up handlers end with 128 + its number); never a part or a temporary file
    assert left <= {out.name}, left
    if left:
        queries = pl.scan_parquet(big["parquet"]).select(pl.col("query").n_unique()).collect()
        assert pl.read_parquet(out).height == queries.item()
    if code == SIGNALS[name] and err:
        assert ("no output written" in err) == (not left), err


@pytest.mark.parametrize("command", ["trec-per-query", "trec-summary"])
def test_a_closed_pipe_is_quiet(big, tmp_path: Path, command: str) -> None:
    if not thorough() and command != "trec-per-query":
        pytest.skip("thorough profile (CI) only")
    # `preval trec ... | head -1`: the reader leaves after one line, of many or of a few
    per_query = ["-q"] if command == "trec-per-query" else []
    args = ["trec", *per_query, "-m", "map", "-m", "P.5", str(big["qrels"]), str(big["run"])]
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", ""),
           "TMPDIR": str(tmp_path)}  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "preval", *args], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    first = child.stdout.readline()
    child.stdout.close()
    err = child.stderr.read().decode()
    code = child.wait(timeout=120)
    assert first
    assert code in (0, 141, -signal.SIGPIPE), (code, err)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert list(tmp_path.iterdir()) == []
