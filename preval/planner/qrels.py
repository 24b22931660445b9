"""A run with separate judgments: the qrels read and checked, aligned with the run's ids,
per-query judgment statistics joined on the query, judged queries the run did not answer added
as placeholder rows; and the joined table for the measures that read every judged document."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import polars as pl

from .. import io, validate
from ..measures import Spec, diversity
from ..options import Columns
from ..ranking import (
    DOC,
    JUDGED_COUNT,
    LABEL,
    PAD,
    QUERY,
    SCORE,
    Ranking,
)
from . import aggregate as agg
from .aggregate import ORDER


def joined_table(
    run: pl.LazyFrame,
    qrels: io.Source,
    columns: Columns,
    duplicates: str,
    sources: Sequence[tuple[str, str]] = (),
) -> pl.LazyFrame:
    """A run and its qrels as one joined table, in the run's column names: each (by...,
    query) group's rows with their labels, plus a row with a null score (not retrieved) for
    every judged document of the query that the group did not retrieve; a judged query that a
    system did not answer becomes such rows only, as trec_eval -c counts it.

    For measures that read every judged document of a query as a row (`reads_judged_rows`).
    The values of every measure are the same as with separate qrels (tests/test_properties.py).
    The qrels keep the data rules of separate qrels (`qrels_checks`), checked before the join:
    a judgment given twice, a null label or id is the qrels' error, named as theirs
    (`sources`: the inputs' files, `validate.named`), not the joined table's.
    A group's judged-only rows come after all the run's rows: auto runs such a plan as one
    streaming plan (`Plan.joined_qrels`); the partitioned engine reads it too, and the
    chunked engine refuses it when the groups are split (`NotGroupedError`).
    """
    query, doc, label, by = columns.query, columns.doc, columns.label, list(columns.by)
    judged = io.scan(qrels, id_columns=(query, doc, *by), numeric_columns=(label,), what="qrels")
    schema = judged.collect_schema()
    check_qrels(schema, query, doc, label, unread=io.pandas_unread(qrels), source=qrels)
    # by columns found in the qrels describe the query (a segment); the others are systems
    described = [b for b in by if b in schema]
    systems = [b for b in by if b not in schema]
    subtopic = [] if columns.subtopic is None else [columns.subtopic]
    # (subtopic ids as text, as the diversity stage reads them: the same example either way)
    judged = judged.select(
        *described, query, *[pl.col(c).cast(pl.String) for c in subtopic], doc, label
    )
    run = run.drop(label, strict=False)
    run, judged = align_ids(run, judged, [*described, query, doc])
    if duplicates != "error":  # one judgment per (query[, subtopic], doc) kept
        judged = agg.dedupe(judged, [*described, query, *subtopic, doc], label, duplicates)
    internal = {query: QUERY, doc: DOC, label: LABEL, **dict.fromkeys(subtopic, diversity.SUB)}
    keys = {**{b: b for b in described}, QUERY: query}
    if subtopic:  # judged once per (query, subtopic, doc), as once per (query, doc) without
        keys[diversity.SUB] = subtopic[0]
    checked = checked_judgments(judged.rename(internal), keys, columns.roles, sources)
    if subtopic:  # a document's highest label over its subtopics
        checked = checked.group_by([*described, QUERY, DOC]).agg(pl.col(LABEL).max())
    judged = checked.rename({QUERY: query, DOC: doc, LABEL: label})
    if systems:
        judged = run.select(systems).unique().join(judged, how="cross")
    # the run's rows keep their order (ties="input" reads it), the judged-only rows come after
    return run.join(
        judged, on=[*by, query, doc], how="full", coalesce=True, maintain_order="left_right"
    )


def checked_judgments(
    rows: pl.LazyFrame,
    keys: dict[str, str],
    roles: dict[str, str],
    sources: Sequence[tuple[str, str]],
    *,
    hints: bool = True,
) -> pl.LazyFrame:
    """Judgments (`keys`..., DOC, LABEL; `keys` maps each internal key to the user's name:
    described..., QUERY[, diversity.SUB]) with the qrels' data rules checked
    (`qrels_checks`) lazily, as `with_qrels` checks them: each group's judgments in one
    group_by, whose rows are kept as lists and taken back out (no second read of the qrels).
    With a subtopic key, a document is judged once per (query, subtopic). `hints`: as for
    `qrels_checks`."""
    float_label = rows.collect_schema()[LABEL].is_float()
    per = ("query", "subtopic") if diversity.SUB in keys else ("query",)
    exprs, check = qrels_checks(rows, keys, roles, float_label, sources, per=per, hints=hints)
    grouped = rows.group_by(list(keys)).agg(DOC, LABEL, *exprs)
    kept = {
        n: t for n, t in grouped.collect_schema().items()
        if not n.startswith(validate.CHECK_PREFIX)
    }  # fmt: skip
    return grouped.map_batches(check, schema=kept).explode([DOC, LABEL])


def qrels_checks(
    judgments: pl.LazyFrame,
    keys: dict[str, str],
    roles: dict[str, str],
    float_label: bool,
    sources: Sequence[tuple[str, str]] = (),
    per: Sequence[str] = ("query",),
    *,
    hints: bool = True,
) -> tuple[list[pl.Expr], Callable[[pl.DataFrame], pl.DataFrame]]:
    """The data rules of qrels, over each query's `judgments` (internal DOC and LABEL columns):
    every row is a judgment (a label, not null; finite when the qrels' label column is a
    float, `float_label`), doc ids are not null, a document is judged once per query (once
    per `per`: query and subtopic when `keys` holds the subtopic). Returns the counters of a
    group_by on `keys` (internal name -> the user's: qkeys..., query[, subtopic]) and the
    `map_batches` function that raises on the first broken rule, naming the qrels (their file
    when `sources` has it). `hints` False drops the ways out that name an option (``by``,
    ``duplicates``): for a caller whose options of those names act on its runs, not on the
    qrels (fusion)."""
    rules = validate.row_checks(
        has_doc=True,
        has_score=False,
        label_may_be_null=False,
        has_pad=False,
        float_label=float_label,
        per=per,
    )
    if not hints:
        rules = [dataclasses.replace(rule, hints=()) for rule in rules]
    exprs = validate.check_exprs(rules, has_doc=True, has_pad=False)
    return exprs, validate.checker(rules, keys, roles, "qrels", judgments, sources)


def check_qrels(
    schema: pl.Schema,
    query: str,
    doc: str,
    label: str,
    unread: Mapping[str, str] | None = None,
    source: io.Source | None = None,
) -> None:
    """The columns every qrels table needs: query and doc ids, a numeric label (`unread`: the
    names of the pandas frame the qrels came from that are no columns, `io.pandas_unread`;
    `source`: the qrels as given, named by the message when it is a path)."""
    what = f"qrels {source}" if isinstance(source, (str, Path)) else "qrels"
    validate.require_columns(
        schema, {"query": query, "doc": doc, "label": label}, what, unread=unread
    )
    validate.require_numeric(schema, label, "label", what)
    validate.require_key(schema, query, "query", what)
    validate.require_key(schema, doc, "doc", what)


def subtopic_qrels(
    qrels_lf: pl.LazyFrame,
    subtopic: str,
    roles: dict[str, str],
    by_cols: list[str],
    keys: list[str],
    duplicates: str,
    sources: Sequence[tuple[str, str]] = (),
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Qrels with a subtopic column -> (one label per (query, doc): its highest over the
    subtopics, for the other measures; the (qkeys..., query, doc, subtopic, label) rows of the
    diversity stage, internal names).

    A document relevant to any subtopic is relevant to the query, as ndeval's own MAP reads
    these qrels (ndeval.c, nrel); graded labels keep their highest grade for nDCG. A (query,
    subtopic, doc) judged twice is the qrels' error, as a (query, doc) of other qrels is
    (`qrels_checks`, checked whatever the measures), or one judgment is kept (`duplicates`).
    """
    query, doc, label = roles["query"], roles["doc"], roles["label"]
    schema = qrels_lf.collect_schema()
    validate.require_columns(
        schema, {"query": query, "doc": doc, "label": label, "subtopic": subtopic}, "qrels"
    )
    validate.require_numeric(schema, label, "label", "qrels")
    present = [(k, b) for k, b in zip(keys, by_cols, strict=True) if b in schema]
    per_subtopic = qrels_lf.select(
        *[pl.col(b).alias(k) for k, b in present],
        pl.col(query).alias(QUERY),
        pl.col(doc).alias(DOC),
        pl.col(subtopic).cast(pl.String).alias(diversity.SUB),
        pl.col(label).cast(pl.Float64).alias(LABEL),
    )
    qkeys = [k for k, _ in present]
    if duplicates == "error":
        names = {**{k: b for k, b in present}, QUERY: query, diversity.SUB: subtopic}
        per_subtopic = checked_judgments(per_subtopic, names, roles, sources)
    else:
        per_subtopic = agg.dedupe(per_subtopic, [*qkeys, QUERY, diversity.SUB, DOC], LABEL,
                                  duplicates)  # fmt: skip
    per_subtopic = per_subtopic.cache()  # (read by both consumers: checked once)
    # group_by does not keep the qrels' order, which no consumer reads
    per_doc = (
        per_subtopic.group_by([*qkeys, QUERY, DOC])
        .agg(pl.col(LABEL).max())
        .rename({**{k: b for k, b in present}, QUERY: query, DOC: doc, LABEL: label})
    )
    return per_doc, per_subtopic


def with_qrels(
    rows: pl.LazyFrame,
    qrels_lf: pl.LazyFrame,
    keys: list[str],
    by_cols: list[str],
    roles: dict[str, str],
    specs: list[Spec],
    ranking: Ranking,
    ties: str,
    duplicates: str,
    rules: list[validate.Rule],
    placeholders: bool | pl.LazyFrame,
    presorted: bool,
    contiguous: bool,
    strings: Sequence[pl.Expr] = (),
    *,
    unjudged: float | None = None,
    sources: Sequence[tuple[str, str]] = (),
) -> pl.LazyFrame:
    """The status frame of a run's `rows` with separate judgments (`qrels_lf`): the rows joined
    with their labels and their query's judgment statistics, aggregated; then, unless
    `placeholders` is False, the judged queries a system did not answer as placeholder rows.

    `unjudged`: the label of the retrieved documents without a judgment in judged queries
    (`relabel`); their query's statistics (R, N, ideal DCG) then count them, per system
    (`relabelled_totals`). `sources`: the inputs' files, which a data rule names
    (`validate.named`).
    """
    query, doc, label = roles["query"], roles["doc"], roles["label"]
    q_schema = qrels_lf.collect_schema()
    check_qrels(q_schema, query, doc, label)
    # by columns found in the qrels describe the query (e.g. a segment); the others are systems
    qkeys = [k for k, b in zip(keys, by_cols, strict=True) if b in q_schema]
    system_keys = [k for k in keys if k not in qkeys]
    user = dict(zip(keys, by_cols, strict=True))

    judgments = qrels_lf.select(
        *[pl.col(user[k]).alias(k) for k in qkeys],
        pl.col(query).alias(QUERY),
        pl.col(doc).alias(DOC),
        pl.col(label).cast(pl.Float64).alias(LABEL),
    )
    rows, judgments = align_ids(rows, judgments, [*qkeys, QUERY, DOC])
    if duplicates != "error":
        judgments = agg.dedupe(judgments, [*qkeys, QUERY, DOC], LABEL, duplicates)
    if ranking.convention == "vlfeat":
        judgments = agg.sign_labels(judgments, keep=pl.lit(False))
    # Shared subplans are cached: the Python validation steps inside them are opaque to
    # Polars' common-subplan elimination, so each consumer would otherwise re-read the input.
    judgments = judgments.cache()

    # Per-query judgment statistics, with the same expressions a joined table uses on its rows.
    q_names = {**{k: user[k] for k in qkeys}, QUERY: query}
    float_label = q_schema[label].is_float()
    checks, check = qrels_checks(judgments, q_names, roles, float_label, sources)
    stats = judgments.group_by([*qkeys, QUERY]).agg(
        *agg.judgment_totals(ranking, pl.len()), *checks
    )
    stats_schema = {
        n: t for n, t in stats.collect_schema().items() if not n.startswith(validate.CHECK_PREFIX)
    }
    stats = stats.map_batches(
        check,
        schema=stats_schema,
    ).cache()

    # Presorted rows must keep their order through the joins, which Polars does not promise by
    # default. Keeping it in the join (maintain_order) doubles the join's cost; numbering the
    # rows and sorting back by number is cheaper.
    if presorted:
        rows = rows.with_row_index(ORDER)
    if unjudged is None:
        joined = rows.join(judgments, on=[*qkeys, QUERY, DOC], how="left").join(
            stats, on=[*qkeys, QUERY], how="left"
        )
    else:
        totals = relabelled_totals(rows, judgments, stats, keys, qkeys, ranking, unjudged)
        joined = (
            rows.join(judgments, on=[*qkeys, QUERY, DOC], how="left")
            .join(totals, on=[*keys, QUERY], how="left")
            .with_columns(relabel(unjudged, pl.col(JUDGED_COUNT).is_not_null()))
        )
    if presorted:
        joined = joined.sort(ORDER).drop(ORDER)
    judged = pl.col(JUDGED_COUNT).first().is_not_null()
    answered = agg.aggregate(  # the run's rows: no placeholder among them
        joined, keys, specs, ranking, ties, rules, judged, presorted, runs=contiguous, pads=False,
        strings=strings,
    ).cache()  # fmt: skip
    if placeholders is False:
        return answered

    # Judged queries a system did not answer: one placeholder row each, same aggregation.
    seen = answered if placeholders is True else placeholders
    wanted = stats.select(*qkeys, QUERY)
    if system_keys:
        wanted = seen.select(system_keys).unique().join(wanted, how="cross")
    missing = wanted.join(seen.select(*keys, QUERY), on=[*keys, QUERY], how="anti")
    schema = joined.collect_schema()
    filler = [
        pl.lit(None, dtype=schema[c]).alias(c)
        for c in schema.names()
        if c not in (*keys, QUERY, PAD, *stats_schema)
    ]
    pads = (
        missing.with_columns(*filler, pl.lit(True).alias(PAD))
        .join(stats, on=[*qkeys, QUERY], how="left")
        .select(schema.names())
    )
    unanswered = agg.aggregate(pads, keys, specs, ranking, ties, rules, judged, strings=strings)
    return pl.concat([answered, unanswered], how="vertical")


def relabel(unjudged: float, judged_query: pl.Expr) -> pl.Expr:
    """The label column with `unjudged` for every retrieved row (a score) without a label in a
    judged query (`judged_query`, per row). A query with no judgment at all stays out of the
    evaluation, as without the option; a negative label (pooled, not assessed) is a judgment
    given and is kept."""
    label = pl.col(LABEL)
    fill = pl.col(SCORE).is_not_null() & label.is_null() & judged_query
    return pl.when(fill).then(pl.lit(unjudged, dtype=pl.Float64)).otherwise(label).alias(LABEL)


def relabelled_totals(
    rows: pl.LazyFrame,
    judgments: pl.LazyFrame,
    stats: pl.LazyFrame,
    keys: list[str],
    qkeys: list[str],
    ranking: Ranking,
    unjudged: float,
) -> pl.LazyFrame:
    """Per (keys..., query) answered by `rows`: the judgment statistics of `stats` computed
    again from the query's judgments plus the group's retrieved unjudged documents labelled
    `unjudged`. Per system, since each system retrieves other unjudged documents; only judged
    queries (the semi join with `stats`, which also runs its data checks)."""
    group = [*keys, QUERY]
    answered = rows.select(group).unique()
    judged = answered.join(judgments, on=[*qkeys, QUERY], how="inner")
    extra = (
        rows.filter(pl.col(SCORE).is_not_null())
        .select(*group, DOC)
        .join(judgments, on=[*qkeys, QUERY, DOC], how="anti")
        .unique()
        .with_columns(pl.lit(unjudged, dtype=pl.Float64).alias(LABEL))
    )
    both = pl.concat([judged.select(*group, DOC, LABEL), extra], how="vertical")
    totals = both.group_by(group).agg(*agg.judgment_totals(ranking, pl.len()))
    return totals.join(stats.select(*qkeys, QUERY), on=[*qkeys, QUERY], how="semi")


def align_ids(
    left: pl.LazyFrame, right: pl.LazyFrame, cols: list[str]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Cast join keys to one dtype on both sides where their dtypes differ: Int64 where both
    are integers that fit it (Int32 ids beside Int64 ones stay integers, so the per-query
    table joins back to the user's integer-keyed tables), else String (CSV vs Parquet)."""
    ls, rs = left.collect_schema(), right.collect_schema()
    differ = [c for c in cols if ls[c] != rs[c]]
    ints = [c for c in differ if _fits_int64(ls[c]) and _fits_int64(rs[c])]
    strings = [c for c in differ if c not in ints]
    for group, dtype in ((ints, pl.Int64), (strings, pl.String)):
        if group:
            left = left.with_columns(pl.col(group).cast(dtype))
            right = right.with_columns(pl.col(group).cast(dtype))
    return left, right


def _fits_int64(dtype: pl.DataType) -> bool:
    return dtype.is_integer() and dtype != pl.UInt64
