"""Bootstrap intervals of a summary: 10 systems x 100k queries x 4 measures, 10,000 resamples
shared by every system and measure (issue 34's target: under 15 s on the 2-core machine).

Usage: python benchmarks/intervals_bench.py [--systems 10] [--queries 100000] [--measures 4]
       [--resamples 10000] [--method percentile|bca|t]

Prints the wall time of `preval.summarize(..., ci=0.95)` collected, the process's CPU time,
and the load average before and after (the machine may be shared: a load above the number of
cores means the figure is an upper bound).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import polars as pl

import preval

MEASURES = ("AP", "nDCG@10", "P@10", "RR")


def per_query(systems: int, queries: int, measures: int, seed: int = 0) -> pl.DataFrame:
    """A per-query table as `preval.evaluate(..., by="system")` returns: every system on every
    query, rates in [0, 1] (beta-distributed: skewed, as IR measures are)."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i:06d}" for i in range(queries)]
    columns = {
        "system": np.repeat([f"s{j:02d}" for j in range(systems)], queries),
        "query": np.tile(ids, systems),
    }
    for name in MEASURES[:measures]:
        columns[name] = rng.beta(0.7, 1.5, size=systems * queries)
    return pl.DataFrame(columns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--measures", type=int, default=4)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--method", default="percentile", choices=("t", "percentile", "bca"))
    args = parser.parse_args()
    table = per_query(args.systems, args.queries, args.measures)
    plan = preval.summarize(
        table.lazy(), by="system", ci=0.95, ci_method=args.method, resamples=args.resamples
    )
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    summary = plan.collect()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(
        f"{args.method}: {args.systems} systems x {args.queries} queries x {args.measures} "
        f"measures, {args.resamples} resamples: {wall:.2f} s wall, {cpu:.2f} s CPU "
        f"({os.cpu_count()} cores; load average {load:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after)"
    )
    print(summary.select("system", "AP", "AP_ci_low", "AP_ci_high").head(3))


if __name__ == "__main__":
    main()
