"""ranx peer: Parquet joined table -> run/qrels dicts -> ranx.Qrels.from_dict /
ranx.Run.from_dict -> ranx.evaluate -> mean per measure.

Usage: ranx_peer.py DATA.parquet MEASURE [MEASURE ...] [--summary OUT.csv]
where MEASURE is a preval name (AP, RR, Rprec, P@5, P@10) or a ranx metric name.

``from_dict`` is the constructor ``Qrels.from_df`` / ``Run.from_df`` end in: they
group a pandas frame with a Python lambda per query and then call ``from_dict``
(and they require ``object`` id columns, which pandas 3 no longer produces for
strings). Building the dicts with a Polars ``group_by`` is the faster route.
"""

import argparse
import csv

import polars as pl
from ranx import Qrels, Run, evaluate

MEASURES = {
    "AP": "map",
    "RR": "mrr",
    "Rprec": "r-precision",
    "P@5": "precision@5",
    "P@10": "precision@10",
    "P@20": "precision@20",
    "nDCG": "ndcg",
    "nDCG@10": "ndcg@10",
    "R@100": "recall@100",
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
run = Run.from_dict({q: dict(zip(d, s, strict=True)) for q, d, s in runs.iter_rows()})
judged = (
    df.filter(pl.col("label").is_not_null())
    .group_by("query")
    .agg("doc", pl.col("label").cast(pl.Int64))
)
qrels = Qrels.from_dict({q: dict(zip(d, lab, strict=True)) for q, d, lab in judged.iter_rows()})
del df, runs, judged

# returns {metric: mean over the run's queries} (a float when there is one metric)
scores = evaluate(qrels, run, list(names.values()), make_comparable=True)
if not isinstance(scores, dict):
    scores = {next(iter(names.values())): scores}
rows = [(m, float(scores[t])) for m, t in names.items()]
if args.summary:
    with open(args.summary, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["measure", "value"])
        w.writerows(rows)
for m, v in rows:
    print(f"{m}\t{v:.6f}")
