"""The options of an evaluation, each validated once when it is built.

* `Columns`: which input column plays which role (query, doc, score, label, by keys);
* `Semantics`: what the measures mean (relevance level, ties, which queries count, ...);
* `Hints`: what an engine knows of one piece of the input that the plan cannot check (rows
  presorted, groups contiguous); an engine's, never a caller's.

The flat keywords of `preval.evaluate`, `preval.plan`, `preval.audit` and the command line's
arguments are only ways to build them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import validate
from .conventions import get_convention
from .errors import InputError
from .ranking import EXPECTED, TIES

if TYPE_CHECKING:
    import polars as pl

QUERIES = ("judged", "retrieved")
DUPLICATES = ("error", "max", "first")


def _check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        msg = f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        raise InputError(msg)


@dataclass(frozen=True)
class Columns:
    """The input's column names by role; `by` keys evaluate each group separately;
    `subtopic` names the qrels' subtopic column (diversity measures), None without one."""

    query: str = "query"
    doc: str = "doc"
    score: str = "score"
    label: str = "label"
    by: tuple[str, ...] = ()
    subtopic: str | None = None

    def __post_init__(self) -> None:
        by = self.by
        if isinstance(by, str) or by is None:
            by = () if by is None else (by,)
        object.__setattr__(self, "by", tuple(by))
        for b in self.by:
            if b in (self.query, self.doc, self.score, self.label):
                msg = f"by column {b!r} is also the query, doc, score or label column"
                raise InputError(msg)
        if self.subtopic is not None and self.subtopic in (self.query, self.doc, self.label):
            msg = f"subtopic column {self.subtopic!r} is also the query, doc or label column"
            raise InputError(msg)

    @property
    def roles(self) -> dict[str, str]:
        return {"query": self.query, "doc": self.doc, "score": self.score, "label": self.label}


@dataclass(frozen=True)
class Semantics:
    """What an evaluation counts and how (see `preval.evaluate` for each option)."""

    relevance_level: float = 1
    ties: str | None = None
    queries: str = "judged"
    duplicates: str = "error"
    depth: int | None = None
    judged_only: bool = False
    trec_version: int = 9
    convention: str = "trec"
    num_positives: int | str | None = None
    num_negatives: int | str | None = None
    include_inf: bool = False

    def __post_init__(self) -> None:
        for name in ("num_positives", "num_negatives"):
            value = getattr(self, name)
            if not isinstance(value, str):
                validate.require_count(name, value)
        validate.require_count("depth", self.depth, minimum=1)
        if self.trec_version not in (9, 10):
            msg = f"trec_version must be 9 or 10, got {self.trec_version!r}"
            raise InputError(msg)
        _check_choice("queries", self.queries, QUERIES)
        _check_choice("duplicates", self.duplicates, DUPLICATES)
        if self.ties is not None:
            _check_choice("ties", self.ties, (*TIES, EXPECTED))
        get_convention(self.convention)


@dataclass(frozen=True)
class Hints:
    """What an engine tells the plan of one piece of the input (never checked by the plan:
    wrong hints give wrong results).

    `placeholders` (with qrels): True adds judged queries the run did not answer as one
    placeholder row each; False leaves them out (a chunk of a larger run, which cannot know);
    a LazyFrame of (keys..., query) rows answered elsewhere adds exactly the judged queries
    missing from it. `rows_per_query`: an estimate of the rows of each group, from which the
    plan decides whether ranking only each query's top K rows pays. `presorted`: the rows are
    in ranking order within each group; the plan skips its sort. `contiguous` (with
    `presorted`): each group's rows are also one run; the plan groups by run number. `runs`:
    the name of a column that holds each row's run number already.
    """

    placeholders: bool | pl.LazyFrame = True
    rows_per_query: float | None = None
    presorted: bool = False
    contiguous: bool = False
    runs: str | None = None
