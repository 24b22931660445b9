"""Tuning a fusion at scale: `preval.optimize_fusion` searching 3 weights on ranx's grid (11
values each, 0 to 1 by 0.1, summing to 1: 62 candidates, `weight_grid`) against nDCG@10 over
10k judged queries, 100 documents per query and run (3M stacked rows). The issue's target:
under 60 s on two cores.

Usage::

    python benchmarks/fusion_tuning_bench.py [--queries 10000] [--depth 100] [--folds 5]
        [--method wsum] [--step 0.1]

Prints the machine's load average, the time of the search (and of the cross-validated one
with --folds) and the peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import preval


def make(queries: int, depth: int, seed: int = 0) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """3 runs of `depth` documents per query out of a pool of 2 * depth, scores that follow
    graded labels with noise of a different strength per run; 20 judged documents per query."""
    rng = np.random.default_rng(seed)
    pool = 2 * depth
    q = np.repeat(np.arange(queries), pool)
    d = np.tile(np.arange(pool), queries)
    label = rng.choice([0, 0, 0, 1, 2], size=q.size)
    judged = rng.random(q.size) < 20 / pool
    qrels = pl.DataFrame(
        {"query": q[judged], "doc": d[judged], "label": label[judged]}
    ).with_columns(pl.format("q{}", "query"), pl.format("d{}", "doc"))
    runs = []
    for noise in (1.0, 1.5, 2.5):
        s = label + rng.normal(0, noise, q.size)
        frame = pl.DataFrame({"query": q, "doc": d, "score": s})
        top = frame.filter(pl.col("score").rank("ordinal", descending=True).over("query") <= depth)
        runs.append(top.with_columns(pl.format("q{}", "query"), pl.format("d{}", "doc")))
    return runs, qrels


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--folds", type=int, default=None)
    parser.add_argument("--method", default="wsum")
    parser.add_argument("--step", type=float, default=0.1)
    args = parser.parse_args()
    runs, qrels = make(args.queries, args.depth)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, run in enumerate(runs):
            path = Path(tmp) / f"run{i}.parquet"
            run.write_parquet(path)
            paths.append(str(path))
        qrels_path = Path(tmp) / "qrels.parquet"
        qrels.write_parquet(qrels_path)
        print(f"load average before: {os.getloadavg()}")
        print(f"{args.queries} queries x {args.depth} docs x 3 runs; {qrels.height} judgments")
        start = time.perf_counter()
        tuning = preval.optimize_fusion(
            paths, qrels_path, method=args.method, metric="nDCG@10",
            search={"weights": args.step}, folds=args.folds,
        )  # fmt: skip
        elapsed = time.perf_counter() - start
    print(f"candidates: {tuning.candidates.height}, best: {tuning.best}")
    if tuning.folds is not None:
        print(tuning.folds)
    print(f"optimize_fusion: {elapsed:.1f} s")
    print(f"load average after: {os.getloadavg()}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {peak:.0f} MB")


if __name__ == "__main__":
    main()
