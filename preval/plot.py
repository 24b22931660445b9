"""Pictures of curves: one line per system or group, its measure in the legend.

matplotlib is an optional dependency (``pip install 'preval[plot]'``). The numbers come from
`curve` and from the evaluation plan, so a plot shows exactly what the measures compute:
`lines` computes them (no matplotlib needed), `plot` draws them.

Two kinds of curve, for ranked retrieval and for a classifier's test set:

* **the mean over queries** (the default when the input has a query column): PR is the TREC
  recall-precision graph, the mean over queries of the interpolated precision at recall 0,
  0.1, ..., 1 (IPrec), MAP in the legend; ROC is the vertical average of the queries' ROC
  curves (Fawcett 2006, "An introduction to ROC analysis", section 10): each query's true
  positive rate at the false positive rates 0, 0.01, ..., 1, interpolated linearly between
  its operating points (the highest at a vertical step), averaged over the queries that have
  both relevant and non-relevant documents, their mean AUC-ROC in the legend.
* **pooled** (``pool=True``, or no query column): every row of a group is one ranking, its
  AUC-PR or AUC-ROC in the legend.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from . import engines, extras, inputs, io
from .curves import KINDS, curve, with_qrels
from .errors import InputError
from .options import Options, accepts
from .planner import Plan, build_plan
from .report import Outputs, check_place
from .significance import MISSING, baseline_of, universe
from .summary import summarize

FORMATS = (".png", ".svg", ".pdf")
NO_DOC = "\x00"  # a column name no table has: rank without doc ids
LEVELS = [i / 10 for i in range(11)]  # recall levels of the TREC recall-precision graph
FPR_GRID = [i / 100 for i in range(101)]  # false positive rates of the vertical average


@dataclass(frozen=True)
class Line:
    """One curve as drawn: its legend text and its points."""

    label: str
    x: list[float]
    y: list[float]


@dataclass(frozen=True)
class Curves:
    """The curves of one picture and how they were made: `mean` curves (over queries) or each
    group pooled into one ranking; `queries`, the query set of the means (``"judged"`` or
    ``"retrieved"``, None when pooled); `counts`, the queries behind each line."""

    kind: str
    lines: list[Line]
    mean: bool
    queries: str | None
    counts: list[int]
    by: list[str]
    interpolated: bool = False
    scope: str = ""  # which of the queries have a curve: words after "queries"


@accepts("plot")
def plot(
    data: io.Source,
    kind: str,
    output: str | Path,
    *,
    qrels: io.Source | None = None,
    pool: bool = False,
    interpolate: bool = False,
    title: str | None = None,
    engine: str = "auto",
    memory_limit: int | None = None,
    tmp_dir: str | Path | None = None,
    options: Options,
) -> Path:
    """Draw PR or ROC curves into `output` (.png, .svg or .pdf) and return its path.

    Parameters
    ----------
    data, qrels
        As `preval.evaluate` takes them: a joined table, or a run (a table, or TREC run files,
        one system each) with its judgments (a table or a TREC qrels file).
    kind
        ``"pr"`` or ``"roc"``.
    pool
        Pool every row of a group into one ranking (its AUC-PR or AUC-ROC in the legend)
        instead of the mean over queries (the default with a query column; see the module's
        docstring: the TREC recall-precision graph for PR, the vertical average for ROC).
        ``query=None`` pools too, and so does an input without a query column.
    interpolate
        Pooled: interpolated curves. Mean ROC: each query's curve interpolated (LingPipe's);
        the mean PR curve is interpolated precision already.
    engine, memory_limit, tmp_dir
        How the measures are computed (`preval.collect`; docs/engines.md).

    The numbers drawn: `lines`.
    """
    path = check_output(output)
    collect = _collector(engine, memory_limit, tmp_dir)
    drawn = lines(data, kind, qrels=qrels, pool=pool, interpolate=interpolate, collect=collect,
                  options=options)  # fmt: skip
    return draw(drawn, path, title=title, source=data)


def check_output(output: str | Path) -> Path:
    """`output` as a path a picture can be written to (a known suffix, an existing
    directory), with matplotlib importable: checked before any work."""
    path = _target(output)
    _pyplot()
    return path


def draw(curves: Curves, output: str | Path, *, title: str | None = None,
         source: object = None) -> Path:  # fmt: skip
    """Draw `curves` (from `lines`) into `output` (.png, .svg or .pdf), atomically."""
    path = check_output(output)
    plt = _pyplot()
    kind = curves.kind
    fig, ax = plt.subplots(figsize=(6, 5), dpi=120)
    for line in curves.lines:
        style = {"marker": "o", "markersize": 3} if curves.mean and kind == "pr" else {}
        steps = curves.interpolated and not curves.mean
        ax.plot(line.x, line.y, label=line.label, drawstyle="steps-post" if steps else "default",
                **style)  # fmt: skip
    if kind == "pr":
        x_label, y_label = "recall", "precision"
        if curves.mean:
            y_label = "interpolated precision, mean over queries"
    else:
        x_label, y_label = "false positive rate", "true positive rate"
        if curves.mean:
            y_label += ", mean over queries"
    ax.set(xlabel=x_label, ylabel=y_label, xlim=(0, 1), ylim=(0, 1.02), title=title or "")
    ax.grid(alpha=0.3)
    if curves.lines:
        ax.legend(loc="lower left" if kind == "pr" else "lower right")
    else:
        warnings.warn(f"nothing to plot: no rows in {source}", UserWarning, stacklevel=2)
    _save(fig, path)
    plt.close(fig)
    return path


@accepts("plot")
def lines(
    data: io.Source,
    kind: str = "pr",
    *,
    qrels: io.Source | None = None,
    pool: bool = False,
    interpolate: bool = False,
    collect: Callable[[Plan], Plan] | None = None,
    options: Options,
) -> Curves:
    """The curves `plot` draws, as numbers (no matplotlib needed); arguments as there.

    `collect` runs an evaluation plan (default: `preval.engines.collect` with ``auto``).
    """
    if kind not in KINDS:
        msg = f"kind must be 'pr' or 'roc', got {kind!r}"
        raise InputError(msg)
    collect = collect or _collector("auto", None, None)
    columns = options.columns
    trec = io.is_trec(data, options.input_format, "run")
    by = list(columns.by) or (["system"] if trec else [])
    if trec and qrels is None:
        msg = f"TREC run file {data}: a run has no labels; give its judgments (qrels)"
        raise InputError(msg)
    options = Options.of({"by": by}, options)
    if not trec:
        data = io.normalise(data)  # a stream is read once, here
    if qrels is not None and not isinstance(qrels, (str, Path)):
        qrels = io.normalise(qrels, "qrels")
    query = columns.query
    has_query = query is not None and (
        trec or query in io.scan(data, what="input").collect_schema().names()
    )
    if pool or not has_query:
        return _pooled(data, qrels, kind, trec, interpolate, collect, options)
    if kind == "pr":
        ties = options.semantics.ties
        if ties in ("threshold", "expected"):
            msg = (
                f"plot pr: the mean PR graph is each query's interpolated precision (IPrec@r), "
                f"which ties={ties!r} does not define; plot roc, or pool the rows into one "
                "curve (pool=True, --pool)"
            )
            raise InputError(msg)
        return _mean_pr(data, qrels, collect, options)
    return _mean_roc(data, qrels, trec, interpolate, collect, options)


def _collector(engine: str, memory_limit: int | None, tmp_dir) -> Callable[[Plan], Plan]:
    def collect(plan: Plan) -> Plan:
        return engines.collect(plan, engine, memory_limit=memory_limit, tmp_dir=tmp_dir)

    return collect


def _mean_pr(data, qrels, collect, options: Options) -> Curves:
    """The TREC recall-precision graph: mean IPrec at 11 recall levels per group, MAP."""
    measures = [f"IPrec@{r:g}" for r in LEVELS]
    plan = collect(build_plan(data, [*measures, "AP"], qrels=qrels, options=options))
    keys = [plan.names[k] for k in plan.keys]
    means = summarize(plan.per_query(), by=keys, query=options.columns.query).collect()
    names = [c for c in means.columns if c.startswith("IPrec@")]
    drawn, counts = [], []
    for row in means.iter_rows(named=True):
        if row["AP"] is None:  # no query in the group (an empty input): no curve
            continue
        name = " ".join(str(row[k]) for k in keys) or "all"
        drawn.append(Line(f"{name} (MAP {row['AP']:.3f})", LEVELS, [row[c] for c in names]))
        counts.append(int(row["NumQ"]))
    return Curves("pr", drawn, True, options.semantics.queries, counts, keys, True)


def _mean_roc(data, qrels, trec, interpolate, collect, options: Options) -> Curves:
    """The vertical average of the queries' ROC curves per group (Fawcett 2006, §10), over
    the queries the evaluation counts that have both classes (AUC-ROC is defined), and their
    mean AUC-ROC."""
    area = "AUC-ROC(interpolate=true)" if interpolate else "AUC-ROC"
    plan = collect(build_plan(data, [area], qrels=qrels, options=options))
    keys, query = [plan.names[k] for k in plan.keys], options.columns.query
    group = [*keys, query]
    defined = plan.per_query().filter(pl.col(area).is_not_null())
    means = (
        defined.group_by(keys or pl.lit(0))
        .agg(pl.col(area).mean(), pl.len().alias("queries"))
        .collect()
    )
    table = with_qrels(data, qrels, trec, options)
    points = curve(table, "roc", interpolate=interpolate, options=options)
    as_text = [pl.col(c).cast(pl.String) for c in group]  # ids as the plan read them, or not
    points = points.with_columns(as_text).join(
        defined.select(as_text).unique(), on=group, how="semi", nulls_equal=True
    )
    tpr = _vertical_average(points, keys, query).collect()
    drawn, counts = [], []
    for row in means.sort(keys or "queries").iter_rows(named=True):
        mine = tpr.filter(_match(keys, [str(row[k]) for k in keys])) if keys else tpr
        name = " ".join(str(row[k]) for k in keys) or "all"
        label = f"{name} (mean AUC-ROC {row[area]:.3f})"
        drawn.append(Line(label, mine["fpr"].to_list(), mine["tpr"].to_list()))
        counts.append(int(row["queries"]))
    scope = " with relevant and non-relevant documents"  # the others have no ROC curve
    return Curves("roc", drawn, True, options.semantics.queries, counts, keys, interpolate, scope)


def _vertical_average(points: pl.LazyFrame, keys: list[str], query: str) -> pl.LazyFrame:
    """Per group, the mean over its queries of each query's true positive rate at every false
    positive rate of `FPR_GRID`: linear between the two operating points around it, the
    highest true positive rate where the rate is exactly an operating point's (the top of a
    vertical step). The documents a query did not rank close its curve with a straight line
    to (1, 1), as AUC-ROC does."""
    group = [*keys, query]
    fpr, tpr = pl.col("fpr"), pl.col("tpr")
    known = points.filter(fpr.is_not_null() & tpr.is_not_null()).select(*group, fpr, tpr)
    closing = known.select(group).unique().with_columns(fpr=pl.lit(1.0), tpr=pl.lit(1.0))
    known = pl.concat([known, closing])
    top = known.group_by([*group, "fpr"]).agg(tpr.max()).sort("fpr")
    bottom = (
        known.group_by([*group, "fpr"])
        .agg(tpr.min())
        .select(*group, fpr.alias("_next_fpr"), tpr.alias("_next_tpr"))
        .sort("_next_fpr")
    )
    grid = known.select(group).unique().join(pl.LazyFrame({"_at": FPR_GRID}), how="cross")
    # both sides are sorted on the whole (so within each query): polars cannot check that
    # with `by` groups, and need not
    found = grid.sort("_at").join_asof(
        top, left_on="_at", right_on="fpr", by=group, strategy="backward", check_sortedness=False
    )
    found = found.join_asof(
        bottom, left_on="_at", right_on="_next_fpr", by=group, strategy="forward",
        allow_exact_matches=False, check_sortedness=False,
    )  # fmt: skip
    at, next_fpr, next_tpr = pl.col("_at"), pl.col("_next_fpr"), pl.col("_next_tpr")
    value = (
        pl.when((fpr == at) | next_fpr.is_null())
        .then(tpr)
        .otherwise(tpr + (next_tpr - tpr) * (at - fpr) / (next_fpr - fpr))
    )
    return (
        found.group_by([*keys, "_at"])
        .agg(value.mean().alias("tpr"))
        .sort([*keys, "_at"])
        .select(*keys, pl.col("_at").alias("fpr"), "tpr")
    )


def _pooled(data, qrels, kind, trec, interpolate, collect, options: Options) -> Curves:
    """One curve per group, the group pooled into one ranking; the area from the plan.

    Doc ids repeat across the pooled queries, so the pooled ranking does not use them: tied
    scores keep the input order, in the curve and in its area alike.
    """
    columns = options.columns
    keys = list(columns.by)
    table = with_qrels(data, qrels, trec, options)
    # the columns are checked under the user's names before anything is added
    rows, _ = inputs.read(table, query=None, by=keys, doc=columns.doc, score=columns.score,
                          label=columns.label)  # fmt: skip
    # the pooled ranking's one query is named as the user's query column (no other name
    # than theirs can reach a message)
    name = columns.query or "query"
    pooled = rows.select(*keys, columns.score, columns.label).with_columns(
        pl.lit("all").alias(name)
    )
    settings = Options.of({"query": name, "doc": NO_DOC, "input_format": "table"}, options)
    points = curve(pooled, kind, query=None, interpolate=interpolate, options=settings).collect()
    area = "AUC-PR" if kind == "pr" else "AUC-ROC"
    if interpolate:
        area += "(interpolate=true)"
    plan = collect(build_plan(pooled, [area], options=settings))
    areas = plan.per_query().collect()
    x, y = ("recall", "precision") if kind == "pr" else ("fpr", "tpr")
    drawn = []
    if areas.height == 0:  # no rows: nothing to draw (`draw` warns)
        return Curves(kind, drawn, False, None, [], keys, interpolate)
    for group in _groups(areas, keys):
        mine = points.filter(_match(keys, group)) if keys else points
        value = areas.filter(_match(keys, group))[area][0] if keys else areas[area][0]
        label = " ".join(map(str, group)) or "all"
        shown = "n/a" if value is None else f"{value:.3f}"
        drawn.append(Line(f"{label} ({area.split('(')[0]} {shown})", mine[x].to_list(),
                          mine[y].to_list()))  # fmt: skip
    return Curves(kind, drawn, False, None, [], keys, interpolate)


def _groups(frame: pl.DataFrame, keys: list[str]) -> list[tuple]:
    return frame.select(keys).unique(maintain_order=True).rows() if keys else [()]


def _match(keys: list[str], group: tuple) -> pl.Expr:
    return pl.all_horizontal([pl.col(k) == v for k, v in zip(keys, group, strict=True)])


def _save(fig, path: Path) -> None:
    """Write atomically, as every output (`report.Outputs`): a temporary file renamed when
    complete (over a link's target, not the link), or copied into a stream."""
    try:
        with Outputs() as out:
            fig.savefig(out.stage(path), format=path.suffix.lstrip(".").lower(),
                        bbox_inches="tight")  # fmt: skip
    except OSError as exc:
        # the user gave `path`: the hidden temporary file beside it is no name to show
        reason = exc.strerror or type(exc).__name__
        msg = f"cannot write {path}: {reason} (nothing was written; choose another path)"
        raise InputError(msg) from exc


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
    table = io.scan(per_query, id_columns=(by, query), what="per-query table").collect()
    if measure not in table.columns or by not in table.columns:
        msg = f"per-query table: no column {measure if by in table.columns else by!r}"
        raise InputError(msg)
    systems = sorted(table[by].unique().drop_nulls().to_list())
    base = systems[0] if baseline is None else baseline_of(systems, baseline)
    if base is None:  # (--baseline 1 names system 1 of an integer column)
        msg = f"baseline {baseline!r} is not a system of column {by!r} (systems: {systems})"
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
    fig.suptitle(title or f"{measure}: {n} {'query' if n == 1 else 'queries'}")
    _save(fig, path)
    plt.close(fig)
    return path


def _target(output: str | Path) -> Path:
    path = Path(output)
    if path.suffix.lower() not in FORMATS:
        msg = f"cannot tell the picture format of {path} (known: {', '.join(FORMATS)})"
        raise InputError(msg)
    check_place(path)
    return path


def _pyplot():
    matplotlib = extras.require("matplotlib", "preval's plots")
    matplotlib.use("Agg")
    return extras.require("matplotlib.pyplot", "preval's plots")
