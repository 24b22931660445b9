"""Golden fused scores of ranx's supervised fusion methods, for tests/test_fusion_supervised.py.

Usage (ranx 0.3.21, with numpy, polars and pyarrow, in a venv of its own)::

    python benchmarks/peers/ranx_fusion_supervised_golden.py [--seed N --out DIR]

Another `--seed` draws another case into `--out`; `PREVAL_FUSION_SUPERVISED_GOLDEN=DIR pytest
tests/test_fusion_supervised.py` then checks preval against it.

Writes tests/data/fusion_supervised/: the case, made with numpy's seeded generator
(``train_runs.parquet`` and ``test_runs.parquet``: run, query, doc, score; ``qrels.parquet``:
query, doc, label), and ``expected.parquet``: method, param (the parameter's value, 0 when the
method has none), query, doc, score, ranx's fused scores of the test runs (min-max normalised,
ranx's default) with what ranx learned from the training runs and qrels.

The case: 3 runs; 12 training queries, every one judged (labels 0, 1, 2; some queries with no
relevant document) and answered by every run (ranx pairs runs and qrels by position: it
requires the same queries); 10 test queries. Each run returns a random subset of a pool of 80
documents per query (1 to 45 in training, 1 to 60 at test time: deeper than training, past
SegFuse's first boundaries), so documents are missing from some runs. Scores are distinct
within a run and query: ranx sorts with an unstable quicksort, so ties have no defined order.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl
from ranx import Qrels, Run, fuse
from ranx.fusion import (
    bayesfuse_train,
    mapfuse_train,
    posfuse_train,
    probfuse_train,
    segfuse_train,
    slidefuse_train,
)

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "fusion_supervised"
RUNS, TRAIN_QUERIES, TEST_QUERIES, POOL = 3, 12, 10, 80
PROBFUSE_SEGMENTS = (1, 3, 10, 25)
SLIDEFUSE_WINDOWS = (1, 3, 10)


def make_runs(rng: np.random.Generator, prefix: str, queries: int, depth: int) -> pl.DataFrame:
    rows = []
    for r in range(RUNS):
        for q in range(1, queries + 1):
            n = int(rng.integers(1, depth + 1))
            docs = rng.choice(POOL, size=n, replace=False)
            scores = rng.permutation(n) + rng.random(n) * 0.5  # distinct
            for d, s in zip(docs, scores, strict=True):
                rows.append((r, f"{prefix}{q:02d}", f"d{d:02d}", float(s)))
    return pl.DataFrame(rows, schema=["run", "query", "doc", "score"], orient="row")


def make_qrels(rng: np.random.Generator, queries: int) -> pl.DataFrame:
    rows = []
    for q in range(1, queries + 1):
        docs = rng.choice(POOL, size=30, replace=False)
        none_relevant = q % 5 == 0
        for d in docs:
            label = 0 if none_relevant else int(rng.choice([0, 0, 1, 2]))
            rows.append((f"t{q:02d}", f"d{d:02d}", label))
    return pl.DataFrame(rows, schema=["query", "doc", "label"], orient="row")


def to_ranx(frame: pl.DataFrame) -> list[Run]:
    runs = []
    for r in range(RUNS):
        d: dict[str, dict[str, float]] = {}
        for q, doc, s in frame.filter(pl.col("run") == r).select("query", "doc", "score").rows():
            d.setdefault(q, {})[doc] = s
        runs.append(Run(d, name=f"r{r}"))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args()
    out = args.out
    rng = np.random.default_rng(args.seed)
    train = make_runs(rng, "t", TRAIN_QUERIES, 45)
    test = make_runs(rng, "q", TEST_QUERIES, 60)
    qrels = make_qrels(rng, TRAIN_QUERIES)
    judgments: dict[str, dict[str, int]] = {}
    for q, doc, label in qrels.rows():
        judgments.setdefault(q, {})[doc] = label
    ranx_qrels = Qrels(judgments)
    train_runs, test_runs = to_ranx(train), to_ranx(test)

    cases = [
        ("posfuse", 0, {"probs": posfuse_train(ranx_qrels, train_runs)}),
        ("segfuse", 0, {"probs": segfuse_train(ranx_qrels, train_runs)}),
        ("bayesfuse", 0, {"log_odds": bayesfuse_train(ranx_qrels, train_runs)}),
        ("mapfuse", 0, {"map_scores": mapfuse_train(ranx_qrels, train_runs)}),
    ]
    for s in PROBFUSE_SEGMENTS:
        cases.append(("probfuse", s, {"probs": probfuse_train(ranx_qrels, train_runs, s)}))
    slide = slidefuse_train(ranx_qrels, train_runs)
    for w in SLIDEFUSE_WINDOWS:
        cases.append(("slidefuse", w, {"probs": slide, "w": w}))

    rows = []
    for name, param, params in cases:
        fused = fuse(test_runs, norm="min-max", method=name, params=params)
        for q, docs in fused.to_dict().items():
            for doc, score in docs.items():
                rows.append((name, param, q, doc, float(score)))
    expected = pl.DataFrame(
        rows, schema=["method", "param", "query", "doc", "score"], orient="row"
    ).sort("method", "param", "query", "doc")

    out.mkdir(parents=True, exist_ok=True)
    train.write_parquet(out / "train_runs.parquet")
    test.write_parquet(out / "test_runs.parquet")
    qrels.write_parquet(out / "qrels.parquet")
    expected.write_parquet(out / "expected.parquet")
    print(expected.group_by("method", "param").len().sort("method", "param"))


if __name__ == "__main__":
    main()
