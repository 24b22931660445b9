"""Build the evaluation plan: rows -> ranked rows -> one group_by/agg -> per-query table.

Two input shapes (docs/semantics.md):

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

from .. import inputs, io, validate
from ..conventions import get_convention
from ..errors import InputError, MeasureError, MissingColumnError
from ..measures import Spec, diversity, ideal_keys, parse_all, reads_judged_rows
from ..options import Columns, Hints, Options, Semantics
from ..ranking import (
    DOC,
    EXPECTED,
    LABEL,
    PAD,
    QUERY,
    RELSTRING,
    ROW,
    RUN,
    SCORE,
    THRESHOLD,
    TOTAL_NEG,
    TOTAL_POS,
    Ranking,
    ideal_column,
    in_order,
    packed_sort_keys,
    relstring_column,
    resolve_ties,
    sort_keys,
)
from ..summary import to_long
from . import aggregate as agg
from . import qrels as stage
from .aggregate import EVALUATED, JUDGED, N_RET, N_ROWS, N_UNJUDGED, R_TOTAL


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
    # (role, path) of the inputs given as paths ("input", "qrels"): a data rule's message names
    # the file (`validate.named`), wherever the plan, or the plan of a piece of it, runs
    sources: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Plan:
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
    # the source is the join of a run with its qrels (`joined_table`), a plan rather than a
    # file: an engine that reads it piece by piece would run the join again for each look
    joined_qrels: bool = False
    # the files the plan reads (input, qrels): a reader's error mid-run names one of them and
    # its line (`io.explain`)
    paths: tuple[str | Path, ...] = ()
    # counts the source's rows, or bounds them from above, without reading it (a TREC run's
    # lines, `io.count_lines`): an engine that sizes its work first needs no pass to count
    count_rows: Callable[[], int] | None = None
    # with queries="retrieved", the status holds no placeholder rows (they would never be
    # evaluated): the judged queries' keys (internal names, ids as strings), from which the
    # audit counts the judged queries each system did not answer
    judged: pl.LazyFrame | None = None
    # `rank_keys` without the run numbers (the key is the score's rank alone), for rows whose
    # groups are not together yet: the partitioned engine groups and ranks them in one sort
    rank_scores: pl.LazyFrame | None = None

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
        extra = [(pl.col(N_RET) > 0).alias(answered)] if answered else []
        strings = self.string_names if form == "wide" else []
        out = (
            self.status.filter(pl.col(EVALUATED))
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
        ev, ret = pl.col(EVALUATED), pl.col(N_RET) > 0
        counts = [
            ev.sum().alias("queries_evaluated"),
            (ev & (pl.col(R_TOTAL) == 0)).sum().alias("queries_without_relevant"),
            (pl.col(JUDGED) & ~ret).sum().alias("queries_judged_not_retrieved"),
            (~pl.col(JUDGED) & ret).sum().alias("queries_retrieved_not_judged"),
            pl.col(N_UNJUDGED).filter(ev).sum().alias("rows_retrieved_unjudged"),
            pl.col(N_ROWS).filter(~ev).sum().alias("rows_dropped"),
        ]
        counts = [c.cast(pl.Int64) for c in counts]
        status = self.status if self.judged is None else self._with_unanswered()
        if not self.keys:
            return status.select(counts)
        return (
            status.group_by(self.keys)
            .agg(counts)
            .sort(self.keys)
            .rename({k: self.names[k] for k in self.keys})
        )

    def _with_unanswered(self) -> pl.LazyFrame:
        """The status with one row per judged query a system did not answer (`judged`), as the
        placeholders would have made it: judged, nothing retrieved, not evaluated."""
        assert self.judged is not None
        qkeys = [k for k in self.judged.collect_schema().names() if k != QUERY]
        systems = [k for k in self.keys if k not in qkeys]
        answered = self.status.select(pl.col(*self.keys, QUERY).cast(pl.String))
        wanted = self.judged
        if systems:
            wanted = answered.select(systems).unique().join(wanted, how="cross")
        missing = wanted.join(answered, on=[*self.keys, QUERY], how="anti", nulls_equal=True)
        schema = self.status.collect_schema()
        filler = {
            JUDGED: pl.lit(True),
            N_RET: pl.lit(0),
            N_ROWS: pl.lit(0),
            EVALUATED: pl.lit(False),
        }
        rows = missing.select(
            *[
                filler[c].cast(t).alias(c) if c in filler else pl.lit(None, t).alias(c)
                for c, t in schema.items()
                if c not in (*self.keys, QUERY)
            ],
            *[pl.col(c) for c in (*self.keys, QUERY)],
        )
        status = self.status.with_columns(pl.col(*self.keys, QUERY).cast(pl.String))
        return pl.concat([status, rows], how="diagonal")


def build_plan(
    data: io.Source,
    measures: str | Iterable[str],
    *,
    qrels: io.Source | None = None,
    options: Options | None = None,
    rows_per_query: float | None = None,
    relstrings: Sequence[int] = (),
) -> Plan:
    """The evaluation plan of `data` (any dataframe, a path, or TREC run files), to run once
    with an engine (`preval.collect`) and read several ways: per-query rows, the audit,
    summaries.

    `options.input_format` says how paths are read: ``"table"`` (Parquet, CSV), ``"trec"``
    (run files, one ``system`` each, and TREC qrels), or ``"auto"``: each of `data` and
    `qrels` by its suffix (`io.is_trec`). Read as TREC runs, `data`
    is evaluated per ``system`` when no `by` is given.

    `relstrings`: cutoffs k of trec_eval's ``relstring.k``; each adds a String column
    ``relstring@k`` to the wide per-query table: the codes of the query's first k ranked
    documents, one character each (a label 0-9 as its digit, ``>`` above 9, ``.`` a negative
    label, ``-`` no label), after `depth` and `judged_only`. Not a measure: summaries and the
    long form leave it out.

    `rows_per_query` estimates the rows of each (by..., query) group: when every measure reads
    only the top K ranked rows and the groups average at least `TOP_K_SHARE` × K rows, the plan
    ranks only the rows that can reach each query's top K (`aggregate_top`; the chunked engine
    passes each chunk's figure). Without it, or below that share, every row is ranked: with K
    near the rows of a query the top-K plan costs up to twice as much. Results are the same.
    """
    options = Options() if options is None else options
    columns, fmt = options.columns, options.input_format
    given, given_qrels = data, qrels  # (the files, for messages: TREC files are read below)
    run_files = None
    if io.is_trec(data, fmt, "run"):
        run_files = data
        data = io.scan_run(data)
        if not columns.by:
            columns = dataclasses.replace(columns, by=("system",))
    else:  # any dataframe becomes a Polars one here, once: a stream can be read only once
        data = io.normalise(data)
    if qrels is not None:
        if io.is_trec(qrels, fmt, "qrels"):
            qrels = io.scan_qrels(qrels, subtopic=columns.subtopic)
        else:
            qrels = io.normalise(qrels, "qrels")
    if not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in relstrings):
        msg = f"relstrings must be whole numbers >= 0, got {list(relstrings)!r}"
        raise MeasureError(msg)
    # a data rule names the file wherever the plan runs (one run file: the input)
    single = given if not isinstance(given, (list, tuple)) or len(given) != 1 else given[0]
    sources = validate.path_sources({"input": single, "qrels": given_qrels})
    recipe = Recipe(
        tuple(s.name for s in parse_all(measures)), columns, options.semantics, qrels,
        tuple(dict.fromkeys(relstrings)), sources,
    )  # fmt: skip
    # the per-query table's columns, and the summary's NumQ
    outputs = {*recipe.measures, *(f"{RELSTRING}{k}" for k in recipe.relstrings), "NumQ"}
    for role, name in [*(("by", b) for b in columns.by), ("query", columns.query)]:
        if name in outputs:  # else Polars' DuplicateError, with its plan, at collect time
            msg = (
                f"{role} column {name!r} has the name of an output column (a measure of the "
                "per-query table, or the summary's NumQ): rename it in the input"
            )
            raise InputError(msg)
    plan = build(data, recipe, Hints(rows_per_query=rows_per_query))
    if run_files is not None and not plan.joined_qrels:  # (the joined table has more rows)
        plan = dataclasses.replace(plan, count_rows=partial(io.count_lines, run_files))
    # a reader's error found mid-run names the file
    runs = given if isinstance(given, (list, tuple)) else [given]
    files = _paths(*runs, given_qrels)
    if files and not plan.paths:
        plan = dataclasses.replace(plan, paths=files)
    return plan


def _labels_twice(data: io.Source, label: str) -> None:
    """Refuse a run that holds a label column beside separate qrels: the qrels' labels would be
    used and the run's dropped, silently, and a user who meant the run's (a joined table given
    qrels too) or the new qrels (an old label column left in the run) could not tell which."""
    what = f"input {data}" if isinstance(data, (str, Path)) else "input"
    msg = (
        f"{what}: column {label!r} holds labels, and the qrels give them too (rule: with qrels, "
        "the labels come from the qrels alone); drop the column from the input to use the "
        "qrels' labels, or leave out the qrels to use the input's own"
    )
    raise InputError(msg)


def _qrels_only(exc: MissingColumnError, data, qrels, by: list[str]) -> None:
    """Raise a clearer error when a missing `by` column is a column of the qrels: a segment
    of the queries that the run lacks (a `by` column is read from the run, and joined on
    when the qrels have it too)."""
    if qrels is None:
        return
    try:  # (the error path only: reading two schemas again costs nothing that matters)
        have = io.scan(data).collect_schema().names()
        judged = io.scan(qrels).collect_schema().names()
    except Exception:  # the original error stands
        return
    theirs = [b for b in by if b not in have and b in judged]
    if theirs:
        what = f"input {data}" if isinstance(data, (str, Path)) else "input"
        msg = (
            f"{what}: by column {theirs[0]!r} is a column of the qrels only: a by column is "
            "read from the run (and joined on when the qrels have it too); join it onto the "
            "run first, or join the per-query table with it and summarize(..., by=...)"
        )
        raise MissingColumnError(msg) from exc


def build(data: io.Source, recipe: Recipe, hints: Hints | None = None) -> Plan:
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
    ties = sem.ties  # resolved below, from the convention and the doc column
    placeholders, rows_per_query = hints.placeholders, hints.rows_per_query
    judged_keys = None  # (`Plan.judged`)
    if sem.queries == "retrieved" and recipe.qrels is not None:
        placeholders = False  # a judged query without a result is not evaluated: no row
    _presorted, _contiguous, _runs = hints.presorted, hints.contiguous, hints.runs
    conv = get_convention(sem.convention)
    counts = {TOTAL_POS: sem.num_positives, TOTAL_NEG: sem.num_negatives}
    count_columns = {k: v for k, v in counts.items() if isinstance(v, str)}
    keys = [f"_by{i}" for i in range(len(by_cols))]
    names = {**dict(zip(keys, by_cols, strict=True)), QUERY: query}
    roles = recipe.columns.roles

    try:
        run_lf, run_schema = inputs.read(
            data, query=query, by=by_cols, doc=doc, score=score, label=label,
            needs_label=qrels is None, counts=list(count_columns.values()),
        )  # fmt: skip
    except MissingColumnError as exc:
        _qrels_only(exc, data, qrels, by_cols)
        raise
    has_doc = doc in run_schema
    if qrels is not None and label in run_schema:
        _labels_twice(data, label)
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
        table = stage.joined_table(run_lf, qrels, recipe.columns, sem.duplicates, recipe.sources)
        columns = dataclasses.replace(recipe.columns, subtopic=None)  # labels per doc now
        plan = build(table, dataclasses.replace(recipe, qrels=None, columns=columns), hints)
        return dataclasses.replace(plan, joined_qrels=True, paths=_paths(data, qrels))
    ties = resolve_ties(ties, conv.ties, has_doc, doc)

    levels = sorted({s.level(sem.relevance_level) for s in specs} | {sem.relevance_level})
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
    if not (conv.inf_retrieved or sem.include_inf):  # VLFeat: -inf scores are not retrieved
        rows = rows.with_columns(
            pl.when(pl.col(SCORE) != float("-inf")).then(pl.col(SCORE)).alias(SCORE)
        )
    if sem.duplicates != "error" and has_doc:
        rows = agg.dedupe(rows, [*keys, QUERY, DOC], SCORE, sem.duplicates)
    if sem.unjudged_label is not None and len(specs) < len(all_specs):
        msg = (
            f"unjudged_label={sem.unjudged_label:g} does not apply to the diversity measures "
            f"({next(s.name for s in all_specs if s.definition.diversity)}): an unjudged "
            "document has no subtopic to be relevant to; evaluate them apart"
        )
        raise MeasureError(msg)
    if sem.unjudged_label is not None and qrels is None:
        judged_query = pl.col(LABEL).is_not_null().any().over([*keys, QUERY])
        rows = rows.with_columns(stage.relabel(sem.unjudged_label, judged_query))

    ranked = partial(Ranking.of, semantics=sem, ties=ties, counted=tuple(count_columns))
    k = top_k = None  # ranks only each query's top K rows when set
    float_score = run_schema[score].is_float()
    # read only labels, the score's order, depth and judged_only: the same under any Ranking
    strings = [ranked("rows").relstring(n).alias(relstring_column(n)) for n in recipe.relstrings]
    if qrels is None:
        ranking = ranked("rows")
        # no placeholder rows without qrels: PAD is false throughout
        floats = {"float_score": float_score, "float_label": run_schema[label].is_float()}
        rules = agg.rules(has_doc, ranking, has_pad=False, **floats)
        judged = pl.col(LABEL).is_not_null().any()
        k = top_k = (
            None
            if _presorted or count_columns
            else agg.top_cutoff(specs, ranking, recipe.relstrings)
        )
        if k is not None and (rows_per_query is None or rows_per_query < agg.TOP_K_SHARE * k):
            k = None
        if k is None:
            status = agg.aggregate(
                rows, keys, specs, ranking, ties, rules, judged, _presorted, runs=_contiguous,
                pads=False, strings=strings,
            )  # fmt: skip
        else:
            top = ranked("columns", levels=level_cols, ideal_cutoffs=ideal_cols)
            status = agg.aggregate_top(
                rows, keys, specs, ranking, top, ties, rules, judged, k, strings=strings
            )
    else:
        ranking = ranked("columns", levels=level_cols, ideal_cutoffs=ideal_cols)
        qrels_lf = io.scan(
            qrels, id_columns=(query, doc, *by_cols), numeric_columns=(label,), what="qrels"
        )
        if subtopic is None:  # (here, where a pandas index can still be named)
            stage.check_qrels(qrels_lf.collect_schema(), query, doc, label,
                              unread=io.pandas_unread(qrels), source=qrels)  # fmt: skip
        if subtopic is not None:
            qrels_lf, per_subtopic = stage.subtopic_qrels(
                qrels_lf, subtopic, roles, by_cols, keys, sem.duplicates, recipe.sources
            )
        # labels come from the qrels (checked there); unjudged rows get null, never NaN
        rules = agg.rules(
            has_doc, ranking, has_pad=True, float_score=float_score, float_label=False
        )
        if sem.queries == "retrieved":
            q_schema = qrels_lf.collect_schema()
            judged_keys = qrels_lf.select(
                *[pl.col(b).cast(pl.String).alias(k)
                  for k, b in zip(keys, by_cols, strict=True) if b in q_schema],
                pl.col(query).cast(pl.String).alias(QUERY),
            ).unique()  # fmt: skip
        status = stage.with_qrels(
            rows,
            qrels_lf,
            keys,
            by_cols,
            roles,
            specs,
            ranking,
            ties,
            sem.duplicates,
            rules,
            placeholders,
            _presorted,
            _contiguous,
            strings,
            unjudged=sem.unjudged_label,
            sources=recipe.sources,
        )

    check = validate.checker(rules, names, roles, "input", rows, recipe.sources)
    schema = status.collect_schema()
    kept = {n: t for n, t in schema.items() if not n.startswith(validate.CHECK_PREFIX)}
    queries_ok = pl.col(JUDGED) & (pl.lit(sem.queries == "judged") | (pl.col(N_RET) > 0))
    status = status.map_batches(check, schema=kept).with_columns(queries_ok.alias(EVALUATED))
    if len(specs) < len(all_specs):
        div_specs = [s for s in all_specs if s.definition.diversity]
        if ties in (EXPECTED, THRESHOLD) or conv.name != "trec":
            # ndeval walks one document per rank: a tie group read as one step (threshold) or
            # averaged over its orders (expected) has no meaning there
            msg = (
                f"{div_specs[0].name}: diversity measures follow ndeval's ranking: "
                f"ties={ties!r} and convention={conv.name!r} are not defined for them"
            )
            raise MeasureError(msg)
        qkeys = [k for k in keys if k in per_subtopic.collect_schema()]
        div_rows, per_subtopic = stage.align_ids(rows, per_subtopic, [*qkeys, QUERY, DOC])
        values = diversity.table(
            div_rows, per_subtopic, keys, qkeys, div_specs, default_level=sem.relevance_level,
            ties=ties, trec_version=sem.trec_version, depth=sem.depth, judged_only=sem.judged_only,
        )  # fmt: skip
        status = diversity.attach(status, values, keys, [s.name for s in div_specs])
    source = run_lf.select(list(dict.fromkeys(source_columns)))
    in_rank_order = rank_keys = rank_scores = None
    rank_descending: tuple[bool, ...] = ()
    # the order of the input's own rows; not with labels from qrels or rewritten (VLFeat), nor
    # after a dedupe that reorders rows
    if ties in ("trec", "input") and sem.duplicates == "error" and conv.name != "vlfeat":
        order, descending = sort_keys(ties, has_doc=has_doc, trec_version=sem.trec_version)
        in_rank_order = rows.select(in_order([*keys, QUERY], order, descending))
        packed = packed_sort_keys(
            [*keys, QUERY], ties, has_doc=has_doc, trec_version=sem.trec_version
        )
        if packed is not None and k is None:  # (a top-K plan sorts few rows: it keeps its own)
            (key, *tie_keys), (_, *rank_descending) = packed
            ties_ = [tie.alias(f"_tie{i}") for i, tie in enumerate(tie_keys)]
            rank_keys = rows.select(key.alias("_key"), *ties_)
            (score_key, *_), _ = packed_sort_keys(
                [], ties, has_doc=has_doc, trec_version=sem.trec_version
            )
            rank_scores = rows.select(score_key.alias("_key"), *ties_)
    return Plan(
        status, keys, names, all_specs, source, [*by_cols, query], recipe, None, in_rank_order,
        rank_keys, tuple(rank_descending), io.reads_by_range(data), top_k,
        paths=_paths(data, qrels), judged=judged_keys,
        rank_scores=rank_scores,
    )  # fmt: skip


def _paths(*sources: io.Source | None) -> tuple[str | Path, ...]:
    return tuple(s for s in sources if isinstance(s, (str, Path)))
