"""``preval agreement``: do two rankings of the systems agree (Kendall's tau, tau_AP, the
swapped pairs), and how many pairs of systems does a measure tell apart (discriminative
power, ``--power``)? Reads what ``preval compare`` reads, through the same input stage."""

from __future__ import annotations

import argparse
import sys

import polars as pl

from .. import options, report
from ..errors import InputError
from ..meta_evaluation import agreement, discriminative_power
from ..significance import MISSING, TESTS
from . import common
from .compare import add_input_arguments, per_query_of

EXAMPLES = """\
examples:
  preval agreement fixtures/example.parquet -m AP -m nDCG@10 -m P@10
  preval agreement per_query.parquet --per-query-table -m AP --against shallow_per_query.parquet
  preval agreement run.csv --qrels full_qrels.csv --against-qrels pooled_qrels.csv -m AP
  preval agreement fixtures/example.parquet -m AP -m P@10 --power --resamples 1000
"""
FORMATS = ("table", "csv", "json")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "agreement",
        help="rank correlation of two rankings of the systems (Kendall's tau, tau_AP) and "
        "discriminative power (--power: needs preval[stats])",
        description="Rank the systems of INPUT by several measures (the first -m against each "
        "of the others), or by one measure on two tables (--against) or two sets of judgments "
        "(--against-qrels), and report Kendall's tau-b, tau_AP (the first ranking as the "
        "reference), tau_AP-b and the pairs the rankings order differently. With --power, the "
        "discriminative power of each measure: the share of system pairs a paired test finds "
        "significant at --alpha (Sakai 2006), and the ASL curve (--curve).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_arguments(
        p,
        "measure, repeatable: the first ranks the systems for the others "
        "to be compared with (default: AP, P@10, nDCG@10)",
    )
    group = p.add_argument_group("the second ranking (default: the other measures of INPUT)")
    group.add_argument("--against", metavar="TABLE", help="a per-query or summary table (a "
                       "system column and the measure's column) ranking the same systems: "
                       "another query set or judgments")  # fmt: skip
    group.add_argument("--against-qrels", metavar="QRELS", help="other judgments: INPUT "
                       "evaluated with them ranks the systems a second time")  # fmt: skip
    power = p.add_argument_group("discriminative power (--power)")
    power.add_argument("--power", action="store_true", help="discriminative power of each "
                       "measure instead of the rank correlation")  # fmt: skip
    power.add_argument("--test", choices=TESTS, default="randomization",
                       help="paired test (default: randomization)")  # fmt: skip
    power.add_argument("--alpha", type=float, default=0.05,
                       help="significance level (default 0.05)")  # fmt: skip
    options.add_arguments(power, "cli-resampling")  # --resamples, --seed: compare's
    power.add_argument("--missing", choices=MISSING, default="zero",
                       help="a query a system lacks: 0 for it (default) or dropped")  # fmt: skip
    power.add_argument("--curve", metavar="PATH", help="write the ASL curve (every pair's "
                       "p-value, sorted, against its rank) to a file")  # fmt: skip
    p.add_argument("--format", choices=FORMATS, default="table", help="stdout (default: table)")
    p.add_argument("-o", "--output", metavar="PATH", help="write the statistics (or the "
                   "discriminative power) to a file, by its suffix: .parquet, .csv, .tsv, "
                   ".json, .ndjson, .txt")  # fmt: skip
    p.add_argument("--swapped", metavar="PATH", help="write the swapped pairs to a file")
    common.add_engine_arguments(p)
    p.set_defaults(baseline=None)
    return p


def run(args: argparse.Namespace) -> int:
    paths = [args.input, *args.runs]
    args.output = report.printed(args.output)  # (-: the table printed on stdout)
    outputs = {"--output": args.output, "--swapped": args.swapped, "--curve": args.curve}
    report.check_targets(outputs, [*paths, args.qrels, args.against, args.against_qrels])
    if args.curve and not args.power:  # (an output asked for is written, or refused)
        msg = "--curve writes the ASL curve of --power: add --power, or drop --curve"
        raise InputError(msg)
    if args.swapped and args.power:
        msg = "--swapped writes the rank correlation's swapped pairs: --power has none; drop one"
        raise InputError(msg)
    if args.power and (args.against or args.against_qrels):
        msg = "--power measures each -m on INPUT alone: drop --against / --against-qrels"
        raise InputError(msg)
    if args.against and args.against_qrels:
        msg = "give one second ranking: --against TABLE or --against-qrels QRELS"
        raise InputError(msg)
    resampling = options.from_args(args, "cli-resampling").intervals  # checked before any work
    per_query = _per_query(args)
    measures = args.measures or ["AP", "P@10", "nDCG@10"]
    if args.power:
        return _power(args, per_query, measures, resampling)
    second = None
    if args.against:
        second = args.against  # (a path: its messages name the file)
    elif args.against_qrels:
        if args.per_query_table:
            msg = "--against-qrels evaluates INPUT again: INPUT cannot be a per-query table"
            raise InputError(msg)
        second = _per_query(args, qrels=args.against_qrels)
    if second is None and len(measures) < 2:
        msg = (
            "one measure ranks the systems once: give a second -m, or a second ranking with "
            "--against TABLE or --against-qrels QRELS"
        )
        raise InputError(msg)
    if second is not None:
        pairs = [agreement(per_query, second, measure=m, system=args.by, query=args.query)
                 for m in measures]  # fmt: skip
    else:
        pairs = [agreement(per_query, measure=measures[0], other=m, system=args.by,
                           query=args.query) for m in measures[1:]]  # fmt: skip
    statistics = pl.concat([p.statistics for p in pairs])
    swapped = pl.concat(
        [
            p.swapped.select(pl.lit(s).alias("measure_a"), pl.lit(o).alias("measure_b"), pl.all())
            for p, (s, o) in zip(pairs, _names(measures, second is not None), strict=True)
        ]
    )
    statistics, swapped = pl.collect_all([statistics, swapped])
    with report.Outputs() as files:
        if args.output:
            files.write(statistics, args.output)
        if args.swapped:
            files.write(swapped, args.swapped)
    if args.format != "table":
        sys.stdout.write(report.render(statistics, args.format))
        return 0
    text = report.table(statistics) + "\n"
    if swapped.height:
        text += f"\nswapped pairs ({swapped.height}: first above second in a, below it in b):\n"
        text += report.table(swapped) + "\n"
    else:
        text += "\nno swapped pairs: the rankings order every pair alike (or tie it)\n"
    sys.stdout.write(text)
    return 0


def _names(measures: list[str], against: bool) -> list[tuple[str, str]]:
    if against:
        return [(m, m) for m in measures]
    return [(measures[0], m) for m in measures[1:]]


def _per_query(args: argparse.Namespace, qrels: str | None = None) -> pl.DataFrame | pl.LazyFrame:
    """INPUT's per-query table, as preval compare reads it; its notes printed."""
    per_query, _, notes, _ = per_query_of(args, qrels)
    for note in notes:
        print(note, file=sys.stderr)
    return per_query


def _power(args: argparse.Namespace, per_query, measures: list[str], resampling) -> int:
    result = discriminative_power(
        per_query, measures=measures, test=args.test, alpha=args.alpha,
        n_resamples=resampling.resamples, seed=resampling.seed, by=args.by, query=args.query,
        missing=args.missing,
    )  # fmt: skip
    summary, curve = pl.collect_all([result.summary, result.curve])
    with report.Outputs() as files:
        if args.output:
            files.write(summary, args.output)
        if args.curve:
            files.write(curve, args.curve)
    text = report.table(summary) + "\n" if args.format == "table" else None
    sys.stdout.write(text if text is not None else report.render(summary, args.format))
    return 0
