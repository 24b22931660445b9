"""``preval plot``: PR or ROC curves into a picture (the plot extra), from the inputs every
command reads: a joined table, or a run (a table or TREC run files) with its qrels."""

from __future__ import annotations

import argparse
import sys
import warnings

from .. import options, report
from . import common

EXAMPLES = """\
examples:
  preval plot pr fixtures/example.parquet --by system -o pr.png
  preval plot roc bm25.run hybrid.run.gz --qrels qrels.txt -o roc.svg
  preval plot pr fixtures/example_run.csv --qrels fixtures/example_qrels.csv --by system -o pr.pdf
  preval plot roc fixtures/example.parquet --by system --pool -o pooled.png
"""

DESCRIPTION = """\
Draw PR or ROC curves, one per system or group, into a .png, .svg or .pdf file.

With a query column (ranked retrieval) each curve is the mean over the queries:
  pr   the TREC recall-precision graph: the mean over queries of the interpolated precision
       at recall 0, 0.1, ..., 1 (IPrec@r), MAP in the legend;
  roc  the vertical average of the queries' ROC curves (Fawcett 2006): each query's true
       positive rate at false positive rates 0, 0.01, ..., 1, linear between its operating
       points, averaged over the queries with relevant and non-relevant documents; their
       mean AUC-ROC in the legend.
The queries are those --queries names (default judged: every judged query, as trec_eval -c).
--pool (or an input without a query column) pools each group's rows into one ranking
instead, its AUC-PR or AUC-ROC in the legend.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "plot",
        help="draw PR or ROC curves, one per system or group (needs preval[plot])",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "kind",
        choices=("pr", "roc"),
        help="pr: precision against recall; roc: true positive rate against false positive rate",
    )
    p.add_argument(
        "input",
        help="joined table or run: .parquet, .pq, .csv, .tsv, .tab, or a TREC run file (any "
        "other suffix, .gz too)",
    )
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="more TREC run files: each file is one system, one curve",
    )
    p.add_argument(
        "--qrels",
        help="judgments (query, doc, label), a table or a TREC qrels file; INPUT is then a run",
    )
    p.add_argument("-o", "--output", required=True, help="picture: .png, .svg or .pdf")
    options.add_arguments(p, "cli-plot")
    p.add_argument(
        "--pool",
        action="store_true",
        help="pool each group's rows into one ranking (its AUC in the legend) instead of the "
        "mean over queries",
    )
    p.add_argument(
        "--interpolate",
        action="store_true",
        help="interpolated curves (pooled curves; each query's ROC curve before the mean; "
        "the mean PR curve is interpolated precision already)",
    )
    p.add_argument("--title", default=None, help="the figure's title (default: none)")
    common.add_engine_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .. import plot as pictures  # matplotlib is imported only for this command

    opts = options.from_args(args, "cli-plot")
    inputs = common.read_inputs([args.input, *args.runs], args.qrels, opts.input_format)
    report.check_distinct({"-o": args.output}, list(inputs.files))
    target = pictures.check_output(args.output)  # before any work: suffix, directory, matplotlib

    def collect(plan):  # the measures, with the user's engine and a progress line
        return common.collect(plan, args, inputs)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        curves = pictures.lines(inputs.data, args.kind, qrels=inputs.qrels, pool=args.pool,
                            interpolate=args.interpolate, collect=collect,
                            options=inputs.options(opts))  # fmt: skip
        path = pictures.draw(curves, target, title=args.title, source=args.input)
    for warning in caught:  # ours only: polars' own warnings are not the user's business
        if str(warning.message).startswith("nothing to plot"):
            print(f"preval: warning: {warning.message}", file=sys.stderr)
    if curves.mean and curves.counts:
        per = ", ".join(curves.by)
        note = common.query_set_note(
            curves.queries, curves.counts, per=per, what="mean over ", scope=curves.scope
        )
        print(note, file=sys.stderr)
    elif not curves.mean and not args.pool and curves.lines:
        print(
            f"preval: no query column {opts.columns.query!r}: each group's rows pooled into "
            "one ranking",
            file=sys.stderr,
        )
    print(path)  # the picture's path on stdout, for a pipeline's next step
    return 0
