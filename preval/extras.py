"""The optional dependencies (the package's extras), imported only where a feature uses them.

A bare ``pip install .`` runs everything but these features; each asks for its extra by name
(`require`), so a missing one is one line that says what to install, never a traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import PrevalError

# module -> the extra that installs it (pyproject.toml's optional-dependencies)
EXTRAS = {"scipy": "stats", "matplotlib": "plot", "pyspark": "spark"}


class MissingDependencyError(PrevalError, ImportError):
    """A feature needs an optional dependency that is not installed."""


def require(module: str, feature: str) -> ModuleType:
    """Import `module` (e.g. ``"scipy.stats"``) for `feature`, or raise naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        extra = EXTRAS[top]
        msg = f"{feature} needs {top}, which is not installed: pip install 'preval[{extra}]'"
        raise MissingDependencyError(msg) from None
