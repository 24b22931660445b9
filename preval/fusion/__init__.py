"""Fusion of runs (`preval.fuse`): the registry of methods and normalisations, then one module
per family of methods."""

from . import registry  # noqa: F401
