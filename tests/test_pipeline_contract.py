"""preval as a step of a data pipeline (Make, Airflow, a shell): what it promises there.

stdout carries results only (messages go to stderr), ``-`` as an output path is standard
output wherever stdout can take that output (and one clear line where it cannot), an output
never lands on an input, and a refused command line is one line with exit code 2, never a
traceback. Inputs are small files made in `tmp_path`; the commands run in this process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from preval.cli import main

# two runs over three queries, and their judgments (TREC files): tie-free scores
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d4 1\nq2 0 d5 1\nq3 0 d7 1\nq3 0 d8 0\n"
RUN_A = (
    "q1 Q0 d1 1 0.9 A\nq1 Q0 d2 2 0.8 A\nq1 Q0 d3 3 0.7 A\nq2 Q0 d5 1 0.95 A\n"
    "q2 Q0 d6 2 0.5 A\nq3 Q0 d8 1 0.3 A\nq3 Q0 d7 2 0.2 A\n"
)
RUN_B = (
    "q1 Q0 d3 1 3 B\nq1 Q0 d1 2 2 B\nq2 Q0 d4 1 5 B\nq2 Q0 d6 2 4 B\nq2 Q0 d5 3 1 B\n"
    "q3 Q0 d7 1 1 B\n"
)


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


def one_line_error(rc: int, err: str) -> str:
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("preval: error:")
    return lines[0]


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
