"""Start-up on small files: `preval trec` and `preval evaluate` on the fixtures against
``python -c "import polars"`` (issue 33: "within 1.3x of import polars").

Usage::

    python benchmarks/startup.py [--rounds 21] [--python PYTHON] [--base DIR ...]

``--base DIR`` (repeatable) times another checkout's preval too (a worktree, or ``git archive``
of main unpacked in DIR), its commands taking turns with this one's in every round: a before /
after comparison against one shared ``import polars`` floor.

Each command runs as a fresh interpreter, the commands taking turns round after round (a drift
in the machine's speed reaches each alike); the table gives the median wall time with the
interquartile range, and the ratio of medians to ``import polars``. preval's modules are
compiled to bytecode first (``compileall``), as ``pip install`` leaves them: a machine that
exports ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module at every start.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "import polars (floor)": ["-c", "import polars"],
    "import preval": ["-c", "import preval"],
    "preval trec (fixtures)": [
        "-m", "preval", "trec", "fixtures/trec/qrels.txt", "fixtures/trec/bm25.run",
    ],
    "preval evaluate (fixtures)": [
        "-m", "preval", "evaluate", "fixtures/example.parquet", "--by", "system",
    ],
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument(
        "--base",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="another checkout whose preval is timed too, in the same rounds",
    )
    args = parser.parse_args()
    # (name, argv, tree): this tree's commands, then each base's preval commands
    runs = [(name, argv, ROOT) for name, argv in COMMANDS.items()]
    for base in args.base:
        runs += [(f"{name} [{base}]", argv, base.resolve()) for name, argv in COMMANDS.items()
                 if name != "import polars (floor)"]  # fmt: skip
    for tree in dict.fromkeys(tree for *_, tree in runs):
        compileall.compile_dir(tree / "preval", quiet=1)
    times: dict[str, list[float]] = {name: [] for name, *_ in runs}
    for _ in range(args.rounds):
        for name, argv, tree in runs:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            start = time.perf_counter()
            subprocess.run([args.python, *argv], cwd=tree, env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            times[name].append(time.perf_counter() - start)
    floor = statistics.median(times["import polars (floor)"])
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds, load average {load:.1f} at the end\n")
    print("| command | median (q1-q3) | / import polars |\n| --- | --- | --- |")
    for name, values in times.items():
        q1, median, q3 = statistics.quantiles(values, n=4)
        print(f"| {name} | {median:.3f} s ({q1:.3f}-{q3:.3f}) | {median / floor:.2f}x |")


if __name__ == "__main__":
    main()
