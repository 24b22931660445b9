"""Graded gain measures: nDCG, DCG, nDCGRel, Rndcg, G, SDCG, binG, and the custom gains
(``gains={1:3.5,2:9}``) they read.

Notation as in ``preval.measures``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import polars as pl

from ..errors import MeasureError
from ..ranking import (
    EXP,
    INVERSE,
    LABEL,
    LINEAR,
    LOG2,
    SCORE,
    Discount,
    GainRule,
    Ranking,
    count,
    discount_of,
    ideal_key,
)
from .registry import REL, Param, Spec, _fmt, _number, _per_group_value, measure


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


def _base(text: str) -> float:
    value = float(text)
    if not value > 1 or math.isinf(value):
        msg = "base must be a number above 1"
        raise ValueError(msg)
    return value


BASE = Param(_base, 2.0, help="logarithm base of the rank discount 1/log_b(rank + 1)")
DISCOUNT = Param(
    str, "log", ("log", "inverse"), help="rank discount: 1/log_b(rank + 1) (log) or 1/rank"
)


def _discount(s: Spec, *, normalised: bool) -> Discount:
    """The rank discount of `s`: ``discount=inverse`` is 1/rank; otherwise 1/log_b(rank + 1),
    whose base cancels in a ratio to the ideal (`normalised`), so nDCG reads it as log2."""
    if s.param("discount") == "inverse":
        if s.param("base") != 2.0:
            msg = f"{s.name}: base= sets a logarithm; discount=inverse has none"
            raise MeasureError(msg)
        return INVERSE
    return LOG2 if normalised else ("log", s.param("base"))


def _gain_rule(s: Spec) -> GainRule:
    gains = s.param("gains")
    if gains is not None:
        if s.param("dcg") == "exp-log2":
            msg = f"{s.definition.name} takes gains= or dcg=exp-log2, not both"
            raise MeasureError(msg)
        return tuple(gains)
    return EXP if s.param("dcg") == "exp-log2" else LINEAR


def _ideal_at_cutoff(s: Spec) -> list[Any]:
    return [ideal_key(s.cutoff, _gain_rule(s), _discount(s, normalised=True))]


@measure(
    "nDCG",
    cutoff="optional",
    params={"dcg": DCG_FORM, "gains": GAINS, "base": BASE, "discount": DISCOUNT},
    aliases=("ndcg_cut", "NDCG"),
    trec="ndcg, ndcg_cut_K, ndcg.g=x,...",
    top_only=True,
    presets={"ndcg_burges": {"dcg": "exp-log2"}, "ndcgAt": {"dcg": "exp-log2"}},
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
    lowers DCG but never IDCG (trec_eval). ``discount=inverse``: gains divided by the rank
    instead of log2(rank + 1), in DCG and IDCG alike (TF-Ranking's ``rank_discount_fn``
    ``tfr.keras.utils.inverse``). ``base=b`` (scikit-learn's ``log_base``) is accepted and
    changes nothing: log_b(k + 1) = log2(k + 1)/log2(b) cancels in the ratio. Spark MLlib's
    ``ndcgAt(k)`` is ``nDCG(dcg=exp-log2)@k`` (alias ``ndcgAt@k``: binary relevance gains
    2^1 − 1 = 1; with relevance values, 2^rel − 1, natural log, which cancels too). 0 when
    IDCG = 0 (R = 0, or no positive gain).
    """
    rule, discount = _gain_rule(s), _discount(s, normalised=True)
    if r.expected:
        found = _expected_dcg(r, s.cutoff, rule, discount)
    else:
        found = r.dcg(s.cutoff, rule, discount)
    return r.safe_div(found, r.ideal_dcg(s.cutoff, rule, discount))


def _expected_dcg(r: Ranking, k: int | None, rule: GainRule, discount: Discount) -> pl.Expr:
    """E[DCG@K] over the orders of tied documents: each rank of a tie group gains the group's
    mean gain (McSherry & Najork; scikit-learn's ndcg_score with ignore_ties=False)."""
    _, size, inside, _ = r.tie_groups(r.judged_gain(rule))
    discount = discount_of(r.rank, discount)
    term = pl.when(r.retrieved).then(inside / size / discount).otherwise(0.0)
    return r.top(term, k).sum()


@measure(
    "DCG",
    cutoff="optional",
    params={"dcg": DCG_FORM, "gains": GAINS, "base": BASE, "discount": DISCOUNT},
    aliases=("dcg",),
    trec="dcg (trec_eval 10)",
    top_only=True,
    presets={"dcg_burges": {"dcg": "exp-log2"}},
)
def dcg(r: Ranking, s: Spec) -> pl.Expr:
    """Discounted cumulative gain over the top K, not normalised.

    DCG@K = Σ_{k ≤ K} gain_k / log2(k + 1), gain as in nDCG: the label (linear; ranx
    ``dcg@k``, trec_eval 10 ``dcg``), 2^label − 1 with ``dcg=exp-log2`` (ranx
    ``dcg_burges@k``), or custom ``gains=``. ``base=b``: discount log_b(k + 1), as
    scikit-learn's ``dcg_score(..., log_base=b)`` (which averages over ties as
    ``ties="expected"`` does, unless ``ignore_ties=True``). ``discount=inverse``: discount k,
    TF-Ranking's ``DCGMetric(rank_discount_fn=tfr.keras.utils.inverse)``. Unjudged documents
    gain 0. 0 when nothing is retrieved or R = 0; a cutoff beyond n sums the n retrieved.
    """
    rule, discount = _gain_rule(s), _discount(s, normalised=False)
    if r.expected:
        return _expected_dcg(r, s.cutoff, rule, discount)
    return r.dcg(s.cutoff, rule, discount)


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
    every judged document as a row (`reads_judged_rows`). 0 when R = 0 at the relevance level,
    and when no judged document has a positive gain (no level: trec_eval computes 0/0 and
    prints -nan, e.g. at ``-l 0`` on a query judged 0 only).
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
    # (trec_eval counts that level only when its ideal DCG is positive: without a positive
    # gain it would be 0/0)
    extra = (r.num_ret > count(ideal > 0) + 1) & (idcg.max() > 0)
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
    "ARP",
    cutoff="none",
    aliases=("arp", "average_relevance_position"),
    trec="(TF-Ranking ARPMetric)",
)
def average_relevance_position(r: Ranking, s: Spec) -> pl.Expr:
    """Average relevance position: the mean rank of the ranked documents, weighted by their
    grades (lower is better).

    ARP = Σ_k k · g_k / Σ_k g_k over the ranked documents, g = max(label, 0) (unjudged 0):
    TF-Ranking's ``ARPMetric`` (``metrics_impl.ARPMetric``; Zhuang et al.'s ARP, used for
    unbiased learning to rank), per list. TF-Ranking averages lists weighted by Σ_k g_k
    (its per-list weight), so its value over several lists is Σ_q Σ_k k·g_k / Σ_q Σ_k g_k;
    preval's summary is the plain mean of the per-query values. Relevant documents that were
    not retrieved have no rank and do not count (TF-Ranking ranks every valid document of a
    list; it drops labels < 0 as padding). 0 when no ranked document has a positive grade
    (TF-Ranking's div_no_nan).
    """
    gain = pl.when(r.retrieved).then(r.judged_gain()).otherwise(0.0)
    return r.safe_div((gain * r.rank.cast(pl.Float64)).sum(), gain.sum())
