"""The Spark path beside the local engine: time and driver memory, one JSON line per run.

Usage::

    benchmarks/spark_cluster.sh start       # for spark://127.0.0.1:7077
    python benchmarks/spark_bench.py DATA.parquet [DATA2.parquet ...] \
        --masters local[2] spark://127.0.0.1:7077 [--repeat 2] [--buckets 2 10 100] \
        --out results.jsonl

For each data file: the local engine (`preval evaluate DATA -m ... --summary OUT.csv`, its
default engine) and `spark_run.py` on each master, taking turns within each round of
`--repeat`. Each run is a subprocess; the local engine's peak memory is its ``ru_maxrss``
(``os.wait4``), the Spark runs report their driver's (Python and JVM) themselves.
`--buckets` adds runs with those bucket counts on the first master (default: preval's).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MEASURES = ["AP", "RR", "Rprec", "P@5", "P@10"]


def run_local(data: Path) -> dict:
    exe = shutil.which("preval")
    argv = [exe] if exe else [sys.executable, "-m", "preval"]
    with tempfile.TemporaryDirectory() as tmp:
        argv += ["evaluate", str(data), *[a for m in MEASURES for a in ("-m", m)],
                 "--summary", str(Path(tmp) / "summary.csv"), "--quiet"]  # fmt: skip
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0, argv
    return {"tool": "preval (local)", "data": str(data), "wall_s": round(wall, 2),
            "peak_mb": round(usage.ru_maxrss / 1024)}  # fmt: skip


def run_spark(data: Path, master: str, buckets: int | None) -> dict:
    argv = [sys.executable, str(HERE / "spark_run.py"), str(data), "--master", master]
    if buckets is not None:
        argv += ["--num-buckets", str(buckets)]
    if master.startswith("local"):
        # in local mode the driver JVM is also the executor: it holds the shuffle
        argv += ["--driver-memory", "4g"]
    start = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return {"tool": f"preval.spark {master}", **result, "process_wall_s": round(wall, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, nargs="+")
    parser.add_argument("--masters", nargs="+", default=["local[2]"])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--buckets", type=int, nargs="*", default=[])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with args.out.open("a") as out:
        for data in args.data:
            runs = [lambda d=data: run_local(d)]
            runs += [lambda d=data, m=m: run_spark(d, m, None) for m in args.masters]
            runs += [lambda d=data, b=b: run_spark(d, args.masters[0], b) for b in args.buckets]
            for _ in range(args.repeat):
                for run in runs:
                    line = json.dumps(run())
                    print(line, flush=True)
                    out.write(line + "\n")
                    out.flush()


if __name__ == "__main__":
    main()
