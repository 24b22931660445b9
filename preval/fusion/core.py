"""The fusion core: runs read into the *stacked* frame (`stack`), normalised, fused by a method
of the registry (`apply`), sorted; `preval.fuse` is the two in one call.

    runs ──io──> stacked (query, doc, run, score, rank) ──norm──> stacked ──method──> fused

Everything is one lazy plan: building it never collects.

The order of a run (``rank``), as ranx 0.3.21 orders it
---------------------------------------------------------
ranx sorts each query's documents with ``numpy.argsort(-scores)`` compiled by numba
(`ranx/data_structures/common.py::sort_dict_by_value`). numba's argsort is its quicksort
(`numba/misc/quicksort.py`): a query of at most 15 documents is sorted by insertion sort alone,
which is stable, so tied scores keep the order the documents were read in (file order for a
TREC run, row order for a dataframe); a larger query is partitioned first, and the order of its
tied documents is whatever the partitioning leaves, defined by no rule. preval's rule is the
stable one: **score descending, ties in input order** — ranx's order wherever ranx has one.

After a normalisation a run is ranked again by its new scores, ties by the previous rank. ranx
keeps the order of its dictionaries instead, which is the same order for every normalisation
but two: min-max-inverted, which ranx sorts again (preval's rule, as above), and borda, after
which ranx's order is the iteration order of a Python set of document ids (random from one
process to the next); preval ranks the borda scores.

The order of the fused run
--------------------------
Fused scores descending; ties by *first occurrence*: the document met first when the runs are
read in order, each in its ranking (run 0's documents by rank, then the documents run 1 adds,
and so on: the ``_first`` key, ``run * 2**32 + rank``, minimal over the runs that hold it). That
is the order in which ranx inserts documents in the fused dictionary before its stable sort of
at most 15 documents, so again ranx's order wherever ranx has one. Output queries are sorted.

Queries missing from a run, documents missing from a run
--------------------------------------------------------
ranx refuses runs whose query sets differ (``fuse`` asserts it). preval fuses every query of any
run and treats a run without the query as a run that retrieved nothing for it: what ranx computes
once its runs are padded with empty results (as ``Run.make_comparable`` pads them). A document
missing from a run is handled by each method as ranx does (see each method's docstring).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from .. import inputs, io
from ..errors import DuplicateError, InputError, InvalidValueError
from ..options import DUPLICATES, INPUT_FORMATS
from ..planner.aggregate import dedupe
from ..validate import KEEP_ONE
from .registry import METHODS, NORMS, Method, Rule, listed
from .stacked import DOC, DUPS, FIRST, QUERY, RANK, ROW, RUN, SCORE, first_key, rank_by

# ranx's names for its methods (`ranx.fusion.fusion_switch`) -> preval's
ALIASES = {
    "sum": "comb_sum", "mnz": "comb_mnz", "max": "comb_max", "min": "comb_min",
    "med": "comb_med", "anz": "comb_anz", "gmnz": "comb_gmnz",
    "w_bordafuse": "weighted_bordafuse", "w_condorcet": "weighted_condorcet",
}  # fmt: skip
NORM_ALIASES = {"min_max": "min-max", "min_max_inverted": "min-max-inverted"}
# a run's equal scores: in input order (ranx's rule) or by doc id descending (trec_eval's rule,
# the same fused run whatever the order of the input's rows)
TIES = ("input", "trec")

# a parameter without a rule of its own: any finite number
ANY_NUMBER = Rule("a finite number", lambda v: True)

STACKED_SCHEMA = {RUN: pl.UInt32, SCORE: pl.Float64, RANK: pl.UInt32}


@dataclass(frozen=True)
class Stacked:
    """Runs read and stacked: `frame` has query, doc, run, score, rank (the registry's contract),
    `names` one name per run (a TREC run's tag or path, else ``run0``, ``run1`` ...), and the
    caller's column names for query, doc and score (the fused frame is named so)."""

    frame: pl.LazyFrame
    names: tuple[str, ...]
    columns: tuple[str, str, str] = (QUERY, DOC, SCORE)
    # the rows before ranking (query, doc, run, score and `ROW`, the input order), for an engine
    # that ranks them piece by piece
    raw: pl.LazyFrame | None = None
    # the TREC run files read, when every run is one: their lines bound the rows from above
    files: tuple[Path, ...] = ()
    ties: str = "input"  # how a run's equal scores are ordered (`TIES`, `rank_rows`)
    # per run, what messages add to its name ("" or a hint: a table with a system column)
    notes: tuple[str, ...] = ()

    @property
    def line_count(self) -> int | None:
        return io.count_lines(list(self.files)) if self.files else None

    @property
    def runs(self) -> int:
        return len(self.names)


def _load_methods() -> None:
    """Import the modules that register methods and normalisations (the package does on import;
    this keeps the registry whole for a caller that loaded `core` some other way)."""
    from . import norms, supervised, unsupervised  # noqa: F401


def get_method(name: str) -> Method:
    """The registered method `name` (ranx's short names are aliases: ``mnz`` ...)."""
    _load_methods()
    key = ALIASES.get(name, name)
    if key not in METHODS:
        raise InputError(_unknown("fusion method", name, list(METHODS)))
    return METHODS[key]


def get_norm(name: str | None, method: Method | None = None) -> str:
    """The normalisation `name` resolves to: the method's default for None."""
    _load_methods()
    if name is None:
        return method.default_norm if method is not None else "min-max"
    key = NORM_ALIASES.get(name, name)
    if key not in NORMS:
        raise InputError(_unknown("normalisation", name, list(NORMS)))
    return key


def _unknown(what: str, name: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(str(name), known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {what} {name!r}{hint} (known: {', '.join(sorted(known))})"


# --- reading runs into the stacked frame -------------------------------------------------------


def stack(
    runs: io.Source | Sequence[io.Source] | Mapping[str, io.Source],
    *,
    query: str = QUERY,
    doc: str = DOC,
    score: str = SCORE,
    input_format: str = "auto",
    duplicates: str = "error",
    ties: str = "input",
) -> Stacked:
    """The runs as one stacked frame, ranked (see the module docstring for the order; `ties`
    as `rank_rows`).

    `runs`: a list of runs, each a dataframe, a table path (Parquet, CSV) or a TREC run file
    (`preval.io.is_trec` under `input_format`), or a dict name -> run. Rows with a null score are
    no retrieved document and are dropped. A null query or doc id or a NaN score raises
    `InvalidValueError`; a document twice in one run and query raises `DuplicateError` (when the
    plan runs) unless `duplicates` is ``"max"`` or ``"first"`` (the one kept, as in `evaluate`).
    """
    if duplicates not in DUPLICATES:
        msg = f"duplicates must be one of {', '.join(map(repr, DUPLICATES))}, got {duplicates!r}"
        raise InputError(msg)
    if input_format not in INPUT_FORMATS:
        known = ", ".join(map(repr, INPUT_FORMATS))
        msg = f"input_format must be one of {known}, got {input_format!r}"
        raise InputError(msg)
    check_ties(ties)
    named = _named(runs)
    if not named:
        msg = "fuse: no run given"
        raise InputError(msg)
    frames, names, files, notes = [], [], [], []
    for i, (name, source) in enumerate(named):
        lf, run_name, note = _read_run(source, name, i, query, doc, score, input_format)
        frames.append(lf)
        names.append(run_name)
        notes.append(note)
        if io.is_trec(source, input_format, "run"):
            files.append(Path(source))
    names = _distinct(names, named)
    # ids of one kind across runs: strings when any run's are (a TREC run's always are)
    for col in (QUERY, DOC):
        dtypes = {f.collect_schema()[col] for f in frames}
        if len(dtypes) > 1:
            frames = [f.with_columns(pl.col(col).cast(pl.String)) for f in frames]
    rows = pl.concat(frames, how="vertical")
    if duplicates != "error":
        rows = dedupe(rows, [RUN, QUERY, DOC], SCORE, duplicates)
    ranked = rank_rows(rows, ties)
    every_trec = len(files) == len(frames)
    return Stacked(ranked, tuple(names), (query, doc, score), rows,
                   tuple(files) if every_trec else (), ties, tuple(notes))  # fmt: skip


def check_ties(ties: str) -> None:
    """Refuse a `ties` rule that is not one of `TIES`."""
    if ties not in TIES:
        msg = f"ties must be one of {', '.join(map(repr, TIES))}, got {ties!r}"
        raise InputError(msg)


def rank_rows(rows: pl.LazyFrame, ties: str = "input") -> pl.LazyFrame:
    """`rows` (query, doc, run, score and `ROW`, the input order) ranked per run and query:
    score descending, equal scores in input order (``"input"``, ranx's order) or by doc id
    descending in byte order (``"trec"``, trec_eval's order for equal scores, which no
    reordering of the input's rows changes); `ROW` dropped."""
    if ties == "trec":
        doc_desc = pl.col(DOC).cast(pl.String).rank("dense", descending=True).over([RUN, QUERY])
        rows = rows.with_columns(doc_desc.alias(ROW))
    return rows.with_columns(rank_by([SCORE], tie=ROW)).drop(ROW)


def _distinct(names: list[str], named: list[tuple[str | None, io.Source]]) -> list[str]:
    """One name per run: runs named alike (two TREC files of one tag) by their paths, as
    `io.run_names` names them for `evaluate`, and a name still repeated (one file given twice)
    with ``#`` and the run's position."""
    if len(set(names)) == len(names):
        return names
    out = [
        str(source) if given is None and isinstance(source, (str, Path)) else name
        for name, (given, source) in zip(names, named, strict=True)
    ]
    if len(set(out)) < len(out):
        out = [f"{n}#{i}" if out.count(n) > 1 else n for i, n in enumerate(out)]
    return out


def _named(runs: Any) -> list[tuple[str | None, io.Source]]:
    if isinstance(runs, Mapping):
        return [(str(k), v) for k, v in runs.items()]
    if isinstance(runs, (str, Path)) or io.as_polars(runs) is not None:
        return [(None, runs)]
    return [(None, r) for r in runs]


def _read_run(
    source: io.Source, name: str | None, i: int, query: str, doc: str, score: str, fmt: str
) -> tuple[pl.LazyFrame, str, str]:
    """One run's rows under canonical names, with its index and input row number; its name;
    a note for messages about it ("" or, for a table with a ``system`` column, that a table of
    several systems is several runs)."""
    what = f"run {i}" if not isinstance(source, (str, Path)) else f"run {source}"
    if io.is_trec(source, fmt, "run"):
        run_name = name or io.run_names([Path(source)])[0]
        lf = io.scan_run(io.RunFiles([source], [run_name])).drop("system")  # (tag read once)
        query, doc, score = QUERY, DOC, SCORE
        schema = lf.collect_schema()
    else:
        source = io.normalise(source, what)
        lf, schema = inputs.read(
            source, query=query, by=(), doc=doc, score=score, label="", needs_label=False,
            what=what,
        )  # fmt: skip
        if doc not in schema:
            msg = f"{what}: missing doc column {doc!r} (columns: {', '.join(schema.names())})"
            raise InputError(msg)
        run_name = name or (str(source) if isinstance(source, (str, Path)) else f"run{i}")
    note = ""
    if "system" in schema and "system" not in (query, doc, score):
        note = (
            " (a table with a 'system' column: if it holds several systems, give one run per "
            "system, e.g. {name: frame.filter(pl.col('system') == name)})"
        )
    rows = lf.select(
        pl.col(query).alias(QUERY),
        pl.col(doc).alias(DOC),
        pl.col(score).cast(pl.Float64).alias(SCORE),
    ).with_row_index(ROW)
    checked = rows.map_batches(
        _row_checker(rows, what, query, doc, score), schema=rows.collect_schema(), streamable=True
    )
    out = checked.filter(pl.col(SCORE).is_not_null()).with_columns(pl.lit(i, pl.UInt32).alias(RUN))
    return out.select(QUERY, DOC, RUN, SCORE, ROW), run_name, note


def _row_checker(rows: pl.LazyFrame, what: str, query: str, doc: str, score: str):
    """A map_batches function: raise on a null id or a NaN score (the whole run counted, on the
    error path only)."""
    rules = (
        (pl.col(QUERY).is_null(), f"column {query!r} is null", "ids must not be null"),
        (pl.col(DOC).is_null(), f"column {doc!r} is null", "ids must not be null"),
        (pl.col(SCORE).is_nan(), f"column {score!r} is NaN", "scores must be numbers; a null "
         "score is a document that was not retrieved"),
    )  # fmt: skip

    def check(df: pl.DataFrame) -> pl.DataFrame:
        for flag, text, rule in rules:
            if df.select(flag.any()).item():
                bad = rows.filter(flag).select(pl.len(), pl.first(QUERY), pl.first(DOC)).collect()
                n, q, d = bad.row(0)
                example = f"{query} {q!r}, {doc} {d!r}"
                msg = f"{what}: {text} in {n} rows (rule: {rule}); example: {example}"
                raise InvalidValueError(msg)
        return df

    return check


# --- normalising and fusing ---------------------------------------------------------------------


def normalise(stacked: pl.LazyFrame, norm: str) -> pl.LazyFrame:
    """`stacked` with its scores normalised per (run, query) by `norm` (`NORMS`, or ``"none"``)."""
    return NORMS[get_norm(norm)].apply(stacked)


def resolve_params(method: Method, params: Mapping[str, Any]) -> dict[str, Any]:
    """The method's parameters: its defaults, overridden by `params` (an unknown name refused)."""
    unknown = [p for p in params if p not in method.params]
    if unknown:
        known = ", ".join(f"{k}={v!r}" for k, v in method.params.items()) or "none"
        msg = f"fusion method {method.name} takes no parameter {unknown[0]!r} (parameters: {known})"
        raise InputError(msg)
    for name, value in params.items():
        rule = method.rules.get(name, ANY_NUMBER)
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and rule.ok(value)) or (
            rule.whole and float(value) != int(value)
        ):
            msg = f"fusion method {method.name}: {name} must be {rule.text}, got {value!r}"
            raise InputError(msg)
    # Python numbers: a numpy scalar in a Polars expression makes a plan Polars cannot type
    python = {
        name: int(v) if isinstance(v, numbers.Integral) or _whole(method, name) else float(v)
        for name, v in params.items()
    }
    return {**method.params, **python}


def _whole(method: Method, name: str) -> bool:
    """Whether parameter `name` of `method` is a whole number (its rule says so)."""
    return method.rules.get(name, ANY_NUMBER).whole


def resolve_weights(
    method: Method, weights: Sequence[float] | None, runs: int
) -> tuple[float, ...]:
    """One weight per run: the caller's (a weighted method only) or 1.0 each."""
    if weights is None:
        return (1.0,) * runs
    if not method.weighted:
        weighted = sorted(m.name for m in METHODS.values() if m.weighted)
        msg = f"fusion method {method.name} takes no weights (weighted: {', '.join(weighted)})"
        raise InputError(msg)
    given, weights = weights, _finite(weights)
    if weights is None:
        msg = (
            f"fusion method {method.name}: weights must be finite numbers, one per run, "
            f"got {given!r}"
        )
        raise InputError(msg)
    if len(weights) != runs:
        msg = f"{len(weights)} weights for {runs} runs: give one weight per run, in run order"
        raise InputError(msg)
    return weights


def _finite(values: Any) -> tuple[float, ...] | None:
    """`values` as floats, or None unless they are a sequence of finite real numbers (a NaN
    weight gives NaN fused scores, which sort first)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return None
    out = []
    for v in values:
        if not isinstance(v, numbers.Real) or isinstance(v, bool) or not math.isfinite(v):
            return None
        out.append(float(v))
    return tuple(out)


def apply(
    stacked: Stacked | pl.LazyFrame,
    method: str,
    *,
    norm: str | None = None,
    weights: Sequence[float] | None = None,
    runs: int | None = None,
    learned: Any = None,
    params: Mapping[str, Any] | None = None,
    labels: Sequence[str] | None = None,
) -> pl.LazyFrame:
    """Fuse a stacked frame with `method` after `norm`: one row per (query, doc), columns query,
    doc, score (Float64), rank (UInt32, 1-based), sorted by query then rank.

    `stacked`: a `Stacked` (from `stack`) or a bare stacked LazyFrame, then `runs` says how many
    runs it holds (run indices 0 .. runs - 1). `learned`: what a supervised method's
    `Method.train` returned. Column names are the canonical ones (`Stacked.columns` are applied
    by `fuse`). `labels`: each run's name in error messages (default: `run_labels`).
    """
    m = get_method(method)
    frame = stacked.frame if isinstance(stacked, Stacked) else stacked
    n = stacked.runs if isinstance(stacked, Stacked) else runs
    if n is None:
        msg = "apply: give the number of runs (runs=) with a bare stacked frame"
        raise InputError(msg)
    if m.supervised and learned is None:
        msg = f"fusion method {m.name} is supervised: train it first (learned=)"
        raise InputError(msg)
    chosen = resolve_params(m, params or {})
    w = resolve_weights(m, weights, n)
    normed = normalise(frame, get_norm(norm, m))
    fused = m.fuse(normed, w, chosen, learned)
    if labels is None:
        labels = run_labels(stacked) if isinstance(stacked, Stacked) else ()
    return finish(fused, normed, labels)


def run_labels(stacked: Stacked) -> tuple[str, ...]:
    """Each run's name in messages: its file when every run is a TREC file, else its name
    (with its note, `Stacked.notes`)."""
    if stacked.files:
        return tuple(map(str, stacked.files))
    notes = stacked.notes or ("",) * stacked.runs
    return tuple(name + note for name, note in zip(stacked.names, notes, strict=True))


def finish(fused: pl.LazyFrame, stacked: pl.LazyFrame, labels: Sequence[str] = ()) -> pl.LazyFrame:
    """A method's output sorted (score descending, ties by first occurrence), ranked, with the
    duplicate check: from the method's `DUPS` and `FIRST` columns, or computed here. `labels`
    name the runs (a file, or a run's name) in the check's message."""
    names = fused.collect_schema().names()
    if FIRST not in names or DUPS not in names:
        seen = stacked.group_by(QUERY, DOC).agg(
            first_key().alias(FIRST), (pl.len() - pl.col(RUN).n_unique()).alias(DUPS)
        )
        fused = fused.drop([c for c in (FIRST, DUPS) if c in names]).join(
            seen, on=[QUERY, DOC], how="left"
        )
    out = fused.sort([QUERY, SCORE, FIRST], descending=[False, True, False])
    out = out.with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).over(QUERY).alias(RANK))
    schema = out.collect_schema()
    kept = {k: v for k, v in schema.items() if k not in (FIRST, DUPS)}
    check = partial(_dups_checker, stacked=stacked, labels=tuple(labels))
    return out.map_batches(check, schema=kept).select(QUERY, DOC, SCORE, RANK)


def _dups_checker(
    df: pl.DataFrame, *, stacked: pl.LazyFrame, labels: tuple[str, ...]
) -> pl.DataFrame:
    dups = df.filter(pl.col(DUPS) > 0)
    if dups.height:
        n = int(dups[DUPS].sum())
        q, d = dups.row(0, named=True)[QUERY], dups.row(0, named=True)[DOC]
        where = "within one run"
        if labels:  # the run of the example, looked up only now that there is an error
            pair = (pl.col(QUERY) == q) & (pl.col(DOC) == d)
            runs = stacked.filter(pair).group_by(RUN).len().filter(pl.col("len") > 1)
            first = runs.select(pl.col(RUN).min()).collect().item()
            if first is not None and 0 <= first < len(labels):
                where = f"in run {labels[first]}"
        msg = (
            f"fuse: {n} rows repeat a (query, doc) pair {where} (rule: a document appears "
            f"once per run and query{KEEP_ONE.said()}); example: query {q!r}, doc {d!r}"
        )
        error = DuplicateError(msg)
        error.hints = (KEEP_ONE,)
        raise error
    return df.drop(FIRST, DUPS)


def training(
    runs: Any,
    qrels: io.Source,
    method: str,
    *,
    norm: str | None = None,
    input_format: str = "auto",
    ties: str = "input",
    **params: Any,
) -> pl.LazyFrame:
    """The plan of what supervised `method` learns from training `runs` and `qrels` (the small
    table its fusion reads: `learned=` of `apply`, `preval.fuse` and `preval.spark.fuse`).

    `runs` as `preval.fuse` reads them, normalised by `norm` (the method's default) as ranx
    normalises before it trains; `qrels` a TREC qrels file or a table of query, doc, label;
    `params` the method's parameters (probfuse's ``n_segments``). The table is one row per run
    and position or segment.
    """
    from .supervised import read_qrels

    m = get_method(method)
    if not m.supervised:
        msg = f"fusion method {m.name} learns nothing: it is not supervised"
        raise InputError(msg)
    chosen = resolve_params(m, params)
    stacked = stack(runs, input_format=input_format, ties=ties)
    normed = normalise(stacked.frame, get_norm(norm, m))
    return m.train(normed, read_qrels(qrels, input_format), chosen)


def learn(runs: Any, qrels: io.Source, method: str, **options: Any) -> pl.DataFrame:
    """`training` collected: the table a supervised method learned (to reuse, or to ship to
    Spark's workers)."""
    return training(runs, qrels, method, **options).collect()


# --- the public function ------------------------------------------------------------------------


def fuse(
    runs: io.Source | Sequence[io.Source] | Mapping[str, io.Source],
    method: str = "rrf",
    norm: str | None = None,
    weights: Sequence[float] | None = None,
    *,
    query: str = QUERY,
    doc: str = DOC,
    score: str = SCORE,
    input_format: str = "auto",
    duplicates: str = "error",
    ties: str = "input",
    with_rank: bool = True,
    system: str | None = None,
    train_qrels: io.Source | None = None,
    train_runs: Any = None,
    learned: pl.DataFrame | pl.LazyFrame | None = None,
    **params: Any,
) -> pl.LazyFrame:
    """Fuse runs into one: one row per (query, doc) with the fused score, as a lazy plan.

    Parameters
    ----------
    runs
        A list of runs (or a dict name -> run), each a Polars frame or any other dataframe, a
        table path (Parquet, CSV) or a TREC run file; a single TREC path or frame is one run.
    method
        A fusion method (`preval fuse --list`): ``rrf`` (default), ``comb_sum``, ``comb_mnz``,
        ``wsum``, ``condorcet`` ...; ranx's short names (``mnz``, ``w_bordafuse`` ...) are
        aliases.
    norm
        The score normalisation applied to each run and query first: ``min-max``,
        ``min-max-inverted``, ``max``, ``sum``, ``zmuv``, ``rank``, ``borda`` or ``none``;
        None is the method's default (``min-max`` for the score-based methods, as ranx's
        ``fuse``; ``none`` for the rank-based ones, whose result min-max cannot change).
    weights
        One weight per run, in run order, for the weighted methods (wsum, wmnz, mixed,
        weighted_bordafuse, weighted_condorcet); 1.0 each when not given.
    query, doc, score
        The runs' column names (a TREC file has its own); the fused frame uses them.
    input_format
        How paths are read: ``auto`` (by suffix), ``table`` or ``trec``.
    duplicates
        A document twice in one run and query: ``error`` (`DuplicateError`), or keep the
        ``max`` score or the ``first`` row.
    ties
        A run's equal scores: ``input`` (default, ranx's order: as the rows come) or ``trec``
        (trec_eval's: doc id descending, so any order of the input's rows fuses the same).
    with_rank
        Add the 1-based ``rank`` column (UInt32) of the fused ranking.
    system
        Add a ``system`` column holding this name (a TREC run's tag when written).
    train_qrels, train_runs
        For a supervised method (posfuse, probfuse, segfuse, slidefuse, bayesfuse, mapfuse):
        the judgments it learns from, and the runs it learns on (default: `runs` themselves,
        as ranx's ``optimize_fusion`` trains on the runs it is given); the same systems, in
        the same order, as `runs`.
    learned
        Or what the method already learned (`learn`), instead of `train_qrels`.
    **params
        The method's parameters, e.g. ``k=60`` (rrf), ``phi=0.8`` (rbc), ``gamma`` (comb_gmnz),
        ``sigma`` (logn_isr); ranx's ``params={"k": 60, "weights": [...]}`` is read too.

    Returns
    -------
    polars.LazyFrame
        query, doc, score (Float64) [, rank] [, system], sorted by query, then fused score
        descending (ties: the document met first in the runs, run by run). Bad data raises a
        `PrevalError` when it is collected.
    """
    weights, params = ranx_params(weights, params)
    m = get_method(method)  # a bad name is refused before any run is read
    get_norm(norm, m)
    resolve_params(m, params)
    stacked = stack(
        runs, query=query, doc=doc, score=score, input_format=input_format,
        duplicates=duplicates, ties=ties,
    )  # fmt: skip
    if m.supervised and learned is None:
        if train_qrels is None:
            msg = (
                f"fusion method {m.name} is supervised: give the judgments it learns from "
                "(train_qrels=, and train_runs= when it learns on other runs) or learned="
            )
            raise InputError(msg)
        learned = training(
            runs if train_runs is None else train_runs, train_qrels, m.name, norm=norm,
            input_format=input_format, ties=ties, **params,
        )  # fmt: skip
    fused = apply(stacked, method, norm=norm, weights=weights, params=params, learned=learned)
    return present(fused, stacked.columns, with_rank=with_rank, system=system)


def ranx_params(
    weights: Sequence[float] | None, params: dict[str, Any]
) -> tuple[Sequence[float] | None, dict[str, Any]]:
    """ranx's spelling, ``params={"k": 60, "weights": [...]}``, as keywords and `weights`."""
    params = dict(params)
    if isinstance(params.get("params"), Mapping):
        nested = params.pop("params")
        params = {**params, **nested}
    if "weights" in params:
        if weights is not None:
            msg = "weights given twice (weights= and params['weights'])"
            raise InputError(msg)
        weights = params.pop("weights")
    return weights, params


def present(
    fused: pl.LazyFrame,
    columns: tuple[str, str, str] = (QUERY, DOC, SCORE),
    *,
    with_rank: bool = True,
    system: str | None = None,
) -> pl.LazyFrame:
    """The fused frame under the caller's column names, with or without rank and system."""
    q, d, s = columns
    out = fused.select(
        pl.col(QUERY).alias(q), pl.col(DOC).alias(d), pl.col(SCORE).alias(s),
        *([pl.col(RANK)] if with_rank else []),
    )  # fmt: skip
    if system is not None:
        out = out.with_columns(pl.lit(system, pl.String).alias("system"))
    return out


__all__ = [
    "ALIASES",
    "DUPS",
    "FIRST",
    "NORM_ALIASES",
    "Stacked",
    "apply",
    "finish",
    "first_key",
    "fuse",
    "get_method",
    "get_norm",
    "learn",
    "normalise",
    "present",
    "rank_by",
    "rank_rows",
    "resolve_params",
    "resolve_weights",
    "stack",
    "training",
]


# --- the catalogue, for the docs ------------------------------------------------------------------


def _source(doc: str) -> str:
    """The "Source: ..." sentence of a docstring, on one line."""
    import re

    text = " ".join(line.strip() for line in doc.splitlines())
    found = re.search(r"Source: (.*?[)`])\.(?:\s|$)", text)
    return found.group(1) + "." if found else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table() -> str:
    """The methods and normalisations as two Markdown tables (docs/fusion.md is generated from
    this: `preval fuse --list --format markdown`)."""
    _load_methods()
    rows = ["| method | parameters | weights | default norm | definition | source |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for m in listed():
        params = ", ".join(f"{k}={v}" for k, v in m.params.items())
        kind = "per run" if m.weighted else ""
        if m.supervised:
            kind = f"{kind}, trained" if kind else "trained"
        rows.append(f"| `{m.name}` | {params} | {kind} | {m.default_norm} | {_cell(m.doc)} | "
                    f"{_cell(_source(m.fuse.__doc__ or ''))} |")  # fmt: skip
    rows += ["", "| normalisation | definition | source |", "|---|---|---|"]
    for n in NORMS.values():
        rows.append(f"| `{n.name}` | {_cell(n.doc)} | {_cell(_source(n.apply.__doc__ or ''))} |")
    return "\n".join(rows)
