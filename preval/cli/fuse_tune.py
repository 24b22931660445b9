"""``preval fuse``'s tuning and supervised flags: ``--optimize MEASURE --qrels QRELS [--folds K]``
searches the method's weights and parameters (`preval.optimize_fusion`) and fuses with the
choice; ``--train-qrels QRELS`` trains a supervised method (probfuse, segfuse ...).

`add_arguments` adds the flags to the ``fuse`` parser; `wants` says whether a parsed command
line asks for them, and `run` then does the whole command (read, tune or train, fuse, write).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import report
from ..errors import PrevalError, counted

EXAMPLES = """\
tuning (docs/fusion.md):
  preval fuse a.run b.run --method wsum --optimize nDCG@10 --qrels qrels.txt -o fused.run
  preval fuse a.run b.run --method rrf --optimize AP --qrels qrels.txt --folds 5 -o fused.run
  preval fuse a.run b.run --method rrf --optimize nDCG@10 --qrels q.txt --search k=20,40,60
  preval fuse a.run b.run --method probfuse --train-qrels train.qrels --param n_segments=10 \\
      -o fused.run
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The tuning flags, as one group of `parser` (the ``fuse`` subcommand's)."""
    group = parser.add_argument_group("tuning and supervised methods (docs/fusion.md)")
    group.add_argument(
        "--optimize",
        metavar="MEASURE",
        default=None,
        help="search the method's weights and parameters for the best MEASURE (e.g. nDCG@10) "
        "on --qrels, as ranx's optimize_fusion, then fuse with the choice; prints the choice, "
        "the folds and the fused run against each input",
    )
    group.add_argument("--qrels", metavar="QRELS", default=None,
                       help="the judgments --optimize scores on (and trains with)")  # fmt: skip
    group.add_argument(
        "--folds",
        type=int,
        default=None,
        metavar="K",
        help="with --optimize: k-fold cross-validation over the judged queries (each fold tuned "
        "on the others, scored on its own); the comparison reads the held-out scores",
    )
    group.add_argument("--seed", type=int, default=0, metavar="N",
                       help="the folds' random seed (default: 0)")  # fmt: skip
    group.add_argument(
        "--search",
        action="append",
        default=[],
        type=_search,
        metavar="NAME=V1,V2,...",
        help="with --optimize: the values searched for a parameter (k=20,40,60), or weights=STEP "
        "(weights on a grid of STEP summing to 1); default: ranx's search (repeatable)",
    )
    group.add_argument(
        "--train-qrels",
        metavar="QRELS",
        default=None,
        help="a supervised method's (probfuse, segfuse, slidefuse, posfuse, bayesfuse, mapfuse) "
        "training judgments",
    )
    group.add_argument(
        "--train-runs",
        nargs="+",
        metavar="RUN",
        default=None,
        help="with --train-qrels: the training runs, in the order of the runs fused (default: "
        "the runs fused)",
    )
    group.add_argument("--test", choices=("t", "wilcoxon", "randomization", "bootstrap"),
                       default="t", help="with --optimize: the paired test")  # fmt: skip
    group.add_argument("--correction", choices=("holm", "bonferroni", "fdr_bh", "none"),
                       default="holm", help="with --optimize: the p-values' correction over the "
                       "inputs (default: holm)")  # fmt: skip


def _search(text: str) -> tuple[str, Any]:
    name, sep, values = text.partition("=")
    name = name.strip()
    try:
        numbers = [float(v) for v in values.split(",")]
    except ValueError:
        numbers = []
    if not sep or not name or not numbers:
        msg = f"expected NAME=V1,V2,... such as k=20,40,60 or weights=0.1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    ints = [int(v) if v.is_integer() and "." not in s else v
            for v, s in zip(numbers, values.split(","), strict=True)]  # fmt: skip
    if name == "weights":
        if len(ints) != 1:
            msg = f"weights=STEP takes one step (the grid's), got {text!r}"
            raise argparse.ArgumentTypeError(msg)
        return name, float(numbers[0])
    return name, ints


def wants(args: argparse.Namespace) -> bool:
    """Whether the command line asks for tuning or training (then `run` does the command)."""
    return args.optimize is not None or args.train_qrels is not None


def check(args: argparse.Namespace) -> None:
    """Refuse the flags of tuning and training that would change nothing (every fuse command
    line passes here, tuning or not: a flag is refused, not ignored)."""
    if args.optimize is not None and args.train_qrels is not None:
        msg = "--optimize trains on --qrels: give --train-qrels without --optimize only"
        raise PrevalError(msg)
    if args.optimize is None and (args.folds is not None or args.search or args.qrels):
        msg = "--qrels, --folds and --search go with --optimize MEASURE"
        raise PrevalError(msg)
    if args.optimize is not None and args.weights is not None:
        msg = (
            "--optimize searches the weights: give the weights to try with --search "
            "weights=STEP, or fuse with --weights without --optimize"
        )
        raise PrevalError(msg)
    both = sorted({name for name, _ in args.param} & {name for name, _ in args.search})
    if args.optimize is not None and both:
        msg = f"{both[0]} is given by --param and by --search: give it once (--search {both[0]}=V)"
        raise PrevalError(msg)
    if args.train_qrels is None and args.train_runs:
        msg = "--train-runs go with --train-qrels QRELS (the judgments they train on)"
        raise PrevalError(msg)


def run(args: argparse.Namespace) -> int:
    """Tune (``--optimize``) or train (``--train-qrels``), fuse, write ``-o``, print."""
    from ..fusion import core, learn, writers

    check(args)
    if args.output is None and args.train_qrels is not None:
        msg = "give the output with -o PATH (.parquet, .csv, .tsv: a table; else a TREC run)"
        raise PrevalError(msg)
    if args.output == report.STDOUT:
        msg = (
            "-o -: --optimize and --train-qrels print their report on stdout; write the fused "
            "run to a file (-o fused.run)"
        )
        raise PrevalError(msg)
    if args.output is not None:
        writers.check_target(args.output)
        # an output on a run or on judgments would replace what is being fused or scored
        read = [*args.runs, *(args.train_runs or []), args.qrels, args.train_qrels]
        report.check_distinct({"output": args.output}, read)
    params = dict(args.param)
    tag = args.tag or args.method
    columns = {"query": args.query, "doc": args.doc, "score": args.score}
    if args.train_qrels is not None:
        train_runs = args.train_runs or args.runs
        if len(train_runs) != len(args.runs):
            msg = (
                f"{counted(len(train_runs), 'training run')} for "
                f"{counted(len(args.runs), 'run')}: give one per run"
            )
            raise PrevalError(msg)
        learned = learn(train_runs, args.train_qrels, args.method, norm=args.norm,
                        input_format=args.input_format, ties=args.ties, **params)  # fmt: skip
        stacked = core.stack(args.runs, input_format=args.input_format,
                             duplicates=args.duplicates, ties=args.ties, **columns)  # fmt: skip
        fused = core.apply(stacked, args.method, norm=args.norm, weights=args.weights,
                           learned=learned.lazy(), params=params)  # fmt: skip
        writers.write(fused, args.output, tag=tag)
        print(
            f"preval: {args.method} trained on {args.train_qrels}; fused run written to "
            f"{args.output}",
            file=sys.stderr,
        )
        return 0
    if args.qrels is None:
        msg = "--optimize needs the judgments to score on: --qrels QRELS"
        raise PrevalError(msg)
    return _optimize(args, params, tag, columns)


def _optimize(args: argparse.Namespace, params: dict, tag: str, columns: dict) -> int:
    from ..fusion import writers
    from ..fusion.tuning import optimize_fusion

    search = dict(args.search) or None
    if params:  # --param fixes a parameter the search would vary
        search = {**(search or {}), **{k: [v] for k, v in params.items()}}
    tuning = optimize_fusion(
        args.runs, args.qrels, method=args.method, norm=args.norm, metric=args.optimize,
        search=search, folds=args.folds, seed=args.seed, input_format=args.input_format,
        duplicates=args.duplicates, ties=args.ties, **columns,
    )  # fmt: skip
    print(f"{tuning.method} (norm {tuning.norm}): best {tuning.metric} "
          f"{tuning.candidates['score'].max():.4f} of "
          f"{counted(tuning.candidates.height, 'candidate')} "
          f"with {_choice(tuning.best)}")  # fmt: skip
    if tuning.folds is not None:
        print(f"\n{args.folds}-fold cross-validation (seed {args.seed}): held-out "
              f"{tuning.metric} {tuning.per_query[tuning.metric].mean():.4f}")  # fmt: skip
        print(report.table(tuning.folds.with_columns(_listed(tuning.folds))))
    which = "held-out scores" if tuning.folds is not None else "tuned on the same queries"
    print(f"\nthe fused run against each input ({which}, {args.test}-test, {args.correction}):")
    result = tuning.compare(test=args.test, correction=args.correction)
    shown = ["system", "baseline", "queries", "mean", "baseline_mean", "delta", "p_value",
             "p_corrected", "wins", "ties", "losses"]  # fmt: skip
    print(report.table(report.readable(result.select(shown))))
    if args.output is not None:
        canonical = {v: k for k, v in columns.items()}
        writers.write(tuning.fused.rename(canonical, strict=False), args.output, tag=tag)
        print(f"\nfused run written to {args.output}")
    return 0


def _choice(best: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in best.items() if v is not None) or "the defaults"


def _listed(table: Any) -> list:
    import polars as pl

    if "weights" not in table.columns:
        return []
    return [pl.col("weights").cast(pl.List(pl.String)).list.join(",")]
