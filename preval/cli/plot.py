"""``preval plot``: PR or ROC curves into a picture (the plot extra)."""

from __future__ import annotations

import argparse
import sys
import warnings

from .. import report
from ..conventions import CONVENTIONS


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    pl_ = subparsers.add_parser(
        "plot",
        help="draw PR or ROC curves, one per system or group (needs preval[plot])",
        description="Draw PR or ROC curves into a .png, .svg or .pdf file. Without --query "
        "each group is pooled into one ranking (its AUC in the legend); with --query, PR "
        "draws the mean interpolated precision at 11 recall levels (MAP in the legend).",
        epilog="examples:\n  preval plot pr fixtures/example.parquet --by system -o pr.png\n"
        "  preval plot pr fixtures/example.parquet --by system --query query -o trec.svg\n"
        "  preval plot roc fixtures/example.parquet --by system -o roc.png",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pl_.add_argument("kind", choices=("pr", "roc"))
    pl_.add_argument("input", help="joined table: .parquet, .csv or .tsv")
    pl_.add_argument("-o", "--output", required=True, help="picture: .png, .svg or .pdf")
    pl_.add_argument(
        "--by",
        action="append",
        default=[],
        metavar="COL",
        help="one curve per value of this column (repeatable)",
    )
    pl_.add_argument(
        "--query",
        default=None,
        metavar="COL",
        help="the query column: PR draws the mean over queries",
    )
    for role in ("doc", "score", "label"):
        pl_.add_argument(
            f"--{role}",
            default=role,
            metavar="COL",
            help=f"name of the {role} column (default: {role})",
        )
    pl_.add_argument("--convention", choices=tuple(CONVENTIONS), default="trec")
    pl_.add_argument("--interpolate", action="store_true", help="interpolated curves")
    pl_.add_argument("-l", "--relevance-level", type=float, default=1, metavar="N")
    pl_.add_argument("--title", default=None)
    return pl_


def run(args: argparse.Namespace) -> int:
    from ..plot import plot  # matplotlib is imported only for this command

    report.check_distinct({"-o": args.output}, [args.input])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        path = plot(args.input, args.kind, args.output, by=args.by, query=args.query,
                    doc=args.doc, score=args.score, label=args.label,
                    convention=args.convention, interpolate=args.interpolate,
                    relevance_level=args.relevance_level, title=args.title)  # fmt: skip
    for warning in caught:  # ours only: polars' own warnings are not the user's business
        if str(warning.message).startswith("nothing to plot"):
            print(f"preval: warning: {warning.message}", file=sys.stderr)
    print(path)  # the picture's path on stdout, for a pipeline's next step
    return 0
