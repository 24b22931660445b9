"""preval as a step of a data pipeline (Make, Airflow, a shell): what it promises there.

stdout carries results only (messages go to stderr), ``-`` as an output path is standard
output wherever stdout can take that output (and one clear line where it cannot), an output
never lands on an input, and a refused command line is one line with exit code 2, never a
traceback. Inputs are small files made in `tmp_path`; the commands run in this process.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import threading
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from preval.cli import main
from tests import commands
from tests.test_reliability_sweep import QRELS, RUN_A, RUN_B  # (two runs, three queries)
from tests.test_trec_input import assert_one_line_error as one_line_error

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"qrels": tmp_path / "qrels.txt", "a": tmp_path / "a.run", "b": tmp_path / "b.run"}
    for path, text in zip(paths.values(), (QRELS, RUN_A, RUN_B), strict=True):
        path.write_text(text)
    return paths


def cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


# --- an output never lands on an input --------------------------------------------------------


@pytest.mark.parametrize("target", ["a", "qrels"])
@pytest.mark.parametrize("mode", ["optimize", "train"])
def test_fuse_tuning_refuses_an_output_on_an_input(capsys, files, target, mode) -> None:
    """`preval fuse --optimize/--train-qrels -o INPUT` replaced the run (or the qrels) it read."""
    before = {name: path.read_bytes() for name, path in files.items()}
    tune = (
        ["--method", "rrf", "--optimize", "AP", "--qrels", files["qrels"]]
        if mode == "optimize"
        else ["--method", "probfuse", "--train-qrels", files["qrels"]]
    )
    rc, out, err = cli(capsys, "fuse", files["a"], files["b"], *tune, "-o", files[target])
    line = one_line_error(rc, err)
    assert str(files[target]) in line and "input" in line
    assert {name: path.read_bytes() for name, path in files.items()} == before
    assert out == ""


def test_fuse_training_without_output_is_one_line(capsys, files) -> None:
    """`preval fuse --train-qrels` without -o was a TypeError traceback (exit 1)."""
    rc, _, err = cli(capsys, "fuse", files["a"], files["b"], "--method", "probfuse",
                     "--train-qrels", files["qrels"])  # fmt: skip
    assert "-o" in one_line_error(rc, err)


# --- stdout holds results only; `-` is stdout -------------------------------------------------


def test_fuse_says_what_it_wrote_on_stderr(capsys, files, tmp_path: Path) -> None:
    """stdout stays empty when the fused run goes to a file: the count is a message."""
    rc, out, err = cli(capsys, "fuse", files["a"], files["b"], "-o", tmp_path / "f.run")
    assert rc == 0
    assert out == ""
    # rows: q1 has d1 d2 d3, q2 d4 d5 d6, q3 d7 d8: 8 fused rows
    assert "8 fused rows written to" in err


def test_fuse_to_dash_prints_the_run(capsys, files, tmp_path: Path, monkeypatch) -> None:
    """`preval fuse ... -o -` wrote a file named '-' (and said so on stdout); it is the fused
    TREC run on stdout, the same bytes as the file, for `| preval trec qrels -`."""
    monkeypatch.chdir(tmp_path)
    rc, _, _ = cli(capsys, "fuse", files["a"], files["b"], "-o", "f.run")
    assert rc == 0
    rc, out, err = cli(capsys, "fuse", files["a"], files["b"], "-o", "-")
    assert rc == 0, err
    assert out == (tmp_path / "f.run").read_text()
    assert not (tmp_path / "-").exists()
    # what trec_eval reads from it: the fused run evaluates as the file does
    assert len(out.splitlines()) == 8


def test_fuse_tuning_to_dash_is_one_line(capsys, files, tmp_path: Path, monkeypatch) -> None:
    """--optimize prints its report on stdout: the run cannot go there too."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = cli(capsys, "fuse", files["a"], files["b"], "--optimize", "AP",
                       "--qrels", files["qrels"], "-o", "-")  # fmt: skip
    assert "-o -" in one_line_error(rc, err)
    assert out == ""
    assert not (tmp_path / "-").exists()


def test_per_query_to_dash_prints_the_per_query_table(capsys, files, tmp_path: Path) -> None:
    """`--per-query -` is the per-query table on stdout in --format (instead of the summary,
    which a --summary file still receives)."""
    ref = tmp_path / "pq.csv"
    summary = tmp_path / "s.csv"
    base = ["evaluate", files["a"], files["b"], "--qrels", files["qrels"], "-m", "AP", "-q"]
    assert cli(capsys, *base, "--per-query", ref)[0] == 0
    rc, out, err = cli(capsys, *base, "--per-query", "-", "--format", "csv",
                       "--summary", summary)  # fmt: skip
    assert rc == 0, err
    assert out == ref.read_text()
    assert pl.read_csv(summary).height == 2  # one row per system
    rc, out, _ = cli(capsys, *base, "--per-query", "-", "--format", "json")
    assert rc == 0
    assert json.loads(out) == pl.read_csv(ref).to_dicts()


def test_per_query_to_dash_with_compare_is_one_line(capsys, files) -> None:
    rc, out, err = cli(capsys, "evaluate", files["a"], files["b"], "--qrels", files["qrels"],
                       "--per-query", "-", "--compare")  # fmt: skip
    assert "--per-query -" in one_line_error(rc, err)
    assert out == ""


TABLES = {
    "evaluate": ["evaluate", "-m", "AP", "-q", "--summary"],
    "compare": ["compare", "-m", "AP", "--output"],
    "power": ["power", "-m", "AP", "-o"],
    "agreement": ["agreement", "-m", "AP", "-m", "P@1", "-o"],
}


@pytest.mark.parametrize("command", TABLES)
def test_a_table_to_dash_is_stdout(capsys, files, tmp_path, monkeypatch, command) -> None:
    """The table a command prints on stdout goes there with `-` too (as without the flag),
    not 'cannot tell the output format of -'."""
    monkeypatch.chdir(tmp_path)
    name, *flags = TABLES[command]
    args = [name, files["a"], files["b"], "--qrels", files["qrels"], "--format", "csv", *flags]
    rc, printed, err = cli(capsys, *args[:-1])
    assert rc == 0, err
    rc, out, err = cli(capsys, *args, "-")
    assert rc == 0, err
    assert out == printed
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("flag", ["--swapped", "--curve"])
def test_a_second_table_to_dash_is_one_line(capsys, files, flag) -> None:
    """agreement's --swapped and --curve are second tables: stdout holds the first."""
    extra = ["--power", "--resamples", "20"] if flag == "--curve" else []
    rc, out, err = cli(capsys, "agreement", files["a"], files["b"], "--qrels", files["qrels"],
                       "-m", "AP", "-m", "P@1", *extra, flag, "-")  # fmt: skip
    line = one_line_error(rc, err)
    assert f"{flag} -" in line and "standard output" in line
    assert out == ""


# --- `-` as an input is standard input, for every command (as `preval trec QRELS -` reads it) --


# (bytes: a pipe's contents are compared byte for byte)
python_m = partial(commands.python_m, text=False)


def test_a_run_from_stdin_is_the_run_file(files) -> None:
    """`preval evaluate - --qrels QRELS < run` said 'run file not found: -'; it reads stdin."""
    ref = python_m("evaluate", files["a"], "--qrels", files["qrels"], "-q", "--format", "csv")
    assert ref.returncode == 0, ref.stderr
    got = python_m("evaluate", "-", "--qrels", files["qrels"], "-q", "--format", "csv",
                   stdin=files["a"].read_bytes())  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert got.stdout == ref.stdout
    qrels = python_m("evaluate", files["a"], "--qrels", "-", "-q", "--format", "csv",
                     stdin=files["qrels"].read_bytes())  # fmt: skip
    assert qrels.returncode == 0, qrels.stderr
    assert qrels.stdout == ref.stdout


def test_a_fused_run_pipes_into_the_next_command(files, tmp_path: Path) -> None:
    """`preval fuse - b.run -o - | preval trec QRELS -`: both ends of a pipe."""
    ref = tmp_path / "f.run"
    assert python_m("fuse", files["a"], files["b"], "-o", ref).returncode == 0
    fused = python_m("fuse", "-", files["b"], "-o", "-", stdin=files["a"].read_bytes())
    assert fused.returncode == 0, fused.stderr
    # the run read from stdin is named by its tag (A), as the file is: the same fused run
    assert fused.stdout == ref.read_bytes()
    trec = python_m("trec", "-m", "map", files["qrels"], "-", stdin=fused.stdout)
    assert trec.returncode == 0, trec.stderr
    assert trec.stdout == python_m("trec", "-m", "map", files["qrels"], ref).stdout


@pytest.mark.parametrize(
    "args", [["evaluate", "-", "--qrels", "-"], ["trec", "-", "-"], ["fuse", "-", "-", "-o", "-"]]
)
def test_stdin_given_twice_is_one_line(args) -> None:
    done = python_m(*args, stdin=RUN_A.encode())
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err.count("\n") == 1 and "standard input" in err and "Traceback" not in err
    assert done.stdout == b""


# --- an output under a file -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["x.csv", "x.run"])
def test_an_output_under_a_file_says_so(capsys, files, name) -> None:
    """`--per-query a.run/x.csv` said 'directory a.run does not exist': it is a file."""
    target = files["a"] / name
    command = (
        ["evaluate", files["a"], "--qrels", files["qrels"], "--per-query", target]
        if name.endswith(".csv")
        else ["fuse", files["a"], files["b"], "-o", target]
    )
    rc, _, err = cli(capsys, *command)
    line = one_line_error(rc, err)
    assert f"{files['a']} is a file, not a directory" in line
    assert files["a"].read_text() == RUN_A


# --- an output that is a link or a stream is written through, never replaced -----------------


def _writing(files: dict[str, Path], target: Path) -> list[object]:
    """A command writing a table to `target` (.csv), or a fused TREC run (any other name)."""
    if target.name.endswith(".csv"):
        return ["evaluate", files["a"], "--qrels", files["qrels"], "-q", "--per-query", target]
    return ["fuse", files["a"], files["b"], "-o", target]


@pytest.mark.parametrize("name", ["pq.csv", "fused.run"])
def test_an_output_through_a_symlink_keeps_the_link(capsys, files, tmp_path, name) -> None:
    """The hidden file was renamed over the link: the link became a plain file, and the file
    it pointed to (`latest.csv -> 2026-11/pq.csv`, a common layout) kept its old content."""
    (tmp_path / "real").mkdir()
    real, link = tmp_path / "real" / name, tmp_path / f"link-{name}"
    real.write_text("old\n")
    link.symlink_to(real)
    reference = tmp_path / f"ref-{name}"
    for target in (reference, link):
        rc, _, err = cli(capsys, *_writing(files, target))
        assert rc == 0, err
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.read_bytes() == reference.read_bytes()
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == [name]  # nothing left


@pytest.mark.parametrize("name", ["pq.csv", "fused.run"])
def test_an_output_on_a_named_pipe_is_written_into_it(capsys, files, tmp_path, name) -> None:
    """A named pipe (`mkfifo`, a reader waiting on it) was replaced by a regular file: the
    reader got nothing and waited for ever; it gets the complete output."""
    fifo, reference = tmp_path / name, tmp_path / f"ref-{name}"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    for target in (fifo, reference):
        rc, _, err = cli(capsys, *_writing(files, target))
        assert rc == 0, err
    reader.join(timeout=10)
    assert got == [reference.read_bytes()]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_plot_through_a_symlink_keeps_the_link(capsys, files, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    real, link = tmp_path / "real.svg", tmp_path / "link.svg"
    real.write_text("old")
    link.symlink_to(real)
    rc, out, err = cli(capsys, "plot", "pr", files["a"], files["b"], "--qrels", files["qrels"],
                       "-o", link)  # fmt: skip
    assert rc == 0, err
    assert out.strip() == str(link)
    assert link.is_symlink() and real.read_text().lstrip().startswith("<?xml")
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


# --- the same input gives the same bytes ------------------------------------------------------


def test_power_is_the_same_bytes_for_any_row_order(capsys, tmp_path: Path) -> None:
    """`preval power` differed in the last digits from run to run, on one file (the mean and
    sd of the differences summed in the order a parallel join gave them)."""
    rng = np.random.default_rng(7)
    n = 400
    table = pl.DataFrame(
        {
            "system": np.repeat(["s1", "s2", "s3"], n),
            "query": np.tile([f"q{i:03d}" for i in range(n)], 3),
            "AP": rng.random(3 * n),
            "nDCG@10": rng.random(3 * n),
        }
    )
    printed = set()
    for seed in range(6):
        path = tmp_path / f"pq{seed}.parquet"
        table.sample(fraction=1.0, shuffle=True, seed=seed).write_parquet(path)
        rc, out, err = cli(capsys, "power", path, "--per-query-table", "--format", "csv")
        assert rc == 0, err
        printed.add(out)
    assert len(printed) == 1
    # the mean difference is the plain one (numpy, an independent sum), to the last bits' noise
    got = pl.read_csv(io.StringIO(printed.pop())).filter(
        (pl.col("system") == "s2") & (pl.col("baseline") == "s1") & (pl.col("measure") == "AP")
    )
    ap = table["AP"].to_numpy().reshape(3, n)
    assert got["delta_observed"][0] == pytest.approx((ap[1] - ap[0]).mean(), rel=1e-12)
    assert got["sd"][0] == pytest.approx((ap[1] - ap[0]).std(ddof=1), rel=1e-12)


# --- a command's outputs appear together, or none ---------------------------------------------


def test_compare_checks_its_plot_before_any_work(capsys, files, tmp_path) -> None:
    """`compare --output c.csv --plot nodir/x.png` wrote c.csv, then refused the plot."""
    out, plot = tmp_path / "c.csv", tmp_path / "nodir" / "x.png"
    rc, _, err = cli(capsys, "compare", files["a"], files["b"], "--qrels", files["qrels"],
                     "-m", "AP", "--output", out, "--plot", plot)  # fmt: skip
    assert "nodir" in one_line_error(rc, err)
    assert not out.exists()


def test_compare_writes_no_output_when_its_plot_fails(capsys, files, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import preval.plot
    from preval.errors import InputError

    def fail(fig, path):
        msg = f"cannot write {path}: No space left on device (nothing was written)"
        raise InputError(msg)

    monkeypatch.setattr(preval.plot, "_save", fail)
    out = tmp_path / "c.csv"
    rc, _, err = cli(capsys, "compare", files["a"], files["b"], "--qrels", files["qrels"],
                     "-m", "AP", "--output", out, "--plot", tmp_path / "x.png")  # fmt: skip
    assert "No space left" in one_line_error(rc, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a.run", "b.run", "qrels.txt"])


# --- a full disk under stdout -------------------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("command", ["evaluate", "fuse", "measures"])
def test_stdout_on_a_full_disk_is_one_line_naming_it(files, command) -> None:
    """`preval ... > /dev/full` said '[Errno 28] No space left on device', naming nothing."""
    args = {
        "evaluate": ["evaluate", files["a"], "--qrels", files["qrels"], "-q"],
        "fuse": ["fuse", files["a"], files["b"], "-o", "-"],
        "measures": ["measures"],
    }[command]
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "preval", *map(str, args)],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith("preval: error: cannot write standard output: No space left on device")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_a_stream_output_that_fails_names_it(capsys, files) -> None:
    """`fuse -o /dev/full` (a device the output is copied into) named nothing either."""
    rc, _, err = cli(capsys, "fuse", files["a"], files["b"], "-o", "/dev/full")
    assert "cannot write /dev/full: No space left on device" in one_line_error(rc, err)


@pytest.mark.parametrize("command", ["evaluate", "fuse", "compare", "plot"])
def test_an_output_on_a_symlink_loop_is_one_line(capsys, files, tmp_path, command) -> None:
    """A symbolic link to itself as the output was a RuntimeError traceback (exit 1)."""
    if command == "plot":
        pytest.importorskip("matplotlib")
    loop = tmp_path / {"fuse": "loop.run", "plot": "loop.png"}.get(command, "loop.csv")
    loop.symlink_to(loop.name)
    args = {
        "evaluate": ["evaluate", files["a"], "--qrels", files["qrels"], "--per-query", loop],
        "fuse": ["fuse", files["a"], files["b"], "-o", loop],
        "compare": ["compare", files["a"], files["b"], "--qrels", files["qrels"], "--output", loop],
        "plot": ["plot", "pr", files["a"], files["b"], "--qrels", files["qrels"], "-o", loop],
    }[command]
    rc, _, err = cli(capsys, *args)
    assert f"cannot write {loop}" in one_line_error(rc, err)
    assert loop.is_symlink()


@pytest.mark.parametrize("suffix", [".json", ".ndjson", ".jsonl"])
def test_fuse_to_json_writes_json(capsys, files, tmp_path, suffix) -> None:
    """`preval fuse ... -o fused.json` wrote a TREC run under the name .json."""
    out, table = tmp_path / f"fused{suffix}", tmp_path / "fused.csv"
    for target in (out, table):
        rc, _, err = cli(capsys, "fuse", files["a"], files["b"], "-o", target)
        assert rc == 0, err
    text = out.read_text()
    rows = json.loads(text) if suffix == ".json" else [json.loads(r) for r in text.splitlines()]
    assert rows == pl.read_csv(table).to_dicts()


# --- an output asked for is written, or the command says why not -------------------------------


@pytest.mark.parametrize(
    ("flag", "power"), [("--curve", []), ("--swapped", ["--power", "--resamples", "20"])]
)
def test_agreement_refuses_an_output_it_would_not_write(capsys, files, tmp_path, flag, power):
    """`agreement --curve c.csv` without --power (and --swapped with it) exited 0 and wrote
    nothing: the pipeline's next step found no file."""
    target = tmp_path / "out.csv"
    rc, out, err = cli(capsys, "agreement", files["a"], files["b"], "--qrels", files["qrels"],
                       "-m", "AP", "-m", "P@1", *power, flag, target)  # fmt: skip
    line = one_line_error(rc, err)
    assert flag in line and "--power" in line
    assert not target.exists() and out == ""


# --- a flag that would change nothing is refused, not ignored ----------------------------------


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--long"], "--long shapes the per-query output: add --per-query"),
        (["--long", "--per-query", "{pq}", "--bounds"], "--long and --bounds"),
    ],
)
def test_evaluate_refuses_long_where_it_shapes_nothing(capsys, files, extra, said) -> None:
    """`evaluate --long` without --per-query (or with --bounds, whose table stays wide) exited
    0 and wrote the summary, as if --long were not given."""
    target = files["a"].parent / "pq.csv"
    args = [str(target) if a == "{pq}" else a for a in extra]
    rc, out, err = cli(capsys, "evaluate", files["a"], "--qrels", files["qrels"], "-m", "AP",
                       *args)  # fmt: skip
    assert rc == 2 and out == ""
    assert said in one_line_error(rc, err)
    assert not target.exists()


def test_fuse_refuses_a_tag_for_a_table(capsys, files, tmp_path) -> None:
    """`fuse --tag T -o fused.parquet` exited 0 with no tag anywhere: a table has no tag."""
    target = tmp_path / "fused.parquet"
    rc, _, err = cli(capsys, "fuse", files["a"], files["b"], "--tag", "mine", "-o", target)
    assert "--tag names a TREC run's tag" in one_line_error(rc, err)
    assert not target.exists()
    rc, _, err = cli(capsys, "fuse", files["a"], files["b"], "--tag", "mine", "-o",
                     tmp_path / "fused.run")  # fmt: skip
    assert rc == 0, err
    assert (tmp_path / "fused.run").read_text().split("\n")[0].endswith(" mine")


# --- a copy that fails on a full disk blames the disk, not the input -------------------------


class _CopiesToDevFull:
    """A spill folder whose files are /dev/NAME: a copy named ``full`` is written to /dev/full,
    where every write fails as on a full disk (ENOSPC)."""

    def __init__(self, prefix: str = "", dir: object = None) -> None:
        self.path = Path("/dev")

    def cleanup(self) -> None:
        pass


@pytest.mark.parametrize("kind", ["stream", "bzip2"])
def test_a_copy_on_a_full_disk_names_the_disk(capsys, files, monkeypatch, kind) -> None:
    """A run read from a pipe, or decompressed from bzip2, is copied to TMPDIR first. On a
    full disk the bzip2 copy said that the file 'cannot be read as bzip2 (... No space left
    on device) (rule: a compressed file is complete ... write or copy it again)', blaming a
    sound file; the pipe's copy was a bare '[Errno 28]'."""
    import bz2

    from preval import io as preval_io

    run = files["a"].parent / ("full" if kind == "stream" else "full.bz2")
    if kind == "stream":
        os.mkfifo(run)

        def feed() -> None:
            with open(run, "w") as pipe:
                pipe.write(RUN_A)

        threading.Thread(target=feed, daemon=True).start()
    else:
        run.write_bytes(bz2.compress(RUN_A.encode()))
    monkeypatch.setattr(preval_io, "SpillDirectory", _CopiesToDevFull)
    rc, _, err = cli(capsys, "trec", files["qrels"], run)
    line = one_line_error(rc, err)
    assert "its copy in / failed: No space left on device" in line and "TMPDIR" in line
    assert "cannot be read" not in line
