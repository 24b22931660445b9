"""TREC run/qrels readers (`scan_run`, `scan_qrels`, `run_names`) and `preval trec` input handling.

Readers: columns and dtypes, whitespace, extra and ignored fields, gzip, comments, one system
per run file. Bad input: every malformed line is an `InputError` (raised when the frame is
collected) naming the file, the line number and the line, and on the command line exit 2 with
one ``preval: error:`` line and no traceback. Then the ``-m`` grammar and the output options
(``-n``, ``--table``, several runs).

Most tests call `preval.cli.main` in-process with capsys; a few run ``python -m preval`` for the
real exit code and the absence of a traceback.
"""

from __future__ import annotations

import gzip
import itertools
import pickle
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import preval
from preval import io
from preval import trec as trec_module
from preval.cli import main
from tests.commands import python_m
from tests.profiles import examples
from tests.test_cli import cli

QRELS = """\
q1 0 d1 1
q1 0 d2 0
q1 0 d3 2
q1 0 d#4 1
q2 0 d1 0
q2 0 d5 1
q3 0 d6 1
"""
RUN_A = """\
q1 Q0 d1 1 0.9 runA
q1 Q0 d2 2 0.8 runA
q1 Q0 d#4 3 0.7 runA
q1 Q0 d9 4 0.6 runA
q2 Q0 d5 1 0.5 runA
q2 Q0 d7 2 0.4 runA
q4 Q0 d1 1 1.0 runA
"""
RUN_B = """\
q1 Q0 d3 1 2.0 runB
q1 Q0 d1 2 1.0 runB
q3 Q0 d6 1 3.5 runB
q3 Q0 d2 2 0.5 runB
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def write_gz(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    return path


def assert_one_line_error(rc: int, err: str) -> str:
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("preval: error:")
    return lines[0]


def lines_of(out: str) -> list[tuple[str, ...]]:
    """trec_eval output -> (measure, query, value) or (run, measure, query, value) tuples."""
    return [tuple(field.rstrip(" ") for field in line.split("\t")) for line in out.splitlines()]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "qrels": write(tmp_path / "qrels.txt", QRELS),
        "a": write(tmp_path / "a.run", RUN_A),
        "b": write(tmp_path / "b.run", RUN_B),
    }


def frame(lf: pl.LazyFrame) -> pl.DataFrame:
    cols = [c for c in ("system", "query", "doc") if c in lf.collect_schema()]
    return lf.collect().sort(cols)


# ---------------------------------------------------------------------------------------------
# Readers
# ---------------------------------------------------------------------------------------------


def test_scan_run_columns_and_dtypes(files: dict[str, Path]) -> None:
    lf = io.scan_run(files["a"])
    assert isinstance(lf, pl.LazyFrame)
    expected = {"system": pl.String, "query": pl.String, "doc": pl.String, "score": pl.Float64}
    assert dict(lf.collect_schema()) == expected
    df = lf.collect()
    assert dict(df.schema) == expected
    assert df.height == 7
    assert df["system"].unique().to_list() == ["runA"]
    assert df.filter(pl.col("doc") == "d#4")["score"].to_list() == [0.7]


def test_scan_qrels_columns_and_dtypes(files: dict[str, Path]) -> None:
    lf = io.scan_qrels(files["qrels"])
    expected = {"query": pl.String, "doc": pl.String, "label": pl.Int64}
    assert dict(lf.collect_schema()) == expected
    df = lf.collect()
    assert dict(df.schema) == expected
    assert df.height == 7
    assert df.filter(pl.col("doc") == "d3")["label"].to_list() == [2]


def test_ids_stay_strings(tmp_path: Path) -> None:
    """Numeric-looking ids keep their text: '007' is not 7."""
    run = write(tmp_path / "run", "007 Q0 0042 1 1 t\n")
    qrels = write(tmp_path / "qrels", "007 0 0042 1\n")
    assert io.scan_run(run).collect().row(0) == ("t", "007", "0042", 1.0)
    assert io.scan_qrels(qrels).collect().row(0) == ("007", "0042", 1)


@settings(max_examples=examples(30), deadline=None)
@given(
    seps=st.lists(st.sampled_from([" ", "\t", "   ", " \t", "\t \t"]), min_size=5, max_size=5),
    lead=st.sampled_from(["", " ", "\t", "  \t"]),
    trail=st.sampled_from(["", " ", "\t", "\r"]),
)
def test_whitespace_variants_read_the_same(
    tmp_path_factory: pytest.TempPathFactory, seps: list[str], lead: str, trail: str
) -> None:
    """Fields split on any run of spaces/tabs; leading/trailing blanks and CR are dropped."""
    d = tmp_path_factory.mktemp("ws")
    run_text = "".join(
        lead
        + "".join(f + s for f, s in zip(line.split()[:5], seps, strict=True))
        + line.split()[5]
        + trail
        + "\n"
        for line in RUN_A.splitlines()
    )
    qrels_text = "".join(
        lead
        + "".join(f + s for f, s in zip(line.split()[:3], seps[:3], strict=True))
        + line.split()[3]
        + trail
        + "\n"
        for line in QRELS.splitlines()
    )
    plain_run = write(d / "plain.run", RUN_A)
    plain_qrels = write(d / "plain.qrels", QRELS)
    odd_run = write(d / "odd.run", run_text)
    odd_qrels = write(d / "odd.qrels", qrels_text)
    assert frame(io.scan_run(odd_run)).equals(frame(io.scan_run(plain_run)))
    assert frame(io.scan_qrels(odd_qrels)).equals(frame(io.scan_qrels(plain_qrels)))
    assert io.run_names([odd_run]) == ["runA"]


def test_extra_run_fields_are_ignored(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    """trec_eval reads six fields of a run line and ignores the rest."""
    extra = "".join(
        f"{line} extra{i}{' more stuff' * (i % 2)}\n" for i, line in enumerate(RUN_A.splitlines())
    )
    path = write(tmp_path / "extra.run", extra)
    assert frame(io.scan_run(path)).equals(frame(io.scan_run(files["a"])))
    _, plain, _ = cli(capsys, "trec", "-q", "-m", "all_trec", files["qrels"], files["a"])
    rc, out, err = cli(capsys, "trec", "-q", "-m", "all_trec", files["qrels"], path)
    assert rc == 0, err
    assert out == plain


@pytest.mark.parametrize("ranks", ["shuffled", "constant", "text"])
def test_rank_field_and_line_order_are_ignored(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path, ranks: str
) -> None:
    """Documents are ranked by score (then docno), never by the rank field or file order."""
    rows = [line.split() for line in RUN_A.splitlines()]
    rnd = random.Random(5)
    rnd.shuffle(rows)
    new_ranks = {
        "shuffled": rnd.sample(range(1, 100), len(rows)),
        "constant": [1] * len(rows),
        "text": ["rank"] * len(rows),
    }[ranks]
    text = "".join(
        f"{q} {q0} {d} {r} {s} {t}\n"
        for (q, q0, d, _, s, t), r in zip(rows, new_ranks, strict=True)
    )
    path = write(tmp_path / "shuffled.run", text)
    _, plain, _ = cli(capsys, "trec", "-q", "-m", "all_trec", files["qrels"], files["a"])
    rc, out, err = cli(capsys, "trec", "-q", "-m", "all_trec", files["qrels"], path)
    assert rc == 0, err
    assert out == plain


def test_gzip_files_read_the_same(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    run_gz = write_gz(tmp_path / "a.run.gz", RUN_A)
    qrels_gz = write_gz(tmp_path / "qrels.txt.gz", QRELS)
    assert frame(io.scan_run(run_gz)).equals(frame(io.scan_run(files["a"])))
    assert frame(io.scan_qrels(qrels_gz)).equals(frame(io.scan_qrels(files["qrels"])))
    assert io.run_names([run_gz]) == ["runA"]  # the runid is read from the compressed file
    _, plain, _ = cli(
        capsys, "trec", "-q", "-m", "all_trec", files["qrels"], files["a"], files["b"]
    )
    rc, out, err = cli(capsys, "trec", "-q", "-m", "all_trec", qrels_gz, run_gz, files["b"])
    assert rc == 0, err
    assert out == plain


def test_comments_and_blank_lines_are_skipped(files: dict[str, Path], tmp_path: Path) -> None:
    """'# ...' lines (also indented) and blank lines are skipped; '#' inside a docno is kept."""
    run_lines = RUN_A.splitlines()
    run_text = "\n".join(
        ["# a run", "", *run_lines[:3], "   # indented comment", "  \t ", *run_lines[3:], "#"]
    )
    qrels_lines = QRELS.splitlines()
    qrels_text = "\n".join(["# judgments", *qrels_lines[:2], "", "\t", *qrels_lines[2:], ""])
    run = write(tmp_path / "commented.run", run_text + "\n")
    qrels = write(tmp_path / "commented.qrels", qrels_text)
    got_run = frame(io.scan_run(run))
    assert got_run.equals(frame(io.scan_run(files["a"])))
    assert "d#4" in got_run["doc"].to_list()
    got_qrels = frame(io.scan_qrels(qrels))
    assert got_qrels.equals(frame(io.scan_qrels(files["qrels"])))
    assert "d#4" in got_qrels["doc"].to_list()
    assert io.run_names([run]) == ["runA"]  # the runid of the first non-comment line


def test_several_run_files_one_system_each(files: dict[str, Path]) -> None:
    assert io.run_names([files["a"], files["b"]]) == ["runA", "runB"]
    df = io.scan_run([files["a"], files["b"]]).collect()
    counts = dict(df.group_by("system").len().iter_rows())
    assert counts == {"runA": 7, "runB": 4}


def test_same_tag_in_two_files_names_systems_by_path(
    files: dict[str, Path], tmp_path: Path
) -> None:
    copy = write(tmp_path / "copy_of_a.run", RUN_A)
    names = io.run_names([files["a"], copy])
    assert names == [str(files["a"]), str(copy)]
    df = io.scan_run([files["a"], copy]).collect()
    assert sorted(df["system"].unique().to_list()) == sorted(names)
    assert df.height == 14


def test_same_tag_cli_prefixes_lines_with_paths(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    copy = write(tmp_path / "copy_of_a.run", RUN_A)
    rc, out, err = cli(capsys, "trec", "-m", "runid", "-m", "map", files["qrels"], files["a"], copy)
    assert rc == 0, err
    rows = lines_of(out)
    assert {r[0] for r in rows} == {str(files["a"]), str(copy)}
    # each block is trec_eval's output for its file, prefixed: the runid is the file's tag
    # (trec_eval -c -m runid qrels.txt copy_of_a.run -> "runid                 \tall\trunA")
    assert (str(copy), "runid", "all", "runA") in rows
    assert (str(files["a"]), "runid", "all", "runA") in rows
    maps = {r[0]: r[3] for r in rows if r[1] == "map"}
    assert maps[str(files["a"])] == maps[str(copy)]


def test_scan_run_takes_the_names_read_once(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`io.RunFiles` name the systems without reading a tag; plain paths, `scan_run` reads
    the tags as before."""
    from preval.fusion.core import stack

    runs = [files["a"], files["b"]]
    by_tag = frame(io.scan_run(runs))
    assert sorted(by_tag["system"].unique()) == ["runA", "runB"]
    named = io.RunFiles(runs, ["one", "two"])
    assert pickle.loads(pickle.dumps(named)).names == ("one", "two")
    reads: list[Path] = []
    monkeypatch.setattr(io, "_first_tag", lambda path: reads.append(path))
    got = frame(io.scan_run(named))
    assert got.drop("system").equals(by_tag.drop("system"))
    assert got.filter(pl.col("system") == "one").height == RUN_A.count("\n")
    stack({"mine": files["a"]})  # a fused run named by its caller: its tag is not read
    assert reads == []
    with pytest.raises(preval.InputError, match="1 names for 2 run files"):
        io.RunFiles(runs, ["one"])


@pytest.mark.parametrize(
    "command",
    [
        ["trec", "-m", "runid", "-m", "map", "{qrels}", "{a}", "{b}"],
        ["trec", "-m", "runid", "-m", "map", "{qrels}", "{a}", "{copy}"],  # named by path
        ["evaluate", "{a}", "{b}", "--qrels", "{qrels}", "-m", "AP"],
        ["compare", "{a}", "{b}", "--qrels", "{qrels}", "-m", "AP"],
        ["plot", "roc", "{a}", "{b}", "--qrels", "{qrels}", "-o", "{picture}"],  # 2 readers
    ],
)
def test_a_command_reads_each_run_files_tag_once(
    capsys: pytest.CaptureFixture[str],
    files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    """The input stage reads each run file's tag (first line) once and passes it on: the
    plan's reader and the runid line do not read it again."""
    paths = {**files, "copy": write(tmp_path / "copy_of_a.run", RUN_A)}
    paths["picture"] = tmp_path / "roc.svg"
    reads: list[Path] = []
    first_tag = io._first_tag

    def counted(path: Path) -> str | None:
        reads.append(Path(path))
        return first_tag(path)

    monkeypatch.setattr(io, "_first_tag", counted)
    args = [word.format(**{k: str(p) for k, p in paths.items()}) for word in command]
    rc, out, err = cli(capsys, *args)
    assert rc == 0, err
    runs = [a for a in args if a.endswith(".run")]
    assert sorted(map(str, reads)) == sorted(runs)  # each once
    if command[0] == "trec":  # the runid still is each file's tag, as trec_eval prints it
        runids = [r[-1] for r in lines_of(out) if r[-3] == "runid"]
        assert sorted(runids) == sorted("runB" if "b.run" in r else "runA" for r in runs)


# ---------------------------------------------------------------------------------------------
# Bad input: InputError naming file, line number and content; exit 2, one line, no traceback
# ---------------------------------------------------------------------------------------------

# kind, file text, bad line number (physical: comments and blank lines count)
BAD = {
    "run-5-fields": ("run", "# c\nq1 Q0 d1 1 0.5 t\n\nq1 Q0 d2 2 0.4\n", 4),
    "run-score-abc": ("run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 abc t\n", 2),
    "qrels-3-fields": ("qrels", "q1 0 d1 1\n# c\nq1 0 d2\n", 3),
    "qrels-5-fields": ("qrels", "q1 0 d1 1\nq1 0 d2 1 9\n", 2),
    "qrels-rel-x": ("qrels", "q1 0 d1 x\n", 1),
    "qrels-rel-1.5": ("qrels", "q1 0 d1 1\n\n\nq1 0 d2 1.5\n", 4),
}


def _bad_files(tmp_path: Path, case: str) -> tuple[str, Path, Path, Path, int, str]:
    kind, text, lineno = BAD[case]
    bad = write(tmp_path / f"bad_{kind}.txt", text)
    if kind == "run":
        run, qrels = bad, write(tmp_path / "qrels.txt", "q1 0 d1 1\n")
    else:
        run, qrels = write(tmp_path / "run.txt", "q1 Q0 d1 1 1.0 t\n"), bad
    content = text.splitlines()[lineno - 1]
    return kind, bad, run, qrels, lineno, content


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_line_is_an_input_error_when_collected(tmp_path: Path, case: str) -> None:
    kind, bad, _, _, lineno, content = _bad_files(tmp_path, case)
    lf = io.scan_run(bad) if kind == "run" else io.scan_qrels(bad)  # lazy: no error yet
    with pytest.raises(preval.InputError) as info:
        lf.collect()
    message = str(info.value)
    assert str(bad) in message
    assert f"line {lineno}" in message
    assert repr(content) in message


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_line_cli_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    _, bad, run, qrels, lineno, content = _bad_files(tmp_path, case)
    rc, out, err = cli(capsys, "trec", qrels, run)
    message = assert_one_line_error(rc, err)
    assert str(bad) in message
    assert f"line {lineno}" in message
    assert repr(content) in message
    assert out == ""


@pytest.mark.parametrize("spacing", [" ", "\t", "  "])  # read together, or split
@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_malformed_lines_are_counted_in_all_and_the_first_is_shown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, spacing: str
) -> None:
    # a stream hands the line check batches in no set order: the message must still give
    # the file's first malformed line and the count over the whole file, not over a batch
    n = 60_000  # many batches
    good = ["q{} Q0 d{} 1 0.5 t", "q{} 0 d{} 1"][kind == "qrels"]
    lines = [good.format(i // 100, i).replace(" ", spacing) for i in range(n)]
    bad_at = [3, *range(1_000, n, 7)]  # 1-based line numbers
    for lineno in bad_at:
        lines[lineno - 1] = lines[lineno - 1].rsplit(spacing, 1)[0]  # a field short
    bad = write(tmp_path / f"bad.{kind}", "\n".join(lines) + "\n")
    other = write(tmp_path / "other.txt", ["q1 0 d1 1\n", "q1 Q0 d1 1 1.0 t\n"][kind == "qrels"])
    run, qrels = (bad, other) if kind == "run" else (other, bad)
    rc, _, err = cli(capsys, "trec", qrels, run)
    message = assert_one_line_error(rc, err)
    assert "line 3: expected" in message, message
    assert f"({len(bad_at)} malformed lines in all)" in message, message


def test_malformed_line_in_gzip_file_is_quoted(tmp_path: Path) -> None:
    bad = write_gz(tmp_path / "bad.run.gz", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 zz t\n")
    with pytest.raises(preval.InputError, match=r"line 2.*'q1 Q0 d2 2 zz t'"):
        io.scan_run(bad).collect()


@pytest.mark.parametrize("case", ["run-5-fields", "qrels-rel-1.5"])
def test_malformed_line_subprocess_has_no_traceback(tmp_path: Path, case: str) -> None:
    _, bad, run, qrels, lineno, _ = _bad_files(tmp_path, case)
    proc = python_m("trec", qrels, run)
    message = assert_one_line_error(proc.returncode, proc.stderr)
    assert str(bad) in message
    assert f"line {lineno}" in message
    assert proc.stdout == ""


DUP_RUN = "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4 t\nq1 Q0 d1 3 0.3 t\n"


def test_duplicate_doc_in_run_is_a_duplicate_error(tmp_path: Path) -> None:
    run = write(tmp_path / "dup.run", DUP_RUN)
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\n")
    lf = preval.evaluate(io.scan_run(run), ["AP"], qrels=io.scan_qrels(qrels), by="system")
    with pytest.raises(preval.DuplicateError) as info:
        lf.collect()
    assert "'q1'" in str(info.value)
    assert "'d1'" in str(info.value)


def test_duplicate_doc_in_run_cli_names_the_run_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = write(tmp_path / "good.run", "q1 Q0 d1 1 0.5 good\n")
    run = write(tmp_path / "dup.run", DUP_RUN)
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\n")
    rc, out, err = cli(capsys, "trec", qrels, good, run)
    message = assert_one_line_error(rc, err)
    assert str(run) in message
    assert str(good) not in message
    assert "'q1'" in message and "'d1'" in message
    assert out == ""


def test_duplicate_error_hint_is_usable_with_trec(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = write(tmp_path / "dup.run", DUP_RUN)
    qrels = write(tmp_path / "qrels", "q1 0 d1 1\n")
    rc, _, err = cli(capsys, "trec", qrels, run)
    assert rc == 2
    assert "--duplicates" in err  # the hint must then work
    assert main(["trec", "--duplicates", "max", str(qrels), str(run)]) == 0
    assert "num_ret               \tall\t2" in capsys.readouterr().out


def test_duplicate_in_qrels_is_a_duplicate_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = write(tmp_path / "run", "q1 Q0 d1 1 0.5 t\n")
    qrels = write(tmp_path / "dup.qrels", "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 0\n")
    lf = preval.evaluate(io.scan_run(run), ["AP"], qrels=io.scan_qrels(qrels), by="system")
    with pytest.raises(preval.DuplicateError, match=r"'q1'.*'d1'"):
        lf.collect()
    rc, out, err = cli(capsys, "trec", qrels, run)
    message = assert_one_line_error(rc, err)
    assert "qrels" in message and "'d1'" in message
    assert out == ""


@pytest.mark.parametrize("missing", ["run", "qrels"])
def test_missing_file(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path, missing: str
) -> None:
    nope = tmp_path / f"no_such_{missing}.txt"
    with pytest.raises(preval.InputError, match="not found"):
        (io.scan_run(nope) if missing == "run" else io.scan_qrels(nope)).collect()
    args = [files["qrels"], nope] if missing == "run" else [nope, files["a"]]
    rc, out, err = cli(capsys, "trec", *args)
    message = assert_one_line_error(rc, err)
    assert str(nope) in message
    assert out == ""


def test_missing_run_file_subprocess_has_no_traceback(
    files: dict[str, Path], tmp_path: Path
) -> None:
    nope = tmp_path / "no_such.run"
    proc = python_m("trec", files["qrels"], files["a"], nope)
    message = assert_one_line_error(proc.returncode, proc.stderr)
    assert str(nope) in message
    assert proc.stdout == ""


def test_empty_run_file_warns_exits_0_and_prints_only_runid(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    """Observed: an empty run is an empty frame; `preval trec` warns on stderr that no query
    has results and judgments, exits 0, and prints only the runid line, the runid being the
    file path (an empty file has no tag)."""
    empty = write(tmp_path / "empty.run", "")
    df = io.scan_run(empty).collect()
    assert df.height == 0
    assert df.columns == ["system", "query", "doc", "score"]
    rc, out, err = cli(capsys, "trec", files["qrels"], empty)
    assert rc == 0
    assert "Traceback" not in err
    assert err.startswith("preval: warning:")
    assert lines_of(out) == [("runid", "all", str(empty))]


def test_comment_only_run_file_is_like_an_empty_one(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    empty = write(tmp_path / "comments.run", "# nothing here\n\n")
    rc, out, err = cli(capsys, "trec", files["qrels"], empty)
    assert rc == 0
    assert err.startswith("preval: warning:")
    assert lines_of(out) == [("runid", "all", str(empty))]


def test_empty_qrels_file_warns_exits_0_and_prints_only_runid(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    """Observed: no judged query, so nothing is evaluated: a warning on stderr, exit 0, and
    only the runid line (with -q no per-query line either)."""
    empty = write(tmp_path / "empty.qrels", "")
    df = io.scan_qrels(empty).collect()
    assert df.height == 0
    assert dict(df.schema) == {"query": pl.String, "doc": pl.String, "label": pl.Int64}
    rc, out, err = cli(capsys, "trec", "-q", empty, files["a"])
    assert rc == 0
    assert "Traceback" not in err
    assert err.startswith("preval: warning:")
    assert lines_of(out) == [("runid", "all", "runA")]


def test_empty_run_among_others_names_every_run_by_path(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], tmp_path: Path
) -> None:
    """Observed: a file without a tag makes `run_names` fall back to paths for all runs; the
    non-empty run is still evaluated, the empty one prints only its runid."""
    empty = write(tmp_path / "empty.run", "")
    assert io.run_names([files["a"], empty]) == [str(files["a"]), str(empty)]
    args = ["-m", "runid", "-m", "num_q", "-m", "map", files["qrels"], files["a"], empty]
    rc, out, err = cli(capsys, "trec", *args)
    assert rc == 0, err
    rows = lines_of(out)
    assert (str(files["a"]), "num_q", "all", "2") in rows
    assert [r for r in rows if r[0] == str(empty)] == [(str(empty), "runid", "all", str(empty))]


# ---------------------------------------------------------------------------------------------
# -m parsing
# ---------------------------------------------------------------------------------------------


def measures_printed(out: str) -> list[str]:
    return [r[0] for r in lines_of(out) if r[1] == "all"]


# (a cutoff given twice, P.10,5,10, is an error, as in trec_eval: tests/test_trec_migrant.py)
@pytest.mark.parametrize("option", ["P.5,10", "P.10,5"])
def test_cutoffs_print_in_ascending_order(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], option: str
) -> None:
    rc, out, err = cli(capsys, "trec", "-m", option, files["qrels"], files["a"])
    assert rc == 0, err
    assert measures_printed(out) == ["P_5", "P_10"]
    values = {r[0]: r[2] for r in lines_of(out)}
    # q1: 2 relevant in 4 retrieved, q2: 1 in 2 -> P_5 = (2/5 + 1/5) / 2, P_10 = half that
    assert values == {"P_5": "0.3000", "P_10": "0.1500"}


def test_measures_print_in_trec_eval_table_order(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path]
) -> None:
    args = ["-m", "ndcg", "-m", "P.5", "-m", "map", "-m", "num_q"]
    rc, out, _ = cli(capsys, "trec", *args, files["qrels"], files["a"])
    assert rc == 0
    assert measures_printed(out) == ["num_q", "map", "P_5", "ndcg"]


def test_official_is_the_default(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path]
) -> None:
    rc, default, _ = cli(capsys, "trec", "-q", files["qrels"], files["a"], files["b"])
    assert rc == 0
    rc, official, _ = cli(
        capsys, "trec", "-q", "-m", "official", files["qrels"], files["a"], files["b"]
    )
    assert rc == 0
    assert official == default
    assert measures_printed(default.replace("runA\t", "").replace("runB\t", ""))[:3] == [
        "runid", "num_q", "num_ret",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "option", ["bogus", "P.", "P.0", "P.-5", "P.x", "map.5", "set_F.0", "iprec_at_recall.1.5"]
)
def test_bad_measure_option_exit_2(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path], option: str
) -> None:
    rc, out, err = cli(capsys, "trec", "-m", option, files["qrels"], files["a"])
    assert_one_line_error(rc, err)
    assert out == ""


def test_unknown_measure_subprocess_has_no_traceback(files: dict[str, Path]) -> None:
    proc = python_m("trec", "-m", "bogus", files["qrels"], files["a"])
    message = assert_one_line_error(proc.returncode, proc.stderr)
    assert "bogus" in message
    assert proc.stdout == ""


def _f(p: Fraction, r: Fraction, beta2: Fraction) -> Fraction:
    """trec_eval's set_F: (x+1)PR/(xP+R), x = beta squared; 0 when nothing relevant found."""
    return (beta2 + 1) * p * r / (beta2 * p + r) if p and r else Fraction(0)


def test_set_f_parameter_is_beta_squared(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path]
) -> None:
    rc, out, err = cli(capsys, "trec", "-q", "-m", "set_F.0.25", files["qrels"], files["a"])
    assert rc == 0, err
    rows = {(r[0], r[1]): r[2] for r in lines_of(out)}
    beta2 = Fraction(1, 4)
    q1 = _f(Fraction(2, 4), Fraction(2, 3), beta2)  # 2 of 4 retrieved relevant, R = 3
    q2 = _f(Fraction(1, 2), Fraction(1, 1), beta2)  # 1 of 2, R = 1
    assert rows[("set_F_0.25", "q1")] == f"{float(q1):6.4f}"
    assert rows[("set_F_0.25", "q2")] == f"{float(q2):6.4f}"
    assert rows[("set_F_0.25", "all")] == f"{float((q1 + q2) / 2):6.4f}"
    assert [k[0] for k in rows if k[1] == "all"] == ["set_F_0.25"]
    # the same as the catalogue's F with beta = sqrt(0.25) = 0.5
    per_query = preval.evaluate(
        io.scan_run(files["a"]),
        ["F(beta=0.5)"],
        qrels=io.scan_qrels(files["qrels"]),
        by="system",
        queries="retrieved",
    ).collect()
    for q, value in zip(per_query["query"], per_query["F(beta=0.5)"], strict=True):
        assert rows[("set_F_0.25", q)] == f"{value:6.4f}"


def test_set_f_default_is_beta_one(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path]
) -> None:
    rc, out, _ = cli(capsys, "trec", "-q", "-m", "set_F", files["qrels"], files["a"])
    assert rc == 0
    rows = {(r[0], r[1]): r[2] for r in lines_of(out)}
    assert rows[("set_F", "q1")] == f"{float(_f(Fraction(1, 2), Fraction(2, 3), Fraction(1))):6.4f}"


def test_set_f_rounds_as_trec_eval(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # q1: 3 of 10 retrieved relevant, R = 6; q2-q4: nothing relevant retrieved. trec_eval's
    # (x + 1)·P·R / (x·P + R) gives q1 0.37499999999999994, so the mean of the 4 queries lies
    # just below 0.09375 and prints 0.0937 (the simplified 2·tp / (R + n) = 0.375 gave 0.0938):
    #   $ trec_eval -q -m set_F qrels run   (10.0-rc3)
    #   set_F                 	q1	0.3750
    #   ...
    #   set_F                 	all	0.0937
    qrels = "".join(f"q1 0 d{i} 1\n" for i in range(1, 7))
    qrels += "".join(f"q{k} 0 x 1\n" for k in (2, 3, 4))
    run = "".join(f"q1 Q0 d{i} {i} {20 - i} t\n" for i in range(1, 4))
    run += "".join(f"q1 Q0 n{i} {i + 3} {10 - i} t\n" for i in range(1, 8))
    run += "".join(f"q{k} Q0 y 1 1 t\n" for k in (2, 3, 4))
    q, r = write(tmp_path / "qrels", qrels), write(tmp_path / "run", run)
    for version in ("9", "10"):
        rc, out, err = cli(capsys, "trec", "--trec-version", version, "-q", "-m", "set_F", q, r)
        assert rc == 0, err
        assert lines_of(out) == [
            ("set_F", "q1", "0.3750"), ("set_F", "q2", "0.0000"), ("set_F", "q3", "0.0000"),
            ("set_F", "q4", "0.0000"), ("set_F", "all", "0.0937"),
        ]  # fmt: skip


def test_iprec_at_recall_parameter_name(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path]
) -> None:
    rc, out, err = cli(
        capsys, "trec", "-q", "-m", "iprec_at_recall.0.5", files["qrels"], files["a"]
    )
    assert rc == 0, err
    rows = lines_of(out)
    assert {r[0] for r in rows} == {"iprec_at_recall_0.50"}
    values = {r[1]: r[2] for r in rows}
    # q1 ranking: d1 R, d2 N, d#4 R, d9 N; R = 3: recall 0.5 needs 2 hits, first at rank 3
    assert values == {"q1": "0.6667", "q2": "1.0000", "all": "0.8333"}
    rc, out, _ = cli(capsys, "trec", "-m", "iprec_at_recall.1,0.5,0", files["qrels"], files["a"])
    assert measures_printed(out) == [
        "iprec_at_recall_0.00", "iprec_at_recall_0.50", "iprec_at_recall_1.00",
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Output options
# ---------------------------------------------------------------------------------------------


def test_line_format(capsys: pytest.CaptureFixture[str], files: dict[str, Path]) -> None:
    rc, out, _ = cli(capsys, "trec", "-q", "-m", "map", "-m", "num_ret", files["qrels"], files["a"])
    assert rc == 0
    assert out.splitlines() == [
        f"{'num_ret':<22}\tq1\t4",
        f"{'map':<22}\tq1\t{(1 + 2 / 3) / 3:6.4f}",
        f"{'num_ret':<22}\tq2\t2",
        f"{'map':<22}\tq2\t1.0000",
        f"{'num_ret':<22}\tall\t6",
        f"{'map':<22}\tall\t{((1 + 2 / 3) / 3 + 1) / 2:6.4f}",
    ]


def test_no_summary(capsys: pytest.CaptureFixture[str], files: dict[str, Path]) -> None:
    rc, with_summary, _ = cli(capsys, "trec", "-q", files["qrels"], files["a"], files["b"])
    rc, out, err = cli(capsys, "trec", "-q", "-n", files["qrels"], files["a"], files["b"])
    assert rc == 0, err
    rows = lines_of(out)
    assert rows
    assert all(r[2] != "all" for r in rows)
    assert out.splitlines() == [
        line for line in with_summary.splitlines() if line.split("\t")[2] != "all"
    ]
    rc, out, _ = cli(capsys, "trec", "-n", files["qrels"], files["a"])
    assert rc == 0
    assert out == ""


def test_table_one_row_per_measure_one_column_per_run(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path]
) -> None:
    args = ["-m", "map", "-m", "P.5,10", "-m", "num_ret"]
    rc, out, err = cli(capsys, "trec", "--table", *args, files["qrels"], files["a"], files["b"])
    assert rc == 0, err
    cells = [line.split() for line in out.splitlines()]
    assert cells[0] == ["measure", "runA", "runB"]
    assert [row[0] for row in cells[1:]] == ["num_ret", "map", "P_5", "P_10"]
    assert all(len(row) == 3 for row in cells)
    rc, lines, _ = cli(capsys, "trec", *args, files["qrels"], files["a"], files["b"])
    summary = {(r[0], r[1]): r[3] for r in lines_of(lines)}
    for measure, a, b in cells[1:]:
        assert summary[("runA", measure)] == a
        assert summary[("runB", measure)] == b


def test_several_runs_prefix_every_line_with_the_run_name(
    capsys: pytest.CaptureFixture[str], files: dict[str, Path]
) -> None:
    rc, both, err = cli(
        capsys, "trec", "-q", "-m", "all_trec", files["qrels"], files["a"], files["b"]
    )
    assert rc == 0, err
    rc, only_a, _ = cli(capsys, "trec", "-q", "-m", "all_trec", files["qrels"], files["a"])
    rc, only_b, _ = cli(capsys, "trec", "-q", "-m", "all_trec", files["qrels"], files["b"])
    expected = [f"runA\t{line}" for line in only_a.splitlines()]
    expected += [f"runB\t{line}" for line in only_b.splitlines()]
    assert both.splitlines() == expected
    assert all(len(line.split("\t")) == 3 for line in only_a.splitlines())


# --- the two readers of TREC text: Polars' CSV reader on single-spaced files, the split ------


@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 d1 1 0.9 run\nq1 Q0 d2 2 0.8 run\nq2 Q0 d1 1 -3 run\n",
        "# a comment\nq1 Q0 d1 1 0.9 run extra fields\n#\nq1 Q0 d2 2 nan run\n",
        "q1 Q0 d1 1 0.9 run\n# note\nq1 Q0 d2 2 0.8\n",  # a short line after a comment
        "q1 Q0 d1 1 abc run\n",
        "q1 Q0 d#1 1 1e-3 run\nq#2 Q0 d1 1 5 run",  # no final newline; '#' inside ids
        "\u00a0q1 Q0 d1 1 0.9 run\u2003\nq1 Q0 d2\u00a0 2 0.8 run\n",  # Unicode spaces: ids
        "q1 Q0 d1 1 1_000 run\n",  # a number to Python's float(), not to Polars
    ],
)
def test_single_spaced_runs_read_as_the_split_reads_them(text: str, tmp_path, monkeypatch) -> None:
    from preval import io

    path = tmp_path / "run.txt"
    path.write_text(text)
    assert io._single_spaced(path)
    assert io._single_spaced(path, small=True)  # bytes' own searches, as numpy

    def read() -> object:
        try:
            return io.scan_run(path).collect()
        except preval.InputError as exc:
            return str(exc)

    fast = read()
    monkeypatch.setattr(io, "_single_spaced", lambda _path, **_: False)
    split = read()
    if isinstance(fast, str):
        assert fast == split
    else:
        assert fast.equals(split)


@pytest.mark.parametrize(
    "text",
    [
        "q1\tQ0\td1\t1\t0.9\trun\nq1\tQ0\td2\t2\t0.8\trun\nq2\tQ0\td1\t1\t-3\trun\n",
        "#comment\nq1\tQ0\td1\t1\t0.9\trun\textra\n#\nq1\tQ0\td2\t2\tnan\trun\n",
        "q1\tQ0\td1\t1\t0.9\trun\nq1\tQ0\td2\t2\t0.8\n",  # a short line
        "q1\tQ0\td1\t1\tabc\trun\n",
        "q1\tQ0\td#1\t1\t1e-3\trun\nq#2\tQ0\td1\t1\t5\trun",  # no final newline
    ],
)
def test_single_tabbed_runs_read_as_the_split_reads_them(text: str, tmp_path, monkeypatch) -> None:
    # tab-separated runs (the fixtures', many tools') take Polars' CSV reader with a tab as
    # separator: the same rows, or the same error, as trec_eval's split of runs of blanks
    from preval import io

    path = tmp_path / "run.txt"
    path.write_text(text)
    assert not io._single_spaced(path)
    assert io._single_tabbed(path) and io._single_tabbed(path, small=True)

    def read() -> object:
        try:
            return io.scan_run(path).collect()
        except preval.InputError as exc:
            return str(exc)

    fast = read()
    monkeypatch.setattr(io, "_single_tabbed", lambda _path, **_: False)
    split = read()
    if isinstance(fast, str):
        assert fast == split
    else:
        assert fast.equals(split)


@pytest.mark.parametrize(
    "text", ["q1\tQ0\td1 1\t1\tr\n", "q1\t\tQ0\td1\t1\t1\tr\n", "\tq1\tQ0\td1\t1\t1\tr\n",
             "q1\tQ0\td1\t1\t1\tr\t\n", "q1\tQ0\td1\t1\t1\tr\r\n", "q1\tQ0\td1\t1\t1\tr\n\n"],
)  # fmt: skip
def test_tabs_mixed_or_doubled_take_the_split(text: str, tmp_path) -> None:
    from preval import io

    path = tmp_path / "run.txt"
    path.write_text(text, newline="")
    assert not io._single_tabbed(path) and not io._single_tabbed(path, small=True)
    assert io.scan_run(path).collect()["doc"][0] == "d1"


@pytest.mark.parametrize(
    "text", ["q1\tQ0 d1 1 1 r\n", "q1  Q0 d1 1 1 r\n", " q1 Q0 d1 1 1 r\n", "q1 Q0 d1 1 1 r \n",
             "q1 Q0 d1 1 1 r\r\n", "q1 Q0 d1 1 1 r\n\nq1 Q0 d2 2 0 r\n", "\ufeffq1 Q0 d1 1 1 r\n"],
)  # fmt: skip
def test_other_spacing_takes_the_split(text: str, tmp_path) -> None:
    from preval import io

    path = tmp_path / "run.txt"
    path.write_text(text, newline="")
    assert not io._single_spaced(path)
    assert not io._single_spaced(path, small=True)
    assert io.scan_run(path).collect()["doc"][0] == "d1"


def test_run_named_dash_is_standard_input(files: dict[str, Path]) -> None:
    # as trec_eval: `trec_eval -c -m map qrels.txt - < a.run` reads the run from standard input
    # and prints "map all 0.5185" (10.0-rc3), as with the file's name
    args = [sys.executable, "-m", "preval", "trec", "-c", "-m", "map", str(files["qrels"])]
    piped = subprocess.run(
        [*args, "-"], input=RUN_A, capture_output=True, text=True, timeout=60, check=False
    )
    named = subprocess.run(
        [*args, str(files["a"])], capture_output=True, text=True, timeout=60, check=False
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == named.stdout
    assert lines_of(piped.stdout) == [("map", "all", "0.5185")]


def test_11pt_avg_sums_in_trec_evals_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # trec_eval sums a query's 11 interpolated precisions from recall 1.0 down to 0.0; summed
    # from 0.0 up, q1's, q2's and q4's values differ in the last bit and their mean prints
    # 0.3813 (the exact mean of the printed values is 0.38125):
    #   $ trec_eval -q -m 11pt_avg qrels run   (10.0-rc3)
    #   11pt_avg q1 0.7455 / q2 0.3068 / q3 0.0000 / q4 0.4727 / all 0.3812
    cases = [([1, 1, 0, 0, 1], 4), ([0, 0, 1, 0, 0, 1, 0, 1], 4), ([0], 3), ([0, 1, 0, 0, 1, 0], 2)]
    qrels, run = [], []
    for i, (rels, num_rel) in enumerate(cases, start=1):
        for k, rel in enumerate(rels, start=1):
            run.append(f"q{i} Q0 d{k} {k} {100 - k} t\n")
            qrels += [f"q{i} 0 d{k} 1\n"] if rel else []
        qrels += [f"q{i} 0 u{j} 1\n" for j in range(num_rel - sum(rels))]  # not retrieved
    q, r = write(tmp_path / "qrels", "".join(qrels)), write(tmp_path / "run", "".join(run))
    rc, out, err = cli(capsys, "trec", "--trec-version", "10", "-q", "-m", "11pt_avg", q, r)
    assert rc == 0, err
    assert lines_of(out) == [
        ("11pt_avg", "q1", "0.7455"), ("11pt_avg", "q2", "0.3068"), ("11pt_avg", "q3", "0.0000"),
        ("11pt_avg", "q4", "0.4727"), ("11pt_avg", "all", "0.3812"),
    ]  # fmt: skip


def test_relstring_n_of_an_unanswered_query_under_c_as_trec_eval_10(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # trec_eval 10 -c ranks one unjudged placeholder document for a judged query the run did
    # not answer and clears relstring's string after, not relstring.N's (10.0-rc3):
    #   $ trec_eval -q -c -m relstring.10 qr rr        $ trec_eval -q -c -m relstring qr rr
    #   relstring_10 1 '1' / 2 '-' / 3 '-'             relstring 1 '1' / 2 '' / 3 ''
    #   with -J (the placeholder unjudged, dropped): relstring_10 2 '' / 3 ''
    qr = write(tmp_path / "qr", "1 0 a 1\n2 0 b 1\n3 0 c 0\n")
    rr = write(tmp_path / "rr", "1 Q0 a 1 1 r\n")
    want = {
        ("relstring.10",): [("relstring_10", "1", "'1'"), ("relstring_10", "2", "'-'"),
                            ("relstring_10", "3", "'-'")],
        ("relstring",): [("relstring", "1", "'1'"), ("relstring", "2", "''"),
                         ("relstring", "3", "''")],
        ("relstring.10", "-J"): [("relstring_10", "1", "'1'"), ("relstring_10", "2", "''"),
                                 ("relstring_10", "3", "''")],
    }  # fmt: skip
    for (measure, *more), lines in want.items():
        args = ["trec", "--trec-version", "10", "-q", "-c", *more, "-m", measure, qr, rr]
        rc, out, err = cli(capsys, *args)
        assert rc == 0, err
        assert lines_of(out) == lines


def test_relstring_of_a_label_beyond_int64_range_is_a_code(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a label above 9 is '>' (trec_eval's rule; trec_eval itself cannot evaluate a label this
    # large: it sizes arrays by the largest label). The digit branch, computed on every row,
    # failed its Int64 cast: "conversion from `f64` to `i64` failed in column '_l'".
    qrels = write(tmp_path / "qrels", "1 0 a 9223372036854775807\n1 0 b 0\n")
    run = write(tmp_path / "run", "1 Q0 a 1 2 r\n1 Q0 b 2 1 r\n1 Q0 c 3 0 r\n")
    rc, out, err = cli(capsys, "trec", "-q", "-m", "relstring", qrels, run)
    assert rc == 0, err
    assert lines_of(out) == [("relstring", "1", "'>0-'")]


def test_only_trec_evals_blanks_separate_or_surround_fields(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # trec_eval splits at C's isspace (space, tab, vertical tab, form feed, CR): a no-break
    # space is part of an id, also at a line's start, also when the file takes the split (two
    # spaces on line 1); a vertical tab or form feed separates fields, also at a line's end.
    #   $ trec_eval -q -m map -m num_ret qrels run   (10.0-rc3; the \xa0 line is query
    #   "\xa01", in no qrels)
    #   num_ret 1 2 / map 1 0.5000 / num_ret 2 1 / map 2 1.0000 / num_ret all 3 / map all 0.7500
    qrels = write(tmp_path / "qrels", "1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 a 1\n")
    run = "1  Q0 a 1 3 r\n1 Q0 b 2 2 r\n\u00a01 Q0 c 3 1 r\n2 Q0 a 1 1 r\n"
    for text in (run, run.replace("1  Q0", "1 Q0")):  # the split, and the CSV reader
        rc, out, err = cli(capsys, "trec", "-q", "-m", "map", "-m", "num_ret", qrels,
                           write(tmp_path / "run", text))  # fmt: skip
        assert rc == 0, err
        assert lines_of(out) == [
            ("num_ret", "1", "2"), ("map", "1", "0.5000"), ("num_ret", "2", "1"),
            ("map", "2", "1.0000"), ("num_ret", "all", "3"), ("map", "all", "0.7500"),
        ]  # fmt: skip
    #   $ trec_eval -q -m map -m num_ret -m num_rel qv rv  (qv: "1 0 a 1\v" ..., rv below)
    #   num_ret 1 2 / num_rel 1 1 / map 1 0.5000 / num_ret 2 1 / num_rel 2 1 / map 2 1.0000 /
    #   num_ret all 3 / num_rel all 2 / map all 0.7500
    qv = write(tmp_path / "qv", "1 0 a 1\v\n1 0 b 0\n2 0 a 1\n")
    rv = write(tmp_path / "rv", "1 Q0 a 1 3\vr\n1 Q0 b 2\f4 r\n2 Q0 a 1 1 r\n")
    assert not io._single_spaced(qv) and not io._single_spaced(rv, small=True)
    rc, out, err = cli(capsys, "trec", "-q", "-m", "map", "-m", "num_ret", "-m", "num_rel", qv, rv)
    assert rc == 0, err
    assert lines_of(out) == [
        ("num_ret", "1", "2"), ("num_rel", "1", "1"), ("map", "1", "0.5000"),
        ("num_ret", "2", "1"), ("num_rel", "2", "1"), ("map", "2", "1.0000"),
        ("num_ret", "all", "3"), ("num_rel", "all", "2"), ("map", "all", "0.7500"),
    ]  # fmt: skip


@pytest.mark.parametrize("together_bytes", [2**28, 1])
def test_many_runs_read_together_as_each_alone(tmp_path, monkeypatch, together_bytes) -> None:
    """Single-spaced runs are read by one scan (or, beyond `TOGETHER_BYTES`, one scan each),
    the others line by line, in one frame: each run's rows are those it has read alone (a
    plain-Python split is the reference)."""
    from preval import io

    monkeypatch.setattr(io, "TOGETHER_BYTES", together_bytes)

    texts = {
        "a": "q1 Q0 d1 1 0.5 ra\nq2 Q0 d2 1 0.25 ra\n",
        "b": "q1\tQ0 d3 1 2 rb\n# note\nq3  Q0 d4 2 1 rb\n",  # a tab, two spaces: split
        "c": "q2 Q0 d5 1 -1 rc\nq2 Q0 d6 2 -2 rc x y\n",  # extra fields, ignored
    }
    paths = []
    for name, text in texts.items():
        paths.append(tmp_path / f"{name}.run")
        paths[-1].write_text(text)
    got = io.scan_run(paths).collect().sort("system", "query", "doc")
    rows = [
        (f"r{name}", parts[0], parts[2], float(parts[4]))
        for name, text in texts.items()
        for parts in (line.split() for line in text.splitlines())
        if parts and not parts[0].startswith("#")
    ]
    assert got.rows() == sorted(rows)


def test_malformed_line_of_the_second_run_read_together_is_named(tmp_path) -> None:
    from preval import io

    good, bad = tmp_path / "good.run", tmp_path / "bad.run"
    good.write_text("q1 Q0 d1 1 0.5 g\n" * 3)
    bad.write_text("q1 Q0 d1 1 0.5 b\nq1 Q0 d2 2 0.4 b\nq1 Q0 d3 3 x b\n")
    with pytest.raises(preval.InputError, match=r"bad\.run, line 3: .*'q1 Q0 d3 3 x b'"):
        io.scan_run([good, bad]).collect()


def test_trec_command_imports_only_what_it_uses() -> None:
    """`preval trec` on small files loads its own subcommand, not the others' dependencies:
    compare's numpy (start-up is most of the time on small files)."""
    code = (
        "import sys\n"
        "from preval.cli import main\n"
        "code = main(['trec', 'fixtures/trec/qrels.txt', 'fixtures/trec/bm25.run'])\n"
        "loaded = [m for m in ('numpy', 'scipy', 'preval.significance') if m in sys.modules]\n"
        "print(code, loaded, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.stderr.strip().splitlines()[-1] == "0 []"
    assert proc.stdout.startswith("runid")


@settings(max_examples=examples(200), deadline=None)
@given(data=st.binary().map(lambda b: bytes(b" \t\na"[x % 4] for x in b)))
def test_pairs_of_blanks_by_bytes_methods_and_by_numpy(data: bytes) -> None:
    """The check for two blanks in a row (a single-spaced or single-tabbed file has none) gives
    the same answer by bytes' methods (files up to SMALL_CHECK_BYTES) and by numpy (larger
    ones), and the answer of a plain loop over the pairs of bytes."""
    from preval import io

    for blank in (b" ", b"\t"):
        edges = {blank[0], ord("\n")}
        want = any(a in edges and b in edges for a, b in itertools.pairwise(data))
        assert io._pairs_of_blanks(data, small=True, blank=blank) is want
        assert io._pairs_of_blanks(data, small=False, blank=blank) is want


def test_run_and_qrels_swapped_are_named_at_the_first_line(capsys) -> None:
    # a newcomer's `preval trec RUN QRELS`: the first line of the file and the count in the
    # whole file (a batch checked in parallel was blamed: 'line 1180 ... 4719 malformed lines'),
    # and what the line looks like
    trec = Path(__file__).resolve().parents[1] / "fixtures" / "trec"
    lines = sum(1 for _ in (trec / "bm25.run").open())
    rc, _, err = cli(capsys, "trec", trec / "bm25.run", trec / "qrels.txt")
    assert_one_line_error(rc, err)
    assert "/bm25.run, line 1: expected 4 fields" in err
    assert f"({lines} malformed lines in all); this is a run's line" in err
    rc, _, err = cli(capsys, "trec", trec / "qrels.txt", trec / "qrels.txt")
    assert_one_line_error(rc, err)
    assert "/qrels.txt, line 1: expected 6 fields" in err
    assert "this is a qrels line (query iter doc label): are qrels given as a run?" in err


@pytest.mark.parametrize(
    ("request_", "meant"),
    [("nDCG@10", "ndcg_cut.10"), ("ndcg_cut_10", "ndcg_cut.10"), ("MAP", "map"),
     ("mrr", "recip_rank"), ("P@10", "P.10"), ("R@100", "recall.100")],
)  # fmt: skip
def test_trec_m_names_trec_evals_spelling_of_another_one(request_: str, meant: str) -> None:
    # preval's, ranx's and ir_measures' names are not trec_eval's -m: said which one is
    with pytest.raises(preval.MeasureError) as e:
        trec_module.parse_m([request_])
    assert f"in -m {request_}; did you mean -m {meant}? known here: official," in str(e.value)


def test_trec_m_unknown_without_a_guess() -> None:
    with pytest.raises(preval.MeasureError) as e:
        trec_module.parse_m(["foo"])
    assert "unknown trec_eval measure 'foo' in -m foo; known here: official," in str(e.value)


def test_one_malformed_line_is_counted_in_the_singular(tmp_path, capsys) -> None:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "a.run"
    qrels.write_text("q1 0 d1 1\nq1 0 d2\n")
    run.write_text("q1 Q0 d1 1 0.5 a\n")
    rc, _, err = cli(capsys, "trec", qrels, run)
    assert rc == 2
    assert err.rstrip().endswith("found 3: 'q1 0 d2' (1 malformed line in all)")
