"""Generate a synthetic ranked-retrieval data set for benchmarks.

Usage::

    python benchmarks/generate.py --rows 1000000 --docs-per-query 100 \
        --out data.parquet [--seed 0] [--int-ids] [--ranked] [--format parquet|trec]

``--format parquet`` (default) writes one joined table with columns
``query, doc, score, label``. ``--format trec`` writes the same data as a TREC
run file ``OUT.run`` (``qid Q0 docno rank score tag``) and a qrels file
``OUT.qrels`` (``qid 0 docno rel``); a ``.parquet`` suffix on OUT is dropped.

``--order join`` writes the same rows in random order, as a join of a run with its qrels or a
Spark job's part files leave them (each row's position drawn at random, so a query's rows are
spread over the whole file); in TREC files too, each line keeping its rank in its query. The
shuffle is external: rows go to random buckets on disk first, then each bucket is shuffled in
memory, so memory stays bounded at any size.

Data: ``ceil(rows / docs-per-query)`` queries with ``docs-per-query`` docs each
(the last query may be shorter); ids are strings ``q0000123`` / ``d0004567``
(or Int64 with ``--int-ids``); labels 0/1/2 with P = 0.90/0.07/0.03 (~10%
relevant); scores are normal noise plus a relevance bonus, rounded to 3
decimals, so ties occur. Doc ids are unique within a query and shared across
queries. Everything is vectorised (numpy + polars) and written in chunks of
whole queries, so memory stays bounded.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

DOC_UNIVERSE = 10_000_000  # doc ids d0000000 .. d9999999
LABEL_CUTS = (0.90, 0.97)  # u > 0.90 -> label >= 1, u > 0.97 -> label 2
RELEVANCE_GAIN = 0.8  # score bonus per relevance grade


def chunk_frame(
    rng: np.random.Generator, start: int, stop: int, dpq: int, int_ids: bool
) -> pl.DataFrame:
    """Rows ``start .. stop-1`` of the data set (start is a multiple of dpq)."""
    i = np.arange(start, stop, dtype=np.int64)
    q = i // dpq
    j = i % dpq
    # unique within a query: 104729 is prime and coprime with DOC_UNIVERSE
    doc = (q * 7919 + j * 104729) % DOC_UNIVERSE
    u = rng.random(stop - start)
    label = (u > LABEL_CUTS[0]).astype(np.int64) + (u > LABEL_CUTS[1]).astype(np.int64)
    score = np.round(rng.standard_normal(stop - start) + RELEVANCE_GAIN * label, 3)
    df = pl.DataFrame({"query": q, "doc": doc, "score": score, "label": label})
    if not int_ids:
        df = df.with_columns(
            pl.concat_str(pl.lit("q"), pl.col("query").cast(pl.String).str.zfill(7)).alias("query"),
            pl.concat_str(pl.lit("d"), pl.col("doc").cast(pl.String).str.zfill(7)).alias("doc"),
        )
    return df


def chunks(rows: int, dpq: int, seed: int, int_ids: bool, chunk_rows: int, ranked: bool = False):
    rng = np.random.default_rng(seed)
    step = max(1, chunk_rows // dpq) * dpq  # whole queries per chunk
    for start in range(0, rows, step):
        df = chunk_frame(rng, start, min(start + step, rows), dpq, int_ids)
        yield rank(df) if ranked else df


def rank(df: pl.DataFrame) -> pl.DataFrame:
    """Rows in trec_eval's ranking order within each query: score descending, then doc id
    descending (as a TREC run or a ranking pipeline writes them). Same data, other row order."""
    return df.sort(["query", "score", "doc"], descending=[False, True, True])


def write_parquet(out: Path, frames, row_group_rows: int) -> None:
    import pyarrow.parquet as pq

    writer = None
    try:
        for df in frames:
            table = df.to_arrow(compat_level=pl.CompatLevel.oldest())
            if writer is None:
                writer = pq.ParquetWriter(out, table.schema, compression="zstd")
            writer.write_table(table, row_group_size=row_group_rows)
    finally:
        if writer is not None:
            writer.close()


def with_ranks(frames):
    """`frames` (whole queries each) ranked, with each row's TREC rank (1, 2, ...) in its
    query: taken before any shuffle, as a run file's ranks are its ranking's."""
    for df in frames:
        yield rank(df).with_columns((pl.int_range(pl.len()).over("query") + 1).alias("rank"))


def write_trec(run_path: Path, qrels_path: Path, frames, tag: str) -> None:
    """A run line and a qrels line for each row of `frames` (`with_ranks`), in their order."""
    with open(run_path, "wb") as run_f, open(qrels_path, "wb") as qrels_f:
        for ranked in frames:
            ranked.select(
                "query",
                pl.lit("Q0").alias("q0"),
                "doc",
                "rank",
                "score",
                pl.lit(tag).alias("tag"),
            ).write_csv(run_f, separator=" ", include_header=False, float_precision=3)
            ranked.select("query", pl.lit(0).alias("iter"), "doc", "label").write_csv(
                qrels_f, separator=" ", include_header=False
            )


def join_order(frames, rows: int, seed: int, chunk_rows: int, folder: Path):
    """`frames`' rows in random order: scattered to random buckets on disk, then each bucket
    shuffled in memory (a bucket has about `chunk_rows` rows)."""
    buckets = max(1, -(-rows // chunk_rows))
    rng = np.random.default_rng(seed + 1)
    for i, df in enumerate(frames):
        df = df.with_columns(_bucket=pl.Series(rng.integers(0, buckets, df.height)))
        for (b,), part in df.partition_by("_bucket", as_dict=True, include_key=False).items():
            part.write_ipc(folder / f"{b:06d}-{i:06d}.ipc")
    for b in range(buckets):
        files = sorted(folder.glob(f"{b:06d}-*.ipc"))
        if files:
            df = pl.scan_ipc(files).collect()
            for f in files:
                f.unlink()
            yield df.sample(fraction=1.0, shuffle=True, seed=seed + b)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate a synthetic joined table (or TREC run + qrels)."
    )
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--docs-per-query", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--int-ids", action="store_true", help="Int64 query/doc ids instead of strings"
    )
    parser.add_argument("--format", choices=["parquet", "trec"], default="parquet")
    parser.add_argument(
        "--ranked",
        action="store_true",
        help="Parquet rows in ranking order within each query (TREC runs always are)",
    )
    parser.add_argument(
        "--chunk-rows",
        type=int,
        default=2_000_000,
        help="rows generated per chunk (rounded to whole queries)",
    )
    parser.add_argument("--row-group-rows", type=int, default=1_000_000)
    parser.add_argument(
        "--order",
        choices=["grouped", "join"],
        default="grouped",
        help="grouped by query (default) or join order: each row's position drawn at random",
    )
    parser.add_argument("--tag", default="synthetic", help="TREC run tag")
    args = parser.parse_args(argv)
    if args.rows <= 0 or args.docs_per_query <= 0:
        parser.error("--rows and --docs-per-query must be positive")
    if args.docs_per_query > DOC_UNIVERSE:
        parser.error(f"--docs-per-query must be <= {DOC_UNIVERSE}")

    t0 = time.perf_counter()
    frames = chunks(
        args.rows, args.docs_per_query, args.seed, args.int_ids, args.chunk_rows, args.ranked
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.format == "parquet":
        written = [args.out]
    else:
        base = args.out.with_suffix("") if args.out.suffix == ".parquet" else args.out
        written = [base.with_name(base.name + ".run"), base.with_name(base.name + ".qrels")]
        frames = with_ranks(frames)

    def write(frames) -> None:
        if args.format == "parquet":
            write_parquet(args.out, frames, args.row_group_rows)
        else:
            write_trec(*written, frames, args.tag)

    if args.order == "join":
        import tempfile

        with tempfile.TemporaryDirectory(dir=args.out.parent, prefix=".shuffle-") as tmp:
            write(join_order(frames, args.rows, args.seed, args.chunk_rows, Path(tmp)))
    else:
        write(frames)
    elapsed = time.perf_counter() - t0
    n_queries = -(-args.rows // args.docs_per_query)
    for p in written:
        print(f"wrote {p} ({p.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    print(f"{args.rows} rows, {n_queries} queries in {elapsed:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
