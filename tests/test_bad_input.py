"""Bad input never passes silently and never costs the user data.

Each case runs the command as a user would and asserts the exit code, the one-line message
(what, where, which rule) and that no output file was left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import preval
from preval.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PARQUET = FIXTURES / "example.parquet"
JOINED = "query,doc,score,label\nq1,d1,0.9,1\nq1,d2,0.8,0\nq2,d3,0.7,2\nq2,d4,0.6,0\n"


def run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    rc = main([str(a) for a in args])
    _, err = capsys.readouterr()
    return rc, err


def one_line_error(rc: int, err: str, *fragments: str) -> None:
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("preval: error:")
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    """Files in `folder` that a run may not leave: anything but `keep` (temporaries too)."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


# --- outputs that would lose data ------------------------------------------------------------


def test_per_query_onto_the_input_is_refused(capsys, tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    rc, err = run(capsys, "evaluate", data, "--per-query", data)
    one_line_error(rc, err, "--per-query", "input file", "in.csv")
    assert data.read_text() == JOINED  # untouched
    assert leftovers(tmp_path, {"in.csv"}) == []


def test_summary_onto_the_qrels_is_refused_through_another_spelling(
    capsys, tmp_path: Path, monkeypatch
) -> None:
    run_csv = tmp_path / "run.csv"
    qrels = tmp_path / "qrels.csv"
    run_csv.write_text("query,doc,score\nq1,d1,0.9\n")
    qrels.write_text("query,doc,label\nq1,d1,1\n")
    monkeypatch.chdir(tmp_path)
    rc, err = run(capsys, "evaluate", run_csv, "--qrels", qrels, "--summary", "./qrels.csv")
    one_line_error(rc, err, "--summary", "input file")
    assert qrels.read_text() == "query,doc,label\nq1,d1,1\n"


def test_two_outputs_on_one_path_are_refused(capsys, tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    out = tmp_path / "x.csv"
    rc, err = run(capsys, "evaluate", data, "--per-query", out, "--summary", out)
    one_line_error(rc, err, "--per-query and --summary", "same file")
    assert leftovers(tmp_path, {"in.csv"}) == []


def test_a_directory_where_the_output_goes_is_refused(capsys, tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    (tmp_path / "out.csv").mkdir()
    rc, err = run(capsys, "evaluate", data, "--per-query", tmp_path / "out.csv")
    one_line_error(rc, err, "out.csv", "is a directory")


def test_plot_onto_its_input_is_refused(capsys, tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    rc, err = run(capsys, "plot", "pr", data, "-o", data)
    one_line_error(rc, err, "-o", "input file")
    assert data.read_text() == JOINED


def test_outputs_of_one_run_appear_together(capsys, tmp_path: Path, monkeypatch) -> None:
    """Both files are renamed into place after both are written: a failure writing the second
    replaces neither and leaves no temporary file."""
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    out = tmp_path / "out"
    out.mkdir()
    per_query, summary = out / "pq.parquet", out / "summary.csv"
    rc, err = run(capsys, "evaluate", data, "--per-query", per_query, "--summary", summary)
    assert rc == 0, err
    assert pl.read_parquet(per_query).height == 2
    assert pl.read_csv(summary)["NumQ"].to_list() == [2]
    before = per_query.read_bytes(), summary.read_bytes()

    def disk_full(*args: object) -> str:
        msg = "No space left on device"
        raise OSError(msg)

    # the per-query file is streamed first; the summary's text then fails to render
    monkeypatch.setattr(preval.report, "render", disk_full)
    data.write_text(JOINED.replace("q2,d4,0.6,0", "q2,d4,0.6,1"))
    rc, err = run(capsys, "evaluate", data, "--per-query", per_query, "--summary", summary)
    one_line_error(rc, err, "No space left on device")
    assert (per_query.read_bytes(), summary.read_bytes()) == before
    assert leftovers(out, {"pq.parquet", "summary.csv"}) == []


@pytest.mark.parametrize(
    "failure", [MemoryError(), RuntimeError("can't start new thread")], ids=["alloc", "thread"]
)
def test_running_out_of_address_space_is_one_line_and_writes_nothing(
    capsys, tmp_path: Path, monkeypatch, failure: BaseException
) -> None:
    """Under an address-space limit (ulimit -v) the engines' sizing did not foresee, an
    allocation or a thread's stack fails in Python's code mid-write: one line, exit 2, no
    output and no temporary file (a Rust allocation aborts the process: not catchable)."""
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    out = tmp_path / "out"
    out.mkdir()

    def fails(*args: object) -> str:
        raise failure

    monkeypatch.setattr(preval.report, "render", fails)
    rc, err = run(capsys, "evaluate", data, "--summary", out / "summary.csv")
    one_line_error(rc, err, "out of memory")
    assert leftovers(out, set()) == []


def test_another_runtime_error_is_not_called_out_of_memory(
    capsys, tmp_path: Path, monkeypatch
) -> None:
    """Only a thread that cannot start is read as memory: any other RuntimeError is a bug and
    keeps its traceback."""
    data = tmp_path / "in.csv"
    data.write_text(JOINED)

    def fails(*args: object) -> str:
        msg = "some bug"
        raise RuntimeError(msg)

    monkeypatch.setattr(preval.report, "render", fails)
    with pytest.raises(RuntimeError, match="some bug"):
        run(capsys, "evaluate", data, "--summary", tmp_path / "summary.csv")


# --- data that would be evaluated wrongly ----------------------------------------------------


@pytest.mark.parametrize("ending", ["", "\n", "\n\n"])
def test_a_csv_cut_mid_row_is_an_error(capsys, tmp_path: Path, ending: str) -> None:
    data = tmp_path / "cut.csv"
    data.write_text(JOINED + "q3,d5,0.5" + ending)  # the label field never arrived
    out = tmp_path / "pq.csv"
    rc, err = run(capsys, "evaluate", data, "--per-query", out)
    one_line_error(rc, err, "cut.csv", "line 6", "expected 4 fields", "found 3", "q3,d5,0.5")
    assert not out.exists()
    with pytest.raises(preval.InputError, match="line 6"):
        preval.evaluate(data, ["AP"]).collect()


def test_an_empty_last_field_is_not_a_cut(capsys, tmp_path: Path) -> None:
    data = tmp_path / "unjudged.csv"
    data.write_text(JOINED + "q2,d5,0.5,\n")  # four fields, the label empty: unjudged
    rc, err = run(capsys, "evaluate", data, "-m", "AP")
    assert rc == 0, err
    assert "1 retrieved row unjudged" in err


# A run with a label column beside qrels: its labels were dropped for the qrels', silently (a
# joined table given the qrels too, or an old label column left in a run, gave the other's AP)
LABELS_TWICE = ("column 'label' holds labels, and the qrels give them too", "drop the column",
                "leave out the qrels")  # fmt: skip


@pytest.mark.parametrize(
    "command",
    [["evaluate", "-m", "AP"], ["evaluate", "-m", "nDCGRel"], ["compare", "-m", "AP"],
     ["evaluate", "-m", "AP", "--engine", "partitioned"]],
)  # fmt: skip
def test_a_label_column_beside_qrels_is_refused(capsys, tmp_path: Path, command) -> None:
    data, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    data.write_text("system,query,doc,score,label\na,q1,d1,0.9,0\na,q1,d2,0.8,1\n"
                    "b,q1,d2,0.9,1\nb,q2,d3,0.5,1\n")  # fmt: skip
    qrels.write_text("query,doc,label\nq1,d1,1\nq1,d2,0\nq2,d3,1\n")
    out = tmp_path / "pq.csv"
    argv = [command[0], data, *command[1:], "--by", "system", "--qrels", qrels]
    if command[0] == "evaluate":
        argv += ["--per-query", out]
    rc, err = run(capsys, *argv)
    one_line_error(rc, err, f"preval: error: input {data}: ", *LABELS_TWICE)
    assert not out.exists()
    with pytest.raises(preval.InputError, match="holds labels, and the qrels give them too"):
        preval.evaluate(pl.read_csv(data), ["AP"], qrels=qrels, by="system")
    # as told: either source alone evaluates
    without = pl.read_csv(data).drop("label")
    assert preval.evaluate(without, ["AP"], qrels=qrels, by="system").collect().height == 4
    assert preval.evaluate(data, ["AP"], by="system").collect().height == 3


@pytest.mark.parametrize("where", ["joined", "qrels"])
@pytest.mark.parametrize("value", ["inf", "-inf"])
def test_infinite_labels_are_an_error(capsys, tmp_path: Path, where: str, value: str) -> None:
    out = tmp_path / "pq.csv"
    if where == "joined":
        data = tmp_path / "in.csv"
        data.write_text(JOINED.replace("q2,d3,0.7,2", f"q2,d3,0.7,{value}"))
        args = [data]
    else:
        run_csv, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
        run_csv.write_text("query,doc,score\nq1,d1,0.9\nq2,d3,0.7\n")
        qrels.write_text(f"query,doc,label\nq1,d1,1.0\nq2,d3,{value}\n")
        args = [run_csv, "--qrels", qrels]
    rc, err = run(capsys, "evaluate", *args, "-m", "nDCG@10", "--per-query", out)
    one_line_error(rc, err, "'label'", "infinite", "1 rows", "'q2'", "'d3'")
    assert not out.exists()


def test_infinite_labels_raise_in_python() -> None:
    frame = pl.DataFrame(
        {"query": ["q1", "q1"], "doc": ["a", "b"], "score": [1.0, 0.5], "label": [1.0, np.inf]}
    )
    with pytest.raises(preval.InvalidValueError, match="infinite"):
        preval.evaluate(frame, ["nDCG@10"]).collect()


# --- signals ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def large_grouped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Rows grouped by query, enough for the chunked engine to run for a while."""
    rows, per_query = 6_000_000, 100
    rng = np.random.default_rng(0)
    frame = pl.DataFrame(
        {
            "query": np.arange(rows) // per_query,
            "doc": np.tile(np.arange(per_query), rows // per_query),
            "score": rng.random(rows),
            "label": (rng.random(rows) > 0.9).astype(np.int64),
        }
    )
    path = tmp_path_factory.mktemp("signals") / "grouped.parquet"
    frame.write_parquet(path, row_group_size=500_000)
    return path


@pytest.mark.parametrize("engine", ["chunked", "partitioned"])
@pytest.mark.parametrize(
    ("sig", "code", "word"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted"),
     (signal.SIGHUP, 129, "terminated")],
)  # fmt: skip
def test_a_signal_leaves_no_spill_and_no_output(
    large_grouped: Path, tmp_path: Path, sig: int, code: int, word: str, engine: str
) -> None:
    spill = tmp_path / "tmp"
    spill.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    # 560MB: above what the partitioned engine's scatter needs for these rows (about 509 MB),
    # below what it takes to hold them whole: both engines spill
    process = subprocess.Popen(
        [sys.executable, "-m", "preval", "evaluate", large_grouped, "--engine", engine,
         "--memory-limit", "560MB",
         "--per-query", out / "pq.parquet", "--summary", out / "s.csv", "-q"],
        env={**os.environ, "TMPDIR": str(spill)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not any(spill.iterdir()):  # the engine's spill directory exists: it is mid-run
        assert process.poll() is None and time.monotonic() < deadline, "no spill directory"
        time.sleep(0.01)
    process.send_signal(sig)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    assert err.strip() == f"preval: {word}; no output written"
    assert list(spill.iterdir()) == []
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("engine", ["chunked", "partitioned"])
def test_a_signal_the_moment_the_spill_directory_appears_leaves_nothing(
    large_grouped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    # the instant the test above aims at by polling, made certain: the interrupt lands right
    # after the directory is made, before the engine could enter any try of its own
    make = os.mkdir

    def mkdir_then_interrupt(path, *args, **kwargs):
        make(path, *args, **kwargs)
        if Path(path).name.startswith("preval-"):
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "mkdir", mkdir_then_interrupt)
    plan = preval.plan(large_grouped, ["AP"])
    with pytest.raises(KeyboardInterrupt):
        preval.collect(plan, engine=engine, memory_limit=560_000_000, tmp_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


class _InterruptedAsMade:
    """tempfile's `os`, whose first `open` is followed at once by Ctrl-C: the signal's handler
    runs as the call returns, before the caller's ``try`` that would remove the file."""

    def __init__(self) -> None:
        self.sent = False

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def open(self, *args, **kwargs) -> int:
        fd = os.open(*args, **kwargs)
        if not self.sent:
            self.sent = True
            signal.raise_signal(signal.SIGINT)
        return fd


def test_a_signal_as_the_temporary_directory_is_probed_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first tempfile.gettempdir() of a process (the spill directory's parent) makes a file
    # of a random name in TMPDIR to see that it can write there, then removes it; a signal that
    # landed as that file was made left it (the test above failed now and then on
    # '[PosixPath('.../tmp/8ta2jvc9')] == []': it signals the moment anything appears there)
    import tempfile

    from preval.spill import SpillDirectory

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (the first call of the process, again)
    probe = _InterruptedAsMade()
    monkeypatch.setattr(tempfile, "_os", probe)
    with pytest.raises(KeyboardInterrupt):
        SpillDirectory(prefix="preval-buckets-")
    assert probe.sent
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def many_queries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two rows per query: a per-query output about as large as the input."""
    rows = 600_000
    rng = np.random.default_rng(1)
    frame = pl.DataFrame(
        {
            "query": np.arange(rows) // 2,
            "doc": np.arange(rows) % 2,
            "score": rng.random(rows),
            "label": (rng.random(rows) > 0.5).astype(np.int64),
        }
    )
    path = tmp_path_factory.mktemp("outputs") / "many.parquet"
    frame.write_parquet(path)
    return path


def test_ctrl_c_at_any_moment_of_the_output_write_leaves_no_temporary_file(
    many_queries: Path, tmp_path: Path
) -> None:
    # issue 32: Ctrl-C while the per-query Parquet is written left its hidden .tmp beside the
    # target. Signals sent at moments spread over the write (from the moment the temporary
    # file appears), a few seconds in all: either the command was interrupted and nothing is
    # there, or it had finished (then the output is whole)
    rng = np.random.default_rng(32)
    deadline = time.monotonic() + 10
    tries = 0
    while tries < 3 or (time.monotonic() < deadline and tries < 8):
        out = tmp_path / f"try{tries}"
        out.mkdir()
        process = subprocess.Popen(
            [sys.executable, "-m", "preval", "evaluate", many_queries, "-m", "AP", "-m", "RR",
             "--per-query", out / "pq.parquet", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        limit = time.monotonic() + 60
        while not any(out.iterdir()) and process.poll() is None:
            assert time.monotonic() < limit, "no output started"
            time.sleep(0.0005)
        time.sleep(rng.uniform(0, 0.15))
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        left = sorted(p.name for p in out.iterdir())
        if process.returncode == 130:
            assert err.strip() == "preval: interrupted; no output written" or left == [
                "pq.parquet"
            ], err
        assert left in ([], ["pq.parquet"]), (process.returncode, left, err)
        if left:
            assert pl.read_parquet(out / "pq.parquet").height == 300_000
        tries += 1


# --- unreadable files: the file's name, the line, what to do; never the reader's words ------

LEAKS = ("ComputeError", "PlRefPath", "ArrowInvalid", "Error:", ".tmp")


def no_leak(err: str) -> None:
    for word in LEAKS:
        assert word not in err, (word, err)


def test_a_csv_that_is_not_utf8_names_the_line(capsys, tmp_path: Path) -> None:
    data = tmp_path / "latin1.csv"
    data.write_bytes(JOINED.replace("d3", "d\xe93").encode("latin-1"))
    out = tmp_path / "pq.csv"
    rc, err = run(capsys, "evaluate", data, "--per-query", out)
    one_line_error(rc, err, "latin1.csv", "line 4", "not valid UTF-8", "iconv")
    no_leak(err)
    assert not out.exists()


def test_a_quoted_score_that_is_not_a_number_names_its_line(capsys, tmp_path: Path) -> None:
    # a decimal comma, quoted so that the row keeps its 4 fields: Polars names the field with
    # its quotes, the csv module reads it without
    data = tmp_path / "comma.csv"
    data.write_text(JOINED.replace("q1,d2,0.8,0", 'q1,d2,"0,8",0'))
    rc, err = run(capsys, "evaluate", data)
    one_line_error(rc, err, "comma.csv, line 3", "column 'score' holds '0,8'", "not a number")


def test_a_csv_row_with_extra_fields_names_the_line(capsys, tmp_path: Path) -> None:
    data = tmp_path / "long.csv"
    data.write_text(JOINED.replace("q1,d2,0.8,0", "q1,d2,0.8,0,x"))
    out = tmp_path / "pq.csv"
    rc, err = run(capsys, "evaluate", data, "--per-query", out)
    one_line_error(rc, err, "long.csv", "line 3", "expected 4 fields", "found 5", "q1,d2,0.8,0,x")
    no_leak(err)
    assert not out.exists()


@pytest.mark.parametrize("engine", preval.engines.CHOICES)
@pytest.mark.parametrize(
    ("name", "content", "fragments"),
    [
        ("latin1.csv", JOINED.replace("d3", "d\xe93").encode("latin-1"),
         ("line 4", "not valid UTF-8", "iconv")),
        ("long.csv", JOINED.replace("q1,d2,0.8,0", "q1,d2,0.8,0,x").encode(),
         ("line 3", "expected 4 fields", "found 5", "q1,d2,0.8,0,x")),
    ],
)  # fmt: skip
def test_the_python_api_names_the_file_and_line_of_a_malformed_csv(
    tmp_path: Path, engine: str, name: str, content: bytes, fragments: tuple[str, ...]
) -> None:
    # the reader finds these only when the plan runs; `preval.collect` says them as the CLI does
    data = tmp_path / name
    data.write_bytes(content)
    plan = preval.plan(data, ["AP"])
    with pytest.raises(preval.InputError) as caught:
        preval.collect(plan, engine=engine)
    message = str(caught.value)
    for fragment in (name, *fragments):
        assert fragment in message, (fragment, message)
    no_leak(message)


def test_the_python_api_names_a_malformed_qrels_csv(tmp_path: Path) -> None:
    run_ = tmp_path / "run.csv"
    run_.write_text("query,doc,score\nq1,d1,0.9\nq1,d2,0.8\n")
    qrels = tmp_path / "qrels.csv"
    qrels.write_bytes("query,doc,label\nq1,d1,1\nq1,d\xe92,0\n".encode("latin-1"))
    plan = preval.plan(run_, ["AP"], qrels=qrels)
    with pytest.raises(preval.InputError, match=r"qrels\.csv, line 3: not valid UTF-8"):
        preval.collect(plan)


@pytest.mark.parametrize("command", ["evaluate", "compare", "fuse"])
def test_qrels_without_a_label_column_are_named_by_their_file(capsys, tmp_path, command) -> None:
    # a qrels file whose relevance column is named otherwise: the message said "qrels:"
    qrels = tmp_path / "judgments.csv"
    qrels.write_text("query,doc,rel\nq001,d04570,1\n")
    runs = ["fixtures/example_run.csv"]
    if command == "fuse":
        runs = ["fixtures/trec/bm25.run", "fixtures/trec/hybrid.run.gz", "--optimize", "AP",
                "-o", tmp_path / "fused.run"]  # fmt: skip
    rc, err = run(capsys, command, *runs, "--qrels", qrels, *(["-m", "AP"] * (command != "fuse")))
    one_line_error(rc, err, f"qrels {qrels}: missing", "'label'")
    if command == "fuse":  # fuse takes no --label: no hint at it
        assert "--label" not in err
        assert not (tmp_path / "fused.run").exists()


def test_a_word_in_the_qrels_label_column_names_the_qrels(capsys, tmp_path: Path) -> None:
    # Polars' parse error names no file: the first CSV given (the run) was blamed, with no line
    run_ = tmp_path / "run.csv"
    run_.write_text("query,doc,score\nq1,d1,0.9\nq1,d2,0.8\nq2,d3,0.5\n")
    qrels = tmp_path / "qrels.csv"
    qrels.write_text("query,doc,label\nq1,d1,1\nq1,d2,0\nq2,d3,x\n")
    rc, err = run(capsys, "evaluate", run_, "--qrels", qrels, "-m", "AP")
    # ... and says it is the qrels (it said "input qrels.csv")
    one_line_error(rc, err, f"qrels {qrels}, line 4: column 'label' holds 'x'")
    assert "run.csv" not in err
    plan = preval.plan(run_, ["AP"], qrels=qrels)
    with pytest.raises(preval.InputError, match=r"^qrels .*qrels\.csv, line 4: column 'label'"):
        preval.collect(plan)
    # a word in the run's score column: the input
    run_.write_text("query,doc,score\nq1,d1,0.9\nq1,d2,high\nq2,d3,0.5\n")
    qrels.write_text("query,doc,label\nq1,d1,1\nq1,d2,0\nq2,d3,1\n")
    rc, err = run(capsys, "evaluate", run_, "--qrels", qrels, "-m", "AP")
    one_line_error(rc, err, f"input {run_}, line 3: column 'score' holds 'high'")


def test_a_directory_given_as_input_is_refused(capsys, tmp_path: Path) -> None:
    (tmp_path / "x.parquet").mkdir()
    out = tmp_path / "pq.csv"
    rc, err = run(capsys, "evaluate", tmp_path / "x.parquet", "--per-query", out)
    one_line_error(rc, err, "x.parquet", "is a directory")
    no_leak(err)
    assert not out.exists()


@pytest.mark.parametrize("size", [0, 300, -100])
def test_a_corrupt_parquet_file_is_named(capsys, tmp_path: Path, size: int) -> None:
    data = tmp_path / "broken.parquet"
    whole = PARQUET.read_bytes()
    data.write_bytes(whole[:size] if size >= 0 else whole[:size] + whole[-8:])
    out = tmp_path / "pq.csv"
    rc, err = run(capsys, "evaluate", data, "--per-query", out)
    one_line_error(rc, err, "broken.parquet", "not a readable Parquet file", "write it again")
    no_leak(err)
    assert not out.exists()


# --- empty inputs ---------------------------------------------------------------------------


def test_a_zero_byte_csv_has_no_header(capsys, tmp_path: Path) -> None:
    data = tmp_path / "nothing.csv"
    data.touch()
    out = tmp_path / "pq.csv"
    rc, err = run(capsys, "evaluate", data, "--per-query", out)
    one_line_error(rc, err, "nothing.csv", "file is empty (no header)", "header line")
    assert not out.exists()
    with pytest.raises(preval.InputError, match="no header"):
        preval.evaluate(data, ["AP"])


def test_a_header_only_csv_is_an_empty_input(capsys, tmp_path: Path) -> None:
    data = tmp_path / "header.csv"
    data.write_text("query,doc,score,label\n")
    rc, err = run(capsys, "evaluate", data, "--summary", tmp_path / "s.csv")
    assert rc == 0, err
    assert "warning: no query was evaluated" in err
    assert pl.read_csv(tmp_path / "s.csv")["NumQ"].to_list() == [0]


@pytest.mark.parametrize("query", [[], ["--query", "query"]])
def test_plot_of_a_header_only_csv_is_an_empty_plot(
    capsys, tmp_path: Path, query: list[str]
) -> None:
    pytest.importorskip("matplotlib")
    data = tmp_path / "header.csv"
    data.write_text("query,doc,score,label\n")
    out = tmp_path / "pr.png"
    rc = main(["plot", "pr", str(data), "-o", str(out), *query])
    _, err = capsys.readouterr()
    assert rc == 0, err
    assert err.strip() == f"preval: warning: nothing to plot: no rows in {data}"
    assert out.stat().st_size > 0


# --- outputs ----------------------------------------------------------------------------------


def test_format_parquet_is_not_offered_on_stdout(capsys, tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    out, _ = capsys.readouterr()
    assert "{table,csv,json}" in out
    assert "parquet}" not in out
    rc, err = run(capsys, "evaluate", data, "--format", "parquet")
    one_line_error(rc, err, "--format parquet", "--summary summary.parquet")


def test_a_failed_write_names_the_users_path(capsys, tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    out = tmp_path / "pq.csv"

    def failing_sink(lf: pl.LazyFrame, path: str, fmt: str) -> None:
        msg = f"failed to create file: {path}: No space left on device (os error 28)"
        raise pl.exceptions.ComputeError(msg)

    monkeypatch.setattr(preval.report, "_sink", failing_sink)
    rc, err = run(capsys, "evaluate", data, "--per-query", out)
    one_line_error(rc, err, f"cannot write {out}", "No space left on device")
    no_leak(err)
    assert leftovers(tmp_path, {"in.csv"}) == []


def test_a_plot_has_the_permissions_of_other_outputs(capsys, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    previous = os.umask(0o022)
    try:
        rc, err = run(capsys, "plot", "pr", PARQUET, "--by", "system", "-o", tmp_path / "pr.png")
        assert rc == 0, err
        summary = tmp_path / "s.csv"
        rc, err = run(capsys, "evaluate", PARQUET, "--by", "system", "--summary", summary, "-q")
        assert rc == 0, err
    finally:
        os.umask(previous)
    assert (tmp_path / "pr.png").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "s.csv").stat().st_mode & 0o777 == 0o644


# --- TREC files -------------------------------------------------------------------------------


def test_a_nan_score_in_a_run_file_says_remove_the_line(capsys, tmp_path: Path) -> None:
    qrels, run_txt = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("1 0 d1 1\n")
    run_txt.write_text("1 Q0 d1 1 nan tag\n")
    rc, err = run(capsys, "trec", qrels, run_txt)
    one_line_error(rc, err, "'score' is NaN", "remove the line", "run.txt")
    assert "use null" not in err


def test_a_fractional_qrels_label_is_not_an_integer(capsys, tmp_path: Path) -> None:
    qrels, run_txt = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("1 0 d1 1\n1 0 d2 0.5\n")
    run_txt.write_text("1 Q0 d1 1 0.9 tag\n")
    rc, err = run(capsys, "trec", qrels, run_txt)
    one_line_error(rc, err, "qrels.txt", "line 2", "'0.5' is not an integer")
    assert "not a number" not in err


# trec_eval refuses qrels that judge a document twice, whatever the measure (exit 4):
#   $ trec_eval -m ndcg_rel qrels.txt run.txt
#   trec_eval.form_res_rels: duplicate docs d1
#   trec_eval: Can't calculate measure 'ndcg_rel'
# (-m map says the same). preval names the qrels file for every measure: map checks the qrels
# beside the run, ndcg_rel, G, Rndcg (all_trec has them) join the qrels into the run first, which
# blamed the run ("input run.txt: 2 rows repeat ...; example: system 'r', ... (run file ...)").
DUPLICATE_QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d1 1\nq2 0 d3 1\n"
DUPLICATE_IN_QRELS = ("2 rows repeat a (query, doc) pair", "example: query 'q1', doc 'd1'")


@pytest.mark.parametrize("suffix", [".txt", ".parquet"])
@pytest.mark.parametrize("measure", ["map", "ndcg_rel", "G", "Rndcg", "all_trec"])
def test_a_judgment_given_twice_is_the_qrels_whatever_the_measure(
    capsys, tmp_path: Path, measure: str, suffix: str
) -> None:
    qrels, run_txt = tmp_path / f"qrels{suffix}", tmp_path / "run.txt"
    qrels.write_text(DUPLICATE_QRELS)
    if suffix == ".parquet":  # a qrels table beside TREC run files
        preval.scan_qrels(qrels).collect().write_parquet(qrels)
    run_txt.write_text("q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq2 Q0 d3 1 0.5 r\n")
    rc, err = run(capsys, "trec", "-m", measure, qrels, run_txt)
    one_line_error(rc, err, f"preval: error: qrels {qrels}: ", *DUPLICATE_IN_QRELS)
    assert "run.txt" not in err


@pytest.mark.parametrize("measure", ["AP", "nDCGRel", "G"])
def test_a_judgment_given_twice_in_a_qrels_table_is_the_qrels(
    capsys, tmp_path: Path, measure: str
) -> None:
    qrels, run_csv = tmp_path / "qrels.csv", tmp_path / "run.csv"
    qrels.write_text("query,doc,label\n" + DUPLICATE_QRELS.replace(" 0 ", ",").replace(" ", ","))
    run_csv.write_text("query,doc,score\nq1,d1,0.9\nq1,d2,0.8\nq2,d3,0.5\n")
    rc, err = run(capsys, "evaluate", run_csv, "--qrels", qrels, "-m", measure)
    one_line_error(rc, err, f"preval: error: qrels {qrels}: ", *DUPLICATE_IN_QRELS)
    assert "run.csv" not in err


def test_a_pooled_curve_refuses_a_judgment_given_twice(capsys, tmp_path: Path) -> None:
    # the pooled curve reads the run joined with its qrels: the judgment was counted twice
    qrels, run_txt, picture = tmp_path / "qrels.txt", tmp_path / "run.txt", tmp_path / "roc.svg"
    qrels.write_text(DUPLICATE_QRELS + "q2 0 d4 0\n")
    run_txt.write_text("q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq2 Q0 d3 1 0.5 r\nq2 Q0 d4 2 0.4 r\n")
    rc, err = run(capsys, "plot", "roc", run_txt, "--qrels", qrels, "--pool", "-o", picture)
    one_line_error(rc, err, "preval: error: qrels ", "qrels.txt: ", *DUPLICATE_IN_QRELS)
    assert not picture.exists()


# The hint of a repeated (query, doc) names only what the command or function called takes:
# `preval plot` and `preval.plot` have no duplicates option, `preval trec` no --by, and
# `preval fuse --optimize`'s --duplicates keeps one row of a run, not of the qrels.
KEEP_ONE_FLAG = "or pass --duplicates max or first to keep one"
KEEP_ONE_KEYWORD = "or pass duplicates='max' or 'first' to keep one"
BY_FLAG = "if the table holds several systems, name their column with --by"


def duplicate_qrels(tmp_path: Path) -> tuple[Path, Path]:
    qrels, run_csv = tmp_path / "qrels.csv", tmp_path / "run.csv"
    qrels.write_text("query,doc,label\nq1,d1,1\nq1,d2,0\nq1,d1,1\nq2,d3,1\n")
    run_csv.write_text("query,doc,score\nq1,d1,0.9\nq1,d2,0.8\nq2,d3,0.5\n")
    return qrels, run_csv


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (["evaluate", "{run}", "-m", "AP"], [BY_FLAG, KEEP_ONE_FLAG]),
        (["compare", "{systems}", "-m", "AP"], [BY_FLAG, KEEP_ONE_FLAG]),
        (["agreement", "{systems}", "-m", "AP", "-m", "P@1"], [BY_FLAG, KEEP_ONE_FLAG]),
        (["plot", "pr", "{run}", "-o", "{tmp}/pr.svg"], [BY_FLAG]),
        (["trec", "-m", "map", "{qrels_txt}", "{run_txt}"], [KEEP_ONE_FLAG]),
        (["fuse", "{run}", "{run}", "--optimize", "AP", "-o", "{tmp}/f.run"], []),
    ],
)
def test_the_duplicate_hint_names_only_the_commands_own_flags(
    capsys, tmp_path: Path, command: list[str], flags: list[str]
) -> None:
    qrels, run_csv = duplicate_qrels(tmp_path)
    systems = tmp_path / "systems.csv"
    systems.write_text("system,query,doc,score\na,q1,d1,0.9\nb,q1,d2,0.8\nb,q2,d3,0.5\n")
    qrels_txt, run_txt = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_txt.write_text(DUPLICATE_QRELS)
    run_txt.write_text("q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\nq2 Q0 d3 1 0.5 r\n")
    given = {
        "run": run_csv,
        "systems": systems,
        "tmp": tmp_path,
        "qrels_txt": qrels_txt,
        "run_txt": run_txt,
    }
    argv = [a.format(**given) for a in command]
    if command[0] != "trec":
        argv += ["--qrels", str(qrels)]
    rc, err = run(capsys, *argv)
    one_line_error(rc, err, "rows repeat a (query, doc) pair", *flags)
    hints = [BY_FLAG, KEEP_ONE_FLAG]
    assert [h for h in hints if h in err] == flags, err
    assert "duplicates=" not in err and "by=" not in err  # never the Python spelling


def test_the_duplicate_hint_names_only_the_functions_own_keywords(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from preval.plot import plot

    qrels, run_csv = duplicate_qrels(tmp_path)
    with pytest.raises(preval.errors.DuplicateError) as raised:
        preval.evaluate(run_csv, ["AP"], qrels=qrels).collect()
    assert KEEP_ONE_KEYWORD in str(raised.value)
    assert "--" not in str(raised.value)  # never the flag
    with pytest.raises(preval.errors.DuplicateError) as raised:
        plot(run_csv, "pr", tmp_path / "pr.svg", qrels=qrels)
    assert "duplicates" not in str(raised.value)  # plot() takes no duplicates=
    assert "name their column with by=" in str(raised.value)


# --- counts are integers in every output, as in the text table -------------------------------


def test_counts_are_integers_in_csv_json_and_parquet(capsys, tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text(JOINED)
    measures = ["-m", "AP", "-m", "NumRet", "-m", "NumRel", "-m", "NumRelRet"]
    per_query, summary = tmp_path / "pq.csv", tmp_path / "s.parquet"
    rc = main(["evaluate", str(data), *measures, "--per-query", str(per_query),
               "--summary", str(summary), "--format", "csv", "-q"])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert out.splitlines() == ["NumQ,AP,NumRet,NumRel,NumRelRet", "2,1.0,4,2,2"]
    assert per_query.read_text().splitlines()[1] == "q1,1.0,2,1,1"
    counts = ["NumQ", "NumRet", "NumRel", "NumRelRet"]
    assert {pl.read_parquet(summary).schema[c] for c in counts} == {pl.Int64}
    rc = main(["evaluate", str(data), *measures, "--format", "json", "-q"])
    out, _ = capsys.readouterr()
    assert '"NumRet":4,' in out and '"AP":1.0' in out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_the_command_starts_is_quiet(tmp_path: Path, sig: int) -> None:
    # issue 32: Ctrl-C in the first second, before main's handlers, printed a traceback
    out = tmp_path / "pq.parquet"
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; sys.argv = ['preval']; import preval; "
         "print('loaded', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout.readline().strip() == "loaded"  # the package loaded, main not run
    process.send_signal(sig)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 128 + sig
    assert err == ""
    assert not out.exists()


def test_an_interrupt_between_two_renames_leaves_no_temporary_file(tmp_path: Path) -> None:
    from preval import report

    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    replace = os.replace
    calls = []

    def replace_then_interrupt(src, dst):
        replace(src, dst)
        calls.append(dst)
        raise KeyboardInterrupt

    frame = pl.DataFrame({"x": [1]})
    with pytest.raises(KeyboardInterrupt):
        with report.Outputs() as outputs:
            outputs.write(frame, first)
            outputs.write(frame, second)
            os.replace = replace_then_interrupt
    os.replace = replace
    assert calls == [first]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]  # b's temporary file went


def test_a_signal_while_a_spill_directory_is_removed_waits_for_the_removal(
    tmp_path: Path, monkeypatch
) -> None:
    # CI, 2026-11-27: SIGTERM arrived while the spill directory's finalizer removed it; the
    # handler's exception was printed as "Exception ignored" with its traceback and the
    # removal stopped half done. The handler now sends the signal again once the removal ends.
    from preval import cli, spill

    spilled = spill.SpillDirectory(dir=tmp_path)
    (spilled.path / "bucket.ipc").write_bytes(b"rows")
    resent, raised = [], []
    rmtree = shutil.rmtree

    def signalled_rmtree(path, *args, **kwargs):
        try:
            cli._terminate(signal.SIGTERM, sys._getframe())
        except BaseException as exc:  # (the finalizer would print it and stop here)
            raised.append(exc)
        rmtree(path, *args, **kwargs)

    monkeypatch.setattr(cli, "_again", resent.append)
    monkeypatch.setattr(spill.shutil, "rmtree", signalled_rmtree)
    spilled.cleanup()
    assert (resent, raised) == ([signal.SIGTERM], [])
    assert list(tmp_path.iterdir()) == []
    # anywhere else in preval's own code the signal ends the command at once
    with pytest.raises(cli.Terminated):
        cli._terminate(signal.SIGTERM, sys._getframe())
