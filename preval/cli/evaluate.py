"""``preval evaluate``: evaluate a table (or runs with --qrels), print the summary, write the
per-query and summary files."""

from __future__ import annotations

import argparse
import math
import sys
import warnings

import polars as pl

from .. import options, report, validate
from ..errors import PrevalError, counted
from ..measures import from_ir_measures, parse
from ..planner import Plan, build_plan
from ..ranking import QUERY
from ..summary import summarize
from . import common

DEFAULT_MEASURES = ("AP", "RR", "Rprec", "P@10", "nDCG@10", "NumRet", "NumRel", "NumRelRet")

EXAMPLES = """\
examples:
  preval evaluate fixtures/example.parquet --by system
  preval evaluate fixtures/example.parquet --by system -m AP -m P@10 -m "P(rel=2)@10" -m nDCG@10
  preval evaluate run.csv --qrels qrels.csv --by system --per-query per_query.parquet
  preval evaluate fixtures/example.parquet --by system --summary summary.csv --format json
  preval evaluate fixtures/example.parquet --by system --ci 0.95 --ci-method bca
  preval measures
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    ev = subparsers.add_parser(
        "evaluate",
        help="evaluate a table (or a run with --qrels) and print the summary",
        description="Evaluate ranked results per query and print a summary table.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument(
        "input",
        help="joined table or run: .parquet, .pq, .csv, .tsv, .tab, or a TREC run file (any "
        "other suffix, .gz too)",
    )
    ev.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="more TREC run files: each file is one system, named by its run tag (by its path "
        "when tags repeat)",
    )
    ev.add_argument(
        "--qrels",
        help="judgments (query, doc, label), a table or a TREC qrels file; INPUT is then a run",
    )
    ev.add_argument(
        "-m",
        "--measure",
        action="append",
        dest="measures",
        metavar="MEASURE",
        help=f"measure to compute, repeatable (default: {' '.join(DEFAULT_MEASURES)})",
    )
    ev.add_argument(
        "--ir-measures",
        action="store_true",
        help="read -m names as ir_measures does: Accuracy@k is its pairwise accuracy",
    )
    options.add_arguments(ev, "cli-evaluate")
    ev.add_argument(
        "--per-query",
        metavar="PATH",
        help="write per-query values (.parquet, .csv, .tsv, .json, .ndjson); - prints them "
        "on stdout in --format, instead of the summary",
    )
    ev.add_argument(
        "--long",
        action="store_true",
        help="per-query output as (keys..., query, measure, value) rows",
    )
    ev.add_argument(
        "--summary",
        metavar="PATH",
        help="write the summary to a file (- : stdout, where it is printed anyway)",
    )
    ev.add_argument(
        "--bounds",
        nargs="?",
        type=float,
        const=float("nan"),
        default=None,
        metavar="LABEL",
        help="also evaluate with every unjudged retrieved document counted non-relevant "
        "(bound lower) and relevant at LABEL (bound upper; default: the relevance level): "
        "summary and per-query rows get a bound column (lower, observed, upper)",
    )
    ev.add_argument(
        "--compare",
        nargs="?",
        const="",
        default=None,
        metavar="BASELINE",
        help="after the summary, compare the systems of the (single) --by column query by "
        "query: paired t-test, Holm correction, against BASELINE or every pair (see "
        "preval compare for other tests; needs preval[stats])",
    )
    ev.add_argument(
        "--format",
        type=common.stdout_format,
        metavar="{" + ",".join(report.FORMATS) + "}",
        default="table",
        help="format of the summary printed on stdout (default: table)",
    )
    common.add_engine_arguments(ev)
    ev.add_argument("-q", "--quiet", action="store_true", help="no audit counts on stderr")
    return ev


def run(args: argparse.Namespace) -> int:
    common.refuse_parquet(args.format, "--summary summary.parquet")
    opts = options.from_args(args, "cli-evaluate")
    inputs = common.read_inputs([args.input, *args.runs], args.qrels, opts.input_format,
                                subtopic=opts.columns.subtopic)  # fmt: skip
    if args.long and (args.per_query is None or args.bounds is not None):
        # (a flag that changes nothing would leave a pipeline's next step a wide table)
        msg = ("--long shapes the per-query output: add --per-query PATH (- for stdout)"
               if args.per_query is None else
               "--long and --bounds: the bounds' per-query table is wide (a bound column); "
               "drop --long")  # fmt: skip
        raise PrevalError(msg)
    per_query_printed = _per_query_on_stdout(args)
    report.check_targets({"--per-query": args.per_query, "--summary": args.summary},
                         list(inputs.files))  # fmt: skip
    plan = _plan(args, inputs, inputs.options(opts))
    by = [plan.names[k] for k in plan.keys]  # (TREC runs: the system of each file)
    if args.compare is not None and len(by) != 1:
        msg = "--compare needs exactly one --by column: the systems to compare"
        raise PrevalError(msg)
    plan = common.collect(plan, args, inputs, quiet=args.quiet)
    # that was the one pass over the input: every output below is a view of its result
    per_query = plan.per_query()
    if args.compare is not None and not inputs.runs:
        from ..significance import systems_of  # numpy: only when comparing

        # the systems of the one table evaluated, before any output: too few is said of its file
        sources = validate.path_sources({"input": args.input})
        systems_of(per_query.select(by).collect(), by[0], args.compare or None, "input", sources)
    if args.bounds is not None:
        from .. import unjudged  # (--bounds only)

        per_query = _bounds(args, inputs, opts, plan, per_query)
        by = [*by, unjudged.BOUND]
    # measures undefined (null) on some queries: the summary's means leave those out
    rates = [c for c in plan.measure_names if not parse(c).is_count]
    # (with --ci: each rate's bounds beside it, in every output; a bootstrap runs here)
    outputs = [summarize(per_query, by=by, query=args.query, options=opts), plan.audit(),
               per_query.select(pl.col(rates).null_count(),
                                pl.col(args.query).n_unique().alias(_ALL_QUERIES))]  # fmt: skip
    shown = plan.per_query("long") if args.long else per_query  # (the per-query output, if any)
    with warnings.catch_warnings(), report.Outputs() as files:
        warnings.simplefilter("ignore")  # polars' own warnings are not the user's business here
        summary_df, audit_df, undefined = pl.collect_all(outputs)
        if args.per_query:  # streamed from the evaluation to the file, not held in memory
            files.write(shown, args.per_query)
        if args.summary:
            files.write(summary_df, args.summary)
    if not args.quiet:
        print_audit(audit_df)
        if summary_df.height:  # which queries the means are over: trec_eval's -c or not
            note = common.query_set_note(
                opts.semantics.queries, summary_df["NumQ"], per=", ".join(by)
            )
            print(note, file=sys.stderr)
        if args.qrels is None and len(by) == 1 and opts.semantics.queries == "judged":
            _lacking(summary_df, by[0], undefined[_ALL_QUERIES][0])
        # (with --bounds the table has a row per query and bound: those rows are counted)
        noun = ("(query, bound) row", "(query, bound) rows") if args.bounds is not None else (
            "query", "queries")  # fmt: skip
        for name in rates:
            if undefined[name][0]:
                why = " with a single class" if name.startswith("AUC-") else ""
                print(
                    f"preval: warning: {name} is undefined (null) for "
                    f"{counted(undefined[name][0], *noun)}{why}; "
                    "summaries average the others",
                    file=sys.stderr,
                )
    if per_query_printed:  # (held in memory: a file gets it streamed)
        sys.stdout.write(report.render(shown.collect(), args.format))
        return 0
    sys.stdout.write(report.render(summary_df, args.format))
    if args.compare is not None:
        from ..significance import compare  # numpy and scipy: only when comparing

        table = compare(
            per_query, baseline=args.compare or None, by=by[0], query=args.query
        ).select(
            "system", "baseline", "measure", "delta", "p_value", "p_corrected", "significant",
            "wins", "ties", "losses",
        )  # fmt: skip
        if args.format == "table":
            sys.stdout.write("\n" + report.table(report.readable(table)) + "\n")
        else:
            sys.stdout.write(report.render(table, args.format))
    return 0


_ALL_QUERIES = "__preval_all_queries"


def _lacking(summary_df: pl.DataFrame, by: str, queries: int) -> None:
    """Warn of each system of a joined table that has no row for some of the queries another
    system was evaluated on: they are not scored for it (with qrels they would score 0, as
    trec_eval -c), so its means are over fewer queries, and compare scores them 0. Groups
    that share no query (a topic segment as the key) are not systems: nothing is said."""
    if summary_df["NumQ"].sum() <= queries:
        return
    for system, n in summary_df.select(by, "NumQ").iter_rows():
        if n < queries:
            print(
                f"preval: warning: {by} {system} has no row for {queries - n:,} of the "
                f"{queries:,} queries evaluated for some {by} (a joined table: its means are "
                f"over its own {n:,}; compare scores the others 0; give the run and --qrels "
                "to score them 0 here, as trec_eval -c)",
                file=sys.stderr,
            )


def _per_query_on_stdout(args: argparse.Namespace) -> bool:
    """Whether ``--per-query -`` asks for the per-query table on stdout, where it takes the
    summary's place (a --summary file still gets the summary); ``--summary -`` is the summary
    printed there anyway. The one table stdout holds is a table a pipe can read."""
    summary_printed = args.summary == report.STDOUT
    args.summary = report.printed(args.summary)
    if args.per_query != report.STDOUT:
        return False
    if summary_printed:
        msg = "--per-query - and --summary -: stdout holds one table; write one to a file"
        raise PrevalError(msg)
    args.per_query = None
    if args.compare is not None:
        msg = (
            "--per-query - prints the per-query table on stdout, where --compare would print "
            "its table too: write the per-query table to a file (--per-query per_query.csv)"
        )
        raise PrevalError(msg)
    return True


def print_audit(audit_df: pl.DataFrame) -> None:
    """The audit counts of an evaluation, summed over its groups, as one line on stderr."""
    totals = {c: int(audit_df[c].sum()) for c in audit_df.columns if audit_df[c].dtype.is_integer()}
    if totals["queries_evaluated"] == 0:
        print(
            "preval: warning: no query was evaluated (empty input, or no judged query)",
            file=sys.stderr,
        )
    parts = [counted(totals["queries_evaluated"], "query", "queries") + " evaluated"]
    labels = {
        "queries_without_relevant": ("with no relevant document",) * 2,
        "queries_judged_not_retrieved": ("judged but not retrieved",) * 2,
        "queries_retrieved_not_judged": ("retrieved but not judged (dropped)",) * 2,
        "rows_retrieved_unjudged": ("retrieved row unjudged (non-relevant)",
                                    "retrieved rows unjudged (non-relevant)"),
        "rows_dropped": ("row dropped", "rows dropped"),
    }  # fmt: skip
    parts += [counted(totals[k], *text) for k, text in labels.items() if totals.get(k)]
    print("preval: " + "; ".join(parts), file=sys.stderr)
    keys = [c for c in audit_df.columns if c != "queries_evaluated" and c not in labels]
    if keys and totals["queries_evaluated"]:
        # a group (a system of a joined table) whose queries were all dropped has no row in
        # the per-query table or the summary: the totals above do not say which vanished
        empty = audit_df.filter(pl.col("queries_evaluated") == 0).select(keys).rows()
        for group in empty:
            named = ", ".join(f"{k} {v}" for k, v in zip(keys, group, strict=True))
            print(
                f"preval: warning: no query evaluated for {named} (no judged query): "
                "no summary row",
                file=sys.stderr,
            )


def _bounds(
    args: argparse.Namespace,
    inputs: common.Inputs,
    opts: options.Options,
    observed: Plan,
    per_query: pl.LazyFrame,
) -> pl.LazyFrame:
    """``--bounds``: the lower and upper evaluations run too (same engine), stacked with the
    observed one as rows with a bound column (`preval.unjudged`)."""
    from .. import unjudged

    if args.compare is not None or args.long:
        msg = "--bounds adds a bound column: compare or write the long form per bound instead"
        raise PrevalError(msg)
    upper = None if math.isnan(args.bounds) else args.bounds
    frames = {unjudged.OBSERVED: per_query}
    for name, scenario in unjudged.scenarios(inputs.options(opts), upper).items():
        if name != unjudged.OBSERVED:
            plan = _plan(args, inputs, scenario)
            frames[name] = common.collect(plan, args, inputs, quiet=True).per_query()
    keys = [*(observed.names[k] for k in observed.keys), observed.names[QUERY]]
    return unjudged.stack(frames, keys)


def _plan(args: argparse.Namespace, inputs: common.Inputs, opts: options.Options) -> Plan:
    """The evaluation plan of `preval evaluate` (its per-query status frame, not yet run)."""
    measures = args.measures or list(DEFAULT_MEASURES)
    if args.ir_measures:
        measures = [from_ir_measures(m) for m in measures]
    return build_plan(inputs.data, measures, qrels=inputs.qrels, options=opts)
