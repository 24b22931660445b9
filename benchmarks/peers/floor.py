"""The floor: the least work any evaluator must do -- read the joined table
and count rows per query (polars lazy scan + group_by + collect)."""

import sys

import polars as pl

out = pl.scan_parquet(sys.argv[1]).group_by("query").agg(pl.len()).collect()
print(out.height)
