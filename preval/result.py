"""What `preval.collect` returns: one evaluation, computed once, read several ways."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

import polars as pl

from . import engines
from .options import Options, accepts
from .planner import Plan
from .ranking import QUERY
from .summary import summarize


class Result:
    """The per-query values of a plan, computed once by an engine (`collect`).

    `per_query`, `audit` and `summary` are LazyFrames over the computed values: reading them
    runs no evaluation again. Where an engine spilled its per-query rows to a temporary
    folder, the frames keep that folder alive as long as any of them exists.
    """

    def __init__(self, plan: Plan) -> None:
        self._plan = plan

    @property
    def measure_names(self) -> list[str]:
        """The measure columns, canonical names, in the order asked."""
        return self._plan.measure_names

    def per_query(self, form: Literal["wide", "long"] = "wide") -> pl.LazyFrame:
        """One row per (by..., query) evaluated, sorted, counts Int64 and rates Float64;
        ``form="long"``: rows of (by..., query, measure, value), ``value`` Float64."""
        return self._kept(self._plan.per_query(form))

    def audit(self) -> pl.LazyFrame:
        """What was counted and dropped, one row per by-group (`preval.audit`)."""
        return self._kept(self._plan.audit())

    @accepts("summarize")
    def summary(self, *, options: Options) -> pl.LazyFrame:
        """Means of rates and sums of counts per by-group (`preval.summarize`), with the
        confidence intervals of the means that `ci` asks for."""
        keys = [self._plan.names[k] for k in self._plan.keys]
        measures = self._plan.per_query().drop(self._plan.string_names)
        query = self._plan.names[QUERY]
        return self._kept(summarize(measures, by=keys, query=query, options=options))

    def _kept(self, lf: pl.LazyFrame) -> pl.LazyFrame:
        if self._plan.keep is None:
            return lf
        # the frame holds the spill folder's owner: the folder outlives this Result
        return lf.map_batches(_Keep(self._plan.keep), schema=lf.collect_schema(), streamable=True)

    def __repr__(self) -> str:
        return f"Result(measures={self.measure_names}, keys={[*self._plan.names.values()]})"


class _Keep:
    """The identity on frames, holding an object alive as long as a plan holds this."""

    def __init__(self, owner: object) -> None:
        self.owner = owner

    def __call__(self, df: pl.DataFrame) -> pl.DataFrame:
        return df


def collect(
    plan: Plan,
    engine: str = "auto",
    *,
    memory_limit: int | None = None,
    tmp_dir: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> Result:
    """Run `plan` (from `preval.plan`) once with `engine` and return its `Result`.

    engine
        ``"auto"`` (default: chosen from the input's size and whether its rows are grouped by
        query), ``"in-memory"``, ``"streaming"``, ``"chunked"`` (rows grouped by query, read in
        chunks) or ``"partitioned"`` (any row order, spilled to buckets within
        `memory_limit`). All give the same numbers (docs/engines.md).
    memory_limit
        Peak resident memory (bytes) of the process to stay under: the engines choose chunk
        sizes, workers and buckets from it, and an input that cannot be evaluated within it
        raises `InputError` before any work (docs/engines.md, "Memory limits"). Default: no
        limit (the partitioned engine spills above 4 GB, or above 1 GB with separate qrels
        when the input fits that).
    tmp_dir
        Where spill files go (default: the system's temporary folder).
    progress
        Called with the number of rows read so far (chunked and partitioned engines).
    """
    computed = engines.collect(
        plan, engine, progress=progress, memory_limit=memory_limit, tmp_dir=tmp_dir
    )
    return Result(computed)
