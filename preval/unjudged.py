"""Bounds for unjudged documents: every measure evaluated as the judgments stand, with every
unjudged retrieved document counted non-relevant, and with every one counted relevant (the
`unjudged_label` option, applied where the plan joins the judgments:
`preval.planner.qrels.relabel`).

The three evaluations are stacked as rows with a `BOUND` column (``lower``, ``observed``,
``upper``), not as suffixed columns: every measure keeps its canonical column name, so a
summary groups by the bound like any other key (`preval.summarize` takes it as one by
default) and a comparison of systems runs within one bound. See docs/semantics.md,
"Unjudged documents: bounds".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import polars as pl

from . import io
from .errors import InputError
from .options import Options, accepts
from .planner import Plan, build_plan
from .ranking import QUERY

BOUND = "bound"  # the column that names the scenario of each row
LOWER, OBSERVED, UPPER = "lower", "observed", "upper"  # sorted as named, lower first
LOWER_LABEL = 0.0  # the label of an unjudged document in the lower scenario


def scenarios(options: Options, upper: float | None = None) -> dict[str, Options]:
    """The options of the three evaluations: unjudged documents labelled 0 (``lower``), left
    unjudged (``observed``), labelled `upper` (``upper``; default: the relevance level)."""
    sem = options.semantics
    if sem.unjudged_label is not None:
        msg = (
            f"bounds sets the unjudged_label option itself (0 and the upper label); got "
            f"unjudged_label={sem.unjudged_label!r}: leave it out, or give the upper label "
            "as upper="
        )
        raise InputError(msg)
    given = upper
    upper = sem.relevance_level if given is None else given
    if isinstance(upper, bool) or not isinstance(upper, (int, float)) or upper != upper:
        msg = f"bounds: upper must be a number (the upper bound's label), got {given!r}"
        raise InputError(msg)
    if upper < sem.relevance_level:
        msg = (
            f"bounds: upper={upper:g} is below the relevance level {sem.relevance_level:g}: "
            "the upper bound counts unjudged documents relevant"
        )
        raise InputError(msg)
    return {
        name: dataclasses.replace(options, semantics=dataclasses.replace(sem, unjudged_label=value))
        for name, value in ((LOWER, LOWER_LABEL), (OBSERVED, None), (UPPER, float(upper)))
    }


@accepts("evaluate")
def plans(
    data: io.Source,
    measures: str | Iterable[str],
    *,
    qrels: io.Source | None = None,
    upper: float | None = None,
    options: Options,
) -> dict[str, Plan]:
    """The plans of the three evaluations of `bounds`, by bound name, to run with any engine
    (`preval.collect`) and stack with `stack`."""
    frame = io.as_polars(data)  # a one-time stream is read once, for the three plans
    data = data if frame is None else frame
    if qrels is not None and io.as_polars(qrels) is not None:
        qrels = io.as_polars(qrels)
    return {
        name: build_plan(data, measures, qrels=qrels, options=opts)
        for name, opts in scenarios(options, upper).items()
    }


def stack(per_query: dict[str, pl.LazyFrame], keys: list[str]) -> pl.LazyFrame:
    """Per-query frames by bound name -> one frame with a `BOUND` column after `keys` (the
    by columns and the query), sorted by (keys..., bound)."""
    parts = [lf.with_columns(pl.lit(name).alias(BOUND)) for name, lf in per_query.items()]
    out = pl.concat(parts, how="vertical")
    names = out.collect_schema().names()
    order = [*keys, BOUND, *(c for c in names if c not in (*keys, BOUND))]
    return out.select(order).sort([*keys, BOUND])


@accepts("evaluate")
def bounds(
    data: io.Source,
    measures: str | Iterable[str],
    *,
    qrels: io.Source | None = None,
    upper: float | None = None,
    options: Options,
) -> pl.LazyFrame:
    """Each measure per query as judged, and its bounds over the unjudged retrieved documents.

    Three evaluations of the same arguments (`preval.evaluate`), stacked as rows:
    ``bound="lower"`` with ``unjudged_label=0`` (every unjudged retrieved document of a judged query
    counted non-relevant, and judged), ``"observed"`` as the judgments stand, and ``"upper"``
    with ``unjudged_label=upper`` (every one counted relevant at label `upper`, and R counting it).

    For the measures that rise with every relevant document and have no R or ideal in their
    denominator (P@k, Success@k, RR, DCG@k, Hits, NumRelRet, RBP) the lower and upper values
    bound every way the missing judgments could turn out; for the measures normalised by R or
    by the ideal DCG (AP, R@k, Rprec, nDCG) the upper value is that of the one scenario, which
    may even be below the observed value (docs/semantics.md, "Unjudged documents: bounds").

    Parameters
    ----------
    data, measures, qrels
        As for `preval.evaluate`.
    upper
        The label of an unjudged document in the upper bound (default: the relevance level;
        a higher grade moves graded measures such as nDCG further).

    Returns
    -------
    polars.LazyFrame
        One row per (by..., query, bound): the by columns, the query, ``bound`` (``lower``,
        ``observed``, ``upper``), then one column per measure, named as by `evaluate`. Summarise
        it with `preval.summarize` (by default per (by..., bound)).
    """
    built = plans(data, measures, qrels=qrels, upper=upper, options=options)
    observed = built[OBSERVED]
    keys = [*(observed.names[k] for k in observed.keys), observed.names[QUERY]]
    return stack({name: p.per_query() for name, p in built.items()}, keys)
