"""The supervised fusion methods: they learn, from training runs and qrels, how likely a
document is to be relevant at each position of each run, and fuse by that probability.

Every method here follows ranx 0.3.21 (``ranx/fusion/{posfuse,probfuse,segfuse,slidefuse,
bayesfuse,mapfuse}.py``) number for number, as Polars plans over the *stacked* frame
(`preval.fusion.registry`): `train` learns a small table per run (and position or segment) and
`fuse` joins it into the stacked frame and sums over the runs.

Conventions shared by the six methods (ranx's where it defines one; the others are preval's):

* **Positions.** A document's position in its run is ``rank - 1`` (0-based), the stacked
  frame's rank: the core's order, ties included.
* **Hit lists.** In training, the document at a position is relevant when its qrels label is
  at least 1 (ranx's ``rel_lvl=1``); unjudged documents are non-relevant.
* **Training queries** ``Q``: the judged queries (any label) that at least one training run
  retrieved. A query of ``Q`` that one run did not answer enters that run's averages as an
  empty hit list (ranx's ``Run.make_comparable``); a run's queries without any judgment are
  left out. ranx itself requires every run and the qrels to hold the same queries: the two
  agree there.
* **Fusing.** Each run scores its own documents; the fused score is the sum over the runs
  (ranx's CombSUM): a document a run did not retrieve, or a query a run did not answer, adds 0
  for that run (BayesFuse: the log odds of a relevance probability of 0.001, as ranx).
* Per-run weights are not read (ranx's supervised methods take none); their number is the
  number of runs (the core passes 1.0 per run).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from .. import io, validate
from ..errors import InputError
from ..options import Columns
from ..planner.qrels import checked_judgments
from ..ranking import DOC, LABEL, QUERY
from .registry import Rule, method
from .stacked import DUPS, FIRST, wide

# SegFuse's segment boundaries (Shokouhi 2007; ranx): segment k (1-based) holds positions
# [10 * 2^(k-2) - 5, 10 * 2^(k-1) - 5), i.e. sizes 5, 10, 20, 40, ... ; ten segments
SEGFUSE_BOUNDS = (0, *(10 * 2 ** (k - 1) - 5 for k in range(1, 11)))
# BayesFuse's segments (ranx): positions [0, 5), [5, 10) ... [500, 1000)
BAYESFUSE_BOUNDS = (0, 5, 10, 15, 20, 30, 100, 200, 500, 1000)
# BayesFuse's floor: a probability of relevance of 0 (or 1) is taken as 0.001 (or 0.999)
BAYES_FLOOR = 0.001
MIN_LOG_ODDS = math.log(BAYES_FLOOR / (1 - BAYES_FLOOR))

_KEYS = ("query", "doc")
# The parameters each method's training reads (the others act when it fuses): a search over
# slidefuse's window trains once
TRAINED_BY = {
    "posfuse": (),
    "probfuse": ("n_segments",),
    "segfuse": (),
    "slidefuse": (),
    "bayesfuse": (),
    "mapfuse": (),
}


# ---------------------------------------------------------------------------------------------
# training


def read_qrels(qrels: io.Source, input_format: str = "auto") -> pl.LazyFrame:
    """Judgments as a LazyFrame of query, doc, label (a TREC qrels file or a table), with the
    evaluator's data rules of qrels checked when it is collected (`checked_judgments`: no null
    id or label, no NaN label, a document judged once per query), so that a bad judgment is
    named as `preval.evaluate` names it, by the user's ids and the qrels' file, before the
    fusion codes the ids. Without the hints that name ``by`` or ``duplicates``: the fusion's
    ``duplicates`` keeps one row of a run, not of the qrels."""
    if io.is_trec(qrels, input_format, "qrels"):
        lf = io.scan_qrels(qrels)
    else:
        lf = io.scan(io.normalise(qrels, "qrels"), id_columns=("query", "doc"),
                     numeric_columns=("label",), what="qrels")  # fmt: skip
        schema = lf.collect_schema()
        missing = [c for c in ("query", "doc", "label") if c not in schema]
        if missing:
            # (the evaluator's check would hint at --label, which fuse does not take)
            what = f"qrels {qrels}" if isinstance(qrels, (str, Path)) else "qrels"
            msg = f"{what}: missing column {missing[0]!r} (columns: {', '.join(schema.names())})"
            raise InputError(msg)
    internal = {"query": QUERY, "doc": DOC, "label": LABEL}
    rows = lf.select(*(pl.col(c).alias(i) for c, i in internal.items()))
    checked = checked_judgments(
        rows, {QUERY: "query"}, Columns().roles, validate.path_sources({"qrels": qrels}),
        hints=False,
    )  # fmt: skip
    return checked.select(*(pl.col(i).alias(c) for c, i in internal.items()))


def _aligned(stacked: pl.LazyFrame, qrels: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The two frames with the same query and doc dtypes (strings when they differ)."""
    run_schema, qrels_schema = stacked.collect_schema(), qrels.collect_schema()
    for column in (*_KEYS, "label"):
        if column not in qrels_schema:
            msg = f"training qrels: missing column {column!r} (columns: {qrels_schema.names()})"
            raise InputError(msg)
    casts = [
        pl.col(c).cast(pl.String)
        for c in _KEYS
        if run_schema[c] != qrels_schema[c]  # ids joined as text when the dtypes differ
    ]
    if casts:
        stacked, qrels = stacked.with_columns(casts), qrels.with_columns(casts)
    return stacked, qrels


def hit_lists(stacked: pl.LazyFrame, qrels: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """The training hit lists and their query universe.

    Returns ``(hits, universe)``: `hits` has one row per (run, query, position) of a training
    query: ``run``, ``query``, ``pos`` (0-based Int64), ``n`` (the run's documents for the
    query) and ``hit`` (Float64, 1.0 when the document's label is >= 1, else 0.0); `universe`
    is one row, ``num_queries``: |Q| (see the module's conventions).
    """
    stacked, qrels = _aligned(stacked, qrels)
    judged = qrels.select("query").unique()
    relevant = qrels.filter(pl.col("label") >= 1).select(*_KEYS).unique()
    rows = stacked.join(judged, on="query", how="semi")
    hits = rows.join(
        relevant.with_columns(pl.lit(1.0).alias("hit")), on=list(_KEYS), how="left"
    ).select(
        "run",
        "query",
        (pl.col("rank").cast(pl.Int64) - 1).alias("pos"),
        pl.len().over("run", "query").cast(pl.Int64).alias("n"),
        pl.col("hit").fill_null(0.0),
    )
    universe = rows.select(pl.col("query").n_unique().cast(pl.Int64).alias("num_queries"))
    return hits, universe


def _runs(stacked: pl.LazyFrame) -> pl.LazyFrame:
    return stacked.select(pl.col("run").unique())


def _segment(pos: pl.Expr, bounds: Sequence[int]) -> pl.Expr:
    """The 0-based segment of a position; ``len(bounds) - 1`` past the last boundary."""
    return pl.sum_horizontal([(pos >= b).cast(pl.Int64) for b in bounds[1:]])


def _segments(bounds: Sequence[int]) -> pl.LazyFrame:
    return pl.LazyFrame(
        {
            "segment": list(range(len(bounds) - 1)),
            "size": [b - a for a, b in itertools.pairwise(bounds)],
        },
        schema={"segment": pl.Int64, "size": pl.Int64},
    )


def _per_segment(stacked: pl.LazyFrame, qrels: pl.LazyFrame, bounds: Sequence[int]) -> pl.LazyFrame:
    """(run, segment, size, precision): the mean over Q of hits(segment) / size(segment)."""
    hits, universe = hit_lists(stacked, qrels)
    segments = _segments(bounds)
    sums = (
        hits.with_columns(_segment(pl.col("pos"), bounds).alias("segment"))
        .filter(pl.col("segment") < len(bounds) - 1)
        .group_by("run", "segment")
        .agg(pl.col("hit").sum().alias("hits"))
    )
    return (
        _runs(stacked)
        .join(segments, how="cross")
        .join(sums, on=["run", "segment"], how="left")
        .join(universe, how="cross")
        .select(
            "run",
            "segment",
            "size",
            (pl.col("hits").fill_null(0.0) / pl.col("size") / pl.col("num_queries")).alias(
                "precision"
            ),
        )
    )


def _require_int(params: dict[str, Any], name: str, minimum: int) -> int:
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        msg = f"fusion parameter {name} must be a whole number >= {minimum}, got {value!r}"
        raise InputError(msg)
    return value


def _trained(name: str, trained: Any) -> pl.LazyFrame:
    if trained is None:
        msg = f"fusion method {name!r} is supervised: it needs training qrels (train_qrels=)"
        raise InputError(msg)
    return trained.lazy() if isinstance(trained, pl.DataFrame) else trained


def _runs_of(name: str, weights: Sequence[float] | None) -> int:
    if weights is None:
        msg = f"fusion method {name!r}: give one weight per run (the core passes 1.0 each)"
        raise InputError(msg)
    return len(weights)


def _comb_sum(
    scored: pl.LazyFrame, value: pl.Expr, runs: int, missing: float = 0.0
) -> pl.LazyFrame:
    """Each document's per-run `value` (an expression over a stacked row) added over the runs
    in run order, a run without the document adding `missing`: ranx's ``sum([...])`` over the
    runs (CombSUM), to the last bit; with the core's first-occurrence and duplicate columns."""
    w = wide(scored, runs, {"v": value})
    total = pl.col("v0").fill_null(missing)
    for i in range(1, runs):
        total = total + pl.col(f"v{i}").fill_null(missing)
    return w.select(*_KEYS, total.alias("score"), FIRST, DUPS)


def _position_probs(stacked: pl.LazyFrame, qrels: pl.LazyFrame) -> pl.LazyFrame:
    """(run, pos, prob): per position, the share of training queries whose document there is
    relevant, among those whose list reaches the position (ranx's ``estimate_probs``)."""
    hits, _ = hit_lists(stacked, qrels)
    return hits.group_by("run", "pos").agg(pl.col("hit").mean().alias("prob"))


# ---------------------------------------------------------------------------------------------
# PosFuse


def _train_posfuse(stacked: pl.LazyFrame, qrels: pl.LazyFrame, params: dict[str, Any]):
    return _position_probs(stacked, qrels)


@method("posfuse", train=_train_posfuse)
def posfuse(
    stacked: pl.LazyFrame, weights: Sequence[float] | None, params: dict[str, Any], trained: Any
) -> pl.LazyFrame:
    """PosFuse: Σ over runs of the trained probability of relevance at the document's position.

    Training (per run r): P_r(p) = |{q in Q: the document at position p of q is relevant}| /
    |{q in Q: r returned more than p documents for q}|. Fusion: s(d) = sum over the runs r
    that retrieved d of P_r(p_r(d)); 0 past the deepest trained position.
    Source: Lillis, Zhang, Toolan, Collier, Leonard and Dunnion, "Estimating probabilities for
    effective data fusion", SIGIR 2010 (https://doi.org/10.1145/1835449.1835508); ranx
    ``posfuse``.
    """
    probs = _trained("posfuse", trained)
    scored = stacked.with_columns((pl.col("rank").cast(pl.Int64) - 1).alias("pos")).join(
        probs, on=["run", "pos"], how="left"
    )
    return _comb_sum(scored, pl.col("prob").fill_null(0.0), _runs_of("posfuse", weights))


# ---------------------------------------------------------------------------------------------
# ProbFuse


def _segment_of(n: pl.Expr, pos: pl.Expr, segments: int) -> pl.Expr:
    """ProbFuse's segment of a position in a list of n: ``pos // ceil(n / segments)``."""
    size = (n + segments - 1) // segments
    return pos // size


def _train_probfuse(stacked: pl.LazyFrame, qrels: pl.LazyFrame, params: dict[str, Any]):
    segments = _require_int(params, "n_segments", 1)
    hits, universe = hit_lists(stacked, qrels)
    per_query = (
        hits.with_columns(_segment_of(pl.col("n"), pl.col("pos"), segments).alias("segment"))
        .group_by("run", "query", "segment")
        .agg(pl.col("hit").mean())
    )
    sums = per_query.group_by("run", "segment").agg(pl.col("hit").sum())
    return sums.join(universe, how="cross").select(
        "run", "segment", (pl.col("hit") / pl.col("num_queries")).alias("prob")
    )


@method(
    "probfuse", train=_train_probfuse, params={"n_segments": 25},
    rules={"n_segments": Rule("a whole number >= 1", lambda v: v >= 1, whole=True)},
)  # fmt: skip
def probfuse(
    stacked: pl.LazyFrame, weights: Sequence[float] | None, params: dict[str, Any], trained: Any
) -> pl.LazyFrame:
    """ProbFuse: Σ over runs of the trained probability of the document's segment / its number.

    Each run's list is cut into S segments: a list of n documents has segments of
    ceil(n / S) positions (the last ones shorter or empty); position p is in segment
    k = p // ceil(n / S) (0-based). Training (per run r): P_r(k) = (1 / |Q|) sum over q in Q
    of (relevant documents in segment k of q) / (documents in it), an empty segment adding 0
    (an empty list too, while counting in |Q|). Fusion: s(d) = sum over the runs r that
    retrieved d of P_r(k_r(d)) / (k_r(d) + 1), with the segments of each run's own list for
    the fused query. Parameter ``n_segments`` (S, default
    25; ranx has no default and searches 1..100). Source: Lillis, Toolan, Collier and
    Dunnion, "ProbFuse: a probabilistic approach to data fusion", SIGIR 2006
    (https://doi.org/10.1145/1148170.1148197); ranx ``probfuse``.
    """
    segments = _require_int(params, "n_segments", 1)
    probs = _trained("probfuse", trained)
    segment = _segment_of(
        pl.len().over("run", "query").cast(pl.Int64), pl.col("rank").cast(pl.Int64) - 1, segments
    )
    scored = stacked.with_columns(segment.alias("segment")).join(
        probs, on=["run", "segment"], how="left"
    )
    score = pl.col("prob").fill_null(0.0) / (pl.col("segment") + 1)
    return _comb_sum(scored, score, _runs_of("probfuse", weights))


# ---------------------------------------------------------------------------------------------
# SegFuse


def _train_segfuse(stacked: pl.LazyFrame, qrels: pl.LazyFrame, params: dict[str, Any]):
    return _per_segment(stacked, qrels, SEGFUSE_BOUNDS).select(
        "run", "segment", pl.col("precision").alias("prob")
    )


@method("segfuse", train=_train_segfuse)
def segfuse(
    stacked: pl.LazyFrame, weights: Sequence[float] | None, params: dict[str, Any], trained: Any
) -> pl.LazyFrame:
    """SegFuse: Σ over runs of the trained probability of the segment · (normalised score + 1).

    Segments grow exponentially (5, 10, 20, ... 2560 positions): segment k (1-based) holds
    positions [10 * 2^(k-2) - 5, 10 * 2^(k-1) - 5) (ten segments: positions 0..5114).
    Training (per run r): P_r(k) = (1 / |Q|) sum over q in Q of (relevant documents of q in
    segment k) / (the segment's full size), even when the list is shorter. Fusion:
    s(d) = sum over the runs r that retrieved d of P_r(k_r(d)) * (score_r(d) + 1), score_r
    being the normalised score (min-max by default); 0 past position 5114.
    Source: Shokouhi, "Segmentation of Search Engine Results for Effective Data-Fusion",
    ECIR 2007 (https://doi.org/10.1007/978-3-540-71496-5_19); ranx ``segfuse``.
    """
    probs = _trained("segfuse", trained)
    segment = _segment(pl.col("rank").cast(pl.Int64) - 1, SEGFUSE_BOUNDS)
    scored = stacked.with_columns(segment.alias("segment")).join(
        probs, on=["run", "segment"], how="left"
    )
    score = pl.col("prob").fill_null(0.0) * (pl.col("score") + 1)
    return _comb_sum(scored, score, _runs_of("segfuse", weights))


# ---------------------------------------------------------------------------------------------
# SlideFuse


def _train_slidefuse(stacked: pl.LazyFrame, qrels: pl.LazyFrame, params: dict[str, Any]):
    # the PosFuse probabilities and their running sums: sum(P[a..b]) = C[b + 1] - C[a]
    probs = _position_probs(stacked, qrels)
    return probs.sort("run", "pos").select(
        "run",
        "pos",
        "prob",
        (pl.col("prob").cum_sum().over("run") - pl.col("prob")).alias("before"),
        (pl.col("pos").max().over("run") + 1).alias("depth"),
    )


@method(
    "slidefuse", train=_train_slidefuse, params={"w": 5},
    rules={"w": Rule("a whole number >= 0", lambda v: v >= 0, whole=True)},
)  # fmt: skip
def slidefuse(
    stacked: pl.LazyFrame, weights: Sequence[float] | None, params: dict[str, Any], trained: Any
) -> pl.LazyFrame:
    """SlideFuse: Σ over runs of the mean PosFuse probability in a window around the position.

    Training as PosFuse: P_r(p). Fusion: for the document at position p of a list of n,
    a = max(p - w, 0), b = min(p + w, n - 1) and s_r(d) = (sum of P_r(i) for a <= i <= b)
    / (b - a + 1), positions past the deepest trained one counting 0 in the sum but not in
    the divisor (as ranx's slice). s(d) = sum over the runs that retrieved d of s_r(d).
    Parameter ``w`` (the half-width, default 5; ranx has no default and searches 1..100).
    Source: Lillis, Toolan, Collier and Dunnion, "Extending Probabilistic Data Fusion Using
    Sliding Windows", ECIR 2008 (https://doi.org/10.1007/978-3-540-78646-7_33); ranx
    ``slidefuse``.
    """
    w = _require_int(params, "w", 0)
    table = _trained("slidefuse", trained)
    # C[i] = sum of P[0..i-1], for i = 0 .. depth (C[depth] is the total)
    running = table.select("run", pl.col("pos").alias("i"), pl.col("before").alias("c"))
    totals = table.group_by("run").agg(pl.col("depth").first(), pl.col("prob").sum().alias("total"))
    cum = pl.concat(
        [running, totals.select("run", pl.col("depth").alias("i"), pl.col("total").alias("c"))]
    )
    pos = pl.col("rank").cast(pl.Int64) - 1
    n = pl.len().over("run", "query").cast(pl.Int64)
    rows = (
        stacked.with_columns(
            pl.max_horizontal(pos - w, pl.lit(0)).alias("a"),
            pl.min_horizontal(pos + w, n - 1).alias("b"),
        )
        .join(totals.select("run", "depth"), on="run", how="left")
        .with_columns(
            pl.min_horizontal("a", "depth").alias("ia"),
            pl.min_horizontal(pl.col("b") + 1, "depth").alias("ib"),
        )
    )
    low = cum.rename({"i": "ia", "c": "c_a"})
    high = cum.rename({"i": "ib", "c": "c_b"})
    scored = rows.join(low, on=["run", "ia"], how="left").join(high, on=["run", "ib"], how="left")
    window = (pl.col("c_b") - pl.col("c_a")).fill_null(0.0)
    score = window / (pl.col("b") - pl.col("a") + 1)
    return _comb_sum(scored, score, _runs_of("slidefuse", weights))


# ---------------------------------------------------------------------------------------------
# BayesFuse


def _train_bayesfuse(stacked: pl.LazyFrame, qrels: pl.LazyFrame, params: dict[str, Any]):
    precision = pl.col("precision")
    p = pl.when(precision == 0).then(BAYES_FLOOR).otherwise(precision)
    not_p = pl.when(1 - p == 0).then(BAYES_FLOOR).otherwise(1 - p)
    return _per_segment(stacked, qrels, BAYESFUSE_BOUNDS).select(
        "run", "segment", (p / not_p).log().alias("log_odds")
    )


@method("bayesfuse", train=_train_bayesfuse)
def bayesfuse(
    stacked: pl.LazyFrame, weights: Sequence[float] | None, params: dict[str, Any], trained: Any
) -> pl.LazyFrame:
    """BayesFuse: Σ over runs of the trained log odds of relevance at the document's position.

    Naive Bayes over segments of positions [0, 5), [5, 10), [10, 15), [15, 20), [20, 30), [30, 100),
    [100, 200), [200, 500), [500, 1000). Training (per run r and segment k): the mean over
    q in Q of the precision (relevant documents in k) / (size of k); a mean of 0 is taken as
    0.001 and a mean of 1 as 0.999; L_r(k) = ln(mean / (1 - mean)). Fusion: s(d) = sum over
    all runs r of L_r(k_r(d)), where a run that did not retrieve d (or ranks it past position
    999) adds ln(0.001 / 0.999), the terms added in run order (ranx reads past the end of
    its table below position 1000). Source: Aslam and Montague, "Models for Metasearch",
    SIGIR 2001 (https://doi.org/10.1145/383952.384007); ranx ``bayesfuse``.
    """
    odds = _trained("bayesfuse", trained)
    segment = _segment(pl.col("rank").cast(pl.Int64) - 1, BAYESFUSE_BOUNDS)
    scored = stacked.with_columns(segment.alias("segment")).join(
        odds, on=["run", "segment"], how="left"
    )
    # a run without d (or past its table) adds the floor, in run order as ranx's sum
    value = pl.col("log_odds").fill_null(MIN_LOG_ODDS)
    return _comb_sum(scored, value, _runs_of("bayesfuse", weights), missing=MIN_LOG_ODDS)


# ---------------------------------------------------------------------------------------------
# MAPFuse


def _train_mapfuse(stacked: pl.LazyFrame, qrels: pl.LazyFrame, params: dict[str, Any]):
    from ..api import evaluate
    from ..summary import summarize

    stacked, qrels = _aligned(stacked, qrels)
    # AP over the universe Q: the judged queries some training run retrieved; ranks as
    # scores (no ties), so AP reads the stacked frame's order
    judged = qrels.join(stacked.select("query").unique(), on="query", how="semi")
    run = stacked.select(
        pl.col("run").alias("_run"), "query", "doc", (-pl.col("rank").cast(pl.Float64)).alias("s")
    )
    per_query = evaluate(run, ["AP"], qrels=judged, score="s", by="_run", queries="judged")
    return summarize(per_query, by="_run").select(pl.col("_run").alias("run"), pl.col("AP"))


@method("mapfuse", train=_train_mapfuse)
def mapfuse(
    stacked: pl.LazyFrame, weights: Sequence[float] | None, params: dict[str, Any], trained: Any
) -> pl.LazyFrame:
    """MAPFuse: Σ over runs of the run's training MAP / the document's rank.

    Training: MAP_r, the mean over q in Q of the average precision of run r (trec_eval's AP,
    a query of Q that r did not answer scoring 0). Fusion: s(d) = sum over the runs r that
    retrieved d of MAP_r / rank_r(d). Source: Lillis, Zhang, Toolan, Collier, Leonard and
    Dunnion, "Estimating probabilities for effective data fusion", SIGIR 2010
    (https://doi.org/10.1145/1835449.1835508); ranx ``mapfuse``.
    """
    maps = _trained("mapfuse", trained)
    scored = stacked.join(maps, on="run", how="left")
    score = pl.col("AP").fill_null(0.0) / pl.col("rank").cast(pl.Float64)
    return _comb_sum(scored, score, _runs_of("mapfuse", weights))
