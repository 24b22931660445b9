"""``preval sql``: print the SQL text of `preval.sql` (the core measures as one window-function
SELECT for DuckDB or Spark SQL), to run in a warehouse or save as a view."""

from __future__ import annotations

import argparse

from .. import options
from ..sqlgen import DIALECTS, sql
from .evaluate import DEFAULT_MEASURES

EXAMPLES = """\
examples:
  preval sql --table results --by system -m AP -m P@10 -m nDCG@10
  preval sql --table run --qrels qrels --by system --dialect spark -m map -m P_10
  duckdb -c "$(preval sql --table "'fixtures/example.parquet'" --by system -m AP)"
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "sql",
        help="print the SQL (DuckDB or Spark SQL) that computes per-query measures",
        description="Print one SELECT that computes per-query measures in DuckDB or Spark SQL\n"
        "(docs/spark-and-sql.md): the values of preval evaluate --per-query for the\n"
        "measures it covers.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--table", required=True,
                   help="table, view or parenthesised subquery: a joined table (query, doc, "
                   "score, label), or a run (query, doc, score) with --qrels")  # fmt: skip
    p.add_argument("--qrels", metavar="TABLE", help="table of judgments (query, doc, label)")
    p.add_argument("--dialect", choices=DIALECTS, default="duckdb",
                   help="SQL dialect (default: duckdb)")  # fmt: skip
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                   help=f"measure to compute, repeatable (default: "
                   f"{' '.join(DEFAULT_MEASURES)})")  # fmt: skip
    options.add_arguments(p, "sql")
    return p


def run(args: argparse.Namespace) -> int:
    text = sql(args.measures or list(DEFAULT_MEASURES), table=args.table, qrels=args.qrels,
               dialect=args.dialect, options=options.from_args(args, "sql"))  # fmt: skip
    print(text)
    return 0
