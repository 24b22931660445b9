"""Build the evaluation plan: rows -> ranked rows -> one group_by/agg -> per-query table.

Two input shapes (DESIGN §5):

* one joined table (query, [doc], score, label): a null score is a document that was not
  retrieved, a null label an unjudged one. R and the ideal DCG come from the group's rows.
* a run plus separate qrels: the run is left-joined to the judgments on (query, doc);
  per-query judgment statistics (R per relevance level, ideal DCG per cutoff) are computed
  from the qrels with the same expressions and joined on the query. Judged queries that a
  run (or a system) did not answer enter the same aggregation as one placeholder row each,
  so they get every measure's "nothing retrieved" value without special cases.

Everything is one lazy plan; the per-query *status* frame it produces carries the measures,
the audit counters and the validation counters. `evaluate` and `audit` are views of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

import polars as pl

from . import inputs, io, validate
from .conventions import get_convention
from .errors import InputError, MeasureError, MissingColumnError
from .measures import Spec, diversity, ideal_keys, parse_all, reads_judged_rows
from .measures import build as build_measure
from .options import Columns, Hints, Semantics
from .ranking import (
    COUNT_COLUMN,
    DOC,
    EXPECTED,
    JUDGED_COUNT,
    LABEL,
    PAD,
    POSITION,
    QUERY,
    RETRIEVED,
    ROW,
    RUN,
    SCORE,
    TOTAL_NEG,
    TOTAL_POS,
    Ranking,
    count,
    ideal_column,
    in_order,
    nonrel_column,
    packed_sort_keys,
    relstring_column,
    run_number,
    sort_keys,
)

# Status columns (internal): audit counters per (keys..., query).
_JUDGED, _N_RET, _N_ROWS, _N_UNJUDGED = "_judged", "_nret", "_nrows", "_nunj"
_ORDER = "_order"  # the row number of presorted rows, across joins
_R, _EVAL = "_R", "_eval"


@dataclass(frozen=True)
class Recipe:
    """Everything but the data that builds an evaluation plan: an engine builds the plan of
    each piece of the input from it (`build`)."""

    measures: tuple[str, ...]
    columns: Columns = dataclasses.field(default_factory=Columns)
    semantics: Semantics = dataclasses.field(default_factory=Semantics)
    qrels: io.Source | None = None
    # cutoffs of trec_eval's relstring: a String column each (`relstring_column`), not measures
    relstrings: tuple[int, ...] = ()


@dataclass(frozen=True)
class Evaluation:
    """The lazy plan of one evaluation and the names needed to present it."""

    status: pl.LazyFrame  # one row per (keys..., query) seen in the input or the qrels
    keys: list[str]  # internal by-key names
    names: dict[str, str]  # internal key name -> user column name (keys and query)
    specs: list[Spec]
    # What the engines need to evaluate the input piece by piece: the input's columns (user
    # names, before any renaming), the group key (user names) and the plan's recipe.
    source: pl.LazyFrame | None = None
    group: list[str] = dataclasses.field(default_factory=list)
    recipe: Recipe | None = None
    keep: object = None  # keeps the chunked engine's spill directory alive
    # one boolean: are the input's rows already in ranking order within each query, given that
    # each query's rows are contiguous (the chunked engine checks that)? None: the question does
    # not arise (the order depends on labels joined in from qrels, or rewritten)
    in_rank_order: pl.LazyFrame | None = None
    # the keys that put the input's rows in ranking order within each query, under the same
    # contiguity: a packed Int64 key (`packed_sort_keys`), ascending, then the columns that
    # break its ties, descending where `rank_descending` says; the chunked engine sorts them
    # faster than the plan's own sort. None without such a key or when the plan does not sort
    # every row (top-K)
    rank_keys: pl.LazyFrame | None = None
    rank_descending: tuple[bool, ...] = ()
    # the source reads a range of rows at the cost of that range (`io.reads_by_range`): the
    # chunked engine then reads it range by range rather than as a stream
    source_by_range: bool = False
    # K when the measures read only each query's top K rows: the plan then ranks only those if
    # the queries have enough rows (`rows_per_query`), and the chunked engine counts them
    top_k: int | None = None
    # the source is the join of a run with its qrels (`_joined_table`), a plan rather than a
    # file: an engine that reads it piece by piece would run the join again for each look
    joined_qrels: bool = False
    # the files the plan reads (input, qrels): a reader's error mid-run names one of them and
    # its line (`io.explain`)
    paths: tuple[str | Path, ...] = ()
    # counts the source's rows, or bounds them from above, without reading it (a TREC run's
    # lines, `io.count_lines`): an engine that sizes its work first needs no pass to count
    count_rows: Callable[[], int] | None = None

    @property
    def measure_names(self) -> list[str]:
        return [s.name for s in self.specs]

    @property
    def string_names(self) -> list[str]:
        """The per-query String columns (`build_plan`'s `relstrings`): not measures, so the
        long form and summaries leave them out."""
        return [relstring_column(k) for k in (self.recipe.relstrings if self.recipe else ())]

    def per_query(
        self, form: Literal["wide", "long"] = "wide", *, answered: str | None = None
    ) -> pl.LazyFrame:
        """The evaluated queries; `answered` names an extra boolean column that says whether
        the run retrieved anything for the query (before `depth` and `judged_only`). The wide
        form ends with the String columns (`string_names`), the long form holds measures only."""
        cols = [*self.keys, QUERY]
        extra = [(pl.col(_N_RET) > 0).alias(answered)] if answered else []
        strings = self.string_names if form == "wide" else []
        out = (
            self.status.filter(pl.col(_EVAL))
            .select(*cols, *self.measure_names, *strings, *extra)
            .sort(cols)
            .rename(self.names)
        )
        if form == "long":
            return to_long(out, index=[self.names[c] for c in cols])
        if form != "wide":
            msg = f"form must be 'wide' or 'long', got {form!r}"
            raise ValueError(msg)
        return out

    def audit(self) -> pl.LazyFrame:
        ev, ret = pl.col(_EVAL), pl.col(_N_RET) > 0
        counts = [
            ev.sum().alias("queries_evaluated"),
            (ev & (pl.col(_R) == 0)).sum().alias("queries_without_relevant"),
            (pl.col(_JUDGED) & ~ret).sum().alias("queries_judged_not_retrieved"),
            (~pl.col(_JUDGED) & ret).sum().alias("queries_retrieved_not_judged"),
            pl.col(_N_UNJUDGED).filter(ev).sum().alias("rows_retrieved_unjudged"),
            pl.col(_N_ROWS).filter(~ev).sum().alias("rows_dropped"),
        ]
        counts = [c.cast(pl.Int64) for c in counts]
        if not self.keys:
            return self.status.select(counts)
        return (
            self.status.group_by(self.keys)
            .agg(counts)
            .sort(self.keys)
            .rename({k: self.names[k] for k in self.keys})
        )


def to_long(per_query: io.Source, index: Sequence[str]) -> pl.LazyFrame:
    """Wide per-query table (any dataframe or a path) -> (keys..., query, measure, value),
    measures in column order."""
    per_query = io.scan(per_query, what="per-query table")
    return per_query.unpivot(index=list(index), variable_name="measure", value_name="value").sort(
        list(index), maintain_order=True
    )


def evaluate(
    data: io.Source,
    measures: str | Iterable[str],
    *,
    qrels: io.Source | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    label: str = "label",
    by: str | Sequence[str] | None = None,
    relevance_level: float = 1,
    ties: str | None = None,
    queries: str = "judged",
    duplicates: str = "error",
    depth: int | None = None,
    judged_only: bool = False,
    trec_version: int = 9,
    convention: str = "trec",
    num_positives: int | str | None = None,
    num_negatives: int | str | None = None,
    include_inf: bool = False,
    form: Literal["wide", "long"] = "wide",
    input_format: Literal["table", "trec"] = "table",
    subtopic: str | None = None,
) -> pl.LazyFrame:
    """Evaluate ranked results per query; return a LazyFrame, one row per (by..., query).

    Parameters
    ----------
    data
        A LazyFrame, DataFrame or path (.parquet, .csv, .tsv). Without `qrels`: one joined
        table with `query`, `score`, `label` (and optionally `doc`) columns, where a null score
        marks a document that was not retrieved and a null label an unjudged one. With `qrels`:
        a run with `query`, `doc`, `score` columns.
    measures
        Measure names, e.g. ``["AP", "P@10", "nDCG@10", "P(rel=2)@10"]``; trec_eval names
        (``map``, ``P_10``, ``ndcg_cut_10`` ...) are aliases. See `preval measures`.
    qrels
        Judgments with `query`, `doc`, `label` columns. Unjudged retrieved documents are
        non-relevant; judged documents the run did not return count toward R. A `by` column
        that also exists in `qrels` is a property of the query (joined on); the others are
        systems, each evaluated against all judgments.
    by
        Extra key column(s), e.g. ``"system"``: each group is evaluated separately.
    relevance_level
        A document is relevant when ``label >= relevance_level`` (trec_eval ``-l``). nDCG uses
        the raw grades, as trec_eval does.
    ties
        Order of documents with equal scores: ``"trec"`` (default with a doc column: scores as
        float32, then doc id descending, as trec_eval 9), ``"input"`` (default without one: input
        row order), ``"optimistic"`` / ``"pessimistic"`` (relevant documents first / last).
    queries
        ``"judged"`` (default, trec_eval ``-c``): every judged query counts, scoring 0 if
        nothing was retrieved; ``"retrieved"``: judged queries with at least one retrieved
        document (trec_eval's default). Queries without judgments never count (see `audit`).
    duplicates
        A repeated (query, doc) is an error (``"error"``), or keep the row with the highest
        score (``"max"``; the highest label in qrels) or the first one (``"first"``).
    depth
        Evaluate only the top `depth` documents of each ranking (trec_eval ``-M``).
    judged_only
        Drop unjudged retrieved documents before ranking (trec_eval ``-J``).
    trec_version
        9 (default: trec_eval 9.x and pytrec_eval) or 10: with ``ties="trec"`` version 10
        compares scores as doubles instead of 32-bit floats, and rounds IPrec recall cutoffs
        to the nearest rank (see `preval measures`).
    convention
        ``"trec"`` (default), ``"lingpipe"`` or ``"vlfeat"``: the tie order, label meaning,
        -inf scores and curve end points of that evaluator (see `curve` and the README). It
        decides curve measures (AUC-PR, IPrec, AP11) and R-precision with no positive.
    num_positives, num_negatives
        Totals per query, misses included (LingPipe addMisses, VLFeat NumPositives): R and
        the ROC negatives; a number, or the name of a column holding each query's total.
        Below what the data holds is an error.
    include_inf
        With ``convention="vlfeat"``: rank -inf scores instead of treating them as unretrieved.
    form
        ``"wide"``: one Float64 column per measure, named canonically; ``"long"``: rows of
        (by..., query, measure, value).
    input_format
        ``"table"`` (default): paths are Parquet/CSV tables. ``"trec"``: `data` is a TREC run
        file or a list of them (see `scan_run`: one ``system`` per file, and `by` defaults to
        ``"system"``) and `qrels` a TREC qrels file (`scan_qrels`).
    subtopic
        The qrels' subtopic column, for the diversity measures (alpha_nDCG@K, ERR_IA@K,
        NRBP, StRecall@K ...): `qrels` then hold one row per (query, subtopic, doc); with
        ``input_format="trec"`` the second field of the qrels file is the subtopic, as in
        ndeval. The other measures read a document's highest label over its subtopics.

    Returns
    -------
    polars.LazyFrame
        Sorted by (by..., query). Bad data raises a `PrevalError` when it is collected.
    """
    plan = build_plan(
        data, measures, qrels=qrels, query=query, doc=doc, score=score, label=label, by=by,
        relevance_level=relevance_level, ties=ties, queries=queries, duplicates=duplicates,
        depth=depth, judged_only=judged_only, trec_version=trec_version, convention=convention,
        num_positives=num_positives, num_negatives=num_negatives, include_inf=include_inf,
        input_format=input_format, subtopic=subtopic,
    )  # fmt: skip
    return plan.per_query(form)


def audit(
    data: io.Source,
    *,
    qrels: io.Source | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    label: str = "label",
    by: str | Sequence[str] | None = None,
    relevance_level: float = 1,
    ties: str | None = None,
    queries: str = "judged",
    duplicates: str = "error",
    depth: int | None = None,
    judged_only: bool = False,
    trec_version: int = 9,
    convention: str = "trec",
    num_positives: int | str | None = None,
    num_negatives: int | str | None = None,
    include_inf: bool = False,
    input_format: Literal["table", "trec"] = "table",
    subtopic: str | None = None,
) -> pl.LazyFrame:
    """What an evaluation with the same arguments counts and drops, one row per by-group
    (the keywords are `evaluate`'s).

    Columns: ``queries_evaluated``; ``queries_without_relevant`` (evaluated, R = 0);
    ``queries_judged_not_retrieved`` (scored 0 with ``queries="judged"``, dropped otherwise);
    ``queries_retrieved_not_judged`` (never evaluated); ``rows_retrieved_unjudged`` (counted
    as non-relevant); ``rows_dropped`` (input rows of queries that were not evaluated).
    """
    plan = build_plan(
        data, ["NumQ"], qrels=qrels, query=query, doc=doc, score=score, label=label, by=by,
        relevance_level=relevance_level, ties=ties, queries=queries, duplicates=duplicates,
        depth=depth, judged_only=judged_only, trec_version=trec_version, convention=convention,
        num_positives=num_positives, num_negatives=num_negatives, include_inf=include_inf,
        input_format=input_format, subtopic=subtopic,
    )  # fmt: skip
    return plan.audit()


def build_plan(
    data: io.Source,
    measures: str | Iterable[str],
    *,
    qrels: io.Source | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    label: str = "label",
    by: str | Sequence[str] | None = None,
    relevance_level: float = 1,
    ties: str | None = None,
    queries: str = "judged",
    duplicates: str = "error",
    depth: int | None = None,
    judged_only: bool = False,
    trec_version: int = 9,
    convention: str = "trec",
    num_positives: int | str | None = None,
    num_negatives: int | str | None = None,
    include_inf: bool = False,
    input_format: Literal["table", "trec"] = "table",
    rows_per_query: float | None = None,
    subtopic: str | None = None,
    relstrings: Sequence[int] = (),
) -> Evaluation:
    """The evaluation plan, to run once with an engine (`preval.collect`) and read several
    ways: per-query rows, the audit, summaries. The keywords are `evaluate`'s.

    `relstrings`: cutoffs k of trec_eval's ``relstring.k``; each adds a String column
    ``relstring@k`` to the wide per-query table: the codes of the query's first k ranked
    documents, one character each (a label 0-9 as its digit, ``>`` above 9, ``.`` a negative
    label, ``-`` no label), after `depth` and `judged_only`. Not a measure: summaries and the
    long form leave it out.

    `rows_per_query` estimates the rows of each (by..., query) group: when every measure reads
    only the top K ranked rows and the groups average at least `TOP_K_SHARE` × K rows, the plan
    ranks only the rows that can reach each query's top K (`_aggregate_top`; the chunked engine
    passes each chunk's figure). Without it, or below that share, every row is ranked: with K
    near the rows of a query the top-K plan costs up to twice as much. Results are the same.
    """
    run_files = None
    # any dataframe becomes a Polars one here, once: a stream (Arrow) can be read only once
    if not (input_format == "trec" and isinstance(data, (str, Path, list, tuple))):
        data = io.normalise(data)  # (TREC run files may come as a list)
    qrels = None if qrels is None else io.normalise(qrels, "qrels")
    if input_format == "trec":
        if not isinstance(data, (pl.DataFrame, pl.LazyFrame)):
            run_files = data
            data = io.scan_run(data)
        if qrels is not None and not isinstance(qrels, (pl.DataFrame, pl.LazyFrame)):
            qrels = io.scan_qrels(qrels, subtopic=subtopic)
        by = "system" if by is None else by
    elif input_format != "table":
        msg = f"input_format must be 'table' or 'trec', got {input_format!r}"
        raise InputError(msg)
    if not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in relstrings):
        msg = f"relstrings must be whole numbers >= 0, got {list(relstrings)!r}"
        raise MeasureError(msg)
    recipe = Recipe(
        tuple(s.name for s in parse_all(measures)),
        Columns(query, doc, score, label, by, subtopic),  # type: ignore[arg-type]  # normalised there
        Semantics(
            relevance_level, ties, queries, duplicates, depth, judged_only, trec_version,
            convention, num_positives, num_negatives, include_inf,
        ),
        qrels,
        tuple(dict.fromkeys(relstrings)),
    )  # fmt: skip
    plan = build(data, recipe, Hints(rows_per_query=rows_per_query))
    if run_files is not None and not plan.joined_qrels:  # (the joined table has more rows)
        plan = dataclasses.replace(plan, count_rows=partial(io.count_lines, run_files))
    return plan


def build(data: io.Source, recipe: Recipe, hints: Hints | None = None) -> Evaluation:
    """The evaluation plan of `data` by `recipe`; `hints` are an engine's (`Hints`)."""
    hints = Hints() if hints is None else hints
    specs = parse_all(recipe.measures)
    subtopic = recipe.columns.subtopic
    diversity.require_subtopic(specs, subtopic, recipe.qrels is not None)
    # diversity measures have a stage of their own (`diversity.table`); `specs` are the others
    all_specs, specs = specs, [s for s in specs if not s.definition.diversity]
    query, doc, score, label = (recipe.columns.query, recipe.columns.doc, recipe.columns.score,
                                recipe.columns.label)  # fmt: skip
    by_cols = list(recipe.columns.by)
    qrels = recipe.qrels
    sem = recipe.semantics
    relevance_level, ties, queries, duplicates = (sem.relevance_level, sem.ties, sem.queries,
                                                  sem.duplicates)  # fmt: skip
    depth, judged_only, trec_version = sem.depth, sem.judged_only, sem.trec_version
    num_positives, num_negatives = sem.num_positives, sem.num_negatives
    include_inf = sem.include_inf
    placeholders, rows_per_query = hints.placeholders, hints.rows_per_query
    _presorted, _contiguous, _runs = hints.presorted, hints.contiguous, hints.runs
    conv = get_convention(sem.convention)
    counts = {TOTAL_POS: num_positives, TOTAL_NEG: num_negatives}
    count_columns = {k: v for k, v in counts.items() if isinstance(v, str)}
    keys = [f"_by{i}" for i in range(len(by_cols))]
    names = {**dict(zip(keys, by_cols, strict=True)), QUERY: query}
    roles = recipe.columns.roles

    run_lf, run_schema = inputs.read(
        data, query=query, by=by_cols, doc=doc, score=score, label=label,
        needs_label=qrels is None, counts=list(count_columns.values()),
    )  # fmt: skip
    has_doc = doc in run_schema
    if qrels is not None and not has_doc:
        msg = f"input: missing doc column {doc!r}, needed to join the run with qrels"
        raise MissingColumnError(msg)
    whole = [s.name for s in specs if reads_judged_rows(s)]
    if qrels is not None and whole:
        if len(specs) < len(all_specs):
            msg = (
                f"{whole[0]} with separate qrels joins them into one table, which the diversity "
                "measures cannot read (their judgments are per subtopic): evaluate them apart"
            )
            raise MeasureError(msg)
        table = _joined_table(run_lf, qrels, recipe.columns, duplicates)
        columns = dataclasses.replace(recipe.columns, subtopic=None)  # labels per doc now
        plan = build(table, dataclasses.replace(recipe, qrels=None, columns=columns), hints)
        return dataclasses.replace(plan, joined_qrels=True, paths=_paths(data, qrels))
    if ties is None:  # the convention's tie order; trec's needs doc ids
        ties = "trec" if (conv.ties == "trec" and has_doc) else "input"
    if ties == "trec" and not has_doc:
        msg = f"ties='trec' breaks ties by doc id, but the input has no doc column {doc!r}"
        raise InputError(msg)

    levels = sorted({s.level(relevance_level) for s in specs} | {relevance_level})
    level_cols = {lv: f"_R{i}" for i, lv in enumerate(levels)}
    ideal_cols = {k: ideal_column(k) for s in specs for k in ideal_keys(s)}

    source_columns = [*by_cols, query, *([doc] if has_doc else []), score,
                      *([label] if qrels is None else []), *count_columns.values()]  # fmt: skip
    rows = inputs.canonical(
        run_lf,
        keys=[*zip(by_cols, keys, strict=True), (query, QUERY)],
        doc=doc if has_doc else None,
        score=score,
        label=label if qrels is None else None,
        counts=count_columns,
        extra=[pl.col(_runs).alias(RUN)] if _runs is not None else [],
    )
    if ties != "trec":  # the input order is a tie-breaker; it must be taken before any join
        rows = rows.with_row_index(ROW)
    rows = rows.with_columns(pl.lit(False).alias(PAD))
    if not (conv.inf_retrieved or include_inf):  # VLFeat: -inf scores are not retrieved
        rows = rows.with_columns(
            pl.when(pl.col(SCORE) != float("-inf")).then(pl.col(SCORE)).alias(SCORE)
        )
    if duplicates != "error" and has_doc:
        rows = _dedupe(rows, [*keys, QUERY, DOC], SCORE, duplicates)

    options = {
        "depth": depth, "judged_only": judged_only, "trec_version": trec_version,
        "convention": conv.name, "ties": ties,
        "total_positives": COUNT_COLUMN if TOTAL_POS in count_columns else num_positives,
        "total_negatives": COUNT_COLUMN if TOTAL_NEG in count_columns else num_negatives,
    }  # fmt: skip
    k = top_k = None  # ranks only each query's top K rows when set
    float_score = run_schema[score].is_float()
    # read only labels, the score's order, depth and judged_only: the same under any Ranking
    strings = [
        Ranking("rows", relevance_level, **options).relstring(n).alias(relstring_column(n))
        for n in recipe.relstrings
    ]
    if qrels is None:
        ranking = Ranking("rows", relevance_level, **options)
        # no placeholder rows without qrels: PAD is false throughout
        floats = {"float_score": float_score, "float_label": run_schema[label].is_float()}
        rules = _rules(has_doc, ranking, has_pad=False, **floats)
        judged = pl.col(LABEL).is_not_null().any()
        k = top_k = (
            None if _presorted or count_columns else _top_cutoff(specs, ranking, recipe.relstrings)
        )
        if k is not None and (rows_per_query is None or rows_per_query < TOP_K_SHARE * k):
            k = None
        if k is None:
            status = _aggregate(
                rows, keys, specs, ranking, ties, rules, judged, _presorted, runs=_contiguous,
                pads=False, strings=strings,
            )  # fmt: skip
        else:
            top = Ranking("columns", relevance_level, level_cols, ideal_cols, **options)
            status = _aggregate_top(
                rows, keys, specs, ranking, top, ties, rules, judged, k, strings=strings
            )
    else:
        ranking = Ranking("columns", relevance_level, level_cols, ideal_cols, **options)
        qrels_lf = io.scan(
            qrels, id_columns=(query, doc, *by_cols), numeric_columns=(label,), what="qrels"
        )
        if subtopic is not None:
            qrels_lf, per_subtopic = _subtopic_qrels(qrels_lf, subtopic, roles, by_cols, keys)
        # labels come from the qrels (checked there); unjudged rows get null, never NaN
        rules = _rules(has_doc, ranking, has_pad=True, float_score=float_score, float_label=False)
        status = _with_qrels(
            rows,
            qrels_lf,
            keys,
            by_cols,
            roles,
            specs,
            ranking,
            ties,
            duplicates,
            rules,
            placeholders,
            _presorted,
            _contiguous,
            strings,
        )

    check = validate.checker(rules, names, roles, "input", rows)
    schema = status.collect_schema()
    kept = {n: t for n, t in schema.items() if not n.startswith(validate.CHECK_PREFIX)}
    queries_ok = pl.col(_JUDGED) & (pl.lit(queries == "judged") | (pl.col(_N_RET) > 0))
    status = status.map_batches(check, schema=kept).with_columns(queries_ok.alias(_EVAL))
    if len(specs) < len(all_specs):
        div_specs = [s for s in all_specs if s.definition.diversity]
        if ties == EXPECTED or conv.name != "trec":
            msg = (
                f"{div_specs[0].name}: diversity measures follow ndeval's ranking: "
                f"ties='expected' and convention={conv.name!r} are not defined for them"
            )
            raise MeasureError(msg)
        qkeys = [k for k in keys if k in per_subtopic.collect_schema()]
        div_rows, per_subtopic = _align_ids(rows, per_subtopic, [*qkeys, QUERY, DOC])
        values = diversity.table(
            div_rows, per_subtopic, keys, qkeys, div_specs, default_level=relevance_level,
            ties=ties, trec_version=trec_version, depth=depth, judged_only=judged_only,
            duplicates=duplicates,
            names={**names, "doc": doc, "subtopic": subtopic},  # type: ignore[dict-item]
        )  # fmt: skip
        status = diversity.attach(status, values, keys, [s.name for s in div_specs])
    source = run_lf.select(list(dict.fromkeys(source_columns)))
    in_rank_order = rank_keys = None
    rank_descending: tuple[bool, ...] = ()
    # the order of the input's own rows; not with labels from qrels or rewritten (VLFeat), nor
    # after a dedupe that reorders rows
    if ties in ("trec", "input") and duplicates == "error" and conv.name != "vlfeat":
        order, descending = sort_keys(ties, has_doc=has_doc, trec_version=trec_version)
        in_rank_order = rows.select(in_order([*keys, QUERY], order, descending))
        packed = packed_sort_keys([*keys, QUERY], ties, has_doc=has_doc, trec_version=trec_version)
        if packed is not None and k is None:  # (a top-K plan sorts few rows: it keeps its own)
            (key, *tie_keys), (_, *rank_descending) = packed
            rank_keys = rows.select(
                key.alias("_key"), *(tie.alias(f"_tie{i}") for i, tie in enumerate(tie_keys))
            )
    return Evaluation(
        status, keys, names, all_specs, source, [*by_cols, query], recipe, None, in_rank_order,
        rank_keys, tuple(rank_descending), io.reads_by_range(data), top_k,
        paths=_paths(data, qrels),
    )  # fmt: skip


def _paths(*sources: io.Source | None) -> tuple[str | Path, ...]:
    return tuple(s for s in sources if isinstance(s, (str, Path)))


def _joined_table(
    run: pl.LazyFrame, qrels: io.Source, columns: Columns, duplicates: str
) -> pl.LazyFrame:
    """A run and its qrels as one joined table, in the run's column names: each (by...,
    query) group's rows with their labels, plus a row with a null score (not retrieved) for
    every judged document of the query that the group did not retrieve; a judged query that a
    system did not answer becomes such rows only, as trec_eval -c counts it.

    For measures that read every judged document of a query as a row (`reads_judged_rows`).
    The values of every measure are the same as with separate qrels (tests/test_properties.py).
    A group's judged-only rows come after all the run's rows: auto runs such a plan as one
    streaming plan (`Evaluation.joined_qrels`); the partitioned engine reads it too, and the
    chunked engine refuses it when the groups are split (`NotGroupedError`).
    """
    query, doc, label, by = columns.query, columns.doc, columns.label, list(columns.by)
    judged = io.scan(qrels, id_columns=(query, doc, *by), numeric_columns=(label,), what="qrels")
    schema = judged.collect_schema()
    _check_qrels(schema, query, doc, label)
    # by columns found in the qrels describe the query (a segment); the others are systems
    described = [b for b in by if b in schema]
    systems = [b for b in by if b not in schema]
    judged = judged.select(*described, query, doc, label)
    run = run.drop(label, strict=False)
    run, judged = _align_ids(run, judged, [*described, query, doc])
    if columns.subtopic is not None:  # a document's highest label over its subtopics
        judged = judged.group_by([*described, query, doc]).agg(pl.col(label).max())
    elif duplicates != "error":
        judged = _dedupe(judged, [*described, query, doc], label, duplicates)
    if systems:
        judged = run.select(systems).unique().join(judged, how="cross")
    # the run's rows keep their order (ties="input" reads it), the judged-only rows come after
    return run.join(
        judged, on=[*by, query, doc], how="full", coalesce=True, maintain_order="left_right"
    )


def _check_qrels(schema: pl.Schema, query: str, doc: str, label: str) -> None:
    """The columns every qrels table needs: query and doc ids, a numeric label."""
    validate.require_columns(schema, {"query": query, "doc": doc, "label": label}, "qrels")
    validate.require_numeric(schema, label, "label", "qrels")
    validate.require_key(schema, query, "query", "qrels")
    validate.require_key(schema, doc, "doc", "qrels")


def _subtopic_qrels(
    qrels_lf: pl.LazyFrame,
    subtopic: str,
    roles: dict[str, str],
    by_cols: list[str],
    keys: list[str],
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Qrels with a subtopic column -> (one label per (query, doc): its highest over the
    subtopics, for the other measures; the (qkeys..., query, doc, subtopic, label) rows of the
    diversity stage, internal names).

    A document relevant to any subtopic is relevant to the query, as ndeval's own MAP reads
    these qrels (ndeval.c, nrel); graded labels keep their highest grade for nDCG.
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
    # group_by does not keep the qrels' order, which no consumer reads
    per_doc = qrels_lf.group_by([*(b for _, b in present), query, doc]).agg(pl.col(label).max())
    return per_doc, per_subtopic


def _rules(has_doc: bool, ranking: Ranking, **kinds: bool) -> list[validate.Rule]:
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


def _sign_labels(lf: pl.LazyFrame, keep: pl.Expr) -> pl.LazyFrame:
    """VLFeat's labels: > 0 positive (1), < 0 negative (-1); 0 and no label are ignored."""
    label = pl.col(LABEL)
    informative = (label.is_not_null() & (label != 0)) | keep
    return lf.filter(informative).with_columns(label.sign())


def _dedupe(lf: pl.LazyFrame, subset: list[str], value: str, how: str) -> pl.LazyFrame:
    """Keep one row per `subset`: the first in input order, or the one with the max `value`."""
    if how == "max":
        lf = lf.sort(value, descending=True, nulls_last=True, maintain_order=True)
    return lf.unique(subset=subset, keep="first", maintain_order=True)


def _aggregate(
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
        rows = _sign_labels(rows, keep=pl.col(PAD))
    columns = rows.collect_schema()
    has_doc = DOC in columns
    group = [*keys, QUERY]
    by, descending = _ranking_order(group, ties, has_doc, ranking)
    ranked = rows.with_columns(pl.col(SCORE).is_not_null().alias(RETRIEVED))
    if not presorted:
        ranked = ranked.sort(by, descending=descending, nulls_last=True)
    levels = {s.level(ranking.default_level) for s in specs} | {ranking.default_level}
    flags, ranking = ranking.flagged(levels)
    ranked = ranked.with_row_index(POSITION).with_columns(flags)
    checks = validate.check_exprs(rules, has_doc=has_doc, has_pad=pads)
    status = _status_exprs(ranking, judged, pads=pads)
    exprs = [*[build_measure(s, ranking) for s in specs], *strings, *status, *checks]
    if presorted and runs:
        # Polars groups several keys by hashing even when they are sorted; a run number is one
        # key, sorted by construction (given as a column, or numbered here)
        run = pl.col(RUN) if RUN in columns else run_number(group)
        numbered = ranked.with_columns(run.set_sorted().alias(RUN))
        keys_of_run = [pl.col(c).first() for c in group]
        return numbered.group_by(RUN).agg(*keys_of_run, *exprs).drop(RUN)
    return ranked.group_by(group).agg(*exprs)


def _ranking_order(
    group: list[str], ties: str, has_doc: bool, ranking: Ranking
) -> tuple[list[pl.Expr], list[bool]]:
    """The sort of the ranked frame: group keys ascending, then the tie rule's keys."""
    order, descending = sort_keys(ties, has_doc=has_doc, trec_version=ranking.trec_version)
    return [*map(pl.col, group), *order], [False] * len(group) + descending


def _status_exprs(ranking: Ranking, judged: pl.Expr, *, pads: bool) -> list[pl.Expr]:
    """Per-query audit columns; none depends on the ranking order. `pads`: see `_aggregate`."""
    return [
        judged.alias(_JUDGED),
        count(pl.col(RETRIEVED)).cast(pl.Int64).alias(_N_RET),  # before -M/-J: the query set
        (count(~pl.col(PAD)) if pads else pl.len()).cast(pl.Int64).alias(_N_ROWS),
        count(pl.col(RETRIEVED) & pl.col(LABEL).is_null()).cast(pl.Int64).alias(_N_UNJUDGED),
        ranking.num_rel(ranking.default_level).cast(pl.Int64).alias(_R),
    ]


# Rows per query, in multiples of K, from which ranking only the top K pays (2M rows, 100 per
# query, P@K nDCG@K RR@K; top-K plan / full plan: K = 5-10 about 0.85-0.95, K = 20-30 about
# 1.0-1.1, K = 100 about 1.9).
TOP_K_SHARE = 10


def _top_cutoff(specs: list[Spec], ranking: Ranking, relstrings: Sequence[int] = ()) -> int | None:
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


def _aggregate_top(
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
    """`_aggregate` for measures that read only each query's top k ranked rows.

    Per-query totals (R, N, ideal DCG), audit columns and data checks do not depend on the
    order: one aggregation over all rows gives them. Only the rows whose score reaches the
    query's k-th best score (ties included) can be in its top k: those few are sorted and
    the measures read them with `top`, a `Ranking` that takes the totals from columns (as
    with separate qrels). A query with nothing retrieved keeps its rows. Same values as the
    full sort (tests/test_properties.py).
    """
    has_doc = DOC in rows.collect_schema()
    group = [*keys, QUERY]
    by, descending = _ranking_order(group, ties, has_doc, ranking)
    rows = rows.with_columns(pl.col(SCORE).is_not_null().alias(RETRIEVED))
    totals = _judgment_totals(top, count(pl.col(LABEL).is_not_null()))
    stats = rows.group_by(group).agg(
        *totals,
        *_status_exprs(ranking, judged, pads=False),  # without qrels only
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
    names = [s.name for s in specs] + [e.meta.output_name() for e in strings]
    audit = [c for c in stats.collect_schema().names() if c not in (*group, *total_names)]
    return stats.join(values, on=group, how="left", nulls_equal=True).select(*group, *names, *audit)


def _judgment_totals(columns: Ranking, judged_count: pl.Expr) -> list[pl.Expr]:
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


def _with_qrels(
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
) -> pl.LazyFrame:
    query, doc, label = roles["query"], roles["doc"], roles["label"]
    q_schema = qrels_lf.collect_schema()
    _check_qrels(q_schema, query, doc, label)
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
    rows, judgments = _align_ids(rows, judgments, [*qkeys, QUERY, DOC])
    if duplicates != "error":
        judgments = _dedupe(judgments, [*qkeys, QUERY, DOC], LABEL, duplicates)
    if ranking.convention == "vlfeat":
        judgments = _sign_labels(judgments, keep=pl.lit(False))
    # Shared subplans are cached: the Python validation steps inside them are opaque to
    # Polars' common-subplan elimination, so each consumer would otherwise re-read the input.
    judgments = judgments.cache()

    # Per-query judgment statistics, with the same expressions a joined table uses on its rows.
    q_rules = validate.row_checks(
        has_doc=True,
        has_score=False,
        label_may_be_null=False,
        has_pad=False,
        float_label=q_schema[label].is_float(),
    )
    stats = judgments.group_by([*qkeys, QUERY]).agg(
        *_judgment_totals(ranking, pl.len()),
        *validate.check_exprs(q_rules, has_doc=True, has_pad=False),
    )
    q_names = {**{k: user[k] for k in qkeys}, QUERY: query}
    stats_schema = {
        n: t for n, t in stats.collect_schema().items() if not n.startswith(validate.CHECK_PREFIX)
    }
    stats = stats.map_batches(
        validate.checker(q_rules, q_names, roles, "qrels", judgments), schema=stats_schema
    ).cache()

    # Presorted rows must keep their order through the joins, which Polars does not promise by
    # default. Keeping it in the join (maintain_order) doubles the join's cost; numbering the
    # rows and sorting back by number is cheaper.
    if presorted:
        rows = rows.with_row_index(_ORDER)
    joined = rows.join(judgments, on=[*qkeys, QUERY, DOC], how="left").join(
        stats, on=[*qkeys, QUERY], how="left"
    )
    if presorted:
        joined = joined.sort(_ORDER).drop(_ORDER)
    judged = pl.col(JUDGED_COUNT).first().is_not_null()
    answered = _aggregate(  # the run's rows: no placeholder among them
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
    unanswered = _aggregate(pads, keys, specs, ranking, ties, rules, judged, strings=strings)
    return pl.concat([answered, unanswered], how="vertical")


def _align_ids(
    left: pl.LazyFrame, right: pl.LazyFrame, cols: list[str]
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Cast join keys to String on both sides where their dtypes differ (e.g. CSV vs Parquet)."""
    ls, rs = left.collect_schema(), right.collect_schema()
    differ = [c for c in cols if ls[c] != rs[c]]
    if differ:
        left = left.with_columns(pl.col(differ).cast(pl.String))
        right = right.with_columns(pl.col(differ).cast(pl.String))
    return left, right
