"""Pictures of curves: one line per system or group, its area in the legend.

matplotlib is an optional dependency (``pip install 'preval[plot]'``). The numbers come from
`curve` and `evaluate`, so a plot shows exactly what the measures compute.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from . import extras, io
from .api import evaluate
from .curves import curve
from .errors import InputError
from .report import hidden_beside
from .significance import MISSING, universe
from .summary import summarize

FORMATS = (".png", ".svg", ".pdf")
POOLED = "_pooled"  # the query of a pooled ranking: the whole group is one ranking
NO_DOC = "\x00"  # a column name no table has: rank without doc ids
LEVELS = [i / 10 for i in range(11)]


def plot(
    data: io.Source,
    kind: str,
    output: str | Path,
    *,
    by: str | Sequence[str] | None = None,
    query: str | None = None,
    doc: str = "doc",
    score: str = "score",
    label: str = "label",
    convention: str = "trec",
    interpolate: bool = False,
    relevance_level: float = 1,
    title: str | None = None,
) -> Path:
    """Draw PR or ROC curves into `output` (.png, .svg or .pdf) and return its path.

    Without `query` every group (each `by` value, or the whole table) is pooled into one
    ranking and drawn with its area (AUC-PR or AUC-ROC) in the legend. With `query` and
    ``kind="pr"``: the TREC recall-precision graph, the mean over queries of the interpolated
    precision at recall 0, 0.1, ..., 1 (IPrec), with MAP in the legend.
    """
    path = _target(output)
    if kind not in ("pr", "roc"):
        msg = f"kind must be 'pr' or 'roc', got {kind!r}"
        raise InputError(msg)
    plt = _pyplot()

    keys = [by] if isinstance(by, str) else list(by or [])
    options = {"doc": doc, "score": score, "label": label, "convention": convention}
    lines = (
        _mean_interpolated(data, keys, query, relevance_level, options)
        if kind == "pr" and query is not None
        else _pooled(data, kind, keys, interpolate, relevance_level, options)
    )
    fig, ax = plt.subplots(figsize=(6, 5), dpi=120)
    for name, xs, ys in lines:
        ax.plot(xs, ys, label=name, drawstyle="steps-post" if interpolate else "default")
    if kind == "pr":
        x_label, y_label = "recall", "precision"
    else:
        x_label, y_label = "false positive rate", "true positive rate"
    ax.set(xlabel=x_label, ylabel=y_label, xlim=(0, 1), ylim=(0, 1.02), title=title or "")
    ax.grid(alpha=0.3)
    if lines:
        ax.legend(loc="lower left" if kind == "pr" else "lower right")
    if not lines:
        warnings.warn(f"nothing to plot: no rows in {data}", UserWarning, stacklevel=2)
    _save(fig, path)
    plt.close(fig)
    return path


def _pooled(data, kind, keys, interpolate, level, options):
    """One curve per group, the group pooled into one ranking; the area from `evaluate`.

    Doc ids repeat across the pooled queries, so the pooled ranking does not use them: tied
    scores keep the input order, in the curve and in its area alike.
    """
    # the columns evaluate() reads as ids and numbers are read so here too: a header-only CSV
    # is an empty input (no curve), as in `preval evaluate`, not a dtype error
    table = io.scan(data, id_columns=(*keys, options["doc"]),
                    numeric_columns=(options["score"], options["label"]),
                    what="input").with_columns(pl.lit("all").alias(POOLED))  # fmt: skip
    options = {**options, "doc": NO_DOC}
    points = curve(table, kind, query=None, by=keys, interpolate=interpolate,
                   relevance_level=level, score=options["score"], label=options["label"],
                   doc=options["doc"], convention=options["convention"]).collect()  # fmt: skip
    area = "AUC-PR" if kind == "pr" else "AUC-ROC"
    if interpolate:
        area += "(interpolate=true)"
    areas = evaluate(table, [area], query=POOLED, by=keys or None, relevance_level=level,
                     **options).collect()  # fmt: skip
    x, y = ("recall", "precision") if kind == "pr" else ("fpr", "tpr")
    if areas.height == 0:  # no rows: nothing to draw (the caller warns)
        return []
    lines = []
    for group in _groups(areas, keys):
        mine = points.filter(_match(keys, group)) if keys else points
        value = areas.filter(_match(keys, group))[area][0] if keys else areas[area][0]
        name = " ".join(map(str, group)) or "all"
        shown = "n/a" if value is None else f"{value:.3f}"
        lines.append((f"{name} ({area.split('(')[0]} {shown})", mine[x], mine[y]))
    return lines


def _mean_interpolated(data, keys, query, level, options):
    """The TREC recall-precision graph: mean IPrec at 11 recall levels per group."""
    measures = [f"IPrec@{r:g}" for r in LEVELS]
    per_query = evaluate(data, [*measures, "AP"], query=query, by=keys or None,
                         relevance_level=level, **options)  # fmt: skip
    means = summarize(per_query, by=keys).collect()
    names = [c for c in means.columns if c.startswith("IPrec@")]
    lines = []
    for row in means.iter_rows(named=True):
        if row["AP"] is None:  # no query in the group (an empty input): no curve
            continue
        name = " ".join(str(row[k]) for k in keys) or "all"
        lines.append((f"{name} (MAP {row['AP']:.3f})", LEVELS, [row[c] for c in names]))
    return lines


def _groups(frame: pl.DataFrame, keys: list[str]) -> list[tuple]:
    return frame.select(keys).unique(maintain_order=True).rows() if keys else [()]


def _match(keys: list[str], group: tuple) -> pl.Expr:
    return pl.all_horizontal([pl.col(k) == v for k, v in zip(keys, group, strict=True)])


def _save(fig, path: Path) -> None:
    """Write atomically: a temporary file beside the target, renamed when complete."""
    tmp = hidden_beside(path, path.suffix)
    try:
        fig.savefig(tmp, format=path.suffix.lstrip(".").lower(), bbox_inches="tight")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def compare_plot(
    per_query: io.Source,
    output: str | Path,
    *,
    measure: str,
    baseline: str | None = None,
    by: str = "system",
    query: str = "query",
    alpha: float = 0.05,
    missing: str = "zero",
    title: str | None = None,
) -> Path:
    """Draw a comparison of systems on one measure into `output` (.png, .svg or .pdf).

    Left: each system's per-query differences with the baseline (default: the first system),
    sorted from the largest gain to the largest loss, so the share of queries won and lost and
    their sizes show at a glance. Right: each system's mean with its 1 - `alpha` confidence
    interval (the t interval, mean ± t·sd/√n). Queries are paired as in `preval.compare`
    (`missing`).
    """
    path = _target(output)
    plt = _pyplot()
    if missing not in MISSING:
        msg = f"missing must be one of {', '.join(MISSING)}, got {missing!r}"
        raise InputError(msg)
    table = io.scan(per_query, what="per-query table").collect()
    if measure not in table.columns or by not in table.columns:
        msg = f"per-query table: no column {measure if by in table.columns else by!r}"
        raise InputError(msg)
    systems = sorted(table[by].unique().drop_nulls().to_list())
    base = systems[0] if baseline is None else baseline
    if base not in systems:
        msg = f"baseline {base!r} is not a system of column {by!r} (systems: {systems})"
        raise InputError(msg)
    x, _ = universe(table, measure, by, query, systems, missing)
    stats = extras.require("scipy.stats", "the plot's intervals")

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=120)
    b = systems.index(base)
    for i, system in enumerate(systems):
        if i != b:
            deltas = np.sort(x[:, i] - x[:, b])[::-1]
            left.plot(np.arange(1, deltas.size + 1), deltas, label=f"{system} − {base}")
    left.axhline(0, color="black", linewidth=0.8)
    left.set(xlabel="queries, sorted by difference", ylabel=f"{measure} difference")
    left.grid(alpha=0.3)
    left.legend(loc="upper right")
    n = x.shape[0]
    means = x.mean(axis=0)
    half = stats.t.ppf(1 - alpha / 2, max(n - 1, 1)) * x.std(axis=0, ddof=1) / np.sqrt(max(n, 1))
    right.errorbar(range(len(systems)), means, yerr=half, fmt="o", capsize=4)
    right.set_xticks(range(len(systems)), systems)
    right.set(ylabel=f"mean {measure} ({1 - alpha:.0%} CI)")
    right.grid(alpha=0.3, axis="y")
    fig.suptitle(title or f"{measure}: {n} queries")
    _save(fig, path)
    plt.close(fig)
    return path


def _target(output: str | Path) -> Path:
    path = Path(output)
    if path.suffix.lower() not in FORMATS:
        msg = f"cannot tell the picture format of {path} (known: {', '.join(FORMATS)})"
        raise InputError(msg)
    if not path.parent.is_dir():
        msg = f"cannot write {path}: directory {path.parent} does not exist"
        raise InputError(msg)
    return path


def _pyplot():
    matplotlib = extras.require("matplotlib", "preval's plots")
    matplotlib.use("Agg")
    return extras.require("matplotlib.pyplot", "preval's plots")
