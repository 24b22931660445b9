"""One timed run of `preval.spark` on a Parquet table: the summary collected to the driver.

Usage::

    python benchmarks/spark_run.py DATA.parquet --master local[2]|spark://HOST:7077|sc://HOST
        [--num-buckets B] [--check PER_QUERY_DIR] [--measures AP RR Rprec P@5 P@10]

Prints one JSON line: rows, buckets, wall time of evaluate + summarize + collect (the Spark
session is started before the clock), the summary rows, and the driver's peak memory: this
Python process (``ru_maxrss``) and the driver JVM that PySpark started as its child
(``VmHWM`` from /proc). Only the summary rows are collected, so both should stay flat as the
rows grow.

``--check DIR`` then writes the per-query table from Spark to DIR as Parquet (on the
executors), evaluates DATA with the local engine and compares the two per query (exact), and
the summaries (to 1e-12); the result goes into the JSON line as ``"check"``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

MEASURES = ["AP", "RR", "Rprec", "P@5", "P@10"]


def jvm_peak_mb() -> float | None:
    """Peak RSS (VmHWM) of this process's java children: the driver JVM of PySpark."""
    peaks = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        if fields.get("PPid", "").strip() == str(os.getpid()) and "java" in fields.get("Name", ""):
            peaks.append(int(fields["VmHWM"].split()[0]) / 1024)
    return max(peaks) if peaks else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--num-buckets", type=int, default=None)
    parser.add_argument("--measures", nargs="+", default=MEASURES)
    parser.add_argument("--executor-memory", default="2g")
    parser.add_argument("--driver-memory", default="1g")
    parser.add_argument("--shuffle-partitions", default="8")
    parser.add_argument("--check", type=Path, default=None)
    parser.add_argument(
        "--split-qrels",
        action="store_true",
        help="evaluate the table as a run (query, doc, score) and qrels (query, doc, label) "
        "joined inside Spark",
    )
    args = parser.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    import polars as pl
    from pyspark.sql import SparkSession

    import preval
    import preval.spark as pspark

    if args.master.startswith("sc://"):  # Spark Connect: the session's config is the server's
        spark = SparkSession.builder.remote(args.master).getOrCreate()
    else:
        spark = (
            SparkSession.builder.master(args.master)
            .appName("preval-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", args.driver_memory)
            .config("spark.executor.memory", args.executor_memory)
            .config("spark.sql.shuffle.partitions", args.shuffle_partitions)
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
    sdf = spark.read.parquet(str(args.data.resolve()))

    start = time.perf_counter()
    buckets = args.num_buckets or pspark.default_buckets(sdf)
    qrels = None
    if args.split_qrels:
        sdf, qrels = sdf.select("query", "doc", "score"), sdf.select("query", "doc", "label")
    per_query = pspark.evaluate(sdf, args.measures, qrels=qrels, num_buckets=buckets)
    summary = pl.from_arrow(pspark.summarize(per_query).toArrow())
    wall = time.perf_counter() - start
    assert isinstance(summary, pl.DataFrame)
    result = {
        "data": str(args.data),
        "master": args.master,
        "qrels": args.split_qrels,
        "buckets": buckets,
        "wall_s": round(wall, 2),
        "summary": summary.row(0, named=True),
        "driver_python_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "driver_jvm_peak_mb": round(jvm_peak_mb() or 0),
    }
    if args.check is not None:
        per_query.write.mode("overwrite").parquet(str(args.check))
        got = pl.read_parquet(args.check / "*.parquet").sort("query")
        table = pl.scan_parquet(args.data)
        if args.split_qrels:
            run, judgments = (
                table.select("query", "doc", "score"),
                table.select("query", "doc", "label"),
            )
            want = preval.evaluate(run, args.measures, qrels=judgments).collect()
        else:
            want = preval.evaluate(table, args.measures).collect()
        same_rows = got.equals(want)
        local_summary = preval.summarize(want).collect()
        close = all(
            abs(summary[c].item() - local_summary[c].item())
            <= 1e-12 * max(1, abs(summary[c].item()))
            for c in local_summary.columns
        )
        result["check"] = {"per_query_identical": same_rows, "summary_within_1e-12": close,
                           "queries": want.height}  # fmt: skip
    spark.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
