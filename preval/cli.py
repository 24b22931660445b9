"""Command line: a thin layer over the library. Exit 0 on success, 2 on bad input or usage."""

from __future__ import annotations

import argparse
import contextlib
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import polars as pl

from . import __version__, engines, io, options, report, trec
from .conventions import CONVENTIONS
from .errors import PrevalError
from .measures import catalogue_rows, from_ir_measures, markdown_table
from .options import Options
from .planner import Plan, build_plan
from .significance import add_parser as add_compare_parser
from .significance import compare, readable
from .significance import run as run_compare
from .summary import summarize

DEFAULT_MEASURES = ("AP", "RR", "Rprec", "P@10", "nDCG@10", "NumRet", "NumRel", "NumRelRet")

EXAMPLES = """\
examples:
  preval evaluate fixtures/example.parquet --by system
  preval evaluate fixtures/example.parquet --by system -m AP -m P@10 -m "P(rel=2)@10" -m nDCG@10
  preval evaluate run.csv --qrels qrels.csv --by system --per-query per_query.parquet
  preval evaluate fixtures/example.parquet --by system --summary summary.csv --format json
  preval measures
"""


TREC_EXAMPLES = """\
examples:
  preval trec qrels.txt run.txt                      # trec_eval's official measures
  preval trec -q -m map -m P.5,10 -m ndcg_cut.10 qrels.txt run.txt
  preval trec -c -m all_trec qrels.txt run1.txt run2.txt.gz
  preval trec --table qrels.txt run1.txt run2.txt   # runs side by side
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's own exit code is 2 as well
        self.print_usage(sys.stderr)
        self.exit(2, f"preval: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="preval",
        description="Evaluate ranked results for many queries at once (AP, P@k, nDCG ...).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"preval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ev = sub.add_parser(
        "evaluate",
        help="evaluate a table (or a run with --qrels) and print the summary",
        description="Evaluate ranked results per query and print a summary table.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ev.add_argument(
        "input", help="joined table or run: .parquet, .csv, .tsv, or a TREC run file (.gz too)"
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
        help="write per-query values (.parquet, .csv, .tsv, .json, .ndjson)",
    )
    ev.add_argument(
        "--long",
        action="store_true",
        help="per-query output as (keys..., query, measure, value) rows",
    )
    ev.add_argument("--summary", metavar="PATH", help="write the summary to a file")
    ev.add_argument(
        "--compare",
        nargs="?",
        const="",
        default=None,
        metavar="BASELINE",
        help="after the summary, compare the systems of the (single) --by column query by "
        "query: paired t-test, Holm correction, against BASELINE or every pair (see "
        "preval compare for other tests)",
    )
    ev.add_argument(
        "--format",
        type=_stdout_format,
        metavar="{" + ",".join(report.FORMATS) + "}",
        default="table",
        help="format of the summary printed on stdout (default: table)",
    )
    ev.add_argument(
        "--engine",
        choices=engines.CHOICES,
        default="auto",
        help="execution engine: auto (default: in-memory up to 1 MB, streaming for a run "
        "with qrels up to 256 MB, else chunked when rows are grouped by query and "
        "partitioned when they are not); results are identical",
    )
    ev.add_argument(
        "--memory-limit",
        type=_bytes,
        default=None,
        metavar="SIZE",
        help="what the partitioned engine may hold, e.g. 2GB (default 4GB): larger inputs "
        "are spilled to disk in buckets",
    )
    ev.add_argument(
        "--tmp-dir",
        default=None,
        metavar="DIR",
        help="where spill files go (default: TMPDIR, else the system's temporary directory)",
    )
    ev.add_argument("-q", "--quiet", action="store_true", help="no audit counts on stderr")

    tr = sub.add_parser(
        "trec",
        help="trec_eval-compatible evaluation of TREC run files",
        description="Evaluate TREC run files against a qrels file and print trec_eval's "
        "format (measure<TAB>query|all<TAB>value). Options mirror trec_eval's.",
        epilog=TREC_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tr.add_argument("qrels", help="qrels file: qid iter docno rel (plain or .gz)")
    tr.add_argument("runs", nargs="+", metavar="run", help="run file(s): qid Q0 docno rank sim tag")
    tr.add_argument(
        "-m",
        dest="measures",
        action="append",
        default=[],
        metavar="MEASURE",
        help="trec_eval measure or set: official (default), all_trec, map, P.5,10 ...",
    )
    tr.add_argument("-q", dest="per_query", action="store_true", help="per-query lines too")
    tr.add_argument(
        "-c",
        dest="complete",
        action="store_true",
        help="average over all qrels queries (missing ones score 0)",
    )
    tr.add_argument(
        "-l",
        dest="level",
        type=int,
        default=1,
        metavar="LEVEL",
        help="relevance level: rel >= LEVEL is relevant (default 1)",
    )
    tr.add_argument(
        "-M",
        dest="depth",
        type=int,
        default=None,
        metavar="DEPTH",
        help="evaluate only the top DEPTH documents of each query",
    )
    tr.add_argument(
        "-J",
        dest="judged_only",
        action="store_true",
        help="evaluate only judged documents (after -M)",
    )
    tr.add_argument("-n", dest="no_summary", action="store_true", help="no summary lines")
    tr.add_argument(
        "--trec-version",
        type=int,
        choices=(9, 10),
        default=9,
        help="9 (default; pytrec_eval): float32 score ties, (long)(p*R+0.9) iprec "
        "cutoffs; 10: double scores, lround cutoffs, -c -q lines for every query",
    )
    tr.add_argument(
        "--engine",
        choices=engines.CHOICES,
        default="auto",
        help="execution engine: auto (default: in-memory up to 1 MB, streaming for a run "
        "with qrels up to 256 MB, else chunked when rows are grouped by query and "
        "partitioned when they are not); results are identical",
    )
    tr.add_argument(
        "--memory-limit",
        type=_bytes,
        default=None,
        metavar="SIZE",
        help="what the partitioned engine may hold, e.g. 2GB (default 4GB): larger inputs "
        "are spilled to disk in buckets",
    )
    tr.add_argument(
        "--tmp-dir",
        default=None,
        metavar="DIR",
        help="where spill files go (default: TMPDIR, else the system's temporary directory)",
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

    pl_ = sub.add_parser(
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

    add_compare_parser(sub)

    ms = sub.add_parser("measures", help="list the measure catalogue")
    ms.add_argument("--format", choices=("table", "markdown"), default="table")
    return parser


class Terminated(BaseException):
    """SIGTERM (sent by `timeout`, job schedulers, container stops), raised in the main thread
    so that temporary files and spill directories are removed on the way out, as on Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print("preval: interrupted; no output written", file=sys.stderr)
        return 130
    except Terminated:
        print("preval: terminated; no output written", file=sys.stderr)
        return 143
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "measures":
            return _measures(args)
        if args.command == "trec":
            return _trec(args)
        if args.command == "compare":
            return run_compare(args)
        if args.command == "plot":
            return _plot(args)
        return _evaluate(args)
    except PrevalError as exc:
        print(f"preval: error: {exc}", file=sys.stderr)
        return 2
    except (pl.exceptions.PolarsError, OSError) as exc:
        # Unreadable files and malformed CSV surface here mid-run: still bad input, not a
        # crash, and said with the file's name and line, not the reader's class names
        inputs = [getattr(args, n, None) for n in ("input", "qrels")]
        explained = io.explain(exc, [*inputs, *getattr(args, "runs", [])])
        if explained is not None:
            print(f"preval: error: {explained}", file=sys.stderr)
            return 2
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "unreadable input"
        print(f"preval: error: {first}", file=sys.stderr)
        return 2


def _measures(args: argparse.Namespace) -> int:
    if args.format == "markdown":
        print(markdown_table())
        return 0
    rows = catalogue_rows()
    width = max(len(r["measure"]) for r in rows)
    for r in rows:
        alias = f" (aliases: {r['aliases']})" if r["aliases"] else ""
        print(f"{r['measure']:<{width}}  {r['definition']}{alias}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    if args.format == "parquet":
        msg = (
            "--format parquet: Parquet is binary and is not printed on stdout; write it to a "
            "file with --summary summary.parquet"
        )
        raise PrevalError(msg)
    report.check_targets(
        {"--per-query": args.per_query, "--summary": args.summary}, [args.input, args.qrels]
    )
    plan = _evaluate_plan(args)
    by = [plan.names[k] for k in plan.keys]  # (TREC runs: the system of each file)
    if args.compare is not None and len(by) != 1:
        msg = "--compare needs exactly one --by column: the systems to compare"
        raise PrevalError(msg)
    with _progress("evaluating", quiet=args.quiet) as progress:
        plan = _collect(plan, args, [args.input, args.qrels], progress)
    # that was the one pass over the input: every output below is a view of its result
    per_query = plan.per_query()
    auc = [c for c in plan.measure_names if c.startswith("AUC-")]
    outputs = [summarize(per_query, by=by, query=args.query), plan.audit(),
               per_query.select(pl.col(auc).null_count())]  # fmt: skip
    with warnings.catch_warnings(), report.Outputs() as files:
        warnings.simplefilter("ignore")  # polars' own warnings are not the user's business here
        summary_df, audit_df, undefined = pl.collect_all(outputs)
        if args.per_query:  # streamed from the evaluation to the file, not held in memory
            files.write(plan.per_query("long") if args.long else per_query, args.per_query)
        if args.summary:
            files.write(summary_df, args.summary)
    if not args.quiet:
        _print_audit(audit_df)
        for name in auc:
            if undefined[name][0]:
                print(
                    f"preval: warning: {name} is undefined (null) for {undefined[name][0]} "
                    "queries with a single class; summaries average the others",
                    file=sys.stderr,
                )
    sys.stdout.write(report.render(summary_df, args.format))
    if args.compare is not None:
        table = compare(
            per_query, baseline=args.compare or None, by=by[0], query=args.query
        ).select(
            "system", "baseline", "measure", "delta", "p_value", "p_corrected", "significant",
            "wins", "ties", "losses",
        )  # fmt: skip
        if args.format == "table":
            sys.stdout.write("\n" + report.table(readable(table)) + "\n")
        else:
            sys.stdout.write(report.render(table, args.format))
    return 0


def _print_audit(audit_df: pl.DataFrame) -> None:
    totals = {c: int(audit_df[c].sum()) for c in audit_df.columns if audit_df[c].dtype.is_integer()}
    if totals["queries_evaluated"] == 0:
        print(
            "preval: warning: no query was evaluated (empty input, or no judged query)",
            file=sys.stderr,
        )
    parts = [f"{totals['queries_evaluated']} queries evaluated"]
    labels = {
        "queries_without_relevant": "with no relevant document",
        "queries_judged_not_retrieved": "judged but not retrieved",
        "queries_retrieved_not_judged": "retrieved but not judged (dropped)",
        "rows_retrieved_unjudged": "retrieved rows unjudged (non-relevant)",
        "rows_dropped": "rows dropped",
    }
    parts += [f"{totals[k]} {text}" for k, text in labels.items() if totals.get(k)]
    print("preval: " + "; ".join(parts), file=sys.stderr)


def _trec(args: argparse.Namespace) -> int:
    lines = trec.parse_m(args.measures)
    strings = [line for line in lines if line.kind == "string"]  # relstring: not a measure
    measures = list(dict.fromkeys(line.column for line in lines if line.kind != "string"))
    # the plan needs one measure; NumQ (1 per query) costs nothing when relstring comes alone
    measures = measures or ["NumQ"]
    files = [Path(p) for p in args.runs]
    names = io.run_names(files)
    semantics = {
        "ties": "trec", "queries": "judged" if args.complete else "retrieved",
        "relevance_level": args.level, "duplicates": args.duplicates, "depth": args.depth,
        "judged_only": args.judged_only, "trec_version": args.trec_version,
    }  # fmt: skip
    plan = build_plan(
        files, measures, qrels=args.qrels,
        options=Options.of({"input_format": "trec", "by": "system", **semantics}),
        relstrings=[trec.relstring_cutoff(line) for line in strings],
    )  # fmt: skip
    try:
        with _progress("evaluating") as progress:
            plan = _collect(plan, args, [args.qrels, *args.runs], progress)  # one pass
    except PrevalError as exc:
        system = (exc.example or {}).get("system")
        # a run file has no null score: a document not retrieved is a line not written
        exc.args = (
            str(exc).replace(
                "use null for a document that was not retrieved",
                "remove the line, or give the document a number",
            ),
        )
        if system in names:
            exc.args = (f"{exc} (run file {files[names.index(system)]})",)
        raise
    # trec_eval 9 prints per-query lines only for the queries of the run, with -c too: whether
    # the run answered a query is known before -M and -J
    per_query = plan.per_query(answered="_answered")
    measures_only = per_query.drop("_answered", *plan.string_names)
    per_query_df, summary_df = pl.collect_all([per_query, summarize(measures_only, by=["system"])])
    if summary_df.height == 0:
        print("preval: warning: no query has both results and judgments", file=sys.stderr)
    if args.table:
        shown_lines = [line for line in lines if line.kind not in ("runid", "string")]
        rows = {"measure": [line.name for line in shown_lines]}
        for name in names:
            row = summary_df.filter(pl.col("system") == name)
            rows[name] = [
                trec.format_value(line, row[line.column][0]) if row.height else "-"
                for line in shown_lines
            ]
        sys.stdout.write(report.table(pl.DataFrame(rows)) + "\n")
        return 0
    for name in names:
        shown = per_query_df.filter(pl.col("system") == name) if args.per_query else None
        if shown is not None and args.complete and args.trec_version < 10:
            shown = shown.filter(pl.col("_answered"))
        summary = None if args.no_summary else summary_df.filter(pl.col("system") == name)
        prefix = f"{name}\t" if len(names) > 1 else ""
        for text in trec.format_lines(shown, summary, lines, name):
            print(prefix + text)
    return 0


def _plot(args: argparse.Namespace) -> int:
    from .plot import plot  # matplotlib is imported only for this command

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


def _collect(plan: Plan, args: argparse.Namespace, paths: Sequence[str | None],
             progress) -> Plan:  # fmt: skip
    """Run the plan once with the user's engine (auto: chosen from the input files' size)."""
    if args.tmp_dir is not None and not Path(args.tmp_dir).is_dir():
        msg = f"--tmp-dir {args.tmp_dir}: no such directory"
        raise PrevalError(msg)
    size = sum(Path(p).stat().st_size for p in paths if p and Path(p).is_file())
    return engines.collect(
        plan,
        args.engine,
        progress=progress,
        memory_limit=args.memory_limit,
        tmp_dir=args.tmp_dir,
        input_bytes=size,
    )


_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "M": 2**20, "MB": 2**20, "G": 2**30,
          "GB": 2**30, "T": 2**40, "TB": 2**40}  # fmt: skip


def _stdout_format(text: str) -> str:
    """A format the summary can be printed in, for argparse. Parquet is binary: it goes to a
    file (`--summary x.parquet`), and asking for it on stdout says so."""
    if text == "parquet":  # refused in _evaluate, in the one-line form of every error
        return text
    if text not in report.FORMATS:
        msg = f"invalid choice: {text!r} (choose from {', '.join(report.FORMATS)})"
        raise argparse.ArgumentTypeError(msg)
    return text


def _bytes(text: str) -> int:
    """A size such as ``2GB``, ``512M`` or ``1000000`` (bytes), for argparse."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).upper() if match else ""
    if not match or unit not in _UNITS or float(match.group(1)) <= 0:
        msg = f"expected a size such as 2GB, 512MB or a number of bytes, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return int(float(match.group(1)) * _UNITS[unit])


def _evaluate_plan(args: argparse.Namespace) -> Plan:
    """The evaluation plan of `preval evaluate` (its per-query status frame, not yet run)."""
    measures = args.measures or list(DEFAULT_MEASURES)
    if args.ir_measures:
        measures = [from_ir_measures(m) for m in measures]
    return build_plan(
        args.input, measures, qrels=args.qrels, options=options.from_args(args, "cli-evaluate")
    )


@contextlib.contextmanager
def _progress(phase: str, *, quiet: bool = False) -> Iterator[Callable[[int], None] | None]:
    """Phase, rows read and elapsed time on stderr while `phase` runs: on a terminal only,
    silent in pipelines. Yields the callback that reports rows read (None when silent)."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    done, start = threading.Event(), time.perf_counter()
    rows = [0]

    def tick() -> None:
        while not done.wait(0.5):
            read = f"{rows[0]:,} rows read, " if rows[0] else ""
            sys.stderr.write(f"\rpreval: {phase} ... {read}{time.perf_counter() - start:.1f} s")
            sys.stderr.flush()

    def report(n: int) -> None:
        rows[0] = n

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield report
    finally:
        done.set()
        thread.join()
        sys.stderr.write("\r\x1b[K")  # clear the line before the audit and results
        sys.stderr.flush()
