"""The measure registry: parameters and their parsers (`Param`), one catalogue entry
(`Definition`), a parsed request (`Spec`), the `measure` decorator that fills `CATALOGUE`, and
the catalogue's order (`ORDER`). The measures themselves live in one module per family, which
imports this one; the package imports every family, so the registry is complete once
``preval.measures`` is imported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from ..errors import MeasureError
from ..ranking import Ranking

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
    # a measure defined by a user (`preval.define_measure`): its `preval.custom.CustomMeasure`,
    # which Spark ships to its workers; None for the built-in measures
    custom: Any = None

    @property
    def is_count(self) -> bool:
        """A count of documents or queries (NumRet, NumRel, NumQ ...): the measures summed in a
        summary. Their columns are Int64, per query and in summaries; every other measure's
        are Float64 (`Hits`, a count per query that a summary averages, is a rate there)."""
        return self.summary == "sum"


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

    @property
    def is_count(self) -> bool:
        """A count (`Definition.is_count`): an Int64 column, per query and in summaries."""
        return self.definition.is_count

    @property
    def dtype(self) -> type[pl.DataType]:
        """The dtype of the measure's column: Int64 for a count, else Float64."""
        return pl.Int64 if self.is_count else pl.Float64


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

    def register_fn(fn: Callable[[Ranking, Spec], pl.Expr]) -> Callable[[Ranking, Spec], pl.Expr]:
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
        register(definition, presets)
        return fn

    return register_fn


def register(
    definition: Definition,
    presets: dict[str, dict[str, str]] | None = None,
    *,
    replace: bool = False,
) -> None:
    """Put `definition` in `CATALOGUE` under its name, its aliases and its `presets`: the one
    way a measure is registered (the `measure` decorator of the built-in families and
    `preval.define_measure` both call it).

    A name or alias that another measure already holds (case ignored, as requests are read)
    raises `MeasureError` naming that measure, unless `replace` and the holder is the measure
    of the same name (a redefinition, which `preval.define_measure` allows for its own).
    """
    spellings = [definition.name, *definition.aliases, *(presets or {})]
    for alias in spellings:
        holder = _ALIASES.get(alias.lower())
        if holder is not None and not (replace and holder == definition.name):
            what = "the name" if alias.lower() == holder.lower() else "an alias"
            msg = f"measure name {alias!r} is taken: it is {what} of the measure {holder!r}"
            raise MeasureError(msg)
    if replace and definition.name in CATALOGUE:
        forget(definition.name)
    CATALOGUE[definition.name] = definition
    for alias in spellings:
        _ALIASES[alias.lower()] = definition.name
    for alias, values in (presets or {}).items():
        _PRESETS[alias.lower()] = tuple(values.items())


def forget(name: str) -> None:
    """Remove the measure `name` and its spellings from the catalogue (`register`'s inverse)."""
    CATALOGUE.pop(name, None)
    for alias in [a for a, holder in _ALIASES.items() if holder == name]:
        del _ALIASES[alias]
        _PRESETS.pop(alias, None)


# The catalogue's order (`preval measures`, the README table, the names listed when a request is
# unknown): the order in which the measures were defined when one module held them all. The
# package applies it once every family module has registered its measures (`order_catalogue`);
# a measure not listed here follows those listed, in the order of registration.
ORDER = (
    "AP", "GMAP", "P", "R", "RR", "Rprec", "nDCG", "DCG", "ARP", "nDCGRel", "Rndcg", "G", "SDCG",
    "INSQ", "INST", "BPM", "Compat", "NERR8", "NERR9", "NERR10", "NERR11", "Success", "Hits", "F",
    "RBP", "RBPResid", "ERR", "TieAtCutoff", "Bpref", "GMBpref", "IPrec", "AP11", "infAP",
    "Judged", "Unjudged", "SetP", "SetR", "AUC-PR", "AUC-ROC", "MaxF", "RecallAtFixedPrecision",
    "SetF", "SetRelP", "SetAP", "Utility", "binG", "Accuracy", "PairAccuracy", "Specificity",
    "FallOut",
    "NumRet", "NumRel", "NumRelRet", "NumNonrelJudgedRet", "NumQ", "alpha_DCG", "alpha_nDCG",
    "ERR_IA", "nERR_IA", "NRBP", "AP_IA", "P_IA", "StRecall",
)  # fmt: skip


def order_catalogue() -> None:
    """Put `CATALOGUE` in `ORDER`, in place (modules hold the dict itself)."""
    missing = [name for name in ORDER if name not in CATALOGUE]
    if missing:
        msg = f"ORDER names measures that are not registered: {', '.join(missing)}"
        raise RuntimeError(msg)
    rest = [name for name in CATALOGUE if name not in ORDER]
    entries = [(name, CATALOGUE[name]) for name in (*ORDER, *rest)]
    CATALOGUE.clear()
    CATALOGUE.update(entries)


# shared by measures of several families
def _per_group_value(value: float) -> pl.Expr:
    """A constant as a per-group value: Polars turns division by a literal into multiplication
    by its reciprocal, one ulp off (see ranking.divide)."""
    return pl.len() * 0 + value
