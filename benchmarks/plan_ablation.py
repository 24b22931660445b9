"""Which parts of the TREC evaluation plan cost what: the plan `preval trec` runs, built once per
variant with a part left out, every variant collected in turn in one process (streaming engine,
as auto picks at 1M lines), the median time of each.

Variants (comma-joined to combine them):

* ``baseline``: the plan as `preval/cli/trec.py` builds it;
* ``no_checks``: no data rule of the plan at all (the counters' `map_batches` dropped, so the
  aggregations drop the counters too); ``no_qrels_checks``: none on the qrels' aggregation;
  ``no_duplicates``: no duplicate rule (run and qrels);
* ``no_by``: no ``system`` key (one run file: it is a constant);
* ``no_reader_check``: the TREC reader's line check (`io._trec_together`) dropped;
* ``minimal``: a hand-written plan with the same measures and none of the above, for scale.

Only for measuring: a variant without a check gives the same values on valid input and no
error on invalid input. On a machine others use, give each variant many rounds and compare
medians; differences of a few percent are within the noise there.

    PYTHONPATH=$PWD python benchmarks/plan_ablation.py benchmarks/.data/rows1000000_dpq100_seed0 \
        baseline no_checks no_by minimal --rounds 11
"""

from __future__ import annotations

import argparse
import statistics
import time

import polars as pl

from preval import validate
from preval.cli import common
from preval.options import Options
from preval.planner import build_plan

MEASURES = ["map", "recip_rank", "Rprec", "P_5", "P_10"]
ACTIVE: set[str] = set()  # the parts the variant being built leaves out


def _patch() -> None:
    """Make the plan builder leave out the parts named in ACTIVE."""
    map_batches = pl.LazyFrame.map_batches
    row_checks = validate.row_checks

    def patched_map_batches(lf, function, *args, schema=None, **kwargs):  # type: ignore[no-untyped-def]
        name = getattr(function, "__qualname__", "")
        plan_check = name.startswith("checker")
        if (plan_check and "no_checks" in ACTIVE) or (
            not plan_check and "no_reader_check" in ACTIVE
        ):
            return lf.select(list(schema)) if schema is not None else lf
        return map_batches(lf, function, *args, schema=schema, **kwargs)

    def patched_row_checks(**kwargs):  # type: ignore[no-untyped-def]
        rules = row_checks(**kwargs)
        qrels = not kwargs.get("label_may_be_null", True)
        if qrels and "no_qrels_checks" in ACTIVE:
            return []
        return [r for r in rules if not (r.name == "duplicate" and "no_duplicates" in ACTIVE)]

    pl.LazyFrame.map_batches = patched_map_batches  # type: ignore[method-assign]
    validate.row_checks = patched_row_checks


def minimal(stem: str) -> pl.LazyFrame:
    """The same measures by a plain plan: read, join, sort, one aggregation."""
    fields = dict(
        has_header=False,
        separator=" ",
        quote_char=None,
        truncate_ragged_lines=True,
        missing_columns="insert",
        schema={f"f{i}": pl.String for i in range(6)},
    )
    run = pl.scan_csv(f"{stem}.run", **fields).select(
        q="f0", d="f2", s=pl.col("f4").cast(pl.Float64)
    )
    qrels = pl.scan_csv(f"{stem}.qrels", **fields).select(
        q="f0", d="f2", l=pl.col("f3").cast(pl.Int64).cast(pl.Float64)
    )
    totals = qrels.group_by("q").agg(R=(pl.col("l") >= 1).sum())
    rows = (
        run.join(qrels, on=["q", "d"], how="left")
        .join(totals, on="q", how="left")
        .sort(
            [pl.col("q"), pl.col("s").cast(pl.Float32), pl.col("d")],
            descending=[False, True, True],
            nulls_last=True,
        )
        .with_row_index("pos")
        .with_columns(rel=(pl.col("l") >= 1).fill_null(False))
    )
    rel, R = pl.col("rel"), pl.col("R").first().fill_null(0)
    ap = (pl.int_range(1, rel.sum() + 1) / (rel.arg_true() + 1)).sum() / R
    first = pl.when(rel).then(pl.col("pos")).min() - pl.col("pos").min() + 1
    return rows.group_by("q").agg(
        pl.when(R > 0).then(ap).otherwise(0.0).alias("AP"),
        (1.0 / first).fill_null(0.0).alias("RR"),
        pl.when(R > 0).then(rel.head(R).sum() / R).otherwise(0.0).alias("Rprec"),
        (rel.head(5).sum() / 5).alias("P@5"),
        (rel.head(10).sum() / 10).alias("P@10"),
    )


def plan_of(stem: str, variant: str) -> pl.LazyFrame:
    parts = set(variant.split(","))
    if "minimal" in parts:
        return minimal(stem)
    ACTIVE.clear()
    ACTIVE.update(parts)
    try:
        inputs = common.read_inputs([f"{stem}.run"], f"{stem}.qrels", "auto", empty_runs=True)
        by = [] if "no_by" in parts else ["system"]
        options = {"input_format": inputs.input_format, "by": by, "ties": "trec",
                   "queries": "retrieved"}  # fmt: skip
        return build_plan(
            inputs.data, MEASURES, qrels=inputs.qrels, options=Options.of(options)
        ).status
    finally:
        ACTIVE.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stem", help="the files' path without .run / .qrels")
    parser.add_argument("variants", nargs="+")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    _patch()
    plans = {v: plan_of(args.stem, v) for v in args.variants}
    times: dict[str, list[float]] = {v: [] for v in plans}
    for round_ in range(args.rounds + 1):  # the first round warms up
        for variant, plan in plans.items():
            start = time.perf_counter()
            plan.collect(engine="streaming")
            if round_:
                times[variant].append(time.perf_counter() - start)
    for variant, spent in times.items():
        print(f"{variant:40s} median {statistics.median(spent):.3f} s  min {min(spent):.3f} s")


if __name__ == "__main__":
    main()
