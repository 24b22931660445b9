"""preval: evaluate ranked results for millions of queries at once, natively on Polars.

>>> import polars as pl, preval
>>> per_query = preval.evaluate(pl.scan_parquet("results.parquet"), ["AP", "P@10"])
>>> preval.summarize(per_query).collect()
"""

# first of all, before any other import: a signal in the first instants of the command ends it
# quietly (`_quiet_start`), then the allocator is set before Polars loads (`_allocator`)
from . import _quiet_start  # noqa: F401  # isort: skip
from . import _allocator  # noqa: F401  # isort: skip

from typing import TYPE_CHECKING

from .api import audit, evaluate, plan
from .conventions import CONVENTIONS
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
from .summary import summarize, to_long

if TYPE_CHECKING:  # loaded on first use (`_LAZY`); named here for type checkers
    from .curves import curve
    from .custom import RankedQuery, define_measure, remove_measure
    from .engines import NotGroupedError
    from .result import Result, collect
    from .sqlgen import sql
    from .unjudged import bounds

__version__ = "0.1.0"


# the statistics load numpy, fusion its own modules, and the rest are modules that
# `preval trec` and `preval evaluate` do not use: only a session that uses them pays for
# them (name -> module)
_LAZY = {
    "curve": "curves",
    "RankedQuery": "custom",
    "define_measure": "custom",
    "remove_measure": "custom",
    "Result": "result",
    "collect": "result",
    "sql": "sqlgen",
    "bounds": "unjudged",
    "NotGroupedError": "engines",  # (the engines load when a plan is collected)
    "compare": "significance",
    "agreement": "meta_evaluation",
    "discriminative_power": "meta_evaluation",
    "risk": "risk_adjusted",
    "risk_summary": "risk_adjusted",
    "georisk": "risk_adjusted",
    "fuse": "fusion",
    "optimize_fusion": "fusion.tuning",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    if name == "power":  # the module: preval.power.analysis, .queries_needed ... (numpy)
        import importlib

        return importlib.import_module(".power", __name__)
    msg = f"module 'preval' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "RankedQuery",
    "Result",
    "__version__",
    "agreement",
    "audit",
    "bounds",
    "collect",
    "compare",
    "curve",
    "define_measure",
    "discriminative_power",
    "evaluate",
    "fuse",
    "georisk",
    "optimize_fusion",
    "parse",
    "plan",
    "power",
    "remove_measure",
    "risk",
    "risk_summary",
    "scan_qrels",
    "scan_run",
    "sql",
    "summarize",
    "to_long",
]
