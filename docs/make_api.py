"""Write docs/api.md, the reference of preval's public functions, from their docstrings.

Usage: python docs/make_api.py [--check]   (--check: exit 1 if docs/api.md is out of date)
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import preval
import preval.spark  # an optional module, imported for its reference

PAGE = Path(__file__).resolve().parent / "api.md"
# the public surface, in the order a user meets it
NAMES = [
    "evaluate",
    "summarize",
    "audit",
    "plan",
    "collect",
    "Result.per_query",
    "Result.audit",
    "Result.summary",
    "to_long",
    "scan_run",
    "scan_qrels",
    "curve",
    "parse",
    "bounds",
    "define_measure",
    "RankedQuery",
    "remove_measure",
]
OPTIONAL = [
    "compare",
    "agreement",
    "discriminative_power",
    "risk",
    "risk_summary",
    "georisk",
    "power.analysis",
    "power.detectable_difference",
    "power.queries_needed",
    "power.paired_t_power",
    "spark.evaluate",
    "spark.summarize",
    "spark.fuse",
    "sql",
    "fuse",
    "optimize_fusion",
]


def resolve(name: str):
    target = preval
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def _signature(target) -> str:
    """The signature as written in the source (annotations are strings there)."""
    sig = inspect.signature(target)
    parts, star = [], False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        text = p.name
        if p.annotation is not p.empty:
            text += f": {p.annotation}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        parts.append(text)
    ret = "" if sig.return_annotation is sig.empty else f" -> {sig.return_annotation}"
    return f"({', '.join(parts)}){ret}"


def render() -> str:
    lines = [
        "# preval API reference",
        "",
        "Generated from the docstrings by `python docs/make_api.py`; a test keeps it current.",
        "",
    ]
    for name in [*NAMES, *OPTIONAL]:
        target = resolve(name)
        if target is None:
            if name in OPTIONAL:
                continue
            msg = f"preval.{name} is not defined"
            raise SystemExit(msg)
        signature = _signature(target)
        doc = inspect.cleandoc(target.__doc__ or "(no docstring)")
        lines += [f"## `preval.{name}`", "", "```python", f"{name}{signature}", "```", "", doc, ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        return 0 if PAGE.exists() and PAGE.read_text() == text else 1
    PAGE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
