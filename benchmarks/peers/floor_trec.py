"""The floor for TREC text files: the least work any evaluator of a run + qrels
pair must do -- read both text files and group each by query.

Usage: floor_trec.py QRELS RUN [RUN ...]   (several runs: read by one scan, grouped together)

The generated files separate fields by exactly one space, so Polars' CSV
reader (separator " ", no header) parses them; ids are read as strings (as
``preval trec`` reads them). Every field an evaluator needs is materialised:
run ``query, doc, score`` and qrels ``query, doc, label`` (the aggregation
touches each, so none is projected away); ``Q0``/``rank``/``tag``/``iter`` are
tokenised by the reader but not kept.
"""

import sys

import polars as pl

RUN = {
    "query": pl.String,
    "q0": pl.String,
    "doc": pl.String,
    "rank": pl.Int64,
    "score": pl.Float64,
    "tag": pl.String,
}
QRELS = {"query": pl.String, "iter": pl.String, "doc": pl.String, "label": pl.Int64}


def scan(path: str | list[str], schema: dict[str, pl.DataType]) -> pl.LazyFrame:
    return pl.scan_csv(path, separator=" ", has_header=False, schema=schema, quote_char=None)


qrels_path, run_path = sys.argv[1], sys.argv[2:]
run, qrels = pl.collect_all(
    [
        scan(run_path, RUN)
        .group_by("query")
        .agg(pl.len(), pl.col("doc").first(), pl.col("score").max()),
        scan(qrels_path, QRELS)
        .group_by("query")
        .agg(pl.len(), pl.col("doc").first(), pl.col("label").sum()),
    ]
)
print(run.height, qrels.height)
