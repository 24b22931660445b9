"""preval.risk and preval.risk_summary: URisk and TRisk equal hand-derived cases and a
plain-numpy reference (with queries a system or the baseline lacks), TRisk equals scipy's
one-sample t-test on the risk-adjusted values, URisk with alpha 0 is compare's delta, and the
per-query frame is a lazy plan. preval.georisk: ZRisk and GeoRisk equal a hand-derived case and
a plain-numpy reference, and refuse what they cannot score."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

import preval
from preval.cli import main

from .profiles import examples

ROOT = Path(__file__).resolve().parents[1]


def table(values: dict[str, list[float | None]], measure: str = "nDCG@10") -> pl.DataFrame:
    """One row per (system, query i) with a value; None: no row."""
    rows = [(s, f"q{i}", v) for s, vs in values.items() for i, v in enumerate(vs) if v is not None]
    return pl.DataFrame(rows, schema=["system", "query", measure], orient="row")


def test_hand_derived() -> None:
    # baseline 0.5, 0.2, 0.4; run 0.8, 0.1, 0.4 -> delta 0.3, -0.1, 0 (a win, a loss, a tie).
    # alpha = 1: the loss counts twice, r = 0.3, -0.2, 0; URisk = 0.1/3 = 1/30.
    # sd of r (ddof 1): deviations 0.3 - 1/30 = 8/30, -0.2 - 1/30 = -7/30, -1/30;
    # squares (64 + 49 + 1)/900 = 114/900; / 2 = 57/900; sd = sqrt(57)/30;
    # SE = sd/sqrt(3) = sqrt(19)/30; TRisk = (1/30)/(sqrt(19)/30) = 1/sqrt(19).
    data = table({"bm25": [0.5, 0.2, 0.4], "run": [0.8, 0.1, 0.4]})
    per_query = preval.risk(data, baseline="bm25", alpha=1).collect()
    assert per_query["risk"].to_list() == pytest.approx([0.3, -0.2, 0.0])
    assert per_query["delta"].to_list() == pytest.approx([0.3, -0.1, 0.0])
    row = preval.risk_summary(data, baseline="bm25", alpha=1).collect().row(0, named=True)
    assert row["urisk"] == pytest.approx(1 / 30)
    assert row["se"] == pytest.approx(math.sqrt(19) / 30)
    assert row["trisk"] == pytest.approx(1 / math.sqrt(19))
    assert (row["wins"], row["ties"], row["losses"], row["queries"]) == (1, 1, 1, 3)
    # alpha = 5 (a Web track setting): r = 0.3, -0.6, 0; URisk = -0.3/3 = -0.1: riskier than
    # the baseline although its mean difference, 0.2/3, is positive.
    row = preval.risk_summary(data, baseline="bm25", alpha=5).collect().row(0, named=True)
    assert row["urisk"] == pytest.approx(-0.1)
    assert row["delta"] == pytest.approx(0.2 / 3)
    # alpha = 0: URisk is the mean difference
    row = preval.risk_summary(data, baseline="bm25", alpha=0).collect().row(0, named=True)
    assert row["urisk"] == pytest.approx(0.2 / 3)


def test_trisk_standard_error_divides_by_n_minus_1() -> None:
    # The convention pinned: s_r with ddof 1. Dinçer, Macdonald & Ounis (SIGIR 2014) read
    # TRisk as the statistic of Student's t-test for matched pairs, whose variance divides by
    # n - 1, and the authors' own code (jforests TRiskAwareSAROEval.getEstimates) computes
    # (sum r^2 - (sum r)^2 / n) / (n - 1); RMIT's trisk script divides by n instead.
    # Baseline 0.5 on four queries, run 0.7, 0.7, 0.4, 0.9: delta 0.2, 0.2, -0.1, 0.4;
    # alpha = 1: r = 0.2, 0.2, -0.2, 0.4; URisk = 0.6/4 = 0.15.
    # Deviations 0.05, 0.05, -0.35, 0.25; squares 0.0025 + 0.0025 + 0.1225 + 0.0625 = 0.19.
    # ddof 1: s_r^2 = 0.19/3, SE = sqrt(0.19/3)/sqrt(4) = sqrt(0.19/12) ~ 0.12583;
    #         TRisk = 0.15/sqrt(0.19/12) ~ 1.19208, p = 2 P(T_3 > 1.19208).
    # ddof 0 would give SE = sqrt(0.19/16), TRisk = 0.6/sqrt(0.19) ~ 1.37649 (x sqrt(4/3)).
    data = table({"bm25": [0.5] * 4, "run": [0.7, 0.7, 0.4, 0.9]})
    row = preval.risk_summary(data, baseline="bm25", alpha=1).collect().row(0, named=True)
    assert row["urisk"] == pytest.approx(0.15)
    assert row["se"] == pytest.approx(math.sqrt(0.19 / 12))
    assert row["trisk"] == pytest.approx(0.15 / math.sqrt(0.19 / 12))
    assert row["trisk"] == pytest.approx(1.19208, abs=5e-6)
    assert row["trisk"] != pytest.approx(0.6 / math.sqrt(0.19))  # not the population SE
    assert row["p_value"] == pytest.approx(2 * stats.t.sf(0.15 / math.sqrt(0.19 / 12), 3))


def test_a_nan_value_is_null_per_query_and_in_the_summary() -> None:
    # one convention, the significance tests': a pair with a NaN per-query value gets null
    # statistics (preval.compare: delta, p-value ... null). risk() gave the NaN query a NaN
    # delta and r_q while risk_summary nulled the means; now r_q is null there too, the other
    # queries keep theirs, and no NaN is left in either frame.
    nan = float("nan")
    data = table({"bm25": [0.5, 0.2, 0.4, nan], "run": [0.8, nan, 0.4, 0.3],
                  "other": [0.6, 0.3, 0.1, 0.5]})  # fmt: skip
    per_query = preval.risk(data, baseline="bm25", alpha=1).collect()
    run = per_query.filter(system="run")
    # q0: 0.8 - 0.5 = 0.3; q1: the run's NaN; q2: a tie; q3: the baseline's NaN
    assert run["delta"].to_list() == [pytest.approx(0.3), None, 0.0, None]
    assert run["risk"].to_list() == [pytest.approx(0.3), None, 0.0, None]
    other = per_query.filter(system="other")  # no NaN of its own: only q3, the baseline's
    assert other["risk"].to_list() == [pytest.approx(0.1), pytest.approx(0.1),
                                       pytest.approx(-0.6), None]  # fmt: skip
    assert not any(per_query[c].is_nan().any() for c in ("delta", "risk"))
    summary = preval.risk_summary(data, baseline="bm25", alpha=1).collect()
    compared = preval.compare(data, baseline="bm25")
    for system in ("run", "other"):
        row = summary.filter(system=system).row(0, named=True)
        assert (row["delta"], row["urisk"], row["se"], row["trisk"], row["p_value"]) == (
            (None,) * 5
        )
        got = compared.filter(system=system).row(0, named=True)
        assert got["delta"] is None and got["p_value"] is None  # compare's rule, the same
    row = summary.filter(system="run").row(0, named=True)
    assert (row["queries"], row["wins"], row["ties"], row["losses"]) == (4, 1, 1, 0)


def test_missing_queries_hand_derived() -> None:
    # q0: both; q1: the run lacks it (0 for it: delta -0.5); q2: only the run (baseline 0:
    # delta 0.25). alpha = 2: r = 0.1, -1.5, 0.25; URisk = -1.15/3. With "drop" only q0.
    data = table({"bm25": [0.3, 0.5, None], "run": [0.4, None, 0.25]})
    per_query = preval.risk(data, baseline="bm25", alpha=2).collect()
    assert per_query["query"].to_list() == ["q0", "q1", "q2"]
    assert per_query["risk"].to_list() == pytest.approx([0.1, -1.5, 0.25])
    assert per_query["filled"].to_list() == [False, True, True]
    row = preval.risk_summary(data, baseline="bm25", alpha=2).collect().row(0, named=True)
    assert row["urisk"] == pytest.approx(-1.15 / 3)
    dropped = preval.risk_summary(data, baseline="bm25", alpha=2, missing="drop").collect()
    assert dropped["queries"][0] == 1 and dropped["urisk"][0] == pytest.approx(0.1)
    assert dropped["trisk"][0] is None  # one query: no standard deviation


def reference(values: dict[str, list[float | None]], baseline: str, alpha: float, missing: str):
    """Plain numpy: the query universe of compare (any system's queries, or every system's),
    0 for a lacking value, r = delta or (1 + alpha) delta, URisk = mean, TRisk = mean / (sd/√n)."""
    matrix = np.array([[np.nan if v is None else v for v in vs] for vs in values.values()])
    present = ~np.isnan(matrix)
    keep = present.all(axis=0) if missing == "drop" else present.any(axis=0)
    x = np.nan_to_num(matrix[:, keep])
    names = list(values)
    out = {}
    for k, name in enumerate(names):
        if name == baseline:
            continue
        delta = x[k] - x[names.index(baseline)]
        r = np.where(delta >= 0, delta, (1 + alpha) * delta)
        n = r.size
        sd = r.std(ddof=1) if n > 1 else np.nan
        se = sd / np.sqrt(n) if n > 1 else np.nan
        # (equal values may leave a standard deviation of rounding error, not 0)
        t = r.mean() / se if n > 1 and se > 1e-12 else None
        out[name] = (n, r.mean() if n else None, t, delta)
    return out


@settings(max_examples=examples(100), deadline=None)
@given(
    st.integers(1, 8),
    st.integers(2, 4),
    st.sampled_from(["zero", "drop"]),
    st.floats(0, 10),
    st.integers(0, 10**6),
)
def test_equals_plain_numpy(queries, systems, missing, alpha, seed) -> None:
    rng = np.random.default_rng(seed)
    values = {
        f"s{k}": [None if rng.random() < 0.15 else float(np.round(rng.random(), 1))
                  for _ in range(queries)]
        for k in range(systems)
    }  # fmt: skip
    # a system is a name with a row: one without any is no system of the table
    assume(all(any(v is not None for v in vs) for vs in values.values()))
    expected = reference(values, "s0", alpha, missing)
    got = preval.risk_summary(table(values), baseline="s0", alpha=alpha, missing=missing)
    got = {r["system"]: r for r in got.collect().iter_rows(named=True)}
    for name, (n, urisk, trisk, delta) in expected.items():
        if n == 0:
            assert name not in got
            continue
        row = got[name]
        assert row["queries"] == n
        assert row["urisk"] == pytest.approx(urisk, abs=1e-12)
        if n < 2:
            assert row["trisk"] is None and row["se"] is None
        elif trisk is not None:
            assert row["trisk"] == pytest.approx(trisk, rel=1e-9, abs=1e-9)
        assert row["wins"] == int((delta > 0).sum()) and row["losses"] == int((delta < 0).sum())


def test_trisk_is_scipys_one_sample_t_test() -> None:
    rng = np.random.default_rng(5)
    base = rng.random(50)
    run = np.clip(base + rng.normal(0.03, 0.2, 50), 0, 1)
    data = table({"base": base.tolist(), "run": run.tolist()})
    row = preval.risk_summary(data, baseline="base", alpha=1).collect().row(0, named=True)
    delta = run - base
    r = np.where(delta >= 0, delta, 2 * delta)
    test = stats.ttest_1samp(r, 0.0)
    assert row["trisk"] == pytest.approx(test.statistic, rel=1e-12)
    assert row["p_value"] == pytest.approx(test.pvalue, rel=1e-9)


def test_alpha_zero_is_compares_delta_and_t_test() -> None:
    rng = np.random.default_rng(9)
    values = {s: rng.random(40).round(2).tolist() for s in ("a", "b", "c")}
    values["b"][3] = None  # a query b lacks: scored 0 for it by both
    data = table(values, "AP")
    compared = preval.compare(data, baseline="a", test="t", correction="none")
    risk = preval.risk_summary(data, baseline="a", alpha=0).collect()
    joined = compared.join(risk, on=["system", "measure"])
    assert joined.height == 2
    assert joined["urisk"].to_list() == pytest.approx(joined["delta"].to_list(), abs=1e-15)
    assert joined["p_value_right"].to_list() == pytest.approx(joined["p_value"].to_list())


def test_every_rate_by_default_and_lazy() -> None:
    calls = []

    def counted(df: pl.DataFrame) -> pl.DataFrame:
        calls.append(df.height)
        return df

    data = table({"a": [0.1, 0.2], "b": [0.3, 0.1]}).with_columns(
        pl.col("nDCG@10").alias("AP"), pl.lit(3).alias("NumRet")
    )
    lazy = data.lazy().map_batches(counted, schema=data.schema)
    per_query = preval.risk(lazy, baseline="a")
    summary = preval.risk_summary(lazy, baseline="a")
    assert calls == [] and isinstance(per_query, pl.LazyFrame)
    assert sorted(summary.collect()["measure"].to_list()) == ["AP", "nDCG@10"]  # no counts
    assert calls


def test_measures_come_in_the_order_asked() -> None:
    # they came sorted by name (AP before P@10), as power's did, where evaluate and compare
    # keep the order asked; a measure asked twice comes once (its rows came twice)
    per_query = preval.evaluate(
        ROOT / "fixtures" / "example.parquet", ["P@10", "AP"], by="system"
    ).collect()
    asked = ["P@10", "AP", "P@10"]
    summary = preval.risk_summary(per_query, baseline="bm25", measures=asked).collect()
    assert summary.select("system", "measure").rows() == [
        ("dense", "P@10"), ("hybrid", "P@10"), ("dense", "AP"), ("hybrid", "AP")
    ]  # fmt: skip
    rows = preval.risk(per_query, baseline="bm25", measures=asked).collect()
    assert rows.height == 2 * 2 * 300
    assert rows.filter(system="dense")["measure"].unique(maintain_order=True).to_list() == [
        "P@10", "AP"
    ]  # fmt: skip
    compared = preval.compare(per_query, baseline="bm25", measures=["P@10", "AP"])
    assert summary.select("system", "measure").equals(compared.select("system", "measure"))
    # georisk: the same order, a measure asked twice once (its systems' rows came twice)
    scores = preval.georisk(per_query, measures=asked).collect()
    assert scores.select("measure", "system").rows() == [
        (m, s) for m in ("P@10", "AP") for s in ("bm25", "dense", "hybrid")
    ]


def test_bad_input() -> None:
    data = table({"a": [0.1], "b": [0.2]})
    with pytest.raises(preval.InputError, match="baseline 'z' is not a system"):
        preval.risk(data, baseline="z").collect()
    with pytest.raises(preval.InputError, match="at least 0"):
        preval.risk(data, baseline="a", alpha=-1)
    with pytest.raises(preval.InputError, match="no measure column 'AP'"):
        preval.risk(data, baseline="a", measures="AP")


def test_cli_compare_risk(capsys) -> None:
    rc = main(["compare", "fixtures/example.parquet", "-m", "AP", "--baseline", "bm25",
               "--risk", "5", "--format", "csv"])  # fmt: skip
    out, _ = capsys.readouterr()
    assert rc == 0
    got = pl.read_csv(out.encode())
    pq = preval.evaluate("fixtures/example.parquet", ["AP"], by="system")
    expected = preval.risk_summary(pq, baseline="bm25", alpha=5).collect()
    assert got.sort("system")["urisk"].to_list() == pytest.approx(expected["urisk"].to_list())
    assert got.sort("system")["trisk"].to_list() == pytest.approx(expected["trisk"].to_list())
    rc = main(["compare", "fixtures/example.parquet", "-m", "AP", "--risk", "1"])
    _, err = capsys.readouterr()
    assert rc == 2 and "--baseline" in err


# --- ZRisk and GeoRisk (Dinçer, Macdonald & Ounis, SIGIR 2016) --------------------------------
def phi(x: float) -> float:
    return float(stats.norm.cdf(x))


def test_georisk_hand_derived() -> None:
    # Systems a, b (columns) on queries q0, q1, q2 (rows):
    #   q0: a 0.40, b 0.10  (T = 0.50)
    #   q1: a 0.01, b 0.31  (T = 0.32)
    #   q2: a 0,    b 0     (T = 0: a query every system scores 0)
    # S_a = 0.41, S_b = 0.41, N = 0.82, c = 3; e_ij = S_i T_j / N = T_j / 2:
    #   q0: e = 0.25, √e = 0.5: z_a = (0.40 - 0.25)/0.5 = 0.3, z_b = (0.10 - 0.25)/0.5 = -0.3
    #   q1: e = 0.16, √e = 0.4: z_a = (0.01 - 0.16)/0.4 = -0.375, z_b = 0.375
    #   q2: e = 0: z = 0 by convention (x = 0 = e, as expected; not 0/0)
    # alpha = 1: ZRisk_a = 0.3 + 2(-0.375) = -0.45, ZRisk_b = 2(-0.3) + 0.375 = -0.225;
    # GeoRisk = √(S_i/c · Φ(ZRisk_i/c)) = √(0.41/3 · Φ(-0.15)) and √(0.41/3 · Φ(-0.075)).
    # alpha = 0: ZRisk = Σ z: -0.075 and 0.075.
    data = table({"a": [0.40, 0.01, 0.0], "b": [0.10, 0.31, 0.0]})
    got = preval.georisk(data, alpha=1).collect()
    assert got["system"].to_list() == ["a", "b"]
    assert got["queries"].to_list() == [3, 3]
    assert got["mean"].to_list() == pytest.approx([0.41 / 3] * 2)
    assert got["zrisk"].to_list() == pytest.approx([-0.45, -0.225])
    expected = [math.sqrt(0.41 / 3 * phi(-0.15)), math.sqrt(0.41 / 3 * phi(-0.075))]
    assert got["georisk"].to_list() == pytest.approx(expected, rel=1e-12)
    assert got["alpha"].to_list() == [1.0, 1.0]
    got = preval.georisk(data, alpha=0).collect()
    assert got["zrisk"].to_list() == pytest.approx([-0.075, 0.075])


def georisk_reference(values: dict[str, list[float | None]], alpha: float, missing: str):
    """Plain numpy, the paper's formulas on the systems x queries matrix of compare's query
    universe (0 for a lacking value): system -> (c, mean, ZRisk, GeoRisk)."""
    matrix = np.array([[np.nan if v is None else v for v in vs] for vs in values.values()])
    present = ~np.isnan(matrix)
    keep = present.all(axis=0) if missing == "drop" else present.any(axis=0)
    x = np.nan_to_num(matrix[:, keep])
    c = x.shape[1]
    if c == 0:
        return {}
    s, t, n = x.sum(axis=1), x.sum(axis=0), x.sum()
    e = np.outer(s, t) / n if n > 0 else np.zeros_like(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(e > 0, (x - e) / np.sqrt(e), 0.0)
    zrisk = np.where(z >= 0, z, (1 + alpha) * z).sum(axis=1)
    geo = np.sqrt(s / c * stats.norm.cdf(zrisk / c))
    return {name: (c, s[k] / c, zrisk[k], geo[k]) for k, name in enumerate(values)}


@settings(max_examples=examples(50), deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 4),
    st.sampled_from(["zero", "drop"]),
    st.floats(0, 10),
    st.integers(0, 10**6),
)
def test_georisk_equals_plain_numpy(queries, systems, missing, alpha, seed) -> None:
    rng = np.random.default_rng(seed)
    # values rounded to 0.1 so that zeros (whole queries or systems at 0) come up
    values = {
        f"s{k}": [None if rng.random() < 0.15 else float(np.round(rng.random(), 1))
                  for _ in range(queries)]
        for k in range(systems)
    }  # fmt: skip
    assume(all(any(v is not None for v in vs) for vs in values.values()))
    expected = georisk_reference(values, alpha, missing)
    got = preval.georisk(table(values), alpha=alpha, missing=missing).collect()
    assert got.height == len(expected)
    for row in got.iter_rows(named=True):
        c, mean, zrisk, geo = expected[row["system"]]
        assert row["queries"] == c
        assert row["mean"] == pytest.approx(mean, abs=1e-12)
        assert row["zrisk"] == pytest.approx(zrisk, rel=1e-9, abs=1e-9)
        assert row["georisk"] == pytest.approx(geo, rel=1e-9, abs=1e-12)


def test_georisk_alpha_zero_sums_z_and_the_mean_profile_scores_zero() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((4, 20))  # four systems x 20 queries
    values = {f"s{k}": x[k].tolist() for k in range(4)}
    # a system equal to the mean profile of the others: with it the query totals are
    # 5 · its values, so e_ij = S_i T_j / N = its own values and every z_ij is 0
    values["mean"] = x.mean(axis=0).tolist()
    got = preval.georisk(table(values), alpha=5).collect()
    row = got.filter(system="mean").row(0, named=True)
    assert row["zrisk"] == pytest.approx(0.0, abs=1e-12)
    assert row["georisk"] == pytest.approx(math.sqrt(x.mean() * 0.5), rel=1e-9)
    # alpha = 0: ZRisk is Σ_j z_ij (no weighing), here from the matrix directly
    full = np.vstack([x, x.mean(axis=0)])
    e = np.outer(full.sum(axis=1), full.sum(axis=0)) / full.sum()
    z = ((full - e) / np.sqrt(e)).sum(axis=1)
    got = preval.georisk(table(values), alpha=0).collect()
    by_system = dict(zip(got["system"], got["zrisk"], strict=True))
    assert [by_system[s] for s in values] == pytest.approx(z.tolist(), abs=1e-12)


def test_georisk_lazy_and_nan() -> None:
    calls = []

    def counted(df: pl.DataFrame) -> pl.DataFrame:
        calls.append(df.height)
        return df

    data = table({"a": [0.1, 0.2], "b": [0.3, float("nan")], "c": [0.2, 0.2]})
    lazy = data.lazy().map_batches(counted, schema=data.schema)
    got = preval.georisk(lazy)
    assert calls == [] and isinstance(got, pl.LazyFrame)
    got = got.collect()
    assert calls
    # a NaN makes every e_ij undefined: null ZRisk and GeoRisk for all; b's own mean is null
    assert got["zrisk"].to_list() == [None] * 3 and got["georisk"].to_list() == [None] * 3
    assert got["mean"].to_list() == [pytest.approx(0.15), None, pytest.approx(0.2)]


def test_georisk_query_universe_as_compare() -> None:
    # a null value (the measure undefined there) takes its query out for every system, as in
    # compare; a query a system lacks (no row) is 0 for it with "zero" and out with "drop"
    data = table({"a": [0.2, 0.4, 0.6, 0.3], "b": [0.4, 0.4, 0.0, None]})
    data = data.with_columns(
        pl.when((pl.col("system") == "a") & (pl.col("query") == "q1"))
        .then(None)
        .otherwise(pl.col("nDCG@10"))
        .alias("nDCG@10")
    )
    zero = preval.georisk(data).collect()
    assert zero["queries"].to_list() == [3, 3]  # q0, q2, q3 (b 0 on q3)
    expected = georisk_reference({"a": [0.2, 0.6, 0.3], "b": [0.4, 0.0, 0.0]}, 1.0, "zero")
    assert zero["zrisk"].to_list() == pytest.approx([expected[s][2] for s in ("a", "b")])
    drop = preval.georisk(data, missing="drop").collect()
    assert drop["queries"].to_list() == [2, 2]  # q0, q2
    assert drop["mean"].to_list() == pytest.approx([0.4, 0.2])
    assert zero["queries"].to_list() == preval.compare(data, baseline="a")["queries"].to_list() * 2


def test_georisk_refuses(tmp_path) -> None:
    data = table({"a": [0.1, -0.2, -0.3], "b": [0.2, 0.1, 0.0]})
    said = r"GeoRisk needs values >= 0 .*found 2 negative, e.g. measure 'nDCG@10', system 'a', "
    with pytest.raises(preval.InputError, match=said + r"query 'q1': -0.2$"):
        preval.georisk(data).collect()
    with pytest.raises(preval.InputError, match="at least 0"):
        preval.georisk(data, alpha=-1)
    with pytest.raises(preval.InputError, match="missing must be one of"):
        preval.georisk(data, missing="skip")
    with pytest.raises(preval.InputError, match="no measure column 'AP'"):
        preval.georisk(data, measures="AP")
    path = tmp_path / "pq.parquet"
    data.write_parquet(path)
    named = f"^per-query table {re.escape(str(path))}: GeoRisk needs"
    with pytest.raises(preval.InputError, match=named):
        preval.georisk(path).collect()


def test_cli_compare_georisk(capsys, tmp_path) -> None:
    # every system's GeoRisk against all three, beside each pair: the row's system's and its
    # baseline's; with or without --baseline, and with --risk
    rc = main(["compare", "fixtures/example.parquet", "-m", "AP", "--georisk", "5",
               "--risk", "1", "--baseline", "bm25", "--format", "csv"])  # fmt: skip
    out, _ = capsys.readouterr()
    assert rc == 0
    got = pl.read_csv(out.encode()).sort("system")
    pq = preval.evaluate("fixtures/example.parquet", ["AP"], by="system")
    expected = preval.georisk(pq, alpha=5).collect()
    scores = dict(zip(expected["system"], expected["georisk"], strict=True))
    zscores = dict(zip(expected["system"], expected["zrisk"], strict=True))
    assert got["system"].to_list() == ["dense", "hybrid"]
    assert got["georisk"].to_list() == pytest.approx([scores["dense"], scores["hybrid"]])
    assert got["zrisk"].to_list() == pytest.approx([zscores["dense"], zscores["hybrid"]])
    assert got["baseline_georisk"].to_list() == pytest.approx([scores["bm25"]] * 2)
    assert got["urisk"].null_count() == 0  # --risk's columns are kept
    rc = main(["compare", "fixtures/example.parquet", "-m", "AP", "--georisk", "5"])
    out, _ = capsys.readouterr()
    assert rc == 0 and "baseline_georisk" in out.splitlines()[0]
    # a per-query table as it is, and a refused alpha before any test
    path = tmp_path / "pq.parquet"
    pq.collect().write_parquet(path)
    rc = main(["compare", str(path), "--per-query-table", "-m", "AP", "--georisk", "5",
               "--format", "csv"])  # fmt: skip
    out, _ = capsys.readouterr()
    assert rc == 0
    got = pl.read_csv(out.encode())
    assert got["georisk"].to_list() == pytest.approx([scores[s] for s in got["system"]])
    assert got["baseline_georisk"].to_list() == pytest.approx([scores[s] for s in got["baseline"]])
    rc = main(["compare", str(path), "--per-query-table", "--georisk", "-1"])
    _, err = capsys.readouterr()
    assert rc == 2 and "GeoRisk alpha must be at least 0" in err


@pytest.mark.parametrize("flag", ["--risk", "--georisk"])
def test_cli_compare_refuses_a_negative_alpha_before_the_evaluation(capsys, tmp_path, flag):
    # the table's bad score would stop the evaluation: the alpha is said first, with no work
    table = tmp_path / "t.csv"
    table.write_text("system,query,doc,score,label\na,q1,d1,NaN,1\nb,q1,d1,0.5,1\n")
    rc = main(["compare", str(table), "-m", "AP", "--baseline", "a", flag, "-1"])
    _, err = capsys.readouterr()
    what = "risk" if flag == "--risk" else "GeoRisk"
    assert rc == 2 and err.strip() == f"preval: error: {what} alpha must be at least 0, got -1.0"


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
@pytest.mark.parametrize("flag", ["--risk", "--georisk"])
def test_cli_compare_paper_tables_refuse_the_risk_flags(capsys, fmt, flag):
    # the paper table showed means and superscripts only: the flag changed nothing, silently
    rc = main(["compare", "fixtures/example.parquet", "-m", "AP", "--baseline", "bm25", flag, "1",
               "--format", fmt])  # fmt: skip
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.strip() == (
        f"preval: error: {flag} adds columns that the {fmt} paper table (means and significance) "
        "does not show: use --format table, csv or json, or drop it"
    )
