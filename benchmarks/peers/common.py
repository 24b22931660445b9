"""What every peer script does the same way: arguments, loading, means, the summary.

Peers run as separate processes (`python peers/NAME.py ...`), so this module is imported from
the script's own directory; it imports no peer library itself.
"""

from __future__ import annotations

import argparse
import csv
import sys

import polars as pl

# preval name -> pytrec_eval (trec_eval) name
PYTREC_MEASURES = {
    "AP": "map",
    "RR": "recip_rank",
    "Rprec": "Rprec",
    "P@5": "P_5",
    "P@10": "P_10",
    "nDCG@10": "ndcg_cut_10",
    "nDCG": "ndcg",
    "R@100": "recall_100",
}

# preval name -> ranx metric name
RANX_MEASURES = {
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


def arguments(*inputs: str, extra=None) -> argparse.Namespace:
    """`INPUT... MEASURE... [--summary OUT.csv]`; `extra` may add options to the parser."""
    parser = argparse.ArgumentParser()
    for name in inputs:
        parser.add_argument(name)
    parser.add_argument("measures", nargs="+")
    parser.add_argument("--summary")
    if extra:
        extra(parser)
    return parser.parse_args()


def parquet_dicts(path: str) -> tuple[dict, dict]:
    """A joined table -> (run, qrels) as dicts of dicts, the input every peer takes."""
    df = pl.read_parquet(path, columns=["query", "doc", "score", "label"])
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
    return run, qrels


def pytrec_means(qrels: dict, run: dict, names: dict[str, str]) -> list[tuple[str, float]]:
    """Means over the evaluated queries of pytrec_eval's per-query values."""
    import pytrec_eval

    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(names.values())).evaluate(run)
    n = len(per_query)
    return [
        (m, sum(v[t] for v in per_query.values()) / n if n else float("nan"))
        for m, t in names.items()
    ]


# TREC text files -> dicts of dicts, the fastest plain-Python reader found (pytrec_eval_trec.py)


def _check(path: str, n_lines: int, table: dict[str, dict]) -> None:
    if n_lines != sum(map(len, table.values())):
        sys.exit(f"{path}: duplicate (query, doc) lines")


def read_run(path: str) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    cur, docs, n = None, {}, 0
    with open(path) as f:
        for n, line in enumerate(f, 1):  # noqa: B007 -- n is the line count
            qid, _, doc, _, score, _ = line.split()
            if qid != cur:
                cur, docs = qid, run.setdefault(qid, {})
            docs[doc] = float(score)
    _check(path, n, run)
    return run


def read_qrels(path: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    cur, docs, n = None, {}, 0
    with open(path) as f:
        for n, line in enumerate(f, 1):  # noqa: B007 -- n is the line count
            qid, _, doc, rel = line.split()
            if qid != cur:
                cur, docs = qid, qrels.setdefault(qid, {})
            docs[doc] = int(rel)
    _check(path, n, qrels)
    return qrels


def report(rows: list[tuple[str, float]], summary: str | None) -> None:
    """Write `measure,value` to the summary file (if any) and print the means."""
    if summary:
        with open(summary, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["measure", "value"])
            w.writerows(rows)
    for m, v in rows:
        print(f"{m}\t{v:.6f}")
