"""`preval plot`: files are written (atomically), legends carry the measures' values, every
input is read, and the default curve is the mean over queries (computed independently here)."""

from __future__ import annotations

import re
import sys
from fractions import Fraction
from pathlib import Path

import polars as pl
import pytest

import preval
from preval.cli import main
from preval.plot import FPR_GRID, LEVELS, lines

pytest.importorskip("matplotlib")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLE = str(FIXTURES / "example.parquet")
RUN, QRELS = str(FIXTURES / "example_run.csv"), str(FIXTURES / "example_qrels.csv")
TREC = FIXTURES / "trec"
# a name of preval's own making, never a user's column: _pooled, __preval_..., _by0, \x00
INTERNAL = re.compile(r"(?<![\w/.-])_{1,2}[a-z]\w*|\x00")


def test_png_is_written(tmp_path: Path) -> None:
    out = tmp_path / "pr.png"
    assert main(["plot", "pr", EXAMPLE, "--by", "system", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["pr.png"]  # no temporary file left


def test_an_unwritable_folder_names_the_target_not_the_temporary_file(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    # issue 32: root ignores a folder's permissions, so the refusal of a read-only folder is
    # made here as the system makes it, an OSError naming the file opened (the hidden one)
    from matplotlib.figure import Figure

    def refused(self, name, *args, **kwargs) -> None:
        raise PermissionError(13, "Permission denied", str(name))

    monkeypatch.setattr(Figure, "savefig", refused)
    out = tmp_path / "pr.png"
    assert main(["plot", "pr", EXAMPLE, "--by", "system", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"preval: error: cannot write {out}: Permission denied (nothing")
    assert err.count("\n") == 1 and ".tmp" not in err and ".pr.png." not in err
    assert list(tmp_path.iterdir()) == []


def test_pooled_legend_shows_each_system_area(tmp_path: Path) -> None:
    out = tmp_path / "roc.svg"
    assert main(["plot", "roc", EXAMPLE, "--by", "system", "--pool", "-o", str(out)]) == 0
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


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("kind", ["pr", "roc"])
def test_plot_of_trec_run_files_and_qrels(capsys, tmp_path: Path, kind: str) -> None:
    out = tmp_path / f"{kind}.svg"
    runs = [TREC / "bm25.run", TREC / "hybrid.run.gz"]
    rc, printed, err = run_cli(capsys, "plot", kind, *runs, "--qrels", TREC / "qrels.txt",
                               "-o", out)  # fmt: skip
    assert rc == 0, err
    assert printed == f"{out}\n" and out.read_text().lstrip().startswith("<?xml")
    assert "per system (--queries judged, as trec_eval -c" in err
    if kind == "pr":  # one curve per run file, its MAP in the legend (trec -c's map)
        assert "mean over 300 judged queries per system" in err
        per_query = preval.evaluate(runs, ["AP"], qrels=TREC / "qrels.txt")
        for system, value in preval.summarize(per_query).collect().drop("NumQ").iter_rows():
            assert f"{system} (MAP {value:.3f})" in out.read_text()


@pytest.mark.parametrize("kind", ["pr", "roc"])
@pytest.mark.parametrize("pool", [[], ["--pool"]])
def test_plot_of_a_run_csv_and_qrels_csv(capsys, tmp_path: Path, kind: str, pool) -> None:
    out = tmp_path / f"{kind}.png"
    rc, printed, err = run_cli(capsys, "plot", kind, RUN, "--qrels", QRELS, "--by", "system",
                               *pool, "-o", out)  # fmt: skip
    assert rc == 0, err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not INTERNAL.search(printed + err), printed + err
    # without qrels a run has no labels: said with the user's columns only
    rc, printed, err = run_cli(capsys, "plot", kind, RUN, "--by", "system", *pool, "-o", out)
    assert rc == 2
    assert err.startswith(f"preval: error: input {RUN}: missing label column 'label' "
                          "(columns present: system, query, doc, score)")  # fmt: skip
    assert not INTERNAL.search(err), err


def test_the_mean_curve_is_not_the_pooled_one() -> None:
    for kind in ("pr", "roc"):
        mean = lines(EXAMPLE, kind, by="system")
        pooled = lines(EXAMPLE, kind, by="system", pool=True)
        assert mean.mean and not pooled.mean
        assert [line.label.split()[0] for line in mean.lines] == ["bm25", "dense", "hybrid"]
        for a, b in zip(mean.lines, pooled.lines, strict=True):
            assert len(a.x) != len(b.x) or a.y != pytest.approx(b.y, abs=1e-3)
    # the mean PR curve is the mean IPrec of `preval.evaluate`, per system
    measures = [f"IPrec@{r:g}" for r in LEVELS]
    want = preval.summarize(preval.evaluate(EXAMPLE, measures, by="system")).collect()
    for line, row in zip(lines(EXAMPLE, "pr", by="system").lines, want.iter_rows(), strict=True):
        assert line.y == pytest.approx(list(row[2:]), abs=1e-12)


# --- an independent computation of the mean curves on a small case ----------------------------
# two queries of one system; q2 has a relevant document that was not retrieved (in the qrels
# only), q3 is judged but not retrieved, q4 has no relevant document (no ROC curve)
RANKINGS = {"q1": [1, 0, 1, 1, 0, 0, 1], "q2": [0, 1, 0, 0], "q3": [], "q4": [0, 0]}
MISSED = {"q1": [0, 0], "q2": [1, 0], "q3": [1, 0], "q4": []}  # judged, not retrieved


def small_case() -> tuple[pl.DataFrame, pl.DataFrame]:
    run = [(q, f"{q}d{i}", float(len(rels) - i)) for q, rels in RANKINGS.items()
           for i in range(len(rels))]  # fmt: skip
    qrels = [(q, f"{q}d{i}", rel) for q, rels in RANKINGS.items() for i, rel in enumerate(rels)]
    qrels += [(q, f"{q}m{i}", rel) for q, rels in MISSED.items() for i, rel in enumerate(rels)]
    return (pl.DataFrame(run, schema=["query", "doc", "score"], orient="row"),
            pl.DataFrame(qrels, schema=["query", "doc", "label"], orient="row"))  # fmt: skip


def iprec(ranking: list[int], total: int, level: Fraction) -> float:
    """The textbook interpolated precision: the best precision at a recall >= level."""
    best, found = 0.0, 0
    for k, rel in enumerate(ranking, start=1):
        found += rel
        if total and Fraction(found, total) >= level:
            best = max(best, found / k)
    return best


def tpr_at(points: list[tuple[float, float]], at: float) -> float:
    """Fawcett's TPR_FOR_FPR (Algorithm 3): the last point at or left of `at`, else linear
    between it and the next one."""
    i = max(j for j, (fpr, _) in enumerate(points) if fpr <= at)
    if points[i][0] == at or i + 1 == len(points):
        return points[i][1]
    (x0, y0), (x1, y1) = points[i], points[i + 1]
    return y0 + (y1 - y0) * (at - x0) / (x1 - x0)


def test_the_mean_pr_curve_is_the_mean_iprec_by_hand() -> None:
    run, qrels = small_case()
    got = lines(run, "pr", qrels=qrels)
    totals = {q: sum(RANKINGS[q]) + sum(MISSED[q]) for q in RANKINGS}  # R of each query
    want = [
        sum(iprec(RANKINGS[q], totals[q], Fraction(i, 10)) for q in RANKINGS) / len(RANKINGS)
        for i in range(11)
    ]
    assert got.mean and got.counts == [4]  # every judged query, q3 and q4 at 0
    assert got.lines[0].x == LEVELS
    assert got.lines[0].y == pytest.approx(want, abs=1e-12)
    retrieved = lines(run, "pr", qrels=qrels, queries="retrieved")  # q3 is left out
    assert retrieved.counts == [3]
    assert retrieved.lines[0].y == pytest.approx([w * 4 / 3 for w in want], abs=1e-12)


def test_the_mean_roc_curve_is_the_vertical_average_by_hand() -> None:
    run, qrels = small_case()
    got = lines(run, "roc", qrels=qrels)
    curves = []
    for q, ranking in RANKINGS.items():
        pos = sum(ranking) + sum(MISSED[q])
        neg = len(ranking) + len(MISSED[q]) - pos
        if not pos or not neg:
            continue  # q4: no relevant document, no ROC curve
        points, tp, fp = [(0.0, 0.0)], 0, 0
        for rel in ranking:
            tp, fp = tp + rel, fp + 1 - rel
            points.append((fp / neg, tp / pos))
        curves.append([*points, (1.0, 1.0)])  # the unranked documents close the curve
    want = [sum(tpr_at(c, at) for c in curves) / len(curves) for at in FPR_GRID]
    assert got.counts == [len(curves)] == [3]
    assert got.lines[0].x == pytest.approx(FPR_GRID)
    assert got.lines[0].y == pytest.approx(want, abs=1e-12)
    per_query = preval.evaluate(run, ["AUC-ROC"], qrels=qrels).collect()["AUC-ROC"].drop_nulls()
    assert f"mean AUC-ROC {per_query.mean():.3f}" in got.lines[0].label


def test_the_library_plot_reads_trec_files(tmp_path: Path) -> None:
    runs = [str(TREC / "bm25.run"), str(TREC / "hybrid.run.gz")]
    out = preval.plot.plot(runs, "roc", tmp_path / "roc.pdf", qrels=str(TREC / "qrels.txt"))
    assert out.read_bytes()[:4] == b"%PDF"
    with pytest.raises(preval.InputError, match="give its judgments"):
        preval.plot.plot(runs, "pr", tmp_path / "pr.png")
