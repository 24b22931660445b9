"""The per-query aggregation: rows in ranking order -> one group_by(keys).agg -> the status
frame (measures, audit counters, validation counters), for a joined table and for a run's rows
joined with its judgments (`qrels`), in full or on each query's top K rows only."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .. import validate
from ..measures import Spec, reads_judged_rows
from ..measures import build as build_measure
from ..ranking import (
    COUNT_COLUMN,
    DOC,
    JUDGED_COUNT,
    LABEL,
    PAD,
    POSITION,
    QUERY,
    RETRIEVED,
    RUN,
    SCORE,
    Ranking,
    count,
    nonrel_column,
    run_number,
    sort_keys,
)

# Status columns (internal): audit counters per (keys..., query).
JUDGED, N_RET, N_ROWS, N_UNJUDGED = "_judged", "_nret", "_nrows", "_nunj"
ORDER = "_order"  # the row number of presorted rows, across joins
R_TOTAL, EVALUATED = "_R", "_eval"


def rules(has_doc: bool, ranking: Ranking, **kinds: bool) -> list[validate.Rule]:
    """The data rules of an evaluation: the input's, and given totals that the data exceeds.

    `kinds`: `validate.row_checks`' `has_pad`, `float_score` and `float_label`.
    """
    rules = validate.row_checks(has_doc=has_doc, has_score=True, label_may_be_null=True, **kinds)
    level = ranking.default_level
    for given, total, found, what in (
        (ranking.total_positives, ranking.num_rel(level), ranking.found_rel(level), "positives"),
        (ranking.total_negatives, ranking.num_negatives(level), ranking.found_negatives(level),
         "negatives"),
    ):  # fmt: skip
        if given is not None:
            shown = f"num_{what} (a column)" if given == COUNT_COLUMN else f"num_{what}={given}"
            rules.append(validate.total_rule(what, shown, total, found, "queries"))
    return rules


def sign_labels(lf: pl.LazyFrame, keep: pl.Expr) -> pl.LazyFrame:
    """VLFeat's labels: > 0 positive (1), < 0 negative (-1); 0 and no label are ignored."""
    label = pl.col(LABEL)
    informative = (label.is_not_null() & (label != 0)) | keep
    return lf.filter(informative).with_columns(label.sign())


def dedupe(lf: pl.LazyFrame, subset: list[str], value: str, how: str) -> pl.LazyFrame:
    """Keep one row per `subset`: the first in input order, or the one with the max `value`."""
    if how == "max":
        lf = lf.sort(value, descending=True, nulls_last=True, maintain_order=True)
    return lf.unique(subset=subset, keep="first", maintain_order=True)


def aggregate(
    rows: pl.LazyFrame,
    keys: list[str],
    specs: list[Spec],
    ranking: Ranking,
    ties: str,
    rules: list[validate.Rule],
    judged: pl.Expr,
    presorted: bool = False,
    *,
    runs: bool = False,
    pads: bool = True,
    strings: Sequence[pl.Expr] = (),
) -> pl.LazyFrame:
    """Sort once, then one group_by/agg for every measure, audit and validation counter.

    `presorted`: the rows are in ranking order within each group already; no sort. `runs` (with
    `presorted`): each group's rows are also contiguous; groups are taken as runs of rows.
    `pads`: the rows may hold placeholders (qrels' judged queries a system did not answer);
    if not, the audit counts rows without asking which are real. `strings`: per-query String
    columns (`Ranking.relstring`), aggregated with the measures.
    """
    if ranking.convention == "vlfeat":
        rows = sign_labels(rows, keep=pl.col(PAD))
    columns = rows.collect_schema()
    has_doc = DOC in columns
    group = [*keys, QUERY]
    by, descending = ranking_order(group, ties, has_doc, ranking)
    ranked = rows.with_columns(pl.col(SCORE).is_not_null().alias(RETRIEVED))
    if not presorted:
        ranked = ranked.sort(by, descending=descending, nulls_last=True)
    levels = {s.level(ranking.default_level) for s in specs} | {ranking.default_level}
    flags, ranking = ranking.flagged(levels)
    ranked = ranked.with_row_index(POSITION).with_columns(flags)
    checks = validate.check_exprs(rules, has_doc=has_doc, has_pad=pads)
    status = status_exprs(ranking, judged, pads=pads)
    exprs = [*[build_measure(s, ranking) for s in specs], *strings, *status, *checks]
    _check_custom(ranked, group, specs, ranking)
    if presorted and runs:
        # Polars groups several keys by hashing even when they are sorted; a run number is one
        # key, sorted by construction (given as a column, or numbered here)
        run = pl.col(RUN) if RUN in columns else run_number(group)
        numbered = ranked.with_columns(run.set_sorted().alias(RUN))
        keys_of_run = [pl.col(c).first() for c in group]
        return numbered.group_by(RUN).agg(*keys_of_run, *exprs).drop(RUN)
    return ranked.group_by(group).agg(*exprs)


def ranking_order(
    group: list[str], ties: str, has_doc: bool, ranking: Ranking
) -> tuple[list[pl.Expr], list[bool]]:
    """The sort of the ranked frame: group keys ascending, then the tie rule's keys."""
    order, descending = sort_keys(ties, has_doc=has_doc, trec_version=ranking.trec_version)
    return [*map(pl.col, group), *order], [False] * len(group) + descending


def status_exprs(ranking: Ranking, judged: pl.Expr, *, pads: bool) -> list[pl.Expr]:
    """Per-query audit columns; none depends on the ranking order. `pads`: see `aggregate`."""
    return [
        judged.alias(JUDGED),
        count(pl.col(RETRIEVED)).cast(pl.Int64).alias(N_RET),  # before -M/-J: the query set
        (count(~pl.col(PAD)) if pads else pl.len()).cast(pl.Int64).alias(N_ROWS),
        count(pl.col(RETRIEVED) & pl.col(LABEL).is_null()).cast(pl.Int64).alias(N_UNJUDGED),
        ranking.num_rel(ranking.default_level).cast(pl.Int64).alias(R_TOTAL),
    ]


# Rows per query, in multiples of K, from which ranking only the top K pays (2M rows, 100 per
# query, P@K nDCG@K RR@K; top-K plan / full plan: K = 5-10 about 0.85-0.95, K = 20-30 about
# 1.0-1.1, K = 100 about 1.9).
TOP_K_SHARE = 10


def top_cutoff(specs: list[Spec], ranking: Ranking, relstrings: Sequence[int] = ()) -> int | None:
    """K when every measure (and relstring) reads only the top K ranked rows (and per-query
    totals), else None.

    Not with `depth` or `judged_only` (they change which rows take a rank) nor outside the
    trec convention (where some measures read the whole curve).
    """
    if ranking.depth is not None or ranking.judged_only or ranking.convention != "trec":
        return None
    if not all(
        s.definition.top_only and isinstance(s.cutoff, int) and not reads_judged_rows(s)
        for s in specs
    ):
        return None
    cutoffs = [*(s.cutoff for s in specs), *relstrings]
    return max(cutoffs) if cutoffs else None  # type: ignore[type-var]  # ints: checked above


def aggregate_top(
    rows: pl.LazyFrame,
    keys: list[str],
    specs: list[Spec],
    ranking: Ranking,
    top: Ranking,
    ties: str,
    rules: list[validate.Rule],
    judged: pl.Expr,
    k: int,
    *,
    strings: Sequence[pl.Expr] = (),
) -> pl.LazyFrame:
    """`aggregate` for measures that read only each query's top k ranked rows.

    Per-query totals (R, N, ideal DCG), audit columns and data checks do not depend on the
    order: one aggregation over all rows gives them. Only the rows whose score reaches the
    query's k-th best score (ties included) can be in its top k: those few are sorted and
    the measures read them with `top`, a `Ranking` that takes the totals from columns (as
    with separate qrels). A query with nothing retrieved keeps its rows. Same values as the
    full sort (tests/test_properties.py).
    """
    has_doc = DOC in rows.collect_schema()
    group = [*keys, QUERY]
    by, descending = ranking_order(group, ties, has_doc, ranking)
    rows = rows.with_columns(pl.col(SCORE).is_not_null().alias(RETRIEVED))
    totals = judgment_totals(top, count(pl.col(LABEL).is_not_null()))
    stats = rows.group_by(group).agg(
        *totals,
        *status_exprs(ranking, judged, pads=False),  # without qrels only
        *validate.check_exprs(rules, has_doc=has_doc, has_pad=False),
    )
    score = by[len(group)]  # the score as the tie rule compares it
    kth = score.top_k(k).min().over(group)  # nulls (not retrieved) come last in top_k
    candidates = rows.filter(pl.when(kth.is_null()).then(True).otherwise(score >= kth))
    total_names = [t.meta.output_name() for t in totals]
    ranked = (
        candidates.join(stats.select(*group, *total_names), on=group, how="left", nulls_equal=True)
        .sort(by, descending=descending, nulls_last=True)
        .with_row_index(POSITION)
    )
    values = ranked.group_by(group).agg(*[build_measure(s, top) for s in specs], *strings)
    _check_custom(ranked, group, specs, top)
    names = [s.name for s in specs] + [e.meta.output_name() for e in strings]
    audit = [c for c in stats.collect_schema().names() if c not in (*group, *total_names)]
    return stats.join(values, on=group, how="left", nulls_equal=True).select(*group, *names, *audit)


def judgment_totals(columns: Ranking, judged_count: pl.Expr) -> list[pl.Expr]:
    """The per-query columns a `columns` Ranking reads, computed from judged rows."""
    rows_view = Ranking("rows", columns.default_level)
    return [
        judged_count.cast(pl.Int64).alias(JUDGED_COUNT),
        *[count(rows_view.judged_rel(lv)).alias(c) for lv, c in columns.levels.items()],
        *[
            count(rows_view.judged_nonrel(lv)).alias(nonrel_column(c))
            for lv, c in columns.levels.items()
        ],
        *[rows_view.ideal_dcg_of_rows(k).alias(c) for k, c in columns.ideal_cutoffs.items()],
    ]


def _check_custom(
    ranked: pl.LazyFrame, group: list[str], specs: Sequence[Spec], ranking: Ranking
) -> None:
    """`custom.check_outputs` for the user-defined measures among `specs`; the module is
    imported only when there are some (a command evaluating built-in measures never loads it)."""
    if any(s.definition.custom is not None for s in specs):
        from .. import custom

        custom.check_outputs(ranked, group, specs, ranking)
