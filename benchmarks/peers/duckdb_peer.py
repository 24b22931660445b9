"""DuckDB peer: the joined Parquet table evaluated by window-function SQL, what a user who
works in a warehouse writes by hand.

Usage: duckdb_peer.py DATA.parquet MEASURE [MEASURE ...] [--summary OUT.csv]
                      [--memory-limit 4GB] [--threads N]

MEASURE is one of AP, RR, Rprec, P@k (any k), R@k. Semantics are trec_eval's, as preval's:
documents ranked by score as a 32-bit float, descending, then doc id descending; a null score
is a document that was not retrieved (it counts toward R); R = documents with label >= 1;
a query without a relevant document scores 0; the means are over the table's queries with a
judgment.
"""

from __future__ import annotations

import re

import duckdb
from common import arguments, report


def measure_sql(name: str) -> str:
    """The per-query expression of one measure over the rows of `ranked` (one query's rows in
    a GROUP BY: `pos` the rank, `tp` the relevant documents down to it, `R` the query's)."""
    hit = "rel = 1 AND ret"
    if name == "AP":
        return f"coalesce(sum(tp / pos) FILTER (WHERE {hit}) / nullif(max(R), 0), 0)"
    if name == "RR":
        return f"coalesce(max(1.0 / pos) FILTER (WHERE {hit}), 0)"
    if name == "Rprec":
        return f"coalesce(count(*) FILTER (WHERE {hit} AND pos <= R) / nullif(max(R), 0), 0)"
    cutoff = re.fullmatch(r"([PR])@(\d+)", name)
    if cutoff:
        kind, k = cutoff.group(1), int(cutoff.group(2))
        hits = f"count(*) FILTER (WHERE {hit} AND pos <= {k})"
        if kind == "P":
            return f"{hits} / {k}"
        return f"coalesce({hits} / nullif(max(R), 0), 0)"
    msg = f"duckdb peer: no SQL for measure {name!r}"
    raise SystemExit(msg)


def query_sql(path: str, measures: list[str]) -> str:
    """One sort per query, as a careful user writes it: a single ordered window gives both the
    rank and the running count of relevant documents (unretrieved rows sort last, so a
    retrieved row's position is its rank), R is the same partition's sum, and one GROUP BY
    computes every measure; judged queries that retrieved nothing are in it with 0s."""
    per_query = ",\n    ".join(f'{measure_sql(m)} AS "{m}"' for m in measures)
    means = ", ".join(f'avg("{m}") AS "{m}"' for m in measures)
    return f"""
WITH rows AS (
  SELECT query, doc, score, label, (coalesce(label, 0) >= 1)::INTEGER AS rel
  FROM read_parquet('{path}')
), ranked AS (
  SELECT query, rel, label, score IS NOT NULL AS ret,
    row_number() OVER w AS pos,
    sum(rel) OVER w AS tp,
    sum(rel) OVER (PARTITION BY query) AS R
  FROM rows
  WINDOW w AS (PARTITION BY query ORDER BY CAST(score AS FLOAT) DESC NULLS LAST, doc DESC
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
), per_query AS (
  SELECT query,
    {per_query}
  FROM ranked GROUP BY query
  HAVING bool_or(label IS NOT NULL)
)
SELECT {means} FROM per_query
"""


def main() -> None:
    def extra(parser) -> None:
        parser.add_argument("--memory-limit", default=None)
        parser.add_argument("--threads", type=int, default=None)

    args = arguments("data", extra=extra)
    con = duckdb.connect()
    if args.memory_limit:
        con.execute(f"SET memory_limit = '{args.memory_limit}'")
    if args.threads:
        con.execute(f"SET threads = {args.threads}")
    row = con.execute(query_sql(args.data, args.measures)).fetchone()
    report(list(zip(args.measures, map(float, row), strict=True)), args.summary)


if __name__ == "__main__":
    main()
