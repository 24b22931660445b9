"""Comparing systems: paired significance tests on the per-query table.

`compare` pairs every system with a baseline (or with every other system) query by query,
per measure, and reports the means, the difference, a paired test's p-value (corrected for
the number of comparisons), the wins, ties and losses and an effect size. The per-query table
is the one `preval.evaluate(..., by="system")` returns; the tests run on numpy arrays of the
per-query differences (randomization and bootstrap in blocks of resamples, never a Python
loop per resample or per query) and on scipy's closed forms (``preval[stats]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

import numpy as np
import polars as pl

from . import extras, io, validate
from .errors import InputError
from .measures import measure_columns

TESTS = ("t", "wilcoxon", "randomization", "bootstrap", "tukey")
CORRECTIONS = ("holm", "bonferroni", "fdr_bh", "none")
MISSING = ("zero", "drop")
# resamples drawn at once: a block of BLOCK x queries signs or indices stays in memory
BLOCK_BYTES = 64 * 2**20


def compare(
    per_query: io.Source,
    *,
    baseline: str | None = None,
    measures: str | Iterable[str] | None = None,
    by: str = "system",
    query: str = "query",
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: int = 0,
    missing: str = "zero",
) -> pl.DataFrame:
    """Paired comparisons of systems on a per-query table, one row per (system, baseline,
    measure).

    Parameters
    ----------
    per_query
        A wide per-query table (frame or path): a `by` column naming the system, a `query`
        column, one column per measure (as `preval.evaluate(..., by="system")` returns).
    baseline
        The system every other one is compared with; None compares every pair (each pair
        once, the system that sorts first as the baseline).
    measures
        Measure columns to compare (default: every rate; counts such as NumRet are not tested).
    test
        ``"t"``: paired two-sided t-test (`scipy.stats.ttest_rel`); ``"wilcoxon"``: Wilcoxon
        signed-rank test, zero differences dropped (``scipy.stats.wilcoxon(d,
        zero_method="wilcox")`` with scipy's default ``method="auto"``, which by the number
        of differences, zeros and ties takes the exact distribution, an enumeration of the
        sign flips or the normal approximation without continuity correction; docs/compare.md
        says when);
        ``"randomization"``: Fisher's paired randomization test, the p-value
        (b + 1) / (R + 1) where b of R random sign flips of the differences give a mean at
        least as far from 0 as the observed one; ``"bootstrap"``: the paired bootstrap of the
        mean difference, p = (b + 1) / (R + 1) where b of R resampled means of the centred
        differences are at least as far from 0 as the observed mean; ``"tukey"``: Tukey's
        HSD across all systems (scipy's `tukey_hsd` on each system's per-query values, as
        ranx's ``"tukey"``: the one-way test, which does not pair the queries, so weaker than
        the paired tests; it controls the family-wise error itself: no further correction).
    correction
        Over the comparisons of one measure: ``"holm"`` (default), ``"bonferroni"``,
        ``"fdr_bh"`` (Benjamini-Hochberg) or ``"none"``.
    alpha
        Significance level of ``significant`` (the corrected p-value < alpha) and of the
        confidence intervals (1 - alpha).
    n_resamples, seed
        Randomization and bootstrap: resamples and the seed of numpy's generator
        (reproducible).
    missing
        Every comparison of a measure is made on one query universe: ``"zero"`` takes every
        query some system has and scores 0 for a system that lacks it (trec_eval ``-c``);
        ``"drop"`` takes the queries every system has. A query where some system's row
        holds a null (the measure is undefined there, as AUC-ROC of a ranking of one class)
        leaves that measure's universe either way: an undefined value is no score, neither
        paired nor scored 0 (the summary leaves it out of its mean too). The ``queries`` and
        ``queries_filled`` columns say how many were compared, and how many of those the
        system or the baseline lacked.

    Returns
    -------
    polars.DataFrame
        Columns: ``system``, ``baseline``, ``measure``, ``queries``, ``queries_filled``,
        ``mean`` (of the system), ``baseline_mean``, ``delta`` (mean difference, system minus
        baseline), ``relative_delta`` (delta / baseline mean; null when that is 0),
        ``ci_low``/``ci_high`` (confidence interval of delta: the t interval for the t-test,
        the bootstrap percentile interval for the bootstrap, Tukey's simultaneous interval
        (scipy's) for Tukey's HSD, else the t interval),
        ``p_value``, ``p_corrected``, ``significant``, ``wins``/``ties``/``losses`` (queries
        where the system scores higher / equal / lower), ``effect_size`` (Cohen's d_z: mean
        difference / standard deviation of the differences; null when that is 0). A table,
        not a lazy plan: the tests need the numbers.

    Edge cases: fewer than 2 queries give a null p-value for the t-test, the bootstrap and
    Tukey's HSD (and null intervals); every difference 0 gives a null p-value for the t-test
    (0 / 0: scipy returns NaN) and p = 1 for the others; differences that are all equal but
    not 0 give the t-test p = 0 (t is infinite, as scipy's), with a null effect size and a
    zero-width interval; so do differences equal up to rounding (0.6 - 0.5 and 0.2 - 0.1:
    an sd at most 1e-12 of the mean difference is taken as 0), where scipy's `ttest_rel`
    warns of lost precision and returns a t of about 1e15 from the rounding. A NaN value makes
    its pairs' means, delta, interval, p-value and effect size null, and they leave the
    correction's family; for Tukey's HSD, which pools every system's variance, every
    pair's. A null value (undefined) leaves its query out of the measure's universe
    (`missing`).
    """
    check_options(test, correction, missing, alpha, n_resamples)
    table = io.scan(per_query, id_columns=(by, query), what="per-query table").collect()
    sources = require_keys(table.columns, (by, query), per_query)
    names = measure_names(table.schema, measures, sources)
    systems = systems_of(table, by, baseline, "per-query table", sources)
    baseline = None if baseline is None else baseline_of(systems, baseline)
    pairs = (
        [(s, baseline) for s in systems if s != baseline]
        if baseline is not None
        else [(b, a) for a, b in combinations(systems, 2)]
    )
    rng = np.random.default_rng(seed)
    column = {s: i for i, s in enumerate(systems)}
    cols = np.array([column[s] for s, _ in pairs], dtype=np.intp)
    base = np.array([column[b] for _, b in pairs], dtype=np.intp)
    universes = _universes(table, names, by, query, systems, missing)
    shared: dict[str, list] = {}
    if test in ("randomization", "bootstrap"):
        # one set of random signs (or of resampled queries) for every comparison of every
        # measure on the same queries
        by_size: dict[int, list[str]] = {}
        for name, (x, _) in universes.items():
            by_size.setdefault(x.shape[1], []).append(name)
        for size, group in by_size.items():
            # comparisons x queries, each row contiguous; its transpose is the queries x
            # comparisons matrix the test multiplies with its signs (no copy)
            d = np.empty((len(group) * len(pairs), size))
            for k, name in enumerate(group):
                x = universes[name][0]
                np.subtract(x[cols], x[base], out=d[k * len(pairs) : (k + 1) * len(pairs)])
            if test == "randomization":
                p_all = randomization_p(d.T, n_resamples, rng)
            else:
                p_all = list(zip(*bootstrap_p(d.T, n_resamples, rng, alpha), strict=True))
            for k, name in enumerate(group):
                shared[name] = p_all[k * len(pairs) : (k + 1) * len(pairs)]
    parts = []
    for name in names:
        x, present = universes[name]
        parts.append(_measure_table(x, present, cols, base, name, pairs, test, alpha,
                                    n_resamples, rng, shared.get(name)))  # fmt: skip
    result = pl.concat(parts)
    if test == "tukey":  # the studentized range already holds the family-wise level
        correction = "none"
    return _corrected(result, correction, alpha)


_SCHEMA = {
    "system": pl.String, "baseline": pl.String, "measure": pl.String, "queries": pl.Int64,
    "queries_filled": pl.Int64, "mean": pl.Float64, "baseline_mean": pl.Float64,
    "delta": pl.Float64, "relative_delta": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "p_value": pl.Float64, "wins": pl.Int64, "ties": pl.Int64,
    "losses": pl.Int64, "effect_size": pl.Float64,
}  # fmt: skip


def _check(value: object, choices: Sequence[str], name: str) -> None:
    if value not in choices:
        msg = f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        raise InputError(msg)


def check_options(test: str, correction: str, missing: str, alpha: float, n_resamples: int) -> None:
    """Refuse a comparison's options before any work (`compare`, and the statistics built
    on it: `preval.discriminative_power`, `preval.risk`)."""
    _check(test, TESTS, "test")
    _check(correction, CORRECTIONS, "correction")
    _check(missing, MISSING, "missing")
    if not 0 < alpha < 1:
        msg = f"alpha must be between 0 and 1, got {alpha!r}"
        raise InputError(msg)
    if n_resamples < 1:
        msg = f"n_resamples must be at least 1, got {n_resamples!r}"
        raise InputError(msg)


def measure_names(
    schema: pl.Schema,
    measures: str | Iterable[str] | None,
    sources: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """The measure columns a comparison takes: `measures`, or every rate column of `schema`
    (counts such as NumRet are not compared). `sources` name the table's file
    (`validate.named`)."""
    specs = measure_columns(schema)
    if measures is None:
        names = [n for n, s in specs.items() if s.summary != "sum"]
    else:
        names = [measures] if isinstance(measures, str) else list(measures)
        unknown = [n for n in names if n not in schema]
        if unknown:
            msg = f"per-query table: no measure column {unknown[0]!r} (measures: {list(specs)})"
            raise InputError(validate.named(msg, sources))
    if not names:
        msg = "per-query table: no measure column to compare (expected names like AP, P@10)"
        raise InputError(validate.named(msg, sources))
    return names


def systems_of(
    table: pl.DataFrame,
    by: str,
    baseline: str | None,
    what: str,
    sources: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """The systems a comparison pairs: the values of `table`'s `by` column, sorted. Refuse a
    `baseline` that is none of them, and fewer than two, naming the table as `what` and its
    file by `sources` (`validate.named`): ``"input runs.csv: compare needs ..."`` when the
    table was evaluated from that file, ``"per-query table pq.parquet: ..."`` when it was
    read from it."""
    systems = sorted(table[by].unique().drop_nulls().to_list())
    if baseline is not None and baseline_of(systems, baseline) is None:
        msg = f"{what}: baseline {baseline!r} is not a system of column {by!r} (systems: {systems})"
        raise InputError(validate.named(msg, sources))
    if len(systems) < 2:
        msg = f"{what}: compare needs at least two systems in column {by!r}, found {systems}"
        raise InputError(validate.named(msg, sources))
    return systems


def baseline_of(systems: Sequence[object], baseline: object) -> object | None:
    """The system `baseline` names: itself, or the one system whose name as a string it is
    (``--baseline 1`` on the command line, where systems are numbered 1, 2, 3); None if none."""
    if baseline in systems:
        return baseline
    named = [s for s in systems if str(s) == str(baseline)]
    return named[0] if len(named) == 1 else None


def _universes(table, names, by, query, systems, missing) -> dict[str, tuple]:
    """Each measure's values as a systems x queries matrix (0 where a system lacks the query)
    and which were present, on that measure's query universe: the queries any system has
    (``missing="zero"``) or those every system has (``"drop"``). Queries in ascending order
    of their ids, as `preval.summarize` adds them: whatever the table's row order, the
    resamples see the same queries in the same places, and a mean is the summary's.

    The table is coded once for every measure (a query index by one join, a system index),
    and each measure's values are scattered into its matrix by those codes: no pivot per
    measure, and each system's values contiguous, so that the differences of a pair are one
    subtraction of two rows.
    """
    index, row = "__preval_query_index", "__preval_row"
    while index in table.columns or row in table.columns:
        index, row = index + "_", row + "_"
    rows = table.lazy().filter(pl.col(by).is_not_null())
    queries = rows.select(pl.col(query).unique().sort()).collect()
    n_queries = queries.height
    if table.schema[by] in (pl.String, pl.Categorical):
        # the systems (sorted) as an enum: its codes are their positions, without a lookup
        system = pl.col(by).cast(pl.Enum(systems)).to_physical().cast(pl.Int64)
    else:
        system = pl.col(by).replace_strict(systems, list(range(len(systems))))
    # the join need not keep the rows' order (each row carries its codes and its values, and
    # its number for the rule on repeated rows below): an ordered join costs twice as much
    coded = (
        rows.with_row_index(row)
        .join(queries.lazy().with_row_index(index), on=query, how="left", nulls_equal=True)
        .select(
            pl.col(index).cast(pl.Int64),
            system.cast(pl.Int64).alias(by),
            pl.col(row),
            *[pl.col(n).is_not_null().alias(f"{i}present") for i, n in enumerate(names)],
            *[pl.col(n).cast(pl.Float64).fill_null(0.0).alias(f"{i}value")
              for i, n in enumerate(names)],
        )
        .collect()
    )  # fmt: skip
    cells = coded[by].to_numpy() * n_queries + coded[index].to_numpy()
    first = None
    if np.bincount(cells, minlength=len(systems) * n_queries).max(initial=0) > 1:
        # a (system, query) given twice: its first row counts, as in a pivot taking "first"
        by_cell = np.lexsort((coded[row].to_numpy(), cells))
        cells = cells[by_cell]
        first = by_cell[np.r_[True, cells[1:] != cells[:-1]]]
        cells = cells[np.r_[True, cells[1:] != cells[:-1]]]
    shape = (len(systems), n_queries)
    given = np.zeros(shape, dtype=bool)  # the (system, query) cells that have a row
    given.reshape(-1)[cells] = True
    out = {}
    for i, name in enumerate(names):
        x = np.zeros(shape)
        values = coded[f"{i}value"].to_numpy()
        x.reshape(-1)[cells] = values if first is None else values[first]
        if coded[f"{i}present"].all():
            present = given
            keep = given.all(axis=0) if missing == "drop" else given.any(axis=0)
        else:
            has = coded[f"{i}present"].to_numpy()
            present = np.zeros(shape, dtype=bool)
            present.reshape(-1)[cells] = has if first is None else has[first]
            # a row whose value is null (the measure is undefined there: AUC-ROC of a ranking
            # of one class) is no score to pair, nor a query the system lacks (which scores
            # 0): the query leaves this measure's universe, as it leaves the summary's mean
            defined = ~(given & ~present).any(axis=0)
            keep = given.all(axis=0) if missing == "drop" else given.any(axis=0)
            keep &= defined
        if not keep.all():
            x, present = x[:, keep], present[:, keep]
        out[name] = (x, present)
    return out


def require_keys(
    columns: Sequence[str], keys: Iterable[str], per_query: object
) -> tuple[tuple[str, str], ...]:
    """Raise `InputError` naming the per-query table (its file, when given as a path) and
    the first of `keys` (the system and query columns) it lacks; return its sources, for
    other messages (`validate.named`)."""
    sources = validate.path_sources({"per-query table": per_query})
    for column in keys:
        if column not in columns:
            msg = f"per-query table: missing column {column!r} (columns: {', '.join(columns)})"
            raise InputError(validate.named(msg, sources))
    return sources


def universe(
    table: pl.DataFrame, name: str, by: str, query: str, systems: Sequence[object], missing: str
) -> tuple[np.ndarray, np.ndarray]:
    """One measure's values as a queries x systems matrix, and which were present: the pairing
    `compare` tests on (`missing` as there; 0 where a system lacks a query). For a picture of
    the comparison (`preval.plot.compare_plot`). `systems` are every system of the table
    (the query universe depends on all of them), in the order of the matrix's columns."""
    have = set(table[by].unique().drop_nulls().to_list())
    if have != set(systems):
        msg = (
            f"universe: systems must be every system of column {by!r} (the query universe "
            f"depends on all of them): got {list(systems)}, the table has {sorted(have)}"
        )
        raise InputError(msg)
    x, present = _universes(table, [name], by, query, systems, missing)[name]
    return x.T, present.T


# the differences of every pair over this many bytes of queries at a time: they stay in cache
CHUNK_BYTES = 2**20
# an sd at most this fraction of the mean is rounding: the values are equal (t would be 1e12)
EQUAL = 1e-12


def _paired_stats(x: np.ndarray, cols: np.ndarray, base: np.ndarray) -> dict[str, np.ndarray]:
    """Per pair (system `cols[j]` against `base[j]`, rows of `x`, systems x queries): the mean
    difference, the standard deviation of the differences (ddof 1) and the wins, ties and
    losses, in one pass over chunks of queries.

    The squares are taken about the difference of the two systems' means (`center`), which is
    the mean difference up to rounding; the sum of squares about the mean itself follows
    exactly, Σ(d - μ)² = Σ(d - c)² - n(μ - c)², without the cancellation of Σd² - nμ².
    """
    k, n = len(cols), x.shape[1]
    center = x.mean(axis=1)[cols] - x.mean(axis=1)[base] if n else np.zeros(k)
    total, squares = np.zeros(k), np.zeros(k)
    wins, ties, losses = (np.zeros(k, dtype=np.int64) for _ in range(3))
    # runs of pairs with one baseline and consecutive systems (every pair, or every system
    # against one baseline, come in a few): each run's differences are one subtraction of a
    # block of rows and the baseline's row, no gathering of rows
    runs, start = [], 0
    for j in range(1, k + 1):
        if j == k or base[j] != base[start] or cols[j] != cols[j - 1] + 1:
            runs.append((start, j, cols[start], base[start]))
            start = j
    step = max(1, CHUNK_BYTES // (8 * max(k, 1)))
    d = np.empty((k, min(step, n)))
    for first in range(0, n, step):
        block = x[:, first : first + step]
        dj = d[:, : block.shape[1]]
        for j0, j1, c, b in runs:
            np.subtract(block[c : c + j1 - j0], block[b], out=dj[j0:j1])
        total += dj.sum(axis=1)
        wins += np.count_nonzero(dj > 0, axis=1)
        ties += np.count_nonzero(dj == 0, axis=1)
        losses += np.count_nonzero(dj < 0, axis=1)
        dj -= center[:, None]
        squares += np.einsum("ij,ij->i", dj, dj)
    mean = total / n if n else np.full(k, np.nan)
    sum_sq = np.maximum(squares - n * (mean - center) ** 2, 0.0) if n else squares
    sd = np.sqrt(sum_sq / (n - 1)) if n > 1 else np.zeros(k)
    # differences equal up to rounding (0.6 - 0.5 and 0.2 - 0.1) leave an sd of about 1e-17
    # that would make t and d_z about 1e15: take them as equal, as exactly equal ones are
    sd = np.where(sd <= EQUAL * np.abs(mean), 0.0, sd)
    return {"mean": mean, "sd": sd, "wins": wins, "ties": ties, "losses": losses}


def _nulls(values: np.ndarray) -> list[float | None]:
    """Floats as a list, NaN as None."""
    return [None if np.isnan(v) else v for v in values.tolist()]


def _measure_table(x, present, cols, base, name, pairs, test, alpha, n_resamples, rng,
                   p) -> pl.DataFrame:  # fmt: skip
    """Every comparison of one measure (`x`: systems x queries; `p`: the p-values when already
    computed, as the randomization test does for all at once, or the bootstrap's (p-value,
    low, high) triples)."""
    n, k = x.shape[1], len(pairs)
    stats = _paired_stats(x, cols, base)
    sd = stats["sd"]
    # summed one by one in query order, as `preval.summarize` sums (numpy's mean is pairwise):
    # where a system has every query, its mean here is the summary's to the last digit
    means = np.cumsum(x, axis=1)[:, -1] / n if n else np.full(x.shape[0], np.nan)
    # delta is the difference of the two means the row shows (so of the summary's, to the last
    # digit where they are the summary's), not the mean of the differences, which rounds
    # otherwise (0.1878183317672108 for 0.48198114554014365 - 0.29416281377293296 =
    # 0.1878183317672107); the t statistic keeps the mean of the differences, as scipy's
    # ttest_rel: the two differ in the last bits only
    delta = means[cols] - means[base]
    absent = ~present
    if absent.any():
        filled = [
            int(np.count_nonzero(absent[c] | absent[b])) for c, b in zip(cols, base, strict=True)
        ]
    else:
        filled = [0] * k
    low = high = np.full(k, np.nan)
    if n > 1:
        special = extras.require("scipy.special", "compare's interval of each delta")
        sstats = extras.require("scipy.stats", "compare's interval of each delta")

        half = sstats.t.ppf(1 - alpha / 2, n - 1) * sd / np.sqrt(n)
        low, high = delta - half, delta + half
    low, high = _nulls(low), _nulls(high)
    if test == "t":
        p = [None] * k
        if n > 1:
            # scipy's ttest_rel: t = mean / sqrt(var / n), two-sided p = 2 stdtr(n - 1, -|t|)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = stats["mean"] / np.sqrt(sd**2 / n)
            p = _nulls(2 * special.stdtr(n - 1, -np.abs(t)))
    elif test == "wilcoxon":
        p = [_wilcoxon(x[c] - x[b]) for c, b in zip(cols, base, strict=True)]
    elif test == "bootstrap":  # (p-value, low, high) of each comparison, all drawn at once
        p, low, high = (list(column) for column in zip(*p, strict=True))
    elif test == "tukey":
        p, intervals = _tukey(x, cols, base, alpha)
        low, high = [i[0] for i in intervals], [i[1] for i in intervals]
    # a NaN value (a missing one is null) leaves its pair's mean difference undefined: no
    # test of it either (the resampling tests, comparing with a NaN mean, would count no
    # resample as extreme and give p = 1 / (R + 1)); a NaN p-value (scipy's) is null too
    undefined = np.isnan(delta).tolist()
    p, low, high = ([None if u or v is None or v != v else v
                     for u, v in zip(undefined, column, strict=True)]
                    for column in (p, low, high))  # fmt: skip
    mean_y = _nulls(means[base])
    delta_list = _nulls(delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = np.where((sd > 0) & (n > 1), delta / sd, np.nan)
    columns = {
        "system": [str(s) for s, _ in pairs], "baseline": [str(b) for _, b in pairs],
        "measure": [name] * k, "queries": [n] * k, "queries_filled": filled,
        "mean": _nulls(means[cols]), "baseline_mean": mean_y, "delta": delta_list,
        "relative_delta": [d / m if m and d is not None else None
                           for d, m in zip(delta_list, mean_y, strict=True)],
        "ci_low": low, "ci_high": high, "p_value": p,
        "wins": stats["wins"], "ties": stats["ties"], "losses": stats["losses"],
        "effect_size": _nulls(effect),
    }  # fmt: skip
    return pl.DataFrame(columns, schema=_SCHEMA)


def _tukey(x: np.ndarray, cols: np.ndarray, base: np.ndarray, alpha: float):
    """Tukey's HSD across every system's per-query values (scipy's `tukey_hsd`; `x`: systems x
    queries): the p-value and confidence interval of each compared pair's difference."""
    if x.shape[1] < 2:
        return [None] * len(cols), [(None, None)] * len(cols)
    stats = extras.require("scipy.stats", "Tukey's HSD")
    result = stats.tukey_hsd(*x)
    ci = result.confidence_interval(confidence_level=1 - alpha)
    p = [float(result.pvalue[i, j]) for i, j in zip(cols, base, strict=True)]
    intervals = [
        (float(ci.low[i, j]), float(ci.high[i, j])) for i, j in zip(cols, base, strict=True)
    ]
    return p, intervals


def _wilcoxon(d: np.ndarray) -> float | None:
    if not np.any(d != 0):
        return 1.0 if d.size else None
    stats = extras.require("scipy.stats", "the Wilcoxon test")
    return float(stats.wilcoxon(d, zero_method="wilcox").pvalue)


def _blocks(n_resamples: int, n: int) -> Iterable[int]:
    size = max(1, BLOCK_BYTES // max(8 * n, 1))
    done = 0
    while done < n_resamples:
        step = min(size, n_resamples - done)
        yield step
        done += step


def _half_signs(rng: np.random.Generator, rows: int, n: int, out: np.ndarray) -> np.ndarray:
    """A rows x n matrix of random signs halved, ±0.5, written into `out` (reused from block to
    block: a new matrix per block costs its page faults again): random bytes unpacked into
    bits (one random draw per 8 signs), bit b giving b - 0.5 in one pass. Halving is exact in
    binary floating point, so 2 |(±0.5) @ d| has the bits of |(±1) @ d|."""
    bits = np.unpackbits(np.frombuffer(rng.bytes((rows * n + 7) // 8), dtype=np.uint8),
                         count=rows * n)  # fmt: skip
    half = out[: rows * n]
    np.subtract(bits, 0.5, out=half)
    return half.reshape(rows, n)


def randomization_p(
    d: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> list[float | None] | float | None:
    """Fisher's paired randomization test: p = (b + 1) / (R + 1), b = resamples whose mean of
    randomly sign-flipped differences is at least as far from 0 as the observed mean.

    (b + 1) / (R + 1) counts the observed signs as one of the equally likely assignments, so
    the p-value is never 0 and the test keeps its level (Phipson & Smyth 2010). `d`: the
    differences of one comparison, or one column per comparison (queries x comparisons): all
    columns share the same random signs, one matrix product per block of resamples.
    """
    single = d.ndim == 1
    d = np.asarray(d, dtype=np.float64)
    d = d[:, None] if single else d
    n = d.shape[0]
    if n == 0:
        return None if single else [None] * d.shape[1]
    observed = np.abs(d.mean(axis=0))
    tolerance = 1e-12 * np.maximum(1.0, observed)
    extreme = np.zeros(d.shape[1], dtype=np.int64)
    buffer = np.empty(next(iter(_blocks(n_resamples, n))) * n)
    for step in _blocks(n_resamples, n):
        half = _half_signs(rng, step, n, buffer)
        means = np.abs(half @ d) * 2 / n
        extreme += (means >= observed - tolerance).sum(axis=0)
    p = ((extreme + 1) / (n_resamples + 1)).tolist()
    return p[0] if single else p


def bootstrap_p(
    d: np.ndarray, n_resamples: int, rng: np.random.Generator, alpha: float
) -> tuple[list[float | None], list[float | None], list[float | None]]:
    """Paired bootstrap of the mean difference, for every column of `d` (queries x
    comparisons) on the same resampled queries: the p-value (b + 1) / (R + 1), b the
    resamples whose centred mean is at least as far from 0 as the observed mean (the null:
    the mean difference is 0), and the percentile interval of the resampled means.

    A resample of the n queries is a row of counts w (how often each query was drawn, n in
    all), so the resampled means of every comparison are one matrix product, w @ d / n, and
    the centred mean is that minus the observed mean: one draw serves every comparison.

    Edge cases: fewer than 2 queries: null p-values and bounds (a single query has no
    bootstrap distribution). On few queries the test is liberal: when every difference has
    one sign and the largest is under twice the mean, no resample's centred mean reaches the
    observed one (with 2 queries, always), so p = 1 / (R + 1) where the randomization test's
    exact p-value is at least 2 / 2^n.
    """
    d = np.asarray(d, dtype=np.float64)
    n, k = d.shape
    if n < 2:
        # one query resamples to itself: no spread, so any nonzero difference would reach
        # p = 1 / (R + 1) and a zero-width interval; like the t-test, no test at all
        return [None] * k, [None] * k, [None] * k
    observed = d.mean(axis=0)
    boot = np.empty((n_resamples, k))
    done = 0
    for step in _blocks(n_resamples, n):
        index = rng.integers(0, n, size=(step, n)) + n * np.arange(step)[:, None]
        counts = np.bincount(index.ravel(), minlength=step * n).reshape(step, n)
        boot[done : done + step] = counts @ d / n
        done += step
    tolerance = 1e-12 * np.maximum(1.0, np.abs(observed))
    extreme = (np.abs(boot - observed) >= np.abs(observed) - tolerance).sum(axis=0)
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
    return ((extreme + 1) / (n_resamples + 1)).tolist(), low.tolist(), high.tolist()


def corrected_p(p: Sequence[float | None], method: str) -> list[float | None]:
    """p-values corrected for multiple comparisons (nulls stay null and do not count).

    ``bonferroni``: min(1, m·p). ``holm``: sorted ascending, p_(i) · (m − i + 1), made
    non-decreasing, capped at 1. ``fdr_bh``: sorted ascending, p_(i) · m / i, made
    non-increasing from the largest, capped at 1.
    """
    values = [v for v in p if v is not None]
    m = len(values)
    if method == "none" or m == 0:
        return list(p)
    order = np.argsort(values, kind="stable")
    ranked = np.asarray(values)[order]
    if method == "bonferroni":
        adjusted = np.minimum(1.0, ranked * m)
    elif method == "holm":
        adjusted = np.minimum(1.0, np.maximum.accumulate(ranked * (m - np.arange(m))))
    else:  # fdr_bh
        scaled = ranked * m / np.arange(1, m + 1)
        adjusted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m)
    out[order] = adjusted
    it = iter(out.tolist())
    return [None if v is None else next(it) for v in p]


def _corrected(result: pl.DataFrame, method: str, alpha: float) -> pl.DataFrame:
    """The corrected p-values, per measure (the family: every comparison of one measure)."""
    parts = []
    for _, part in result.group_by("measure", maintain_order=True):
        fixed = corrected_p(part["p_value"].to_list(), method)
        parts.append(part.with_columns(pl.Series("p_corrected", fixed, dtype=pl.Float64)))
    out = pl.concat(parts) if parts else result.with_columns(p_corrected=pl.lit(None, pl.Float64))
    out = out.with_columns((pl.col("p_corrected") < alpha).fill_null(False).alias("significant"))
    order = [*list(_SCHEMA)[:12], "p_corrected", "significant", *list(_SCHEMA)[12:]]
    return out.select(order)
