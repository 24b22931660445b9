"""preval: evaluate ranked results for millions of queries at once, natively on Polars.

>>> import polars as pl, preval
>>> per_query = preval.evaluate(pl.scan_parquet("results.parquet"), ["AP", "P@10"])
>>> preval.summarize(per_query).collect()
"""

from .curves import CONVENTIONS, curve
from .errors import (
    ColumnTypeError,
    DuplicateError,
    InputError,
    InvalidValueError,
    MeasureError,
    MissingColumnError,
    PrevalError,
)
from .evaluate import audit, evaluate, to_long
from .io import scan_qrels, scan_run
from .measures import CATALOGUE, parse
from .summary import summarize

__version__ = "0.1.0"

__all__ = [
    "CATALOGUE",
    "CONVENTIONS",
    "ColumnTypeError",
    "DuplicateError",
    "InputError",
    "InvalidValueError",
    "MeasureError",
    "MissingColumnError",
    "PrevalError",
    "__version__",
    "audit",
    "curve",
    "evaluate",
    "parse",
    "scan_qrels",
    "scan_run",
    "summarize",
    "to_long",
]
