"""Fusion end to end, preval against ranx 0.3.21: load the runs, fuse, write the fused run.

    python benchmarks/fusion_bench.py --lines 1000000 --runs 3 \
        --ranx-python /work/venv-fuse/bin/python [--methods rrf comb_mnz]
    python benchmarks/fusion_bench.py --lines 100000000 --runs 3 --order join \
        --memory-limit 2GB --no-ranx
    python benchmarks/fusion_bench.py --lines 100000000 --runs 3 --order join \
        --format parquet --out parquet --memory-limit 2GB --no-ranx --methods rrf

Data: `--runs` TREC run files of `--lines` lines each, `--depth` documents per query (string
ids ``q0000123`` / ``d0004567``; each run draws its documents of a query from a pool of
2 x depth, so runs overlap and miss documents; scores with 3 decimals: ties). ``--order join``
writes the lines in random order (what a join or a Spark job writes) instead of grouped by
query. ``--format parquet``: Parquet runs from ``benchmarks/generate.py`` instead (seeds 0, 1,
...: every run ranks the same documents of a query with other scores), which it writes out of
core at 100M rows and more. Files are cached in ``benchmarks/.data/`` (delete them when done).
The output is a TREC run, or a Parquet table with ``--out parquet``; the temporary folder of
outputs is removed at the end.

Each tool runs as its own process (interpreter start-up, imports, reading, fusing and writing
included); its wall time and peak RSS (``ru_maxrss`` from ``os.wait4`` of that child) are
reported. preval: ``python -m preval fuse RUN... --method M [--norm N] -o OUT.run``; ranx:
``Run.from_file`` for each run, ``ranx.fuse(runs, norm, method)``, ``Run.save`` as TREC (ranx
compiles its numba functions once, cached on disk: the first run is discarded, ``--warm``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / ".data"

RANX_SCRIPT = """
import sys
from ranx import Run, fuse
method, norm, out, *paths = sys.argv[1:]
runs = [Run.from_file(p, kind="trec") for p in paths]
fused = fuse(runs, norm=None if norm == "none" else norm, method=method)
fused.save(out, kind="trec")
"""
# preval's name -> ranx's
RANX_NAMES = {"rrf": "rrf", "comb_mnz": "mnz", "comb_sum": "sum", "isr": "isr"}


def make_runs(lines: int, runs: int, depth: int, order: str, seed: int = 0) -> list[Path]:
    DATA.mkdir(parents=True, exist_ok=True)
    paths = [DATA / f"fuse_l{lines}_d{depth}_{order}_s{seed}_r{i}.run" for i in range(runs)]
    if all(p.exists() for p in paths):
        return paths
    queries = lines // depth
    for i, path in enumerate(paths):
        rng = np.random.default_rng(seed * 1000 + i)
        written = 0
        tmp = path.with_suffix(".tmp")
        with tmp.open("w") as fh:
            step = max(1, 1_000_000 // depth)  # queries per block: ~1M lines in memory
            for start in range(0, queries, step):
                q = np.arange(start, min(queries, start + step))
                n = len(q) * depth
                pool = rng.random((len(q), 2 * depth)).argsort(axis=1)[:, :depth]
                docs = q[:, None] * 7919 % 100_000 + pool  # each query its own pool
                scores = np.round(rng.random(n) * 10, 3)
                frame = pl.DataFrame(
                    {
                        "query": np.repeat(q, depth),
                        "doc": docs.ravel(),
                        "score": scores,
                    }
                ).sort(["query", "score"], descending=[False, True])
                frame = frame.with_columns(
                    pl.format("q{}", pl.col("query").cast(pl.String).str.zfill(7)).alias("query"),
                    pl.format("d{}", pl.col("doc").cast(pl.String).str.zfill(7)).alias("doc"),
                    (pl.int_range(pl.len()).over("query") + 1).alias("rank"),
                )
                text = frame.select(
                    pl.format("{} Q0 {} {} {} run{}", "query", "doc", "rank", "score", pl.lit(i))
                ).to_series()
                fh.write("\n".join(text.to_list()) + "\n")
                written += n
        if order == "join":  # the lines in random order: shuffled out of core by Polars
            shuffled = (
                pl.scan_csv(tmp, has_header=False, separator="\t", quote_char=None,
                            schema={"line": pl.String})
                .with_columns(pl.col("line").hash(seed + i).alias("_h"))
                .sort("_h")
                .select("line")
            )  # fmt: skip
            shuffled.sink_csv(path, include_header=False, quote_style="never")
            tmp.unlink()
        else:
            tmp.rename(path)
    return paths


def make_parquet_runs(lines: int, runs: int, order: str) -> list[Path]:
    """`runs` Parquet runs of `lines` rows from ``benchmarks/generate.py`` (query, doc, score,
    label; seeds 0, 1, ...: the same documents per query, other scores), for sizes the TREC
    writer above takes too long to write; generated out of core, in `order`."""
    DATA.mkdir(parents=True, exist_ok=True)
    paths = [DATA / f"fuse_pq_l{lines}_{order}_s{i}.parquet" for i in range(runs)]
    for i, path in enumerate(paths):
        if not path.exists():
            subprocess.run(
                [sys.executable, str(ROOT / "benchmarks" / "generate.py"), "--rows", str(lines),
                 "--out", str(path), "--order", order, "--seed", str(i)],
                check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
    return paths


def run_child(cmd: list[str], timeout: float) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds (user + system), peak RSS (MB) and exit code of `cmd` run as
    one child (on a shared machine the CPU time says more than the wall time)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code:
        err = proc.stderr.read().decode(errors="replace").strip().splitlines()
        print(f"  failed ({code}): {err[-1] if err else ''}", file=sys.stderr)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--order", choices=("grouped", "join"), default="grouped")
    ap.add_argument("--methods", nargs="+", default=["rrf", "comb_mnz"])
    ap.add_argument("--ranx-python", default=None, help="a Python with ranx 0.3.21")
    ap.add_argument("--no-ranx", action="store_true")
    ap.add_argument("--memory-limit", default=None, help="preval's --memory-limit, e.g. 2GB")
    ap.add_argument(
        "--format", choices=("trec", "parquet"), default="trec",
        help="the runs' format: parquet for 100M rows and more (generate.py writes them)",
    )  # fmt: skip
    ap.add_argument("--out", choices=("trec", "parquet"), default="trec", help="output format")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600)
    args = ap.parse_args()

    t = time.perf_counter()
    if args.format == "parquet":
        paths = make_parquet_runs(args.lines, args.runs, args.order)
    else:
        paths = make_runs(args.lines, args.runs, args.depth, args.order)
    print(f"data: {args.runs} runs x {args.lines:,} lines ({args.order}), "
          f"{sum(p.stat().st_size for p in paths) / 2**20:.0f} MB, "
          f"ready in {time.perf_counter() - t:.1f} s")  # fmt: skip
    norms = {"rrf": "none", "comb_mnz": "min-max"}
    out_dir = Path(tempfile.mkdtemp(prefix="fusion-bench-"))
    rows = []
    for method in args.methods:
        norm = norms.get(method, "min-max")
        out = out_dir / f"{method}.{'parquet' if args.out == 'parquet' else 'run'}"
        preval_cmd = [sys.executable, "-m", "preval", "fuse", *map(str, paths), "--method",
                      method, "--norm", norm, "-o", str(out)]  # fmt: skip
        if args.memory_limit:
            preval_cmd += ["--memory-limit", args.memory_limit]
        tools = [("preval", preval_cmd)]
        if not args.no_ranx and args.ranx_python:
            script = out_dir / "ranx_fuse.py"
            script.write_text(RANX_SCRIPT)
            ranx_out = out_dir / f"{method}.ranx.run"
            ranx_cmd = [args.ranx_python, str(script), RANX_NAMES[method], norm, str(ranx_out),
                        *map(str, paths)]  # fmt: skip
            tools.append(("ranx", ranx_cmd))
        for tool, cmd in tools:
            best = None
            for _ in range(args.repeat):
                wall, cpu, rss, code = run_child(cmd, args.timeout)
                if code == 0 and (best is None or wall < best[0]):
                    best = (wall, cpu, rss)
            rows.append((method, norm, tool, *(best or (float("nan"),) * 3)))
            print(f"{method:<9} {norm:<8} {tool:<7} {rows[-1][3]:8.1f} s wall "
                  f"{rows[-1][4]:8.1f} s cpu {rows[-1][5]:8.0f} MB", flush=True)  # fmt: skip
    shutil.rmtree(out_dir, ignore_errors=True)
    print("\n| method | norm | tool | wall (s) | CPU (s) | peak RSS (MB) |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for method, norm, tool, wall, cpu, rss in rows:
        print(f"| {method} | {norm} | {tool} | {wall:.1f} | {cpu:.1f} | {rss:.0f} |")


if __name__ == "__main__":
    main()
