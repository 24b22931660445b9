"""Your own measures: `define_measure` registers a function of a `RankedQuery` (the ranked rows
of one query, as Polars expressions) under a name of the measure grammar, through the same
registry as the built-in measures (`preval.measures.registry.register`).

A defined measure is a measure like any other: ``MyMeasure@10`` and ``MyMeasure(p=0.5)@10``
parse, appear in ``preval measures``, in `evaluate`'s columns (every engine), in `summarize`
and `compare`, and on Spark (`preval.spark` ships the definitions with the job). See
docs/custom-measures.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from .errors import MeasureError
from .measures import registry
from .measures.registry import CATALOGUE, REL, Definition, Param, Spec, _bool, _number
from .ranking import LABEL, LINEAR, Ranking, count, ideal_key

Cutoff = Literal["required", "optional", "none"]
SUMMARIES = ("mean", "sum", "gmean")
CUTOFFS = ("required", "optional", "none")
# a name of the grammar that no other rule reads first: a letter, then letters, digits, _ or -,
# not ending in a digit (``Foo10`` would read as ``Foo@10`` in the did-you-mean hints)
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*[A-Za-z_]|[A-Za-z]")
_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class RankedQuery:
    """The ranked rows of one query, as the expressions a custom measure reads: the stable
    contract of `define_measure`.

    The function of a measure gets one of these and returns one Polars expression that
    reduces the query's rows to one value (``.sum()``, ``.max()``, ``.first()``, a per-query
    value such as `num_rel` ...). It runs inside ``group_by(query).agg(...)``: row-wise
    expressions hold one value per row of the query, in ranking order (retrieved documents by
    rank, then, in a joined table, the judged documents the run did not retrieve).

    Attributes
    ----------
    k
        The cutoff of the request (``@10``: 10), None without one.
    params
        The request's parameters by name, defaults filled in (``MyMeasure(p=0.5)``).
    level
        The relevance level: the request's ``rel=`` or the evaluation's `relevance_level`.
    """

    k: int | None
    params: Mapping[str, Any]
    level: float
    _r: Ranking = field(repr=False)

    # -- per row ------------------------------------------------------------------------------
    @property
    def retrieved(self) -> pl.Expr:
        """Boolean per row: the row takes a rank (retrieved, within `depth`, judged if
        `judged_only`)."""
        return self._r.retrieved

    @property
    def rank(self) -> pl.Expr:
        """Int64 per row: the 1-based rank of a retrieved row (ties broken by the evaluation's
        tie rule). Read it on retrieved rows (`top`)."""
        return self._r.rank

    @property
    def label(self) -> pl.Expr:
        """Float64 per row: the judgment, null for an unjudged document."""
        return pl.col(LABEL)

    @property
    def relevant(self) -> pl.Expr:
        """Boolean per row: retrieved and relevant (label >= `level`)."""
        return self._r.rel(self.level)

    @property
    def judged(self) -> pl.Expr:
        """Boolean per row: retrieved and judged (a label >= 0; negative labels are pooled but
        not assessed, as trec_eval reads them)."""
        return self._r.judged()

    @property
    def gain(self) -> pl.Expr:
        """Float64 per row: max(label, 0) on retrieved rows, 0 for unjudged and unretrieved
        ones (the linear gain of trec_eval's nDCG)."""
        return pl.when(self._r.retrieved).then(self._r.judged_gain()).otherwise(0.0)

    @property
    def tp(self) -> pl.Expr:
        """Int per row: relevant retrieved documents at ranks 1..rank (tp(k))."""
        return self._r.tp(self.level)

    @property
    def fp(self) -> pl.Expr:
        """Int per row: retrieved documents that are not relevant at ranks 1..rank (fp(k));
        unjudged ones count, as they do for precision."""
        return (self._r.retrieved & ~self._r.rel(self.level)).cum_sum()

    # -- per query ----------------------------------------------------------------------------
    @property
    def num_rel(self) -> pl.Expr:
        """Int per query: R, the relevant documents of the query at `level`, retrieved or not
        (`num_positives` when given)."""
        return self._r.num_rel(self.level)

    @property
    def num_ret(self) -> pl.Expr:
        """Int per query: n, the retrieved (ranked) documents."""
        return self._r.num_ret

    @property
    def ideal_dcg(self) -> pl.Expr:
        """Float64 per query: the DCG of the best ordering of all the query's judged gains, at
        the cutoff `k` (the denominator of nDCG@k, linear gain)."""
        return self._r.ideal_dcg(self.k)

    # -- helpers ------------------------------------------------------------------------------
    def top(self, expr: pl.Expr) -> pl.Expr:
        """`expr` on the retrieved rows ranked within the cutoff `k` only (every retrieved row
        without a cutoff), in rank order: reduce it (``.sum()``, ``.max()`` ...)."""
        keep = self._r.retrieved if self.k is None else self._r.retrieved & (self._r.rank <= self.k)
        return expr.filter(keep)

    def hits(self) -> pl.Expr:
        """Int per query: tp(k), relevant documents in the top `k` (all retrieved without k)."""
        return count(self.top(self.relevant))

    @staticmethod
    def safe_div(num: pl.Expr, den: pl.Expr) -> pl.Expr:
        """num / den as Float64 per query, 0 where den is 0 (preval's "when R = 0" rule)."""
        return Ranking.safe_div(num, den)

    def param(self, name: str) -> Any:
        """The parameter `name` of the request (its default when not given)."""
        return self.params[name]


MeasureFunction = Callable[[RankedQuery], pl.Expr]


@dataclass(frozen=True)
class CustomMeasure:
    """What `define_measure` registered: enough to register it again elsewhere (a Spark
    worker, `ensure`). `fn` is the user's function; the rest are `define_measure`'s arguments."""

    name: str
    fn: MeasureFunction
    cutoff: Cutoff
    params: tuple[tuple[str, Param], ...]
    summary: str
    doc: str

    def definition(self) -> Definition:
        return Definition(
            self.name,
            _builder(self),
            self.cutoff,
            self.summary,  # type: ignore[arg-type]
            dict(self.params),
            (),
            "",
            self.doc,
            ideals=lambda s: [ideal_key(s.cutoff, LINEAR)],
            custom=self,
        )


def define_measure(
    name: str,
    fn: MeasureFunction,
    *,
    cutoff: Cutoff = "optional",
    params: Mapping[str, Any] | None = None,
    summary: str = "mean",
    doc: str | None = None,
    replace: bool = False,
) -> str:
    """Register a measure of your own under `name`, in the grammar of every measure.

    ``fn(q)`` gets a `RankedQuery` (the contract: ``q.rank``, ``q.relevant``, ``q.label``,
    ``q.gain``, ``q.tp``, ``q.fp``, ``q.num_rel``, ``q.num_ret``, ``q.ideal_dcg``, ``q.k``,
    ``q.params``, ``q.top(expr)`` ...) and returns one Polars expression with one value per
    query. The measure then parses (``Name``, ``Name@10``, ``Name(p=0.5,rel=2)@10``), is listed
    by ``preval measures``, evaluates in every engine and on Spark, and is summarised
    (`summary`) and compared like a built-in one.

    Parameters
    ----------
    name
        The measure's name: a letter, then letters, digits, ``_`` or ``-``, not ending in a
        digit. A name or alias of another measure (case ignored) is refused.
    fn
        ``RankedQuery -> pl.Expr``. Its docstring's first line is the measure's help unless
        `doc` is given. It must be importable by name (a module on the workers' path) or
        picklable by value (cloudpickle: a function of ``__main__`` or a notebook) to run on
        Spark.
    cutoff
        ``"optional"`` (``Name`` and ``Name@k``), ``"required"`` (``Name@k`` only) or
        ``"none"``.
    params
        Parameter name -> default value (its type parses the request's text: float, int,
        bool, str) or a `preval.measures.Param`. ``rel`` (the relevance level, `q.level`) is
        always accepted. A parameter equal to its default is left out of the column name.
    summary
        How `summarize` aggregates the per-query values: ``"mean"``, ``"sum"`` (a count: an
        Int64 column, from an integer or Boolean expression; a float one is refused) or
        ``"gmean"`` (as GMAP).
    doc
        One line of help for ``preval measures``.
    replace
        Redefine a measure you defined before (in this process). Without it, defining a name
        again raises; a built-in measure can never be replaced.

    Returns
    -------
    str
        `name`.

    Raises
    ------
    MeasureError
        A name that is taken or malformed, a bad `cutoff`, `summary` or parameter, or a
        function that does not return a Polars expression (checked on a probe request now,
        and again on each request). A request whose function raises, or whose expression
        reads a column the ranked rows lack or gives no number per query, is refused when
        its plan is built (one line naming the measure).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        msg = (
            f"measure name {name!r}: expected a letter, then letters, digits, _ or -, not "
            "ending in a digit (e.g. MyMeasure)"
        )
        raise MeasureError(msg)
    if not callable(fn):
        msg = f"measure {name}: fn must be a function of a RankedQuery, got {fn!r}"
        raise MeasureError(msg)
    if cutoff not in CUTOFFS:
        msg = f"measure {name}: cutoff must be one of {', '.join(CUTOFFS)}, got {cutoff!r}"
        raise MeasureError(msg)
    if summary not in SUMMARIES:
        msg = f"measure {name}: summary must be one of {', '.join(SUMMARIES)}, got {summary!r}"
        raise MeasureError(msg)
    existing = CATALOGUE.get(name)
    if replace and existing is not None and existing.custom is None:
        msg = f"measure {name} is built in: it cannot be replaced (choose another name)"
        raise MeasureError(msg)
    if existing is not None and existing.custom is not None and not replace:
        msg = f"measure {name} is already defined: pass replace=True to redefine it"
        raise MeasureError(msg)
    text = doc if doc is not None else (fn.__doc__ or "").strip()
    measure = CustomMeasure(
        name, fn, cutoff, _params(name, params or {}), summary,
        (text.splitlines() or ["(custom measure)"])[0].strip(),
    )  # fmt: skip
    _probe(measure)
    registry.register(measure.definition(), replace=replace)
    return name


def remove_measure(name: str) -> None:
    """Remove a measure defined with `define_measure` (a built-in one cannot be removed)."""
    existing = CATALOGUE.get(name)
    if existing is None or existing.custom is None:
        what = "a built-in measure" if existing is not None else "not a defined measure"
        msg = f"cannot remove {name!r}: {what}"
        raise MeasureError(msg)
    registry.forget(name)


def defined(measures: str | Iterable[str]) -> tuple[CustomMeasure, ...]:
    """The custom measures among `measures` (requests), each once: what a Spark job ships."""
    from .measures import parse_all

    specs = parse_all(measures)
    found = {s.definition.name: s.definition.custom for s in specs if s.definition.custom}
    return tuple(found.values())


def ensure(measures: Iterable[CustomMeasure]) -> None:
    """Register `measures` here unless this process has them already (a Spark worker gets the
    driver's definitions with the job)."""
    for m in measures:
        current = CATALOGUE.get(m.name)
        if current is None or current.custom != m:
            registry.register(m.definition(), replace=current is not None)


def _params(name: str, given: Mapping[str, Any]) -> tuple[tuple[str, Param], ...]:
    out: dict[str, Param] = {"rel": REL}
    for key, value in given.items():
        if not isinstance(key, str) or not _PARAM.fullmatch(key):
            msg = f"measure {name}: parameter name {key!r} must be an identifier"
            raise MeasureError(msg)
        if key == "rel":
            msg = f"measure {name}: rel (the relevance level) is a parameter of every measure"
            raise MeasureError(msg)
        out[key] = value if isinstance(value, Param) else _param_of(name, key, value)
    return tuple(out.items())


def _param_of(name: str, key: str, default: Any) -> Param:
    """A `Param` whose text is parsed as `default`'s type."""
    if isinstance(default, bool):
        return Param(_bool, default)
    if isinstance(default, int):
        return Param(int, default)
    if isinstance(default, float):
        return Param(_number, default)
    if isinstance(default, str):
        return Param(str, default)
    msg = (
        f"measure {name}: the default of parameter {key!r} must be a float, int, bool or str "
        f"(or a preval.measures.Param), got {default!r}"
    )
    raise MeasureError(msg)


def _view(measure: CustomMeasure, r: Ranking, s: Spec) -> RankedQuery:
    values = {key: s.param(key) for key, _ in measure.params}
    return RankedQuery(s.cutoff, values, s.level(r.default_level), r)


def _call(measure: CustomMeasure, r: Ranking, s: Spec, *, wrap: bool = True) -> pl.Expr:
    """The user's expression for request `s`; an exception of the function becomes a one-line
    `MeasureError` naming the measure (`wrap`; the original is chained)."""
    if wrap:
        try:
            out = measure.fn(_view(measure, r, s))
        except MeasureError:
            raise
        except Exception as err:
            first = (str(err).strip().splitlines() or [""])[0]
            msg = f"measure {measure.name}: its function raised {type(err).__name__}: {first}"
            raise MeasureError(msg) from err
    else:
        out = measure.fn(_view(measure, r, s))
    if not isinstance(out, pl.Expr):
        msg = (
            f"measure {measure.name}: its function returned {type(out).__name__}, not a Polars "
            "expression (pl.Expr) reducing a query's rows to one value"
        )
        raise MeasureError(msg)
    return out


def _builder(measure: CustomMeasure) -> Callable[[Ranking, Spec], pl.Expr]:
    def build(r: Ranking, s: Spec) -> pl.Expr:
        return _call(measure, r, s)

    return build


def _probe(measure: CustomMeasure) -> None:
    """Call the function on a request with the default parameters (cutoff 10 where one is
    needed), so that a function that does not return an expression is refused at definition.
    A function that raises on the probe is not refused here: its request raises when used."""
    spec = Spec(measure.definition(), 10 if measure.cutoff == "required" else None)
    try:
        _call(measure, Ranking("rows"), spec, wrap=False)
    except MeasureError:
        raise
    except Exception:  # the request that uses it will say what is wrong
        return


_MISSING_COLUMN = re.compile(r'unable to find column "([^"]*)"')


def check_outputs(
    ranked: pl.LazyFrame, group: list[str], specs: Iterable[Spec], r: Ranking
) -> None:
    """Refuse, in one line naming the measure, a custom measure whose expression reads a column
    the ranked rows do not have, or does not give one number per query (a String, a List of
    unreduced rows ...): Polars would say it at collection, in many lines of its plan, or
    (an unreduced List) not at all. Only the schema is resolved: nothing is computed."""
    for s in specs:
        if s.definition.custom is None:
            continue
        name = s.definition.custom.name
        expr = s.definition.build(r, s)  # the user's expression, before build()'s cast
        try:
            dtype = ranked.group_by(group).agg(expr.alias("__value")).collect_schema()["__value"]
        except pl.exceptions.ColumnNotFoundError as err:
            found = _MISSING_COLUMN.search(str(err))
            column = repr(found.group(1)) if found else str(err).splitlines()[0]
            msg = (
                f"measure {name}: its expression reads a column the ranked rows do not have: "
                f"{column} (read a query's rows through the RankedQuery: q.label, q.rank, "
                "q.gain, q.relevant ...)"
            )
            raise MeasureError(msg) from err
        except pl.exceptions.PolarsError as err:
            first = (str(err).strip().splitlines() or [""])[0]
            msg = f"measure {name}: its expression does not resolve: {first}"
            raise MeasureError(msg) from err
        if not (dtype.is_numeric() or dtype in (pl.Boolean, pl.Null)):
            msg = (
                f"measure {name}: its expression gives {dtype}, not a number per query (reduce "
                "the query's rows to one numeric value: .sum(), .max(), .first() ...)"
            )
            raise MeasureError(msg)
        if s.definition.summary == "sum" and not (dtype.is_integer() or dtype == pl.Boolean):
            # the Int64 column of a count would truncate 2.76 to 2, silently
            msg = (
                f"measure {name}: summary='sum' makes it an Int64 count, but its expression "
                f"gives {dtype}: return an integer count, or define it with summary='mean'"
            )
            raise MeasureError(msg)
