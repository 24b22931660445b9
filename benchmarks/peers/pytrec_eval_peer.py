"""pytrec_eval peer: Parquet joined table -> run/qrels dicts ->
RelevanceEvaluator.evaluate -> mean per measure.

Usage: pytrec_eval_peer.py DATA.parquet --summary OUT.csv MEASURE [MEASURE ...]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or a trec_eval name.
"""

import argparse
import csv

import polars as pl
import pytrec_eval

MEASURES = {
    "AP": "map",
    "RR": "recip_rank",
    "Rprec": "Rprec",
    "P@5": "P_5",
    "P@10": "P_10",
    "nDCG@10": "ndcg_cut_10",
    "nDCG": "ndcg",
    "R@100": "recall_100",
}

parser = argparse.ArgumentParser()
parser.add_argument("data")
parser.add_argument("measures", nargs="+")
parser.add_argument("--summary")
args = parser.parse_args()
names = {m: MEASURES.get(m, m) for m in args.measures}

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

evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(names.values()))
per_query = evaluator.evaluate(run)
n = len(per_query)
rows = [
    (m, sum(v[t] for v in per_query.values()) / n if n else float("nan")) for m, t in names.items()
]
if args.summary:
    with open(args.summary, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["measure", "value"])
        w.writerows(rows)
for m, v in rows:
    print(f"{m}\t{v:.6f}")
