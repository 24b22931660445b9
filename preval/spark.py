"""Evaluate a Spark DataFrame where it lives, with the local engine's unchanged Polars kernel.

The rows are split by a hash bucket of the query, ``pmod(xxhash64(query), B)``: every call of
the kernel gets whole queries (all their rows, of every system) as one Arrow table and runs
`preval.evaluate` on it, so the numbers are the local engine's by construction. Grouping by
the query itself would cost one Python call per query; a bucket holds many.

With separate qrels, run and qrels are bucketed by the same hash and cogrouped, so each call
also gets the judgments of its queries and `preval.evaluate` applies its judged / unjudged /
placeholder rules to them. One rule needs the whole run: with a system column (a `by` column
that the qrels lack), a judged query that a system did not answer scores 0 for every system
seen *anywhere in the run*. A bucket cannot see systems that have no rows in it, so the
driver collects the distinct systems (a small table) and the kernel adds, for each system
absent from its bucket, one row of a query id that no judgment uses: the local engine then
sees the system and adds its placeholders, and drops the made-up query as unjudged.

Only the DataFrame API is used (no RDD, no SparkContext), so this also runs on Spark Connect.
The workers import preval and Polars: install ``preval[spark]`` on the cluster, ship it with
``spark.addArtifacts(..., pyfile=True)`` on Connect, or pack a virtual environment into
``spark.archives`` (see the README's Spark section).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from . import custom, extras
from .api import evaluate as local_evaluate
from .errors import InputError, MissingColumnError, PrevalError
from .measures import GMAP_FLOOR, measure_columns
from .options import Options, accepts
from .spark_arrow import (
    _BUCKET,
    _arrow_schema,
    _bucket,
    _collect,
    _counted_in_bucket,
    _empty,
    _frame,
    _quote,
    _spark_schema,
    default_buckets,
)
from .spark_fusion import fuse as fuse  # preval.spark.fuse: fusion where the runs live
from .summary import default_keys

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@accepts("spark")
def evaluate(
    sdf: DataFrame,
    measures: str | Iterable[str],
    *,
    qrels: DataFrame | None = None,
    num_buckets: int | None = None,
    options: Options,
) -> DataFrame:
    """Evaluate a Spark DataFrame per query, inside Spark; return a lazy Spark DataFrame.

    The result has the columns of `preval.evaluate` on the same rows (by..., query, one
    column per measure, canonical names: a long for a count, else a double) and the same
    values: each bucket of whole queries is
    evaluated by `preval.evaluate` itself on a worker. Nothing is computed until the result
    is collected or written, except two small jobs on the driver when needed: the row count
    (for the default `num_buckets`) and, with `qrels` and a system column, the distinct
    systems.

    Parameters
    ----------
    sdf
        A Spark DataFrame: one joined table (query, [doc], score, label; a null score is an
        unretrieved document, a null label an unjudged one) or, with `qrels`, a run (query,
        doc, score).
    measures
        Measure names, as for `preval.evaluate`; Spark MLlib's `RankingMetrics` spellings
        are among them (``precisionAt(10)``, ``recallAt(10)``, ``ndcgAt(10)``,
        ``meanAveragePrecision``, ``meanAveragePrecisionAt(10)``, and
        `BinaryClassificationMetrics`' ``areaUnderPR``, ``areaUnderROC`` with
        ``ties="threshold"``): their translation is in docs/measures.md.
    qrels
        A Spark DataFrame of judgments (query, doc, label), joined inside Spark. A `by` column
        that the qrels also have is a property of the query; the others are systems, each
        evaluated against every judged query (see `queries`).
    options
        As for `preval.evaluate` (listed below). ``ties="input"`` (the default without a doc
        column) means the order in which a bucket's rows reach the worker, which Spark does
        not promise: give a doc column (``ties="trec"``) or a tie-free score for reproducible
        results.
    num_buckets
        Number of hash buckets of the query, one Python call each. Default: about one per
        million rows (counted with one Spark job), and at least the session's parallelism
        (``spark.default.parallelism``, else ``spark.sql.shuffle.partitions``) as long as
        buckets keep 100k rows.

    Returns
    -------
    pyspark.sql.DataFrame
        One row per evaluated (by..., query), unordered (sort it, or summarize it with
        `summarize`). Bad data (NaN scores, duplicates ...) fails the Spark job with the
        `PrevalError` message of the local engine (with several buckets, its count of rows
        is the failing bucket's, and it says so); bad columns or measures raise here.
    """
    F = extras.require("pyspark.sql.functions", "preval.spark")  # (one line without it)

    columns, semantics = options.columns, options.semantics
    query, doc, score, label = columns.query, columns.doc, columns.score, columns.label
    by_cols = list(columns.by)
    measures = [measures] if isinstance(measures, str) else list(measures)
    counts = [c for c in (semantics.num_positives, semantics.num_negatives) if isinstance(c, str)]
    # (a label column beside qrels is kept: the probe below refuses it, as the local engine)
    run_cols = _present(sdf, [*by_cols, query, doc, score, *counts, label])
    # Inside Spark the columns go by plain internal names (pyspark's cogroup looks columns up
    # by name, and a dot in a name reads as a struct field); the kernel gives the user's back.
    given = (sdf, qrels)
    qrels_cols = [] if qrels is None else _present(qrels, [*by_cols, query, doc, label])
    names = {f"_c{i}": c for i, c in enumerate(dict.fromkeys([*run_cols, *qrels_cols]))}
    internal = {c: n for n, c in names.items()}
    sdf = sdf.select(*[F.col(_quote(c)).alias(internal[c]) for c in run_cols])
    if qrels is not None:
        qrels = qrels.select(*[F.col(_quote(c)).alias(internal[c]) for c in qrels_cols])

    # The kernel on empty frames of the inputs' schemas, on the driver: bad columns, dtypes,
    # measures and options raise here, and its output schema is the Spark result's.
    empty_run = _empty(sdf).rename(names, strict=False)
    empty_qrels = None if qrels is None else _empty(qrels).rename(names, strict=False)
    try:
        probe = local_evaluate(empty_run, measures, qrels=empty_qrels, options=options).collect()
    except MissingColumnError:
        _probe_every_column(*given, measures, options)  # (raises with the inputs' columns)
        raise
    out_schema = _spark_schema(probe.schema)
    # measures defined in this session (`preval.define_measure`) go with the job
    shipped = custom.defined(measures)
    arrow_schema = _arrow_schema(out_schema)

    if num_buckets is None:
        num_buckets = default_buckets(sdf)
    elif isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets < 1:
        msg = f"num_buckets must be a whole number >= 1, got {num_buckets!r}"
        raise InputError(msg)

    if qrels is None:
        kernel = _Kernel(measures, options, arrow_schema, names, shipped=shipped,
                         num_buckets=num_buckets)  # fmt: skip

        def evaluate_bucket(run: pa.Table) -> pa.Table:
            return kernel(run)

        bucket = _bucket(F.col(internal[query]), num_buckets)
        return sdf.groupBy(bucket.alias(_BUCKET)).applyInArrow(evaluate_bucket, out_schema)

    # ids that are integers on one side and strings on the other are joined as strings by the
    # local engine; they must also hash alike, so both sides hash their string form
    as_string = dict(sdf.dtypes)[internal[query]] != dict(qrels.dtypes)[internal[query]]
    key = F.col(internal[query])
    run_key = qrels_key = key.cast("string") if as_string else key
    systems = None
    system_cols = [b for b in by_cols if b not in qrels_cols]
    if system_cols and semantics.queries == "judged":
        found = sdf.select(*[internal[c] for c in system_cols]).distinct()
        systems = _collect(found).rename(names, strict=False)
    kernel = _Kernel(measures, options, arrow_schema, names, systems, shipped, num_buckets)

    def evaluate_bucket_with_qrels(run: pa.Table, judgments: pa.Table) -> pa.Table:
        return kernel(run, judgments)

    run_groups = sdf.groupBy(_bucket(run_key, num_buckets).alias(_BUCKET))
    qrels_groups = qrels.groupBy(_bucket(qrels_key, num_buckets).alias(_BUCKET))
    return run_groups.cogroup(qrels_groups).applyInArrow(evaluate_bucket_with_qrels, out_schema)


def summarize(
    per_query: DataFrame, by: str | Sequence[str] | None = None, *, query: str = "query"
) -> DataFrame:
    """Aggregate a per-query Spark DataFrame into one row per by-group, with Spark's own
    aggregation (only the summary rows reach the driver when it is collected).

    The same table as `preval.summarize`: ``NumQ`` (the number of queries), then every
    measure column: rates averaged over queries (nulls ignored), counts (``NumRet``,
    ``NumRel``, ``NumRelRet``) summed, ``GMAP`` / ``GMBpref`` as exp(mean(log(max(x, 1e-5)))).
    Spark adds the terms of a mean in an order of its own (it changes with the partitioning),
    so the last digits may differ from `preval.summarize`'s, which adds them in query order.

    Parameters
    ----------
    per_query
        A per-query table as `evaluate` returns it (Spark DataFrame).
    by
        Grouping columns. Default: every column that is neither `query` nor a measure;
        ``[]`` for one overall row. A table with such columns but no `query` column is
        refused (its query column has another name: pass it).
    query
        Name of the query column.

    Returns
    -------
    pyspark.sql.DataFrame
        Sorted by `by`; ``NumQ`` and the other counts are longs (Int64), rates doubles, as
        in `preval.summarize`. Without keys, one row even for an empty input (``NumQ`` 0,
        rates null, counts 0).
    """
    F = extras.require("pyspark.sql.functions", "preval.spark")  # (one line without it)

    names = per_query.columns
    specs = measure_columns(pl.Schema(dict.fromkeys(names, pl.Float64)))
    if not specs:
        msg = "per-query table: no measure columns found (expected names like AP, P@10)"
        raise InputError(msg)
    if by is None:
        keys = default_keys(names, specs, query)
    else:
        keys = [by] if isinstance(by, str) else list(dict.fromkeys(by))
        missing = [k for k in keys if k not in names]
        if missing:
            msg = f"per-query table: missing by column(s) {', '.join(missing)}"
            raise InputError(msg)
    aggs = [F.count(F.lit(1)).cast("long").alias("NumQ")]
    for name, spec in specs.items():
        if spec.definition.name == "NumQ":
            continue
        col = F.col(_quote(name))
        if spec.summary == "sum":
            agg = F.coalesce(F.sum(col), F.lit(0))  # Polars sums nothing to 0, Spark to null
        elif spec.summary == "gmean":
            # greatest() skips nulls in Spark; a null value must stay out of the mean
            floored = F.when(col.isNotNull(), F.greatest(col, F.lit(GMAP_FLOOR)))
            agg = F.exp(F.avg(F.log(floored)))
        else:
            agg = F.avg(col)
        aggs.append(agg.cast("long" if spec.is_count else "double").alias(name))
    if not keys:
        return per_query.agg(*aggs)
    key_cols = [F.col(_quote(k)) for k in keys]
    return per_query.groupBy(*key_cols).agg(*aggs).orderBy(*key_cols)


@dataclass(frozen=True)
class _Kernel:
    """What runs on a worker: a bucket's Arrow table(s) -> `preval.evaluate` -> Arrow.

    A module-level class (pickled by reference, with its state), so that the workers run the
    installed preval's code rather than a copy pickled from the driver. Spark reads the
    arity of the function it is given (one table, or two when cogrouped; one more would be
    the group key), so it gets a plain function that calls this, not the instance.
    """

    measures: list[str]
    options: Options
    schema: pa.Schema
    names: dict[str, str]  # internal column name -> the user's
    systems: pl.DataFrame | None = None  # with qrels: every system of the whole run
    # the custom measures requested, registered on the worker before it evaluates
    shipped: tuple[custom.CustomMeasure, ...] = ()
    num_buckets: int = 1  # (a data rule's count of rows is one bucket's when there are more)

    def __call__(self, run: pa.Table, qrels: pa.Table | None = None) -> pa.Table:
        custom.ensure(self.shipped)
        frame = _frame(run).rename(self.names, strict=False)
        judgments = None if qrels is None else _frame(qrels).rename(self.names, strict=False)
        if self.systems is not None and judgments is not None and judgments.height:
            frame = _with_every_system(frame, judgments, self.systems, self.options)
        try:
            out = local_evaluate(frame, self.measures, qrels=judgments, options=self.options)
            out = out.collect()
        except PrevalError as error:
            raise _counted_in_bucket(error, self.num_buckets) from None
        # applyInArrow checks types strictly: Polars writes large_string, string views, UInt32
        return out.to_arrow().select(self.schema.names).cast(self.schema)


def _with_every_system(
    run: pl.DataFrame, qrels: pl.DataFrame, systems: pl.DataFrame, options: Options
) -> pl.DataFrame:
    """`run` plus one row of an unjudged query for each system that has no row in it.

    The local engine adds placeholders (judged queries a system did not answer) for the
    systems it sees; this makes it see every system of the whole run. The made-up query is in
    no judgment, so it is never evaluated and never reaches the output.
    """
    cols = systems.columns
    present = run.select(cols).unique()
    # (a system with a null key is refused by the local engine in the buckets that hold its
    # rows; a made-up row for it would be refused in every other bucket too, with the made-up
    # query as the example)
    missing = systems.join(present, on=cols, how="anti", nulls_equal=True).drop_nulls(cols)
    if not missing.height:
        return run
    query, doc, score = options.columns.query, options.columns.doc, options.columns.score
    schema = run.schema
    fake = _unused_id(schema[query], qrels[query])
    filler = {
        query: pl.lit(fake, dtype=schema[query]),
        doc: pl.lit("x" if schema[doc] == pl.String else 0).cast(schema[doc]),
        score: pl.lit(0.0).cast(schema[score]),
    }
    extra = missing.select(
        (filler[c] if c in filler else pl.col(c) if c in cols else pl.lit(None))
        .cast(schema[c])
        .alias(c)
        for c in schema.names()
    )
    return pl.concat([run, extra], how="vertical")


def _unused_id(dtype: pl.DataType, taken: pl.Series) -> Any:
    """An id of `dtype` that no value of `taken` equals (also after a cast to string)."""
    if dtype == pl.String:
        as_text = taken.cast(pl.String)
        return (as_text.max() or "") + "~preval"
    as_number = taken.cast(pl.Int64, strict=False).drop_nulls()
    top = as_number.max()
    if top is None:
        return 0
    low = as_number.min()
    # below the smallest id when the largest is the dtype's own maximum (`dtype.max()` is an
    # expression: evaluate it to a number)
    largest = pl.select(dtype.max()).item()  # type: ignore[attr-defined]
    return top + 1 if top < largest else low - 1  # type: ignore[operator]


def _probe_every_column(
    run: DataFrame, qrels: DataFrame | None, measures: list[str], options: Options
) -> None:
    """The local engine on empty frames of every column of the inputs: its message about a
    missing column lists the columns present, which are the inputs', not the few selected."""
    try:
        every_run = _empty(run)
        every_qrels = None if qrels is None else _empty(qrels)
    except TypeError:  # a Spark type with no Arrow type: the message of the selected columns
        return
    local_evaluate(every_run, measures, qrels=every_qrels, options=options).collect()


def _present(sdf: DataFrame, wanted: list[str | None]) -> list[str]:
    """The wanted columns that exist, once each (the local engine names what is missing)."""
    return [c for c in dict.fromkeys(w for w in wanted if w) if c in sdf.columns]
