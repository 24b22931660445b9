"""``preval measures``: the measure catalogue."""

from __future__ import annotations

import argparse

from ..measures import catalogue_rows, markdown_table


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    ms = subparsers.add_parser(
        "measures",
        help="list the measure catalogue",
        description="List every measure: its name with its parameters and cutoff, what it "
        "computes, and its aliases (trec_eval's, ir_measures' and ranx's names, which -m "
        "also takes). docs/measures.md says more.",
    )
    ms.add_argument(
        "--format",
        choices=("table", "markdown"),
        default="table",
        help="table: one line per measure; markdown: the table of docs/measures.md "
        "(default: table)",
    )
    return ms


def run(args: argparse.Namespace) -> int:
    if args.format == "markdown":
        print(markdown_table())
        return 0
    rows = catalogue_rows()
    width = max(len(r["measure"]) for r in rows)
    for r in rows:
        alias = f" (aliases: {r['aliases']})" if r["aliases"] else ""
        print(f"{r['measure']:<{width}}  {r['definition']}{alias}")
    return 0
