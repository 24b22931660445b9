"""Counts (NumRet, NumRel, NumRelRet, NumNonrelJudgedRet, NumQ, summed in the summary) and
the TieAtCutoff diagnostic.

Notation as in ``preval.measures``.
"""

from __future__ import annotations

import polars as pl

from ..ranking import Ranking, count
from .registry import REL, Param, Spec, _level, measure


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
