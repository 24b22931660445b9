"""Fusion of runs (`preval.fuse`): the registry of methods and normalisations, the core that
stacks runs and applies them, then one module per family of methods."""

from . import core, norms, registry, supervised, unsupervised  # noqa: F401  (they register)
from .core import apply, fuse, learn, stack, training  # noqa: F401
