"""Benchmark of `preval.compare`: systems x queries x measures, a test, its resamples.

Usage::

    python benchmarks/compare_bench.py [--systems 10] [--queries 100000] [--measures 4]
        [--test randomization] [--resamples 10000] [--all-pairs]

Generates a per-query table (system, query, one column per measure; values in [0, 1], each
system a noisy shift of the first), then times `preval.compare` on it in this process (the
table is built before the clock starts) and prints wall time, CPU time and peak RSS.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import polars as pl

import preval

MEASURES = ["AP", "nDCG@10", "P@10", "RR"]


def table(systems: int, queries: int, measures: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.random((queries, measures))
    frames = []
    for s in range(systems):
        values = np.clip(base + rng.normal(0.01 * s, 0.1, size=base.shape), 0, 1)
        frames.append(
            pl.DataFrame(
                {
                    "system": f"s{s}",
                    "query": np.arange(queries),
                    **{MEASURES[m]: values[:, m] for m in range(measures)},
                }
            )
        )
    return pl.concat(frames)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--measures", type=int, default=4, choices=range(1, len(MEASURES) + 1))
    parser.add_argument("--test", default="randomization")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--all-pairs", action="store_true", help="no baseline: every pair")
    args = parser.parse_args()
    data = table(args.systems, args.queries, args.measures)
    start, cpu = time.perf_counter(), time.process_time()
    result = preval.compare(
        data,
        baseline=None if args.all_pairs else "s0",
        test=args.test,
        n_resamples=args.resamples,
    )
    wall, used = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(
        f"{args.systems} systems x {args.queries} queries x {args.measures} measures, "
        f"{args.test}, {args.resamples} resamples, {result.height} comparisons: "
        f"{wall:.2f} s wall, {used:.2f} s CPU, {peak:.2f} GB peak RSS"
    )


if __name__ == "__main__":
    main()
