"""preval: evaluate ranked results for millions of queries at once, natively on Polars.

>>> import polars as pl, preval
>>> per_query = preval.evaluate(pl.scan_parquet("results.parquet"), ["AP", "P@10"])
>>> preval.summarize(per_query).collect()
"""

from . import (
    _allocator,  # noqa: F401  (first: it must run before Polars loads)
    _quiet_start,  # noqa: F401  (second: before anything slow loads)
)
from .api import audit, evaluate, plan
from .conventions import CONVENTIONS
from .curves import curve
from .engines import NotGroupedError
from .errors import (
    ColumnTypeError,
    DuplicateError,
    InputError,
    InvalidValueError,
    MeasureError,
    MissingColumnError,
    PrevalError,
)
from .extras import MissingDependencyError
from .io import scan_qrels, scan_run
from .measures import CATALOGUE, parse
from .options import Options
from .planner import Plan
from .result import Result, collect
from .sqlgen import sql
from .summary import summarize, to_long

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # compare loads numpy: only a session that compares systems pays for it
    if name == "compare":
        from .significance import compare

        return compare
    if name == "optimize_fusion":  # loads numpy, as compare
        from .fusion.tuning import optimize_fusion

        return optimize_fusion
    msg = f"module 'preval' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "CATALOGUE",
    "CONVENTIONS",
    "ColumnTypeError",
    "DuplicateError",
    "InputError",
    "InvalidValueError",
    "MeasureError",
    "MissingColumnError",
    "MissingDependencyError",
    "NotGroupedError",
    "Options",
    "Plan",
    "PrevalError",
    "Result",
    "__version__",
    "audit",
    "collect",
    "compare",
    "curve",
    "evaluate",
    "optimize_fusion",
    "parse",
    "plan",
    "scan_qrels",
    "scan_run",
    "sql",
    "summarize",
    "to_long",
]
