"""Golden numbers of ranx's `compare` on a small tie-free case, for tests/test_compare.py.

Usage (ranx 0.3.21, the version pinned in the ``bench`` extra)::

    python benchmarks/peers/ranx_compare_golden.py [--write] [--permutations 100000]

``--write`` first (re)writes the case, tests/data/compare/: three TREC runs (``a``, ``b``,
``c``) of 40 queries x 15 documents and their qrels, made with numpy's seeded generator.
Tie-free: the scores of a query are distinct even as 32-bit floats, so that every evaluator
ranks the documents alike (ranx keeps no defined tie order); run ``c`` lacks query q40, which
ranx's ``make_comparable=True`` scores 0 as preval's ``missing="zero"`` does.

The script then reads the files with ranx's own readers and prints, per test (ranx's
``student``, ``fisher`` and ``tukey``), each run's mean per measure and the p-value of every
pair: the lines tests/test_compare.py (Tukey: tests/test_stats_peers.py) fixes. Run it with
ranx installed after any change to preval's comparison: the fixed numbers are ranx's, so CI
needs no ranx.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "compare"
RUNS = {"a": 0.3, "b": 0.45, "c": 0.35}  # how strongly each run's scores follow the labels
QUERIES, JUDGED, RETRIEVED = 40, 12, 15
# preval name -> ranx metric
MEASURES = {"AP": "map", "nDCG@10": "ndcg@10", "RR": "mrr"}


def write(seed: int = 23) -> None:
    rng = np.random.default_rng(seed)
    DATA.mkdir(parents=True, exist_ok=True)
    qrels, runs = [], {name: [] for name in RUNS}
    for q in range(1, QUERIES + 1):
        qid = f"q{q:02d}"
        docs = [f"d{q:02d}{i:02d}" for i in range(25)]
        labels = rng.integers(0, 3, JUDGED)
        labels[0] = max(labels[0], 1)  # every query has a relevant document
        for doc, label in zip(docs[:JUDGED], labels, strict=True):
            qrels.append(f"{qid} 0 {doc} {label}")
        gain = np.zeros(len(docs))
        gain[:JUDGED] = labels
        for name, weight in RUNS.items():
            if name == "c" and q == QUERIES:
                continue  # a query this run lacks
            # distinct integers / 100: no two scores of a query are equal, in float32 too
            noise = rng.choice(10_000, len(docs), replace=False) / 100
            score = noise + weight * 40 * gain
            score = score + np.arange(len(docs)) * 1e-3  # equal sums stay distinct
            top = np.argsort(-score, kind="stable")[:RETRIEVED]
            runs[name] += [
                f"{qid} Q0 {docs[i]} {rank} {score[i]:.3f} {name}"
                for rank, i in enumerate(top, start=1)
            ]
    (DATA / "qrels.txt").write_text("\n".join(qrels) + "\n")
    for name, lines in runs.items():
        (DATA / f"{name}.run").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="(re)write tests/data/compare")
    parser.add_argument("--permutations", type=int, default=100_000)
    args = parser.parse_args()
    if args.write:
        write()
    from importlib.metadata import version

    from ranx import Qrels, Run, compare

    qrels = Qrels.from_file(str(DATA / "qrels.txt"), kind="trec")
    runs = [Run.from_file(str(DATA / f"{name}.run"), kind="trec") for name in RUNS]
    print(f"ranx {version('ranx')}, {args.permutations} permutations")
    for test in ("student", "fisher", "tukey"):
        report = compare(qrels, runs, list(MEASURES.values()), stat_test=test,
                         n_permutations=args.permutations, make_comparable=True,
                         rounding_digits=20)  # fmt: skip
        print(f"# stat_test={test!r}")
        for name in RUNS:
            for measure, metric in MEASURES.items():
                print(f"mean {name} {measure} {report.results[name][metric]!r}")
        for i, x in enumerate(RUNS):
            for y in list(RUNS)[i + 1 :]:
                for measure, metric in MEASURES.items():
                    p = float(report.comparisons[x, y][metric]["p_value"])
                    print(f"p {x} {y} {measure} {p!r}")


if __name__ == "__main__":
    main()
