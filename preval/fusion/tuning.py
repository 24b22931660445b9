"""Tuning a fusion: `optimize_fusion` searches a method's weights and parameters against a
measure on judged queries (ranx's ``optimize_fusion``), optionally with k-fold cross-validation
over the queries, and compares the fused run with its inputs (`Tuning.compare`).

Every candidate is evaluated in one lazy plan: the candidates' fused frames, each with its
``_candidate`` key, are concatenated and evaluated by `preval.evaluate` with that key as a
``by`` column (one plan, one collect), and the choice is made on the matrix of per-query
values (numpy). Cross-validation costs no more evaluations for an unsupervised method (its
fused run does not depend on the training queries: each fold chooses on its own queries of the
same matrix); a supervised method is trained and evaluated once per fold and candidate.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from .. import io
from ..errors import DuplicateError, InputError
from ..measures import parse
from ..validate import KEEP_ONE
from . import core
from .stacked import wide
from .supervised import TRAINED_BY, read_qrels

# ranx 0.3.21's searches (`ranx/fusion_optimization/`), by preval's method names: weights on a
# grid of `step` summing to 1 (`optimize_weights`), else one parameter over a range
WEIGHT_STEP = 0.1
_RANGE_001 = ("range", 0.01, 1.0, 0.01)  # ranx: round(x, 2) for x in arange(0.01, 1.01, 0.01)
DEFAULT_SEARCH: dict[str, dict[str, Any]] = {
    "wsum": {"weights": WEIGHT_STEP},
    "wmnz": {"weights": WEIGHT_STEP},
    "mixed": {"weights": WEIGHT_STEP},
    "weighted_bordafuse": {"weights": WEIGHT_STEP},
    "weighted_condorcet": {"weights": WEIGHT_STEP},
    "rrf": {"k": list(range(10, 101, 10))},
    "comb_gmnz": {"gamma": _RANGE_001},
    "logn_isr": {"sigma": _RANGE_001},
    "rbc": {"phi": _RANGE_001},
    "probfuse": {"n_segments": list(range(1, 101))},
    "slidefuse": {"w": list(range(1, 101))},
}
FUSED = "fused"  # the fused run's name among the systems of `Tuning.table`
_CAND = "_candidate"
# Measures whose value at cutoff K reads only the top K retrieved documents (and the qrels):
# each candidate's fused run is cut to its top K (ties at the K-th score kept, as 32-bit floats
# so that the evaluator's tie rules still choose among them) before it is evaluated.
TOP_K_MEASURES = frozenset({"nDCG", "DCG", "P", "R", "RR", "AP", "Success", "Hits", "F"})


def _ordered(columns: list[pl.Expr]) -> pl.Expr:
    total = columns[0].fill_null(0.0)
    for c in columns[1:]:
        total = total + c.fill_null(0.0)
    return total


# The weighted score combinations as expressions of the runs' scores side by side (v_r, null
# where run r lacks the document) and a candidate's weights: the formulas of the methods of
# the same names (tests/test_fusion_tuning.py checks them equal to `Method.fuse`, to the bit),
# so that every candidate is one column expression over one wide frame instead of a group_by
LINEAR = {
    "wsum": lambda v, w: _ordered([c * x for c, x in zip(v, w, strict=True)]),
    "wmnz": lambda v, w: (
        _ordered(v)
        * _ordered([pl.when(c.is_not_null()).then(pl.lit(x)) for c, x in zip(v, w, strict=True)])
    ),
    "mixed": lambda v, w: (
        _ordered([c * x for c, x in zip(v, w, strict=True)])
        * pl.sum_horizontal([c.is_not_null() for c in v]).cast(pl.Float64).sqrt()
    ),
}


def weight_grid(step: float, runs: int) -> list[tuple[float, ...]]:
    """ranx's weight candidates: every tuple of `runs` values of ``0, step, ..., 1`` (numpy's
    ``arange(0, 1 + step, step)`` rounded to the step's decimals) whose float sum is exactly
    1.0, in `itertools.product` order. The float sum drops some tuples a decimal sum keeps
    (for 3 runs and step 0.1: (0.2, 0.7, 0.1), (0.3, 0.6, 0.1), (0.6, 0.3, 0.1),
    (0.7, 0.2, 0.1)); ranx drops them too, and preval searches what ranx searches."""
    if not 0 < step <= 1:
        msg = f"weights step must be in (0, 1], got {step!r}"
        raise InputError(msg)
    digits = str(step)[::-1].find(".")
    values = [round(float(x), digits) for x in np.arange(0, 1 + step, step)]
    return [w for w in itertools.product(values, repeat=runs) if sum(w) == 1.0]


def _values(spec: Any) -> list[Any]:
    if isinstance(spec, tuple) and spec and spec[0] == "range":  # ranx's float ranges
        _, low, high, step = spec
        digits = str(step)[::-1].find(".")
        return [round(float(x), digits) for x in np.arange(low, high + step, step)]
    if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence):
        return [spec]
    return list(spec)


@dataclass(frozen=True)
class Candidate:
    """One point of the search: a weight per run (None: the method's 1.0 each) and the
    method's parameters."""

    weights: tuple[float, ...] | None
    params: dict[str, Any]

    def label(self) -> str:
        parts = [] if self.weights is None else [f"weights={list(self.weights)}"]
        return ", ".join([*parts, *(f"{k}={v!r}" for k, v in self.params.items())]) or "-"


def candidates(method: Any, runs: int, search: Mapping[str, Any] | None) -> list[Candidate]:
    """The candidates of `search` for `method` (a registry `Method`) over `runs` runs.

    `search`: ``{"weights": STEP or [[w1, w2, ...], ...], PARAM: [values], ...}``; None is
    ranx's search for the method (`DEFAULT_SEARCH`; a method without one has one candidate,
    its defaults). Weights times parameters, weights varying slowest, in the order given.
    """
    if search is None:
        search = DEFAULT_SEARCH.get(method.name, {})
    search = dict(search)
    weights_spec = search.pop("weights", None)
    if weights_spec is not None and not method.weighted:
        msg = f"fusion method {method.name} takes no weights: search its parameters only"
        raise InputError(msg)
    unknown = [p for p in search if p not in method.params]
    if unknown:
        known = ", ".join(method.params) or "none"
        msg = f"fusion method {method.name} has no parameter {unknown[0]!r} (parameters: {known})"
        raise InputError(msg)
    if weights_spec is None:
        grid: list[tuple[float, ...] | None] = [None]
    elif isinstance(weights_spec, (int, float)):
        grid = list(weight_grid(float(weights_spec), runs))
    else:
        grid = [tuple(float(x) for x in w) for w in weights_spec]
        bad = [w for w in grid if w is not None and len(w) != runs]
        if bad:
            msg = f"weights {list(bad[0])}: give one weight per run ({runs} runs)"
            raise InputError(msg)
    names = list(search)
    grids = [_values(search[n]) for n in names]
    # every value searched in its domain, as `preval.fuse` takes it (k = -1 divides by zero)
    for name, values in zip(names, grids, strict=True):
        for value in values:
            core.resolve_params(method, {name: value})
    for w in grid:
        if w is not None:
            core.resolve_weights(method, w, runs)
    out = []
    for w in grid:
        for values in itertools.product(*grids):
            out.append(Candidate(w, {**method.params, **dict(zip(names, values, strict=True))}))
    if not out:
        msg = f"the search of {method.name} has no candidate"
        raise InputError(msg)
    return out


def assign_folds(queries: Sequence[Any], folds: int, seed: int) -> dict[Any, int]:
    """Query -> fold (0 .. folds - 1): the sorted queries in the order of a permutation by
    numpy's generator seeded with `seed`, dealt to the folds in turn (sizes differ by at most
    one)."""
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        msg = f"folds must be a whole number >= 2, got {folds!r}"
        raise InputError(msg)
    if folds > len(queries):
        msg = f"folds={folds} but only {len(queries)} judged queries: at most one fold per query"
        raise InputError(msg)
    order = np.random.default_rng(seed).permutation(len(queries))
    return {queries[j]: i % folds for i, j in enumerate(order.tolist())}


@dataclass
class Tuning:
    """What `optimize_fusion` found.

    Attributes
    ----------
    method, norm, metric
        The method, its normalisation, the measure's canonical name.
    best
        The choice on all judged queries (ranx's answer): ``{"weights": [...], **params}``
        (``weights`` when searched).
    candidates
        One row per candidate: ``candidate`` (its number), ``weights`` (list, null without),
        one column per parameter, ``score`` (the mean of `metric` over all judged queries;
        for a supervised method, trained on them).
    folds
        With cross-validation, one row per fold: ``fold``, ``queries`` (held-out), the chosen
        ``candidate``, its ``weights`` and parameters, ``train_score`` (its mean on the
        fold's training queries) and ``test_score`` (on the held-out ones); else None.
    per_query
        ``query``, ``fold`` and `metric`: with folds, each judged query's value in the fused
        run chosen (and trained) without it; without, in the run of `best` (tuned on the
        same queries: an optimistic figure).
    runs
        The input runs' names.
    """

    method: str
    norm: str
    metric: str
    best: dict[str, Any]
    candidates: pl.DataFrame
    folds: pl.DataFrame | None
    per_query: pl.DataFrame
    runs: tuple[str, ...]
    _inputs: Any = field(repr=False, default=None)  # () -> the input runs' per-query values
    _fuse: Any = field(repr=False, default=None)

    @property
    def fused(self) -> pl.LazyFrame:
        """The runs fused with `best` on every query (query, doc, score, rank), lazily."""
        return self._fuse()

    def table(self) -> pl.DataFrame:
        """The per-query table of the inputs and the fused run (``system``, ``query``,
        `metric`), on the judged queries: `per_query`'s values for ``fused``."""
        fused = self.per_query.select(
            pl.lit(FUSED).alias("system"), pl.col("query").cast(pl.String), self.metric
        )
        return pl.concat([self.inputs(), fused]).sort("system", "query")

    def inputs(self) -> pl.DataFrame:
        """Each input run's `metric` per judged query (``system``, ``query``, `metric`),
        evaluated when first asked for (the search does not need it)."""
        if not isinstance(self._inputs, pl.DataFrame):
            self._inputs = self._inputs()
        return self._inputs

    def compare(
        self,
        *,
        test: str = "t",
        correction: str = "holm",
        alpha: float = 0.05,
        n_resamples: int = 10_000,
        seed: int = 0,
    ) -> pl.DataFrame:
        """The fused run against each input run, one row each (`preval.compare`'s columns:
        ``system`` is ``fused``, ``baseline`` the input; delta = fused minus input), the
        p-values corrected over the inputs (`correction`). With folds, the fused values are
        the held-out ones. Tukey's HSD is not offered (it compares every pair)."""
        from ..significance import TESTS, _corrected, compare

        if test == "tukey" or test not in TESTS:
            msg = f"test must be one of t, wilcoxon, randomization, bootstrap, got {test!r}"
            raise InputError(msg)
        table = self.table()
        parts = [
            compare(
                table.filter(pl.col("system").is_in([name, FUSED])),
                baseline=name,
                measures=[self.metric],
                test=test,
                correction="none",
                alpha=alpha,
                n_resamples=n_resamples,
                seed=seed,
            )
            for name in self.runs
        ]
        return _corrected(pl.concat(parts).drop("p_corrected", "significant"), correction, alpha)


def optimize_fusion(
    runs: Any,
    qrels: io.Source,
    *,
    method: str = "wsum",
    norm: str | None = None,
    metric: str = "nDCG@10",
    search: Mapping[str, Any] | None = None,
    folds: int | None = None,
    seed: int = 0,
    query: str = "query",
    doc: str = "doc",
    score: str = "score",
    input_format: str = "auto",
    duplicates: str = "error",
    ties: str = "input",
) -> Tuning:
    """Search a fusion method's weights and parameters for the best `metric` on judged queries
    (ranx's ``optimize_fusion``), optionally cross-validated over the queries.

    Parameters
    ----------
    runs
        The runs, as `preval.fuse` reads them (frames, table paths, TREC run files, or a dict
        name -> run).
    qrels
        Judgments (a TREC qrels file or a table of query, doc, label): the queries averaged
        (every judged query; a run that did not answer one scores 0 there, trec_eval's -c),
        and a supervised method's training data.
    method, norm
        As for `preval.fuse` (the norm defaults to the method's).
    metric
        One measure (`preval measures`), ``nDCG@10`` by default; ranx's default is ``ndcg``
        (no cutoff).
    search
        ``{"weights": STEP or [[w, ...], ...], PARAM: [values, ...]}``; None is ranx's search
        for the method: weights of step 0.1 summing to 1 (wsum, wmnz, mixed,
        weighted_bordafuse, weighted_condorcet; `weight_grid`), rrf ``k`` 10..100 by 10,
        comb_gmnz ``gamma`` / logn_isr ``sigma`` / rbc ``phi`` 0.01..1 by 0.01, probfuse
        ``n_segments`` and slidefuse ``w`` 1..100; the other methods have one candidate.
    folds, seed
        k-fold cross-validation over the judged queries (`assign_folds`: a permutation seeded
        by `seed`): each fold's candidate is chosen (and a supervised method trained) on the
        other folds' queries and scored on its own. None: no cross-validation.
    query, doc, score, input_format, duplicates, ties
        As for `preval.fuse`.

    Returns
    -------
    Tuning
        The choice, every candidate's score, the folds, the per-query values; `Tuning.fused`
        is the fused run of the choice, `Tuning.compare` its comparison with the inputs.
        Among equal scores the last candidate wins, as ranx's ``>=``.
    """

    m = core.get_method(method)
    norm_name = core.get_norm(norm, m)
    measure = parse(metric).name
    stacked = core.stack(runs, query=query, doc=doc, score=score, input_format=input_format,
                         duplicates=duplicates, ties=ties)  # fmt: skip
    n_runs = stacked.runs
    cands = candidates(m, n_runs, search)
    judgments = read_qrels(qrels, input_format)
    raw = stacked.frame.collect()
    _check_duplicates(raw, stacked.columns)
    normed = core.normalise(raw.lazy(), norm_name).collect()
    judged = judgments.collect()  # (raises on a broken rule of qrels: `read_qrels`)
    for col in ("query", "doc"):  # ids compared as text when their dtypes differ
        if normed.schema[col] != judged.schema[col]:
            normed = normed.with_columns(pl.col(col).cast(pl.String))
            judged = judged.with_columns(pl.col(col).cast(pl.String))
    queries = judged["query"].unique().sort().to_list()
    if not queries:
        msg = "optimize_fusion: the qrels judge no query"
        raise InputError(msg)
    # The search runs on integer codes of the ids, in the ids' order (so that the evaluator's
    # doc-id tie rule reads the same order): joins, sorts and windows on integers
    normed, judged = _coded(normed, judged)
    codes = judged["query"].unique().sort()  # the codes of `queries`, in the same order
    fold_of = assign_folds(queries, folds, seed) if folds is not None else None
    k = folds or 0
    # the slots a candidate is evaluated in: one per fold (trained without it), then all
    slots = [*range(k), k] if m.supervised else [k]
    fold_frame = (
        pl.DataFrame({"query": codes, "fold": [fold_of[q] for q in queries]})
        if fold_of is not None else None
    )  # fmt: skip
    judgments_c = judged.lazy()
    fusable = normed.lazy().join(codes.to_frame().lazy(), on="query", how="semi")

    learned: dict[tuple, pl.LazyFrame] = {}

    def trained_in(slot: int, params: dict[str, Any]) -> Any:
        if not m.supervised:
            return None
        key = (slot, *((p, params[p]) for p in TRAINED_BY.get(m.name, tuple(params))))
        if key not in learned:
            learned[key] = _train(slot, params)
        return learned[key]

    def _train(slot: int, params: dict[str, Any]) -> pl.LazyFrame:
        train_rows, train_qrels = normed.lazy(), judgments_c
        if slot < k:
            held = fold_frame.filter(pl.col("fold") == slot).select("query").lazy()
            train_rows = train_rows.join(held, on="query", how="anti")
            train_qrels = train_qrels.join(held, on="query", how="anti")
        return m.train(train_rows, train_qrels, params).collect().lazy()

    def fused_of(c: Candidate, slot: int) -> pl.LazyFrame:
        w = c.weights if c.weights is not None else (1.0,) * n_runs
        return m.fuse(fusable, w, c.params, trained_in(slot, c.params))

    spec = parse(metric)
    cut = (
        int(spec.cutoff)
        if spec.cutoff is not None and spec.definition.name in TOP_K_MEASURES
        else None
    )
    if m.name in LINEAR and not m.supervised:
        side = wide(fusable, n_runs, {"v": pl.col("score")}).select(
            "query", "doc", *[f"v{r}" for r in range(n_runs)]
        )
        v = [pl.col(f"v{r}") for r in range(n_runs)]
        exprs = [LINEAR[m.name](v, c.weights or (1.0,) * n_runs) for c in cands]
        plans = [_linear_top(side.sort("query").collect(), exprs, cut)]
    else:
        plans = [
            _top(
                fused_of(c, slot).select(
                    pl.lit(j * len(cands) + i, pl.Int64).alias(_CAND), "query", "doc", "score"
                ),
                cut,
            )
            for j, slot in enumerate(slots)
            for i, c in enumerate(cands)
        ]
    values = _evaluate(pl.concat(plans), judgments_c, measure, codes.to_list(),
                       len(slots) * len(cands))  # fmt: skip
    # values: (slot * candidates + candidate) x queries, queries sorted
    all_slot = values[slots.index(k) * len(cands) : (slots.index(k) + 1) * len(cands)]
    means = all_slot.mean(axis=1)
    best_i = _last_argmax(means)
    per_query_values = all_slot[best_i]
    folds_table = None
    fold_col = [None] * len(queries)
    if fold_of is not None:
        fold_ids = np.array([fold_of[q] for q in queries])
        rows = []
        per_query_values = np.empty(len(queries))
        for f in range(k):
            block = values[f * len(cands) : (f + 1) * len(cands)] if m.supervised else all_slot
            train, test = fold_ids != f, fold_ids == f
            chosen = _last_argmax(block[:, train].mean(axis=1))
            per_query_values[test] = block[chosen, test]
            rows.append((f, int(test.sum()), chosen, float(block[chosen, train].mean()),
                         float(block[chosen, test].mean())))  # fmt: skip
        folds_table = _with_candidates(
            pl.DataFrame(rows, schema=["fold", "queries", "candidate", "train_score",
                                       "test_score"], orient="row"), cands, m)  # fmt: skip
        fold_col = fold_ids.tolist()
    best = cands[best_i]
    cand_table = _with_candidates(
        pl.DataFrame({"candidate": list(range(len(cands))), "score": means.tolist()}), cands, m
    )
    per_query = pl.DataFrame(
        {"query": queries, "fold": fold_col, measure: per_query_values.tolist()},
        schema_overrides={"fold": pl.Int64, measure: pl.Float64},
    )

    def fuse_best() -> pl.LazyFrame:
        learned = trained_in(k, best.params)
        fused = core.apply(stacked, m.name, norm=norm_name, weights=best.weights,
                           learned=learned, params=_own(best.params, m))  # fmt: skip
        return core.present(fused, stacked.columns)

    return Tuning(
        method=m.name, norm=norm_name, metric=measure,
        best={**({} if best.weights is None else {"weights": list(best.weights)}), **best.params},
        candidates=cand_table, folds=folds_table, per_query=per_query, runs=stacked.names,
        _inputs=lambda: _input_values(raw, judgments, measure, stacked.names), _fuse=fuse_best,
    )  # fmt: skip


def _coded(runs: pl.DataFrame, qrels: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`runs` and `qrels` with their query and doc ids replaced by Int64 codes: each id's
    place in the sorted ids of both, plus a power of ten so that every code has as many
    digits (the evaluator breaks ties by the doc id as text: the codes' text order is theirs)."""
    for col in ("query", "doc"):
        ids = pl.concat([runs.select(col), qrels.select(col)]).unique().sort(col)
        offset = 10 ** len(str(ids.height))
        table = ids.with_columns((pl.int_range(pl.len(), dtype=pl.Int64) + offset).alias("_code"))
        runs = runs.join(table, on=col).drop(col).rename({"_code": col})
        qrels = qrels.join(table, on=col).drop(col).rename({"_code": col})
    return runs, qrels


def _linear_top(side: pl.DataFrame, exprs: list[pl.Expr], cut: int | None) -> pl.LazyFrame:
    """Every candidate's fused run (one score expression each over `side`, the runs' scores
    side by side, sorted by query), cut to each query's top `cut` as `_top` cuts, in blocks of
    candidates: the scores of a block as a matrix, each query's `cut`-th largest by numpy's
    partition over a (queries x positions x candidates) block, padded."""
    rows = side.height
    query = side["query"].to_numpy()
    starts = np.flatnonzero(np.r_[True, query[1:] != query[:-1]]) if rows else np.array([], int)
    lengths = np.diff(np.r_[starts, rows])
    width = int(lengths.max()) if rows else 0
    per_block = max(1, 4_000_000 // max(rows, 1))
    parts = []
    for first in range(0, len(exprs), per_block):
        block = exprs[first : first + per_block]
        scores = side.select([e.alias(f"s{i}") for i, e in enumerate(block)]).to_numpy()
        if cut is None or width <= cut:
            r, c = np.nonzero(np.ones(scores.shape, dtype=bool))
        else:
            r, c = _top_cells(scores.astype(np.float32), starts, lengths, width, cut)
        parts.append(
            pl.DataFrame(
                {
                    _CAND: (c + first).astype(np.int64),
                    "query": side["query"].gather(r),
                    "doc": side["doc"].gather(r),
                    "score": scores[r, c],
                }
            )
        )
    return pl.concat(parts).lazy()


def _top_cells(
    scores: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int, cut: int
) -> tuple[np.ndarray, np.ndarray]:
    """(row, candidate) of every score at least its query's `cut`-th largest (rows grouped by
    query: `starts`, `lengths`)."""
    rows, cols = [], []
    step = max(1, 8_000_000 // (width * scores.shape[1]))  # queries per chunk
    pos = np.arange(width)
    for a in range(0, len(starts), step):
        st, ln = starts[a : a + step], lengths[a : a + step]
        valid = pos[None, :] < ln[:, None]
        index = np.where(valid, st[:, None] + pos[None, :], 0)
        block = scores[index]  # queries x positions x candidates
        block[~valid] = -np.inf
        threshold = np.partition(block, width - cut, axis=1)[:, width - cut, :]
        keep = (block >= threshold[:, None, :]) & valid[:, :, None]
        q, p, c = np.nonzero(keep)
        rows.append(index[q, p])
        cols.append(c)
    return np.concatenate(rows), np.concatenate(cols)


def _top(fused: pl.LazyFrame, cut: int | None) -> pl.LazyFrame:
    """`fused` cut to each query's top `cut` documents, every document tied with the last one
    (as a 32-bit float: the evaluator's tie rule then chooses among them) kept."""
    if cut is None:
        return fused
    place = pl.col("score").cast(pl.Float32).rank("min", descending=True).over("query")
    return fused.filter(place <= cut)


def _own(params: dict[str, Any], m: Any) -> dict[str, Any]:
    return {p: v for p, v in params.items() if p in m.params}


def _last_argmax(x: np.ndarray) -> int:
    """The last index of the maximum (ranx keeps a candidate whose score is >= the best)."""
    return int(len(x) - 1 - np.argmax(x[::-1]))


def _check_duplicates(stacked: pl.DataFrame, columns: tuple[str, str, str]) -> None:
    dups = stacked.group_by("run", "query", "doc").len().filter(pl.col("len") > 1)
    if dups.height:
        q, d = dups.row(0, named=True)["query"], dups.row(0, named=True)["doc"]
        msg = (
            f"optimize_fusion: {int(dups['len'].sum() - dups.height)} rows repeat a (query, "
            f"doc) pair within one run (rule: a document appears once per run and query"
            f"{KEEP_ONE.said()}); example: {columns[0]} {q!r}, {columns[1]} {d!r}"
        )
        error = DuplicateError(msg)
        error.hints = (KEEP_ONE,)
        raise error


def _evaluate(
    fused: pl.LazyFrame, qrels: pl.LazyFrame, measure: str, queries: list[Any], keys: int
) -> np.ndarray:
    """`measure` of every candidate's fused run on every judged query, in one plan: a matrix
    keys x queries (queries in `queries`' order)."""
    from ..api import evaluate

    per_query = evaluate(fused, [measure], qrels=qrels, by=_CAND, queries="judged").collect()
    index = pl.DataFrame({"query": queries, "_q": list(range(len(queries)))},
                         schema={"query": per_query.schema["query"], "_q": pl.Int64})  # fmt: skip
    cells = per_query.join(index, on="query", how="inner")
    out = np.zeros((keys, len(queries)))
    out[cells[_CAND].to_numpy(), cells["_q"].to_numpy()] = cells[measure].fill_null(0).to_numpy()
    return out


def _input_values(
    raw: pl.DataFrame, qrels: pl.LazyFrame, measure: str, names: Sequence[str]
) -> pl.DataFrame:
    """Each input run's `measure` per judged query (system, query, measure)."""
    from ..api import evaluate

    per_query = evaluate(raw.lazy().select("run", "query", "doc", "score"), [measure],
                         qrels=qrels, by="run", queries="judged").collect()  # fmt: skip
    lookup = pl.DataFrame({"run": list(range(len(names))), "system": list(names)},
                          schema={"run": per_query.schema["run"], "system": pl.String})  # fmt: skip
    return per_query.join(lookup, on="run").select(
        "system", pl.col("query").cast(pl.String), measure
    )


def _with_candidates(table: pl.DataFrame, cands: list[Candidate], m: Any) -> pl.DataFrame:
    """`table` with each row's candidate's weights and parameters as columns."""
    weights = [None if c.weights is None else list(c.weights) for c in cands]
    extra: dict[str, list[Any]] = {}
    if m.weighted:
        extra["weights"] = weights
    for name in m.params:
        extra[name] = [c.params.get(name) for c in cands]
    if not extra:
        return table
    info = pl.DataFrame({"candidate": list(range(len(cands))), **extra}, strict=False)
    cols = table.columns
    head = cols[: cols.index("candidate") + 1]
    return table.join(info, on="candidate", how="left").select(
        *head, *extra, *[c for c in cols if c not in head]
    )
