"""``preval power``: power and query-set size of the paired t-test between the systems of a
per-query table (the stats extra); print a table, write it to a file."""

from __future__ import annotations

import argparse
import sys

from .. import report
from . import common

EXAMPLES = """\
examples:
  preval evaluate fixtures/example.parquet --by system -m AP --per-query per_query.parquet
  preval power per_query.parquet --measure AP
  preval power per_query.parquet --measure AP --delta 0.02 --power 0.9 --baseline bm25
  preval power per_query.parquet --measure AP --delta 0.02 --sd 0.25 -o power.csv
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "power",
        help="power and query-set size of the paired t-test (needs preval[stats])",
        description="For every pair of systems of a per-query table (as evaluate --per-query "
        "writes): the smallest difference a paired two-sided t-test over these queries "
        "detects, and with --delta the queries needed to detect that difference.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "per_query",
        metavar="PER_QUERY",
        help="a per-query table (.parquet, .csv ...): a system column, a query "
        "column and one column per measure",
    )
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        dest="measures",
        metavar="MEASURE",
        help="measure column, repeatable (default: every rate)",
    )
    p.add_argument(
        "--by", default="system", metavar="COL", help="the system column (default: system)"
    )
    p.add_argument(
        "--query", default="query", metavar="COL", help="the query column (default: query)"
    )
    p.add_argument(
        "--baseline", metavar="NAME", help="pair every system with this one (default: every pair)"
    )
    p.add_argument(
        "--alpha", type=float, default=0.05, help="the test's level, two-sided (default 0.05)"
    )
    p.add_argument(
        "--power", type=float, default=0.8, help="the power asked for, 1 - beta (default 0.8)"
    )
    p.add_argument(
        "--delta", type=float, metavar="D", help="a difference to detect: adds the queries needed"
    )
    p.add_argument(
        "--sd",
        type=float,
        metavar="S",
        help="assume this standard deviation of "
        "the per-query differences instead of the observed one",
    )
    p.add_argument(
        "--format",
        type=common.stdout_format,
        default="table",
        metavar="{table,csv,json}",
        help="stdout's format (default: table)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="also write the table to a file "
        "(.parquet, .csv, .tsv, .json, .ndjson, .txt: by its suffix)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    common.refuse_parquet(args.format, "-o power.parquet")
    report.check_targets({"--output": args.output}, [args.per_query])
    from ..power import analysis  # numpy and scipy: only here

    table = analysis(
        args.per_query,
        measures=args.measures,
        by=args.by,
        query=args.query,
        baseline=args.baseline,
        alpha=args.alpha,
        power=args.power,
        delta=args.delta,
        sd=args.sd,
    ).collect()
    if args.output:
        report.write(table, args.output)
    given = f"given sd {args.sd:g}" if args.sd is not None else "the observed sd of differences"
    print(
        f"preval: paired two-sided t-test, alpha {args.alpha:g}, power {args.power:g}, "
        f"{given}; detectable: the smallest difference detected over the queries compared",
        file=sys.stderr,
    )
    sys.stdout.write(report.render(table, args.format))
    return 0
