"""preval.spark.fuse (preval/spark_fusion.py): Spark DataFrames fused inside Spark equal the
local fusion of the same runs (the reference: `preval.fusion.apply` on the stacked runs). One
local[2] session."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from preval.errors import InputError
from preval.fusion import core, learn
from tests.spark_session import spark_session

pytest.importorskip("pyspark", reason="pyspark is not installed (preval[spark])")
from preval import spark as pspark
from preval import spark_fusion


@pytest.fixture(scope="module")
def spark():
    return spark_session()


def _runs(seed: int = 0, runs: int = 3, queries: int = 20, pool: int = 30):
    """Tie-free runs (distinct scores in each run and query): Spark promises no row order."""
    rng = np.random.default_rng(seed)
    frames = []
    for r in range(runs):
        rows = []
        for q in range(queries - r):  # the last queries are in some runs only
            n = int(rng.integers(1, pool))
            docs = rng.choice(pool, size=n, replace=False)
            for s, d in zip(rng.permutation(n), docs, strict=True):
                rows.append((f"q{q:02d}", f"d{d:02d}", float(s) + 0.5 * rng.random()))
        frames.append(pl.DataFrame(rows, schema=["qid", "docno", "sim"], orient="row"))
    qrels = pl.DataFrame(
        [(f"q{q:02d}", f"d{d:02d}", int(rng.integers(0, 3))) for q in range(queries)
         for d in rng.choice(pool, size=8, replace=False)],
        schema=["query", "doc", "label"], orient="row",
    )  # fmt: skip
    return frames, qrels


def _local(frames, method, **kw):
    renamed = [f.rename({"qid": "query", "docno": "doc", "sim": "score"}) for f in frames]
    params = kw.pop("params", {})
    fused = core.apply(core.stack(renamed), method, params=params, **kw)
    return fused.collect().rename({"query": "qid", "doc": "docno", "score": "sim"})


def _spark(spark, frames, method, **kw):
    sdfs = [spark.createDataFrame(f.to_arrow()) for f in frames]
    out = pspark.fuse(sdfs, method, query="qid", doc="docno", score="sim", num_buckets=3, **kw)
    frame = pl.from_arrow(out.toArrow())
    assert isinstance(frame, pl.DataFrame)
    return frame.with_columns(pl.col("rank").cast(pl.UInt32)).sort("qid", "rank")


@pytest.mark.parametrize(
    ("method", "kw"),
    [
        ("rrf", {}),
        ("wsum", {"weights": (0.2, 0.5, 0.3)}),
        ("comb_mnz", {"norm": "zmuv"}),
        ("rbc", {"params": {"phi": 0.9}}),
    ],
)
def test_spark_equals_local(spark, method, kw):
    frames, _ = _runs()
    local = _local(frames, method, **kw)
    spark_kw = {**{k: v for k, v in kw.items() if k != "params"}, **kw.get("params", {})}
    got = _spark(spark, frames, method, **spark_kw)
    assert got.columns == ["qid", "docno", "sim", "rank"]
    assert got.select("qid", "docno", "rank").equals(local.select("qid", "docno", "rank"))
    assert (got["sim"] - local["sim"]).abs().max() < 1e-12


def test_spark_supervised(spark):
    frames, qrels = _runs(1)
    train = [f.rename({"qid": "query", "docno": "doc", "sim": "score"}) for f in frames]
    learned = learn(train, qrels, "probfuse", n_segments=4)
    local = _local(frames, "probfuse", learned=learned.lazy(), params={"n_segments": 4})
    got = _spark(spark, frames, "probfuse", learned=learned, n_segments=4)
    assert got.select("qid", "docno", "rank").equals(local.select("qid", "docno", "rank"))
    assert (got["sim"] - local["sim"]).abs().max() < 1e-12
    with pytest.raises(InputError, match="learned"):
        _spark(spark, frames, "probfuse")


def test_spark_bad_column(spark):
    frames, _ = _runs(2)
    sdfs = [spark.createDataFrame(f.to_arrow()) for f in frames]
    with pytest.raises(InputError, match="missing column 'query'"):
        spark_fusion.fuse(sdfs, "rrf")


def test_spark_ties_trec_equals_local_on_tied_scores(spark):
    # scores rounded to integers: many ties, which Spark's row order would break at random;
    # ties="trec" orders them by doc id, so Spark equals the local fusion of shuffled rows
    frames, _ = _runs(seed=4)
    tied = [f.with_columns(pl.col("sim").floor()) for f in frames]
    shuffled = [f.sample(fraction=1.0, shuffle=True, seed=1) for f in tied]
    renamed = [f.rename({"qid": "query", "docno": "doc", "sim": "score"}) for f in shuffled]
    local = core.apply(core.stack(renamed, ties="trec"), "rrf").collect()
    local = local.rename({"query": "qid", "doc": "docno", "score": "sim"})
    got = _spark(spark, tied, "rrf", ties="trec")
    assert got.equals(local)
    with pytest.raises(InputError, match="ties must be one of"):
        pspark.fuse([spark.createDataFrame(tied[0].to_arrow())], "rrf", ties="doc")
