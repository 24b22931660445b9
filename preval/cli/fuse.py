"""``preval fuse``: fuse runs (RRF, CombMNZ, ... after a normalisation) into one, written as a
TREC run or a table, out of core within ``--memory-limit``."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from .. import report
from ..errors import PrevalError
from ..fusion.core import TIES
from ..options import DUPLICATES, INPUT_FORMATS
from ..spill import SpillDirectory
from . import common, fuse_tune

EXAMPLES = """\
examples:
  preval fuse fixtures/trec/bm25.run fixtures/trec/hybrid.run.gz -o fused.run
  preval fuse bm25.run dense.run --method comb_mnz --norm min-max -o fused.parquet
  preval fuse a.run b.run c.run --method wsum --weights 0.5,0.3,0.2 -o fused.run
  preval fuse a.run b.run --method rrf --param k=20 -o fused.run --memory-limit 2GB
  preval fuse --list
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    fu = subparsers.add_parser(
        "fuse",
        help="fuse runs into one (RRF, CombMNZ, Borda, Condorcet ...)",
        description="Fuse runs into one run: each run normalised per query, then combined by a "
        "fusion method (as ranx's fuse). See docs/fusion.md.",
        epilog=EXAMPLES + fuse_tune.EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fu.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="runs: TREC run files, or tables (.parquet, .pq, .csv, .tsv, .tab) with query, doc "
        "and score columns",
    )
    fu.add_argument("--method", default="rrf", help="fusion method (default: rrf; see --list)")
    fu.add_argument(
        "--norm",
        default=None,
        help="score normalisation per run and query (default: the method's: min-max for the "
        "score-based methods, none for the rank-based ones; see --list)",
    )
    fu.add_argument(
        "--weights",
        type=_weights,
        default=None,
        metavar="W1,W2,...",
        help="one weight per run, in order, for the weighted methods (wsum, wmnz, mixed, "
        "weighted_bordafuse, weighted_condorcet)",
    )
    fu.add_argument(
        "--param",
        action="append",
        default=[],
        type=_param,
        metavar="NAME=VALUE",
        help="a method parameter, e.g. k=60 (rrf), phi=0.8 (rbc), gamma=1 (comb_gmnz), "
        "sigma=0.01 (logn_isr) (repeatable)",
    )
    fu.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="where to write the fused run: .parquet, .pq, .csv, .tsv, .json, .ndjson as a "
        "table, any other "
        "path as a TREC run (query Q0 doc rank score tag); - prints the TREC run on stdout",
    )
    fu.add_argument("--tag", default=None, help="the TREC run's tag (default: the method)")
    fu.add_argument("--list", action="store_true", help="list the methods and normalisations")
    fu.add_argument(
        "--format",
        choices=("table", "markdown"),
        default="table",
        help="the --list format (markdown: the tables of docs/fusion.md)",
    )
    fu.add_argument("--query", default="query", metavar="COL", help="a table's query column")
    fu.add_argument("--doc", default="doc", metavar="COL", help="a table's doc column")
    fu.add_argument("--score", default="score", metavar="COL", help="a table's score column")
    fu.add_argument(
        "--duplicates",
        choices=DUPLICATES,
        default="error",
        help="a document twice in one run and query: error, or keep the max score or the first",
    )
    fu.add_argument(
        "--ties",
        choices=TIES,
        default="input",
        help="a run's equal scores: input (ranx's order: as the lines come) or trec (trec_eval's: "
        "doc id descending, the same fused run for any order of the input's lines)",
    )
    fu.add_argument(
        "--input-format",
        choices=INPUT_FORMATS,
        default="auto",
        help="how a path is read: auto (by its suffix), table, or trec",
    )
    group = fu.add_argument_group("engine (docs/engines.md)")
    group.add_argument(
        "--memory-limit",
        type=common.parse_size,
        default=None,
        metavar="SIZE",
        help="what the fusion may hold, e.g. 2GB (default 4GB): larger runs are fused out of "
        "core, their rows spilled to disk in buckets of whole queries",
    )
    group.add_argument(
        "--tmp-dir",
        default=None,
        metavar="DIR",
        help="where spill files go (default: TMPDIR, else the system's temporary directory)",
    )
    fuse_tune.add_arguments(fu)
    return fu


def _weights(text: str) -> list[float]:
    try:
        return [float(w) for w in text.split(",")]
    except ValueError:
        msg = f"expected comma-separated numbers such as 0.3,0.7, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _param(text: str) -> tuple[str, float | int]:
    name, sep, value = text.partition("=")
    try:
        number = float(value)
    except ValueError:
        number = None
    if not sep or not name.strip() or number is None:
        msg = f"expected NAME=NUMBER such as k=60, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return name.strip(), int(number) if number.is_integer() and "." not in value else number


def listing() -> str:
    """The methods and normalisations of the registry, one line each."""
    from ..fusion import core
    from ..fusion.registry import METHODS, NORMS, listed

    core.get_method("rrf")  # loads the registry
    lines = ["methods (--method):"]
    width = max(map(len, METHODS))
    for m in listed():
        params = ", ".join(f"{k}={v}" for k, v in m.params.items())
        extra = [
            f"params: {params}" if params else "",
            "weighted" if m.weighted else "",
            "supervised" if m.supervised else "",
            f"default norm: {m.default_norm}",
        ]
        lines.append(f"  {m.name:<{width}}  {m.doc} ({'; '.join(e for e in extra if e)})")
    lines.append("normalisations (--norm):")
    width = max(map(len, NORMS))
    lines += [f"  {n.name:<{width}}  {n.doc}" for n in NORMS.values()]
    aliases = ", ".join(f"{k}={v}" for k, v in core.ALIASES.items())
    lines.append(f"ranx's method names are aliases: {aliases}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.list:
        from ..fusion.core import markdown_table

        print(markdown_table() if args.format == "markdown" else listing())
        return 0
    if not args.runs:
        msg = "give the runs to fuse (preval fuse RUN [RUN ...] -o PATH), or --list"
        raise PrevalError(msg)
    # (- is standard input, once: a run, or the judgments of --optimize or --train-qrels)
    n, train = len(args.runs), args.train_runs or []
    *read, args.qrels, args.train_qrels = common.standard_input(
        [*args.runs, *train, args.qrels, args.train_qrels]
    )
    args.runs, args.train_runs = read[:n], read[n:] or args.train_runs
    if args.tag is not None and args.output not in (None, report.STDOUT):
        from ..fusion.writers import is_table

        if is_table(args.output):  # (a flag that changes nothing is refused, not ignored)
            msg = f"--tag names a TREC run's tag: the table {args.output} has no tag column"
            raise PrevalError(msg)
    fuse_tune.check(args)
    if fuse_tune.wants(args):
        return fuse_tune.run(args)
    if args.output is None:
        msg = "give the output with -o PATH (.parquet, .csv, .tsv: a table; else a TREC run)"
        raise PrevalError(msg)
    from ..fusion import writers

    params = dict(args.param)

    def fuse_to(path: str) -> int:
        return writers.fuse_to(
            args.runs, path, args.method, args.norm, args.weights, tag=args.tag,
            memory_limit=args.memory_limit, tmp_dir=args.tmp_dir, query=args.query,
            doc=args.doc, score=args.score, input_format=args.input_format,
            duplicates=args.duplicates, ties=args.ties, **params,
        )  # fmt: skip

    if args.output == report.STDOUT:
        rows = _to_stdout(fuse_to, args.tmp_dir)
        where = "standard output"
    else:
        rows, where = fuse_to(args.output), args.output
    # a message, not a result: stdout holds the fused run with -o -, else nothing
    print(f"preval: {rows:,} fused rows written to {where}", file=sys.stderr)
    return 0


def _to_stdout(fuse_to: Callable[[str], int], tmp_dir: str | None) -> int:
    """``-o -``: the fused TREC run on stdout (for ``| preval trec QRELS -``), written first to
    a temporary file (in --tmp-dir, else the system's), so that stdout gets a complete run or
    nothing; the file is removed whatever ends the command."""
    if tmp_dir is not None and not Path(tmp_dir).is_dir():
        msg = f"--tmp-dir {tmp_dir}: no such directory"
        raise PrevalError(msg)
    # (its removal arranged before it is made: mkdtemp's folder, made before the try below,
    # stayed when a signal was raised as mkdtemp returned)
    folder = SpillDirectory(prefix="preval-fuse-", dir=tmp_dir)
    try:
        path = str(folder.path / "fused.run")
        rows = fuse_to(path)
        sys.stdout.flush()
        with open(path, "rb") as fused:
            try:
                shutil.copyfileobj(fused, sys.stdout.buffer)
                sys.stdout.buffer.flush()
            except BrokenPipeError:  # (the reader left: `main` ends quietly)
                raise
            except OSError as exc:
                raise common.unwritable_stdout(exc) from exc
        return rows
    finally:
        folder.cleanup()
