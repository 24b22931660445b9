"""User models: the C/W/L family as cwl_eval computes it (INSQ, INST, BPM, NERR8-11), RBP
and its residual, and ERR.

Notation as in ``preval.measures``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import polars as pl

from ..errors import MeasureError
from ..ranking import LABEL, Ranking, count
from .registry import REL, Param, Spec, _number, _per_group_value, _persistence, measure

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


PERSISTENCE = Param(_persistence, 0.8, help="persistence p in (0, 1)")


def _discounts(r: Ranking, p: float) -> pl.Expr:
    """p^(rank − 1) at every ranked row (ranks from 1), multiplied out rank by rank as trec_eval
    computes it (``cur_p = cur_p * p``): ``pow`` rounds differently in the last bit, which a
    mean on a %6.4f rounding boundary shows (rbp_resid 0.8185 for trec_eval's 0.8186). Rows
    come in rank order; an unranked row multiplies by 1 (its value is masked by the callers)."""
    return _powers(r, p).shift(1, fill_value=1.0)


def _powers(r: Ranking, p: float) -> pl.Expr:
    """p^rank at every ranked row, as repeated products (`_discounts`)."""
    # typed literals: cum_prod over an untyped float literal panics Polars 2.1 in a group_by
    # ("cannot build list with different dtypes")
    factor = pl.when(r.retrieved).then(pl.lit(p, dtype=pl.Float64))
    return factor.otherwise(pl.lit(1.0, dtype=pl.Float64)).cum_prod()


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
    tail = _powers(r, p).min()  # p^n (the last, as p < 1), multiplied out as trec_eval does
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
