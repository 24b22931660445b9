"""The command line: outputs, exit codes, one-line errors, atomic files (DESIGN §6, §7).

Most tests call `preval.cli.main([...])` in-process and read stdout/stderr with capsys; a
few run ``python -m preval`` in a subprocess for the real exit code and the absence of a
traceback.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

import preval
from preval.cli import main

from .commands import python_m

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PARQUET = FIXTURES / "example.parquet"
RUN = FIXTURES / "example_run.csv"
QRELS = FIXTURES / "example_qrels.csv"
SYSTEMS = ["bm25", "dense", "hybrid"]
N_QUERIES = 300  # judged queries per system
CHECKED = ["AP", "P@10", "nDCG@10", "RR", "Rprec"]


def cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """Run `main` in-process: (exit code, stdout, stderr)."""
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def measures_args(names: list[str]) -> list[str]:
    return [a for m in names for a in ("-m", m)]


def assert_one_line_error(rc: int, err: str) -> None:
    assert rc == 2
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("preval: error:")


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------


def test_example_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "evaluate", PARQUET, "--by", "system")
    assert rc == 0
    lines = out.strip().splitlines()
    header = lines[0].split()
    assert header[:3] == ["system", "NumQ", "AP"]
    rows = [line.split() for line in lines[1:]]
    assert [r[0] for r in rows] == SYSTEMS
    assert [r[header.index("NumQ")] for r in rows] == [str(N_QUERIES)] * 3
    for r in rows:
        assert 0.0 < float(r[header.index("AP")]) < 1.0


def test_python_m_preval_exit_code() -> None:
    proc = python_m("evaluate", PARQUET, "--by", "system", "-m", "AP", "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert [line.split()[0] for line in proc.stdout.strip().splitlines()] == ["system", *SYSTEMS]


def test_run_and_qrels_match_the_joined_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The same data in two shapes (fixtures/README.md: joined = run LEFT JOIN qrels + misses).
    ms = measures_args(CHECKED)
    pq_joined, pq_split = tmp_path / "joined.parquet", tmp_path / "split.parquet"
    rc, out, _ = cli(
        capsys, "evaluate", PARQUET, "--by", "system", *ms, "--format", "json", "-q",
        "--per-query", pq_joined,
    )  # fmt: skip
    assert rc == 0
    joined = json.loads(out)
    rc, out, _ = cli(
        capsys, "evaluate", RUN, "--qrels", QRELS, "--by", "system", *ms, "--format", "json",
        "-q", "--per-query", pq_split,
    )  # fmt: skip
    assert rc == 0
    split = json.loads(out)
    assert [r["system"] for r in joined] == [r["system"] for r in split] == SYSTEMS
    for a, b in zip(joined, split, strict=True):
        assert a["NumQ"] == b["NumQ"] == N_QUERIES
        for m in CHECKED:
            assert abs(a[m] - b[m]) <= 1e-12, (a["system"], m, a[m], b[m])
    # and query by query
    left, right = pl.read_parquet(pq_joined), pl.read_parquet(pq_split)
    assert left.height == right.height == 3 * N_QUERIES
    assert left.select("system", "query").equals(right.select("system", "query"))
    for m in CHECKED:
        assert (left[m] - right[m]).abs().max() <= 1e-12, m


READERS: dict[str, Callable[[Path], pl.DataFrame]] = {
    "parquet": pl.read_parquet,
    "csv": pl.read_csv,
    "tsv": lambda p: pl.read_csv(p, separator="\t"),
    "json": pl.read_json,
    "ndjson": pl.read_ndjson,
}


@pytest.mark.parametrize("suffix", list(READERS))
def test_per_query_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"out.{suffix}"
    rc, _, _ = cli(
        capsys, "evaluate", PARQUET, "--by", "system", "-m", "AP", "-m", "P@10", "-q",
        "--per-query", target,
    )  # fmt: skip
    assert rc == 0
    df = READERS[suffix](target)
    assert df.columns == ["system", "query", "AP", "P@10"]
    assert df.height == 3 * N_QUERIES
    assert df.select("system", "query").n_unique() == df.height
    assert sorted(df["system"].unique().to_list()) == SYSTEMS
    assert df["AP"].is_between(0, 1).all()
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temporary files


def test_per_query_long(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    wide, long = tmp_path / "wide.parquet", tmp_path / "long.parquet"
    args = ["evaluate", PARQUET, "--by", "system", "-m", "AP", "-m", "P@10", "-q"]
    assert cli(capsys, *args, "--per-query", wide)[0] == 0
    assert cli(capsys, *args, "--per-query", long, "--long")[0] == 0
    df = pl.read_parquet(long)
    assert df.columns == ["system", "query", "measure", "value"]
    assert df.height == 2 * 3 * N_QUERIES
    assert sorted(df["measure"].unique().to_list()) == ["AP", "P@10"]
    back = df.pivot(on="measure", index=["system", "query"], values="value").sort("system", "query")
    assert back.select("system", "query", "AP", "P@10").equals(pl.read_parquet(wide))


def test_summary_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "summary.csv"
    rc, out, _ = cli(
        capsys, "evaluate", PARQUET, "--by", "system", "-m", "AP", "-m", "NumRet", "-q",
        "--summary", target, "--format", "json",
    )  # fmt: skip
    assert rc == 0
    df = pl.read_csv(target)
    assert df.columns == ["system", "NumQ", "AP", "NumRet"]
    assert df["system"].to_list() == SYSTEMS
    assert df["NumQ"].to_list() == [N_QUERIES] * 3
    printed = json.loads(out)  # the same table on stdout
    assert [r["AP"] for r in printed] == pytest.approx(df["AP"].to_list(), abs=1e-12)
    # counts are summed: NumRet is the number of retrieved rows of the judged queries
    unjudged = ["q301", "q302", "q303"]  # fixtures/README.md: run by bm25 only, not evaluated
    retrieved = pl.col("score").is_not_null() & ~pl.col("query").is_in(unjudged)
    counts = pl.read_parquet(PARQUET).filter(retrieved).group_by("system").len().sort("system")
    expected = counts["len"].to_list()
    assert df["NumRet"].to_list() == expected


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_format_on_stdout(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    rc, out, _ = cli(capsys, "evaluate", PARQUET, "--by", "system", "-m", "AP", "--format", fmt)
    assert rc == 0
    rows = pl.read_csv(io.StringIO(out)).to_dicts() if fmt == "csv" else json.loads(out)
    assert [r["system"] for r in rows] == SYSTEMS
    assert [r["NumQ"] for r in rows] == [N_QUERIES] * 3
    assert all(0 < r["AP"] < 1 for r in rows)


def test_audit_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(capsys, "evaluate", PARQUET, "--by", "system", "-m", "AP")
    assert rc == 0
    assert re.search(r"^preval: 900 queries evaluated\b", err, re.MULTILINE), err
    assert "3 retrieved but not judged" in err
    rc, _, err = cli(capsys, "evaluate", PARQUET, "--by", "system", "-m", "AP", "-q")
    assert rc == 0
    assert err == ""


# ---------------------------------------------------------------------------------------------
# Errors: exit 2, one line on stderr, no traceback
# ---------------------------------------------------------------------------------------------

HEADER = "query,doc,score,label\n"
ERRORS: dict[str, tuple[Callable[[Path], list[object]], str]] = {
    "missing-input": (lambda d: [d / "nope.parquet"], "file not found"),
    "missing-qrels": (lambda d: [RUN, "--qrels", d / "nope.csv"], "file not found"),
    "unknown-measure": (lambda d: [PARQUET, "-m", "Bogus@10"], "unknown measure 'Bogus'"),
    "bad-cutoff": (lambda d: [PARQUET, "-m", "P@0"], "'P@0'"),
    "missing-column": (lambda d: [PARQUET, "--label", "grade"], "'grade'"),
    "nan-score": (
        lambda d: [write(d / "nan.csv", HEADER + "q1,a,NaN,1\nq1,b,0.5,0\n")],
        "NaN",
    ),
    "non-numeric-score": (
        lambda d: [write(d / "str.csv", HEADER + "q1,a,high,1\nq1,b,0.5,0\n")],
        "'score'",
    ),
    "duplicate": (
        lambda d: [write(d / "dup.csv", HEADER + "q1,a,1.0,1\nq1,a,0.5,0\n")],
        "repeat a (query, doc) pair",
    ),
    "unknown-suffix": (lambda d: [PARQUET, "--per-query", d / "out.xyz"], "out.xyz"),
    "parquet-to-stdout": (lambda d: [PARQUET, "--format", "parquet"], "parquet"),
    "malformed-csv": (
        lambda d: [write(d / "bad.csv", HEADER + "q1,a,1.0,1\nq1,b,0.5,0,7,7\n")],
        "preval: error:",
    ),
    "not-parquet": (lambda d: [write(d / "junk.parquet", "not parquet\n")], "preval: error:"),
    "no-output-dir": (
        lambda d: [PARQUET, "--by", "system", "-m", "AP", "--summary", d / "no" / "s.csv"],
        "does not exist",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_error_exit_code(capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str) -> None:
    make_args, fragment = ERRORS[case]
    rc, out, err = cli(capsys, "evaluate", *make_args(tmp_path))
    assert_one_line_error(rc, err)
    assert fragment in err
    assert out == ""


@pytest.mark.parametrize("case", ["nan-score", "unknown-measure", "malformed-csv"])
def test_error_in_subprocess_has_no_traceback(tmp_path: Path, case: str) -> None:
    make_args, fragment = ERRORS[case]
    proc = python_m("evaluate", *make_args(tmp_path))
    assert_one_line_error(proc.returncode, proc.stderr)
    assert fragment in proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize("command", ["evaluate", "trec"])
def test_an_unknown_flag_is_told_with_its_commands_usage(capsys, command: str) -> None:
    inputs = [PARQUET] if command == "evaluate" else [FIXTURES / "trec" / "qrels.txt",
                                                      FIXTURES / "trec" / "bm25.run"]  # fmt: skip
    with pytest.raises(SystemExit) as info:
        main([command, "--bogus", *map(str, inputs)])
    out, err = capsys.readouterr()
    assert info.value.code == 2 and out == ""
    assert err.startswith(f"usage: preval {command} ")  # not the top level's {command} ...
    assert err.strip().splitlines()[-1] == "preval: error: unrecognized arguments: --bogus"


def test_superscript_cutoff_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = cli(capsys, "evaluate", PARQUET, "-m", "P@²")
    assert_one_line_error(rc, err)


# ---------------------------------------------------------------------------------------------
# Never a partial output file
# ---------------------------------------------------------------------------------------------

OLD = b"old content\n\x00\x01 kept byte for byte\n"


@pytest.mark.parametrize("bad", ["nan-score", "duplicate", "malformed-csv"])
@pytest.mark.parametrize("existing", ["--per-query", "--summary"])
def test_no_output_on_bad_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bad: str, existing: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (source,) = ERRORS[bad][0](data)
    outdir = tmp_path / "out"
    outdir.mkdir()
    old = outdir / "old.csv"
    old.write_bytes(OLD)
    new = outdir / "new.parquet"
    other = "--summary" if existing == "--per-query" else "--per-query"
    rc, _, err = cli(capsys, "evaluate", source, existing, old, other, new)
    assert_one_line_error(rc, err)
    assert old.read_bytes() == OLD
    assert not new.exists()
    assert [p.name for p in outdir.iterdir()] == ["old.csv"]  # no temporary files either


def test_failed_write_leaves_no_temporary_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "taken.csv").mkdir()  # a directory where the file should go: rename fails
    target = tmp_path / "taken.csv"
    rc, _, err = cli(
        capsys, "evaluate", PARQUET, "--by", "system", "-m", "AP", "-q", "--per-query", target
    )
    assert_one_line_error(rc, err)
    assert [p.name for p in tmp_path.iterdir()] == ["taken.csv"]
    assert list((tmp_path / "taken.csv").iterdir()) == []


def test_no_output_when_another_output_fails(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    per_query = tmp_path / "pq.csv"
    per_query.write_bytes(OLD)
    rc, _, err = cli(
        capsys, "evaluate", PARQUET, "--by", "system", "-m", "AP", "-q",
        "--per-query", per_query, "--summary", tmp_path / "missing-dir" / "s.csv",
    )  # fmt: skip
    assert_one_line_error(rc, err)
    assert per_query.read_bytes() == OLD


# ---------------------------------------------------------------------------------------------
# Empty input: exit 0, a warning, an empty per-query file with the right columns
# ---------------------------------------------------------------------------------------------


def test_empty_parquet(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "empty.parquet"
    pl.read_parquet(PARQUET).clear().write_parquet(source)
    target = tmp_path / "pq.csv"
    rc, out, err = cli(
        capsys, "evaluate", source, "--by", "system", "-m", "AP", "-m", "P@10",
        "--per-query", target,
    )  # fmt: skip
    assert rc == 0
    assert re.search(r"^preval: warning: .*", err, re.MULTILINE), err
    assert "Traceback" not in err
    assert target.read_text().strip() == "system,query,AP,P@10"
    assert out.split() == ["system", "NumQ", "AP", "P@10"]


def test_empty_csv_header_only(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = write(tmp_path / "empty.csv", HEADER)
    target = tmp_path / "pq.csv"
    rc, _, err = cli(capsys, "evaluate", source, "-m", "AP", "-m", "P@10", "--per-query", target)
    assert rc == 0
    assert "warning" in err
    assert target.read_text().strip() == "query,AP,P@10"


# ---------------------------------------------------------------------------------------------
# measures, help, version
# ---------------------------------------------------------------------------------------------


def test_measures_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "measures")
    assert rc == 0
    listed = {
        re.match(r"[A-Za-z0-9][A-Za-z0-9_-]*", line).group(0) for line in out.splitlines() if line
    }
    assert listed == set(preval.CATALOGUE)


def test_measures_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, "measures", "--format", "markdown")
    assert rc == 0
    lines = out.strip().splitlines()
    assert len(lines) == 2 + len(preval.CATALOGUE)
    assert all(line.startswith("|") and line.endswith("|") for line in lines)
    assert re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[1])
    n_cols = lines[0].count("|")
    first_cells = [line.strip("|").split("|")[0].strip() for line in lines[2:]]
    assert [re.match(r"[A-Za-z0-9][A-Za-z0-9_-]*", c).group(0) for c in first_cells] == list(
        preval.CATALOGUE
    )
    assert "measure" in lines[0]
    assert all(line.replace("\\|", "").count("|") == n_cols for line in lines)


@pytest.mark.parametrize("argv", [["--help"], ["evaluate", "--help"]])
def test_help_shows_examples(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    assert "preval evaluate fixtures/example.parquet --by system" in out
    if argv[0] == "evaluate":
        for option in ("--qrels", "--per-query", "--summary", "--format", "--by"):
            assert option in out


def test_every_subcommand_says_what_it_does_and_each_flag_what_it_means() -> None:
    # `preval measures --help` printed its usage and a bare `--format {table,markdown}` only
    import argparse

    from preval.cli import COMMANDS, parser

    subcommands = next(
        a for a in parser([])._actions if isinstance(a, argparse._SubParsersAction)
    ).choices
    assert set(subcommands) == set(COMMANDS)
    for name, command in subcommands.items():
        assert command.description, name
        for action in command._actions:
            if action.help != argparse.SUPPRESS:
                assert action.help, f"preval {name} {'/'.join(action.option_strings)}"


def test_version() -> None:
    proc = python_m("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"preval {preval.__version__}"


@pytest.mark.parametrize("large", [False, True])
def test_engines_print_the_same_outputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch, large: bool
) -> None:
    # large: every input counts as large, so auto takes the chunked engine
    if large:
        monkeypatch.setattr("preval.engines.SMALL_BYTES", 0)
    outputs = []
    for engine in ("in-memory", "streaming", "chunked", "partitioned", "auto"):
        per_query = tmp_path / f"{engine}.parquet"
        rc, out, err = cli(capsys, "evaluate", PARQUET, "--by", "system", "--engine", engine,
                           "--format", "csv", "--per-query", per_query)  # fmt: skip
        assert rc == 0
        outputs.append((out, err, pl.read_parquet(per_query)))
    first = outputs[0]
    for out, err, table in outputs[1:]:
        assert (out, err) == first[:2]
        assert table.equals(first[2])


@pytest.mark.parametrize("options", [[], ["-q", "-c"], ["-q", "-M", "5", "-J"]])
def test_trec_engines_print_the_same_lines(
    capsys: pytest.CaptureFixture[str], monkeypatch, options: list[str]
) -> None:
    # both thresholds at 0: auto reads the run in chunks and joins each chunk's judgments
    monkeypatch.setattr("preval.engines.SMALL_BYTES", 0)
    monkeypatch.setattr("preval.engines.SMALL_QRELS_BYTES", 0)
    trec_dir = FIXTURES / "trec"
    files = [trec_dir / "qrels.txt", trec_dir / "bm25.run", trec_dir / "hybrid.run.gz"]
    printed = []
    for engine in ("in-memory", "streaming", "chunked", "partitioned", "auto"):
        rc, out, err = cli(capsys, "trec", *options, "--engine", engine, *files)
        assert rc == 0, err
        printed.append(out)
    assert len(printed[0].splitlines()) > 20
    assert printed[1:] == printed[:1] * 4


def test_auto_engine_takes_the_partitioned_engine_for_rows_not_grouped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch
) -> None:
    shuffled = tmp_path / "shuffled.parquet"
    pl.read_parquet(PARQUET).sample(fraction=1.0, shuffle=True, seed=1).write_parquet(shuffled)
    rc, _, err = cli(capsys, "evaluate", shuffled, "--by", "system", "--engine",
                               "chunked")  # fmt: skip
    assert_one_line_error(rc, err)
    assert "not grouped by (system, query)" in err
    assert "--engine partitioned" in err
    monkeypatch.setattr("preval.engines.SMALL_BYTES", 0)
    # auto decides before it runs: the chunked engine is never started on these rows
    chosen = []
    real = preval.engines.collect_partitioned
    monkeypatch.setattr("preval.engines.collect_chunked", lambda *a, **k: pytest.fail("chunked"))
    monkeypatch.setattr(
        "preval.engines.collect_partitioned", lambda *a, **k: chosen.append(1) or real(*a, **k)
    )
    rc, auto_out, _ = cli(capsys, "evaluate", shuffled, "--by", "system")
    assert rc == 0 and chosen == [1]
    rc, memory_out, _ = cli(capsys, "evaluate", PARQUET, "--by", "system", "--engine",
                            "in-memory")  # fmt: skip
    assert auto_out == memory_out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal(monkeypatch) -> None:
    from preval.cli.common import progress as _progress

    tty = _Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    with _progress("evaluating") as report:
        time.sleep(0.7)
        report(12_345_678)  # the chunked engine reports rows read
        time.sleep(0.6)
    shown = tty.getvalue()
    assert "preval: evaluating ... 0." in shown
    assert re.search(r"preval: evaluating \.\.\. 12,345,678 rows read, 1\.\d s", shown), shown
    assert shown.endswith("\r\x1b[K")  # the line is cleared afterwards
    quiet = _Terminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    with _progress("evaluating", quiet=True):
        time.sleep(0.7)
    assert quiet.getvalue() == ""
    pipe = io.StringIO()  # not a terminal: a pipeline's stderr stays clean
    monkeypatch.setattr(sys, "stderr", pipe)
    with _progress("evaluating"):
        time.sleep(0.7)
    assert pipe.getvalue() == ""


# ---------------------------------------------------------------------------------------------
# Every command reads tables and TREC files through one input stage, and says its query set
# ---------------------------------------------------------------------------------------------

TREC = FIXTURES / "trec"


@pytest.mark.parametrize("command", ["evaluate", "trec", "compare", "plot"])
def test_engine_flags_on_every_evaluating_subcommand(capsys, command: str) -> None:
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    engines = "{" + ",".join(preval.engines.CHOICES) + "}"
    assert re.search(rf"--engine {re.escape(engines)}", text), text
    assert "--memory-limit SIZE" in text
    assert "--tmp-dir DIR" in text
    assert re.search(r"--input-format \{auto,table,trec\}", text), text


def test_trec_reads_tables_as_it_reads_trec_files(capsys, tmp_path: Path) -> None:
    # the bm25 rows of the run CSV are fixtures/trec/bm25.run; the qrels CSV is qrels.txt
    table = tmp_path / "bm25.parquet"
    pl.read_csv(RUN).filter(pl.col("system") == "bm25").write_parquet(table)
    args = ["trec", "-c", "-q", "-m", "map", "-m", "P.10", "-m", "runid"]
    rc, trec_files, _ = cli(capsys, *args, TREC / "qrels.txt", TREC / "bm25.run")
    assert rc == 0
    rc, tables, _ = cli(capsys, *args, QRELS, table)
    assert rc == 0
    assert tables == trec_files and len(trec_files.splitlines()) == 2 * N_QUERIES + 3
    # a table's system column names its runs, as run tags do
    rc, several, _ = cli(capsys, "trec", "-c", "-m", "map", TREC / "qrels.txt", RUN)
    assert rc == 0
    assert [line.split()[0] for line in several.splitlines()] == SYSTEMS
    assert several.splitlines()[0] == "bm25\t" + trec_files.splitlines()[-2]  # map, all


def test_evaluate_and_compare_read_several_run_files(capsys) -> None:
    runs = [TREC / "bm25.run", TREC / "hybrid.run.gz"]
    rc, out, _ = cli(capsys, "evaluate", *runs, "--qrels", QRELS, "-m", "AP", "--format", "csv",
                     "-q")  # fmt: skip
    assert rc == 0
    table = pl.read_csv(io.StringIO(out))
    assert table["system"].to_list() == ["bm25", "hybrid"]
    rc, out, err = cli(capsys, "compare", *runs, "--qrels", QRELS, "-m", "AP", "--format", "csv",
                       "--engine", "partitioned")  # fmt: skip
    assert rc == 0, err
    compared = pl.read_csv(io.StringIO(out)).row(0, named=True)
    assert (compared["system"], compared["baseline"]) == ("hybrid", "bm25")
    assert [compared["baseline_mean"], compared["mean"]] == pytest.approx(table["AP"].to_list())
    rc, _, err = cli(capsys, "evaluate", runs[0], PARQUET, "--qrels", QRELS)
    assert_one_line_error(rc, err)
    assert "is a table (.parquet) and" in err


def test_the_query_set_is_said(capsys) -> None:
    rc, _, err = cli(capsys, "evaluate", PARQUET, "--by", "system", "-m", "AP")
    assert rc == 0
    assert re.search(r"^preval: 300 judged queries per system \(--queries judged, as trec_eval "
                     r"-c: every judged query counts", err, re.M), err  # fmt: skip
    rc, _, err = cli(capsys, "evaluate", RUN, "--qrels", QRELS, "--by", "system", "-m", "AP",
                     "--queries", "retrieved")  # fmt: skip
    assert rc == 0
    assert "preval: 298 to 300 retrieved queries per system (--queries retrieved" in err
    qrels, runs = TREC / "qrels.txt", [TREC / "bm25.run", TREC / "hybrid.run.gz"]
    rc, out, err = cli(capsys, "trec", "-m", "map", qrels, *runs)
    assert rc == 0
    assert err == (
        "preval: 298 to 300 retrieved queries per run (trec_eval's default, without -c: "
        "judged queries with a result only)\n"
    )
    assert "preval" not in out  # stdout is trec_eval's, byte for byte
    rc, _, err = cli(capsys, "trec", "-c", "-m", "map", qrels, runs[1])
    assert rc == 0
    assert err.startswith("preval: 300 judged queries (-c: every judged query counts")
    rc, _, err = cli(capsys, "compare", *runs, "--qrels", qrels, "-m", "AP")
    assert rc == 0
    assert "preval: 300 queries per comparison (judged queries, as trec_eval -c)" in err


# ---------------------------------------------------------------------------------------------
# A closed pipe ends quietly; progress shows the total and the time left
# ---------------------------------------------------------------------------------------------


def first_line_then_close(*args: object) -> tuple[bytes, int, str]:
    """Run ``python -m preval ARGS | head -1``: read one line, close the pipe, and return
    that line, the exit code and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "preval", *map(str, args)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    line = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return line, proc.wait(timeout=60), err


def test_a_closed_pipe_ends_quietly() -> None:
    # 280 kB of per-query lines: far more than a pipe holds, so a write meets the closed pipe
    line, rc, err = first_line_then_close("trec", "-q", TREC / "qrels.txt", TREC / "bm25.run")
    assert line.startswith(b"num_ret")
    assert rc == 141  # 128 + SIGPIPE, as a shell reports a Unix tool that SIGPIPE ended
    # stderr holds the query set only: no "Broken pipe", no "Exception ignored", no traceback
    assert err == (
        "preval: 300 retrieved queries (trec_eval's default, without -c: judged queries with a "
        "result only)\n"
    )
    line, rc, err = first_line_then_close("measures")
    assert line.startswith(b"AP")
    assert rc in (0, 141) and err == ""


def test_progress_shows_the_total_and_the_time_left(monkeypatch) -> None:
    from preval.cli.common import progress

    tty = _Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    with progress("evaluating", total=lambda: 4 * 12_345_678) as report:
        report(12_345_678)
        time.sleep(1.2)
    shown = tty.getvalue()
    found = re.findall(r"12,345,678 of 49,382,712 rows read \(25%\), (\d\.\d) s, about (\d+) s "
                       r"left", shown)  # fmt: skip
    assert found, shown
    for elapsed, left in found:  # three quarters to go at the pace of the first quarter
        assert abs(int(left) - 3 * float(elapsed)) <= 1


def test_the_rows_to_read_are_counted_without_evaluating(tmp_path: Path) -> None:
    from preval.cli.common import read_inputs, rows_to_read
    from preval.planner import build_plan

    csv = tmp_path / "joined.csv"
    pl.read_parquet(PARQUET).write_csv(csv)
    cases = [([PARQUET], None, pl.read_parquet(PARQUET).height),  # Parquet metadata
             ([csv], None, pl.read_parquet(PARQUET).height),  # lines but the header
             ([RUN], QRELS, pl.read_csv(RUN).height),  # the run, not its qrels
             ([TREC / "bm25.run"], TREC / "qrels.txt", 12063)]  # fmt: skip
    for paths, qrels, rows in cases:
        inputs = read_inputs(paths, qrels and str(qrels))
        plan = build_plan(inputs.data, ["P@10"], qrels=inputs.qrels, options=inputs.options(
            preval.Options.of({"by": "system"} if qrels is None else {})))  # fmt: skip
        assert rows_to_read(plan, inputs)() == rows, paths


def test_one_query_is_said_in_the_singular(capsys, tmp_path: Path) -> None:
    # "1 queries evaluated", "1 judged queries", "1 queries per comparison" before
    data = write(tmp_path / "two.csv", "system,query,doc,score,label\n"
                 "a,q1,d1,0.9,1\na,q1,d2,0.8,0\nb,q1,d1,0.1,1\nb,q1,d2,0.8,0\n")  # fmt: skip
    rc, _, err = cli(capsys, "evaluate", data, "-m", "AP", "--by", "system")
    assert rc == 0
    assert "preval: 2 queries evaluated" in err  # (one per system: still plural)
    assert "preval: 1 judged query per system (" in err
    one = write(tmp_path / "one.csv", "query,doc,score,label\nq1,d1,0.9,1\n")
    rc, _, err = cli(capsys, "evaluate", one, "-m", "AP")
    assert rc == 0
    assert "preval: 1 query evaluated" in err
    rc, _, err = cli(capsys, "compare", data, "-m", "AP")
    assert rc == 0
    assert "preval: 1 query per comparison (" in err
    assert "1 queries" not in err


def test_nan_is_null_in_json_and_nan_in_csv(capsys, tmp_path: Path) -> None:
    # JSON has no NaN: the convention (docs/cli.md, outputs) is null, as Polars writes it;
    # CSV keeps NaN. A custom measure that is 0/0 on a query without a relevant document
    # makes the summary's mean NaN.
    def hits_per_relevant(q: preval.RankedQuery) -> pl.Expr:
        return q.hits().cast(pl.Float64) / q.num_rel.cast(pl.Float64)  # NaN where R = 0

    data = write(tmp_path / "in.csv", "query,doc,score,label\nq1,d1,0.9,1\nq2,d2,0.8,0\n")
    summary_json, summary_csv = tmp_path / "s.json", tmp_path / "s.csv"
    preval.define_measure("HitsPerRel", hits_per_relevant)
    try:
        rc, _, err = cli(capsys, "evaluate", data, "-m", "HitsPerRel", "-m", "P@1",
                         "--summary", summary_json)  # fmt: skip
        assert rc == 0, err
        rc, _, err = cli(capsys, "evaluate", data, "-m", "HitsPerRel", "-m", "P@1",
                         "--summary", summary_csv)  # fmt: skip
        assert rc == 0, err
    finally:
        preval.remove_measure("HitsPerRel")
    assert json.loads(summary_json.read_text()) == [{"NumQ": 2, "HitsPerRel": None, "P@1": 0.5}]
    assert summary_csv.read_text().splitlines() == ["NumQ,HitsPerRel,P@1", "2,NaN,0.5"]


def test_docs_cli_names_every_flag_of_each_subcommand() -> None:
    # a newcomer reads a subcommand's section of docs/cli.md for its flags: compare's synopsis
    # lacked --unjudged-label, --num-positives, --include-inf and --format parquet, fuse's
    # --query, --test, --correction, --format
    import argparse

    from preval.cli import parser

    subcommands = next(
        a for a in parser([])._actions if isinstance(a, argparse._SubParsersAction)
    ).choices
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    sections = {
        m[1]: m[2] for m in re.finditer(r"^## `preval (\w+)`\n(.*?)(?=^## )", page, re.M | re.S)
    }
    assert set(sections) == set(subcommands)

    def named(name: str) -> set[str]:
        text = sections[name]
        found = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text))
        if re.search(r"input and engine flags of `compare`", text):  # (power, agreement)
            found |= named("compare")
        return found

    for name, command in subcommands.items():
        mentioned = named(name)
        for action in command._actions:
            flags = set(action.option_strings) - {"-h", "--help"}
            if not flags or name == "sql":  # (sql: 'the column ... flags of evaluate')
                continue
            if name == "trec" and "-Z" in flags:  # refused by name: docs/trec.md
                continue
            assert flags & mentioned, f"docs/cli.md, preval {name}: {sorted(flags)}"
            if action.choices and isinstance(next(iter(action.choices)), str):
                for flag in flags:
                    for listed in re.findall(rf"{re.escape(flag)} ([\w-]+(?:\|[\w-]+)+)",
                                             sections[name]):  # fmt: skip
                        assert set(listed.split("|")) == set(action.choices), (name, flag)


def test_evaluate_help_says_which_flags_need_the_stats_extra(capsys) -> None:
    # a bare install's --ci 0.95 and --compare stop for scipy: the help says so beforehand
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "t and bca need scipy (preval[stats])" in out
    assert "see preval compare for other tests; needs preval[stats])" in out


def test_top_level_help_says_only_agreement_power_needs_the_stats_extra(capsys) -> None:
    # agreement's Kendall's tau and tau_AP run on a bare install; --power needs scipy
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "and discriminative power (--power: needs preval[stats])" in out
