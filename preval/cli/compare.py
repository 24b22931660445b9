"""``preval compare``: evaluate the input (or read a per-query table) and compare its systems
with paired significance tests (the stats extra); print a table or a paper's table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from .. import io, report
from ..errors import InputError
from ..significance import CORRECTIONS, MISSING, TESTS, compare

EXAMPLES = """\
examples:
  preval compare fixtures/example.parquet -m AP -m P@10 --baseline bm25
  preval compare bm25.run dense.run hybrid.run.gz --qrels qrels.txt -m AP --baseline bm25
  preval compare fixtures/example.parquet -m AP -m nDCG@10 --test randomization --format latex
  preval compare per_query.parquet --per-query-table --format csv
"""
FORMATS = ("table", "markdown", "latex", "csv", "json")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "compare",
        help="paired significance tests between systems (needs preval[stats])",
        description="Evaluate INPUT per query (or read a per-query table) and compare the "
        "systems query by query: means, difference, p-value, W/T/L, effect size.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "input",
        metavar="INPUT",
        help="joined table or run (.parquet, .csv, .tsv), "
        "a per-query table, or a TREC run file (any other suffix, .gz too)",
    )
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="more TREC run files: each file is "
        "one system, named by its run tag (by its path when tags repeat)",
    )
    p.add_argument("--qrels", help="judgments (query, doc, label; a table, or a TREC qrels "
                   "file); INPUT is then a run")  # fmt: skip
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                   help="measure to compare, repeatable (default: AP, P@10, nDCG@10)")  # fmt: skip
    p.add_argument(
        "--by", default="system", metavar="COL", help="the system column (default: system)"
    )
    for role in ("query", "doc", "score", "label"):
        p.add_argument(f"--{role}", default=role, metavar="COL", help=f"the {role} column")
    p.add_argument("--per-query-table", action="store_true",
                   help="INPUT is a per-query table (as evaluate --per-query writes)")  # fmt: skip
    p.add_argument("--baseline", metavar="NAME", help="compare every system with this one "
                   "(default: every pair)")  # fmt: skip
    p.add_argument("--test", choices=TESTS, default="t", help="paired test (default: t)")
    p.add_argument("--correction", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction per measure (default: holm)")  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--resamples", type=int, default=10_000, metavar="N",
                   help="randomization and bootstrap resamples (default 10000)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--missing", choices=MISSING, default="zero",
                   help="a query a system lacks: 0 for it (default) or dropped")  # fmt: skip
    p.add_argument("--format", choices=(*FORMATS, "parquet"), default="table",
                   help="stdout: table, markdown or latex (paper tables), csv, json; Parquet "
                   "goes to a file: --output comparison.parquet")  # fmt: skip
    p.add_argument("--output", metavar="PATH", help="write the full comparison to a file "
                   "(.parquet, .csv, .tsv, .json, .ndjson, .txt: by its suffix)")  # fmt: skip
    p.add_argument(
        "--plot",
        metavar="PATH",
        help="draw the first measure's comparison: sorted per-query differences and the means "
        "with their intervals (.png, .svg, .pdf)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    from ..api import evaluate

    if args.format == "parquet":  # as preval evaluate says it
        msg = (
            "--format parquet: Parquet is binary and is not printed on stdout; write it to a "
            "file with --output comparison.parquet"
        )
        raise InputError(msg)
    report.check_targets({"--output": args.output}, [args.input, *args.runs, args.qrels])
    by, baseline = args.by, args.baseline
    measures = args.measures or ["AP", "P@10", "nDCG@10"]
    if args.runs or (_is_run(args.input) and not args.per_query_table):
        per_query, baseline = _evaluate_runs(args, measures)
        by = "system"
    elif args.per_query_table:
        per_query = io.scan(args.input, what="per-query table")
    else:
        per_query = evaluate(
            args.input, measures, qrels=args.qrels, query=args.query, doc=args.doc,
            score=args.score, label=args.label, by=args.by,
        )  # fmt: skip
    result = compare(
        per_query, baseline=baseline, measures=args.measures if args.per_query_table else None,
        by=by, query=args.query, test=args.test, correction=args.correction,
        alpha=args.alpha, n_resamples=args.resamples, seed=args.seed, missing=args.missing,
    )  # fmt: skip
    if args.output:
        report.write(result, args.output)
    if args.plot:
        from ..plot import compare_plot  # the CLI draws; the statistics know nothing of it

        compare_plot(
            per_query, args.plot, measure=result["measure"][0], baseline=baseline,
            by=by, query=args.query, alpha=args.alpha, missing=args.missing,
        )  # fmt: skip
    filled = int(result["queries_filled"].max() or 0)
    rule = "scored 0 for the system that lacks them" if args.missing == "zero" else "dropped"
    print(
        f"preval: {int(result['queries'].max() or 0)} queries per comparison; "
        f"up to {filled} present for one system only ({rule})",
        file=sys.stderr,
    )
    if args.format in ("markdown", "latex"):
        text = report.paper_table(result, args.format, test=args.test,
                                  correction=args.correction, alpha=args.alpha)  # fmt: skip
    elif args.format == "table":
        shown = result.select(
            "system", "baseline", "measure", "mean", "baseline_mean", "delta",
            "p_value", "p_corrected", "significant", "wins", "ties", "losses", "effect_size",
        )  # fmt: skip
        text = report.table(report.readable(shown)) + "\n"
    else:
        text = report.render(result, args.format)
    sys.stdout.write(text)
    return 0


def _is_run(path: str) -> bool:
    """Whether `path` is a TREC file: any suffix but a table's (.run, .txt, .gz ...)."""
    return Path(path).suffix.lower() not in io.TABLE_SUFFIXES


def _evaluate_runs(args, measures: list[str]) -> tuple[pl.DataFrame, str | None]:
    """The per-query table of several TREC run files, one system each (`io.scan_run`'s
    names), evaluated against --qrels as `preval trec -c` does; and the baseline's system
    name (--baseline may name a system or one of the run files)."""
    paths = [args.input, *args.runs]
    tables = [p for p in paths if not _is_run(p)]
    if tables:
        msg = (
            f"{tables[0]} is a table ({Path(tables[0]).suffix}) and "
            f"{next(p for p in paths if _is_run(p))} a TREC run file: give either one table "
            "with a system column, or TREC run files only, one system each"
        )
        raise InputError(msg)
    if args.per_query_table:
        msg = "--per-query-table reads one table; TREC run files are evaluated (drop the option)"
        raise InputError(msg)
    if args.qrels is None:
        msg = f"TREC run file {args.input}: give its judgments with --qrels QRELS"
        raise InputError(msg)
    if args.by != "system":
        msg = f"--by {args.by}: TREC run files are one system each; --by is for a table"
        raise InputError(msg)
    for path in [*paths, args.qrels]:
        if not Path(path).is_file():
            what = "qrels file" if path == args.qrels else "run file"
            msg = f"{what} not found: {path}"
            raise InputError(msg)
    if len(paths) < 2:
        msg = (
            f"TREC run file {args.input} is one system: give two or more run files to compare "
            "(or a table with a system column)"
        )
        raise InputError(msg)
    files = [Path(p) for p in paths]
    names = io.run_names(files)
    seen: dict[str, str] = {}
    for path, name in zip(paths, names, strict=True):
        if name in seen and Path(seen[name]).resolve() == Path(path).resolve():
            msg = f"run file {path} is given twice: give each run once"
            raise InputError(msg)
        if name in seen:
            msg = (
                f"run files {seen[name]} and {path} are both system {name!r}: give each run "
                "once (runs are named by their tag, or by their path when tags repeat)"
            )
            raise InputError(msg)
        seen[name] = path
    baseline = args.baseline
    if baseline is not None and baseline not in names and baseline in paths:
        baseline = names[paths.index(baseline)]  # the baseline named by its file
    qrels = (
        io.scan_qrels(args.qrels)
        if _is_run(args.qrels)
        else io.scan(
            args.qrels, id_columns=("query", "doc"), numeric_columns=("label",), what="qrels"
        )
    )
    from ..api import plan as build_plan

    plan = build_plan(io.scan_run(files), measures, qrels=qrels, by="system", ties="trec")
    # the per-query table, and from the same plan which judged queries each run did not
    # answer: those are in the table already, scored 0, so compare's count of missing rows
    # (queries_filled) is 0 for them and would not tell
    per_query, audit = pl.collect_all([plan.per_query(), plan.audit()])
    lacking = audit.filter(pl.col("queries_judged_not_retrieved") > 0)
    if lacking.height:
        counts = lacking.select("system", "queries_judged_not_retrieved").iter_rows()
        print(
            "preval: judged queries a run did not answer, scored 0 for it (trec_eval -c): "
            + ", ".join(f"{system} {n}" for system, n in counts),
            file=sys.stderr,
        )
    return per_query, baseline
