"""The fusion registry: score normalisations (`NORMS`) and fusion methods (`METHODS`), each
registered once by a decorator in the module of its family, which imports this one.

The data contract every normalisation and method shares is the *stacked* frame: the input runs
one under the other, as a `polars.LazyFrame` with columns

* ``query`` and ``doc``: the ids, as the input stage reads them;
* ``run``: UInt32, the run's 0-based position in the list of runs given to `preval.fuse`;
* ``score``: Float64, the run's score (after normalisation, when a method reads it);
* ``rank``: UInt32, the 1-based position of the document in its run and query, in the order the
  fusion core defines (score descending, ties as the core documents them).

A document appears at most once per run and query. A normalisation maps a stacked frame to a
stacked frame (the same rows, ``score`` replaced, ``rank`` recomputed where the order changes;
``borda`` also adds a row for each candidate a run did not retrieve). A method maps a stacked
frame to one row per (query, doc) with the fused ``score``; a supervised method first learns a
table from training runs and qrels (`Method.train`) and reads it when it fuses.

What the core (`preval.fusion.core`) passes and reads: ``weights`` is always one float per run
(1.0 each when the caller gave none), so ``len(weights)`` is the number of runs. A method may
also return ``_first`` (UInt64, the fused tie key, `core.first_key`) and ``_dups`` (rows that
repeat a (run, query, doc), counted by its group_by, `core.wide`); when it does not, the core
computes both with one more group_by. The core sorts and ranks the method's output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

# (stacked, weights per run or None, parameters, what `train` learned or None) -> fused frame
Fuse = Callable[[pl.LazyFrame, "Sequence[float] | None", dict[str, Any], Any], pl.LazyFrame]
# (stacked training runs, training qrels with query, doc, label, parameters) -> learned table
Train = Callable[[pl.LazyFrame, pl.LazyFrame, dict[str, Any]], Any]
Normalise = Callable[[pl.LazyFrame], pl.LazyFrame]


@dataclass(frozen=True)
class Rule:
    """A method parameter's domain: a finite real number (a whole one when `whole`) for which
    `ok` holds; `text` says the domain in messages ("a number >= 0")."""

    text: str
    ok: Callable[[float], bool]
    whole: bool = False


@dataclass(frozen=True)
class Method:
    """One fusion method: its function, its parameters with their defaults, its normalisation
    when none is given, and, for a supervised method, how it learns from training qrels."""

    name: str
    fuse: Fuse
    params: dict[str, Any] = field(default_factory=dict)
    default_norm: str = "min-max"
    train: Train | None = None
    weighted: bool = False  # does the method read per-run weights
    doc: str = ""
    rules: dict[str, Rule] = field(default_factory=dict)  # each parameter's domain

    @property
    def supervised(self) -> bool:
        return self.train is not None


@dataclass(frozen=True)
class Norm:
    """One score normalisation, applied per run and query."""

    name: str
    apply: Normalise
    doc: str = ""


METHODS: dict[str, Method] = {}
NORMS: dict[str, Norm] = {}


def method(
    name: str,
    *,
    params: dict[str, Any] | None = None,
    default_norm: str = "min-max",
    train: Train | None = None,
    weighted: bool = False,
    rules: dict[str, Rule] | None = None,
) -> Callable[[Fuse], Fuse]:
    """Register a fusion function under `name` (its docstring's first line is its help);
    `rules` gives each parameter's domain (a parameter without one: any finite number)."""

    def register(fn: Fuse) -> Fuse:
        doc = (fn.__doc__ or "").strip().splitlines()[0]
        METHODS[name] = Method(
            name, fn, dict(params or {}), default_norm, train, weighted, doc, dict(rules or {})
        )
        return fn

    return register


def norm(name: str) -> Callable[[Normalise], Normalise]:
    """Register a normalisation under `name` (its docstring's first line is its help)."""

    def register(fn: Normalise) -> Normalise:
        doc = (fn.__doc__ or "").strip().splitlines()[0]
        NORMS[name] = Norm(name, fn, doc)
        return fn

    return register


def listed() -> list[Method]:
    """The methods in the order listings show them: the unsupervised ones, then those that learn
    (each group in the order of registration)."""
    return sorted(METHODS.values(), key=lambda m: m.supervised)
