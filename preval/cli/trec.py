"""``preval trec``: trec_eval's command line and output on TREC run and qrels files."""

from __future__ import annotations

import argparse
import sys

import polars as pl

from .. import io, options, report
from .. import trec as trec_eval
from ..errors import InputError, PrevalError
from ..options import Options
from ..planner import build_plan
from ..summary import summarize
from . import common

EXAMPLES = """\
examples:
  preval trec qrels.txt run.txt                      # trec_eval's official measures
  preval trec -q -m map -m P.5,10 -m ndcg_cut.10 qrels.txt run.txt
  preval trec -c -m all_trec qrels.txt run1.txt run2.txt.gz
  preval trec --table qrels.txt run1.txt run2.txt   # runs side by side
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    tr = subparsers.add_parser(
        "trec",
        help="trec_eval-compatible evaluation of TREC run files",
        description="Evaluate TREC run files against a qrels file and print trec_eval's "
        "format (measure<TAB>query|all<TAB>value). Options mirror trec_eval's.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tr.add_argument(
        "qrels",
        help="qrels file: qid iter docno rel (plain or .gz), or a table (.parquet, .csv ...) "
        "with query, doc, label columns",
    )
    tr.add_argument(
        "runs",
        nargs="+",
        metavar="run",
        help="run file(s): qid Q0 docno rank sim tag (- for standard input); or one table with "
        "query, doc, score columns (each value of a system column a run, else the file one run)",
    )
    # trec_eval's long options (getopt_long in trec_eval.c) are spelled as there, so that a
    # script's `--query_eval_wanted --measure map` keeps working
    tr.add_argument(
        "-m",
        "--measure",
        dest="measures",
        action="append",
        default=[],
        metavar="MEASURE",
        help="trec_eval measure or set: official (default), all_trec, map, P.5,10 ...",
    )
    tr.add_argument(
        "-q", "--query_eval_wanted", dest="per_query", action="store_true",
        help="per-query lines too",
    )  # fmt: skip
    tr.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        dest="complete",
        action="store_true",
        help="average over all qrels queries (missing ones score 0)",
    )
    tr.add_argument(
        "-l",
        "--level_for_rel",
        dest="level",
        type=int,
        default=1,
        metavar="LEVEL",
        help="relevance level: rel >= LEVEL is relevant (default 1)",
    )
    tr.add_argument(
        "-M",
        "--Max_retrieved_per_topic",
        dest="depth",
        type=int,
        default=None,
        metavar="DEPTH",
        help="evaluate only the top DEPTH documents of each query",
    )
    tr.add_argument(
        "-J",
        "--Judged_docs_only",
        dest="judged_only",
        action="store_true",
        help="evaluate only judged documents (after -M)",
    )
    tr.add_argument(
        "-n", "--nosummary", dest="no_summary", action="store_true", help="no summary lines"
    )
    tr.add_argument(
        "-N",
        "--Number_docs_in_coll",
        dest="docs",
        type=int,
        default=0,
        metavar="NUM",
        help="documents in the collection, for utility's d term (default 0, as trec_eval)",
    )
    tr.add_argument(
        "-D",
        "--Debug_level",
        dest="debug",
        default="0",
        metavar="LEVEL",
        help="trec_eval's debug level: only 0 (its default) is taken; no debug output",
    )
    tr.add_argument(
        "-Z",
        "--Zscore",
        dest="zscore",
        default=None,
        metavar="FILE",
        help="trec_eval's Z scores: refused (preval trec prints raw scores only)",
    )
    tr.add_argument(
        "-R",
        "--Rel_info_format",
        dest="rel_format",
        default="qrels",
        metavar="FORMAT",
        help="trec_eval's qrels format name: only qrels (the default) is read",
    )
    tr.add_argument(
        "-T",
        "--Results_format",
        dest="results_format",
        default="trec_results",
        metavar="FORMAT",
        help="trec_eval's run format name: only trec_results (the default) is read",
    )
    tr.add_argument(
        "--trec-version",
        type=int,
        choices=(9, 10),
        default=9,
        help="9 (default; pytrec_eval): float32 score ties, (long)(p*R+0.9) iprec "
        "cutoffs; 10: double scores, lround cutoffs, -c -q lines for every query",
    )
    tr.add_argument(
        "--duplicates",
        choices=options.DUPLICATES,
        default="error",
        help="a document twice in a query: error (default, as trec_eval), or keep the max "
        "score / the first line",
    )
    tr.add_argument(
        "--table",
        action="store_true",
        help="one summary table, runs side by side, instead of trec_eval lines",
    )
    options.add_arguments(tr, "cli-trec")  # --input-format: tables, TREC files or both
    common.add_engine_arguments(tr)
    return tr


def run(args: argparse.Namespace) -> int:
    # trec_eval's other formats (prefs, qrels_prefs, qrels_jg) are not read: refused by name,
    # where trec_eval would read a plain qrels file as one of them and stop at its first line
    for flag, given, known in (("-R", args.rel_format, "qrels"),
                               ("-T", args.results_format, "trec_results")):  # fmt: skip
        if given != known:
            msg = f"{flag} {given}: preval trec reads only trec_eval's {known} format"
            raise InputError(msg)
    # trec_eval's -D and -Z are refused by name, rather than as unknown flags
    if args.debug != "0":
        msg = f"-D {args.debug}: preval trec prints no debug output (only -D 0 is taken)"
        raise PrevalError(msg)
    if args.zscore is not None:
        msg = f"-Z {args.zscore}: preval trec does not print Z scores (trec_eval's -Z)"
        raise PrevalError(msg)
    lines = trec_eval.parse_m(args.measures, docs=args.docs, version=args.trec_version)
    strings = [line for line in lines if line.kind == "string"]  # relstring: not a measure
    measures = list(dict.fromkeys(line.column for line in lines if line.kind != "string"))
    # the plan needs one measure; NumQ (1 per query) costs nothing when relstring comes alone
    measures = measures or ["NumQ"]
    # (trec_eval reads the run from standard input when its name is "-": read_inputs does too)
    inputs = common.read_inputs(args.runs, args.qrels, args.input_format, empty_runs=True)
    names, by = list(inputs.names), ["system"]
    if not inputs.runs:  # a table: each value of its system column is a run, else the file
        columns = io.scan(inputs.data, what="run").collect_schema().names()
        by = ["system"] if "system" in columns else []
    semantics = {
        "ties": "trec", "queries": "judged" if args.complete else "retrieved",
        "relevance_level": args.level, "duplicates": args.duplicates, "depth": args.depth,
        "judged_only": args.judged_only, "trec_version": args.trec_version,
    }  # fmt: skip
    plan = build_plan(
        inputs.data, measures, qrels=inputs.qrels,
        options=Options.of({"input_format": inputs.input_format, "by": by, **semantics}),
        relstrings=[trec_eval.relstring_cutoff(line) for line in strings],
    )  # fmt: skip
    plan = common.collect(plan, args, inputs)  # one pass
    # trec_eval 9 prints per-query lines only for the queries of the run, with -c too: whether
    # the run answered a query is known before -M and -J
    per_query = plan.per_query(answered="_answered")
    measures_only = per_query.drop("_answered", *plan.string_names)
    per_query_df, summary_df = pl.collect_all([per_query, summarize(measures_only, by=by)])
    if args.complete and args.trec_version >= 10 and not args.judged_only:
        # trec_eval 10 -c evaluates a query the run did not answer as a ranking of one
        # unjudged document, then empties the string of `relstring` but not of `relstring.N`
        # (trec_eval.c clears the measure named "relstring" only): that one prints '-'
        bogus = [
            line.column for line in strings
            if line.name != "relstring" and trec_eval.relstring_cutoff(line) > 0
        ]  # fmt: skip
        per_query_df = per_query_df.with_columns(
            pl.when(pl.col("_answered")).then(pl.col(c)).otherwise(pl.lit("-")).alias(c)
            for c in bogus
        )
    if not by:  # a table without a system column: one run, named by its file
        names = [str(inputs.data)]
        per_query_df, summary_df = (
            df.with_columns(pl.lit(names[0]).alias("system")) for df in (per_query_df, summary_df)
        )
    elif not inputs.runs:
        names = sorted(summary_df["system"].unique().to_list())
    if summary_df.height == 0 or summary_df["NumQ"].sum() == 0:
        print("preval: warning: no query has both results and judgments", file=sys.stderr)
    else:  # stderr: stdout stays byte for byte trec_eval's
        queries = semantics["queries"]
        how = "-c" if args.complete else "trec_eval's default, without -c"
        per = "run" if len(names) > 1 else ""
        print(common.query_set_note(queries, summary_df["NumQ"], per=per, how=how),
              file=sys.stderr)  # fmt: skip
    if args.table:
        shown_lines = [line for line in lines if line.kind not in ("runid", "string")]
        rows = {"measure": [line.name for line in shown_lines]}
        for name in names:
            row = summary_df.filter(pl.col("system") == name)
            rows[name] = [
                trec_eval.format_value(line, row[line.column][0]) if row.height else "-"
                for line in shown_lines
            ]
        sys.stdout.write(report.table(pl.DataFrame(rows)) + "\n")
        return 0
    # a run named by its path (its tag is another run's too) prints its own tag as runid, as
    # trec_eval does for the file alone; a file without a tag, or a table's run (no tags), its
    # name. (The tags are the input stage's: each file's first line is read once.)
    runids = {n: tag for n, tag in zip(inputs.names, inputs.tags, strict=True) if tag is not None}
    for name in names:
        shown = per_query_df.filter(pl.col("system") == name) if args.per_query else None
        if shown is not None and args.complete and args.trec_version < 10:
            shown = shown.filter(pl.col("_answered"))
        summary = None if args.no_summary else summary_df.filter(pl.col("system") == name)
        prefix = f"{name}\t" if len(names) > 1 else ""
        for text in trec_eval.format_lines(shown, summary, lines, runids.get(name, name)):
            print(prefix + text)
    return 0
