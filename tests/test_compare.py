"""preval.compare: paired tests equal scipy's, randomization equals exact enumeration within
Monte-Carlo error, bootstrap intervals cover at their nominal rate, corrections equal a
hand-checked example, and the pairing of queries is exact."""

from __future__ import annotations

import itertools
import math
import re
import shlex
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from scipy import stats

import preval
from preval.cli import main
from preval.significance import corrected_p, randomization_p


def per_query(values: dict[str, list[float | None]]) -> pl.DataFrame:
    """A per-query table: one system per key, query i holding values[system][i] (None:
    the system has no row for that query)."""
    rows = [
        {"system": s, "query": f"q{i:03d}", "AP": v}
        for s, vs in values.items()
        for i, v in enumerate(vs)
        if v is not None
    ]
    return pl.DataFrame(rows, schema={"system": pl.String, "query": pl.String, "AP": pl.Float64})


def random_systems(n: int, seed: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    return {
        "a": base.tolist(),
        "b": np.clip(base + rng.normal(0.05, 0.1, n), 0, 1).tolist(),
        "c": np.clip(base + rng.normal(0.0, 0.2, n), 0, 1).tolist(),
    }


@pytest.mark.parametrize("seed", range(3))
def test_t_and_wilcoxon_equal_scipy(seed: int) -> None:
    values = random_systems(40, seed)
    for test, reference in (
        ("t", lambda x, y: stats.ttest_rel(x, y).pvalue),
        ("wilcoxon", lambda x, y: stats.wilcoxon(x - y, zero_method="wilcox").pvalue),
    ):
        got = preval.compare(per_query(values), baseline="a", test=test, correction="none")
        for row in got.iter_rows(named=True):
            x, y = np.array(values[row["system"]]), np.array(values["a"])
            assert row["p_value"] == pytest.approx(reference(x, y), abs=1e-12, rel=1e-12)
            assert row["p_corrected"] == row["p_value"]
            d = x - y
            assert row["delta"] == pytest.approx(d.mean(), abs=1e-15)
            assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12)
            half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
            assert row["ci_low"] == pytest.approx(d.mean() - half, rel=1e-12)
            assert (row["wins"], row["ties"], row["losses"]) == (
                int((d > 0).sum()),
                int((d == 0).sum()),
                int((d < 0).sum()),
            )


def exact_randomization(d: np.ndarray) -> float:
    """The share of all 2^n sign assignments whose |mean| reaches the observed |mean|."""
    observed = abs(d.mean())
    hits = sum(
        abs((np.array(signs) * d).mean()) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=d.size)
    )
    return hits / 2**d.size


@pytest.mark.parametrize("seed", range(4))
def test_randomization_is_exact_enumeration_within_monte_carlo_error(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 13))
    d = np.round(rng.normal(0.05, 0.2, n), 3)
    exact = exact_randomization(d)
    resamples = 20_000
    got = randomization_p(d, resamples, np.random.default_rng(seed + 100))
    # (b + 1) / (R + 1) estimates p with standard error sqrt(p (1 - p) / R)
    assert abs(got - exact) <= 4 * math.sqrt(exact * (1 - exact) / resamples) + 2 / resamples


def test_randomization_through_compare_is_seeded_and_reproducible() -> None:
    table = per_query(random_systems(30, 7))
    one = preval.compare(table, test="randomization", n_resamples=2000, seed=3)
    two = preval.compare(table, test="randomization", n_resamples=2000, seed=3)
    assert one.equals(two)
    assert (one["p_value"] >= 1 / 2001).all()


def test_bootstrap_intervals_cover_the_true_mean_at_their_nominal_rate() -> None:
    # 300 simulated comparisons of 60 queries with a known mean difference of 0.03: a 95%
    # percentile interval should cover it about 95% of the time (binomial sd 1.3%; the
    # percentile bootstrap runs a little short at n = 60, hence the lower bound of 0.90)
    rng = np.random.default_rng(0)
    covered = 0
    trials = 300
    for trial in range(trials):
        base = rng.random(60)
        other = base + 0.03 + rng.normal(0, 0.1, 60)
        table = per_query({"a": base.tolist(), "b": other.tolist()})
        row = preval.compare(table, test="bootstrap", n_resamples=1000, seed=trial).row(
            0, named=True
        )
        covered += row["ci_low"] <= 0.03 <= row["ci_high"]
    assert 0.90 <= covered / trials <= 0.99


def test_corrections_equal_the_hand_checked_example() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # Bonferroni: m * p. Holm: sorted 0.005 0.01 0.03 0.04 times 4 3 2 1 = 0.02 0.03 0.06
    # 0.04, made non-decreasing: 0.02 0.03 0.06 0.06. BH: sorted times 4/1 4/2 4/3 4/4 = 0.02
    # 0.02 0.04 0.04, made non-increasing from the largest: the same.
    assert corrected_p(p, "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert corrected_p(p, "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert corrected_p(p, "fdr_bh") == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert corrected_p([0.2, None, 0.9], "holm") == pytest.approx([0.4, None, 0.9])
    assert corrected_p(p, "none") == p


def test_every_pair_without_a_baseline_and_the_correction_per_measure() -> None:
    table = per_query(random_systems(25, 1))
    got = preval.compare(table, correction="bonferroni")
    assert got.select("system", "baseline").rows() == [("b", "a"), ("c", "a"), ("c", "b")]
    assert got["p_corrected"].to_list() == pytest.approx([min(1.0, 3 * p) for p in got["p_value"]])


def test_a_query_missing_from_one_system_scores_zero_or_is_dropped() -> None:
    table = per_query({"a": [0.5, 0.25, 1.0], "b": [0.75, None, 0.5]})
    filled = preval.compare(table, baseline="a", correction="none").row(0, named=True)
    assert (filled["queries"], filled["queries_filled"]) == (3, 1)
    assert filled["mean"] == pytest.approx((0.75 + 0 + 0.5) / 3)
    assert filled["delta"] == pytest.approx((0.25 - 0.25 - 0.5) / 3)
    dropped = preval.compare(table, baseline="a", missing="drop").row(0, named=True)
    assert (dropped["queries"], dropped["queries_filled"]) == (2, 0)
    assert dropped["delta"] == pytest.approx((0.25 - 0.5) / 2)


def test_bad_requests_are_clear_errors() -> None:
    table = per_query({"a": [0.5], "b": [0.7]})
    with pytest.raises(preval.InputError, match="baseline 'zz' is not a system"):
        preval.compare(table, baseline="zz")
    with pytest.raises(preval.InputError, match="at least two systems"):
        preval.compare(per_query({"a": [0.5]}))
    with pytest.raises(preval.InputError, match="test must be one of"):
        preval.compare(table, test="magic")
    with pytest.raises(preval.InputError, match="no measure column 'P@10'"):
        preval.compare(table, measures=["P@10"])


def test_too_few_systems_name_the_file(tmp_path: Path, capsys) -> None:
    # a table read from a path is named, in the words of every input error ("ROLE PATH: ")
    pq = tmp_path / "pq.parquet"
    per_query({"a": [0.5, 0.2]}).write_parquet(pq)
    with pytest.raises(preval.InputError) as info:
        preval.compare(str(pq))
    assert str(info.value) == (
        f"per-query table {pq}: compare needs at least two systems in column 'system', found ['a']"
    )
    with pytest.raises(preval.InputError, match=rf"^per-query table {re.escape(str(pq))}: "):
        preval.compare(pq, baseline="zz")
    with pytest.raises(preval.InputError, match=r"^per-query table: compare needs"):
        preval.compare(per_query({"a": [0.5]}))  # a frame: no file to name
    # the commands: a table with a header and no row, or with one system, names the input
    empty, one = tmp_path / "empty.csv", tmp_path / "one.csv"
    empty.write_text("query,doc,score,label,system\n")
    one.write_text("query,doc,score,label,system\nq1,d1,0.5,1,a\nq1,d2,0.4,0,a\n")
    for table, found in ((empty, "[]"), (one, "['a']")):
        for argv in (
            ["compare", str(table), "-m", "AP"],
            ["evaluate", str(table), "--by", "system", "-m", "AP", "--compare", "-q"],
        ):
            rc = main(argv)
            out, err = capsys.readouterr()
            assert (rc, out) == (2, ""), err  # (evaluate --compare: refused before its output)
            assert err == (
                f"preval: error: input {table}: compare needs at least two systems in column "
                f"'system', found {found}\n"
            )
    rc = main(["compare", str(pq), "--per-query-table"])
    assert rc == 2
    assert capsys.readouterr().err.startswith(f"preval: error: per-query table {pq}: compare")


def test_the_command_prints_paper_tables(capsys) -> None:
    rc = main(["compare", "fixtures/example.parquet", "-m", "AP", "-m", "P@10", "--format",
               "markdown"])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "| (c) hybrid | **0.6615**<sup>ab</sup> | **0.5213**<sup>ab</sup> |" in out
    assert "t test, holm correction per measure, alpha = 0.05" in out
    assert "300 queries per comparison" in err
    rc = main(["compare", "fixtures/example.parquet", "-m", "AP", "--baseline", "bm25",
               "--format", "latex"])  # fmt: skip
    out, _ = capsys.readouterr()
    assert rc == 0
    assert "\\textbf{0.6615}$^{a}$ \\\\" in out and "\\begin{tabular}{lr}" in out
    rc = main(["compare", "fixtures/example.parquet", "--baseline", "nope"])
    _, err = capsys.readouterr()
    assert rc == 2 and err.startswith("preval: error: input fixtures/example.parquet: baseline")


def test_the_docs_show_what_the_command_prints(capsys) -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "compare.md").read_text()
    shown = re.findall(
        r"```console\n\$ preval (compare [^\n]*)\n```\n\n```text\n(.*?)```", page, flags=re.S
    )
    assert len(shown) >= 2  # a table's systems, and TREC run files
    for command, output in shown:
        assert main(shlex.split(command)) == 0, command
        assert capsys.readouterr().out == output, command


def test_tukey_equals_scipy() -> None:
    values = random_systems(30, 4)
    got = preval.compare(per_query(values), test="tukey", correction="holm")
    reference = stats.tukey_hsd(*[np.array(values[s]) for s in "abc"])
    interval = reference.confidence_interval(0.95)
    index = {"a": 0, "b": 1, "c": 2}
    for row in got.iter_rows(named=True):
        i, j = index[row["system"]], index[row["baseline"]]
        assert row["p_value"] == pytest.approx(reference.pvalue[i, j], abs=1e-12)
        assert row["p_corrected"] == row["p_value"]  # Tukey holds the family-wise level itself
        assert row["ci_low"] == pytest.approx(interval.low[i, j], abs=1e-12)


def test_every_comparison_of_a_measure_uses_one_query_universe() -> None:
    # q002 is missing for c only: with missing="zero" it scores 0 for c and counts for (b, a)
    # too; with "drop" it leaves every comparison, (b, a) included
    table = per_query({"a": [0.5, 0.25, 1.0], "b": [0.75, 0.5, 0.5], "c": [0.1, 0.2, None]})
    zero = preval.compare(table, baseline="a", correction="none")
    assert zero["queries"].to_list() == [3, 3]
    assert zero.filter(system="c")["queries_filled"].item() == 1
    drop = preval.compare(table, baseline="a", missing="drop")
    assert drop["queries"].to_list() == [2, 2]
    assert drop.filter(system="b")["delta"].item() == pytest.approx((0.25 + 0.25) / 2)


def test_the_pairing_ignores_row_order_and_takes_the_first_of_a_repeated_row() -> None:
    values = random_systems(30, 3)
    table = per_query(values)
    want = preval.compare(table, correction="none")
    shuffled = table.sample(fraction=1.0, shuffle=True, seed=1)
    # the same numbers up to the order of summation
    assert_frame_equal(preval.compare(shuffled, correction="none"), want, rel_tol=1e-12)
    # a (system, query) given twice: the first row counts (as a pivot taking "first")
    repeated = pl.concat([table, table.head(5).with_columns(pl.col("AP") + 0.5)])
    assert preval.compare(repeated, correction="none").equals(want)
    first = pl.concat([table.head(5).with_columns(pl.col("AP") + 0.5), table])
    assert not preval.compare(first, correction="none").equals(want)
    # systems named by integers compare as their names' strings
    numbered = table.with_columns(pl.col("system").replace({"a": "1", "b": "2", "c": "3"}))
    got = preval.compare(numbered.with_columns(pl.col("system").cast(pl.Int64)), correction="none")
    assert got.select("system", "baseline").rows() == [("2", "1"), ("3", "1"), ("3", "2")]
    assert got.drop("system", "baseline").equals(want.drop("system", "baseline"))


def test_no_query_in_common_gives_null_p_values() -> None:
    table = per_query({"a": [0.5, None], "b": [None, 0.25]})
    for test in ("t", "wilcoxon", "randomization", "bootstrap", "tukey"):
        got = preval.compare(table, test=test, missing="drop").row(0, named=True)
        assert got["queries"] == 0 and got["p_value"] is None and got["delta"] is None, test


def test_randomization_of_several_comparisons_shares_its_signs() -> None:
    # one matrix product per block: each column's p-value is the single-column p-value with
    # the same generator state
    rng = np.random.default_rng(5)
    d = rng.normal(0.02, 0.1, size=(50, 3))
    together = randomization_p(d, 3000, np.random.default_rng(1))
    alone = [randomization_p(d[:, j], 3000, np.random.default_rng(1)) for j in range(3)]
    assert together == pytest.approx(alone, abs=0)


def test_evaluate_compare_prints_the_comparison_after_the_summary(capsys) -> None:
    rc = main(["evaluate", "fixtures/example.parquet", "--by", "system", "-m", "AP",
               "--compare", "bm25", "-q"])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 0, err
    summary, comparison = out.split("\n\n")
    assert summary.splitlines()[0].split() == ["system", "NumQ", "AP"]
    rows = [line.split() for line in comparison.strip().splitlines()]
    assert rows[0][:4] == ["system", "baseline", "measure", "delta"]
    assert [r[:3] for r in rows[1:]] == [["dense", "bm25", "AP"], ["hybrid", "bm25", "AP"]]
    want = preval.compare(
        preval.evaluate("fixtures/example.parquet", ["AP"], by="system"), baseline="bm25"
    )
    assert [float(r[3]) for r in rows[1:]] == pytest.approx(want["delta"].to_list(), abs=5e-5)
    rc = main(["evaluate", "fixtures/example.parquet", "-m", "AP", "--compare"])
    _, err = capsys.readouterr()
    assert rc == 2 and "--compare needs exactly one --by column" in err


def test_the_comparison_plot(tmp_path: Path) -> None:
    from preval.plot import compare_plot

    table = per_query(random_systems(40, 2))
    out = compare_plot(table, tmp_path / "cmp.png", measure="AP", baseline="a")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left beside it
    with pytest.raises(preval.InputError, match="baseline 'z' is not a system"):
        compare_plot(table, tmp_path / "x.svg", measure="AP", baseline="z")
    with pytest.raises(preval.InputError, match="picture format"):
        compare_plot(table, tmp_path / "x.txt", measure="AP")
    rc = main(
        ["compare", "fixtures/example.parquet", "-m", "AP", "--plot", str(tmp_path / "c.svg")]
    )
    assert rc == 0 and (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")


# --- agreement with ranx's compare ----------------------------------------------------------
# ranx 0.3.21 (`ranx.compare`, the version pinned in the bench extra) on tests/data/compare:
# three tie-free TREC runs a, b, c of 40 queries (c lacks q40) and their qrels. Conventions:
# - stat_test="student" is scipy's ttest_rel, two-sided: preval's test="t", to 1e-12.
# - stat_test="fisher" swaps each query's two scores with probability 1/2 (a sign flip of the
#   difference), n_permutations times (default 1000), and returns b / R, two-sided (|mean
#   difference| >= the observed one). preval counts the same event and returns (b + 1) / (R + 1)
#   (never 0), so the two estimate the same exact p-value and differ by Monte-Carlo error
#   plus at most 1 / (R + 1). ranx's random_seed does not make its p-values reproducible
#   (numba's generator: two runs of the script give different p-values), hence a tolerance.
# - a query a run lacks: ranx raises unless make_comparable=True, which scores it 0; preval
#   scores it 0 already when evaluating (queries="judged", trec_eval -c), as missing="zero".
# - every pair is compared (no baseline); ranx corrects nothing (correction="none").
# The numbers: `python benchmarks/peers/ranx_compare_golden.py` (100,000 permutations).
COMPARE_DATA = Path(__file__).resolve().parent / "data" / "compare"
RANX_MEANS = {  # report.results[run][metric], identical for both tests
    ("a", "AP"): 0.4798219311352428, ("a", "nDCG@10"): 0.5330844684209948,
    ("a", "RR"): 0.874404761904762, ("b", "AP"): 0.598853138173755,
    ("b", "nDCG@10"): 0.6597008616672063, ("b", "RR"): 0.9708333333333332,
    ("c", "AP"): 0.5245853171374681, ("c", "nDCG@10"): 0.602415565818436, ("c", "RR"): 0.94375,
}  # fmt: skip
RANX_STUDENT = {  # report.comparisons[x, y][metric]["p_value"], stat_test="student"
    ("a", "b", "AP"): 0.0018815275287088842, ("a", "b", "nDCG@10"): 0.0009379904868088795,
    ("a", "b", "RR"): 0.05293758920738218, ("a", "c", "AP"): 0.2325949827312021,
    ("a", "c", "nDCG@10"): 0.08879449951048565, ("a", "c", "RR"): 0.2251318317691005,
    ("b", "c", "AP"): 0.04544740772690192, ("b", "c", "nDCG@10"): 0.06937397735676314,
    ("b", "c", "RR"): 0.500776649086026,
}  # fmt: skip
RANX_PERMUTATIONS = 100_000
RANX_FISHER = {  # the same, stat_test="fisher", n_permutations=100_000
    ("a", "b", "AP"): 0.00167, ("a", "b", "nDCG@10"): 0.00067, ("a", "b", "RR"): 0.07009,
    ("a", "c", "AP"): 0.23046, ("a", "c", "nDCG@10"): 0.08987, ("a", "c", "RR"): 0.23601,
    ("b", "c", "AP"): 0.04553, ("b", "c", "nDCG@10"): 0.0684, ("b", "c", "RR"): 0.56337,
}  # fmt: skip
RANX_METRICS = {"AP": "map", "nDCG@10": "ndcg@10", "RR": "mrr"}


def tie_free_per_query() -> pl.DataFrame:
    runs = [COMPARE_DATA / f"{name}.run" for name in "abc"]
    return preval.evaluate(
        runs, list(RANX_METRICS), qrels=COMPARE_DATA / "qrels.txt", input_format="trec"
    ).collect()


def by_pair(result: pl.DataFrame) -> dict[tuple[str, str, str], dict]:
    """preval's rows keyed as ranx's pairs: (baseline, system, measure), baseline first."""
    return {(r["baseline"], r["system"], r["measure"]): r for r in result.iter_rows(named=True)}


def monte_carlo_tolerance(p: float, *resamples: int) -> float:
    """4 standard errors of the difference of independent estimates of p (binomial, one per
    number of resamples), plus the 1 / (R + 1) that (b + 1) / (R + 1) may add."""
    se = math.sqrt(max(p * (1 - p), 1e-12) * sum(1 / r for r in resamples))
    return 4 * se + 1 / (min(resamples) + 1)


def test_the_tie_free_case_has_no_tied_scores_and_a_query_one_run_lacks() -> None:
    run = preval.scan_run([COMPARE_DATA / f"{name}.run" for name in "abc"]).collect()
    scores32 = run.with_columns(pl.col("score").cast(pl.Float32))
    assert scores32.select(pl.struct("system", "query", "score").is_unique().all()).item()
    assert run.group_by("system").agg(pl.col("query").n_unique()).sort("system").rows() == [
        ("a", 40), ("b", 40), ("c", 39)
    ]  # fmt: skip


def test_t_test_and_means_equal_ranx_compare() -> None:
    per_query = tie_free_per_query()
    got = by_pair(preval.compare(per_query, test="t", correction="none"))
    assert set(got) == set(RANX_STUDENT)
    for key, p in RANX_STUDENT.items():
        row = got[key]
        assert row["p_value"] == pytest.approx(p, abs=1e-12, rel=0)
        assert row["queries"] == 40  # q40 counts, scored 0 for c (ranx: make_comparable)
        assert row["baseline_mean"] == pytest.approx(RANX_MEANS[key[0], key[2]], abs=1e-12)
        assert row["mean"] == pytest.approx(RANX_MEANS[key[1], key[2]], abs=1e-12)


def test_randomization_equals_ranx_fisher_within_monte_carlo_error() -> None:
    per_query = tie_free_per_query()
    resamples = 100_000
    got = by_pair(preval.compare(per_query, test="randomization", correction="none",
                                 n_resamples=resamples, seed=0))  # fmt: skip
    for key, p in RANX_FISHER.items():
        tolerance = monte_carlo_tolerance(p, RANX_PERMUTATIONS, resamples)
        assert abs(got[key]["p_value"] - p) <= tolerance, (key, got[key]["p_value"], p)
        # the tolerance would catch a one-sided test (half the p-value) at every p here but
        # the smallest, where 4 standard errors are as wide as p / 2
        if p > 0.01:
            assert tolerance < p / 2


# --- several TREC run files --------------------------------------------------------------------
RUN_FILES = [str(COMPARE_DATA / f"{name}.run") for name in "abc"]
QRELS_FILE = str(COMPARE_DATA / "qrels.txt")


def command_csv(capsys, *argv: str) -> pl.DataFrame:
    rc = main(["compare", *argv, "--format", "csv"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return pl.read_csv(out.encode())


def test_the_command_says_which_run_lacks_judged_queries(capsys) -> None:
    rc = main(["compare", *RUN_FILES, "--qrels", QRELS_FILE, "-m", "AP", "--baseline", "a"])
    _, err = capsys.readouterr()
    assert rc == 0, err
    # c has no line for q40: scored 0 when evaluated, so compare itself finds no gap
    assert "judged queries a run did not answer, scored 0 for it (trec_eval -c): c: 1\n" in err
    assert "40 queries per comparison" in err
    # none filled by compare: not said ('up to 0 present for one system only' read as a
    # contradiction of the line above)
    assert "preval: 40 queries per comparison (judged queries, as trec_eval -c)\n" in err
    rc = main(["compare", *RUN_FILES[:2], "--qrels", QRELS_FILE, "-m", "AP"])
    _, err = capsys.readouterr()
    assert rc == 0 and "did not answer" not in err


def test_the_command_compares_trec_run_files_named_by_their_tags(capsys) -> None:
    got = command_csv(capsys, *RUN_FILES, "--qrels", QRELS_FILE, "-m", "AP", "-m", "nDCG@10",
                      "-m", "RR", "--baseline", "a", "--correction", "none")  # fmt: skip
    assert got.select("system", "baseline").unique(maintain_order=True).rows() == [
        ("b", "a"), ("c", "a")
    ]  # fmt: skip
    for row in got.iter_rows(named=True):  # the same numbers as ranx's compare (above)
        key = ("a", row["system"], row["measure"])
        assert row["p_value"] == pytest.approx(RANX_STUDENT[key], abs=1e-12, rel=0)
        assert row["mean"] == pytest.approx(RANX_MEANS[row["system"], row["measure"]], abs=1e-12)
        assert row["queries"] == 40
    # the baseline may be named by its file; a qrels table reads as the TREC qrels file
    by_file = command_csv(capsys, *RUN_FILES, "--qrels", QRELS_FILE, "-m", "AP", "-m",
                          "nDCG@10", "-m", "RR", "--baseline", RUN_FILES[0], "--correction",
                          "none")  # fmt: skip
    assert by_file.equals(got)


def test_run_files_with_one_tag_are_named_by_their_paths(tmp_path: Path, capsys) -> None:
    # the tag of every line of both copies is "a": trec_eval would print the same runid twice
    first, second = tmp_path / "first.run", tmp_path / "second.run"
    first.write_bytes(Path(RUN_FILES[0]).read_bytes())
    second.write_text(Path(RUN_FILES[1]).read_text().replace(" b\n", " a\n"))
    qrels = tmp_path / "qrels.csv"
    preval.scan_qrels(QRELS_FILE).collect().write_csv(qrels)
    got = command_csv(capsys, str(first), str(second), "--qrels", str(qrels), "-m", "AP",
                      "--baseline", str(first))  # fmt: skip
    assert got.select("system", "baseline").row(0) == (str(second), str(first))
    assert got["p_value"][0] == pytest.approx(RANX_STUDENT["a", "b", "AP"], abs=1e-12)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([RUN_FILES[0], "nope.run", "--qrels", QRELS_FILE], "run file not found: nope.run"),
        ([*RUN_FILES[:2], "--qrels", "nope.txt"], "qrels file not found: nope.txt"),
        ([RUN_FILES[0], RUN_FILES[0], "--qrels", QRELS_FILE],
         f"run file {RUN_FILES[0]} is given twice"),
        (["fixtures/example.parquet", RUN_FILES[0], "--qrels", QRELS_FILE],
         "fixtures/example.parquet is a table (.parquet) and"),
        ([RUN_FILES[0], "fixtures/example.parquet"], "is a table (.parquet) and"),
        (RUN_FILES[:2], f"TREC run file {RUN_FILES[0]}: give its judgments with --qrels"),
        ([RUN_FILES[0], "--qrels", QRELS_FILE], "is one system: give two or more run files"),
        ([*RUN_FILES[:2], "--qrels", QRELS_FILE, "--per-query-table"], "--per-query-table"),
        ([QRELS_FILE, "--per-query-table"], "per-query table: cannot tell the format"),
        ([*RUN_FILES[:2], "--qrels", QRELS_FILE, "--by", "team"], "--by team: TREC run files"),
        ([*RUN_FILES[:2], "--qrels", QRELS_FILE, "--format", "parquet"],
         "write it to a file with --output comparison.parquet"),
    ],
)  # fmt: skip
def test_bad_run_file_requests_are_clear_errors(argv: list[str], message: str, capsys) -> None:
    rc = main(["compare", *argv])
    _, err = capsys.readouterr()
    assert rc == 2
    assert err.startswith("preval: error: ") and message in err, err
    assert "Traceback" not in err


def test_the_output_suffix_chooses_parquet(tmp_path: Path, capsys) -> None:
    out = tmp_path / "comparison.parquet"
    got = command_csv(capsys, *RUN_FILES, "--qrels", QRELS_FILE, "-m", "AP", "--output", str(out))
    written = pl.read_parquet(out)
    assert written.columns == got.columns
    assert written["p_value"].to_list() == pytest.approx(got["p_value"].to_list(), abs=1e-12)


# --- what the command prints: one number format per column, LaTeX with booktabs --------------

FIXED, SCIENTIFIC = re.compile(r"-?\d+\.\d{4}"), re.compile(r"-?\d\.\de[-+]\d+")


def number_format(cell: str) -> str:
    if FIXED.fullmatch(cell):
        return "fixed"
    if SCIENTIFIC.fullmatch(cell):
        return "scientific"
    return "integer" if cell.lstrip("-").isdigit() else "text"


def test_each_column_of_the_table_has_one_number_format(tmp_path: Path, capsys) -> None:
    # b gains a lot on a (p far below 0.0001), c a little (p far above): both in one column
    rng = np.random.default_rng(7)
    base = rng.random(60)
    values = {"a": base.tolist(), "b": np.clip(base + 0.3, 0, 1).tolist(),
              "c": np.clip(base + rng.normal(0, 0.05, 60), 0, 1).tolist()}  # fmt: skip
    path = tmp_path / "per_query.csv"
    per_query(values).write_csv(path)
    exact = command_csv(capsys, str(path), "--per-query-table", "--baseline", "a")
    assert exact["p_value"].min() < 1e-4 <= exact["p_value"].max()
    assert main(["compare", str(path), "--per-query-table", "--baseline", "a"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    header, rows = lines[0].split(), [line.split() for line in lines[1:]]
    for i, name in enumerate(header):
        cells = [r[i] for r in rows if r[i] != "-"]
        assert len({number_format(c) for c in cells}) == 1, (name, cells)
    column = [r[header.index("p_value")] for r in rows]
    assert all(SCIENTIFIC.fullmatch(c) for c in column), column
    assert [float(c) for c in column] == pytest.approx(exact["p_value"].to_list(), rel=0.05)


def test_the_latex_table_is_a_booktabs_float_with_caption_and_label(capsys) -> None:
    table = pl.read_parquet("fixtures/example.parquet").with_columns(
        pl.col("system").replace({"bm25": "bm25_rm3"})
    )
    rc = main(["compare", "fixtures/example.parquet", "-m", "AP", "--format", "latex"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("%") and "\\usepackage{booktabs}" in lines[0]
    assert lines[1:3] == ["\\begin{table}", "\\centering"]
    assert lines[3].startswith("\\caption{Mean AP per system. Superscripts:")
    assert lines[4] == "\\label{tab:preval-compare}"
    for command in ("\\toprule", "\\midrule", "\\bottomrule"):
        assert lines.count(command) == 1
    assert lines[-2:] == ["\\end{tabular}", "\\end{table}"]
    # names are escaped: an underscore would end the document's compilation
    per_query = preval.evaluate(table, ["AP"], by="system").collect()
    from preval.report import paper_table

    text = paper_table(preval.compare(per_query), "latex", test="t", correction="holm",
                       alpha=0.05)  # fmt: skip
    assert "(a) bm25\\_rm3 &" in text and "bm25_rm3" not in text


def test_the_command_says_how_many_queries_it_filled(tmp_path, capsys) -> None:
    table = tmp_path / "per_query.csv"
    table.write_text("system,query,AP\na,q1,0.5\na,q2,0.25\nb,q1,0.75\n")
    rc = main(["compare", str(table), "--per-query-table", "--baseline", "a"])
    _, err = capsys.readouterr()
    assert rc == 0, err
    assert "; up to 1 present for one system only (scored 0 for the system that lacks them)" in err
