"""Plot wall time and peak memory against rows, one line per tool, from run.py --json files.

Usage::

    python benchmarks/plot.py RESULTS.json [MORE.json ...] --out benchmarks/scale.png

Each point is the median of a tool's runs at one size. A capped run (killed at run.py's time or
memory limit) is drawn as an open marker at the limit it reached, with "capped" in the legend:
the true value is higher. Needs matplotlib (`pip install '.[bench]'`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def load(paths: list[Path]) -> tuple[dict[str, dict[int, tuple[float, float, bool]]], str]:
    """tool -> rows -> (median wall s, median peak GB, capped); later files win."""
    series: dict[str, dict[int, tuple[float, float, bool]]] = {}
    machine = ""
    for path in paths:
        doc = json.loads(path.read_text())
        machine = doc.get("machine", machine)
        for r in doc["results"]:
            ok, capped = r["status"] == "ok", r["status"].startswith("capped")
            if not (ok or capped) or not r["wall_s"]:
                continue
            wall = statistics.median(r["wall_s"])
            gb = statistics.median(r["rss_mb"]) / 1000
            series.setdefault(r["tool"], {})[r["rows"]] = (wall, gb, capped)
    return series, machine


def plot(series: dict, machine: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.5))
    labelled: set[tuple[int, int]] = set()  # one "capped" label per panel and size
    for tool in sorted(series, key=lambda t: (not t.startswith("preval"), t)):
        points = sorted(series[tool].items())
        rows = [r for r, _ in points]
        style = {"marker": "o", "linewidth": 2.5 if tool.startswith("preval") else 1.2}
        (line,) = ax_t.plot(rows, [p[0] for _, p in points], label=tool, **style)
        ax_m.plot(rows, [p[1] for _, p in points], color=line.get_color(), **style)
        for r, (wall, gb, capped) in points:
            if capped:  # open marker: killed at a limit, the real cost is higher
                for panel, (ax, y) in enumerate(((ax_t, wall), (ax_m, gb))):
                    ax.plot([r], [y], "o", markersize=11, markerfacecolor="white",
                            color=line.get_color())  # fmt: skip
                    if (panel, r) not in labelled:
                        labelled.add((panel, r))
                        ax.annotate("capped (killed at the limit)", (r, y), fontsize=8,
                                    textcoords="offset points", xytext=(-60, 10))  # fmt: skip
    for ax, label in ((ax_t, "wall time, end to end (s)"), (ax_m, "peak memory (GB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows (100 documents per query)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    ax_t.legend(fontsize=9)
    fig.suptitle(f"preval and peers, 5 measures (AP RR Rprec P@5 P@10)\n{machine}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+", help="run.py --json outputs")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "scale.png")
    args = parser.parse_args(argv)
    series, machine = load(args.results)
    plot(series, machine, args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
