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
from pathlib import Path

import numpy as np
import polars as pl

from . import io
from .errors import InputError
from .summary import measure_columns

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
        signed-rank test, zero differences dropped (scipy's ``zero_method="wilcox"``, exact
        distribution for small samples without ties, else the normal approximation);
        ``"randomization"``: Fisher's paired randomization test, the p-value
        (b + 1) / (R + 1) where b of R random sign flips of the differences give a mean at
        least as far from 0 as the observed one; ``"bootstrap"``: the paired bootstrap of the
        mean difference, p = (b + 1) / (R + 1) where b of R resampled means of the centred
        differences are at least as far from 0 as the observed mean; ``"tukey"``: Tukey's
        HSD across all systems (scipy's `tukey_hsd` on each system's per-query values, which
        controls the family-wise error itself: no further correction).
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
        ``"drop"`` takes the queries every system has. The ``queries`` and
        ``queries_filled`` columns say how many were compared, and how many of those the
        system or the baseline lacked.

    Returns
    -------
    polars.DataFrame
        Columns: ``system``, ``baseline``, ``measure``, ``queries``, ``queries_filled``,
        ``mean`` (of the system), ``baseline_mean``, ``delta`` (mean difference, system minus
        baseline), ``relative_delta`` (delta / baseline mean; null when that is 0),
        ``ci_low``/``ci_high`` (confidence interval of delta: the t interval for the t-test,
        the bootstrap percentile interval for the bootstrap, else the t interval),
        ``p_value``, ``p_corrected``, ``significant``, ``wins``/``ties``/``losses`` (queries
        where the system scores higher / equal / lower), ``effect_size`` (Cohen's d_z: mean
        difference / standard deviation of the differences; null when that is 0). A table,
        not a lazy plan: the tests need the numbers.

    Edge cases: fewer than 2 queries, or differences that are all equal, give a null p-value
    for the t-test (scipy returns NaN) and p = 1 for the others when every difference is 0.
    """
    _check(test, TESTS, "test")
    _check(correction, CORRECTIONS, "correction")
    _check(missing, MISSING, "missing")
    if not 0 < alpha < 1:
        msg = f"alpha must be between 0 and 1, got {alpha!r}"
        raise InputError(msg)
    if n_resamples < 1:
        msg = f"n_resamples must be at least 1, got {n_resamples!r}"
        raise InputError(msg)
    table = io.scan(per_query, what="per-query table").collect()
    for column in (by, query):
        if column not in table.columns:
            have = ", ".join(table.columns)
            msg = f"per-query table: missing column {column!r} (columns: {have})"
            raise InputError(msg)
    names = _measures(table, measures)
    systems = sorted(table[by].unique().drop_nulls().to_list())
    if baseline is not None and baseline not in systems:
        msg = f"baseline {baseline!r} is not a system of column {by!r} (systems: {systems})"
        raise InputError(msg)
    if len(systems) < 2:
        msg = f"compare needs at least two systems in column {by!r}, found {systems}"
        raise InputError(msg)
    pairs = (
        [(s, baseline) for s in systems if s != baseline]
        if baseline is not None
        else [(b, a) for a, b in combinations(systems, 2)]
    )
    rng = np.random.default_rng(seed)
    column = {s: i for i, s in enumerate(systems)}
    cols = [column[s] for s, _ in pairs]
    base = [column[b] for _, b in pairs]
    universes = {name: _universe(table, name, by, query, systems, missing) for name in names}
    diffs = {name: x[:, cols] - x[:, base] for name, (x, _) in universes.items()}
    shared: dict[str, list] = {}
    if test == "randomization":
        # one set of random signs for every comparison of every measure on the same queries
        by_size: dict[int, list[str]] = {}
        for name, d in diffs.items():
            by_size.setdefault(d.shape[0], []).append(name)
        for group in by_size.values():
            p_all = randomization_p(np.hstack([diffs[n] for n in group]), n_resamples, rng)
            for k, name in enumerate(group):
                shared[name] = p_all[k * len(pairs) : (k + 1) * len(pairs)]
    rows = []
    for name in names:
        x, present = universes[name]
        rows += _measure_rows(x, present, diffs[name], cols, base, name, pairs, test, alpha,
                              n_resamples, rng, shared.get(name))  # fmt: skip
    result = pl.DataFrame(rows, schema=_SCHEMA, orient="row")
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


def _measures(table: pl.DataFrame, measures: str | Iterable[str] | None) -> list[str]:
    specs = measure_columns(table.schema)
    if measures is None:
        names = [n for n, s in specs.items() if s.summary != "sum"]
    else:
        names = [measures] if isinstance(measures, str) else list(measures)
        unknown = [n for n in names if n not in table.columns]
        if unknown:
            msg = f"per-query table: no measure column {unknown[0]!r} (measures: {list(specs)})"
            raise InputError(msg)
    if not names:
        msg = "per-query table: no measure column to compare (expected names like AP, P@10)"
        raise InputError(msg)
    return names


def _universe(table, name, by, query, systems, missing) -> tuple[np.ndarray, np.ndarray]:
    """One measure's values (queries x systems, 0 where a system lacks the query) and which
    were present, on one query universe: the queries any system has (``missing="zero"``)
    or those every system has (``"drop"``)."""
    wide = table.pivot(on=by, index=query, values=name, aggregate_function="first")
    matrix = wide.select([pl.col(s) if s in wide.columns else pl.lit(None, pl.Float64).alias(s)
                          for s in systems])  # fmt: skip
    present = matrix.select(pl.all().is_not_null()).to_numpy()
    keep = present.all(axis=1) if missing == "drop" else present.any(axis=1)
    return matrix.fill_null(0.0).cast(pl.Float64).to_numpy()[keep], present[keep]


def _measure_rows(x, present, d, cols, base, name, pairs, test, alpha, n_resamples, rng,
                  p) -> list[tuple]:  # fmt: skip
    """Every comparison of one measure (`d`: one column of differences per pair; `p`: their
    p-values when already computed, as the randomization test does for all at once)."""
    n = d.shape[0]
    if test == "tukey":
        p, intervals = _tukey(x, cols, base, alpha)
    rows = []
    for j, (system, baseline) in enumerate(pairs):
        dj = d[:, j]
        filled = int((~present[:, cols[j]] | ~present[:, base[j]]).sum())
        mean_x = float(x[:, cols[j]].mean()) if n else None
        mean_y = float(x[:, base[j]].mean()) if n else None
        delta = float(dj.mean()) if n else None
        sd = float(dj.std(ddof=1)) if n > 1 else 0.0
        low, high = _t_interval(dj, alpha)
        if test == "t":
            pj = _t_test(x[:, cols[j]], x[:, base[j]])
        elif test == "wilcoxon":
            pj = _wilcoxon(dj)
        elif test == "bootstrap":
            pj, low, high = _bootstrap(dj, n_resamples, rng, alpha)
        elif test == "tukey":
            pj, (low, high) = p[j], intervals[j]
        else:  # randomization: computed for every comparison at once
            pj = p[j]
        rows.append((
            system, baseline, name, n, filled, mean_x, mean_y, delta,
            delta / mean_y if mean_y else None, low, high, pj,
            int((dj > 0).sum()), int((dj == 0).sum()), int((dj < 0).sum()),
            delta / sd if n > 1 and sd > 0 else None,
        ))  # fmt: skip
    return rows


def _tukey(x: np.ndarray, cols: list[int], base: list[int], alpha: float):
    """Tukey's HSD across every system's per-query values (scipy's `tukey_hsd`): the p-value
    and confidence interval of each compared pair's difference."""
    if x.shape[0] < 2:
        return [None] * len(cols), [(None, None)] * len(cols)
    from scipy import stats

    result = stats.tukey_hsd(*[x[:, i] for i in range(x.shape[1])])
    ci = result.confidence_interval(confidence_level=1 - alpha)
    p = [float(result.pvalue[i, j]) for i, j in zip(cols, base, strict=True)]
    intervals = [
        (float(ci.low[i, j]), float(ci.high[i, j])) for i, j in zip(cols, base, strict=True)
    ]
    return p, intervals


def _t_interval(d: np.ndarray, alpha: float) -> tuple[float | None, float | None]:
    """mean ± t_{1-alpha/2, n-1} · sd / sqrt(n); null below 2 queries."""
    n = d.size
    if n < 2:
        return None, None
    from scipy import stats

    half = stats.t.ppf(1 - alpha / 2, n - 1) * d.std(ddof=1) / np.sqrt(n)
    return float(d.mean() - half), float(d.mean() + half)


def _t_test(x: np.ndarray, y: np.ndarray) -> float | None:
    if x.size < 2:
        return None
    from scipy import stats

    p = float(stats.ttest_rel(x, y).pvalue)
    return None if np.isnan(p) else p


def _wilcoxon(d: np.ndarray) -> float | None:
    if not np.any(d != 0):
        return 1.0 if d.size else None
    from scipy import stats

    return float(stats.wilcoxon(d, zero_method="wilcox").pvalue)


def _blocks(n_resamples: int, n: int) -> Iterable[int]:
    size = max(1, BLOCK_BYTES // max(8 * n, 1))
    done = 0
    while done < n_resamples:
        step = min(size, n_resamples - done)
        yield step
        done += step


_PLUS_MINUS = np.array([-1.0, 1.0])


def _signs(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """A rows x n matrix of random signs, ±1.0: random bytes unpacked into bits (one random
    draw per 8 signs), then looked up."""
    bits = np.unpackbits(np.frombuffer(rng.bytes((rows * n + 7) // 8), dtype=np.uint8),
                         count=rows * n)  # fmt: skip
    return _PLUS_MINUS[bits.reshape(rows, n)]


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
    d = d.reshape(d.shape[0], -1).astype(np.float64)
    n = d.shape[0]
    if n == 0:
        return None if single else [None] * d.shape[1]
    observed = np.abs(d.mean(axis=0))
    tolerance = 1e-12 * np.maximum(1.0, observed)
    extreme = np.zeros(d.shape[1], dtype=np.int64)
    for step in _blocks(n_resamples, n):
        signs = _signs(rng, step, n)
        means = np.abs(signs @ d) / n
        extreme += (means >= observed - tolerance).sum(axis=0)
    p = ((extreme + 1) / (n_resamples + 1)).tolist()
    return p[0] if single else p


def _bootstrap(
    d: np.ndarray, n_resamples: int, rng: np.random.Generator, alpha: float
) -> tuple[float | None, float | None, float | None]:
    """Paired bootstrap: the percentile interval of resampled mean differences, and the
    p-value of the centred differences (the null: the mean difference is 0)."""
    n = d.size
    if n == 0:
        return None, None, None
    observed = d.mean()
    centred = d - observed
    means, null_means = [], []
    for step in _blocks(n_resamples, n):
        index = rng.integers(0, n, size=(step, n))
        means.append(d[index].mean(axis=1))
        null_means.append(centred[index].mean(axis=1))
    boot, null = np.concatenate(means), np.concatenate(null_means)
    tolerance = 1e-12 * max(1.0, abs(observed))
    extreme = int((np.abs(null) >= abs(observed) - tolerance).sum())
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return (extreme + 1) / (n_resamples + 1), float(low), float(high)


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


def paper_table(result: pl.DataFrame, fmt: str, *, test: str, correction: str, alpha: float) -> str:
    """The means of every system per measure as papers print them: a Markdown or LaTeX table
    where a superscript names the systems (by letter) that a system beats significantly, the
    best mean of each measure in bold, and a caption line naming test, correction and alpha.
    """
    systems = sorted(set(result["system"]) | set(result["baseline"]))
    letter = {s: chr(ord("a") + i) for i, s in enumerate(systems)}
    measures = list(dict.fromkeys(result["measure"]))
    means: dict[tuple[str, str], float] = {}
    beats: dict[tuple[str, str], list[str]] = {}
    for row in result.iter_rows(named=True):
        means[(row["system"], row["measure"])] = row["mean"]
        means[(row["baseline"], row["measure"])] = row["baseline_mean"]
        if row["significant"] and row["delta"] is not None and row["delta"] != 0:
            pair = (row["system"], row["baseline"])
            winner, loser = pair if row["delta"] > 0 else pair[::-1]
            beats.setdefault((winner, row["measure"]), []).append(letter[loser])
    best = {
        m: max(v for (_, mm), v in means.items() if mm == m and v is not None) for m in measures
    }
    latex = fmt == "latex"
    lines = []
    header = ["system", *measures]
    if latex:
        lines += ["\\begin{tabular}{l" + "r" * len(measures) + "}", "\\toprule",
                  " & ".join(header) + " \\\\", "\\midrule"]  # fmt: skip
    else:
        lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(measures)]
    for s in systems:
        cells = [f"({letter[s]}) {s}"]
        for m in measures:
            value = means.get((s, m))
            text = "" if value is None else f"{value:.4f}"
            if value is not None and value == best[m]:
                text = f"\\textbf{{{text}}}" if latex else f"**{text}**"
            marks = "".join(sorted(beats.get((s, m), [])))
            if marks:
                text += f"$^{{{marks}}}$" if latex else f"<sup>{marks}</sup>"
            cells.append(text)
        lines.append(" & ".join(cells) + " \\\\" if latex else "| " + " | ".join(cells) + " |")
    caption = (
        f"Superscripts: systems beaten significantly ({test} test, {correction} correction "
        f"per measure, alpha = {alpha:g}); best mean of each measure in bold."
    )
    if latex:
        lines += ["\\bottomrule", "\\end{tabular}", f"% {caption}"]
    else:
        lines += ["", caption]
    return "\n".join(lines) + "\n"


# --- command line ------------------------------------------------------------------------------

COMPARE_EXAMPLES = """\
examples:
  preval compare fixtures/example.parquet -m AP -m P@10 --baseline bm25
  preval compare bm25.run dense.run hybrid.run.gz --qrels qrels.txt -m AP --baseline bm25
  preval compare fixtures/example.parquet -m AP -m nDCG@10 --test randomization --format latex
  preval compare per_query.parquet --per-query-table --format csv
"""
FORMATS = ("table", "markdown", "latex", "csv", "json")
# a path with one of these suffixes is a table; any other (.run, .txt, .gz ...) a TREC file
TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".tab")


def add_parser(sub) -> None:
    """The ``preval compare`` subcommand."""
    import argparse

    p = sub.add_parser(
        "compare",
        help="paired significance tests between systems (needs preval[stats])",
        description="Evaluate INPUT per query (or read a per-query table) and compare the "
        "systems query by query: means, difference, p-value, W/T/L, effect size.",
        epilog=COMPARE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "input",
        metavar="INPUT",
        help="joined table or run (.parquet, .csv, .tsv), "
        "a per-query table, or a TREC run file (any other suffix, .gz too)",
    )
    p.add_argument(
        "runs",
        nargs="*",
        metavar="RUN",
        help="more TREC run files: each file is "
        "one system, named by its run tag (by its path when tags repeat)",
    )
    p.add_argument("--qrels", help="judgments (query, doc, label; a table, or a TREC qrels "
                   "file); INPUT is then a run")  # fmt: skip
    p.add_argument("-m", "--measure", action="append", dest="measures", metavar="MEASURE",
                   help="measure to compare, repeatable (default: AP, P@10, nDCG@10)")  # fmt: skip
    p.add_argument(
        "--by", default="system", metavar="COL", help="the system column (default: system)"
    )
    for role in ("query", "doc", "score", "label"):
        p.add_argument(f"--{role}", default=role, metavar="COL", help=f"the {role} column")
    p.add_argument("--per-query-table", action="store_true",
                   help="INPUT is a per-query table (as evaluate --per-query writes)")  # fmt: skip
    p.add_argument("--baseline", metavar="NAME", help="compare every system with this one "
                   "(default: every pair)")  # fmt: skip
    p.add_argument("--test", choices=TESTS, default="t", help="paired test (default: t)")
    p.add_argument("--correction", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction per measure (default: holm)")  # fmt: skip
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--resamples", type=int, default=10_000, metavar="N",
                   help="randomization and bootstrap resamples (default 10000)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--missing", choices=MISSING, default="zero",
                   help="a query a system lacks: 0 for it (default) or dropped")  # fmt: skip
    p.add_argument("--format", choices=(*FORMATS, "parquet"), default="table",
                   help="stdout: table, markdown or latex (paper tables), csv, json; Parquet "
                   "goes to a file: --output comparison.parquet")  # fmt: skip
    p.add_argument("--output", metavar="PATH", help="write the full comparison to a file "
                   "(.parquet, .csv, .tsv, .json, .ndjson, .txt: by its suffix)")  # fmt: skip
    p.add_argument(
        "--plot",
        metavar="PATH",
        help="draw the first measure's comparison: sorted per-query differences and the means "
        "with their intervals (.png, .svg, .pdf)",
    )


def run(args) -> int:
    import sys

    from . import report
    from .evaluate import evaluate

    if args.format == "parquet":  # as preval evaluate says it
        msg = (
            "--format parquet: Parquet is binary and is not printed on stdout; write it to a "
            "file with --output comparison.parquet"
        )
        raise InputError(msg)
    report.check_targets({"--output": args.output}, [args.input, *args.runs, args.qrels])
    by, baseline = args.by, args.baseline
    measures = args.measures or ["AP", "P@10", "nDCG@10"]
    if args.runs or (_is_run(args.input) and not args.per_query_table):
        per_query, baseline = _evaluate_runs(args, measures)
        by = "system"
    elif args.per_query_table:
        per_query = io.scan(args.input, what="per-query table")
    else:
        per_query = evaluate(
            args.input, measures, qrels=args.qrels, query=args.query, doc=args.doc,
            score=args.score, label=args.label, by=args.by,
        )  # fmt: skip
    result = compare(
        per_query, baseline=baseline, measures=args.measures if args.per_query_table else None,
        by=by, query=args.query, test=args.test, correction=args.correction,
        alpha=args.alpha, n_resamples=args.resamples, seed=args.seed, missing=args.missing,
    )  # fmt: skip
    if args.output:
        report.write(result, args.output)
    if args.plot:
        from .plot import compare_plot

        compare_plot(
            per_query, args.plot, measure=result["measure"][0], baseline=baseline,
            by=by, query=args.query, alpha=args.alpha, missing=args.missing,
        )  # fmt: skip
    filled = int(result["queries_filled"].max() or 0)
    rule = "scored 0 for the system that lacks them" if args.missing == "zero" else "dropped"
    print(
        f"preval: {int(result['queries'].max() or 0)} queries per comparison; "
        f"up to {filled} present for one system only ({rule})",
        file=sys.stderr,
    )
    if args.format in ("markdown", "latex"):
        text = paper_table(result, args.format, test=args.test, correction=args.correction,
                           alpha=args.alpha)  # fmt: skip
    elif args.format == "table":
        shown = result.select(
            "system", "baseline", "measure", "mean", "baseline_mean", "delta",
            "p_value", "p_corrected", "significant", "wins", "ties", "losses", "effect_size",
        )  # fmt: skip
        text = report.table(readable(shown)) + "\n"
    else:
        text = report.render(result, args.format)
    sys.stdout.write(text)
    return 0


def _is_run(path: str) -> bool:
    return Path(path).suffix.lower() not in TABLE_SUFFIXES


def _evaluate_runs(args, measures: list[str]) -> tuple[pl.DataFrame, str | None]:
    """The per-query table of several TREC run files, one system each (`io.scan_run`'s
    names), evaluated against --qrels as `preval trec -c` does; and the baseline's system
    name (--baseline may name a system or one of the run files)."""
    paths = [args.input, *args.runs]
    tables = [p for p in paths if not _is_run(p)]
    if tables:
        msg = (
            f"{tables[0]} is a table ({Path(tables[0]).suffix}) and "
            f"{next(p for p in paths if _is_run(p))} a TREC run file: give either one table "
            "with a system column, or TREC run files only, one system each"
        )
        raise InputError(msg)
    if args.per_query_table:
        msg = "--per-query-table reads one table; TREC run files are evaluated (drop the option)"
        raise InputError(msg)
    if args.qrels is None:
        msg = f"TREC run file {args.input}: give its judgments with --qrels QRELS"
        raise InputError(msg)
    if args.by != "system":
        msg = f"--by {args.by}: TREC run files are one system each; --by is for a table"
        raise InputError(msg)
    for path in [*paths, args.qrels]:
        if not Path(path).is_file():
            what = "qrels file" if path == args.qrels else "run file"
            msg = f"{what} not found: {path}"
            raise InputError(msg)
    if len(paths) < 2:
        msg = (
            f"TREC run file {args.input} is one system: give two or more run files to compare "
            "(or a table with a system column)"
        )
        raise InputError(msg)
    files = [Path(p) for p in paths]
    names = io.run_names(files)
    seen: dict[str, str] = {}
    for path, name in zip(paths, names, strict=True):
        if name in seen and Path(seen[name]).resolve() == Path(path).resolve():
            msg = f"run file {path} is given twice: give each run once"
            raise InputError(msg)
        if name in seen:
            msg = (
                f"run files {seen[name]} and {path} are both system {name!r}: give each run "
                "once (runs are named by their tag, or by their path when tags repeat)"
            )
            raise InputError(msg)
        seen[name] = path
    baseline = args.baseline
    if baseline is not None and baseline not in names and baseline in paths:
        baseline = names[paths.index(baseline)]  # the baseline named by its file
    qrels = (
        io.scan_qrels(args.qrels)
        if _is_run(args.qrels)
        else io.scan(
            args.qrels, id_columns=("query", "doc"), numeric_columns=("label",), what="qrels"
        )
    )
    import sys

    from .evaluate import build_plan

    plan = build_plan(io.scan_run(files), measures, qrels=qrels, by="system", ties="trec")
    # the per-query table, and from the same plan which judged queries each run did not
    # answer: those are in the table already, scored 0, so compare's count of missing rows
    # (queries_filled) is 0 for them and would not tell
    per_query, audit = pl.collect_all([plan.per_query(), plan.audit()])
    lacking = audit.filter(pl.col("queries_judged_not_retrieved") > 0)
    if lacking.height:
        counts = lacking.select("system", "queries_judged_not_retrieved").iter_rows()
        print(
            "preval: judged queries a run did not answer, scored 0 for it (trec_eval -c): "
            + ", ".join(f"{system} {n}" for system, n in counts),
            file=sys.stderr,
        )
    return per_query, baseline


def readable(table: pl.DataFrame) -> pl.DataFrame:
    """`table` for a text table: p-values below 0.0001 in scientific notation (4 decimals
    would print them as 0.0000)."""
    columns = [c for c in ("p_value", "p_corrected") if c in table.columns]

    def text(p: float | None) -> str:
        if p is None:
            return "-"
        return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"

    return table.with_columns(pl.col(c).map_elements(text, return_dtype=pl.String) for c in columns)
