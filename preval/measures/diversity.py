"""Diversity (intent-aware) measures: judgments per subtopic, as TREC's ``ndeval`` reads them.

Qrels with a subtopic column hold one row per (query, subtopic, doc); a document is relevant
to a subtopic when its label there reaches the measure's level (``ndeval``: judgment > 0).
The plan of the diversity measures is a stage of its own, beside the main aggregation:

1. the run's rows are ranked with the evaluation's tie rule (one sort, ranks numbered per
   query) and cut at the deepest rank any diversity measure reads (and at `depth`);
2. joined with the relevant (query, subtopic, doc) judgments on (query, doc): one row per
   retrieved document and subtopic it is relevant to, carrying its rank;
3. for each row, the number of documents ranked above it that are relevant to the same
   subtopic (a window over (query, subtopic) ordered by rank): the novelty of its gain;
4. one aggregation per query over those rows (`Intents`), with the per-query number of
   subtopics and the ideal values joined in from the qrels (`ideal_table`: ndeval's greedy
   ideal ranking, one step per rank for all queries at once).

Queries judged but without any relevant retrieved row score 0 in every measure (their sums
are empty); `attach` joins the stage's table to the per-query status on the query keys.

The measures themselves (alpha-DCG, alpha-nDCG, ERR-IA, nERR-IA, NRBP, AP-IA, P-IA, StRecall)
follow the stage, at the end of this module: each reads an `Intents` view, not a `Ranking`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl

from ..errors import MeasureError
from ..ranking import DOC, LABEL, POSITION, QUERY, SCORE, count, sort_keys
from .registry import REL, Param, Spec, measure

# internal columns of the stage
SUB = "_sub"  # the subtopic id, as a string
RANK = "_rank"  # 1, 2, ... within the query
_PICK, _GAIN = "_pick", "_igain"  # the greedy ideal: rank given to a document, its gain then
_NOVEL, _SCORE, _BEST, _TOP = "_novel", "_score", "_best", "_top"  # one step of the greedy

# ndeval's defaults (ndeval.c, ALPHA and BETA)
NDEVAL_ALPHA, NDEVAL_BETA = 0.5, 0.5


def seen_column(level: float, levels: dict[float, int]) -> str:
    """Per row: documents above it relevant (at `level`) to the row's subtopic."""
    return f"_seen{levels[level]}"


def subtopics_column(level: float, levels: dict[float, int]) -> str:
    """Per query: subtopics with at least one relevant judgment at `level`."""
    return f"_nsub{levels[level]}"


def subtopic_relevant_column(level: float, levels: dict[float, int]) -> str:
    """Per (query, subtopic): documents relevant to it at `level`."""
    return f"_nrelsub{levels[level]}"


def ideal_name(kind: str, level: float, alpha: float, k: int) -> str:
    return f"_ideal_{kind}_{level!r}_{alpha!r}_{k}"


@dataclass(frozen=True)
class Intents:
    """Expressions of the diversity measures inside ``group_by([*keys, query]).agg`` over the
    stage's rows: one per (retrieved document, subtopic it is relevant to at the lowest level
    any measure asks), with its rank, label, novelty counts and per-query columns.

    Rows of documents relevant to no subtopic are absent: every diversity measure is a sum of
    terms that are 0 for them, so an empty group (or no group) means 0.
    """

    default_level: float
    levels: dict[float, int] = field(default_factory=dict)

    def level(self, s: Spec) -> float:
        return s.level(self.default_level)

    @property
    def rank(self) -> pl.Expr:
        return pl.col(RANK)

    def relevant(self, level: float) -> pl.Expr:
        return pl.col(LABEL) >= level

    def seen(self, level: float) -> pl.Expr:
        return pl.col(seen_column(level, self.levels))

    def novelty(self, level: float, alpha: float) -> pl.Expr:
        """(1 − alpha)^(documents above relevant to this subtopic), 0 if not relevant."""
        gain = pl.lit(1.0 - alpha).pow(self.seen(level))
        return pl.when(self.relevant(level)).then(gain).otherwise(0.0)

    def top(self, expr: pl.Expr, k: int | None) -> pl.Expr:
        """`expr` on rows ranked within the top k (all rows when k is None), 0 elsewhere."""
        if k is None:
            return expr
        return pl.when(self.rank <= k).then(expr).otherwise(0.0)

    def relevant_in_subtopic(self, level: float) -> pl.Expr:
        """Per row: the documents judged relevant to the row's subtopic (ndeval's nrelSub)."""
        return pl.col(subtopic_relevant_column(level, self.levels))

    def subtopics(self, level: float) -> pl.Expr:
        """M: the query's subtopics with at least one relevant judgment (ndeval's
        actualSubtopics; subtopics judged only non-relevant do not count)."""
        return pl.col(subtopics_column(level, self.levels)).first().fill_null(0)

    def ideal(self, s: Spec, kind: str) -> pl.Expr:
        """The greedy ideal ranking's raw value (`kind` "dcg" or "err") at the spec's cutoff."""
        return pl.col(ideal_name(kind, self.level(s), s.param("alpha"), s.cutoff)).first()

    @staticmethod
    def safe_div(num: pl.Expr, den: pl.Expr) -> pl.Expr:
        """num/den, 0 where den is 0 or missing (no relevant subtopic)."""
        den = den.cast(pl.Float64)
        return pl.when(den > 0).then(num.cast(pl.Float64) / den).otherwise(0.0)


def ideal_ideal(kind: str, m: pl.Expr, alpha: float, k: int) -> pl.Expr:
    """ndeval's collection-independent normaliser ("ideal ideal"): the value of a ranking
    whose i-th document is relevant to all M subtopics, Σ_{i ≤ k} M (1 − alpha)^(i−1) d(i),
    with d(i) = 1/log2(i + 1) (``dcg``) or 1/i (``err``). ndeval does not apply it at k = 1:
    there the value is the raw sum (ndeval.c, computeDCG and computeERR start at i = 1)."""
    if k == 1:
        return pl.lit(1.0)
    total = sum(
        (1.0 - alpha) ** (i - 1) * (1.0 / math.log2(i + 1) if kind == "dcg" else 1.0 / i)
        for i in range(1, k + 1)
    )
    return m.cast(pl.Float64) * total


def requests(specs: list[Spec], default_level: float) -> dict[tuple[float, float], set[tuple]]:
    """The greedy ideals the specs read: (level, alpha) -> {(kind, k), ...}."""
    out: dict[tuple[float, float], set[tuple]] = {}
    for s in specs:
        ideals = s.definition.ideals
        for kind, k in ideals(s) if ideals is not None else []:
            out.setdefault((s.level(default_level), s.param("alpha")), set()).add((kind, k))
    return out


def ideal_table(
    pairs: pl.LazyFrame, group: list[str], level: float, alpha: float, wanted: set[tuple]
) -> pl.LazyFrame:
    """ndeval's ideal ranking from the relevant (group..., doc, subtopic) pairs, to the depth
    the wanted (kind, k) read: at each rank the unplaced document with the highest gain
    Σ_subtopics (1 − alpha)^(placed documents relevant to it), ties to the greatest doc id
    (ndeval.c, idealResult: "tied scores are arbitrarily resolved by docno"). One step per
    rank, each a few windows over every query's pairs at once. Returns group... and one
    column per (kind, k): Σ_{i ≤ k} gain_i d(i), d as in `ideal_ideal`.
    """
    depth = max(k for _, k in wanted)
    at = pairs.filter(pl.col(LABEL) >= level).select(
        *group, pl.col(DOC).cast(pl.String), SUB, pl.lit(None, dtype=pl.Int32).alias(_PICK),
        pl.lit(None, dtype=pl.Float64).alias(_GAIN),
    ).sort([*group, DOC, SUB])  # fmt: skip
    # (sorted: each document's gain is summed over its subtopics in one order, so that equal
    # gains compare equal whatever order the qrels came in)
    placed = pl.col(_PICK).is_not_null()
    for rank in range(1, depth + 1):
        # each window on columns of its own: a window inside another's expression would be
        # evaluated within the outer window's partitions
        at = at.with_columns(
            pl.lit(1.0 - alpha).pow(count_true(placed).over([*group, SUB])).alias(_NOVEL)
        ).with_columns(pl.col(_NOVEL).sum().over([*group, DOC]).alias(_SCORE))
        score = pl.col(_SCORE)
        at = at.with_columns(pl.when(~placed).then(score).max().over(group).alias(_BEST))
        candidate = ~placed & (score == pl.col(_BEST))
        at = at.with_columns(pl.when(candidate).then(pl.col(DOC)).max().over(group).alias(_TOP))
        chosen = candidate & (pl.col(DOC) == pl.col(_TOP))
        at = at.with_columns(
            pl.when(chosen).then(pl.lit(rank, dtype=pl.Int32)).otherwise(_PICK).alias(_PICK),
            pl.when(chosen).then(score).otherwise(pl.col(_GAIN)).alias(_GAIN),
        )
    docs = (
        at.filter(placed)
        .group_by([*group, DOC])
        .agg(pl.col(_PICK).first(), pl.col(_GAIN).first())
        .sort([*group, _PICK])  # summed in rank order below
    )
    r = pl.col(_PICK)
    cols = []
    for kind, k in sorted(wanted):
        discount = 1.0 / (r + 1).log(2) if kind == "dcg" else 1.0 / r
        value = pl.when(r <= k).then(pl.col(_GAIN) * discount).otherwise(0.0).sum()
        cols.append(value.alias(ideal_name(kind, level, alpha, k)))
    return docs.group_by(group).agg(cols)


def count_true(flag: pl.Expr) -> pl.Expr:
    return flag.cast(pl.Int64).sum()


def depth_read(specs: list[Spec], depth: int | None) -> int | None:
    """The deepest rank the specs read (None: every rank, NRBP), within `depth`."""
    cutoffs = [s.cutoff for s in specs]
    deepest = None if any(k is None for k in cutoffs) else max(cutoffs)  # type: ignore[type-var]
    if depth is None:
        return deepest
    return depth if deepest is None else min(depth, deepest)


def table(
    rows: pl.LazyFrame,
    judgments: pl.LazyFrame,
    keys: list[str],
    qkeys: list[str],
    specs: list[Spec],
    *,
    default_level: float,
    ties: str,
    trec_version: int,
    depth: int | None,
    judged_only: bool,
) -> pl.LazyFrame:
    """The diversity measures per (keys..., query): `rows` are the run's (keys, query, doc,
    score[, row]) rows, `judgments` the (qkeys..., query, doc, subtopic, label) qrels with
    one row per (query, subtopic, doc): checked, or one kept, by the qrels stage
    (`planner.qrels.subtopic_qrels`)."""
    group = [*keys, QUERY]
    qgroup = [*qkeys, QUERY]
    levels_list = sorted({s.level(default_level) for s in specs})
    levels = {lv: i for i, lv in enumerate(levels_list)}
    relevant = judgments.filter(pl.col(LABEL) >= levels_list[0])

    run = rows.filter(pl.col(SCORE).is_not_null())
    if judged_only:  # trec_eval -J: unjudged documents take no rank
        judged = judgments.select(*qgroup, DOC).unique()
        run = run.join(judged, on=[*qgroup, DOC], how="semi", nulls_equal=True)
    if ties in ("optimistic", "pessimistic"):
        # the tie rules read a document's label: its best over the subtopics, as the other
        # measures read these qrels
        best = judgments.group_by([*qgroup, DOC]).agg(pl.col(LABEL).max())
        run = run.join(best, on=[*qgroup, DOC], how="left", nulls_equal=True)
    order, descending = sort_keys(ties, has_doc=True, trec_version=trec_version)
    ranked = (
        run.sort([*map(pl.col, group), *order], descending=[False] * len(group) + descending,
                 nulls_last=True)
        .with_row_index(POSITION)
        .with_columns((pl.col(POSITION) - pl.col(POSITION).min().over(group) + 1).alias(RANK))
    )  # fmt: skip
    cut = depth_read(specs, depth)
    if cut is not None:
        ranked = ranked.filter(pl.col(RANK) <= cut)
    expanded = ranked.select(*group, DOC, RANK).join(
        relevant.select(*qgroup, DOC, SUB, LABEL), on=[*qgroup, DOC], how="inner"
    )
    per_query = judgments.group_by(qgroup).agg(
        pl.col(SUB).filter(pl.col(LABEL) >= lv).n_unique().alias(subtopics_column(lv, levels))
        for lv in levels_list
    )
    for (level, alpha), wanted in requests(specs, default_level).items():
        ideal = ideal_table(relevant, qgroup, level, alpha, wanted)
        per_query = per_query.join(ideal, on=qgroup, how="left", nulls_equal=True)
    # documents above each row relevant to its subtopic: a running count over the
    # (query, subtopic) rows in rank order, less the row's own flag
    expanded = expanded.with_columns(
        (pl.col(LABEL) >= lv).cast(pl.Int64).alias(f"_flag{levels[lv]}") for lv in levels_list
    ).with_columns(
        (pl.col(f"_flag{levels[lv]}").cum_sum().over([*group, SUB], order_by=RANK)
         - pl.col(f"_flag{levels[lv]}")).alias(seen_column(lv, levels))
        for lv in levels_list
    )  # fmt: skip
    per_subtopic = relevant.group_by([*qgroup, SUB]).agg(
        count_true(pl.col(LABEL) >= lv).alias(subtopic_relevant_column(lv, levels))
        for lv in levels_list
    )
    expanded = expanded.join(per_subtopic, on=[*qgroup, SUB], how="left", nulls_equal=True)
    view = Intents(default_level, levels)
    # sums run down the ranking, as ndeval adds them (the join leaves the rows in no order):
    # the same values whatever the plan, the engine or the other systems evaluated along
    values = expanded.join(per_query, on=qgroup, how="left", nulls_equal=True)
    values = values.sort([*group, RANK, SUB])
    return values.group_by(group).agg(build(s, view) for s in specs)


def build(s: Spec, view: Intents) -> pl.Expr:
    return s.definition.build(view, s).cast(pl.Float64).alias(s.name)  # type: ignore[arg-type]


def attach(
    status: pl.LazyFrame, values: pl.LazyFrame, keys: list[str], names: list[str]
) -> pl.LazyFrame:
    """The status with the diversity columns `names` joined on the query keys; queries with no
    relevant retrieved row (or nothing retrieved) score 0."""
    group = [*keys, QUERY]
    joined = status.join(values, on=group, how="left", nulls_equal=True)
    return joined.with_columns(pl.col(n).fill_null(0.0) for n in names)


def require_subtopic(specs: list[Spec], subtopic: str | None, has_qrels: bool) -> None:
    """Diversity measures need qrels with a subtopic column: say which measures and why."""
    wanted = [s.name for s in specs if s.definition.diversity]
    if subtopic is not None and not has_qrels:
        msg = (
            f"subtopic={subtopic!r} names a column of the qrels: pass qrels=... (one row per "
            "query, subtopic, doc, label) with it"
        )
        raise MeasureError(msg)
    if wanted and subtopic is None:
        what = "is a diversity measure" if len(wanted) == 1 else "are diversity measures"
        msg = (
            f"{', '.join(wanted)} {what}: missing the subtopic column; pass qrels with one row "
            "per (query, subtopic, doc, label) and name it, subtopic='subtopic' (command line: "
            "--qrels FILE --subtopic COLUMN)"
        )
        raise MeasureError(msg)


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
