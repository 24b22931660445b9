"""The measure catalogue: each measure is defined once, as a Polars aggregation expression.

A measure request follows the ir_measures grammar ``NAME[(param=value,...)][@cutoff]``
(``AP``, ``P@10``, ``P(rel=2)@10``, ``AP(norm=min)@10``, ``F(beta=0.5)@10``); trec_eval names
(``map``, ``P_10``, ``P.10``, ``ndcg_cut_10`` ...) are accepted as aliases. Requests are parsed
into a `Spec`, whose `name` is the canonical spelling used for output columns.

Adding a measure: write a function ``(r: Ranking, s: Spec) -> pl.Expr`` with a numpy docstring
(formula, trec_eval name, edge cases), register it with `@measure`, add it to
``tests/reference.py`` and give it a golden row in the tests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from .diversity import NDEVAL_ALPHA, NDEVAL_BETA, Intents, ideal_ideal
from .errors import MeasureError
from .ranking import EXP, LABEL, LINEAR, SCORE, GainRule, Ranking, count, ideal_key

Summary = Literal["mean", "sum", "gmean"]
GMAP_FLOOR = 1e-5  # trec_eval's floor for gm_map: log(max(AP, 1e-5))


@dataclass(frozen=True)
class Param:
    """A measure parameter: how to parse it, its default (None: inherit), allowed values."""

    parse: Callable[[str], Any]
    default: Any = None
    choices: tuple[Any, ...] = ()
    help: str = ""


def _level(text: str) -> float:
    value = float(text)
    if math.isnan(value):
        msg = "rel must be a number"
        raise ValueError(msg)
    return value


def _beta(text: str) -> float:
    value = float(text)
    if not value > 0 or math.isinf(value):
        msg = "beta must be a positive number"
        raise ValueError(msg)
    return value


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        msg = "expected true or false"
        raise ValueError(msg)
    return text.lower() == "true"


def _number(text: str) -> float:
    value = float(text)
    if math.isnan(value):
        msg = "must be a number"
        raise ValueError(msg)
    return value


def _alpha(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        msg = "alpha must be in (0, 1]"
        raise ValueError(msg)
    return value


def _persistence(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        msg = "p must be in (0, 1)"
        raise ValueError(msg)
    return value


INTERPOLATE = Param(_bool, False, help="interpolated curve")
THRESHOLD = Param(_number, None, help="documents with score >= threshold are returned")
ALPHA = Param(_alpha, None, help="F_alpha weighting: beta^2 = 1/alpha - 1")
REL = Param(_level, None, help="label >= rel is relevant (default: the relevance_level)")
BETA = Param(_beta, 1.0, help="weight of recall against precision")


class Gains(tuple):
    """Custom gains per grade, ((grade, gain), ...) sorted by grade; prints as {1:3.5,2:9}."""

    def __str__(self) -> str:
        return "{" + ",".join(f"{_fmt(g)}:{_fmt(v)}" for g, v in self) + "}"


def _gains(text: str) -> Gains:
    """``{1:3.5,2:9}`` (ir_measures' spelling) or ``1=3.5,2=9`` (trec_eval's) -> Gains."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    pairs: dict[float, float] = {}
    for item in filter(None, (p.strip() for p in re.split(r"[,;]", body))):
        grade, sep, gain = item.replace("=", ":").partition(":")
        if not sep:
            msg = f"expected grade:gain pairs like {{1:3.5,2:9}}, got {item!r}"
            raise ValueError(msg)
        g, v = float(grade), float(gain)
        if not g.is_integer() or math.isnan(v) or math.isinf(v):
            msg = f"grades must be whole numbers and gains finite, got {item!r}"
            raise ValueError(msg)
        pairs[g] = v
    if not pairs:
        msg = "no grade:gain pair"
        raise ValueError(msg)
    return Gains(sorted(pairs.items()))


DCG_FORM = Param(
    str, "log2", ("log2", "exp-log2"), help="gain: label (log2) or 2^label - 1 (exp-log2)"
)
GAINS = Param(_gains, None, help="custom gain per grade, {grade:gain,...}")


def _gain_rule(s: Spec) -> GainRule:
    gains = s.param("gains")
    if gains is not None:
        if s.param("dcg") == "exp-log2":
            msg = f"{s.definition.name} takes gains= or dcg=exp-log2, not both"
            raise MeasureError(msg)
        return tuple(gains)
    return EXP if s.param("dcg") == "exp-log2" else LINEAR


def _norm(*choices: str) -> Param:
    return Param(str, choices[0], choices, help="denominator: " + " | ".join(choices))


@dataclass(frozen=True)
class Definition:
    """One entry of the catalogue."""

    name: str
    build: Callable[[Ranking, Spec], pl.Expr]
    cutoff: Literal["required", "optional", "none"]
    summary: Summary
    params: dict[str, Param]
    aliases: tuple[str, ...]
    trec: str
    doc: str
    fraction: bool = False  # the cutoff is a recall level in [0, 1], not a rank
    # With a cutoff K the value reads only the ranked rows within K and per-query totals (R,
    # ideal DCG): the plan may then rank only each query's top K rows (`evaluate`, top-K plan).
    top_only: bool = False
    # per-query ideal DCGs the measure reads (`ranking.ideal_key`), which a plan with
    # judgments in columns must compute from the judged rows (`ideal_keys`)
    ideals: Callable[[Spec], list[Any]] | None = None
    # reads judgments per subtopic (`diversity.Intents`, not a `Ranking`): evaluated in the
    # diversity stage of the plan, from qrels with a subtopic column
    diversity: bool = False
    # reads every judged document of its query as a row (the ideal ranking walked rank by
    # rank, the highest grade): a plan with separate qrels joins them in first (`judged_rows`)
    judged_rows: bool | Callable[[Spec], bool] = False


@dataclass(frozen=True)
class Spec:
    """A parsed measure request: definition, cutoff and explicitly given parameters."""

    definition: Definition
    cutoff: int | float | None = None
    given: tuple[tuple[str, Any], ...] = field(default=())

    def param(self, key: str) -> Any:
        for k, v in self.given:
            if k == key:
                return v
        known = self.definition.params.get(key)
        return None if known is None else known.default

    def level(self, default: float) -> float:
        """The relevance level of this measure: its ``rel=`` or the evaluation's level."""
        value = self.param("rel") if "rel" in self.definition.params else None
        return default if value is None else value

    @property
    def name(self) -> str:
        """Canonical spelling: parameters sorted, defaults dropped, ``@cutoff`` last."""
        parts = [f"{k}={_fmt(v)}" for k, v in sorted(self.given)]
        text = self.definition.name + (f"({','.join(parts)})" if parts else "")
        return text + (f"@{_fmt(self.cutoff)}" if self.cutoff is not None else "")

    @property
    def summary(self) -> Summary:
        return self.definition.summary


def reads_judged_rows(s: Spec) -> bool:
    """Whether `s` reads every judged document of its query as a row (`Definition`)."""
    flag = s.definition.judged_rows
    return flag(s) if callable(flag) else flag


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


CATALOGUE: dict[str, Definition] = {}
_ALIASES: dict[str, str] = {}
# aliases that stand for a measure with parameters set (ranx's ndcg_burges: nDCG with
# exponential gain); lower-case alias -> (parameter, raw value) pairs, parsed as if given
_PRESETS: dict[str, tuple[tuple[str, str], ...]] = {}


def measure(
    name: str,
    *,
    cutoff: Literal["required", "optional", "none"],
    summary: Summary = "mean",
    params: dict[str, Param] | None = None,
    aliases: Iterable[str] = (),
    trec: str = "",
    fraction: bool = False,
    top_only: bool = False,
    presets: dict[str, dict[str, str]] | None = None,
    ideals: Callable[[Spec], list[Any]] | None = None,
    diversity: bool = False,
    judged_rows: bool | Callable[[Spec], bool] = False,
) -> Callable[[Callable[[Ranking, Spec], pl.Expr]], Callable[[Ranking, Spec], pl.Expr]]:
    """Register a measure function in the catalogue (its docstring's first line is its help).

    `presets` are further aliases that set parameters: ``{"ndcg_burges": {"dcg": "exp-log2"}}``
    makes ``ndcg_burges@10`` mean ``nDCG(dcg=exp-log2)@10``.
    """

    def register(fn: Callable[[Ranking, Spec], pl.Expr]) -> Callable[[Ranking, Spec], pl.Expr]:
        doc = (fn.__doc__ or "").strip().splitlines()[0]
        definition = Definition(
            name,
            fn,
            cutoff,
            summary,
            dict(params or {}),
            tuple(aliases),
            trec,
            doc,
            fraction,
            top_only,
            ideals,
            diversity,
            judged_rows,
        )
        CATALOGUE[name] = definition
        for alias in (name, *aliases, *(presets or {})):
            _ALIASES[alias.lower()] = name
        for alias, values in (presets or {}).items():
            _PRESETS[alias.lower()] = tuple(values.items())
        return fn

    return register


# --------------------------------------------------------------------------------------------
# The measures. Notation: ranks k = 1..n over retrieved documents, R = relevant documents of
# the query (retrieved or not) at the measure's level, tp(k) = relevant documents in ranks
# 1..k, tp(k) = tp(n) for k > n, K = the cutoff.
# --------------------------------------------------------------------------------------------


def _expected_precision_sum(r: Ranking, level: float, k: int | None) -> pl.Expr:
    """E[Σ_{k ≤ K, rel_k} tp(k)/k] over the orders of tied documents (McSherry & Najork).

    At the i-th place of a tie group of m documents with g relevant and t relevant above it,
    E[rel · tp] = (g/m)·(t + 1 + (i − 1)(g − 1)/(m − 1)): the document is relevant with
    chance g/m, and then each of the i − 1 places before it in the group holds one of the
    other g − 1 relevant documents with chance (g − 1)/(m − 1).
    """
    before, size, inside, offset = r.tie_groups(r.rel(level))
    others = pl.when(size > 1).then((offset - 1.0) * (inside - 1.0) / (size - 1.0)).otherwise(0.0)
    term = (inside / size) * (before + 1.0 + others) / r.rank
    return r.top(pl.when(r.retrieved).then(term).otherwise(0.0), k).sum()


@measure(
    "AP",
    cutoff="optional",
    params={"rel": REL, "norm": _norm("R", "min", "hits")},
    aliases=("map", "MAP", "mAP", "map_cut", "AveP"),
    trec="map, map_cut_K",
    top_only=True,
)
def average_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Average precision: mean of P@k over the ranks k of relevant documents, divided by R.

    AP = (1/D) Σ_{k ≤ K, rel_k} tp(k)/k, with D = R by default (trec_eval ``map`` and
    ``map_cut_K``, ranx); ``norm=min`` uses D = min(R, K); ``norm=hits`` uses D = tp(K), the
    relevant documents in the top K (AP@K of the seed notes, torchmetrics).
    Relevant documents that were not retrieved contribute precision 0.

    Edge cases: 0 when D = 0 (no relevant document, or no hit for ``norm=hits``); 0 for a
    query with nothing retrieved.
    """
    level, k = s.level(r.default_level), s.cutoff
    # the j-th hit, at rank k_j, has precision j / k_j: summed over the hits' ranks, in rank
    # order as trec_eval adds them; reading the short list of hits is cheaper than a running
    # tp over every row. j counts 1, 2, ... up to the number of hits, not the list's
    # `cum_count`, which builds the list a second time (Polars does not share subexpressions
    # in an aggregation)
    norm = s.param("norm")
    if r.expected:
        if norm == "hits":
            msg = "AP(norm=hits) has no closed form under ties='expected' (a ratio of sums)"
            raise MeasureError(msg)
        total = _expected_precision_sum(r, level, k)
    else:
        ranks = r.hit_ranks(level, k)
        total = (pl.int_range(1, r.hits(level, k) + 1, dtype=pl.Int64) / ranks).sum()
    R = r.num_rel(level)
    if norm == "min" and k is not None:
        den = pl.min_horizontal(R, pl.lit(k))
    elif norm == "hits":
        den = r.hits(level, k)
    else:
        den = R
    return r.safe_div(total, den)


@measure(
    "GMAP",
    cutoff="none",
    summary="gmean",
    params={"rel": REL},
    aliases=("gm_map",),
    trec="gm_map",
)
def geometric_map(r: Ranking, s: Spec) -> pl.Expr:
    """Geometric mean of AP over queries (summary); the per-query value is the query's AP.

    GMAP = exp(mean_q log(max(AP_q, 1e-5))), trec_eval ``gm_map``; the 1e-5 floor keeps
    queries with AP = 0 from sending the mean to 0.
    """
    return average_precision(r, s)


@measure(
    "P",
    cutoff="required",
    params={"rel": REL},
    aliases=("precision",),
    trec="P_K",
    top_only=True,
)
def precision(r: Ranking, s: Spec) -> pl.Expr:
    """Precision at K: relevant documents among the top K, divided by K.

    P@K = tp(K)/K; ranks beyond the n retrieved documents count as non-relevant (trec_eval
    ``P_K``, LingPipe ``precisionAt``). Defined (0) when R = 0 or nothing was retrieved.
    """
    level = s.level(r.default_level)
    if r.expected:  # E[tp(K)]/K: linear in the relevance of each rank
        return r.divide(r.expected_hits(level, s.cutoff), s.cutoff)
    return r.divide(r.hits(level, s.cutoff), s.cutoff)


@measure(
    "R",
    cutoff="required",
    params={"rel": REL, "norm": _norm("R", "min")},
    aliases=("recall",),
    trec="recall_K, relative_P_K (norm=min)",
    top_only=True,
    presets={"relative_P": {"norm": "min"}},
)
def recall(r: Ranking, s: Spec) -> pl.Expr:
    """Recall at K: relevant documents in the top K, divided by R.

    R@K = tp(K)/R (trec_eval ``recall_K``, ranx ``recall@k``); ``norm=min`` divides by
    min(R, K) so that a perfect ranking scores 1 even when R > K (trec_eval ``relative_P_K``,
    spelled ``relative_P@K`` here too). 0 when R = 0.
    """
    level, k = s.level(r.default_level), s.cutoff
    R = r.num_rel(level)
    den = pl.min_horizontal(R, pl.lit(k)) if s.param("norm") == "min" else R
    found = r.expected_hits(level, k) if r.expected else r.hits(level, k)
    return r.safe_div(found, den)


@measure(
    "RR",
    cutoff="optional",
    params={"rel": REL},
    aliases=("MRR", "recip_rank", "reciprocal_rank"),
    trec="recip_rank",
    top_only=True,
)
def reciprocal_rank(r: Ranking, s: Spec) -> pl.Expr:
    """Reciprocal rank: 1 / the rank of the first relevant document (within the top K).

    RR@K = max_{k ≤ K, rel_k} 1/k (trec_eval ``recip_rank`` without a cutoff). 0 when no
    relevant document is retrieved (within K), and so when R = 0.
    """
    # not arg_max of the flags, which gave other values in a plan with several systems
    # (tests/test_properties.py, test_systems_are_independent; Polars 2.1)
    level = s.level(r.default_level)
    if r.expected:
        return _expected_rr(r, level, s.cutoff)
    first = r.first_hit(level, s.cutoff)
    return (1.0 / first).fill_null(0.0)


def _expected_rr(r: Ranking, level: float, k: int | None) -> pl.Expr:
    """E[1/rank of the first relevant] (within K) over the orders of tied documents.

    The first relevant document lies in the first tie group holding one (t = 0 relevant
    above it, g > 0). It is at the group's i-th place with chance
    Π_{j < i} (m − g − j + 1)/(m − j + 1) · g/(m − i + 1): i − 1 non-relevant places, then a
    relevant one. The running product runs over the query's rows: groups above hold no
    relevant document, so their factors are 1.
    """
    before, size, inside, offset = r.tie_groups(r.rel(level))
    factor = pl.when(r.retrieved).then((size - inside - offset + 1.0) / (size - offset + 1.0))
    prefix = factor.fill_null(1.0).cum_prod().shift(1, fill_value=1.0)
    chance = prefix * inside / (size - offset + 1.0)
    first_group = r.retrieved & (before == 0) & (inside > 0)
    return r.top(pl.when(first_group).then(chance / r.rank).otherwise(0.0), k).sum()


def _multiple(text: str) -> float:
    value = float(text)
    if not value > 0 or math.isinf(value):
        msg = "mult must be a positive number"
        raise ValueError(msg)
    return value


@measure(
    "Rprec",
    cutoff="none",
    params={"rel": REL, "mult": Param(_multiple, 1.0, help="rank = mult x R")},
    aliases=("RPrec", "R-prec", "R-precision", "r_precision", "BEP", "Rprec_mult"),
    trec="Rprec, Rprec_mult_x (mult=x)",
)
def r_precision(r: Ranking, s: Spec) -> pl.Expr:
    """R-precision: precision at rank R, the break-even point where precision = recall.

    Rprec = tp(R)/R, ranks beyond n non-relevant (trec_eval ``Rprec``, LingPipe
    ``rPrecision``/``prBreakevenPoint``, ranx ``r-precision``). ``mult=x``: precision at rank
    c = ⌊x·R + 0.9⌋, tp(c)/c (trec_eval ``Rprec_mult_x``; c = R for x = 1). 0 when R = 0
    (1 under ``convention="lingpipe"``).
    """
    level, mult = s.level(r.default_level), s.param("mult")
    R = r.num_rel(level)
    if mult == 1.0:
        value = r.safe_div(r.hits(level, R), R)
    else:  # trec_eval: (long)(x * R + 0.9)
        c = (mult * R.cast(pl.Float64) + 0.9).floor().cast(pl.Int64)
        value = r.safe_div(r.hits(level, c), c)
    if r.convention == "lingpipe":  # LingPipe's rPrecision() is 1 without positives
        return pl.when(R > 0).then(value).otherwise(1.0)
    return value


def _per_group_value(value: float) -> pl.Expr:
    """A constant as a per-group value: Polars turns division by a literal into multiplication
    by its reciprocal, one ulp off (see ranking.divide)."""
    return pl.len() * 0 + value


def _ideal_at_cutoff(s: Spec) -> list[Any]:
    return [ideal_key(s.cutoff, _gain_rule(s))]


@measure(
    "nDCG",
    cutoff="optional",
    params={"dcg": DCG_FORM, "gains": GAINS},
    aliases=("ndcg_cut", "NDCG"),
    trec="ndcg, ndcg_cut_K, ndcg.g=x,...",
    top_only=True,
    presets={"ndcg_burges": {"dcg": "exp-log2"}},
    ideals=_ideal_at_cutoff,
)
def ndcg(r: Ranking, s: Spec) -> pl.Expr:
    """Normalised discounted cumulative gain over the top K (all ranks without a cutoff).

    nDCG@K = DCG@K / IDCG@K with DCG@K = Σ_{k ≤ K} gain_k / log2(k + 1), gain = max(label, 0)
    (linear; unjudged = 0), and IDCG@K the DCG of ALL judged gains of the query sorted
    descending (trec_eval ``ndcg_cut_K``; ``ndcg`` without K; ranx ``ndcg@k``). The
    relevance level does not apply: gains are the raw grades, as in trec_eval.
    ``dcg=exp-log2``: gain 2^max(label, 0) − 1 (Burges et al.; ranx ``ndcg_burges@k``,
    ir_measures ``nDCG(dcg='exp-log2')@k`` = gdeval, whose ties are doc id descending as
    trec_eval's). ``gains={1:3.5,2:9}``: those grades gain those values, other grades their
    label (trec_eval ``ndcg.1=3.5,2=9.0``, ir_measures ``nDCG(gains=...)``); a negative gain
    lowers DCG but never IDCG (trec_eval). 0 when IDCG = 0 (R = 0, or no positive gain).
    """
    rule = _gain_rule(s)
    found = _expected_dcg(r, s.cutoff, rule) if r.expected else r.dcg(s.cutoff, rule)
    return r.safe_div(found, r.ideal_dcg(s.cutoff, rule))


def _expected_dcg(r: Ranking, k: int | None, rule: GainRule) -> pl.Expr:
    """E[DCG@K] over the orders of tied documents: each rank of a tie group gains the group's
    mean gain (McSherry & Najork; scikit-learn's ndcg_score with ignore_ties=False)."""
    _, size, inside, _ = r.tie_groups(r.judged_gain(rule))
    discount = (r.rank + 1).cast(pl.Float64).log(2)
    term = pl.when(r.retrieved).then(inside / size / discount).otherwise(0.0)
    return r.top(term, k).sum()


@measure(
    "DCG",
    cutoff="optional",
    params={"dcg": DCG_FORM, "gains": GAINS},
    aliases=("dcg",),
    trec="dcg (trec_eval 10)",
    top_only=True,
    presets={"dcg_burges": {"dcg": "exp-log2"}},
)
def dcg(r: Ranking, s: Spec) -> pl.Expr:
    """Discounted cumulative gain over the top K, not normalised.

    DCG@K = Σ_{k ≤ K} gain_k / log2(k + 1), gain as in nDCG: the label (linear; ranx
    ``dcg@k``, trec_eval 10 ``dcg``), 2^label − 1 with ``dcg=exp-log2`` (ranx
    ``dcg_burges@k``), or custom ``gains=``. Unjudged documents gain 0. 0 when nothing is
    retrieved or R = 0; a cutoff beyond n sums the n retrieved.
    """
    if r.expected:
        return _expected_dcg(r, s.cutoff, _gain_rule(s))
    return r.dcg(s.cutoff, _gain_rule(s))


def _trec_gains(s: Spec) -> GainRule:
    gains = s.param("gains")
    return LINEAR if gains is None else tuple(gains)


def _walk(r: Ranking, s: Spec, name: str) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """(gain, ideal gain, discount, ranked) per row position of the group.

    With `judged_only` (trec_eval -J) the unjudged retrieved documents leave the ranking: the
    rows walked are the others, so that positions are ranks among judged documents.
    """
    rule = _trec_gains(s)
    ideal = r.ideal_gains(rule, name)
    judged = r.judged_gain(rule)
    gain = pl.when(r.retrieved).then(judged).otherwise(0.0)
    ranked, position = r.retrieved, r.position
    if r.judged_only:
        keep = (pl.col(LABEL) >= 0).fill_null(False) | pl.col(SCORE).is_null()
        gain, ranked = gain.filter(keep), ranked.filter(keep)
        ideal = judged.filter(keep).clip(lower_bound=0.0).sort(descending=True)
        position = pl.int_range(1, count(keep) + 1, dtype=pl.Int64)
    discount = (position + 1).cast(pl.Float64).log(2)
    return gain, ideal, discount, ranked


@measure(
    "nDCGRel",
    cutoff="none",
    params={"gains": GAINS},
    aliases=("ndcg_rel", "nDCG_rel"),
    trec="ndcg_rel",
    judged_rows=True,
)
def ndcg_rel(r: Ranking, s: Spec) -> pl.Expr:
    """nDCG averaged over the documents of positive gain (trec_eval ``ndcg_rel``).

    (1/I) [Σ_{k ≤ n, g_k > 0} DCG(k)/IDCG(min(k, I)) + (I − h)·DCG(n)/IDCG(I)], I = judged
    documents of positive gain, h = those retrieved: a document never retrieved counts the
    ranking's final nDCG. Gains as in nDCG (``gains=`` per grade). It walks the ideal
    ranking: separate qrels are joined in as rows first (`reads_judged_rows`). 0 when I = 0
    or nothing of positive gain is retrieved.
    """
    gain, ideal, discount, ranked = _walk(r, s, "nDCGRel")
    dcg = (gain / discount).cum_sum()
    idcg = (ideal / discount).cum_sum()
    positive = count(ideal > 0)
    h = count(ranked & (gain > 0))
    at_hits = pl.when(ranked & (gain > 0)).then(dcg / idcg).otherwise(0.0).sum()
    final = dcg.last() / idcg.last()
    total = at_hits + (positive - h).cast(pl.Float64) * final
    return pl.when((positive > 0) & (total > 0)).then(total / positive).otherwise(0.0)


@measure(
    "Rndcg",
    cutoff="none",
    params={"gains": GAINS},
    aliases=("RnDCG",),
    trec="Rndcg",
    judged_rows=True,
)
def r_ndcg(r: Ranking, s: Spec) -> pl.Expr:
    """nDCG averaged over the R-levels of the ideal ranking (trec_eval ``Rndcg``).

    The R-levels are the ranks b − 1 where the ideal gain changes between ranks b − 1 and b
    (down to 0 after the last positive gain, rank I); each contributes DCG(min(b − 1, n)) /
    IDCG(b − 1). When the ranking runs on past rank I + 1, DCG(n)/IDCG(I) is one more level
    (trec_eval's implied level at the end of the retrieval). The mean of those values. Reads
    every judged document as a row (`reads_judged_rows`). 0 when R = 0 at the relevance level.
    """
    gain, ideal, discount, _ = _walk(r, s, "Rndcg")
    dcg = (gain / discount).cum_sum()
    idcg = (ideal / discount).cum_sum()
    previous = ideal.shift(1)
    # a level ends at the row before each change of the ideal gain (from a positive one)
    level_end = (previous > 0) & (ideal != previous)
    values = pl.when(level_end.fill_null(False)).then(dcg.shift(1) / idcg.shift(1))
    # every row has a positive ideal gain: the last level ends with the rows
    last_level = ideal.last() > 0
    extra = r.num_ret > count(ideal > 0) + 1
    total = values.sum() + pl.when(last_level).then(dcg.last() / idcg.last()).otherwise(0.0)
    total = total + pl.when(extra).then(dcg.last() / idcg.max()).otherwise(0.0)
    levels = values.count() + last_level.cast(pl.Int64) + extra.cast(pl.Int64)
    R = r.num_rel(r.default_level)
    return pl.when((R > 0) & (levels > 0)).then(total / levels).otherwise(0.0)


@measure(
    "G",
    cutoff="none",
    params={"gains": GAINS},
    trec="G",
    judged_rows=True,
)
def normalized_g(r: Ranking, s: Spec) -> pl.Expr:
    """Normalised gain G (trec_eval ``G``, experimental there).

    G = (1/Σ ideal gains) Σ_{k ≤ n, g_k ≠ 0} g_k / log2(2 + C(k) − S(k)), with S(k) the
    gains of ranks 1..k and C(k) = Σ_{j ≤ k} max(ideal gain at j, 1). Gains as in nDCG
    (``gains=``; a negative gain counts). Reads every judged document as a row. 0 when no
    judged document has a positive gain.
    """
    gain, ideal, _, ranked = _walk(r, s, "G")
    cost = pl.max_horizontal(ideal, pl.lit(1.0)).cum_sum()
    got = gain.cum_sum()
    term = pl.when(ranked & (gain != 0)).then(gain / (2.0 + cost - got).log(2)).otherwise(0.0)
    return r.safe_div(term.sum(), ideal.sum())


@measure(
    "SDCG",
    cutoff="required",
    params={
        "max_rel": Param(_number, None, help="grade of gain 1 (required)"),
        "min_rel": Param(_number, 0.0, help="grade of gain 0"),
    },
    aliases=("sdcg",),
    trec="(ir_measures SDCG@k = cwl_eval NDCG-k)",
    top_only=True,
)
def scaled_dcg(r: Ranking, s: Spec) -> pl.Expr:
    """Scaled DCG@K: DCG@K of gains scaled to [0, 1], divided by the DCG@K of K documents of
    gain 1 (ir_measures ``SDCG(max_rel=m)@k``, computed by cwl_eval's C/W/L NDCG-k).

    g = (min(max(label, a), m) − a)/(m − a), a = ``min_rel`` (0), m = ``max_rel``;
    SDCG@K = Σ_{k ≤ K} g_k/log2(k + 1) / Σ_{k ≤ K} 1/log2(k + 1): no ideal ranking, so it
    needs no judgments beyond the ranked ones. Unjudged documents gain 0. 0 when nothing is
    retrieved.
    """
    top, bottom = s.param("max_rel"), s.param("min_rel")
    if top is None or not top > bottom:
        msg = f"{s.name}: SDCG needs max_rel= above min_rel (e.g. SDCG(max_rel=3)@10)"
        raise MeasureError(msg)
    scaled = (pl.col(LABEL).clip(bottom, top) - bottom) / (top - bottom)
    discount = (r.rank + 1).cast(pl.Float64).log(2)
    gains = pl.when(r.retrieved).then(scaled.fill_null(0.0) / discount).otherwise(0.0)
    norm = sum(1.0 / math.log2(k + 1) for k in range(1, s.cutoff + 1))
    return r.top(gains, s.cutoff).sum() / _per_group_value(norm)


CWL_DEPTH = 1000  # cwl_eval's max_n: rankings are cut or padded (gain 0) to 1000 ranks


def _target(text: str) -> float:
    value = float(text)
    if not value > 0 or math.isinf(value):
        msg = "T must be a positive number"
        raise ValueError(msg)
    return value


CWL_PARAMS = {
    "T": Param(_target, 1.0, help="desired total gain"),
    "max_rel": Param(_number, None, help="grade of gain 1 (required)"),
    "min_rel": Param(_number, 0.0, help="grade of gain 0"),
}


def _scaled_gains(r: Ranking, s: Spec) -> pl.Expr:
    """Gains in [0, 1] as ir_measures hands them to cwl_eval: (clip(label, a, m) − a)/(m − a)
    on ranked rows within cwl_eval's 1000 ranks, 0 elsewhere and for unjudged documents."""
    top, bottom = s.param("max_rel"), s.param("min_rel")
    if top is None or not top > bottom:
        msg = f"{s.name}: {s.definition.name} needs max_rel= above min_rel (e.g. max_rel=3)"
        raise MeasureError(msg)
    if r.depth is not None or r.judged_only:
        msg = f"{s.definition.name} does not combine with depth or judged_only"
        raise MeasureError(msg)
    scaled = ((pl.col(LABEL).clip(bottom, top) - bottom) / (top - bottom)).fill_null(0.0)
    return pl.when(r.retrieved & (r.position <= CWL_DEPTH)).then(scaled).otherwise(0.0)


@measure("INSQ", cutoff="none", params=CWL_PARAMS, trec="(ir_measures INSQ = cwl_eval)")
def insq(r: Ranking, s: Spec) -> pl.Expr:
    """INSQ (Moffat et al. 2012), the C/W/L expected rate of gain of a user who continues
    from rank i with chance C_i = ((i + 2T − 1)/(i + 2T))².

    INSQ = Σ_i W_i g_i, W_i = (2T/(i − 1 + 2T))² / Σ_{k ≤ 1000} (2T/(k − 1 + 2T))², over
    cwl_eval's 1000 ranks (ir_measures ``INSQ(max_rel=m,T=t)``); g the grade scaled to [0, 1]
    by ``min_rel``/``max_rel``. Unjudged documents gain 0. 0 when nothing is retrieved.
    """
    t2 = 2.0 * s.param("T")
    total = sum((t2 / (k - 1 + t2)) ** 2 for k in range(1, CWL_DEPTH + 1))
    weight = (t2 / (r.position.cast(pl.Float64) - 1.0 + t2)) ** 2
    return (_scaled_gains(r, s) * weight).sum() / _per_group_value(total)


@measure("INST", cutoff="none", params=CWL_PARAMS, trec="(ir_measures INST = cwl_eval)")
def inst(r: Ranking, s: Spec) -> pl.Expr:
    """INST (Moffat et al. 2015): INSQ whose user stops sooner once gain comes in, C_i =
    ((i + T + T_i − 1)/(i + T + T_i))² with T_i = T − Σ_{j ≤ i} g_j.

    INST = Σ_i W_i g_i with W_i = Π_{j<i} C_j / Σ_{k ≤ 1000} Π_{j<k} C_j over cwl_eval's 1000
    ranks (ir_measures ``INST(max_rel=m,T=t)``). Past the ranking the gain stays G, so the
    tail of the normaliser is Π_{j ≤ n} C_j · Σ_{i=n+1}^{1000} ((n + 2T − G)/(i − 1 + 2T − G))².
    0 when nothing is retrieved.
    """
    t = s.param("T")
    g = _scaled_gains(r, s)
    i = r.position.cast(pl.Float64)
    rest = 2.0 * t - g.cum_sum()  # T + T_i
    a = 2.0 * t - g.sum()
    return _cwl(r, g, ((i + rest - 1.0) / (i + rest)) ** 2, lambda n, j: ((n + a) / (j + a)) ** 2)


def _cwl(
    r: Ranking,
    g: pl.Expr,
    stay: pl.Expr,
    tail: Callable[[pl.Expr, pl.Expr], pl.Expr],
    depth: pl.Expr | int = CWL_DEPTH,
) -> pl.Expr:
    """C/W/L expected rate of gain as cwl_eval computes it over its 1000 ranks:
    Σ_i W_i g_i, W_i = Π_{j<i} C_j / Σ_{k ≤ 1000} Π_{j<k} C_j.

    `stay` is C_i on the ranked rows; past the n ranked rows the gain is 0, and `tail(n, j)`
    gives Π_{n<l<j+1} C_l for the padded ranks j + 1 = n + 1 .. `depth` (the products stop
    being positive there), summed here in one short int_range per query.
    """
    ranked = r.retrieved & (r.position <= CWL_DEPTH)
    stay = pl.when(ranked).then(stay).otherwise(1.0)
    reach = stay.cum_prod().shift(1, fill_value=1.0)  # Π_{j<i} C_j
    head = pl.when(ranked).then(reach).otherwise(0.0)
    n = count(ranked).cast(pl.Float64)
    j = pl.int_range(count(ranked), depth, dtype=pl.Int64).cast(pl.Float64)  # rank − 1
    padded = stay.filter(ranked).product() * tail(n, j).sum()
    return (head * g).sum() / (head.sum() + padded)


@measure(
    "BPM",
    cutoff="required",
    params=CWL_PARAMS,
    trec="(ir_measures BPM@k = cwl_eval BPM-Static)",
    top_only=True,
)
def bpm(r: Ranking, s: Spec) -> pl.Expr:
    """Bejewelled player model, static (Zhang et al. 2017; ir_measures ``BPM(T=t)@k``, computed
    by cwl_eval): the user reads ranks 1..L and stops, L = min(K, the first rank where the
    gain so far reaches T); BPM = (gain of ranks 1..L)/L.

    Gains scaled to [0, 1] by min_rel/max_rel; unjudged 0; missing ranks gain 0 (so L = K when
    T is never reached, K capped at cwl_eval's 1000 ranks). 0 when nothing is retrieved.
    """
    g, t = _scaled_gains(r, s), s.param("T")
    ranked = r.retrieved & (r.position <= CWL_DEPTH)
    got = g.cum_sum()
    reached = r.position.filter(ranked & (got >= t)).min()
    k = min(s.cutoff, CWL_DEPTH)
    stop = pl.min_horizontal(reached.fill_null(k), pl.lit(k))
    return pl.when(r.position <= stop).then(g).otherwise(0.0).sum() / stop.cast(pl.Float64)


@measure(
    "Compat",
    cutoff="none",
    params={
        "p": Param(_persistence, 0.95, help="RBO persistence"),
        "normalize": Param(_bool, True, help="divide by the ideal ranking's own RBO"),
    },
    aliases=("compat", "compatibility"),
    trec="(ir_measures Compat)",
    judged_rows=True,
)
def compat(r: Ranking, s: Spec) -> pl.Expr:
    """Compatibility (Clarke, Vtyurina & Smucker 2021): rank-biased overlap of the ranking
    with an ideal ranking, divided by the ideal's own (ir_measures ``Compat(p=,normalize=)``).

    The ideal ranks the documents with a positive label, by label, ties by the run's score
    (0 for documents not retrieved) then the run's order, so that ties favour the run.
    RBO to depth D = max(n, ideal size): Σ_{d ≤ D} p^(d−1)·|run_d ∩ ideal_d|/d / Σ_{d ≤ D}
    p^(d−1), the overlap of the top d of both. ``normalize=false`` keeps the raw RBO. The
    relevance level does not apply. Reads every judged document as a row (`reads_judged_rows`).
    0 when nothing is retrieved and nothing is relevant. ir_measures orders tied run scores by
    doc id ascending, preval by its ``ties=`` rule.
    """
    if r.stats == "columns":
        msg = "Compat needs every judged document of the query: join the qrels into one table"
        raise MeasureError(msg)
    if r.depth is not None or r.judged_only:
        msg = "Compat does not combine with depth or judged_only"
        raise MeasureError(msg)
    p = s.param("p")
    label = pl.col(LABEL)
    member = (label > 0).fill_null(False)
    score = pl.when(r.retrieved).then(pl.col(SCORE)).otherwise(0.0)
    keys = [member, label.fill_null(0.0), score, r.position]
    ideal_rank = pl.arg_sort_by(keys, descending=[True, True, True, False]).arg_sort() + 1
    depth = pl.max_horizontal(r.num_ret, count(member))
    d = r.position
    term = pl.when(d <= depth).then(pl.lit(p).pow(d - 1) / d).otherwise(0.0)
    after = term.reverse().cum_sum().reverse()  # Σ_{d' ≥ d} term
    both = r.retrieved & member
    # a document common to both counts in the overlap from depth max(its two ranks) on
    meet = pl.max_horizontal(r.rank, ideal_rank).filter(both) - 1
    overlap = after.gather(meet).sum()
    best = (term * pl.min_horizontal(d, count(member))).sum()
    weights = pl.when(d <= depth).then(pl.lit(p).pow(d - 1)).otherwise(0.0).sum()
    raw = r.safe_div(overlap, weights)
    return r.safe_div(overlap, best) if s.param("normalize") else raw


def _nerr_cutoff(s: Spec) -> int:
    return min(s.cutoff, CWL_DEPTH)


@measure(
    "NERR8",
    cutoff="required",
    params={k: v for k, v in CWL_PARAMS.items() if k != "T"},
    trec="(ir_measures NERR8@k = cwl_eval)",
    top_only=True,
)
def nerr8(r: Ranking, s: Spec) -> pl.Expr:
    """Normalised ERR, Azzopardi et al. 2021 equation 8 (ir_measures ``NERR8``, cwl_eval):
    C/W/L with C_i = 1 − g_i before rank K, 0 from K on; gains scaled by min_rel/max_rel."""
    g, k = _scaled_gains(r, s), _nerr_cutoff(s)
    stay = pl.when(r.position < k).then(1.0 - g).otherwise(0.0)
    return _cwl(r, g, stay, lambda n, j: pl.lit(1.0) + j * 0, k)


@measure(
    "NERR9",
    cutoff="required",
    params={k: v for k, v in CWL_PARAMS.items() if k != "T"},
    trec="(ir_measures NERR9@k = cwl_eval)",
    top_only=True,
)
def nerr9(r: Ranking, s: Spec) -> pl.Expr:
    """Normalised ERR, equation 9 (ir_measures ``NERR9``): C_i = i/(i + 1)·(1 − g_i) before
    rank K, 0 from K on."""
    g, k = _scaled_gains(r, s), _nerr_cutoff(s)
    i = r.position.cast(pl.Float64)
    stay = pl.when(r.position < k).then(i / (i + 1.0) * (1.0 - g)).otherwise(0.0)
    return _cwl(r, g, stay, lambda n, j: (n + 1.0) / (j + 1.0), k)


@measure(
    "NERR10",
    cutoff="none",
    params={"p": Param(_persistence, 0.9, help="persistence"), **{
        k: v for k, v in CWL_PARAMS.items() if k != "T"}},
    trec="(ir_measures NERR10 = cwl_eval)",
)  # fmt: skip
def nerr10(r: Ranking, s: Spec) -> pl.Expr:
    """Normalised ERR, equation 10 (ir_measures ``NERR10(p=φ)``): C_i = φ·(1 − g_i)."""
    g, phi = _scaled_gains(r, s), s.param("p")
    return _cwl(r, g, phi * (1.0 - g), lambda n, j: pl.lit(phi).pow(j - n))


@measure("NERR11", cutoff="none", params=CWL_PARAMS, trec="(ir_measures NERR11 = cwl_eval)")
def nerr11(r: Ranking, s: Spec) -> pl.Expr:
    """Normalised ERR, equation 11 (ir_measures ``NERR11(T=t)``): C_i = ((i + 2T − 1)/(i +
    2T))²·(1 − g_i), INSQ's continuation stopped by gain."""
    g, t2 = _scaled_gains(r, s), 2.0 * s.param("T")
    i = r.position.cast(pl.Float64)
    stay = ((i + t2 - 1.0) / (i + t2)) ** 2 * (1.0 - g)
    return _cwl(r, g, stay, lambda n, j: ((n + t2) / (j + t2)) ** 2)


@measure(
    "Success",
    cutoff="required",
    params={"rel": REL},
    aliases=("success", "hit_rate", "HitRate"),
    trec="success_K",
    top_only=True,
)
def success(r: Ranking, s: Spec) -> pl.Expr:
    """Success at K: 1 if a relevant document is in the top K, else 0 (trec_eval success_K).

    Also ranx ``hit_rate@k``. 0 when R = 0 or nothing is retrieved.
    """
    return (r.hits(s.level(r.default_level), s.cutoff) > 0).cast(pl.Float64)


@measure(
    "Hits",
    cutoff="optional",
    params={"rel": REL},
    aliases=("hits",),
    trec="(ranx hits@k; num_rel_ret without K, but averaged)",
    top_only=True,
)
def hits(r: Ranking, s: Spec) -> pl.Expr:
    """Hits at K: the number of relevant documents in the top K, averaged over queries.

    Hits@K = tp(K) (ranx ``hits@k``; ``hits`` without K: tp(n)). A count per query whose
    summary is the mean, as ranx reports it (`NumRelRet` is the same count summed, as
    trec_eval's ``num_rel_ret``). 0 when R = 0 or nothing is retrieved; a cutoff beyond n
    counts the n retrieved.
    """
    level = s.level(r.default_level)
    if r.expected:
        return r.expected_hits(level, s.cutoff)
    return r.hits(level, s.cutoff).cast(pl.Float64)


@measure(
    "F",
    cutoff="optional",
    params={"rel": REL, "beta": BETA},
    aliases=("F1", "F-measure"),
    trec="set_F (no cutoff)",
    top_only=True,
)
def f_measure(r: Ranking, s: Spec) -> pl.Expr:
    """F-beta of precision and recall at K (all retrieved documents without a cutoff).

    F = (1 + β²)·P·Rc / (β²·P + Rc) with P = tp(K)/K and Rc = tp(K)/R, which simplifies to
    (1 + β²)·tp(K) / (β²·R + K). β > 1 favours recall. Without a cutoff K = n (trec_eval
    ``set_F``). 0 when tp(K) = 0, so also when R = 0 or nothing was retrieved.
    """
    level, beta2 = s.level(r.default_level), s.param("beta") ** 2
    k = r.num_ret if s.cutoff is None else pl.lit(s.cutoff)
    return r.safe_div((1.0 + beta2) * r.hits(level, s.cutoff), beta2 * r.num_rel(level) + k)


PERSISTENCE = Param(_persistence, 0.8, help="persistence p in (0, 1)")


def _discounts(r: Ranking, p: float) -> pl.Expr:
    """p^(rank − 1) at every row (ranks from 1)."""
    return pl.lit(p).pow(r.rank - 1)


@measure(
    "RBP",
    cutoff="optional",
    params={
        "rel": REL,
        "p": PERSISTENCE,
        "gain": Param(str, "binary", ("binary", "label", "scaled"), help="binary|label|scaled"),
    },
    aliases=("rbp",),
    trec="rbp.p=x (trec_eval 10, gain=scaled)",
    top_only=True,
    judged_rows=lambda s: s.param("gain") == "scaled",  # the query's highest judged grade
)
def rank_biased_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Rank-biased precision (Moffat & Zobel 2008): (1 − p) Σ_{k ≤ K} g_k · p^(k−1).

    ``gain=binary`` (default): g = 1 for a relevant document at the level (ir_measures
    ``RBP(p=x,rel=l)``, p = 0.8 by default as there). ``gain=label``: g = the label of a
    document at or above the level, else 0 (ranx ``rbp.x``: grades are not scaled, so RBP may
    exceed 1). ``gain=scaled``: g = max(label, 0)/G, G the query's highest grade when G > 1
    (trec_eval 10 ``rbp``, default p = 0.9 there; needs the judgments' highest grade: one
    joined table or no qrels). Unjudged documents gain 0; the unseen tail adds nothing (see
    `RBPResid`). 0 when nothing is retrieved or nothing relevant.
    """
    level, p = s.level(r.default_level), s.param("p")
    gain = s.param("gain")
    label = pl.col(LABEL)
    if gain == "binary":
        g = r.rel(level).cast(pl.Float64)
    elif gain == "label":
        g = pl.when(r.rel(level)).then(label).otherwise(0.0)
    else:
        if r.stats == "columns":
            msg = (
                "RBP(gain=scaled) scales grades by the query's highest judged grade, which "
                "this plan does not carry with separate qrels: join them into one table"
            )
            raise MeasureError(msg)
        top = label.max().fill_null(0.0)
        scaled = label.clip(lower_bound=0).fill_null(0.0) / pl.max_horizontal(top, 1.0)
        g = pl.when(r.retrieved).then(scaled).otherwise(0.0)
    term = pl.when(r.retrieved).then(g * _discounts(r, p)).otherwise(0.0)
    return (1.0 - p) * r.top(term, s.cutoff).sum()


@measure(
    "RBPResid",
    cutoff="none",
    params={"p": PERSISTENCE},
    aliases=("rbp_resid", "RBP_resid"),
    trec="rbp_resid.p=x (trec_eval 10)",
)
def rbp_residual(r: Ranking, s: Spec) -> pl.Expr:
    """RBP's residual as trec_eval 10 reports it: the most RBP could rise if every unjudged
    retrieved document, and every rank beyond the ranking, were relevant.

    RBPResid = p^n + (1 − p) Σ_{unjudged k} p^(k−1) over the n ranked documents, unjudged =
    no label or a negative one (trec_eval 10 ``rbp_resid``). As in trec_eval it is 0 when no
    retrieved document is unjudged (the tail p^n is then left out too), and so 0 when
    nothing is retrieved. p defaults to ir_measures' 0.8 (trec_eval: 0.9).
    """
    p = s.param("p")
    unjudged = r.retrieved & ~r.judged()
    tail = pl.lit(p).pow(r.num_ret)
    total = pl.when(unjudged).then(_discounts(r, p)).otherwise(0.0).sum()
    return pl.when(count(unjudged) > 0).then(tail + (1.0 - p) * total).otherwise(0.0)


def _grade(text: str) -> float:
    value = float(text)
    if not value > 0 or math.isinf(value):
        msg = "max_grade must be a positive number"
        raise ValueError(msg)
    return value


@measure(
    "ERR",
    cutoff="optional",
    params={"max_grade": Param(_grade, 4.0, help="grade of certain satisfaction")},
    aliases=("err",),
    trec="(ir_measures ERR@k = gdeval)",
    top_only=True,
)
def expected_reciprocal_rank(r: Ranking, s: Spec) -> pl.Expr:
    """Expected reciprocal rank (Chapelle et al. 2009) over the top K.

    ERR@K = Σ_{k ≤ K} (1/k) · R_k · Π_{j < k} (1 − R_j), R = (2^g − 1)/2^M with
    g = min(max(label, 0), M) and M = ``max_grade`` = 4 (gdeval.pl, which ir_measures runs for
    ``ERR@k``; gdeval rejects grades above 4, preval caps them). The relevance level does not
    apply. Unjudged documents: R = 0. 0 when nothing is retrieved or no grade is positive.
    """
    top = s.param("max_grade")
    g = pl.col(LABEL).clip(0, top).fill_null(0.0)
    stop = pl.when(r.retrieved).then((pl.lit(2.0).pow(g) - 1.0) / 2.0**top).otherwise(0.0)
    # the chance to reach rank k: no stop at ranks 1 .. k−1, multiplied in rank order
    reach = (1.0 - stop).cum_prod().shift(1, fill_value=1.0)
    term = pl.when(r.retrieved).then(stop * reach / r.rank).otherwise(0.0)
    return r.top(term, s.cutoff).sum()


@measure("TieAtCutoff", cutoff="required", aliases=("tie_at_cutoff",))
def tie_at_cutoff(r: Ranking, s: Spec) -> pl.Expr:
    """1 when a tie straddles the cutoff K: ranks K and K + 1 both hold documents of equal
    score, so the tie rule decides which of them are in the top K; else 0.

    Scores compare as trec_eval's do (32-bit floats, doubles with ``trec_version=10``), as
    ``ties="trec"`` and ``"expected"`` group them. 0 when fewer than K + 1 documents are
    ranked. With ``ties="optimistic"`` and ``"pessimistic"`` it tells which queries' bounds
    can differ at K.
    """
    score = r.tie_score()
    at_k = score.filter(r.retrieved & (r.rank == s.cutoff)).first()
    after = score.filter(r.retrieved & (r.rank == s.cutoff + 1)).first()
    return (at_k == after).fill_null(False).cast(pl.Float64)


@measure(
    "Bpref",
    cutoff="none",
    params={"rel": REL},
    aliases=("bpref",),
    trec="bpref",
)
def bpref(r: Ranking, s: Spec) -> pl.Expr:
    """Binary preference: how rarely judged non-relevant documents outrank relevant ones.

    Bpref = (1/R) Σ_{relevant retrieved d} (1 − min(n_d, R)/min(N, R)), with n_d the judged
    non-relevant documents ranked above d and N those of the query (trec_eval ``bpref``);
    a term is 1 when n_d = 0. Unjudged documents (no label, or a negative label: pooled but
    not assessed) are ignored. 0 when R = 0.
    """
    level = s.level(r.default_level)
    R, N = r.num_rel(level), r.num_nonrel(level)
    above = (r.judged_nonrel(level) & r.retrieved).cum_sum()
    penalty = r.safe_div(pl.min_horizontal(above, R), pl.min_horizontal(N, R), per_row=True)
    return r.safe_div(pl.when(r.rel(level)).then(1.0 - penalty).otherwise(0.0).sum(), R)


@measure(
    "GMBpref",
    cutoff="none",
    summary="gmean",
    params={"rel": REL},
    aliases=("gm_bpref",),
    trec="gm_bpref",
)
def geometric_bpref(r: Ranking, s: Spec) -> pl.Expr:
    """Geometric mean of Bpref over queries (summary); the per-query value is Bpref.

    exp(mean_q log(max(Bpref_q, 1e-5))), trec_eval ``gm_bpref``.
    """
    return bpref(r, s)


def _iprec(r: Ranking, level: float, recall: float) -> pl.Expr:
    """max tp(k)/k over relevant ranks k holding at least the cutoff's relevant documents."""
    if r.convention != "trec":
        # LingPipe and VLFeat: the best precision of the curve's points with recall >= r,
        # counting the point (recall 0, precision 1); LingPipe's 1e-13 absorbs 0.1*3 != 0.3
        reached = r.retrieved & (r.recall(level) + 1e-13 >= recall)
        best = r.precision(level).filter(reached.fill_null(False)).max().fill_null(0.0)
        return pl.lit(1.0) if recall <= 1e-13 else best
    R = r.num_rel(level).cast(pl.Float64)
    if r.trec_version < 10:
        needed = (recall * R + 0.9).floor()  # trec_eval 9: (long)(p*R + 0.9)
    else:
        needed = (recall * R + 0.5).floor()  # trec_eval 10: lround(p*R)
    tp = r.tp(level)
    reached = r.rel(level) & (tp >= pl.max_horizontal(needed, pl.lit(1.0)))
    return (tp / r.rank).filter(reached).max().fill_null(0.0)


@measure(
    "IPrec",
    cutoff="required",
    params={"rel": REL},
    aliases=("iprec_at_recall",),
    trec="iprec_at_recall_r",
    fraction=True,
)
def interpolated_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Interpolated precision at recall r: the best precision once recall r is reached.

    IPrec@r = max_{k: rel_k, tp(k) ≥ c} tp(k)/k with c = ⌊r·R + 0.9⌋ (trec_eval 9
    ``iprec_at_recall``) or c = round(r·R) with ``trec_version=10``, and c ≥ 1. 0 when
    recall r is never reached, and so when R = 0. Under ``convention="lingpipe"`` or
    ``"vlfeat"``: the best precision of the PR curve's points with recall ≥ r, including
    the point (recall 0, precision 1), so IPrec@0 = 1.
    """
    return _iprec(r, s.level(r.default_level), s.cutoff)


@measure(
    "AP11",
    cutoff="none",
    params={"rel": REL},
    aliases=("11pt", "11pt_avg", "11-pt"),
    trec="11pt_avg",
)
def eleven_point(r: Ranking, s: Spec) -> pl.Expr:
    """11-point interpolated average precision: mean of IPrec@0, 0.1, ..., 1 (trec 11pt_avg).

    Each IPrec follows the cutoff rule of the trec_eval version (see IPrec). 0 when R = 0.
    """
    level = s.level(r.default_level)
    # Summed left to right, as trec_eval does: the optimizer may re-associate a chain of `+`
    # (and sum_horizontal fixes no order), so the last bit would depend on the plan. A prefix
    # sum is sequential by definition.
    points = pl.concat_list([_iprec(r, level, i / 10) for i in range(11)])
    return r.divide(points.list.eval(pl.element().cum_sum()).list.last(), 11)


@measure(
    "infAP",
    cutoff="none",
    params={"rel": REL},
    aliases=("infap", "inferred_AP"),
    trec="infAP",
)
def inferred_ap(r: Ranking, s: Spec) -> pl.Expr:
    """Inferred AP (Yilmaz & Aslam 2006): AP estimated from incomplete, sampled judgments.

    At the relevant document of rank k (k > 1), with t = relevant, n = judged non-relevant
    and u = pooled-unjudged (negative label) documents in ranks 1..k−1:
    E[P(k)] = 1/k + ((k−1)/k) · ((t + n + u)/(k−1)) · ((t + ε)/(t + n + 2ε)), ε = 1e-5;
    E[P(1)] = 1. infAP = Σ E[P(k)] / R (trec_eval ``infAP``). Documents absent from the
    judgments occupy ranks but are not counted. 0 when R = 0.
    """
    level = s.level(r.default_level)
    rel, k = r.rel(level), r.rank.cast(pl.Float64)
    t = r.tp(level) - 1  # relevant above: tp(k) counts this relevant document too
    n = (r.judged_nonrel(level) & r.retrieved).cum_sum()
    u = r.pooled_unjudged().cum_sum()
    eps = 1e-5
    expected = 1.0 / k + ((k - 1.0) / k) * ((t + n + u) / (k - 1.0)) * (
        (t + eps) / (t + n + 2 * eps)
    )
    term = pl.when(rel & (k == 1)).then(1.0).when(rel).then(expected).otherwise(0.0)
    return r.safe_div(term.sum(), r.num_rel(level))


@measure(
    "Judged",
    top_only=True,
    cutoff="optional",
    params={"norm": _norm("min", "K")},
    aliases=("judged",),
    trec="(ir_measures Judged)",
)
def judged(r: Ranking, s: Spec) -> pl.Expr:
    """Judged at K: the share of the top min(K, n) ranked documents that has a judgment.

    Judged@K = j(K) / min(K, n), j(K) = documents in the top K with a label ≥ 0, n = ranked
    documents; without a cutoff j(n)/n (ir_measures ``Judged@k`` and ``Judged``, which divide by
    min(K, n) since its PR #48, Dec 2022). ``norm=K`` divides by K instead, counting missing
    ranks beyond n as unjudged (preval before 2026-11). A negative label marks a pooled
    document that was never assessed, as in trec_eval: not judged (ir_measures counts every
    qrels entry, negative labels too). Ties follow the evaluation's rule (ir_measures orders
    them by doc id ascending). 0 when nothing is ranked (ir_measures has no value there: it
    divides by zero); R = 0 does not matter.
    """
    k = s.cutoff
    found = r.top(r.judged(), k).sum()
    if s.param("norm") == "K" and k is not None:
        return r.divide(found, k)
    shown = r.num_ret if k is None else pl.min_horizontal(r.num_ret, pl.lit(k))
    return r.safe_div(found, shown)


@measure(
    "SetP",
    cutoff="none",
    params={"rel": REL, "threshold": THRESHOLD},
    aliases=("set_P",),
    trec="set_P",
)
def set_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Precision of the returned set: tp/returned (trec_eval set_P without a threshold).

    Returned = ranked documents with score ≥ threshold; all ranked ones without a threshold.
    0 when nothing is returned.
    """
    tp, fp, _, _ = _set_counts(r, s)
    return r.safe_div(tp, tp + fp)


@measure(
    "SetR",
    cutoff="none",
    params={"rel": REL, "threshold": THRESHOLD},
    aliases=("set_recall", "Sensitivity", "TPR"),
    trec="set_recall",
)
def set_recall(r: Ranking, s: Spec) -> pl.Expr:
    """Recall of the returned set: tp/R (trec_eval set_recall without a threshold).

    Returned = ranked documents with score ≥ threshold. 0 when R = 0.
    """
    tp, _, R, _ = _set_counts(r, s)
    return r.safe_div(tp, R)


def _pr_points(r: Ranking, level: float) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Recall, precision and relevance at the ranked rows, in rank order."""
    ranked = r.retrieved
    return (
        r.recall(level).filter(ranked),
        r.precision(level).filter(ranked),
        r.rel(level).filter(ranked),
    )


def _trapezoids(x: pl.Expr, y: pl.Expr, x0: float, y0: float) -> pl.Expr:
    """Σ (x_i − x_{i−1})(y_i + y_{i−1})/2 over consecutive points, from the point (x0, y0)."""
    return ((x - x.shift(1, fill_value=x0)) * (y + y.shift(1, fill_value=y0)) / 2).sum()


@measure(
    "AUC-PR",
    cutoff="none",
    params={"rel": REL, "interpolate": INTERPOLATE},
    aliases=("AUCPR", "PR-AUC", "AUPRC", "auc_pr"),
    trec="(vl_pr info.auc, LingPipe areaUnderPrCurve)",
)
def auc_pr(r: Ranking, s: Spec) -> pl.Expr:
    """Area under the precision-recall curve of the convention (trapezoids).

    ``trec`` and ``vlfeat`` (vl_pr ``info.auc``): trapezoids from the rank-0 point
    (recall 0, precision 1) through every ranked document; with ``interpolate=true`` the
    curve is piecewise constant, Σ Δrecall · interpolated precision (vl_pr: then equal to AP
    from interpolated precision). ``lingpipe`` (``areaUnderPrCurve``): trapezoids over
    LingPipe's curve, (0, 1) … (1, 0), without points of recall and precision 0; interpolated,
    over its pruned interpolated curve. Null when R = 0 (no recall axis).
    """
    level = s.level(r.default_level)
    recall, precision, rel = _pr_points(r, level)
    interpolate = s.param("interpolate")
    if r.convention == "lingpipe":
        if interpolate:  # the first point of each recall: the relevant ranks
            x, y = recall.filter(rel), precision.cum_max(reverse=True).filter(rel)
        else:  # points with recall = precision = 0 are dropped: ranks before the first hit
            hit = r.tp(level).filter(r.retrieved) > 0
            x, y = recall.filter(hit), precision.filter(hit)
        closing = (1.0 - x.last().fill_null(0.0)) * y.last().fill_null(1.0) / 2  # to (1, 0)
        area = _trapezoids(x, y, 0.0, 1.0) + closing
    elif interpolate:
        step = recall - recall.shift(1, fill_value=0.0)
        area = (step * precision.cum_max(reverse=True)).sum()
    else:
        area = _trapezoids(recall, precision, 0.0, 1.0)
    return pl.when(r.num_rel(level) > 0).then(area)


@measure(
    "AUC-ROC",
    cutoff="none",
    params={"rel": REL, "interpolate": INTERPOLATE},
    aliases=("AUCROC", "ROC-AUC", "AUROC", "auc_roc", "AUC"),
    trec="(LingPipe areaUnderRocCurve; roc_auc_score without ties)",
)
def auc_roc(r: Ranking, s: Spec) -> pl.Expr:
    """Area under the ROC curve: trapezoids from (0, 0) through every ranked document to (1, 1).

    A point per ranked document: (FP/N, TP/R), N = negatives (ranked non-relevant plus
    unranked labelled non-relevant, or ``num_negatives``). The documents not ranked close
    the curve with a straight line to (1, 1), as one tie at the bottom (LingPipe's limit
    point; scikit-learn's roc_auc_score on untied data). Tied scores are separate points:
    scikit-learn's tie-grouped value is the mean of this measure under
    ``ties="optimistic"`` and ``ties="pessimistic"``. ``interpolate=true``: LingPipe's
    interpolated ROC (the last point of each false positive rate). Null when R = 0 or N = 0.
    """
    level = s.level(r.default_level)
    R, N = r.num_rel(level), r.num_negatives(level)
    negative = (r.retrieved & ~r.judged_rel(level)).cum_sum()
    tpr = (r.tp(level) / R).filter(r.retrieved)
    fpr = (negative / N).filter(r.retrieved)
    if s.param("interpolate"):  # keep a point when the next one (or (1, 1)) moves right
        keep = fpr != fpr.shift(-1, fill_value=1.0)
        tpr, fpr = tpr.filter(keep), fpr.filter(keep)
    closing = (1.0 - fpr.last().fill_null(0.0)) * (1.0 + tpr.last().fill_null(0.0)) / 2
    return pl.when((R > 0) & (N > 0)).then(_trapezoids(fpr, tpr, 0.0, 0.0) + closing)


@measure(
    "MaxF",
    cutoff="none",
    params={"rel": REL, "beta": BETA},
    aliases=("max_f", "maxF"),
    trec="(LingPipe maximumFMeasure)",
)
def max_f(r: Ranking, s: Spec) -> pl.Expr:
    """Maximum F-beta over the operating points: max_k (1 + β²)·tp(k) / (β²·R + k).

    The best F of any cut of the ranking (LingPipe ``maximumFMeasure``; limit points have
    F = 0). 0 when no relevant document is ranked, and so when R = 0.
    """
    level, beta2 = s.level(r.default_level), s.param("beta") ** 2
    f = (1.0 + beta2) * r.tp(level) / (beta2 * r.num_rel(level) + r.rank)
    return f.filter(r.retrieved).max().fill_null(0.0)


def _returned(r: Ranking, s: Spec) -> pl.Expr:
    """Ranked documents returned at the measure's threshold (score >= threshold)."""
    threshold = s.param("threshold")
    if threshold is None:
        return r.retrieved
    return r.retrieved & (pl.col(SCORE) >= threshold)


def _set_counts(r: Ranking, s: Spec) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
    """(tp, fp, R, N) of the returned set."""
    level = s.level(r.default_level)
    returned = _returned(r, s)
    tp = count(returned & r.judged_rel(level))
    return tp, count(returned) - tp, r.num_rel(level), r.num_negatives(level)


@measure(
    "SetF",
    cutoff="none",
    params={
        "rel": REL,
        "beta": Param(_beta, 1.0, help="trec_eval set_F weight x = beta squared"),
        "fbeta": Param(_beta, None, help="F-beta's beta (preval): x = fbeta^2"),
        "alpha": ALPHA,
        "threshold": THRESHOLD,
    },
    aliases=("set_F",),
    trec="set_F, set_F.x",
)
def set_f(r: Ranking, s: Spec) -> pl.Expr:
    """F of the returned set: (1 + x)·tp / (x·R + returned), returned = score ≥ threshold.

    ``beta=x`` is trec_eval's ``set_F.x`` parameter, and ir_measures' ``SetF(beta=x)``, which
    passes it to trec_eval: the weight x in (x + 1)·P·R / (x·P + R), i.e. β² of F_β
    (``SetF(beta=4)`` is F_2). ``fbeta=b`` is F_b with b as β (x = b², preval's own
    spelling, as in ``F(beta=b)@K`` and scikit-learn's ``fbeta_score``); ``alpha=a`` the seed
    lecture notes' F_α = 1/(α/P + (1 − α)/R), x = 1/α − 1. At most one of the three. Without a
    threshold every ranked document is returned (trec_eval ``set_F``). 0 when tp = 0 (so when
    R = 0 or nothing is returned).
    """
    given = [k for k, _ in s.given if k in ("beta", "fbeta", "alpha")]
    if len(given) > 1:
        msg = f"SetF takes one of beta (trec_eval weight), fbeta, alpha; got {', '.join(given)}"
        raise MeasureError(msg)
    alpha, fbeta = s.param("alpha"), s.param("fbeta")
    if alpha is not None:
        weight = 1.0 / alpha - 1.0
    elif fbeta is not None:
        weight = fbeta**2
    else:
        weight = s.param("beta")
    tp, fp, R, _ = _set_counts(r, s)
    return r.safe_div((1.0 + weight) * tp, weight * R + tp + fp)


@measure(
    "SetRelP",
    cutoff="none",
    params={"rel": REL},
    aliases=("set_relative_P", "SetRelativeP"),
    trec="set_relative_P",
)
def set_relative_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Relative set precision: tp / min(n, R), precision over the best possible for the set.

    trec_eval ``set_relative_P`` over all n retrieved documents. 0 when n = 0 or R = 0.
    """
    level = s.level(r.default_level)
    tp, R = r.hits(level, None), r.num_rel(level)
    return r.safe_div(tp, pl.min_horizontal(r.num_ret, R))


@measure(
    "SetAP",
    cutoff="none",
    params={"rel": REL},
    aliases=("set_map",),
    trec="set_map",
)
def set_ap(r: Ranking, s: Spec) -> pl.Expr:
    """Unranked set AP: tp² / (n·R), SetP · SetR of the n retrieved documents.

    trec_eval ``set_map``, ir_measures ``SetAP``. 0 when n = 0 or R = 0.
    """
    level = s.level(r.default_level)
    tp = r.hits(level, None).cast(pl.Float64)
    return r.safe_div(tp * tp, r.num_ret * r.num_rel(level))


@measure(
    "Utility",
    cutoff="none",
    params={
        "rel": REL,
        "a": Param(_number, 1.0, help="worth of a relevant retrieved document"),
        "b": Param(_number, -1.0, help="worth of a non-relevant retrieved document"),
        "c": Param(_number, 0.0, help="worth of a relevant document not retrieved"),
        "d": Param(_number, 0.0, help="worth of a non-relevant document not retrieved"),
        "docs": Param(_number, 0.0, help="documents in the collection (trec_eval -N)"),
    },
    aliases=("utility",),
    trec="utility, utility.a,b,c,d",
)
def utility(r: Ranking, s: Spec) -> pl.Expr:
    """Set utility: a·tp + b·(n − tp) + c·(R − tp) + d·(docs + tp − n − R).

    trec_eval ``utility.a,b,c,d`` (default 1, −1, 0, 0), with ``docs`` its ``-N`` collection
    size (0 by default, as there). Averaged over queries in the summary, as trec_eval does.
    Nothing retrieved: c·R + d·(docs − R); may be negative.
    """
    level = s.level(r.default_level)
    tp = r.hits(level, None).cast(pl.Float64)
    n, R = r.num_ret.cast(pl.Float64), r.num_rel(level).cast(pl.Float64)
    a, b, c, d, docs = (s.param(k) for k in ("a", "b", "c", "d", "docs"))
    return a * tp + b * (n - tp) + c * (R - tp) + d * (docs + tp - n - R)


@measure(
    "binG",
    cutoff="none",
    params={"rel": REL},
    aliases=("BinG",),
    trec="binG",
)
def binary_g(r: Ranking, s: Spec) -> pl.Expr:
    """Binary G (trec_eval ``binG``): (1/R) Σ_{relevant ranked d} 1 / log2(2 + f_d), f_d the
    non-relevant (or unjudged) documents ranked above d. 0 when R = 0 or none is retrieved.
    """
    level = s.level(r.default_level)
    above = (r.rank - r.tp(level)).cast(pl.Float64)  # non-relevant ranks up to this one
    term = pl.when(r.rel(level)).then(1.0 / (2.0 + above).log(2)).otherwise(0.0)
    return r.safe_div(term.sum(), r.num_rel(level))


@measure(
    "Accuracy",
    cutoff="none",
    params={"rel": REL, "threshold": THRESHOLD},
    aliases=("accuracy",),
)
def accuracy(r: Ranking, s: Spec) -> pl.Expr:
    """Accuracy at a score cut: (tp + tn) / (R + N), tn = N − fp (negatives not returned).

    Returned = ranked documents with score ≥ threshold (all ranked ones without a threshold).
    0 when R + N = 0.
    """
    tp, fp, R, N = _set_counts(r, s)
    return r.safe_div(tp + N - fp, R + N)


@measure(
    "PairAccuracy",
    cutoff="optional",
    params={"rel": REL},
    aliases=("pairwise_accuracy", "PairwiseAccuracy"),
    trec="(ir_measures Accuracy@k)",
    top_only=True,
)
def pair_accuracy(r: Ranking, s: Spec) -> pl.Expr:
    """Pairwise accuracy: the share of (relevant, non-relevant) pairs of the top K ranked in
    that order (ir_measures ``Accuracy[@k]``, a diagnostic; not the threshold `Accuracy`).

    1 − Σ_{relevant d in the top K} f_d / (F·h), f_d the non-relevant (or unjudged) documents
    ranked above d, F those in the top K, h the relevant ones. Null (no value, left out of
    the mean, as ir_measures reports none) when no relevant document is in the top K; 1 when
    every one of the top K is relevant (ir_measures divides by zero there).
    """
    level, k = s.level(r.default_level), s.cutoff
    rel = r.rel(level)
    nonrel = r.retrieved & ~rel
    above = nonrel.cum_sum()
    h, f = r.hits(level, k), r.top(nonrel, k).sum()
    ordered = r.top(pl.when(rel).then(above).otherwise(0), k).sum()
    value = 1.0 - ordered.cast(pl.Float64) / (f * h).cast(pl.Float64)
    return pl.when(h == 0).then(None).when(f == 0).then(1.0).otherwise(value)


@measure(
    "Specificity",
    cutoff="none",
    params={"rel": REL, "threshold": THRESHOLD},
    aliases=("specificity", "TNR"),
)
def specificity(r: Ranking, s: Spec) -> pl.Expr:
    """Specificity (rejection recall) at a score cut: tn / N, tn = N − fp. Null when N = 0."""
    _, fp, _, N = _set_counts(r, s)
    return pl.when(N > 0).then((N - fp) / N)


@measure(
    "NumRet",
    cutoff="none",
    summary="sum",
    params={"rel": Param(_level, None, help="count only documents with label >= rel")},
    aliases=("num_ret",),
    trec="num_ret",
)
def num_ret(r: Ranking, s: Spec) -> pl.Expr:
    """Number of retrieved documents n (summed in the summary).

    ``NumRet(rel=r)``, as ir_measures has it: the retrieved documents with label >= r only,
    which is `NumRelRet` at that level.
    """
    rel = s.param("rel")
    return r.num_ret if rel is None else r.hits(rel, None)


@measure(
    "NumRel",
    cutoff="none",
    summary="sum",
    params={"rel": REL},
    aliases=("num_rel",),
    trec="num_rel",
)
def num_rel(r: Ranking, s: Spec) -> pl.Expr:
    """Number of relevant documents R, retrieved or not (summed in the summary)."""
    return r.num_rel(s.level(r.default_level))


@measure(
    "NumRelRet",
    cutoff="none",
    summary="sum",
    params={"rel": REL},
    aliases=("num_rel_ret",),
    trec="num_rel_ret",
)
def num_rel_ret(r: Ranking, s: Spec) -> pl.Expr:
    """Number of relevant documents retrieved, tp(n) (summed in the summary)."""
    return r.hits(s.level(r.default_level), None)


@measure(
    "NumNonrelJudgedRet",
    cutoff="none",
    summary="sum",
    params={"rel": REL},
    aliases=("num_nonrel_judged_ret",),
    trec="num_nonrel_judged_ret",
)
def num_nonrel_judged_ret(r: Ranking, s: Spec) -> pl.Expr:
    """Number of retrieved judged non-relevant documents, 0 <= label < rel (summed)."""
    return count(r.judged_nonrel(s.level(r.default_level)) & r.retrieved)


@measure("NumQ", cutoff="none", summary="sum", aliases=("num_q",), trec="num_q")
def num_q(r: Ranking, s: Spec) -> pl.Expr:
    """Number of queries: 1 per query (summed in the summary)."""
    return pl.lit(1.0)


# --------------------------------------------------------------------------------------------
# Diversity measures (TREC Web track's ndeval): qrels with a subtopic column. Notation: M = the
# query's subtopics with at least one relevant document, J(k, i) = 1 when the document at rank
# k is relevant to subtopic i (label >= rel), c_i(k) = documents above rank k relevant to i,
# g(k) = Σ_i J(k, i) (1 − alpha)^c_i(k) (the novelty-discounted gain), K = the cutoff.
# --------------------------------------------------------------------------------------------


def _unit(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        msg = "must be in [0, 1]"
        raise ValueError(msg)
    return value


NOVELTY = Param(_unit, NDEVAL_ALPHA, help="redundancy penalty: a subtopic gains (1 - alpha)^seen")
PATIENCE = Param(_unit, NDEVAL_BETA, help="persistence of the NRBP user: rank k weighs beta^(k-1)")


def _log_discount(d: Intents) -> pl.Expr:
    return 1.0 / (d.rank + 1).log(2)


@measure(
    "alpha_DCG",
    cutoff="required",
    params={"alpha": NOVELTY, "rel": REL},
    aliases=("alpha-DCG",),
    trec="ndeval alpha-DCG@K",
    diversity=True,
)
def alpha_dcg(d: Intents, s: Spec) -> pl.Expr:
    """Diversity: alpha-DCG at K with ndeval's collection-independent normalisation.

    alpha-DCG@K = Σ_{k ≤ K} g(k)/log2(k + 1) / Σ_{k ≤ K} M (1 − alpha)^(k−1)/log2(k + 1)
    (Clarke et al., SIGIR 2008; ndeval ``alpha-DCG@K``, ir_measures ``alpha_DCG``): the
    divisor is the value of a ranking whose every document covers all M subtopics. As in
    ndeval, K = 1 is not divided (the value is g(1)). 0 when M = 0.
    """
    level, alpha, k = d.level(s), s.param("alpha"), s.cutoff
    dcg = d.top(d.novelty(level, alpha) * _log_discount(d), k).sum()
    return d.safe_div(dcg, ideal_ideal("dcg", d.subtopics(level), alpha, k))


@measure(
    "alpha_nDCG",
    cutoff="required",
    params={"alpha": NOVELTY, "rel": REL},
    aliases=("alpha-nDCG", "a-nDCG"),
    trec="ndeval alpha-nDCG@K",
    diversity=True,
    ideals=lambda s: [("dcg", s.cutoff)],
)
def alpha_ndcg(d: Intents, s: Spec) -> pl.Expr:
    """Diversity: alpha-nDCG at K, alpha-DCG divided by that of ndeval's greedy ideal.

    alpha-nDCG@K = Σ_{k ≤ K} g(k)/log2(k + 1) / Σ_{k ≤ K} g*(k)/log2(k + 1), where the ideal
    ranking g* places at each rank the judged document with the highest gain given those
    placed above it, ties to the greatest doc id (ndeval ``alpha-nDCG@K``, ir_measures
    ``alpha_nDCG``; default alpha = 0.5). 0 when M = 0.
    """
    level, alpha, k = d.level(s), s.param("alpha"), s.cutoff
    dcg = d.top(d.novelty(level, alpha) * _log_discount(d), k).sum()
    return d.safe_div(dcg, d.ideal(s, "dcg"))


@measure(
    "ERR_IA",
    cutoff="required",
    params={"alpha": NOVELTY, "rel": REL},
    aliases=("ERR-IA",),
    trec="ndeval ERR-IA@K",
    diversity=True,
)
def err_ia(d: Intents, s: Spec) -> pl.Expr:
    """Diversity: intent-aware ERR at K, ndeval's collection-independent normalisation.

    ERR-IA@K = Σ_{k ≤ K} g(k)/k / Σ_{k ≤ K} M (1 − alpha)^(k−1)/k. With binary judgments
    and alpha = 0.5, (1 − alpha)^c_i(k) is proportional to the chance that a user after
    subtopic i stops at rank k in ERR's cascade (Chapelle et al., CIKM 2009: 0.5 · 0.5^c);
    the sum over subtopics is divided by the value of a ranking covering every subtopic at
    every rank (ndeval ``ERR-IA@K``, ir_measures ``ERR_IA``, which takes ndeval's default
    alpha). K = 1 is not divided, as in ndeval. 0 when M = 0.
    """
    level, alpha, k = d.level(s), s.param("alpha"), s.cutoff
    err = d.top(d.novelty(level, alpha) / d.rank, k).sum()
    return d.safe_div(err, ideal_ideal("err", d.subtopics(level), alpha, k))


@measure(
    "nERR_IA",
    cutoff="required",
    params={"alpha": NOVELTY, "rel": REL},
    aliases=("nERR-IA",),
    trec="ndeval nERR-IA@K",
    diversity=True,
    ideals=lambda s: [("err", s.cutoff)],
)
def nerr_ia(d: Intents, s: Spec) -> pl.Expr:
    """Diversity: intent-aware ERR at K divided by that of ndeval's greedy ideal ranking.

    nERR-IA@K = Σ_{k ≤ K} g(k)/k / Σ_{k ≤ K} g*(k)/k, g* the ideal of ``alpha_nDCG``
    (ndeval ``nERR-IA@K``, ir_measures ``nERR_IA``). 0 when M = 0.
    """
    level, alpha, k = d.level(s), s.param("alpha"), s.cutoff
    err = d.top(d.novelty(level, alpha) / d.rank, k).sum()
    return d.safe_div(err, d.ideal(s, "err"))


@measure(
    "NRBP",
    cutoff="none",
    params={"alpha": NOVELTY, "beta": PATIENCE, "rel": REL},
    trec="ndeval NRBP",
    diversity=True,
)
def nrbp(d: Intents, s: Spec) -> pl.Expr:
    """Diversity: novelty- and rank-biased precision over the whole ranking.

    NRBP = (1 − (1 − alpha) beta)/M · Σ_k g(k) beta^(k−1) (Clarke et al., ICTIR 2009;
    ndeval ``NRBP``, ir_measures ``NRBP``, defaults alpha = beta = 0.5): a ranking whose
    every document covers every subtopic scores 1. 0 when M = 0.
    """
    level, alpha, beta = d.level(s), s.param("alpha"), s.param("beta")
    total = (d.novelty(level, alpha) * pl.lit(beta).pow(d.rank - 1)).sum()
    return d.safe_div(total * (1.0 - (1.0 - alpha) * beta), d.subtopics(level))


@measure(
    "AP_IA",
    cutoff="none",
    params={"rel": REL},
    aliases=("MAP_IA", "MAP-IA"),
    trec="ndeval MAP-IA",
    diversity=True,
)
def ap_ia(d: Intents, s: Spec) -> pl.Expr:
    """Diversity: intent-aware average precision, AP per subtopic averaged over subtopics.

    AP-IA = 1/M · Σ_i 1/R_i · Σ_{k : J(k, i)} |{j ≤ k : J(j, i)}| / k, R_i the documents
    judged relevant to subtopic i, M the subtopics with R_i > 0 (Agrawal et al., WSDM 2009;
    ndeval ``MAP-IA``, ir_measures ``AP_IA``). Over the whole ranking (within `depth`). 0 when
    M = 0.
    """
    level = d.level(s)
    precision = (d.seen(level) + 1) / d.rank / d.relevant_in_subtopic(level)
    return d.safe_div(pl.when(d.relevant(level)).then(precision).otherwise(0.0).sum(),
                      d.subtopics(level))  # fmt: skip


@measure(
    "P_IA",
    cutoff="required",
    params={"rel": REL},
    aliases=("P-IA",),
    trec="ndeval P-IA@K",
    diversity=True,
)
def precision_ia(d: Intents, s: Spec) -> pl.Expr:
    """Diversity: intent-aware precision at K, P@K per subtopic averaged over subtopics.

    P-IA@K = Σ_{k ≤ K} Σ_i J(k, i) / (K · M) (Agrawal et al., WSDM 2009; ndeval ``P-IA@K``,
    ir_measures ``P_IA``); ranks beyond the ranking count as non-relevant. 0 when M = 0.
    """
    level, k = d.level(s), s.cutoff
    hits = count(d.relevant(level) & (d.rank <= k))
    return d.safe_div(hits, d.subtopics(level) * k)


@measure(
    "StRecall",
    cutoff="required",
    params={"rel": REL},
    aliases=("strec", "S-recall", "subtopic_recall"),
    trec="ndeval strec@K",
    diversity=True,
)
def subtopic_recall(d: Intents, s: Spec) -> pl.Expr:
    """Diversity: subtopic recall at K, the share of subtopics the top K documents cover.

    StRecall@K = |{i : Σ_{k ≤ K} J(k, i) > 0}| / M (Zhai et al., SIGIR 2003; ndeval
    ``strec@K``, ir_measures ``STREC``). 0 when M = 0.
    """
    level, k = d.level(s), s.cutoff
    first = d.relevant(level) & (d.seen(level) == 0) & (d.rank <= k)
    return d.safe_div(count(first), d.subtopics(level))


# measures with a closed form of their expected value over the orders of tied documents
# (ties="expected"); count measures that do not read the order are exact anyway
EXPECTED_FORMS = frozenset(
    {"AP", "P", "R", "RR", "nDCG", "DCG", "Hits", "TieAtCutoff", "NumRet", "NumRel",
     "NumRelRet", "NumQ", "SetP", "SetR", "SetF", "SetRelP", "SetAP", "Utility",
     "NumNonrelJudgedRet"}
)  # fmt: skip


def build(spec: Spec, ranking: Ranking) -> pl.Expr:
    """The aggregation expression of `spec`, as Float64, named by its canonical name."""
    name = spec.definition.name
    if spec.definition.diversity:
        msg = (
            f"{spec.name} is a diversity measure: it needs qrels with a subtopic column "
            "(subtopic=..., --subtopic), and is evaluated from them"
        )
        raise MeasureError(msg)
    if ranking.expected and name not in EXPECTED_FORMS:
        msg = (
            f"{spec.name} has no closed form under ties='expected'; those that do: "
            f"{', '.join(sorted(EXPECTED_FORMS))}. ties='optimistic' and 'pessimistic' "
            "bound any measure"
        )
        raise MeasureError(msg)
    return spec.definition.build(ranking, spec).cast(pl.Float64).alias(spec.name)


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

_GRAMMAR = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_\-]*?)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[^@()]+))?$"
)
# trec_eval spellings with the cutoff fused into the name: P_10, P.10, map_cut_100 ...
_TREC = re.compile(
    r"^(?P<name>map_cut|P|recall|relative_P|ndcg_cut|success|iprec_at_recall|Judged)[._]"
    r"(?P<cutoff>\d+(\.\d+)?)$"
)


def parse(text: str) -> Spec:
    """Parse one measure request into a `Spec`, or raise `MeasureError` saying what is wrong."""
    raw = text.strip()
    ranx_rbp = re.fullmatch(r"rbp\.(\d+)", raw)  # ranx: rbp.95 is p = 0.95, graded
    if ranx_rbp:
        raw = f"RBP(p=0.{ranx_rbp[1]},gain=label)"
    trec = _TREC.match(raw)
    if trec:
        raw = f"{trec['name']}@{trec['cutoff']}"
    m = _GRAMMAR.match(raw)
    if not m:
        msg = (
            f"cannot parse measure {text!r}: expected NAME[(param=value,...)][@cutoff], "
            "e.g. AP, P@10, P(rel=2)@10, F(beta=0.5)@10"
        )
        raise MeasureError(msg)
    key = _ALIASES.get(m["name"].lower())
    if key is None:
        msg = f"unknown measure {m['name']!r} in {text!r}; known: {', '.join(CATALOGUE)}"
        raise MeasureError(msg)
    definition = CATALOGUE[key]
    preset = _PRESETS.get(m["name"].lower(), ())
    try:
        spec = Spec(
            definition,
            _cutoff(definition, m["cutoff"], text),
            _params(definition, m["params"], text, preset),
        )
    except MeasureError as exc:
        other = IR_MEASURES_NAMES.get(m["name"])
        if other is None:
            raise
        msg = (
            f"{exc}; ir_measures' {m['name']} is preval's {other} (or read names as "
            "ir_measures does: preval evaluate --ir-measures, or ir_measures objects in Python)"
        )
        raise MeasureError(msg) from exc
    ideal_keys(spec)  # raises now, not in the plan, when gains= and dcg= are both given
    return spec


def ideal_keys(spec: Spec) -> list[Any]:
    """The per-query ideal DCGs (`ranking.ideal_key`) that `spec` reads: a plan whose
    judgments come in columns (separate qrels) computes each with
    ``Ranking.ideal_dcg_of_rows(key)`` into the column ``ranking.ideal_column(key)``."""
    ideals = spec.definition.ideals
    # diversity measures read greedy ideals of their own stage (`diversity.requests`)
    return [] if ideals is None or spec.definition.diversity else ideals(spec)


def _cutoff(definition: Definition, raw: str | None, text: str) -> int | None:
    if raw is None:
        if definition.cutoff == "required":
            msg = f"{definition.name} needs a cutoff in {text!r}: write e.g. {definition.name}@10"
            raise MeasureError(msg)
        return None
    if definition.cutoff == "none":
        msg = f"{definition.name} takes no cutoff: {text!r} (write {definition.name})"
        raise MeasureError(msg)
    if definition.fraction:
        if not re.fullmatch(r"[0-9]+(\.[0-9]*)?|\.[0-9]+", raw) or float(raw) > 1:
            msg = f"the cutoff in {text!r} must be a recall level from 0 to 1, got {raw!r}"
            raise MeasureError(msg)
        return float(raw)
    if not re.fullmatch(r"[0-9]+", raw) or int(raw) < 1:
        msg = f"the cutoff in {text!r} must be a whole number >= 1, got {raw!r}"
        raise MeasureError(msg)
    return int(raw)


def _params(
    definition: Definition, params: str | None, text: str, preset: tuple[tuple[str, str], ...] = ()
) -> tuple[tuple[str, Any], ...]:
    given: dict[str, Any] = {}
    items = [f"{k}={v}" for k, v in preset]
    for item in [*items, *filter(None, (p.strip() for p in _split(params or "")))]:
        key, sep, raw = (part.strip() for part in item.partition("="))
        if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "'\"":  # ir_measures: dcg='exp-log2'
            raw = raw[1:-1]
        allowed = ", ".join(definition.params) or "none"
        if not sep or key not in definition.params:
            msg = f"bad parameter {item!r} in {text!r}: {definition.name} takes ({allowed})"
            raise MeasureError(msg)
        param = definition.params[key]
        try:
            value = param.parse(raw)
        except ValueError as exc:
            msg = f"bad value for {key} in {text!r}: {exc}"
            raise MeasureError(msg) from None
        if param.choices and value not in param.choices:
            msg = f"bad value for {key} in {text!r}: expected one of {', '.join(param.choices)}"
            raise MeasureError(msg)
        if key in given:
            msg = f"parameter {key} given twice in {text!r}"
            raise MeasureError(msg)
        given[key] = value
    # Defaults are dropped so that spellings of the same measure share one column name.
    return tuple((k, v) for k, v in given.items() if v != definition.params[k].default)


def _split(params: str) -> list[str]:
    """Split ``a=1,gains={1:3,2:9}`` at the commas outside braces."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(params):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(params[start:i])
            start = i + 1
    return [*items, params[start:]]


# ir_measures names whose meaning differs from preval's measure of that name
IR_MEASURES_NAMES = {"Accuracy": "PairAccuracy"}


def from_ir_measures(request: object) -> str:
    """A request in the ir_measures grammar (a string, or an ir_measures measure object such
    as ``ir_measures.Accuracy@5``) as the preval request that gives ir_measures' number.

    The grammar is the same; the names of `IR_MEASURES_NAMES` mean another measure in
    ir_measures than in preval (``Accuracy`` is pairwise accuracy there, `PairAccuracy` here).
    """
    text = str(request).strip()
    m = _GRAMMAR.match(text)
    if m and m["name"] in IR_MEASURES_NAMES:
        text = IR_MEASURES_NAMES[m["name"]] + text[m.end("name") :]
    return text


def _is_ir_measures(item: object) -> bool:
    """Whether `item` is an ir_measures measure object (checked without importing it)."""
    return type(item).__module__.startswith("ir_measures") and hasattr(item, "NAME")


def parse_all(measures: str | Iterable[str]) -> list[Spec]:
    """Parse requests, keeping the first of any that share a canonical name. ir_measures
    measure objects (``ir_measures.nDCG@10``) are read as ir_measures means them
    (`from_ir_measures`)."""
    single = isinstance(measures, str) or not isinstance(measures, Iterable)
    items = [measures] if single else list(measures)
    items = [from_ir_measures(item) if _is_ir_measures(item) else item for item in items]
    for item in items:
        if not isinstance(item, str):
            msg = f"a measure request must be a string such as 'AP' or 'P@10', got {item!r}"
            raise MeasureError(msg)
    if not items:
        msg = "no measures requested: name at least one, e.g. AP or P@10"
        raise MeasureError(msg)
    specs: dict[str, Spec] = {}
    for item in items:
        spec = parse(item)
        specs.setdefault(spec.name, spec)
    return list(specs.values())


def catalogue_rows() -> list[dict[str, str]]:
    """One row per measure for `preval measures` and the README table."""
    rows = []
    for d in CATALOGUE.values():
        form = d.name
        if d.params:
            form += "(" + ",".join(f"{k}=" for k in d.params) + ")"
        form += {"required": "@K", "optional": "[@K]", "none": ""}[d.cutoff]
        rows.append(
            {
                "measure": form,
                "summary": d.summary,
                "trec_eval": d.trec,
                "aliases": ", ".join(d.aliases),
                "definition": d.doc,
            }
        )
    return rows


def markdown_table() -> str:
    rows = catalogue_rows()
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |" for r in rows]
    return "\n".join(lines)
