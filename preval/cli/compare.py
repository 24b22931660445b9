"""``preval compare``: evaluate the input (or read a per-query table) and compare its systems
with paired significance tests (the stats extra); print a table or a paper's table."""

from __future__ import annotations

import argparse
import sys

import polars as pl

from .. import io, options, report, validate
from ..errors import InputError, counted
from ..planner import build_plan
from ..significance import CORRECTIONS, MISSING, TESTS, compare, systems_of
from . import common

EXAMPLES = """\
examples:
  preval compare fixtures/example.parquet -m AP -m P@10 --baseline bm25
  preval compare bm25.run dense.run hybrid.run.gz --qrels qrels.txt -m AP --baseline bm25
  preval compare fixtures/example.parquet -m AP -m nDCG@10 --test randomization --format latex
  preval compare per_query.parquet --per-query-table --format csv
"""
FORMATS = ("table", "markdown", "latex", "csv", "json")
DEFAULT_MEASURES = ["AP", "P@10", "nDCG@10"]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "compare",
        help="paired significance tests between systems (needs preval[stats])",
        description="Evaluate INPUT per query (or read a per-query table) and compare the "
        "systems query by query: means, difference, p-value, W/T/L, effect size.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_arguments(p, "measure to compare, repeatable (default: AP, P@10, nDCG@10)")
    options.add_arguments(p, "cli-resampling")  # --resamples, --seed
    p.add_argument("--baseline", metavar="NAME", help="compare every system with this one "
                   "(default: every pair); a run file's system, by name or path")  # fmt: skip
    p.add_argument("--test", choices=TESTS, default="t",
                   help="test (default: t); t, wilcoxon, randomization and bootstrap are paired, "
                        "tukey is Tukey's HSD over all systems, unpaired")  # fmt: skip
    p.add_argument("--correction", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction per measure (default: holm; none with "
                        "--test tukey, which holds the family-wise level itself)")  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--missing", choices=MISSING, default="zero",
                   help="a query a system lacks: 0 for it (default) or dropped")  # fmt: skip
    p.add_argument("--risk", type=float, metavar="ALPHA", help="add URisk and TRisk against "
                   "--baseline, losses weighing 1 + ALPHA (TREC Web track; e.g. 1, 5)")  # fmt: skip
    p.add_argument("--georisk", type=float, metavar="ALPHA", help="add ZRisk and GeoRisk of "
                   "the system and of the baseline against all systems, queries below "
                   "expectation weighing 1 + ALPHA (Dinçer et al. 2016)")  # fmt: skip
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
    common.add_engine_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    common.refuse_parquet(args.format, "--output comparison.parquet")
    paths = [args.input, *args.runs]
    args.output = report.printed(args.output)  # (-: the table printed on stdout)
    report.check_targets({"--output": args.output}, [*paths, args.qrels])
    if args.plot:  # before any work, as the table's: a refused plot leaves no table written
        from ..plot import check_output

        report.check_distinct({"--output": args.output, "--plot": args.plot},
                              [*paths, args.qrels])  # fmt: skip
        check_output(args.plot)
    resampling = options.from_args(args, "cli-resampling").intervals
    risky = [f for f, v in (("--risk", args.risk), ("--georisk", args.georisk)) if v is not None]
    if risky and args.format in ("markdown", "latex"):  # (the paper table has no such column)
        msg = (
            f"{risky[0]} adds columns that the {args.format} paper table (means and "
            "significance) does not show: use --format table, csv or json, or drop it"
        )
        raise InputError(msg)
    if risky:  # before the evaluation
        from ..risk_adjusted import check_alpha

        for alpha, what in ((args.risk, "risk"), (args.georisk, "GeoRisk")):
            if alpha is not None:
                check_alpha(alpha, what)
    per_query, baseline, notes, averaged = per_query_of(args)
    if not (args.per_query_table or args.runs):
        # the systems of the one table evaluated: too few is said of its file
        sources = validate.path_sources({"input": args.input})
        systems_of(per_query, args.by, baseline, "input", sources)
    compared = args.input if args.per_query_table else per_query  # (a path: compare names it)
    if args.risk is not None and baseline is None:
        msg = "--risk measures each system against one: give --baseline NAME"
        raise InputError(msg)
    by = args.by
    # built before the comparison: a refused --georisk (alpha < 0) costs no tests
    georisk = None if args.georisk is None else _georisk(compared, per_query, args)
    result = compare(
        compared, baseline=baseline, measures=args.measures if args.per_query_table else None,
        by=by, query=args.query, test=args.test, correction=args.correction,
        alpha=args.alpha, n_resamples=resampling.resamples, seed=resampling.seed,
        missing=args.missing,
    )  # fmt: skip
    if args.risk is not None:
        result = _with_risk(result, per_query, baseline, args)
    if georisk is not None:
        result = _with_georisk(result, georisk)
    with report.Outputs() as files:  # (the table is put in place after the plot, or not)
        if args.output:
            files.write(result, args.output)
        if args.plot:
            from ..plot import compare_plot  # the CLI draws; the statistics know nothing of it

            compare_plot(
                per_query, args.plot, measure=result["measure"][0], baseline=baseline,
                by=by, query=args.query, alpha=args.alpha, missing=args.missing,
            )  # fmt: skip
    filled = int(result["queries_filled"].max() or 0)
    rule = "scored 0 for the system that lacks them" if args.missing == "zero" else "dropped"
    for note in notes:  # after the comparison: an error is the one line printed
        print(note, file=sys.stderr)
    # (none filled here when the evaluation scored them already, as --queries judged does:
    # 'up to 0 present for one system only' read as a contradiction of the line above)
    one_only = f"; up to {filled} present for one system only ({rule})" if filled else ""
    print(
        f"preval: {counted(int(result['queries'].max() or 0), 'query', 'queries')} "
        f"per comparison ({averaged}){one_only}",
        file=sys.stderr,
    )
    if args.format in ("markdown", "latex"):
        text = report.paper_table(result, args.format, test=args.test,
                                  correction=args.correction, alpha=args.alpha)  # fmt: skip
    elif args.format == "table":
        shown = result.select(
            "system", "baseline", "measure", "mean", "baseline_mean", "delta",
            "p_value", "p_corrected", "significant", "wins", "ties", "losses", "effect_size",
            *(["urisk", "trisk"] if args.risk is not None else []),
            *(["georisk", "baseline_georisk"] if args.georisk is not None else []),
        )  # fmt: skip
        text = report.table(report.readable(shown)) + "\n"
    else:
        text = report.render(result, args.format)
    sys.stdout.write(text)
    return 0


def add_input_arguments(p: argparse.ArgumentParser, measures_help: str) -> None:
    """The input of every command that works on a per-query table (compare, agreement, power):
    a joined table or run with --qrels, TREC run files, or a per-query table as it is; the
    measures, the system column and the evaluation's options (`per_query_of` reads them)."""
    p.add_argument(
        "input",
        metavar="INPUT",
        help="joined table or run (.parquet, .pq, .csv, .tsv, .tab), a per-query table "
        "(--per-query-table), or a TREC run file (any other suffix, .gz too)",
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
                   help=measures_help)  # fmt: skip
    p.add_argument(
        "--by", default="system", metavar="COL", help="the system column (default: system)"
    )
    options.add_arguments(p, "cli-compare", skip=("by",))
    p.add_argument("--per-query-table", action="store_true",
                   help="INPUT is a per-query table (as evaluate --per-query writes)")  # fmt: skip


def _repeats(table: pl.LazyFrame, keys: tuple[str, str]) -> list[str]:
    """A warning when rows of the per-query table repeat a (system, query) pair (the table of
    ``evaluate --bounds``, one row per bound; a table stacked from two evaluations): the first
    row of each counts (`preval.compare`), which a reader should know."""
    from ..measures import measure_columns

    schema = table.collect_schema()
    if any(k not in schema for k in keys):
        return []  # (compare names the missing column)
    repeated = table.select(pl.len() - pl.struct(keys).n_unique()).collect().item()
    if not repeated:
        return []
    measures = measure_columns(schema)
    others = [c for c in schema.names() if c not in keys and c not in measures]
    told = f" (other columns: {', '.join(others)})" if others else ""
    return [
        f"preval: warning: {repeated:,} rows repeat a (system, query) pair of the per-query "
        f"table{told}: the first row of each pair counts; filter the table to one row per "
        "pair (one bound, one run) to compare what you mean"
    ]


def per_query_of(
    args: argparse.Namespace, qrels: str | None = None
) -> tuple[pl.DataFrame | pl.LazyFrame, str | None, list[str], str]:
    """INPUT's per-query table, read as it is (--per-query-table) or evaluated (with `qrels`
    in place of --qrels when given); the baseline's system (--baseline may name a run file by
    its path); the notes to print; which queries the means are over, in words."""
    if args.per_query_table:
        if args.runs:
            msg = "--per-query-table reads one table; run files are evaluated (drop the option)"
            raise InputError(msg)
        keys = (getattr(args, "by", "system"), getattr(args, "query", "query"))
        table = io.scan(args.input, id_columns=keys, what="per-query table")
        notes = _repeats(table, keys)
        return table, getattr(args, "baseline", None), notes, "the per-query table's queries"
    evaluated = argparse.Namespace(**vars(args))
    if qrels is not None:
        evaluated.qrels = qrels
    opts = options.from_args(evaluated, "cli-compare")
    per_query, baseline, notes = _evaluate(evaluated, opts)
    queries = opts.semantics.queries
    return per_query, baseline, notes, f"{queries} queries, {common.AS_TREC_EVAL[queries]}"


def _evaluate(
    args: argparse.Namespace, opts: options.Options
) -> tuple[pl.DataFrame, str | None, list[str]]:
    """The per-query table of the input (one table, or TREC run files, one system each) read
    by the input stage every command shares and evaluated once with the user's engine; and
    the baseline's system (--baseline may name a run file by its path); the notes to print."""
    measures = args.measures or DEFAULT_MEASURES
    inputs = common.read_inputs([args.input, *args.runs], args.qrels, opts.input_format)
    if inputs.runs:
        if args.by != "system":
            msg = f"--by {args.by}: TREC run files are one system each; --by is for a table"
            raise InputError(msg)
        if len(inputs.runs) < 2:
            msg = (
                f"TREC run file {args.input} is one system: give two or more run files to "
                "compare (or a table with a system column)"
            )
            raise InputError(msg)
    plan = build_plan(inputs.data, measures, qrels=inputs.qrels, options=inputs.options(opts))
    plan = common.collect(plan, args, inputs)
    # the per-query table, and from the same evaluation which judged queries each system did
    # not answer: those are in the table already, scored 0, so compare's count of missing rows
    # (queries_filled) is 0 for them and would not tell
    per_query, audit = pl.collect_all([plan.per_query(), plan.audit()])
    lacking = audit.filter(pl.col("queries_judged_not_retrieved") > 0)
    notes = []
    if lacking.height and opts.semantics.queries == "judged":
        counts = lacking.select(args.by, "queries_judged_not_retrieved").iter_rows()
        notes.append(
            f"preval: judged queries a {'run' if inputs.runs else 'system'} did not answer, "
            "scored 0 for it (trec_eval -c): " + ", ".join(f"{s}: {n}" for s, n in counts)
        )
    return per_query, inputs.system(args.baseline), notes


def _with_risk(result: pl.DataFrame, per_query, baseline: str, args) -> pl.DataFrame:
    """The comparison with each row's URisk and TRisk against the baseline (`preval.risk`,
    on the comparison's query universe: with --risk 0 URisk is the delta)."""
    from ..risk_adjusted import risk_summary

    measures = result["measure"].unique(maintain_order=True).to_list()
    risk = risk_summary(
        per_query,
        baseline=baseline,
        measures=measures,
        alpha=args.risk,
        by=args.by,
        query=args.query,
        missing=args.missing,
    ).select("system", "measure", "urisk", "trisk", pl.col("p_value").alias("trisk_p_value"))
    return result.join(risk.collect(), on=["system", "measure"], how="left", maintain_order="left")


def _georisk(compared, per_query, args) -> pl.LazyFrame:
    """ZRisk and GeoRisk of every system against all of them (`preval.georisk`), on the
    comparison's measures and query universe (the table `compare` is given, its rules)."""
    from ..risk_adjusted import georisk

    return georisk(
        per_query,
        measures=args.measures if args.per_query_table else None,
        alpha=args.georisk,
        by=args.by,
        query=args.query,
        missing=args.missing,
    ).select("system", "measure", "zrisk", "georisk")


def _with_georisk(result: pl.DataFrame, georisk: pl.LazyFrame) -> pl.DataFrame:
    """The comparison with the ZRisk and GeoRisk of each row's system and of its baseline."""
    scores = georisk.collect()
    base = scores.rename(
        {"system": "baseline", "zrisk": "baseline_zrisk", "georisk": "baseline_georisk"}
    )
    return result.join(scores, on=["system", "measure"], how="left", maintain_order="left").join(
        base, on=["baseline", "measure"], how="left", maintain_order="left"
    )
