"""Fuse Spark DataFrames where they live (`preval.spark_fusion.fuse`), with the local fusion's
unchanged Polars plan.

Fusion is per query, so it splits as evaluation does (`preval.spark`): the runs' rows, each
tagged with its run's number, are grouped by a hash bucket of the query,
``pmod(xxhash64(query), B)``, and every call of the kernel gets whole queries of every run as
one Arrow table, stacks them (`preval.fusion.stack`), normalises and fuses them
(`preval.fusion.apply`): the numbers are the local fusion's by construction. A supervised
method fuses with a table learned beforehand (`preval.fusion.supervised.learn`, on the driver:
training runs and qrels are usually small), shipped to the workers with the kernel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from .errors import InputError, PrevalError
from .spark_arrow import (
    _BUCKET,
    _arrow_schema,
    _bucket,
    _counted_in_bucket,
    _empty,
    _frame,
    _quote,
    _spark_schema,
    default_buckets,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_RUN = "_preval_run"


def fuse(
    runs: Sequence[DataFrame] | Mapping[str, DataFrame],
    method: str = "rrf",
    norm: str | None = None,
    weights: Sequence[float] | None = None,
    *,
    learned: pl.DataFrame | pl.LazyFrame | None = None,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    with_rank: bool = True,
    num_buckets: int | None = None,
    ties: str = "input",
    **params: Any,
) -> DataFrame:
    """Fuse Spark DataFrames per query, inside Spark; return a lazy Spark DataFrame.

    The result has the rows and columns of `preval.fuse` on the same runs (query, doc, score
    [, rank], under the runs' column names), computed by the local fusion on each bucket of
    whole queries on a worker. Nothing runs until it is collected or written, except one count
    for the default `num_buckets`.

    Parameters
    ----------
    runs
        The runs, in order (their order is the weights' and the methods' run order): a list of
        Spark DataFrames, or a dict name -> DataFrame; each with query, doc and score columns.
    method, norm, weights, **params
        As for `preval.fuse`.
    learned
        A supervised method's learned table (`preval.fusion.supervised.learn` on training runs
        and qrels), a small Polars frame sent to the workers.
    query, doc, score
        The runs' column names (the same in every run).
    with_rank
        Add the fused 1-based ``rank`` (a long).
    num_buckets
        Hash buckets of the query, one Python call each; the default as `preval.spark.evaluate`
        chooses it (about one per million rows, at least the session's parallelism).
    ties
        A run's equal scores: ``input`` (as a bucket's rows arrive) or ``trec`` (doc id
        descending: reproducible, and equal to `preval.fuse(..., ties="trec")`).

    Returns
    -------
    pyspark.sql.DataFrame
        One row per (query, doc), unordered. With ``ties="input"``, ties in a run's scores are
        ordered by the order in which a bucket's rows reach the worker, which Spark does not
        promise: give tie-free scores, or ``ties="trec"``, for results that are reproducible
        (and equal to `preval.fuse`'s).
    """
    from functools import reduce

    from . import extras
    from .fusion import core

    F = extras.require("pyspark.sql.functions", "preval.spark")  # (one line without it)

    m = core.get_method(method)
    norm_name = core.get_norm(norm, m)
    chosen = core.resolve_params(m, params)
    core.check_ties(ties)
    named = list(runs.items()) if isinstance(runs, Mapping) else [(None, r) for r in runs]
    if not named:
        msg = "fuse: no run given"
        raise InputError(msg)
    core.resolve_weights(m, weights, len(named))
    if m.supervised and learned is None:
        msg = f"fusion method {m.name} is supervised: pass what it learned (learned=)"
        raise InputError(msg)
    if isinstance(learned, pl.LazyFrame):
        learned = learned.collect()
    parts = []
    for i, (name, sdf) in enumerate(named):
        missing = [c for c in (query, doc, score) if c not in sdf.columns]
        if missing:
            what = f"run {name!r}" if name is not None else f"run {i}"
            msg = f"{what}: missing column {missing[0]!r} (columns: {', '.join(sdf.columns)})"
            raise InputError(msg)
        parts.append(
            sdf.select(
                F.lit(i).cast("int").alias(_RUN),
                F.col(_quote(query)).alias("query"),
                F.col(_quote(doc)).alias("doc"),
                F.col(_quote(score)).cast("double").alias("score"),
            )
        )
    for col in ("query", "doc"):  # ids of one kind across runs, as the local stacking does
        if len({dict(p.dtypes)[col] for p in parts}) > 1:
            parts = [p.withColumn(col, F.col(col).cast("string")) for p in parts]
    rows = reduce(lambda a, b: a.unionByName(b), parts)

    # the runs' names, as preval.fuse names them in its messages (a dict's keys)
    names = tuple(str(n) for n, _ in named) if isinstance(runs, Mapping) else None
    kernel = _Kernel(m.name, norm_name, None if weights is None else tuple(weights), chosen,
                     learned, len(named), with_rank, None, ties, names)  # fmt: skip
    probe = kernel.fused(_empty(rows))
    out_schema = _spark_schema(probe.schema)
    if num_buckets is None:
        num_buckets = default_buckets(rows)
    elif isinstance(num_buckets, bool) or not isinstance(num_buckets, int) or num_buckets < 1:
        msg = f"num_buckets must be a whole number >= 1, got {num_buckets!r}"
        raise InputError(msg)
    kernel = _Kernel(**{**kernel.__dict__, "schema": _arrow_schema(out_schema),
                        "num_buckets": num_buckets})  # fmt: skip

    def fuse_bucket(table: pa.Table) -> pa.Table:
        return kernel(table)

    bucket = _bucket(F.col("query"), num_buckets).alias(_BUCKET)
    out = rows.groupBy(bucket).applyInArrow(fuse_bucket, out_schema)
    renames = {"query": query, "doc": doc, "score": score}
    return out.select(*[F.col(c).alias(renames.get(c, c)) for c in out.columns])


@dataclass(frozen=True)
class _Kernel:
    """What runs on a worker: a bucket's rows (run number, query, doc, score) -> the local
    fusion -> Arrow (a module-level class: the workers run the installed preval's code)."""

    method: str
    norm: str
    weights: tuple[float, ...] | None
    params: dict[str, Any]
    learned: pl.DataFrame | None
    runs: int
    with_rank: bool
    schema: pa.Schema | None
    ties: str = "input"
    names: tuple[str, ...] | None = None  # a dict's keys, which name the runs in messages
    num_buckets: int = 1  # (a data rule's count of rows is one bucket's when there are more)

    def fused(self, rows: pl.DataFrame) -> pl.DataFrame:
        from .fusion import core

        frames = [
            rows.filter(pl.col(_RUN) == i).select("query", "doc", "score") for i in range(self.runs)
        ]
        runs = frames if self.names is None else dict(zip(self.names, frames, strict=True))
        stacked = core.stack(runs, ties=self.ties)
        learned = None if self.learned is None else self.learned.lazy()
        fused = core.apply(stacked, self.method, norm=self.norm, weights=self.weights,
                           learned=learned, params=self.params)  # fmt: skip
        return core.present(fused, with_rank=self.with_rank).collect()

    def __call__(self, table: pa.Table) -> pa.Table:
        try:
            out = self.fused(_frame(table))
        except PrevalError as error:
            raise _counted_in_bucket(error, self.num_buckets) from None
        # applyInArrow checks types strictly: Polars writes large_string, string views, UInt32
        return out.to_arrow().select(self.schema.names).cast(self.schema)
