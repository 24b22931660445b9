"""Confidence intervals of a summary's means (`preval.summarize(..., ci=)`, `preval.intervals`):
Student's t against scipy, the bootstrap against a plain-numpy reference written here from the
documented resample scheme (to 1e-12) and against scipy.stats.bootstrap (within Monte-Carlo
error), the edge cases, seeding and the sharing of resamples between systems."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import polars.selectors as cs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import ndtr, ndtri

import preval
from preval.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fixtures" / "example.parquet"


def table(values: dict[str, list[float | None]], measure: str = "AP") -> pl.DataFrame:
    """A per-query table: one system per key of `values`, queries q00, q01 ... in order."""
    rows = [(system, f"q{i:02d}", v) for system, vs in values.items() for i, v in enumerate(vs)]
    return pl.DataFrame(
        rows, schema={"system": pl.String, "query": pl.String, measure: pl.Float64}, orient="row"
    )


def bounds(summary: pl.DataFrame, system: str, measure: str = "AP") -> tuple[float, float]:
    row = summary.filter(pl.col("system") == system)
    return row[f"{measure}_ci_low"][0], row[f"{measure}_ci_high"][0]


# --- the plain-numpy reference: the documented scheme, written out without preval ----------


def drawn(n: int, resamples: int, seed: int, query_set: int = 0):
    """The query positions of each resample, as the docs give the scheme: streams of 16
    resamples, stream k from ``default_rng([seed, query_set, k])``, each resample one
    ``rng.integers(0, n, size=n)``."""
    for k in range(-(-resamples // 16)):
        rng = np.random.default_rng([seed, query_set, k])
        for _ in range(min(16, resamples - 16 * k)):
            yield rng.integers(0, n, size=n)


def reference_boot(matrix: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap means of each column of `matrix` (queries x systems, queries in ascending id
    order), every column on the same resampled queries: the mean of the drawn rows (gathered
    by index)."""
    n = matrix.shape[0]
    return np.array([matrix[idx].mean(axis=0) for idx in drawn(n, resamples, seed)])


def reference_bca(x: np.ndarray, boot: np.ndarray, confidence: float) -> tuple[float, float]:
    """Efron & Tibshirani (1993) 14.3: z0 from the share of bootstrap means below the mean
    (ties half, as scipy), the acceleration from an explicit leave-one-out jackknife."""
    theta = x.mean()
    z0 = ndtri(((boot < theta).sum() + (boot <= theta).sum()) / (2 * boot.size))
    jack = np.array([np.delete(x, i).mean() for i in range(x.size)])
    d = jack.mean() - jack
    a = (d**3).sum() / (6 * (d**2).sum() ** 1.5)
    alpha = 1 - confidence
    levels = [
        ndtr(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in (ndtri(alpha / 2), ndtri(1 - alpha / 2))
    ]
    return tuple(np.quantile(boot, levels))


def skewed(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).beta(0.6, 2.0, size=n)


# --- Student's t ------------------------------------------------------------------------------


def test_t_interval_is_scipys() -> None:
    per_query = preval.evaluate(EXAMPLE, ["AP", "nDCG@10"], by="system").collect()
    got = preval.summarize(per_query, ci=0.9).collect()
    for system in ("bm25", "dense", "hybrid"):
        for measure in ("AP", "nDCG@10"):
            x = per_query.filter(pl.col("system") == system)[measure].to_numpy()
            want = stats.ttest_1samp(x, 0).confidence_interval(0.9)
            low, high = bounds(got, system, measure)
            assert low == pytest.approx(want.low, abs=1e-12)
            assert high == pytest.approx(want.high, abs=1e-12)
            mean, se = x.mean(), stats.sem(x)
            assert (low, high) == pytest.approx(
                stats.t.interval(0.9, x.size - 1, mean, se), abs=1e-12
            )


# values as measures give them (scipy's sem underflows to NaN on spreads near 1e-300)
MEASURE_VALUES = st.floats(0, 1, allow_nan=False).map(lambda v: round(v, 8))


@settings(max_examples=40, deadline=None)
@given(st.lists(MEASURE_VALUES, min_size=2, max_size=30), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_t_interval_matches_scipy_on_any_values(values: list[float], level: float) -> None:
    got = preval.summarize(table({"a": values}), ci=level).collect()
    low, high = bounds(got, "a")
    x = np.array(values)
    if np.ptp(x) == 0:
        assert low == high == pytest.approx(x[0], abs=1e-15)
        return
    want = stats.t.interval(level, x.size - 1, x.mean(), stats.sem(x))
    assert (low, high) == pytest.approx(want, abs=1e-12)


def test_geometric_mean_interval_is_the_exponentiated_interval_of_the_logs() -> None:
    per_query = preval.evaluate(EXAMPLE, ["GMAP"], by="system").collect()
    got = preval.summarize(per_query, ci=0.95).collect()
    x = per_query.filter(pl.col("system") == "dense")["GMAP"].to_numpy()
    logs = np.log(np.maximum(x, 1e-5))
    want = stats.t.interval(0.95, logs.size - 1, logs.mean(), stats.sem(logs))
    assert bounds(got, "dense", "GMAP") == pytest.approx(tuple(np.exp(want)), rel=1e-12)


# --- the bootstrap: the documented scheme, and scipy within Monte-Carlo error ----------------


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_equals_a_plain_numpy_reference_of_the_documented_scheme(method: str) -> None:
    values = {"a": skewed(37, 1), "b": skewed(37, 2), "c": skewed(37, 3)}
    frame = table({k: v.tolist() for k, v in values.items()})
    got = preval.summarize(frame, ci=0.9, ci_method=method, resamples=3000, seed=7).collect()
    matrix = np.column_stack(list(values.values()))
    boot = reference_boot(matrix, 3000, 7)  # the three systems on the same resampled queries
    for j, system in enumerate(values):
        if method == "percentile":
            want = tuple(np.quantile(boot[:, j], [0.05, 0.95]))
        else:
            want = reference_bca(matrix[:, j], boot[:, j], 0.9)
        assert bounds(got, system) == pytest.approx(want, abs=1e-12)


def test_blocks_and_threads_do_not_change_the_numbers(monkeypatch) -> None:
    import preval.intervals

    frame = table({"a": skewed(3000, 4).tolist(), "b": skewed(3000, 5).tolist()})
    monkeypatch.setattr(preval.intervals, "THREADS", 1)
    whole = preval.summarize(frame, ci=0.95, ci_method="bca", resamples=1500).collect()
    monkeypatch.setattr(preval.intervals, "BLOCK_BYTES", 8 * 3000 * 7)  # blocks of 1 stream
    monkeypatch.setattr(preval.intervals, "THREADS", 3)  # (3000 x 1500 resamples: a pool)
    again = preval.summarize(frame, ci=0.95, ci_method="bca", resamples=1500).collect()
    assert again.equals(whole)
    monkeypatch.setattr(preval.intervals, "BLOCK_BYTES", 8 * 3000 * 16 * 5)  # 5 streams
    again = preval.summarize(frame, ci=0.95, ci_method="bca", resamples=1500).collect()
    assert again.equals(whole)


@pytest.mark.parametrize("method", ["percentile", "BCa"])
def test_bootstrap_agrees_with_scipy_within_monte_carlo_error(method: str) -> None:
    # scipy draws other resamples: its bounds and ours are two estimates of the same quantiles
    # of the bootstrap distribution. With B = 20000 and the distribution of the mean close to
    # normal (sd s* = sd / sqrt(n)), the standard error of the 2.5% quantile is
    # sqrt(p (1 - p) / B) / f(q) = sqrt(0.025 * 0.975 / 20000) / (phi(1.96) / s*) = 0.019 s*,
    # 0.027 s* for the difference of two independent estimates; BCa's levels are estimated
    # too (z0 from B resamples). 0.2 s* is over 7 standard errors: a real disagreement (a
    # wrong level, a wrong acceleration sign) moves a bound by far more.
    x = skewed(60, 11)
    frame = table({"a": x.tolist()})
    ours = bounds(
        preval.summarize(
            frame, ci=0.95, ci_method=method.lower(), resamples=20_000, seed=3
        ).collect(),
        "a",
    )
    theirs = stats.bootstrap(
        (x,),
        np.mean,
        confidence_level=0.95,
        n_resamples=20_000,
        method=method,
        rng=np.random.default_rng(99),
    ).confidence_interval
    scale = x.std(ddof=1) / math.sqrt(x.size)
    assert abs(ours[0] - theirs.low) < 0.2 * scale
    assert abs(ours[1] - theirs.high) < 0.2 * scale


def test_bca_of_a_skewed_sample_differs_from_the_percentile_interval() -> None:
    frame = table({"a": skewed(60, 11).tolist()})
    p = bounds(preval.summarize(frame, ci=0.95, ci_method="percentile").collect(), "a")
    b = bounds(preval.summarize(frame, ci=0.95, ci_method="bca").collect(), "a")
    # a right-skewed sample: BCa moves both bounds up (positive acceleration and bias)
    assert b[0] > p[0] and b[1] > p[1]


# --- edge cases -----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["t", "percentile", "bca"])
def test_one_query_has_no_interval_and_equal_values_a_zero_width_one(method: str) -> None:
    frame = pl.concat(
        [table({"one": [0.3]}), table({"flat": [0.1] * 12}), table({"some": [0.2, 0.5, 0.9, 0.4]})]
    )
    got = preval.summarize(frame, ci=0.95, ci_method=method, resamples=200).collect()
    assert bounds(got, "one") == (None, None)  # undefined: null
    assert bounds(got, "flat") == (0.1, 0.1)  # exactly the value
    low, high = bounds(got, "some")
    assert low < got.filter(pl.col("system") == "some")["AP"][0] < high


@pytest.mark.parametrize("method", ["t", "percentile", "bca"])
def test_nulls_are_left_out_and_nan_makes_the_bounds_nan(method: str) -> None:
    x = skewed(30, 8).tolist()
    frame = pl.concat(
        [
            table({"full": x}),
            table({"holes": [*x[:20], *[None] * 10]}),
            table({"nan": [*x[:29], float("nan")]}),
        ]
    )
    got = preval.summarize(frame, ci=0.9, ci_method=method, resamples=1000).collect()
    assert got.filter(pl.col("system") == "holes")["AP"][0] == pytest.approx(np.mean(x[:20]))
    assert all(math.isnan(b) for b in bounds(got, "nan"))
    low, high = bounds(got, "holes")
    if method == "t":  # over the 20 non-null values, as the mean
        want = stats.t.interval(0.9, 19, np.mean(x[:20]), stats.sem(x[:20]))
        assert (low, high) == pytest.approx(want, abs=1e-12)
    else:  # a resample's mean over the non-null values it drew: the reference, by hand
        values = np.array([*x[:20], *[np.nan] * 10])
        full, holes = np.empty(1000), np.empty(1000)
        # "holes" shares its query set with "full" (and "nan"): set 0
        for b, idx in enumerate(drawn(30, 1000, 0)):
            full[b], holes[b] = np.mean(np.array(x)[idx]), np.nanmean(values[idx])
        if method == "percentile":
            assert (low, high) == pytest.approx(tuple(np.quantile(holes, [0.05, 0.95])), abs=1e-12)
            want = tuple(np.quantile(full, [0.05, 0.95]))
            assert bounds(got, "full") == pytest.approx(want, abs=1e-12)
        assert low < np.mean(x[:20]) < high


def test_counts_get_no_interval() -> None:
    per_query = preval.evaluate(EXAMPLE, ["AP", "NumRet", "NumRel"], by="system")
    got = preval.summarize(per_query, ci=0.95).collect()
    assert got.columns == ["system", "NumQ", "AP", "AP_ci_low", "AP_ci_high", "NumRet", "NumRel"]
    assert got.select(cs.ends_with("_ci_low", "_ci_high")).columns == ["AP_ci_low", "AP_ci_high"]
    assert got.drop(cs.ends_with("_ci_low", "_ci_high")).equals(
        preval.summarize(per_query).collect()
    )


# --- seeding and sharing ------------------------------------------------------------------


def test_seeded_and_repeatable() -> None:
    frame = table({"a": skewed(40, 1).tolist()})
    one = preval.summarize(frame, ci=0.95, ci_method="percentile", seed=5, resamples=500)
    assert one.collect().equals(one.collect())
    again = preval.summarize(frame, ci=0.95, ci_method="percentile", seed=5, resamples=500)
    assert again.collect().equals(one.collect())
    other = preval.summarize(frame, ci=0.95, ci_method="percentile", seed=6, resamples=500)
    assert not other.collect().equals(one.collect())


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_systems_and_measures_share_the_resampled_queries(method: str) -> None:
    x = skewed(45, 21)
    frame = table(
        {
            "a": x.tolist(),
            "twin": x.tolist(),
            "shifted": (x + 0.25).tolist(),
            "other": skewed(45, 22).tolist(),
        }
    )
    frame = frame.with_columns((pl.col("AP") * 2).alias("P@10"))
    got = preval.summarize(frame, ci=0.95, ci_method=method, resamples=2000).collect()
    a = bounds(got, "a")
    assert bounds(got, "twin") == a  # identical systems, identical bounds
    # a system that scores 0.25 more on every query: its bounds are a's plus 0.25 only if
    # both were resampled on the same queries (independent resamples would move them)
    assert bounds(got, "shifted") == pytest.approx((a[0] + 0.25, a[1] + 0.25), abs=1e-12)
    # and so do the measures: P@10 = 2 AP on every query
    assert bounds(got, "a", "P@10") == pytest.approx((2 * a[0], 2 * a[1]), abs=1e-12)


def test_extra_keys_resample_within_each_group() -> None:
    x, y = skewed(30, 31), skewed(30, 32)
    frame = table({"a": x.tolist(), "b": y.tolist()}).with_columns(
        kind=pl.when(pl.col("query") < "q10").then(pl.lit("short")).otherwise(pl.lit("long"))
    )
    got = preval.summarize(
        frame, by=["system", "kind"], ci=0.9, ci_method="percentile", resamples=800, seed=2
    ).collect()
    # two query sets (long: q10..q29, then short: q00..q09; in the order of their first
    # group by keys, (a, long)); each resampled within itself, shared by a and b
    boots = {}
    for number, (kind, rows) in enumerate((("long", slice(10, 30)), ("short", slice(0, 10)))):
        n = rows.stop - rows.start
        boots[kind] = np.array(
            [(x[rows][idx].mean(), y[rows][idx].mean()) for idx in drawn(n, 800, 2, number)]
        )
    for (system, kind), j in (((s, k), j) for j, s in enumerate("ab") for k in boots):
        row = got.filter((pl.col("system") == system) & (pl.col("kind") == kind))
        want = tuple(np.quantile(boots[kind][:, j], [0.05, 0.95]))
        assert (row["AP_ci_low"][0], row["AP_ci_high"][0]) == pytest.approx(want, abs=1e-12)


# --- laziness, the faces --------------------------------------------------------------------


@pytest.mark.parametrize("method", ["t", "bca"])
def test_building_the_plan_collects_nothing(method: str) -> None:
    calls = []

    def seen(df: pl.DataFrame) -> pl.DataFrame:
        calls.append(df.height)
        return df

    frame = table({"a": skewed(20, 1).tolist(), "b": skewed(20, 2).tolist()})
    lazy = frame.lazy().map_batches(seen, schema=frame.schema)
    plan = preval.summarize(lazy, ci=0.95, ci_method=method, resamples=100)
    assert calls == []
    assert plan.collect().height == 2 and calls


def test_bad_interval_options_are_refused() -> None:
    frame = table({"a": [0.1, 0.2]})
    with pytest.raises(preval.InputError, match="ci must be a level"):
        preval.summarize(frame, ci=95)
    with pytest.raises(preval.InputError, match="ci_method must be one of"):
        preval.summarize(frame, ci=0.95, ci_method="normal")
    with pytest.raises(preval.InputError, match="resamples must be"):
        preval.summarize(frame, ci=0.95, resamples=0)
    with pytest.raises(preval.InputError, match="seed must be a whole number >= 0"):
        preval.summarize(frame, ci=0.95, ci_method="bca", seed=-1)


def test_a_result_summary_takes_the_same_intervals() -> None:
    plan = preval.plan(EXAMPLE, ["AP", "P@10"], by="system")
    got = preval.collect(plan).summary(ci=0.95, ci_method="bca", resamples=300).collect()
    per_query = preval.evaluate(EXAMPLE, ["AP", "P@10"], by="system")
    want = preval.summarize(per_query, ci=0.95, ci_method="bca", resamples=300).collect()
    assert got.equals(want)


def test_cli_evaluate_prints_and_writes_the_bounds(capsys, tmp_path) -> None:
    out = tmp_path / "summary.parquet"
    assert (
        main(
            [
                "evaluate",
                str(EXAMPLE),
                "--by",
                "system",
                "-m",
                "AP",
                "-m",
                "NumRet",
                "--ci",
                "0.95",
                "--ci-method",
                "percentile",
                "--resamples",
                "500",
                "--seed",
                "3",
                "--format",
                "csv",
                "--summary",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    printed = pl.read_csv(capsys.readouterr().out.encode())
    per_query = preval.evaluate(EXAMPLE, ["AP", "NumRet"], by="system")
    want = preval.summarize(
        per_query, ci=0.95, ci_method="percentile", resamples=500, seed=3
    ).collect()
    assert printed.columns == want.columns
    assert np.allclose(printed["AP_ci_low"], want["AP_ci_low"], atol=1e-12)
    assert pl.read_parquet(out).equals(want)
    assert main(["evaluate", str(EXAMPLE), "--by", "system", "-m", "AP", "--ci", "0.9", "-q"]) == 0
    text = capsys.readouterr().out
    assert "AP_ci_low" in text.splitlines()[0] and "AP_ci_high" in text.splitlines()[0]


@pytest.mark.parametrize("method", ["t", "percentile", "bca"])
def test_an_empty_input_keeps_summarizes_shape(method: str) -> None:
    empty = table({})
    plain = preval.summarize(empty, by=[]).collect()
    got = preval.summarize(empty, by=[], ci=0.95, ci_method=method).collect()
    assert got.rows() == [(0, None, None, None)] and plain.rows() == [(0, None)]
    assert preval.summarize(empty, ci=0.95, ci_method=method).collect().height == 0
