"""The input stage, shared by evaluation and curves: a source read lazily, its columns checked
once, and the rows renamed to the canonical names that ranking and the measures read.

    source ──io──> canonical rows ──validate──> judged rows ──ranking──> ranked frame
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from . import io, validate
from .ranking import DOC, LABEL, SCORE


def read(
    data: io.Source,
    *,
    query: str | None,
    by: Sequence[str],
    doc: str,
    score: str,
    label: str,
    needs_label: bool = True,
    counts: Sequence[str] = (),
    what: str = "input",
) -> tuple[pl.LazyFrame, pl.Schema]:
    """`data` read lazily (`io.scan`) and its schema, after the checks every plan needs: each
    role's column is present (a missing one named with the columns there are), score and
    label are numeric, query and doc ids are strings or integers.

    `query=None`: no query key (a pooled ranking); `needs_label=False`: labels come from
    elsewhere (qrels), so the input need not have them; `counts`: columns of per-query totals.
    """
    keys = [*by, *([query] if query is not None else [])]
    data = io.normalise(data, what)  # (once: a stream is read once; a pandas index is named)
    lf = io.scan(data, id_columns=(*keys, doc), numeric_columns=(score, label), what=what)
    schema = lf.collect_schema()
    if isinstance(data, (str, Path)) and str(data) not in what:
        what = f"{what} {data}"  # (a rule broken by a file's columns names the file)
    needed = {**({"query": query} if query is not None else {}), "score": score,
              **{f"by ({b})": b for b in by}, **{f"count ({c})": c for c in counts},
              **({"label": label} if needs_label else {})}  # fmt: skip
    validate.require_columns(
        schema, needed, what, optional={"doc": doc}, unread=io.pandas_unread(data)
    )
    validate.require_numeric(schema, score, "score", what)
    if needs_label:
        validate.require_numeric(schema, label, "label", what)
    if query is not None:
        validate.require_key(schema, query, "query", what)
    if doc in schema:
        validate.require_key(schema, doc, "doc", what)
    return lf, schema


def canonical(
    lf: pl.LazyFrame,
    *,
    keys: Sequence[tuple[str, str]],
    doc: str | None,
    score: str,
    label: str | None,
    counts: Mapping[str, str] | None = None,
    extra: Sequence[pl.Expr] = (),
) -> pl.LazyFrame:
    """The rows of `lf` (from `read`) under canonical names, nothing else: each key column
    (column, name) under its name, `doc` as DOC (None: no doc column), the score and label
    as Float64 SCORE and LABEL (label None: none), each count column (name: column) as Int64,
    then `extra`."""
    return lf.select(
        *[pl.col(column).alias(name) for column, name in keys],
        *([pl.col(doc).alias(DOC)] if doc is not None else []),
        pl.col(score).cast(pl.Float64).alias(SCORE),
        *([pl.col(label).cast(pl.Float64).alias(LABEL)] if label is not None else []),
        *[pl.col(column).cast(pl.Int64).alias(name) for name, column in (counts or {}).items()],
        *extra,
    )
