"""Benchmark of `preval.compare`, and of ranx's significance tests on the same per-query table.

Usage::

    python benchmarks/compare_bench.py [--systems 10] [--queries 100000] [--measures 4]
        [--test randomization] [--resamples 10000] [--all-pairs] [--peer ranx]
        [--repeat 1] [--data-dir DIR]

Generates a per-query table (system, query, one column per measure; values in [0, 1], each
system a noisy shift of the first) and writes it to a Parquet file. Each tool then runs in
a subprocess of its own (``--worker TOOL``), the tools taking turns ``--repeat`` times; for
each run it prints the subprocess's wall time and peak RSS (``ru_maxrss`` from ``os.wait4``
of that very child, as benchmarks/run.py measures its peers) and the time of the test alone,
measured in the child after reading the table and after a warm-up call on a tiny table (which
imports scipy and compiles or loads ranx's numba functions, a one-off cost of a process).

``--peer ranx`` (ranx 0.3.21, the ``bench`` extra) runs ranx's statistical step on the same
table: `ranx.statistical_tests.compute_statistical_significance`, the function `ranx.compare`
calls once it has evaluated the runs (the evaluation is benchmarked by benchmarks/run.py).
ranx always compares every pair, each twice (as control and as treatment, keeping the last),
so the peer runs need ``--all-pairs``; ranx knows ``--test t`` (its ``student``),
``randomization`` (its ``fisher``: ``--resamples`` permutations) and ``tukey``. Each worker
writes its p-values, and the largest difference between preval's and ranx's is printed: about
1e-15 for the t-test, Monte-Carlo error for randomization.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

MEASURES = ["AP", "nDCG@10", "P@10", "RR"]
RANX_TESTS = {"t": "student", "randomization": "fisher", "tukey": "tukey"}


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


def preval_worker(data: pl.DataFrame, args: argparse.Namespace) -> tuple[float, pl.DataFrame]:
    import preval

    def run(frame: pl.DataFrame) -> pl.DataFrame:
        return preval.compare(frame, baseline=None if args.all_pairs else "s0", test=args.test,
                              n_resamples=args.resamples, correction="none")  # fmt: skip

    run(table(3, 20, 1))  # warm-up: scipy's import
    start = time.perf_counter()
    result = run(data)
    wall = time.perf_counter() - start
    return wall, result.select("system", "baseline", "measure", "p_value")


def ranx_worker(data: pl.DataFrame, args: argparse.Namespace) -> tuple[float, pl.DataFrame]:
    from ranx.statistical_tests import compute_statistical_significance

    if args.test not in RANX_TESTS:
        msg = f"ranx has no {args.test!r} test (it has {', '.join(RANX_TESTS)})"
        raise SystemExit(msg)
    if not args.all_pairs:
        msg = "ranx compares every pair: run the peer with --all-pairs"
        raise SystemExit(msg)

    def scores(frame: pl.DataFrame) -> tuple[list[str], dict[str, dict[str, np.ndarray]]]:
        """ranx's input: {system: {measure: per-query values}}, the queries in one order."""
        names = sorted(frame["system"].unique().to_list())
        measures = [c for c in frame.columns if c not in ("system", "query")]
        frame = frame.sort("system", "query")
        parts = frame.partition_by("system", as_dict=True, include_key=False)
        return names, {name: {m: parts[(name,)][m].to_numpy() for m in measures} for name in names}

    def run(names: list[str], values: dict[str, dict[str, np.ndarray]]):
        return compute_statistical_significance(
            names, values, stat_test=RANX_TESTS[args.test], n_permutations=args.resamples,
            max_p=0.05, random_seed=42,
        )  # fmt: skip

    run(*scores(table(3, 20, 1)))  # warm-up: numba compiles (or loads from its cache) the tests
    names, values = scores(data)
    start = time.perf_counter()
    comparisons = run(names, values)
    wall = time.perf_counter() - start
    measures = list(values[names[0]])
    rows = [
        (y, x, m, float(comparisons[x, y][m]["p_value"]))
        for i, x in enumerate(names)
        for y in names[i + 1 :]
        for m in measures
    ]
    schema = {"system": pl.String, "baseline": pl.String, "measure": pl.String,
              "p_value": pl.Float64}  # fmt: skip
    return wall, pl.DataFrame(rows, schema=schema, orient="row")


def worker(args: argparse.Namespace) -> None:
    data = pl.read_parquet(args.data)
    run = preval_worker if args.worker == "preval" else ranx_worker
    wall, p_values = run(data, args)
    p_values.write_parquet(args.p_values)
    print(f"{wall:.6f} {p_values.height}")


def spawn(argv: list[str]) -> tuple[float, float, str]:
    """Run `argv`; its wall time, peak RSS in MB (ru_maxrss of the reaped child) and stdout."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4
        if proc.returncode != 0:
            msg = f"{' '.join(argv)} failed with exit code {proc.returncode}"
            raise SystemExit(msg)
        out.seek(0)
        return wall, usage.ru_maxrss * 1024 / 1e6, out.read().decode()  # Linux: KiB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--measures", type=int, default=4, choices=range(1, len(MEASURES) + 1))
    parser.add_argument("--test", default="randomization")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--all-pairs", action="store_true", help="no baseline: every pair")
    parser.add_argument("--peer", choices=["ranx"], action="append", default=[])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each tool, in turns")
    parser.add_argument("--data-dir", default=None, help="where the table goes (default: tmp)")
    parser.add_argument("--worker", choices=["preval", "ranx"], help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--p-values", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    with tempfile.TemporaryDirectory(dir=args.data_dir) as tmp:
        data = Path(tmp) / "per_query.parquet"
        table(args.systems, args.queries, args.measures).write_parquet(data)
        common = ["--test", args.test, "--resamples", str(args.resamples), "--data", str(data)]
        common += ["--all-pairs"] if args.all_pairs else []
        tools = ["preval", *args.peer]
        print(
            f"{args.systems} systems x {args.queries} queries x {args.measures} measures, "
            f"{args.test}, {args.resamples} resamples, "
            f"{'every pair' if args.all_pairs else 'baseline s0'}"
        )
        print("tool    run  process wall (s)  test (s)  peak RSS (MB)  comparisons")
        results: dict[str, list[tuple[float, float, float]]] = {t: [] for t in tools}
        for round_ in range(1, args.repeat + 1):
            for tool in tools:
                p_path = Path(tmp) / f"{tool}.parquet"
                argv = [sys.executable, __file__, "--worker", tool, "--p-values", str(p_path)]
                wall, rss, out = spawn(argv + common)
                test_wall, comparisons = out.split()
                results[tool].append((wall, float(test_wall), rss))
                print(f"{tool:<7} {round_:>3}  {wall:>16.2f}  {float(test_wall):>8.2f}  "
                      f"{rss:>13.0f}  {comparisons:>11}")  # fmt: skip
        if len(tools) > 1:
            medians = {t: np.median(np.array(r), axis=0) for t, r in results.items()}
            ours = pl.read_parquet(Path(tmp) / "preval.parquet")
            for peer in args.peer:
                m, p = medians[peer], medians["preval"]
                theirs = pl.read_parquet(Path(tmp) / f"{peer}.parquet")
                both = ours.join(theirs, on=["system", "baseline", "measure"], how="full")
                gap = both.select((pl.col("p_value") - pl.col("p_value_right")).abs().max())
                print(
                    f"{peer} / preval (medians): process wall {m[0] / p[0]:.1f}x, test "
                    f"{m[1] / p[1]:.1f}x, peak RSS {m[2] / p[2]:.1f}x; comparisons matched "
                    f"{both.drop_nulls().height} of {both.height}, largest p-value "
                    f"difference {gap.item():.2e}"
                )


if __name__ == "__main__":
    main()
