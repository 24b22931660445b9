"""`preval plot`: files are written (atomically), legends carry the measures' values."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

import preval
from preval.cli import main

pytest.importorskip("matplotlib")
EXAMPLE = str(Path(__file__).resolve().parents[1] / "fixtures" / "example.parquet")


def test_png_is_written(tmp_path: Path) -> None:
    out = tmp_path / "pr.png"
    assert main(["plot", "pr", EXAMPLE, "--by", "system", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["pr.png"]  # no temporary file left


def test_pooled_legend_shows_each_system_area(tmp_path: Path) -> None:
    out = tmp_path / "roc.svg"
    assert main(["plot", "roc", EXAMPLE, "--by", "system", "-o", str(out)]) == 0
    text = out.read_text()
    pooled = pl.read_parquet(EXAMPLE).with_columns(pl.lit("all").alias("pooled"))
    areas = preval.evaluate(pooled.drop("doc"), ["AUC-ROC"], query="pooled", by="system")
    for system, value in areas.collect().select("system", "AUC-ROC").iter_rows():
        assert f"{system} (AUC-ROC {value:.3f})" in text


def test_trec_recall_precision_graph_shows_map(tmp_path: Path) -> None:
    out = tmp_path / "trec.svg"
    argv = ["plot", "pr", EXAMPLE, "--by", "system", "--query", "query", "-o", str(out)]
    assert main(argv) == 0
    summary = preval.summarize(preval.evaluate(EXAMPLE, ["AP"], by="system")).collect()
    for system, ap in summary.select("system", "AP").iter_rows():
        assert f"{system} (MAP {ap:.3f})" in out.read_text()


def test_bad_suffix_and_missing_matplotlib(tmp_path: Path, monkeypatch, capsys) -> None:
    assert main(["plot", "pr", EXAMPLE, "-o", str(tmp_path / "x.gif")]) == 2
    assert "picture format" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    assert main(["plot", "pr", EXAMPLE, "-o", str(tmp_path / "x.png")]) == 2
    assert "pip install 'preval[plot]'" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
