"""The public evaluation functions: `evaluate`, `audit` and `plan` (run with `preval.collect`).

Each takes the keyword options `preval.options.OPTIONS` lists for it (`accepts` turns them into
one validated `Options`) and builds the same lazy plan (`preval.planner`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import polars as pl

from . import io
from .options import Options, accepts
from .planner import Plan, build_plan


@accepts("evaluate")
def evaluate(
    data: io.Source,
    measures: str | Iterable[str],
    *,
    qrels: io.Source | None = None,
    form: Literal["wide", "long"] = "wide",
    options: Options,
) -> pl.LazyFrame:
    """Evaluate ranked results per query; return a LazyFrame, one row per (by..., query).

    Parameters
    ----------
    data
        A Polars LazyFrame or DataFrame, any other dataframe (pandas, pyarrow, DuckDB, any
        object with ``__arrow_c_stream__``), a path (.parquet, .csv, .tsv), or TREC run
        files (a path or a list; see `input_format`). Without `qrels`: one joined table with
        `query`, `score`, `label` (and optionally `doc`) columns, where a null score marks a
        document that was not retrieved and a null label an unjudged one. With `qrels`: a run
        with `query`, `doc`, `score` columns.
    measures
        Measure names, e.g. ``["AP", "P@10", "nDCG@10", "P(rel=2)@10"]``; trec_eval names
        (``map``, ``P_10``, ``ndcg_cut_10`` ...) are aliases. See `preval measures`.
    qrels
        Judgments with `query`, `doc`, `label` columns (a table or a TREC qrels file).
        Unjudged retrieved documents are non-relevant; judged documents the run did not
        return count toward R. A `by` column that also exists in `qrels` is a property of
        the query (joined on); the others are systems, each evaluated against all judgments.
    form
        ``"wide"``: one Float64 column per measure, named canonically, Int64 for the counts
        (``NumQ``, ``NumRet``, ``NumRel``, ``NumRelRet``, ``NumNonrelJudgedRet``);
        ``"long"``: rows of (by..., query, measure, value), ``value`` Float64 for every
        measure, counts included (one column holds rates and counts alike).

    Returns
    -------
    polars.LazyFrame
        Sorted by (by..., query). Bad data raises a `PrevalError` when it is collected.
    """
    return build_plan(data, measures, qrels=qrels, options=options).per_query(form)


@accepts("audit")
def audit(data: io.Source, *, qrels: io.Source | None = None, options: Options) -> pl.LazyFrame:
    """What an evaluation with the same arguments counts and drops, one row per by-group.

    Columns: ``queries_evaluated``; ``queries_without_relevant`` (evaluated, R = 0);
    ``queries_judged_not_retrieved`` (scored 0 with ``queries="judged"``, dropped otherwise);
    ``queries_retrieved_not_judged`` (never evaluated); ``rows_retrieved_unjudged`` (counted
    as non-relevant); ``rows_dropped`` (input rows of queries that were not evaluated).
    """
    return build_plan(data, ["NumQ"], qrels=qrels, options=options).audit()


@accepts("plan")
def plan(
    data: io.Source,
    measures: str | Iterable[str],
    *,
    qrels: io.Source | None = None,
    relstrings: Sequence[int] = (),
    rows_per_query: float | None = None,
    options: Options,
) -> Plan:
    """The evaluation plan of `evaluate`'s arguments, to run once with `preval.collect` and
    read several ways (per-query rows, the audit, summaries) from its `Result`.

    `relstrings`: cutoffs k of trec_eval's ``relstring.k``; each adds a String column
    ``relstring@k`` to the wide per-query table (the codes of the query's first k ranked
    documents; see `preval trec -m relstring`). `rows_per_query`: an estimate of each
    query's rows, from which the plan decides whether ranking only each query's top K rows
    pays (the chunked engine passes each chunk's figure; the numbers are the same either way).
    """
    return build_plan(data, measures, qrels=qrels, options=options, relstrings=relstrings,
                      rows_per_query=rows_per_query)  # fmt: skip
