"""Power and query-set size of the paired t-test (`preval.power`): against the power written
here from its definition (a normal and a chi-square, integrated; no noncentral t routine), the
minimality of the solved n and delta, a worked example, and the per-pair table and CLI."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

import preval
from preval import power as pw
from preval.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fixtures" / "example.parquet"


def reference_power(delta: float, sd: float, n: int, alpha: float) -> float:
    """The paired two-sided t-test's power from the definition of the noncentral t:
    T' = (Z + lam) / sqrt(V / df), Z standard normal, V chi-square with df = n - 1 degrees of
    freedom, lam = delta / sd * sqrt(n). The test rejects when |T'| > c = t_{1-alpha/2, df}:
    power = E_V[ P(Z > c r - lam) + P(Z < -c r - lam) ], r = sqrt(V / df), integrated over
    the chi-square density."""
    df = n - 1
    lam = delta / sd * math.sqrt(n)
    c = stats.t.ppf(1 - alpha / 2, df)

    def inner(v: float) -> float:
        r = math.sqrt(v / df)
        return (stats.norm.sf(c * r - lam) + stats.norm.cdf(-c * r - lam)) * stats.chi2.pdf(v, df)

    total, _ = integrate.quad(inner, 0, np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)
    return total


@pytest.mark.parametrize(
    ("delta", "sd", "n", "alpha"),
    [
        (0.5, 1.0, 34, 0.05),
        (0.02, 0.2, 300, 0.05),
        (0.05, 0.3, 50, 0.01),
        (0.1, 0.15, 10, 0.1),
        (-0.03, 0.2, 120, 0.05),
        (0.0, 0.2, 40, 0.05),
    ],
)
def test_power_is_the_noncentral_t_definition(delta, sd, n, alpha) -> None:
    got = float(pw.paired_t_power(delta, sd, n, alpha=alpha))
    assert got == pytest.approx(reference_power(delta, sd, n, alpha), abs=1e-8)


@settings(max_examples=30, deadline=None)
@given(
    st.floats(0.005, 0.3),
    st.floats(0.05, 0.4),
    st.sampled_from([0.01, 0.05, 0.1]),
    st.sampled_from([0.5, 0.8, 0.9, 0.95]),
)
def test_queries_needed_is_the_least_n_with_the_power(delta, sd, alpha, power) -> None:
    n = int(pw.queries_needed(delta, sd, alpha=alpha, power=power))
    assert (
        stats.nct.sf(stats.t.ppf(1 - alpha / 2, n - 1), n - 1, delta / sd * math.sqrt(n))
        + (
            np.nan_to_num(
                stats.nct.cdf(-stats.t.ppf(1 - alpha / 2, n - 1), n - 1, delta / sd * math.sqrt(n))
            )
        )
        >= power
    )
    if n > 2:  # and one query fewer falls short
        assert float(pw.paired_t_power(delta, sd, n - 1, alpha=alpha)) < power


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 2000), st.floats(0.05, 0.4), st.sampled_from([0.8, 0.9]))
def test_the_detectable_difference_has_exactly_the_power(n, sd, power) -> None:
    d = float(pw.detectable_difference(n, sd, power=power))
    assert float(pw.paired_t_power(d, sd, n)) == pytest.approx(power, abs=1e-9)
    assert float(pw.paired_t_power(d * 0.99, sd, n)) < power  # the smallest such difference
    if n < 1000:  # solved both ways: the queries needed for that difference are n
        assert pw.queries_needed(d * (1 + 1e-9), sd, power=power) == n


def test_a_worked_example_and_sakais_approximation() -> None:
    # A standardized difference of 0.5 (delta 0.5, sd 1), alpha 0.05 two-sided, power 0.8:
    # the normal approximation n = ((z_.975 + z_.80) / 0.5)^2 = (2.8016 / 0.5)^2 = 31.40, plus
    # z_.975^2 / 2 = 1.92 for the t distribution's heavier tails (Sakai 2016, "Topic set size
    # design", the paired t-test's formula after Nagata 2003): 33.32, so about 34 queries;
    # with the exact power, 33 queries give 0.7954 and 34 give 0.8078 (Cohen 1988's tables:
    # n = 34 for d = 0.5). For d = 0.2: 196.2 + 1.92 = 198.1 -> 199; for d = 0.8: 12.3 + 1.92
    # = 14.2 -> 15.
    assert pw.queries_needed(0.5, 1.0) == 34
    assert float(pw.paired_t_power(0.5, 1.0, 33)) == pytest.approx(0.7954, abs=1e-4)
    assert float(pw.paired_t_power(0.5, 1.0, 34)) == pytest.approx(0.8078, abs=1e-4)
    assert pw.queries_needed(0.2, 1.0) == 199
    assert pw.queries_needed(0.8, 1.0) == 15
    z_a, z_b = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    for d in (0.1, 0.2, 0.3, 0.5, 0.8):
        approx = ((z_a + z_b) / d) ** 2 + z_a**2 / 2
        assert abs(pw.queries_needed(d, 1.0) - math.ceil(approx)) <= 1


def test_edge_cases() -> None:
    assert np.isnan(pw.queries_needed(0.0, 0.2))  # nothing to detect
    assert pw.queries_needed(0.1, 0.0) == 2  # no variance: any difference shows at once
    assert np.isnan(pw.detectable_difference(1, 0.2))  # one query: no test
    assert pw.detectable_difference(30, 0.0) == 0.0
    with pytest.raises(preval.InputError, match="power must be between"):
        pw.queries_needed(0.1, 0.2, power=0.01)
    with pytest.raises(preval.InputError, match="alpha must be between"):
        pw.detectable_difference(30, 0.2, alpha=1.5)


def test_analysis_per_pair_of_systems() -> None:
    per_query = preval.evaluate(EXAMPLE, ["AP", "P@10", "NumRet"], by="system").collect()
    got = pw.analysis(per_query, delta=0.02, alpha=0.05, power=0.8).collect()
    assert got.columns == [
        "system",
        "baseline",
        "measure",
        "queries",
        "delta_observed",
        "sd",
        "detectable",
        "power_observed",
        "queries_needed",
    ]
    assert sorted(set(got["measure"])) == ["AP", "P@10"]  # counts are not tested
    wide = per_query.pivot(on="system", index="query", values="AP")
    for row in got.filter(pl.col("measure") == "AP").iter_rows(named=True):
        d = (wide[row["system"]] - wide[row["baseline"]]).to_numpy()
        assert row["queries"] == d.size
        assert row["delta_observed"] == pytest.approx(d.mean(), abs=1e-12)
        assert row["sd"] == pytest.approx(d.std(ddof=1), abs=1e-12)
        want = pw.detectable_difference(d.size, d.std(ddof=1))
        assert row["detectable"] == pytest.approx(float(want), abs=1e-12)
        assert row["queries_needed"] == pw.queries_needed(0.02, d.std(ddof=1))
    compared = preval.compare(per_query, measures="AP").sort("system", "baseline")
    mine = got.filter(pl.col("measure") == "AP").sort("system", "baseline")
    assert np.allclose(mine["delta_observed"], compared["delta"], atol=1e-12)


def test_analysis_with_a_baseline_a_given_sd_and_missing_values() -> None:
    table = pl.DataFrame(
        {
            "system": ["a"] * 5 + ["b"] * 5 + ["c"] * 4,
            "query": [*"vwxyz", *"vwxyz", *"vwxy"],
            "AP": [0.1, 0.2, 0.3, 0.4, 0.5, 0.2, 0.2, None, 0.6, 0.9, 0.0, 0.1, 0.2, 0.3],
        }
    )
    got = pw.analysis(table, baseline="a", sd=0.25).collect()
    assert got["system"].to_list() == ["b", "c"]
    # b: queries both have a value (x is null for b): v w y z; c lacks z
    assert got["queries"].to_list() == [4, 4]
    assert got["sd"].to_list() == [0.25, 0.25]
    assert got["delta_observed"].to_list() == pytest.approx([(0.1 + 0 + 0.2 + 0.4) / 4, -0.1])


def test_building_the_analysis_collects_nothing() -> None:
    calls = []

    def seen(df: pl.DataFrame) -> pl.DataFrame:
        calls.append(1)
        return df

    frame = preval.evaluate(EXAMPLE, ["AP"], by="system").collect()
    plan = pw.analysis(frame.lazy().map_batches(seen, schema=frame.schema))
    assert calls == []
    assert plan.collect().height == 3 and calls


def test_cli_power(capsys, tmp_path) -> None:
    per_query = tmp_path / "per_query.parquet"
    preval.evaluate(EXAMPLE, ["AP", "P@10"], by="system").sink_parquet(per_query)
    out = tmp_path / "power.csv"
    assert (
        main(
            [
                "power",
                str(per_query),
                "--per-query-table",
                "--measure",
                "AP",
                "--delta",
                "0.02",
                "--baseline",
                "bm25",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].split()[:4] == ["system", "baseline", "measure", "queries"]
    assert "alpha 0.05, power 0.8" in captured.err
    want = pw.analysis(per_query, measures="AP", baseline="bm25", delta=0.02).collect()
    written = pl.read_csv(out)
    assert written["queries_needed"].to_list() == want["queries_needed"].to_list()
    assert np.allclose(written["detectable"], want["detectable"], atol=1e-12)
    assert main(["power", str(per_query), "--per-query-table", "--power", "1.5"]) == 2
    assert "power must be between" in capsys.readouterr().err


def test_cli_power_evaluates_what_compare_reads(capsys) -> None:
    # the input grammar of compare and agreement: a joined table is evaluated first, with the
    # same numbers as the library's evaluation followed by the analysis
    assert main(["power", str(EXAMPLE), "-m", "AP", "--baseline", "bm25", "--format", "csv"]) == 0
    got = pl.read_csv(io.StringIO(capsys.readouterr().out))
    per_query = preval.evaluate(EXAMPLE, ["AP"], by="system")
    want = pw.analysis(per_query, measures="AP", baseline="bm25").collect()
    assert got["system"].to_list() == want["system"].to_list()
    assert np.allclose(got["detectable"], want["detectable"], atol=1e-9)
    fixtures = EXAMPLE.parent / "trec"
    runs = [str(fixtures / "bm25.run"), str(fixtures / "hybrid.run.gz")]
    assert main(["power", *runs, "--qrels", str(fixtures / "qrels.txt"), "-m", "AP"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:3] == ["hybrid", "bm25", "AP"]


def test_measures_come_in_the_order_asked(capsys) -> None:
    # they came sorted by name (AP before P@10), where evaluate and compare keep the order
    # asked; a measure asked twice comes once (it was Polars' duplicate-column error)
    per_query = preval.evaluate(EXAMPLE, ["P@10", "AP", "nDCG@10"], by="system").collect()
    got = pw.analysis(per_query, measures=["P@10", "AP", "P@10"]).collect()
    assert list(dict.fromkeys(got["measure"])) == ["P@10", "AP"]
    assert got.height == 6  # 3 pairs of systems each
    compared = preval.compare(per_query, measures=["P@10", "AP"])
    assert got.select("system", "baseline", "measure").equals(
        compared.select("system", "baseline", "measure")
    )
    everything = pw.analysis(per_query).collect()  # the table's own order, as compare's
    assert list(dict.fromkeys(everything["measure"])) == ["P@10", "AP", "nDCG@10"]
    assert main(["power", str(EXAMPLE), "-m", "P@10", "-m", "AP", "--format", "csv"]) == 0
    shown = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(dict.fromkeys(shown["measure"])) == ["P@10", "AP"]
