"""What the Spark path costs before preval computes anything, on the same data and buckets.

Usage::

    python benchmarks/spark_floor.py DATA.parquet --master local[2] --num-buckets 10

Prints one JSON line with the wall time of three jobs over the four columns, each one
collecting a few rows: ``scan`` (read and aggregate the columns, no shuffle), ``shuffle``
(the same rows grouped by the query's hash bucket, Spark's own aggregation), and ``arrow``
(``groupBy(bucket).applyInArrow`` with a kernel that only counts its rows: the shuffle, the
sort by bucket and the Arrow transfer to and from Python that `preval.spark.evaluate` pays).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def count_rows(table):
    import pyarrow as pa

    return pa.table({"rows": pa.array([table.num_rows], pa.int64())})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--num-buckets", type=int, default=10)
    parser.add_argument("--arrow-batch", type=int, default=10_000, help="maxRecordsPerBatch")
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g" if args.master.startswith("local") else "1g")
        .config("spark.executor.memory", "2g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.arrow_batch))
        .getOrCreate()
    )
    sdf = spark.read.parquet(str(args.data.resolve())).select("query", "doc", "score", "label")
    bucket = F.pmod(F.xxhash64("query"), F.lit(args.num_buckets)).alias("b")
    stats = [F.count("*"), F.max("doc"), F.sum("score"), F.sum("label")]
    jobs = {
        "scan": lambda: sdf.agg(*stats).collect(),
        "shuffle": lambda: sdf.groupBy(bucket).agg(*stats).collect(),
        "arrow": lambda: sdf.groupBy(bucket).applyInArrow(count_rows, "rows long").collect(),
    }
    result = {"data": str(args.data), "master": args.master, "buckets": args.num_buckets,
              "arrow_batch": args.arrow_batch}  # fmt: skip
    for name, job in jobs.items():
        start = time.perf_counter()
        job()
        result[f"{name}_s"] = round(time.perf_counter() - start, 2)
    spark.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
