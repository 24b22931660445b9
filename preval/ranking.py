"""The ranked frame: ordering documents within a query, and the expressions measures read.

The tie rules live here: `resolve_ties` picks the rule an evaluation follows, `sort_keys` (and
`packed_sort_keys`, its one-integer form) orders the rows of every query (retrieved documents
first, by score descending, ties broken by the rule; unretrieved documents last), and the
expected-value rule's closed forms read `Ranking.ties`. Every stage that sorts (the plan, the
curves, the diversity stage) calls them. After that one sort, `Ranking` hands measures the
per-query quantities of the ranked frame (docs/architecture.md: rank, rel, gain, tp, R, ideal
DCG) as Polars expressions that are valid inside
``group_by(keys).agg(...)``: within a group, Polars keeps the frame's row order, so a
cumulative sum there runs down the ranking without a window. The ranked frame also numbers its
rows (`POSITION`), and each group's rows are together in it, so a rank can be read off as a
difference of row numbers (`Ranking.first_hit`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import polars as pl

from .errors import InputError, MeasureError

Ties = Literal["trec", "input", "optimistic", "pessimistic", "threshold"]
TIES: tuple[str, ...] = ("trec", "input", "optimistic", "pessimistic", "threshold")
# tied scores form one operating point (scikit-learn's average_precision_score and roc_curve,
# Spark's BinaryClassificationMetrics): sorted like "input", and the measures that read the
# operating points keep only the last row of each run of equal scores (`Ranking.point_ends`)
THRESHOLD = "threshold"
# expected values over all orderings of tied documents (McSherry & Najork 2008): sorted like
# "input", and measures read `Ranking.tie_groups`. Not in TIES until evaluate passes the tie
# rule to its Ranking (`Ranking.ties`), so that no plan computes input-order values under it.
EXPECTED = "expected"

# Internal column names: the user's columns are renamed to these on the way in and back on
# the way out, so no user column name can collide with them.
QUERY, DOC, SCORE, LABEL, ROW, PAD = "_q", "_d", "_s", "_l", "_row", "_pad"
JUDGED_COUNT = "_njudged"  # judgments of the query, from qrels
TOTAL_POS, TOTAL_NEG = "_totpos", "_totneg"  # per-query totals given as columns
COUNT_COLUMN = "column"
RETRIEVED = "_ret"
RUN = "_run"  # number of a run of rows with equal group keys
# row number in the ranked frame, whose groups are runs of rows in ranking order
POSITION = "_pos"
REL_FLAG = "_rel"  # + a number: `judged_rel` at one level, once per row (`Ranking.flagged`)
RELSTRING = "relstring@"  # + k: a per-query String column, not a measure (`relstring_column`)

# Gain rules of DCG-style measures: LINEAR max(label, 0) (trec_eval, ranx ndcg), EXP
# 2^max(label, 0) - 1 (Burges et al.; ranx ndcg_burges, gdeval), or a tuple of (grade, gain)
# pairs overriding single grades (trec_eval ``ndcg.1=3.5,2=9.0``; other grades keep LINEAR).
LINEAR, EXP = "linear", "exp"
GainRule = str | tuple[tuple[float, float], ...]


def relstring_column(k: int) -> str:
    """The per-query String column of trec_eval's ``relstring.k`` (`Ranking.relstring`)."""
    return f"{RELSTRING}{k}"


def gain_of(label: pl.Expr, rule: GainRule = LINEAR) -> pl.Expr:
    """The gain of each row's label under `rule`; unjudged (null) rows gain 0.

    Custom gains apply to the grades listed (negative gains too, as trec_eval allows);
    other grades, and negative labels (pooled, not assessed), keep max(label, 0).
    """
    linear = label.clip(lower_bound=0).fill_null(0.0)
    if rule == LINEAR:
        return linear
    if rule == EXP:
        return pl.lit(2.0).pow(linear) - 1.0
    out = linear
    for grade, gain in rule:  # type: ignore[union-attr]  # a tuple of pairs here
        out = pl.when(label == grade).then(pl.lit(gain, dtype=pl.Float64)).otherwise(out)
    return out.fill_null(0.0)


# Rank discounts of DCG-style measures: a gain at rank k is divided by log_b(k + 1) (LOG2 is
# b = 2, trec_eval; scikit-learn's dcg_score takes log_base) or by k (INVERSE: TF-Ranking's
# `tfr.keras.utils.inverse` rank_discount_fn).
Discount = tuple[str, float]
LOG2: Discount = ("log", 2.0)
INVERSE: Discount = ("inverse", 1.0)


def discount_of(rank: pl.Expr, discount: Discount = LOG2) -> pl.Expr:
    """The divisor of the gain at `rank` (1-based) under `discount`, as Float64."""
    kind, base = discount
    if kind == "inverse":
        return rank.cast(pl.Float64)
    if base == 2.0:
        return (rank + 1).cast(pl.Float64).log(2)
    # as scikit-learn's dcg_score: log(k + 1) / log(b)
    return (rank + 1).cast(pl.Float64).log() / math.log(base)


def ideal_key(k: int | None, rule: GainRule = LINEAR, discount: Discount = LOG2) -> Any:
    """The key of a per-query ideal DCG in `Ranking.ideal_cutoffs`: the cutoff itself for the
    linear gain (the keys `evaluate` builds for nDCG), (rule, cutoff) for other gains, and
    (rule, cutoff, discount) for a discount other than log2."""
    if discount != LOG2:
        return (rule, k, discount)
    return k if rule == LINEAR else (rule, k)


def ideal_column(key: Any) -> str:
    """A column name for the ideal DCG of `key` (`ideal_key`), unique per key."""
    if not isinstance(key, tuple):
        return f"_idcg{key if key is not None else ''}"
    rule, k, *rest = key
    tag = rule if isinstance(rule, str) else "g" + "_".join(f"{a!r}:{b!r}" for a, b in rule)
    if rest:
        kind, base = rest[0]
        tag += f"_{kind}{base!r}"
    return f"_idcg_{tag}_{k if k is not None else ''}"


def resolve_ties(ties: str | None, convention_ties: str, has_doc: bool, doc: str = "doc") -> str:
    """The tie rule an evaluation follows: `ties` when given, else its convention's (`trec`:
    doc id descending, which needs a doc column, named `doc`; without one, the input order)."""
    if ties is None:
        return "trec" if (convention_ties == "trec" and has_doc) else "input"
    if ties == "trec" and not has_doc:
        msg = f"ties='trec' breaks ties by doc id, but the input has no doc column {doc!r}"
        raise InputError(msg)
    return ties


def sort_keys(
    ties: str, *, has_doc: bool, trec_version: int = 9
) -> tuple[list[pl.Expr], list[bool]]:
    """Sort expressions (after the group keys) and their descending flags for a tie rule.

    ``trec`` is trec_eval: ties by doc id descending in byte order (``comp_sim_docno``), so
    non-string ids are compared as their string form; scores are compared as 32-bit floats
    (trec_eval 9.x, pytrec_eval) or as doubles (`trec_version` 10).
    ``input`` keeps the input row order within a tie; ``optimistic``/``pessimistic`` put higher
    / lower labels first (unjudged counts as the lowest label), then the input order;
    ``threshold`` sorts as ``input`` (the order within a tie is never read: the measures take
    each run of equal scores, compared as doubles, as one operating point).
    Unretrieved rows (null score) sort last in every rule.
    """
    score = pl.col(SCORE)
    if ties == "trec":
        if not has_doc:
            msg = "ties='trec' breaks ties by doc id: it needs a doc column"
            raise ValueError(msg)
        precision = pl.Float32 if trec_version < 10 else pl.Float64
        return [score.cast(precision), pl.col(DOC).cast(pl.String)], [True, True]
    if ties in ("input", THRESHOLD):
        return [score, pl.col(ROW)], [True, False]
    if ties == "optimistic":
        return [score, pl.col(LABEL).fill_null(float("-inf")), pl.col(ROW)], [True, True, False]
    if ties == "pessimistic":
        return [score, pl.col(LABEL).fill_null(float("-inf")), pl.col(ROW)], [True, False, False]
    if ties == EXPECTED:
        # any order within a tie: the measures average over all of them (`Ranking.tie_groups`);
        # ties are equal scores as trec_eval compares them (32-bit floats before version 10)
        precision = pl.Float32 if trec_version < 10 else pl.Float64
        return [score.cast(precision), pl.col(ROW)], [True, False]
    msg = f"unknown ties rule {ties!r}: expected one of {', '.join(TIES)}"
    raise ValueError(msg)


# bits of a packed sort key below the run number: the score's rank32 (0 .. 2**32)
RANK_BITS = 33


def packed_sort_keys(
    group: list[str], ties: str, *, has_doc: bool, trec_version: int = 9
) -> tuple[list[pl.Expr], list[bool]] | None:
    """The order of the group keys then `sort_keys`, with the groups and the score packed into
    one Int64, for rows whose groups are contiguous; None where no such packing exists.

    Polars sorts one integer column several times faster than a (string, float, string)
    key. The key is
    ``run * 2**33 + rank32(score)``: `run` numbers the runs of equal group keys in row order
    (so it sorts groups exactly when each group's rows are contiguous; otherwise a group's runs
    stay apart, which a caller must detect), and ``rank32`` maps each 32-bit float to
    0 .. 2**32 - 2, highest score first, equal floats to equal numbers (-0.0 and 0.0 alike, as
    float comparison has it); a null score (not retrieved) gets 2**32, last. Ties in the key are
    broken by the same doc id key as `sort_keys`. Only ``trec`` ties with 32-bit scores
    (trec_eval 9): a double needs all 64 bits. With no `group`, the key is ``rank32`` alone.
    """
    if ties != "trec" or trec_version >= 10:
        return None
    order, descending = sort_keys(ties, has_doc=has_doc, trec_version=trec_version)
    score = order[0]  # the score as a Float32
    magnitude = score.abs().reinterpret(dtype=pl.Int32).cast(pl.Int64)  # ordered like |score|
    ascending = pl.when(score < 0).then(-magnitude).otherwise(magnitude)  # -0.0 -> 0
    # a null score stays null through the arithmetic (cheaper than asking)
    rank32 = ((2**31 - 1) - ascending).fill_null(2**32)
    if not group:  # the score's rank alone, for rows whose groups are not together yet
        return [rank32, *order[1:]], [False, *descending[1:]]
    run = run_number(group).cast(pl.Int64)
    return [run * 2**RANK_BITS + rank32, *order[1:]], [False, *descending[1:]]


def run_number(group: list[str]) -> pl.Expr:
    """0, 1, 2, ...: the number of each row's run of equal group keys, in row order
    (``rle_id``: about twice as fast as a running count of `run_starts`)."""
    return pl.struct(*group).rle_id()


def run_starts(group: list[str] | list[pl.Expr]) -> pl.Expr:
    """True on each row whose group keys (columns, or expressions) differ from the previous
    row's (and the first row)."""
    keys = [pl.col(c) if isinstance(c, str) else c for c in group]
    changed = pl.any_horizontal(k.ne_missing(k.shift(1)) for k in keys)
    return changed.fill_null(True)


def count(flag: pl.Expr) -> pl.Expr:
    """The number of rows where `flag` is true (null counts as false), as ``flag.sum()``.

    Polars sums a boolean by casting every value to an integer first; counting the non-null
    values of ``when(flag).then(True)`` reads a validity mask instead, about three times
    faster.
    """
    return pl.when(flag).then(True).count()


def in_order(group: list[str], order: list[pl.Expr], descending: list[bool]) -> pl.Expr:
    """True when the rows of every group already follow `order` (nulls last), so that sorting
    them would move no row within its group: ranked input (a TREC run, most pipelines' output)
    can then skip the sort. One comparison of each row with the next."""
    same_group = pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift(-1)) for c in group)
    ok = pl.lit(True)
    for key, desc in reversed(list(zip(order, descending, strict=True))):
        following = key.shift(-1)
        ahead = following.is_null() & key.is_not_null() | (
            key > following if desc else key < following
        )
        ok = ahead.fill_null(False) | (key.eq_missing(following) & ok)
    return (~same_group | ok).all()


def nonrel_column(rel_column: str) -> str:
    """The stats column of N that goes with the stats column of R at the same level."""
    return rel_column.replace("_R", "_N", 1)


def divide(num: pl.Expr, k: float) -> pl.Expr:
    """num / k in IEEE division, as trec_eval computes it, for one value per group (in
    ``group_by().agg``).

    Polars turns division by a literal into multiplication by its reciprocal, which is one
    ulp off for about one value in five, and not in every plan alike (a measure's last bit
    would then depend on how many groups are evaluated together). Dividing by a per-group
    value that is not a literal keeps true division (`_per_group`).
    """
    return num / _per_group(k)


def _per_group(value: pl.Expr | float) -> pl.Expr:
    """`value` as a per-group value inside ``group_by().agg`` (``len * 0 + value``), so that
    Polars divides by it group by group rather than by a broadcast scalar.

    Not ``num * 0 + value``, which also keeps true division but evaluates the numerator twice
    (Polars does not share subexpressions inside an aggregation).
    """
    return pl.len() * 0 + value


def _safe_div(num: pl.Expr, den: pl.Expr, *, per_row: bool = False) -> pl.Expr:
    """num/den as Float64, 0 where den is 0 (the 'when R = 0' convention, docs/semantics.md).

    `num` and `den` are one value per group, or with `per_row` `num` is a value per row of
    the group. Either way the divisor is never a scalar that Polars broadcasts: it multiplied
    by such a divisor's reciprocal, one ulp off (F(beta=0.5)@3 = 1.25 / 3.5 in a presorted plan
    with two systems; tests/test_chunked.py). So it is a per-group value (`_per_group`), or,
    per row, a column of the numerator's length.
    """
    num = num.cast(pl.Float64)
    den_column = num * 0 + den if per_row else _per_group(den)
    return pl.when(den > 0).then(num / den_column).otherwise(0.0)


@dataclass(frozen=True)
class Ranking:
    """Expressions over one query's rows inside ``group_by(keys).agg``.

    Rows arrive sorted: retrieved documents by rank, then unretrieved ones. `stats` says where
    per-query judgment statistics come from: ``"rows"`` computes R and the ideal DCG from the
    group's own rows (one joined table, where unretrieved judged rows are present);
    ``"columns"`` reads them from columns joined in from separate qrels (`levels` and
    `ideal_cutoffs` name those columns; a level's column holds R, and the same name with
    ``N`` for ``R`` the judged non-relevant count). `default_level` is the evaluation's
    relevance level, used by measures without their own ``rel=``. `depth` ranks only the
    first documents (trec_eval ``-M``), then `judged_only` drops unjudged ones from the ranking
    (``-J``): both only change which rows are *ranked*, so rows are never removed and R, the
    query set and the audit still see the input. `trec_version` selects version-specific rules
    (IPrec rounding).
    """

    stats: Literal["rows", "columns"]
    default_level: float = 1.0
    levels: dict[float, str] = field(default_factory=dict)
    ideal_cutoffs: dict[int | None, str] = field(default_factory=dict)
    depth: int | None = None
    judged_only: bool = False
    trec_version: int = 9
    convention: str = "trec"
    # num_positives / num_negatives: a number, or COUNT_COLUMN (a per-query column)
    total_positives: int | str | None = None
    total_negatives: int | str | None = None
    # relevance level -> a column of the frame holding `judged_rel` at that level (`flagged`)
    rel_flags: dict[float, str] = field(default_factory=dict)
    # the tie rule of the sort; EXPECTED makes the measures that have a closed form average
    # over every order of tied documents
    ties: str = "trec"

    @classmethod
    def of(
        cls,
        stats: Literal["rows", "columns"],
        *,
        semantics: Any,
        ties: str,
        counted: tuple[str, ...] = (),
        levels: dict[float, str] | None = None,
        ideal_cutoffs: dict[int | None, str] | None = None,
    ) -> Ranking:
        """The Ranking of an evaluation's `semantics` (a `preval.options.Semantics`), its tie
        rule resolved (`ties`); `counted` holds TOTAL_POS and/or TOTAL_NEG when that total
        comes from a per-query column (COUNT_COLUMN)."""
        return cls(
            stats, semantics.relevance_level, levels or {}, ideal_cutoffs or {},
            depth=semantics.depth, judged_only=semantics.judged_only,
            trec_version=semantics.trec_version, convention=semantics.convention,
            total_positives=COUNT_COLUMN if TOTAL_POS in counted else semantics.num_positives,
            total_negatives=COUNT_COLUMN if TOTAL_NEG in counted else semantics.num_negatives,
            ties=ties,
        )  # fmt: skip

    def flagged(self, levels: set[float]) -> tuple[list[pl.Expr], Ranking]:
        """Columns that hold `judged_rel` at each of `levels`, computed once per row before the
        aggregation, and a Ranking that reads them.

        Polars does not share subexpressions inside ``group_by().agg``: each measure, count and
        cutoff compared the labels again (AP, RR, Rprec, P@5, P@10 and R read
        ``label >= level`` nine times per row).
        """
        names = {level: f"{REL_FLAG}{i}" for i, level in enumerate(sorted(levels))}
        exprs = [self.judged_rel(level).alias(name) for level, name in names.items()]
        return exprs, replace(self, rel_flags=names)

    @property
    def position(self) -> pl.Expr:
        """1-based row position in the group: the rank before -M and -J."""
        return pl.int_range(1, pl.len() + 1, dtype=pl.Int64)

    @property
    def retrieved(self) -> pl.Expr:
        """Rows that take a rank: retrieved, within `depth`, judged if `judged_only`."""
        ranked = pl.col(RETRIEVED)
        if self.depth is not None:
            ranked = ranked & (self.position <= self.depth)
        if self.judged_only:
            ranked = ranked & (pl.col(LABEL) >= 0).fill_null(False)
        return ranked

    @property
    def rank(self) -> pl.Expr:
        """1-based rank of a ranked row (on other rows: the rank of the last ranked row above)."""
        if self.depth is None and not self.judged_only:
            return self.position  # ranked rows come first, contiguous
        return self.retrieved.cast(pl.Int64).cum_sum()

    def top(self, expr: pl.Expr, k: int | pl.Expr | None) -> pl.Expr:
        """`expr` on the rows ranked within the cutoff k (all rows when k is None); k may be a
        per-query expression (R for R-precision).

        Measures only reduce it (sum, max). When ranked rows are the first rows of the group
        (no `depth` nor `judged_only`), that is a slice of the first k rows, much cheaper than
        a mask over the whole group.
        """
        if k is None:
            return expr
        if self.depth is None and not self.judged_only:
            return expr.head(k)
        return pl.when(self.rank <= k).then(expr).otherwise(0)

    def hit_ranks(self, level: float, k: int | None = None) -> pl.Expr:
        """The ranks of the relevant ranked documents within the cutoff k, ascending.

        A short list (one entry per hit): measures that only need where the hits are (AP)
        read it instead of a running count over every row. Without `depth` or `judged_only`
        a rank is the row position, and the list is the positions of the true flags.
        """
        if self.depth is None and not self.judged_only:
            return (self.top(self.rel(level), k).arg_true() + 1).cast(pl.Int64)
        hit = self.rel(level) if k is None else self.rel(level) & (self.rank <= k)
        return self.rank.filter(hit)

    def first_hit(self, level: float, k: int | None = None) -> pl.Expr:
        """The rank of the first relevant ranked document within the cutoff k; null if none.

        Without `depth` or `judged_only` a rank is the row position: the hit with the smallest
        row number of the ranked frame (`POSITION`), less the group's smallest, plus one. Two
        minima, where the first of `hit_ranks` builds each group's list of hits.
        """
        if self.depth is None and not self.judged_only:
            number = pl.col(POSITION)
            first = (pl.when(self.rel(level)).then(number).min() - number.min() + 1).cast(pl.Int64)
            return first if k is None else pl.when(first <= k).then(first)
        return self.hit_ranks(level, k).first()

    def relstring(self, k: int) -> pl.Expr:
        """trec_eval's ``relstring.k``: the codes of the first k ranked documents as one string.

        A label from 0 to 9 is its digit, above 9 ``>``, a negative label (pooled, not
        assessed) ``.``, no label (not in the pool) ``-``. Ranked rows only, so `depth` and
        `judged_only` apply as to every measure; a query that ranks nothing gets ``""``.
        """
        label, ranked = pl.col(LABEL), self.retrieved
        if self.depth is None and not self.judged_only:  # ranked rows come first: read k
            label, ranked = label.head(k), ranked.head(k)
        label = label.filter(ranked).head(k)
        # (every branch is computed on every row: the digit's is clipped, or a label beyond
        # Int64's range, which the '>' branch takes, fails the cast)
        code = (
            pl.when(label > 9)
            .then(pl.lit(">"))
            .when(label >= 0)
            .then(label.clip(0, 9).cast(pl.Int64).cast(pl.String))
            .when(label.is_null())
            .then(pl.lit("-"))
            .otherwise(pl.lit("."))
        )
        return code.str.join("")

    @property
    def num_ret(self) -> pl.Expr:
        return count(self.retrieved)

    def judged_rel(self, level: float) -> pl.Expr:
        """Judged relevant at `level` (label >= level), retrieved or not; unjudged = False."""
        if level in self.rel_flags:
            return pl.col(self.rel_flags[level])
        return (pl.col(LABEL) >= level).fill_null(False)

    def judged_nonrel(self, level: float) -> pl.Expr:
        """Judged non-relevant at `level` (0 <= label < level), retrieved or not.

        A negative label marks a document that was pooled but not assessed (trec_eval's
        convention): it is neither relevant nor judged non-relevant.
        """
        label = pl.col(LABEL)
        return ((label >= 0) & (label < level)).fill_null(False)

    def judged(self) -> pl.Expr:
        """Retrieved and judged: a label >= 0 (negative labels are pooled but unjudged)."""
        return (pl.col(LABEL) >= 0).fill_null(False) & self.retrieved

    def pooled_unjudged(self) -> pl.Expr:
        """Retrieved with a negative label: in the pool, never assessed."""
        return (pl.col(LABEL) < 0).fill_null(False) & self.retrieved

    def rel(self, level: float) -> pl.Expr:
        """Retrieved and relevant at `level`."""
        return self.judged_rel(level) & self.retrieved

    def tp(self, level: float) -> pl.Expr:
        """Relevant retrieved documents at ranks 1..rank."""
        return self.rel(level).cum_sum()

    def hits(self, level: float, k: int | pl.Expr | None) -> pl.Expr:
        """tp(min(k, n)): relevant documents in the top k (all retrieved when k is None)."""
        rel = self.rel(level)
        return count(rel) if k is None else self.top(rel, k).sum()

    def num_rel(self, level: float) -> pl.Expr:
        """R: relevant documents of the query at `level`, retrieved or not (or the given total)."""
        return self._total(self.total_positives, TOTAL_POS, self.found_rel(level))

    def found_rel(self, level: float) -> pl.Expr:
        """Relevant documents of the query that the data holds (rows or qrels)."""
        if self.stats == "rows":
            return count(self.judged_rel(level))
        return pl.col(self.levels[level]).first().fill_null(0)

    def num_negatives(self, level: float) -> pl.Expr:
        """Negatives for ROC-style measures: retrieved non-relevant documents plus unretrieved
        ones that carry a label (judged non-relevant), or the given total (num_negatives)."""
        return self._total(self.total_negatives, TOTAL_NEG, self.found_negatives(level))

    @staticmethod
    def _total(given: int | str | None, column: str, found: pl.Expr) -> pl.Expr:
        if given is None:
            return found
        if given == COUNT_COLUMN:  # a placeholder row carries no count: what the data holds
            return pl.col(column).max().cast(pl.Int64).fill_null(found)
        return pl.lit(given, dtype=pl.Int64)

    def found_negatives(self, level: float) -> pl.Expr:
        retrieved_neg = count(self.retrieved & ~self.judged_rel(level))
        if self.stats == "rows":
            labelled = pl.col(LABEL).is_not_null() & ~pl.col(RETRIEVED)
            return retrieved_neg + count(labelled & ~self.judged_rel(level))
        judged_neg = pl.col(JUDGED_COUNT).first().fill_null(0) - self.found_rel(level)
        retrieved_judged_neg = count(
            self.retrieved & pl.col(LABEL).is_not_null() & ~self.judged_rel(level)
        )
        return retrieved_neg + judged_neg - retrieved_judged_neg

    def recall(self, level: float) -> pl.Expr:
        """tp/R at every row (null when R = 0: recall is undefined)."""
        R = self.num_rel(level)
        return pl.when(R > 0).then(self.tp(level) / R)

    def precision(self, level: float) -> pl.Expr:
        """tp/rank at every ranked row."""
        return self.tp(level) / self.rank

    def num_nonrel(self, level: float) -> pl.Expr:
        """N: judged non-relevant documents of the query at `level`, retrieved or not."""
        if self.stats == "rows":
            return count(self.judged_nonrel(level))
        return pl.col(nonrel_column(self.levels[level])).first().fill_null(0)

    @staticmethod
    def judged_gain(rule: GainRule = LINEAR) -> pl.Expr:
        """The gain of each row (`gain_of`): max(label, 0) by default, unjudged 0."""
        return gain_of(pl.col(LABEL), rule)

    def dcg(self, k: int | None, rule: GainRule = LINEAR, discount: Discount = LOG2) -> pl.Expr:
        """Σ_{rank <= k} gain / log2(rank + 1) over ranked documents (another `discount`:
        log_b(rank + 1), or rank)."""
        discount = discount_of(self.rank, discount)
        # an unranked row may have rank 0: select before dividing, so no 0/0 appears
        contrib = pl.when(self.retrieved).then(self.judged_gain(rule) / discount).otherwise(0.0)
        return self.top(contrib, k).sum()

    def ideal_dcg(
        self, k: int | None, rule: GainRule = LINEAR, discount: Discount = LOG2
    ) -> pl.Expr:
        """DCG of the best ordering of ALL judged gains of the query (trec_eval ndcg_cut).

        With judgments from columns (separate qrels, the top-K plan) the value is a per-query
        column the plan computed from the judged rows (`ideal_dcg_of_rows`, keyed by
        `ideal_key`); a key the plan did not compute is an error that says so.
        """
        key = ideal_key(k, rule, discount)
        if self.stats == "columns":
            if key not in self.ideal_cutoffs:
                msg = (
                    f"this plan has no ideal DCG for gain {rule!r} at cutoff {k}: a gain other "
                    "than the linear one needs its ideal computed from the judgments (evaluate "
                    "builds ideal columns for measures.ideal_keys); with separate qrels, join "
                    "them into one table for now"
                )
                raise MeasureError(msg)
            return pl.col(self.ideal_cutoffs[key]).first().fill_null(0.0)
        return self.ideal_dcg_of_rows(key)

    def ideal_gains(self, rule: GainRule, measure: str) -> pl.Expr:
        """The query's positive judged gains, best first, one per row position (0 after the
        last): the ideal ranking rank by rank. Only from the group's own rows (one joined
        table or no qrels): a plan with separate qrels carries no such sequence."""
        if self.stats == "columns":
            msg = (
                f"{measure} walks the ideal ranking rank by rank, which this plan does not carry "
                "with separate qrels (or in the top-K plan): join the qrels into one table"
            )
            raise MeasureError(msg)
        return self.judged_gain(rule).clip(lower_bound=0.0).sort(descending=True)

    def ideal_dcg_of_rows(self, key: Any) -> pl.Expr:
        """The ideal DCG of `key` (a cutoff, or (rule, cutoff): `ideal_key`) from the group's
        judged rows: gains sorted descending; only positive gains count (trec_eval stops the
        ideal at the first gain <= 0, so custom negative gains lower DCG, never IDCG)."""
        rule, k, *rest = key if isinstance(key, tuple) else (LINEAR, key)
        gain = self.judged_gain(rule)
        if isinstance(rule, tuple):  # only custom gains can be negative
            gain = gain.clip(lower_bound=0.0)
        ideal = gain.sort(descending=True)
        contrib = ideal / discount_of(self.position, rest[0] if rest else LOG2)
        return (contrib if k is None else contrib.head(k)).sum()

    @property
    def expected(self) -> bool:
        return self.ties == EXPECTED

    @property
    def threshold(self) -> bool:
        """Whether tied scores form one operating point (``ties="threshold"``)."""
        return self.ties == THRESHOLD

    def point_ends(self) -> pl.Expr:
        """Over the ranked rows (``expr.filter(self.retrieved)``, in rank order): True on the
        rows where the ranking can be cut, its operating points.

        Every ranked row under the other tie rules. Under ``ties="threshold"`` only the last
        row of each run of equal scores: a cut by a score threshold returns a whole tie group
        or none of it (scikit-learn's ``_binary_clf_curve`` keeps the last index of each
        distinct score; Spark counts each distinct score once). Scores compare as doubles, as
        both do; with `depth` the last ranked row ends its group whatever follows.
        """
        score = pl.col(SCORE).cast(pl.Float64).filter(self.retrieved)
        if not self.threshold:
            return score.is_not_null()
        return score.ne_missing(score.shift(-1))

    def require_no_cutoff(self, name: str, k: Any) -> None:
        """Refuse a rank cutoff under ``ties="threshold"``: a cutoff may split a tie group,
        where no score threshold can cut."""
        if self.threshold and k is not None:
            msg = (
                f"{name}: a rank cutoff can split a group of tied scores, which "
                "ties='threshold' keeps whole; ask for it without @K"
            )
            raise MeasureError(msg)

    def tie_score(self) -> pl.Expr:
        """The score as ties are decided: a 32-bit float before trec_eval 10, else the double."""
        return pl.col(SCORE).cast(pl.Float32 if self.trec_version < 10 else pl.Float64)

    def tie_groups(self, value: pl.Expr) -> tuple[pl.Expr, pl.Expr, pl.Expr, pl.Expr]:
        """Per ranked row, for the run of tied scores (the tie group) it belongs to:
        (before, size, inside, offset): `value` summed over the ranked rows above the group,
        the group's size m, `value` summed over the group, and the row's 1-based place in it.

        Rows come sorted by score, so a group is a run of equal scores; running sums filled
        forward from each group's first row and backward from its last give the totals
        without a window (not available inside ``group_by().agg``).
        """
        if self.depth is not None or self.judged_only:
            msg = "ties='expected' does not combine with depth or judged_only"
            raise MeasureError(msg)
        score = self.tie_score()
        ranked = self.retrieved
        first = (score.ne_missing(score.shift(1)) | ~ranked.shift(1, fill_value=False)).fill_null(
            True
        )
        last = first.shift(-1, fill_value=True)
        v = pl.when(ranked).then(value).otherwise(0).cast(pl.Float64)
        running = v.cum_sum()
        rank = self.rank.cast(pl.Float64)
        start = pl.when(first).then(rank - 1.0).forward_fill()  # ranks above the group
        end = pl.when(last).then(rank).backward_fill()
        before = pl.when(first).then(running - v).forward_fill()
        upto = pl.when(last).then(running).backward_fill()
        return before, end - start, upto - before, rank - start

    def expected_rel(self, level: float) -> pl.Expr:
        """P(relevant at this rank) over the orders of its tie group: the group's share of
        relevant documents (0 on unranked rows)."""
        _, size, inside, _ = self.tie_groups(self.rel(level))
        return pl.when(self.retrieved).then(inside / size).otherwise(0.0)

    def expected_hits(self, level: float, k: int | pl.Expr | None) -> pl.Expr:
        """E[tp(k)]: by linearity, the sum of `expected_rel` over the top k ranks."""
        return self.top(self.expected_rel(level), k).sum()

    def first_hit_chance(self, level: float) -> pl.Expr:
        """Per rank, the chance over the orders of tied documents that the first relevant
        document is there (0 where it cannot be).

        The first relevant document lies in the first tie group holding one (t = 0 relevant
        above it, g > 0). It is at the group's i-th place with chance
        Π_{j < i} (m − g − j + 1)/(m − j + 1) · g/(m − i + 1): i − 1 non-relevant places, then a
        relevant one. The running product runs over the query's rows: groups above hold no
        relevant document, so their factors are 1.
        """
        before, size, inside, offset = self.tie_groups(self.rel(level))
        left = size - offset + 1.0  # the group's places from this one on
        factor = pl.when(self.retrieved).then((left - inside) / left)
        prefix = factor.fill_null(1.0).cum_prod().shift(1, fill_value=1.0)
        chance = prefix * inside / left
        first_group = self.retrieved & (before == 0) & (inside > 0)
        return pl.when(first_group).then(chance).otherwise(0.0)

    safe_div = staticmethod(_safe_div)
    divide = staticmethod(divide)
