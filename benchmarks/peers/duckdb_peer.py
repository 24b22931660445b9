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
    """The per-query expression of one measure over the ranked rows of `ranked`."""
    if name == "AP":
        return "coalesce(sum(tp / rank) FILTER (WHERE rel = 1) / nullif(max(R), 0), 0)"
    if name == "RR":
        return "coalesce(max(1.0 / rank) FILTER (WHERE rel = 1), 0)"
    if name == "Rprec":
        return "coalesce(count(*) FILTER (WHERE rel = 1 AND rank <= R) / nullif(max(R), 0), 0)"
    cutoff = re.fullmatch(r"([PR])@(\d+)", name)
    if cutoff:
        kind, k = cutoff.group(1), int(cutoff.group(2))
        hits = f"count(*) FILTER (WHERE rel = 1 AND rank <= {k})"
        if kind == "P":
            return f"{hits} / {k}"
        return f"coalesce({hits} / nullif(max(R), 0), 0)"
    msg = f"duckdb peer: no SQL for measure {name!r}"
    raise SystemExit(msg)


def query_sql(path: str, measures: list[str]) -> str:
    per_query = ",\n    ".join(f'{measure_sql(m)} AS "{m}"' for m in measures)
    means = ", ".join(f'avg("{m}") AS "{m}"' for m in measures)
    return f"""
WITH rows AS (
  SELECT query, doc, score, label, (coalesce(label, 0) >= 1)::INTEGER AS rel
  FROM read_parquet('{path}')
), ranked AS (
  SELECT query, rel,
    CASE WHEN score IS NOT NULL THEN row_number() OVER (
      PARTITION BY query, score IS NULL ORDER BY CAST(score AS FLOAT) DESC, doc DESC) END AS rank,
    sum(rel) OVER (PARTITION BY query) AS R,
    max(label) OVER (PARTITION BY query) IS NOT NULL AS judged
  FROM rows
), hits AS (
  SELECT *, sum(rel) OVER (PARTITION BY query ORDER BY rank
                           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS tp
  FROM ranked WHERE rank IS NOT NULL AND judged
), per_query AS (
  SELECT query,
    {per_query}
  FROM hits GROUP BY query
  UNION ALL
  -- judged queries with nothing retrieved score 0 on every measure
  SELECT query, {", ".join("0" for _ in measures)}
  FROM ranked GROUP BY query HAVING bool_or(judged) AND count(rank) = 0
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
