"""Benchmark of `preval.discriminative_power` (Sakai 2006): every pair of systems compared by a
paired test, the share significant and the ASL curve.

Usage::

    python benchmarks/agreement_bench.py [--systems 10] [--queries 50 10000]
        [--tests randomization] [--resamples 1000] [--measures 1] [--repeat 3]

The target (issue 34): 1,000 randomization resamples over all 45 pairs of 10 systems in under
10 s on the project's 2-core machine. For each query count and test, a per-query table is
generated (values in [0, 1], each system a noisy shift of the first, as compare_bench.py
makes them), a warm-up call on a tiny table imports scipy, and then both lazy frames (the
summary and the curve, which share one comparison) are collected `--repeat` times; the time
printed is the median and the fastest of those collections (the table is in memory: no
reading). The load average of the machine before and after is printed beside them, since a
shared machine's figures depend on it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_bench import MEASURES, table

import preval


def run(per_query: pl.DataFrame, test: str, resamples: int) -> tuple[float, pl.DataFrame]:
    start = time.perf_counter()
    power = preval.discriminative_power(per_query, test=test, n_resamples=resamples, seed=1)
    summary, _curve = pl.collect_all([power.summary, power.curve])
    return time.perf_counter() - start, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--queries", type=int, nargs="+", default=[50, 10_000])
    parser.add_argument("--tests", nargs="+", default=["randomization"])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--measures", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    run(table(3, 5, 1), "t", 10)  # warm-up: scipy's import is a one-off of a process
    pairs = args.systems * (args.systems - 1) // 2
    print(f"cores: {os.cpu_count()}; polars threads: {pl.thread_pool_size()}")
    print("systems  pairs  measures  queries  test           resamples  median_s  min_s  "
          "load_before  load_after  significant")  # fmt: skip
    for queries in args.queries:
        per_query = table(args.systems, queries, args.measures)
        for test in args.tests:
            load_before = os.getloadavg()[0]
            times = []
            for _ in range(args.repeat):
                seconds, summary = run(per_query, test, args.resamples)
                times.append(seconds)
            load_after = os.getloadavg()[0]
            significant = "/".join(str(v) for v in summary["significant"].to_list())
            print(
                f"{args.systems:7d}  {pairs:5d}  {args.measures:8d}  {queries:7d}  {test:13s}  "
                f"{args.resamples:9d}  {statistics.median(times):8.3f}  {min(times):5.3f}  "
                f"{load_before:11.2f}  {load_after:10.2f}  {significant}"
            )
    print(f"measures: {', '.join(MEASURES[: args.measures])}")


if __name__ == "__main__":
    main()
