"""ir_measures peer: Parquet joined table -> run/qrels dicts ->
ir_measures.calc_aggregate -> mean per measure.

Usage: ir_measures_peer.py DATA.parquet MEASURE [MEASURE ...] [--summary OUT.csv]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or an ir_measures name.

``calc_aggregate`` accepts qrels and run as an iterable of namedtuples, a pandas
DataFrame or a dict of dicts; its provider for these measures (pytrec_eval)
converts the first two into the dict of dicts, so the dicts are passed directly.
"""

import argparse
import csv

import ir_measures
import polars as pl

parser = argparse.ArgumentParser()
parser.add_argument("data")
parser.add_argument("measures", nargs="+")
parser.add_argument("--summary")
args = parser.parse_args()
# preval and ir_measures share these names (AP, RR, Rprec, P@5, P@10, nDCG@10, R@100)
names = {m: ir_measures.parse_measure(m) for m in args.measures}

df = pl.read_parquet(args.data, columns=["query", "doc", "score", "label"])
df = df.with_columns(pl.col("query").cast(pl.String), pl.col("doc").cast(pl.String))
runs = (
    df.filter(pl.col("score").is_not_null())
    .group_by("query")
    .agg("doc", pl.col("score").cast(pl.Float64))
)
run = {q: dict(zip(d, s, strict=True)) for q, d, s in runs.iter_rows()}
judged = (
    df.filter(pl.col("label").is_not_null())
    .group_by("query")
    .agg("doc", pl.col("label").cast(pl.Int64))
)
qrels = {q: dict(zip(d, lab, strict=True)) for q, d, lab in judged.iter_rows()}
del df, runs, judged

agg = ir_measures.calc_aggregate(list(names.values()), qrels, run)
rows = [(m, float(agg[t])) for m, t in names.items()]
if args.summary:
    with open(args.summary, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["measure", "value"])
        w.writerows(rows)
for m, v in rows:
    print(f"{m}\t{v:.6f}")
