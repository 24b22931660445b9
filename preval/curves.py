"""Precision-recall and ROC curves, per query, per by-group or pooled, in three conventions.

Evaluators agree on the operating points of a ranking and disagree on everything around them:
the point before the first document, the limit points, interpolation, tie order, what a label
means. A `Convention` names one consistent set of those choices:

* ``trec``: trec_eval. Ties by doc id descending (input order without a doc column); a label
  >= the relevance level is positive, anything else (or no label) negative; one point per
  ranked document and no other point.
* ``lingpipe``: LingPipe's ScoredPrecisionRecallEvaluation. Stable sort (ties keep input
  order); PR curves start at (recall 0, precision 1) and end at (1, 0), dropping points with
  recall and precision both 0; interpolation keeps the first point of each recall; ROC curves
  run from (0, 0) to (1, 1) and interpolation keeps the last point of each false positive rate.
* ``vlfeat``: VLFeat's vl_pr. Stable sort; labels > 0 positive, < 0 negative, 0 ignored;
  -inf scores are not retrieved (unless `include_inf`); the PR curve starts with the rank-0
  point (recall 0, precision 1); interpolation is the running maximum from low scores up.

Like evaluation, a curve is one lazy plan: one sort and cumulative counts per group.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from . import inputs, io, validate
from .conventions import Convention, get_convention
from .errors import InputError, MissingColumnError
from .options import Options, accepts
from .planner.qrels import joined_table
from .ranking import (
    EXPECTED,
    LABEL,
    ROW,
    SCORE,
    THRESHOLD,
    count,
    resolve_ties,
    sort_keys,
)

KINDS = ("pr", "roc")
_ORDER, _P, _N, _TP, _FP = "_order", "_npos", "_nneg", "_tp", "_fp"
_ONE = "_ranking"  # a constant key: with no keys, the whole table is one ranking
_LAST = 2**62  # sort position of a closing limit point


@accepts("curve")
def curve(
    data: io.Source,
    kind: Literal["pr", "roc"] = "pr",
    *,
    qrels: io.Source | None = None,
    interpolate: bool = False,
    normalize_prior: float | None = None,
    options: Options,
) -> pl.LazyFrame:
    """The PR or ROC curve of each ranking, as a LazyFrame of operating points.

    Parameters
    ----------
    data
        One joined table (frame or path): `score` (null: not retrieved) and `label` columns,
        with `query` (and `by`) keys. ``query=None`` pools the whole table (or each `by`
        group) into one ranking, as a classifier's test set. With `qrels`: a run (a table
        with `query`, `doc`, `score`, or TREC run files, each a system), as `evaluate` reads
        one.
    qrels
        Judgments (`query`, `doc`, `label`; a table or a TREC qrels file), joined to the run
        as `evaluate` joins them: a judged document the run did not retrieve is a ranking's
        row with no score (it counts toward the positives, as in R), an unjudged retrieved
        one is negative. With ``queries="retrieved"`` (the default) a judged query a system
        did not answer has no curve; with ``"judged"`` it has its limit points only.
    kind
        ``"pr"``: columns keys..., ``point`` (0-based order), ``recall``, ``precision``,
        ``score``. ``"roc"``: keys..., ``point``, ``fpr``, ``tpr``, ``score``. ``score`` is
        the threshold of the point: the score of the document that adds it, null at limit
        points.
    ties (option)
        The order of tied scores: the convention's by default (`trec`: doc id descending,
        every document its own point); ``"threshold"`` makes each run of equal scores one
        point, at its end, as scikit-learn's ``roc_curve(drop_intermediate=False)`` and
        ``precision_recall_curve``; ``"optimistic"`` / ``"pessimistic"`` bound the curve.
        ``"expected"`` is refused (it averages measures, not points).
    interpolate
        Interpolated precision (PR: the best precision at this recall or beyond) or, for ROC,
        LingPipe's pruning of points that share a false positive rate.
    normalize_prior
        VLFeat ``NormalizePrior`` a in (0, 1): precision as if positives were a fraction a of
        the data, a·TPR / (a·TPR + (1 − a)·FPR) (the normalised PR curves of Hoiem et al.).

    Returns
    -------
    polars.LazyFrame
        Sorted by (keys..., point). Recall and TPR are null when a ranking has no positive,
        FPR when it has no negative.
    """
    columns, semantics = options.columns, options.semantics
    trec = io.is_trec(data, options.input_format, "run")
    if trec and qrels is None:
        msg = f"TREC run file {data}: a run has no labels; give its judgments (qrels=)"
        raise InputError(msg)
    if trec and not columns.by:  # each run file a system, as `evaluate` reads them
        options = Options.of({"by": ["system"]}, options)
        columns = options.columns
    data = with_qrels(data, qrels, trec, options)
    query, doc, score, label, by = (columns.query, columns.doc, columns.score, columns.label,
                                    columns.by)  # fmt: skip
    relevance_level, convention = semantics.relevance_level, semantics.convention
    num_positives, num_negatives = semantics.num_positives, semantics.num_negatives
    include_inf = semantics.include_inf
    if kind not in KINDS:
        msg = f"kind must be 'pr' or 'roc', got {kind!r}"
        raise InputError(msg)
    conv = get_convention(convention)
    count_columns = [c for c in (num_positives, num_negatives) if isinstance(c, str)]
    if normalize_prior is not None and not 0 < normalize_prior < 1:
        msg = f"normalize_prior must be between 0 and 1 (exclusive), got {normalize_prior!r}"
        raise InputError(msg)
    by_cols = [by] if isinstance(by, str) else list(by or [])
    keys = [*by_cols, *([query] if query is not None else [])]

    lf, schema = inputs.read(
        data, query=query, by=by_cols, doc=doc, score=score, label=label, counts=count_columns
    )
    has_doc = doc in schema
    ties = resolve_ties(semantics.ties, conv.ties, has_doc, doc)
    if ties == EXPECTED:
        msg = (
            "curve: ties='expected' gives measures' expected values, not a curve; "
            "ties='threshold' makes each run of tied scores one point (scikit-learn's curves), "
            "'optimistic' / 'pessimistic' bound it"
        )
        raise InputError(msg)
    # per-ranking totals under names of their own (the column may also be a key)
    total_columns = {c: f"_total{i}" for i, c in enumerate(count_columns)}
    rows = inputs.canonical(
        lf,
        keys=[(k, k) for k in keys],
        doc=doc if has_doc else None,
        score=score,
        label=label,
        counts={name: c for c, name in total_columns.items()},
    ).with_row_index(ROW)
    rows = rows.with_columns(pl.lit(0).alias(_ONE))
    lab = pl.col(LABEL)
    if conv.labels == "sign":
        # VLFeat: label 0 counts as neither class; vl_pr keeps such a sample in the ranking,
        # where it repeats the previous operating point
        rows = rows.filter(lab.is_not_null())
        positive, negative = (lab > 0).fill_null(False), (lab < 0).fill_null(False)
    else:
        positive = (lab >= relevance_level).fill_null(False)
        negative = ~positive
    retrieved = pl.col(SCORE).is_not_null()
    if not (conv.inf_retrieved or include_inf):
        retrieved = retrieved & (pl.col(SCORE) != float("-inf"))

    # One row per ranking: its totals (every row, retrieved or not, or the given counts) and
    # the data rules (docs/semantics.md, bad input), checked as in `evaluate`.
    group = [*keys, _ONE]
    # pooled queries (query=None) legitimately repeat doc ids: no duplicate rule then
    per_query = has_doc and query is not None
    rules = validate.row_checks(
        has_doc=per_query, has_score=True, label_may_be_null=True, has_pad=False
    )
    totals = []
    for flag, given, name, what in (
        (positive, num_positives, _P, "positives"),
        (negative, num_negatives, _N, "negatives"),
    ):
        found = count(flag).cast(pl.Int64)
        if given is None:
            totals.append(found.alias(name))
            continue
        if isinstance(given, str):  # a column: each ranking's own total
            total = pl.col(total_columns[given]).max()
            shown = f"num_{what} (column {given!r})"
        else:
            total, shown = pl.lit(given, dtype=pl.Int64), f"num_{what}={given}"
        totals.append(total.alias(name))
        rules.append(validate.total_rule(what, shown, total, found, "rankings"))
    groups = rows.group_by(group).agg(
        *totals, *validate.check_exprs(rules, has_doc=per_query, has_pad=False)
    )
    kept = {n: d for n, d in groups.collect_schema().items() if not n.startswith("_chk_")}
    roles = {"query": query or "query", "doc": doc, "score": score, "label": label}
    sources = validate.path_sources({"input": data})  # (a lazy plan: its caller collects it)
    check = validate.checker(rules, {k: k for k in keys}, roles, "input", rows, sources)
    groups = groups.map_batches(check, schema=kept).cache()

    order, descending = sort_keys(ties, has_doc=has_doc, trec_version=semantics.trec_version)
    ranked = (
        rows.filter(retrieved)
        .join(groups, on=group, how="left")  # before the sort: a join does not keep order
        .with_columns(positive.alias("_pos"), negative.alias("_neg"))
        .sort([*group, *order], descending=[False] * len(group) + descending, nulls_last=True)
        .with_columns(
            pl.col("_pos").cum_sum().over(group).alias(_TP),
            pl.col("_neg").cum_sum().over(group).alias(_FP),
            pl.int_range(1, pl.len() + 1).over(group).alias(_ORDER),
        )
    )
    if ties == THRESHOLD:
        # one operating point per distinct score (doubles, as scikit-learn compares them): the
        # last document of each run of equal scores, whose counts hold the whole run
        last = pl.col(SCORE) != pl.col(SCORE).shift(-1).over(group)
        ranked = ranked.filter(last.fill_null(True))
    if kind == "pr":
        points = _pr_points(ranked, groups, keys, conv, interpolate, normalize_prior)
    else:
        points = _roc_points(ranked, groups, keys, conv, interpolate)
    return points


def with_qrels(data: io.Source, qrels: io.Source | None, trec: bool, options: Options):
    """The rows a curve reads: `data` itself (a joined table), or the run joined with its
    qrels as the measures join them (judged documents not retrieved as rows with no score);
    with ``queries="retrieved"``, only the queries a group retrieved something for. `trec`:
    `data` is TREC run files."""
    columns = options.columns
    if qrels is None:
        return data
    if columns.query is None:
        msg = "qrels are joined to the run on the query: give the query column"
        raise InputError(msg)
    run, schema = inputs.read(
        io.scan_run(data) if trec else data, query=columns.query, by=list(columns.by),
        doc=columns.doc, score=columns.score, label=columns.label, needs_label=False,
    )  # fmt: skip
    if columns.doc not in schema:
        msg = f"input: missing doc column {columns.doc!r}, needed to join the run with qrels"
        raise MissingColumnError(msg)
    sources = validate.path_sources({"qrels": qrels})  # (a qrels rule names the file)
    if io.is_trec(qrels, options.input_format, "qrels"):
        qrels = io.scan_qrels(qrels)
    table = joined_table(run, qrels, columns, "error", sources)
    if options.semantics.queries == "retrieved":
        group = [*columns.by, columns.query]
        table = table.filter(pl.col(columns.score).is_not_null().any().over(group))
    return table


def _window(expr: pl.Expr, keys: list[str]) -> pl.Expr:
    # the frame was just sorted by (keys, order): windows run down each ranking
    return expr.over(keys) if keys else expr


def _pr_points(
    ranked, groups, keys, conv: Convention, interpolate: bool, prior: float | None
) -> pl.LazyFrame:
    tp, fp, npos, nneg = pl.col(_TP), pl.col(_FP), pl.col(_P), pl.col(_N)
    recall = pl.when(npos > 0).then(tp / npos)
    if prior is not None:  # vl_pr NormalizePrior: reweigh the classes to a prior
        tp = pl.when(npos > 0).then(tp * prior / npos).otherwise(0.0)
        fp = pl.when(nneg > 0).then(fp * (1 - prior) / nneg).otherwise(0.0)
    # before any positive or negative (VLFeat's label-0 samples) vl_pr's precision is 1
    precision = pl.when(tp + fp > 0).then(tp / (tp + fp)).otherwise(1.0)
    points = ranked.select(
        *keys,
        _ORDER,
        recall.alias("recall"),
        precision.alias("precision"),
        pl.col(SCORE).alias("score"),
    )
    if conv.skip_origin:
        points = points.filter(~((pl.col("recall") == 0) & (pl.col("precision") == 0)))
    extra = []
    if conv.pr_start:
        extra.append(_limit(groups, keys, 0, 0.0, 1.0, ("recall", "precision")))
    if conv.pr_end:
        extra.append(_limit(groups, keys, _LAST, 1.0, 0.0, ("recall", "precision")))
    points = _stack(points, extra, keys)
    if interpolate:
        points = points.with_columns(_window(pl.col("precision").cum_max(reverse=True), keys))
        if conv.prune_pr:  # LingPipe keeps the first point of each recall
            first = pl.col("recall") != _window(pl.col("recall").shift(1), keys)
            points = points.filter(first.fill_null(True))
    return _number(points, keys, ("recall", "precision"))


def _roc_points(ranked, groups, keys, conv: Convention, interpolate: bool) -> pl.LazyFrame:
    tp, fp = pl.col(_TP), pl.col(_FP)
    fpr = pl.when(pl.col(_N) > 0).then(fp / pl.col(_N))
    tpr = pl.when(pl.col(_P) > 0).then(tp / pl.col(_P))
    points = ranked.select(
        *keys, _ORDER, fpr.alias("fpr"), tpr.alias("tpr"), pl.col(SCORE).alias("score")
    )
    extra = [_limit(groups, keys, 0, 0.0, 0.0, ("fpr", "tpr"))]
    if conv.roc_end:
        extra.append(_limit(groups, keys, _LAST, 1.0, 1.0, ("fpr", "tpr")))
    points = _stack(points, extra, keys)
    if interpolate:  # LingPipe keeps the last point of each false positive rate
        last = pl.col("fpr") != _window(pl.col("fpr").shift(-1), keys)
        points = points.filter(last.fill_null(True))
    return _number(points, keys, ("fpr", "tpr"))


# the total a rate divides by: null where it is 0, at the limit points as at every other
_RATE_TOTAL = {"recall": _P, "tpr": _P, "fpr": _N}


def _limit(groups, keys, order: int, x: float, y: float, names: tuple[str, str]):
    def value(v: float, name: str) -> pl.Expr:
        total = _RATE_TOTAL.get(name)
        lit = pl.lit(v, dtype=pl.Float64)
        return (lit if total is None else pl.when(pl.col(total) > 0).then(lit)).alias(name)

    return groups.select(
        *keys,
        pl.lit(order, dtype=pl.Int64).alias(_ORDER),
        value(x, names[0]),
        value(y, names[1]),
        pl.lit(None, dtype=pl.Float64).alias("score"),
    )


def _stack(points: pl.LazyFrame, extra: list[pl.LazyFrame], keys: list[str]) -> pl.LazyFrame:
    points = points.with_columns(pl.col(_ORDER).cast(pl.Int64))
    return pl.concat([points, *extra], how="vertical_relaxed").sort([*keys, _ORDER])


def _number(points: pl.LazyFrame, keys: list[str], names: tuple[str, str]) -> pl.LazyFrame:
    # `points` is sorted by (keys, order) in `_stack`; filters since then keep that order
    point = _window(pl.int_range(0, pl.len(), dtype=pl.Int64), keys).alias("point")
    return points.select(*keys, point, *names, "score")
