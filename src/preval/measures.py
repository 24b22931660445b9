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

from .errors import MeasureError
from .ranking import Ranking

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


REL = Param(_level, None, help="label >= rel is relevant (default: the relevance_level)")
BETA = Param(_beta, 1.0, help="weight of recall against precision")


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


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


CATALOGUE: dict[str, Definition] = {}
_ALIASES: dict[str, str] = {}


def measure(
    name: str,
    *,
    cutoff: Literal["required", "optional", "none"],
    summary: Summary = "mean",
    params: dict[str, Param] | None = None,
    aliases: Iterable[str] = (),
    trec: str = "",
    fraction: bool = False,
) -> Callable[[Callable[[Ranking, Spec], pl.Expr]], Callable[[Ranking, Spec], pl.Expr]]:
    """Register a measure function in the catalogue (its docstring's first line is its help)."""

    def register(fn: Callable[[Ranking, Spec], pl.Expr]) -> Callable[[Ranking, Spec], pl.Expr]:
        doc = (fn.__doc__ or "").strip().splitlines()[0]
        definition = Definition(
            name, fn, cutoff, summary, dict(params or {}), tuple(aliases), trec, doc, fraction
        )
        CATALOGUE[name] = definition
        for alias in (name, *aliases):
            _ALIASES[alias.lower()] = name
        return fn

    return register


# --------------------------------------------------------------------------------------------
# The measures. Notation: ranks k = 1..n over retrieved documents, R = relevant documents of
# the query (retrieved or not) at the measure's level, tp(k) = relevant documents in ranks
# 1..k, tp(k) = tp(n) for k > n, K = the cutoff.
# --------------------------------------------------------------------------------------------


@measure(
    "AP",
    cutoff="optional",
    params={"rel": REL, "norm": _norm("R", "min", "hits")},
    aliases=("map", "MAP", "mAP", "map_cut", "AveP"),
    trec="map, map_cut_K",
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
    rel = r.rel(level)
    contrib = pl.when(rel).then(r.tp(level) / r.rank).otherwise(0.0)
    total = r.top(contrib, k).sum()
    norm = s.param("norm")
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
)
def precision(r: Ranking, s: Spec) -> pl.Expr:
    """Precision at K: relevant documents among the top K, divided by K.

    P@K = tp(K)/K; ranks beyond the n retrieved documents count as non-relevant (trec_eval
    ``P_K``, LingPipe ``precisionAt``). Defined (0) when R = 0 or nothing was retrieved.
    """
    return r.divide(r.hits(s.level(r.default_level), s.cutoff), s.cutoff)


@measure(
    "R",
    cutoff="required",
    params={"rel": REL, "norm": _norm("R", "min")},
    aliases=("recall",),
    trec="recall_K",
)
def recall(r: Ranking, s: Spec) -> pl.Expr:
    """Recall at K: relevant documents in the top K, divided by R.

    R@K = tp(K)/R (trec_eval ``recall_K``); ``norm=min`` divides by min(R, K) so that a
    perfect ranking scores 1 even when R > K. 0 when R = 0.
    """
    level, k = s.level(r.default_level), s.cutoff
    R = r.num_rel(level)
    den = pl.min_horizontal(R, pl.lit(k)) if s.param("norm") == "min" else R
    return r.safe_div(r.hits(level, k), den)


@measure(
    "RR",
    cutoff="optional",
    params={"rel": REL},
    aliases=("MRR", "recip_rank", "reciprocal_rank"),
    trec="recip_rank",
)
def reciprocal_rank(r: Ranking, s: Spec) -> pl.Expr:
    """Reciprocal rank: 1 / the rank of the first relevant document (within the top K).

    RR@K = max_{k ≤ K, rel_k} 1/k (trec_eval ``recip_rank`` without a cutoff). 0 when no
    relevant document is retrieved (within K), and so when R = 0.
    """
    inverse = pl.when(r.rel(s.level(r.default_level))).then(1.0 / r.rank).otherwise(0.0)
    return r.top(inverse, s.cutoff).max().fill_null(0.0)


@measure(
    "Rprec",
    cutoff="none",
    params={"rel": REL},
    aliases=("RPrec", "R-prec", "R-precision", "BEP"),
    trec="Rprec",
)
def r_precision(r: Ranking, s: Spec) -> pl.Expr:
    """R-precision: precision at rank R, the break-even point where precision = recall.

    Rprec = tp(R)/R, ranks beyond n non-relevant (trec_eval ``Rprec``, LingPipe
    ``rPrecision``/``prBreakevenPoint``). 0 when R = 0.
    """
    level = s.level(r.default_level)
    R = r.num_rel(level)
    return r.safe_div((r.rel(level) & (r.rank <= R)).sum(), R)


@measure(
    "nDCG",
    cutoff="optional",
    aliases=("ndcg_cut", "NDCG"),
    trec="ndcg, ndcg_cut_K",
)
def ndcg(r: Ranking, s: Spec) -> pl.Expr:
    """Normalised discounted cumulative gain over the top K (all ranks without a cutoff).

    nDCG@K = DCG@K / IDCG@K with DCG@K = Σ_{k ≤ K} gain_k / log2(k + 1), gain = max(label, 0)
    (linear; unjudged = 0), and IDCG@K the DCG of ALL judged gains of the query sorted
    descending (trec_eval ``ndcg_cut_K``; ``ndcg`` without K). The relevance level does not
    apply: gains are the raw grades, as in trec_eval. 0 when IDCG = 0.
    """
    return r.safe_div(r.dcg(s.cutoff), r.ideal_dcg(s.cutoff))


@measure(
    "Success",
    cutoff="required",
    params={"rel": REL},
    aliases=("success",),
    trec="success_K",
)
def success(r: Ranking, s: Spec) -> pl.Expr:
    """Success at K: 1 if a relevant document is in the top K, else 0 (trec_eval success_K)."""
    return (r.hits(s.level(r.default_level), s.cutoff) > 0).cast(pl.Float64)


@measure(
    "F",
    cutoff="optional",
    params={"rel": REL, "beta": BETA},
    aliases=("F1", "F-measure"),
    trec="set_F (no cutoff)",
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
    penalty = r.safe_div(pl.min_horizontal(above, R), pl.min_horizontal(N, R))
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
    recall r is never reached, and so when R = 0.
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


@measure("Judged", cutoff="required", aliases=("judged",), trec="(ir_measures Judged)")
def judged(r: Ranking, s: Spec) -> pl.Expr:
    """Judged at K: the share of the top K that has a judgment (label ≥ 0), divided by K.

    Missing ranks beyond n count as unjudged (ir_measures ``Judged@k``). A negative label
    marks a pooled document that was never assessed, as in trec_eval: not judged.
    """
    return r.divide(r.top(r.judged(), s.cutoff).sum(), s.cutoff)


@measure("SetP", cutoff="none", params={"rel": REL}, aliases=("set_P",), trec="set_P")
def set_precision(r: Ranking, s: Spec) -> pl.Expr:
    """Precision of the whole retrieved set: tp(n)/n (trec_eval set_P). 0 when n = 0."""
    level = s.level(r.default_level)
    return r.safe_div(r.hits(level, None), r.num_ret)


@measure("SetR", cutoff="none", params={"rel": REL}, aliases=("set_recall",), trec="set_recall")
def set_recall(r: Ranking, s: Spec) -> pl.Expr:
    """Recall of the whole retrieved set: tp(n)/R (trec_eval set_recall). 0 when R = 0."""
    level = s.level(r.default_level)
    return r.safe_div(r.hits(level, None), r.num_rel(level))


@measure("NumRet", cutoff="none", summary="sum", aliases=("num_ret",), trec="num_ret")
def num_ret(r: Ranking, s: Spec) -> pl.Expr:
    """Number of retrieved documents n (summed in the summary)."""
    return r.num_ret


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
    return (r.judged_nonrel(s.level(r.default_level)) & r.retrieved).sum()


@measure("NumQ", cutoff="none", summary="sum", aliases=("num_q",), trec="num_q")
def num_q(r: Ranking, s: Spec) -> pl.Expr:
    """Number of queries: 1 per query (summed in the summary)."""
    return pl.lit(1.0)


def build(spec: Spec, ranking: Ranking) -> pl.Expr:
    """The aggregation expression of `spec`, as Float64, named by its canonical name."""
    return spec.definition.build(ranking, spec).cast(pl.Float64).alias(spec.name)


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

_GRAMMAR = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_\-]*?)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[^@()]+))?$"
)
# trec_eval spellings with the cutoff fused into the name: P_10, P.10, map_cut_100 ...
_TREC = re.compile(
    r"^(?P<name>map_cut|P|recall|ndcg_cut|success|iprec_at_recall|Judged)[._]"
    r"(?P<cutoff>\d+(\.\d+)?)$"
)


def parse(text: str) -> Spec:
    """Parse one measure request into a `Spec`, or raise `MeasureError` saying what is wrong."""
    raw = text.strip()
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
    return Spec(definition, _cutoff(definition, m["cutoff"], text), _params(definition, m, text))


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


def _params(definition: Definition, m: re.Match[str], text: str) -> tuple[tuple[str, Any], ...]:
    given: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in (m["params"] or "").split(","))):
        key, sep, raw = (part.strip() for part in item.partition("="))
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


def parse_all(measures: str | Iterable[str]) -> list[Spec]:
    """Parse requests, keeping the first of any that share a canonical name."""
    items = [measures] if isinstance(measures, str) else list(measures)
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
