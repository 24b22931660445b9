"""Files as real tools write them: a byte-order mark, a repeated column name, a short row in
the middle, a quoted line break, blank lines. Each gives the right numbers or one clear line
naming the file, the line and the rule; never a silently different number."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import preval
from preval.cli import main

BOM = b"\xef\xbb\xbf"
JOINED = "query,doc,score,label\nq1,d1,0.9,1\nq1,d2,0.8,0\nq2,d3,0.7,2\nq2,d4,0.6,0\n"
ENGINES = ("in-memory", "streaming", "chunked", "partitioned")


def one_line_error(capsys, args: list[object], *fragments: str) -> None:
    rc = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("preval: error:"), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def per_query(path: Path, **kw: object) -> pl.DataFrame:
    return preval.evaluate(path, ["AP", "P@10", "NumRet"], **kw).collect()


# --- TREC files with a byte-order mark -------------------------------------------------------


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("marked", ["qrels", "run", "both"])
def test_a_byte_order_mark_is_no_part_of_the_first_query(
    capsys, tmp_path: Path, marked: str, gz: bool
) -> None:
    # issue 32's case: with the mark kept, q1's first qrels line joined nothing (map 0.5)
    qrels_text, run_text = b"q1 0 d1 1\nq1 0 d3 1\n", b"q1 Q0 d1 1 .9 r\nq1 Q0 d3 2 .8 r\n"
    qrels = tmp_path / ("q.gz" if gz else "q")
    run = tmp_path / ("r.gz" if gz else "r")
    for path, text, who in ((qrels, qrels_text, "qrels"), (run, run_text, "run")):
        data = (BOM if marked in (who, "both") else b"") + text
        path.write_bytes(gzip.compress(data) if gz else data)
    assert main(["trec", "-q", "-m", "map", str(qrels), str(run)]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[0].split() == ["map", "q1", "1.0000"]
    table = preval.evaluate(run, ["AP"], qrels=qrels, input_format="trec").collect()
    assert table["query"].to_list() == ["q1"] and table["AP"].to_list() == [1.0]
    assert table["system"].to_list() == ["r"]


def test_a_csv_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text(JOINED)
    marked.write_bytes(BOM + JOINED.encode())
    assert_frame_equal(per_query(marked), per_query(plain))


# --- CSV headers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "name", "where"),
    [
        ("query,doc,label,label", "label", "fields 3 and 4"),
        ("query,query,doc,score,label", "query", "fields 1 and 2"),
        ('"query",doc,score,label,"query"', "query", "fields 1 and 5"),
    ],
)
def test_a_repeated_column_name_is_refused_by_name(
    capsys, tmp_path: Path, header: str, name: str, where: str
) -> None:
    data = tmp_path / "dup.csv"
    width = header.count(",") + 1
    data.write_text(header + "\n" + ",".join(["q1", "d1", "0.5", "1", "0"][:width]) + "\n")
    out = tmp_path / "pq.csv"
    one_line_error(
        capsys, ["evaluate", data, "--per-query", out], "dup.csv", "line 1", repr(name), where
    )
    assert not out.exists()
    with pytest.raises(preval.InputError, match="appears twice"):
        preval.evaluate(data, ["AP"])


def test_a_repeated_column_name_in_qrels_is_refused(capsys, tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    run.write_text("query,doc,score\nq1,d1,0.9\n")
    qrels.write_text("query,doc,label,label\nq1,d1,1,0\n")
    one_line_error(capsys, ["evaluate", run, "--qrels", qrels], "qrels.csv", "'label'", "twice")


def test_carriage_returns_alone_end_no_line(capsys, tmp_path: Path) -> None:
    data = tmp_path / "mac.csv"
    data.write_bytes(JOINED.replace("\n", "\r").encode())
    one_line_error(capsys, ["evaluate", data], "mac.csv", "carriage return")


# --- rows with a field missing -------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("line", [2, 3, 5])
def test_a_short_row_anywhere_is_an_error(capsys, tmp_path: Path, line: int, engine: str) -> None:
    # issue 32's case: q1,d2,0.4 in a 4-column file became an unjudged document, exit 0
    rows = JOINED.splitlines()
    rows[line - 1] = rows[line - 1].rsplit(",", 1)[0]
    data = tmp_path / "short.csv"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "pq.csv"
    args = ["evaluate", data, "--per-query", out, "--engine", engine]
    one_line_error(
        capsys, args, "short.csv", f"line {line}", "expected 4 fields", "found 3", rows[line - 1]
    )
    assert not out.exists()
    plan = preval.plan(data, ["AP"])
    with pytest.raises(preval.InputError, match=f"line {line}: expected 4 fields"):
        preval.collect(plan, engine=engine)


def test_short_rows_are_counted_and_a_quoted_row_is_judged_by_its_fields(
    capsys, tmp_path: Path
) -> None:
    data = tmp_path / "short.csv"
    # line 3 has four fields, one of them a quoted comma; lines 4 and 6 have three
    data.write_text(
        'query,doc,score,label\nq1,d1,0.9,1\nq1,"d,2",0.8,0\n"q2",d3,0.7\nq2,d4,0.6,0\nq3,d5,1\n'
    )
    one_line_error(capsys, ["evaluate", data], "line 4", "found 3", "2 rows")


def test_a_short_row_in_qrels_is_an_error(capsys, tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    run.write_text("query,doc,score\nq1,d1,0.9\nq1,d2,0.8\n")
    qrels.write_text("query,doc,label\nq1,d1\nq1,d2,1\n")
    one_line_error(capsys, ["evaluate", run, "--qrels", qrels], "qrels.csv", "line 2", "found 2")


# --- valid files that look odd -------------------------------------------------------------


@pytest.mark.parametrize("last", [True, False])
def test_a_quoted_line_break_is_part_of_its_field(tmp_path: Path, last: bool) -> None:
    # issue 32's case: a valid last row with a quoted newline was refused as cut short
    row = 'q1,"d\n5",0.5,0'
    data = tmp_path / "multi.csv"
    data.write_text(JOINED + row if last else JOINED.replace("q1,d2", row + "\nq1,d2"))
    table = preval.evaluate(data, ["NumRet", "AP"]).collect()
    assert table["NumRet"].to_list() == [3, 2]
    assert table["AP"].to_list() == [1.0, 1.0]


def test_a_quoted_line_break_in_a_short_record_is_found(capsys, tmp_path: Path) -> None:
    data = tmp_path / "multi.csv"
    data.write_text(JOINED + 'q1,"d\n5",0.5\nq3,d6,0.1,1\n')
    one_line_error(capsys, ["evaluate", data], "line 6", "found 3")


@pytest.mark.parametrize("blank", ["\n", "\n\n", "\r\n"])
def test_blank_lines_are_skipped(tmp_path: Path, blank: str) -> None:
    plain, gaps = tmp_path / "plain.csv", tmp_path / "gaps.csv"
    plain.write_text(JOINED)
    newline = "\r\n" if blank == "\r\n" else "\n"
    lines = JOINED.splitlines()
    gaps.write_text(newline.join([*lines[:3], "", *lines[3:]]) + newline + blank, newline="")
    assert_frame_equal(per_query(gaps), per_query(plain))


def test_a_line_of_spaces_is_a_short_row(capsys, tmp_path: Path) -> None:
    data = tmp_path / "spaces.csv"
    data.write_text(JOINED + "   \n")
    one_line_error(capsys, ["evaluate", data], "line 6", "found 1")


# --- errors that name the file and the line --------------------------------------------------

QRELS_TEXT = "q1 0 d1 1\nq1 0 d3 1\n"
RUN_TEXT = "q1 Q0 d1 1 .9 r\nq1 Q0 d3 2 .8 r\n"


def test_a_gz_name_on_plain_text_is_read_as_text(capsys, tmp_path: Path) -> None:
    qrels, run = tmp_path / "q", tmp_path / "r.gz"
    qrels.write_text(QRELS_TEXT)
    run.write_text(RUN_TEXT)  # not compressed, as Polars reads it: by its first bytes
    assert main(["trec", "-m", "runid", "-m", "map", str(qrels), str(run)]) == 0
    out = capsys.readouterr().out.split()
    assert out == ["runid", "all", "r", "map", "all", "1.0000"]


def test_a_gzip_file_cut_short_is_one_line(capsys, tmp_path: Path) -> None:
    qrels, run = tmp_path / "q", tmp_path / "r.gz"
    qrels.write_text(QRELS_TEXT)
    lines = "".join(f"q1 Q0 d{i} {i} {1 / (i + 1)} r\n" for i in range(20000))
    run.write_bytes(gzip.compress(lines.encode())[:3000])  # cut mid-stream
    one_line_error(capsys, ["trec", str(qrels), str(run)], "r.gz", "cut short")


def test_a_byte_that_is_not_utf8_in_a_run_names_the_line(capsys, tmp_path: Path) -> None:
    qrels, run = tmp_path / "q", tmp_path / "r"
    qrels.write_text(QRELS_TEXT)
    run.write_bytes(RUN_TEXT.encode() + b"q1 Q0 d\xff9 3 .7 r\n")
    one_line_error(capsys, ["trec", str(qrels), str(run)], "input", "r, line 3", "UTF-8")


def test_a_word_where_a_score_belongs_deep_in_a_csv_names_the_line(capsys, tmp_path: Path) -> None:
    data = tmp_path / "deep.csv"
    rows = [f"q1,d{i},0.5,0" for i in range(3000)]  # past the rows Polars infers types from
    data.write_text("query,doc,score,label\n" + "\n".join(rows) + "\nq1,dz,abc,0\n")
    one_line_error(capsys, ["evaluate", data], "deep.csv", "line 3002", "'score'", "'abc'")
    with pytest.raises(preval.InputError, match="line 3002"):
        preval.collect(preval.plan(data, ["AP"]))


def test_collect_names_a_missing_tmp_dir(tmp_path: Path) -> None:
    plan = preval.plan(pl.DataFrame({"query": ["q"], "score": [1.0], "label": [1]}), ["AP"])
    with pytest.raises(preval.InputError, match="no/such/dir: no such directory"):
        preval.collect(plan, engine="partitioned", tmp_dir="no/such/dir")


# --- spill directories of processes that died ------------------------------------------------


@pytest.mark.parametrize("engine", ["chunked", "partitioned"])
def test_a_killed_run_s_spill_directory_goes_with_the_next_run(tmp_path: Path, engine: str) -> None:
    from preval.spill import SpillDirectory

    # a process that made a spill directory and was killed before it could remove it
    code = (
        "import os, sys; from preval.spill import SpillDirectory; "
        f"d = SpillDirectory(prefix='preval-buckets-', dir={str(tmp_path)!r}); "
        "print(d.path, flush=True); os._exit(9)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(root)}, check=False)  # fmt: skip
    stale = Path(out.stdout.strip())
    assert stale.is_dir() and out.returncode == 9
    alive = SpillDirectory(dir=tmp_path)  # this process's: left alone by the next run
    other = tmp_path / "preval-notes"  # not a spill directory's name
    other.mkdir()
    data = pl.DataFrame({"query": ["q1", "q1", "q2"], "score": [0.9, 0.1, 0.5],
                         "label": [1, 0, 1]})  # fmt: skip
    result = preval.collect(preval.plan(data, ["AP"]), engine=engine, tmp_dir=tmp_path)
    assert result.per_query().collect()["AP"].to_list() == [1.0, 1.0]
    assert not stale.exists()
    assert alive.path.is_dir() and other.is_dir()
    alive.cleanup()


# --- an address-space limit set by someone else (ulimit -v, a batch scheduler) ---------------


def _limited(limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    import resource

    root = Path(__file__).resolve().parents[1]
    return subprocess.run(
        [sys.executable, "-m", "preval", *args],
        capture_output=True, text=True, timeout=120, check=False, cwd=root,
        env={"PYTHONPATH": str(root), "PATH": os.environ.get("PATH", "")},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
    )  # fmt: skip


def test_too_little_address_space_is_one_line_before_any_work(tmp_path: Path) -> None:
    # issue 32: under ulimit -v 1048576 runs aborted in Polars, hung, or printed a panic
    out = tmp_path / "pq.parquet"
    result = _limited(2**30, "evaluate", "fixtures/example.parquet", "--per-query", str(out))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "address-space limit (ulimit -v) is 1.00 GiB" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_enough_address_space_evaluates() -> None:
    result = _limited(5 * 2**29, "evaluate", "fixtures/example.parquet", "--by", "system", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("system  NumQ")


# --- named pipes ------------------------------------------------------------------------------


def _fifo(path: Path, text: str) -> threading.Thread:
    os.mkfifo(path)
    writer = threading.Thread(target=path.write_text, args=(text,), daemon=True)
    writer.start()
    return writer


def test_a_named_pipe_is_read_once_and_evaluated(capsys, tmp_path: Path) -> None:
    # issue 32: a named pipe was refused as "file is empty" and never read
    _fifo(tmp_path / "joined.csv", JOINED)
    plain = tmp_path / "plain.csv"
    plain.write_text(JOINED)
    assert main(["evaluate", str(tmp_path / "joined.csv"), "-m", "AP", "-q"]) == 0
    piped = capsys.readouterr().out
    assert main(["evaluate", str(plain), "-m", "AP", "-q"]) == 0
    assert piped == capsys.readouterr().out


def test_trec_files_from_named_pipes(capsys, tmp_path: Path) -> None:
    _fifo(tmp_path / "qrels", QRELS_TEXT)
    _fifo(tmp_path / "run", RUN_TEXT)
    args = ["trec", "-m", "runid", "-m", "map", str(tmp_path / "qrels"), str(tmp_path / "run")]
    assert main(args) == 0
    assert capsys.readouterr().out.split() == ["runid", "all", "r", "map", "all", "1.0000"]


def test_an_output_s_temporary_file_is_made_exclusively(tmp_path: Path, monkeypatch) -> None:
    from preval import report

    target = tmp_path / "out.csv"
    trap = tmp_path / "elsewhere"
    name = str(tmp_path / ".out.csv.0000000000000000.tmp")
    os.symlink(trap, name)  # a link waiting under the temporary file's name
    monkeypatch.setattr(report, "hidden_beside", lambda path, suffix: name)
    with pytest.raises(preval.InputError, match="cannot write"):
        report.write(pl.DataFrame({"a": [1]}), target)
    assert not trap.exists() and not target.exists()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_data_rule_names_the_file(capsys, tmp_path: Path, engine: str) -> None:
    # issue 32: a -inf label was refused as "input: ..." without the file name
    data = tmp_path / "inf.csv"
    data.write_text(JOINED.replace("q2,d3,0.7,2", "q2,d3,0.7,-inf"))
    one_line_error(capsys, ["evaluate", data, "--engine", engine, "-m", "nDCG@10"],
                   f"input {data}: column 'label'", "infinite")  # fmt: skip
    run, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    run.write_text("query,doc,score\nq1,d1,0.9\n")
    qrels.write_text("query,doc,label\nq1,d1,1\nq1,d1,0\n")
    one_line_error(capsys, ["evaluate", run, "--qrels", qrels, "--engine", engine],
                   f"qrels {qrels}: ", "repeat")  # fmt: skip


def test_compare_names_the_run_file(capsys, tmp_path: Path) -> None:
    # issue 32: preval compare with a NaN score or an empty run did not say which run
    qrels, good, nan, empty = (tmp_path / n for n in ("q", "good", "nan", "empty"))
    qrels.write_text(QRELS_TEXT)
    good.write_text(RUN_TEXT)
    nan.write_text("q1 Q0 d1 1 nan r2\n")
    empty.write_text("")
    for command in ("compare", "evaluate"):
        one_line_error(capsys, [command, good, nan, "--qrels", qrels], "NaN", f"(run file {nan})")
        one_line_error(
            capsys, [command, good, empty, "--qrels", qrels], f"run file {empty} is empty"
        )
