"""Fusion of runs (`preval.fuse`): the registry of methods and normalisations, the core that
stacks runs and applies them, then one module per family of methods."""

from . import core, norms, registry, unsupervised  # noqa: F401  (registers methods and norms)
from .core import apply, fuse, stack  # noqa: F401
