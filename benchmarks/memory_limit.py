"""Peak resident memory of ``preval evaluate`` against ``--memory-limit`` (issue 32).

Usage::

    python benchmarks/memory_limit.py --rows 10000000 --limits 512MB 1GB 2GB \
        [--orders grouped join] [--data /tmp/preval-memory] [--address-space] [--no-baseline]
    python benchmarks/memory_limit.py --rows 100000000 --orders join --scatter 1 8 64

For each size and row order (``grouped`` by query, or ``join``: rows in random order) a Parquet
file is generated once with ``benchmarks/generate.py`` (kept in ``--data``; delete it when
done: 100M rows take several GB), then the command runs once without a limit and once per
limit, each in its own process: the table gives its exit, wall time and peak RSS (the child's
``ru_maxrss``), and whether the peak kept the limit. ``--address-space`` also sets RLIMIT_AS to
the limit plus 1.5 GiB (what Polars reserves beyond its data, docs/engines.md). A limit the
input cannot be evaluated within is refused in one line before any work: shown as "refused".
``--scatter B...`` measures instead the partitioned engine's scatter alone (``sink_ipc`` into B
bucket files) on each file: the constants of the scatter in ``preval/engines/budget.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURES = ["-m", "AP", "-m", "nDCG@10", "-m", "P@10"]

# run the command as a child with an optional RLIMIT_AS; report its exit, time and peak RSS
CHILD = """
import json, resource, subprocess, sys, time
space = int(sys.argv[1])
def cap():
    if space:
        resource.setrlimit(resource.RLIMIT_AS, (space, space))
start = time.perf_counter()
done = subprocess.run(sys.argv[2:], preexec_fn=cap, capture_output=True, text=True)
took = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"code": done.returncode, "seconds": took, "rss": rss, "err": done.stderr}))
"""


def parse_size(text: str) -> int:
    units = {"MB": 2**20, "GB": 2**30}
    return int(float(text[:-2]) * units[text[-2:].upper()])


def data_file(rows: int, order: str, folder: Path) -> Path:
    path = folder / f"{order}-{rows}.parquet"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "generate.py"), "--rows", str(rows),
             "--out", str(path), "--order", order],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    return path


def run(path: Path, limit: str | None, address_space: int) -> dict:
    command = [sys.executable, "-m", "preval", "evaluate", str(path), *MEASURES, "-q"]
    if limit is not None:
        command += ["--memory-limit", limit]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(address_space), *command],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    return json.loads(done.stdout)


# the partitioned engine's scatter alone, as the engine runs it: peak RSS and seconds
SCATTER = """
import resource, sys, tempfile, time
from pathlib import Path
import polars as pl
from preval.engines.partitioned import scatter
path, buckets = sys.argv[1], int(sys.argv[2])
with tempfile.TemporaryDirectory() as folder:
    start = time.perf_counter()
    scatter(pl.scan_parquet(path), ["query"], buckets, Path(folder))
    took = time.perf_counter() - start
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, f"{took:.1f}")
"""


def scatter_only(path: Path, buckets: list[int]) -> None:
    """Peak RSS of `scatter` alone into each number of `buckets` (the model's constants)."""
    print("| file | buckets | peak RSS (MB) | time (s) |\n| --- | ---: | ---: | ---: |")
    for b in buckets:
        done = subprocess.run(
            [sys.executable, "-c", SCATTER, str(path), str(b)],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )  # fmt: skip
        rss, took = done.stdout.split()
        print(f"| {path.name} | {b} | {rss} | {took} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000_000])
    parser.add_argument("--orders", nargs="+", default=["grouped", "join"])
    parser.add_argument("--limits", nargs="+", default=["512MB", "1GB", "2GB"])
    parser.add_argument("--data", type=Path, default=Path("/tmp/preval-memory"))
    parser.add_argument("--address-space", action="store_true")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run without a limit")
    parser.add_argument(
        "--scatter", type=int, nargs="+", default=None, metavar="BUCKETS",
        help="measure the partitioned engine's scatter alone into these bucket counts",
    )  # fmt: skip
    args = parser.parse_args()
    if args.scatter:
        for rows in args.rows:
            for order in args.orders:
                scatter_only(data_file(rows, order, args.data), args.scatter)
        return
    print("| rows | order | --memory-limit | exit | time (s) | peak RSS (MB) | kept |")
    print("| ---: | --- | ---: | --- | ---: | ---: | --- |")
    for rows in args.rows:
        for order in args.orders:
            path = data_file(rows, order, args.data)
            for limit in [*([] if args.no_baseline else [None]), *args.limits]:
                space = 0
                if limit is not None and args.address_space:
                    space = parse_size(limit) + 3 * 2**29
                got = run(path, limit, space)
                code = {0: "0", 2: "refused"}.get(got["code"], str(got["code"]))
                kept = "" if limit is None or got["code"] != 0 else (
                    "yes" if got["rss"] <= parse_size(limit) else "**no**"
                )  # fmt: skip
                print(
                    f"| {rows:,} | {order} | {limit or 'none'} | {code} | {got['seconds']:.1f} "
                    f"| {got['rss'] / 2**20:.0f} | {kept} |",
                    flush=True,
                )
                if got["code"] not in (0, 2):
                    print(got["err"].strip().splitlines()[-1:], file=sys.stderr)


if __name__ == "__main__":
    main()
