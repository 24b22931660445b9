"""``preval power``: power and query-set size of the paired t-test between the systems of the
input, evaluated as ``preval compare`` evaluates it, or of a per-query table (the stats
extra); print a table, write it to a file."""

from __future__ import annotations

import argparse
import sys

from .. import report
from . import common
from .compare import DEFAULT_MEASURES, add_input_arguments, per_query_of

EXAMPLES = """\
examples:
  preval power fixtures/example.parquet -m AP
  preval power fixtures/example.parquet -m AP --delta 0.02 --power 0.9 --baseline bm25
  preval power bm25.run dense.run --qrels qrels.txt -m AP --delta 0.02
  preval power per_query.parquet --per-query-table -m AP --delta 0.02 --sd 0.25 -o power.csv
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "power",
        help="power and query-set size of the paired t-test (needs preval[stats])",
        description="For every pair of systems of INPUT (evaluated as preval compare evaluates "
        "it, or a per-query table with --per-query-table): the smallest difference a paired "
        "two-sided t-test over these queries detects, and with --delta the queries needed to "
        "detect that difference.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_arguments(
        p, "measure, repeatable (default: AP, P@10, nDCG@10; with --per-query-table every rate)"
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
    common.add_engine_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    common.refuse_parquet(args.format, "-o power.parquet")
    args.output = report.printed(args.output)  # (-: the table printed on stdout)
    report.check_targets({"--output": args.output}, [args.input, *args.runs, args.qrels])
    from ..power import analysis  # numpy and scipy: only here

    per_query, baseline, notes, _ = per_query_of(args)
    for note in notes:
        print(note, file=sys.stderr)
    measures = args.measures
    if measures is None and not args.per_query_table:
        measures = DEFAULT_MEASURES
    table = analysis(
        per_query,
        measures=measures,
        by=args.by,
        query=args.query,
        baseline=baseline,
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
