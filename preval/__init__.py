"""preval: evaluate ranked results for millions of queries at once, natively on Polars.

>>> import polars as pl, preval
>>> per_query = preval.evaluate(pl.scan_parquet("results.parquet"), ["AP", "P@10"])
>>> preval.summarize(per_query).collect()
"""

from . import _allocator  # noqa: F401  (first: it must run before Polars loads)
from .conventions import CONVENTIONS
from .curves import curve
from .engines import NotGroupedError, collect
from .errors import (
    ColumnTypeError,
    DuplicateError,
    InputError,
    InvalidValueError,
    MeasureError,
    MissingColumnError,
    PrevalError,
)
from .evaluate import Evaluation, audit, evaluate, to_long
from .evaluate import build_plan as plan
from .extras import MissingDependencyError
from .io import scan_qrels, scan_run
from .measures import CATALOGUE, parse
from .sqlgen import sql
from .summary import summarize

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # compare loads numpy: only a session that compares systems pays for it
    if name == "compare":
        from .significance import compare

        return compare
    msg = f"module 'preval' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "CATALOGUE",
    "CONVENTIONS",
    "ColumnTypeError",
    "DuplicateError",
    "Evaluation",
    "InputError",
    "InvalidValueError",
    "MeasureError",
    "MissingColumnError",
    "MissingDependencyError",
    "NotGroupedError",
    "PrevalError",
    "__version__",
    "audit",
    "collect",
    "compare",
    "curve",
    "evaluate",
    "parse",
    "plan",
    "scan_qrels",
    "scan_run",
    "sql",
    "summarize",
    "to_long",
]
