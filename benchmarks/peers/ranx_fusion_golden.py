"""Golden fused runs from ranx 0.3.21 for tests/test_fusion.py (which cannot import ranx: the
test environment does not install it).

Writes tests/data/fusion/: ``runs.parquet`` (case, run, row, query, doc, score: the input runs,
rows in the order ranx reads them), ``fused.parquet`` (case, method, norm, query, doc, score,
pos: ranx's fused run, pos its 0-based position) and ``cases.json`` (each case's weights and
parameters; where ranx's order is defined by no rule, e.g. Condorcet on a majority with ties or
cycles, the test decides from the runs).

Run it with a Python that has ranx (not the project's environment):

    python3 -m venv /work/venv-fuse && /work/venv-fuse/bin/pip install ranx==0.3.21 polars
    /work/venv-fuse/bin/python benchmarks/peers/ranx_fusion_golden.py [--seed N --out DIR]

With another `--seed` (and `--out`), the same kinds of cases drawn again: `PREVAL_FUSION_GOLDEN=DIR
pytest tests/test_fusion.py -k against_ranx` then checks preval against them (a wider check
than the committed cases).

The cases: random runs whose scores have one decimal (ties), documents missing from some runs,
queries missing from some runs (ranx refuses differing query sets: its runs are padded with
empty results, what preval does for a missing query), runs of one query, and deeper queries
(more than 15 documents: numba's argsort is unstable there, so their scores are distinct).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import polars as pl
from ranx import Run, fuse

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "fusion"
# ranx's names -> preval's
METHODS = {
    "sum": "comb_sum", "mnz": "comb_mnz", "max": "comb_max", "min": "comb_min",
    "med": "comb_med", "anz": "comb_anz", "gmnz": "comb_gmnz", "wsum": "wsum", "wmnz": "wmnz",
    "mixed": "mixed", "rrf": "rrf", "isr": "isr", "log_isr": "log_isr", "logn_isr": "logn_isr",
    "bordafuse": "bordafuse", "w_bordafuse": "weighted_bordafuse", "condorcet": "condorcet",
    "w_condorcet": "weighted_condorcet", "rbc": "rbc",
}  # fmt: skip
WEIGHTED = {"wsum", "wmnz", "mixed", "w_bordafuse", "w_condorcet"}
NORMS = [None, "min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda"]
# methods that read the order of ranx's dictionaries: after borda that order is a set's
READS_ORDER = {"rrf", "isr", "log_isr", "logn_isr", "bordafuse", "w_bordafuse", "condorcet",
               "w_condorcet", "rbc"}  # fmt: skip


def make_case(
    rng: random.Random, n_runs: int, queries: int, docs: int, depth: int, *,
    decimals: int | None, missing_query: float, negative: bool,
) -> list[list[tuple]]:  # fmt: skip
    """Runs as lists of (query, doc, score) rows, in input order."""
    runs = []
    for _ in range(n_runs):
        rows = []
        for q in range(queries):
            if q > 0 and rng.random() < missing_query:
                continue  # this run did not answer the query (query 0 is answered by all)
            n = rng.randint(1, depth)
            chosen = rng.sample(range(docs), min(n, docs))
            if decimals is None:  # distinct scores
                scores = rng.sample(range(1, 10_000), len(chosen))
                values = [s / 997 for s in scores]
            else:
                values = [round(rng.uniform(0, 3), decimals) for _ in chosen]
            if negative:
                values = [v - 2.0 for v in values]
            rows += [(f"q{q}", f"d{d:02d}", v) for d, v in zip(chosen, values, strict=True)]
        runs.append(rows)
    return runs


def to_ranx(rows: list[tuple], queries: list[str]) -> Run:
    d: dict[str, dict[str, float]] = {q: {} for q in queries}
    for q, doc, s in rows:
        d[q][doc] = float(s)
    return Run.from_dict(d)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    out = args.out
    rng = random.Random(args.seed)
    specs = [
        # name, runs, queries, docs, depth, decimals, missing_query, negative
        ("ties2", 2, 6, 12, 10, 1, 0.0, False),
        ("ties3", 3, 6, 14, 12, 1, 0.2, False),
        ("coarse3", 3, 5, 8, 8, 0, 0.0, False),
        ("missingq", 3, 8, 10, 9, 1, 0.5, False),
        ("onequery", 2, 1, 15, 15, 1, 0.0, False),
        ("negative", 2, 4, 10, 8, 1, 0.0, True),
        ("four", 4, 4, 12, 10, 1, 0.3, False),
        ("deep", 3, 3, 40, 30, None, 0.0, False),
    ]
    run_rows, fused_rows, cases = [], [], {}
    for name, n_runs, queries, docs, depth, dec, miss, neg in specs:
        runs_rows = make_case(rng, n_runs, queries, docs, depth, decimals=dec,
                              missing_query=miss, negative=neg)  # fmt: skip
        if name == "onequery":  # a second run with another query only, besides the shared one
            runs_rows[1] += [("q9", "d01", 1.0), ("q9", "d02", 0.5)]
        qids = sorted({q for rows in runs_rows for q, _, _ in rows})
        weights = [round(rng.uniform(0.1, 1.0), 2) for _ in range(n_runs)]
        params = {"gmnz": {"gamma": 0.5}, "logn_isr": {"sigma": 0.01}, "rrf": {"k": 60},
                  "rbc": {"phi": 0.8}}  # fmt: skip
        cases[name] = {
            "weights": weights,
            "params": {METHODS[k]: v for k, v in params.items()},
        }
        for r, rows in enumerate(runs_rows):
            run_rows += [(name, r, i, q, d, s) for i, (q, d, s) in enumerate(rows)]
        for ranx_name, ours in METHODS.items():
            for norm in NORMS:
                if norm == "borda" and ranx_name in READS_ORDER:
                    continue  # ranx reads a set's iteration order: nothing to compare with
                p = dict(params.get(ranx_name, {}))
                if ranx_name in WEIGHTED:
                    p["weights"] = weights
                fused = fuse([to_ranx(rows, qids) for rows in runs_rows], norm=norm,
                             method=ranx_name, params=p)  # fmt: skip
                for q in fused.run:
                    for pos, (d, s) in enumerate(fused.run[q].items()):
                        fused_rows.append((name, ours, norm or "none", q, d, float(s), pos))
        print(name, len(fused_rows), file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        run_rows, schema=["case", "run", "row", "query", "doc", "score"], orient="row"
    ).write_parquet(out / "runs.parquet")
    pl.DataFrame(
        fused_rows, schema=["case", "method", "norm", "query", "doc", "score", "pos"],
        orient="row",
    ).write_parquet(out / "fused.parquet", compression="zstd")  # fmt: skip
    (out / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
