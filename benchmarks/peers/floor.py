"""The floor: the least work any evaluator must do -- read the joined table
(all four columns it needs: query, doc, score, label) and group it by query
(polars lazy scan + one group_by + collect).

Every column is materialised: the aggregation touches each of them, so the
scan cannot project any away (a count alone would read only ``query``).
"""

import sys

import polars as pl

out = (
    pl.scan_parquet(sys.argv[1])
    .group_by("query")
    .agg(
        pl.len(),
        pl.col("doc").first(),
        pl.col("score").max(),
        pl.col("label").sum(),
    )
    .collect()
)
print(out.height)
