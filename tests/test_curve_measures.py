"""Curve and threshold measures: seed golden values, consistency with curve(), scikit-learn."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import preval
from tests.profiles import examples

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def lingpipe_table() -> pl.DataFrame:
    return pl.read_csv(FIXTURES / "lingpipe.csv", schema_overrides={"doc": pl.String})


def vlfeat_table() -> pl.DataFrame:
    # labels +1 / -1; the missed positive is a -inf score (not retrieved under vlfeat)
    return lingpipe_table().with_columns(
        pl.col("score").fill_null(float("-inf")),
        pl.when(pl.col("label") == 1).then(1).otherwise(-1).alias("label"),
    )


def one_row(frame: pl.LazyFrame) -> dict[str, float]:
    df = frame.collect()
    assert df.height == 1
    return {k: v for k, v in df.row(0, named=True).items() if k != "query"}


# The seed example (ranks 1..10: no yes no yes yes no no no yes no; one positive missed;
# R = 5, N = 6). Derivations:
# lingpipe AUC-PR over (0,1) (.2,.5) (.2,1/3) (.4,.5) (.6,.6) (.6,.5) (.6,3/7) (.6,3/8) (.8,4/9)
#   (.8,.4) (1,0): .2·1.5/2 + .2·(1/3+.5)/2 + .2·1.1/2 + .2·(3/8+4/9)/2 + .2·.4/2 = 0.465278
# lingpipe interpolated (0,1) (.2,.6) (.4,.6) (.6,.6) (.8,4/9) (1,0):
#   .16 + .12 + .12 + .2·(.6+4/9)/2 + .2·(4/9)/2 = 0.548889
# AUC-ROC, points (k/6, tpr): width 1/6 each, heights 0, .2, .6, .6, .6, .8 (the last step
#   from the (1, .8) point to (1, 1) has no width): 2.8/6; interpolated (0,0) (1/6,.2) (2/6,.6)
#   (3/6,.6) (4/6,.6) (5/6,.8) (1,1): (.2/2 + .8/2 + .6 + .6 + 1.4/2 + 1.8/2)/6 = 0.55
# vlfeat AUC-PR = vl_pr info.auc 0.325278; interpolated: .2·(.6 + .6 + .6 + 4/9) = 0.448889
# AP11: lingpipe/vlfeat (1 + 6·.6 + 2·4/9 + 0 + 0)/11 = 0.498990 (precision 1 at recall 0);
#   trec (7·.6 + 2·4/9 + 0 + 0)/11 = 0.462626 (trec_eval's iprec_at_recall_0.00 is 0.6 here)
# MaxF = 0.6 at rank 5; MaxF(beta=2) = max 5·tp/(20 + k) = 5·4/29 at rank 9
# At threshold -1.5 (ranks 1-4 returned: tp 2, fp 2): SetP .5, SetR .4, Specificity 4/6,
#   Accuracy (2 + 4)/11, SetF(alpha=0.5) = F1 = 2·2/(5 + 4)
COMMON = {
    "AP": 0.408889, "AUC-ROC": 2.8 / 6, "AUC-ROC(interpolate=true)": 0.55, "MaxF": 0.6,
    "MaxF(beta=2)": 20 / 29, "Rprec": 0.6, "RR": 0.5, "SetP(threshold=-1.5)": 0.5,
    "SetR(threshold=-1.5)": 0.4, "Specificity(threshold=-1.5)": 4 / 6,
    "Accuracy(threshold=-1.5)": 6 / 11, "SetF(alpha=0.5,threshold=-1.5)": 4 / 9,
}  # fmt: skip
GOLDEN = {
    "lingpipe": {**COMMON, "AUC-PR": 0.465278, "AUC-PR(interpolate=true)": 0.548889,
                 "AP11": 0.498990, "IPrec@0": 1.0},
    "vlfeat": {**COMMON, "AUC-PR": 0.325278, "AUC-PR(interpolate=true)": 0.448889,
               "AP11": 0.498990, "IPrec@0": 1.0},
    "trec": {**COMMON, "AUC-PR": 0.325278, "AP11": 0.462626, "IPrec@0": 0.6},
}  # fmt: skip


@pytest.mark.parametrize("convention", GOLDEN)
def test_seed_example(convention: str) -> None:
    data = vlfeat_table() if convention == "vlfeat" else lingpipe_table()
    want = GOLDEN[convention]
    got = one_row(preval.evaluate(data, list(want), convention=convention))
    assert got == pytest.approx(want, abs=5e-7)


def test_lingpipe_r_precision_without_positives() -> None:
    df = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "score": [1.0, 0.5],
                       "label": [0, 0]})  # fmt: skip
    assert one_row(preval.evaluate(df, ["Rprec"], convention="lingpipe"))["Rprec"] == 1.0
    assert one_row(preval.evaluate(df, ["Rprec"]))["Rprec"] == 0.0
    # curves without a positive have no recall axis: AUCs are null, not a crash
    got = one_row(preval.evaluate(df, ["AUC-PR", "AUC-ROC"]))
    assert got == {"AUC-PR": None, "AUC-ROC": None}


def test_counts_beyond_the_rows() -> None:
    # num_positives = 5 says the same as the row of the missed positive
    table = lingpipe_table().filter(pl.col("score").is_not_null())
    got = one_row(preval.evaluate(table, ["AP", "AUC-PR"], num_positives=5,
                                  convention="lingpipe"))  # fmt: skip
    assert got == pytest.approx({"AP": 0.408889, "AUC-PR": 0.465278}, abs=5e-7)
    # 4 more negatives: N = 10, the ROC curve is squeezed to the left; known value
    # Σ widths 1/10 at heights 0, .2, .6, .6, .6, .8 then (1, .8)→ from fpr .6 to 1 closing
    roc = one_row(preval.evaluate(table, ["AUC-ROC"], num_positives=5, num_negatives=10))
    assert roc["AUC-ROC"] == pytest.approx((0 + 0.2 + 0.6 + 0.6 + 0.6 + 0.8) / 10 + 0.4 * 1.8 / 2)
    with pytest.raises(preval.InvalidValueError, match="num_positives=3"):
        preval.evaluate(table, ["AP"], num_positives=3).collect()


def trapezoid(xs: list[float], ys: list[float]) -> float:
    return sum((b - a) * (c + d) / 2 for a, b, c, d in zip(xs, xs[1:], ys, ys[1:], strict=False))


@settings(max_examples=examples(60), deadline=None)
@given(
    scores=st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.5, 0.7, 0.9]), min_size=2, max_size=12),
    labels=st.lists(st.sampled_from([0, 1, 2]), min_size=12, max_size=12),
    convention=st.sampled_from(["trec", "lingpipe"]),
)
def test_measures_equal_areas_of_the_curves(scores, labels, convention) -> None:
    df = pl.DataFrame({"query": ["q"] * len(scores), "doc": [f"d{i}" for i in range(len(scores))],
                       "score": scores, "label": labels[: len(scores)]})  # fmt: skip
    got = one_row(preval.evaluate(df, ["AUC-PR", "AUC-ROC"], convention=convention))
    pr = preval.curve(df, "pr", convention=convention).collect()
    roc = preval.curve(df, "roc", convention=convention).collect()
    if not (df["label"] >= 1).any():
        assert got["AUC-PR"] is None
        return
    xs, ys = pr["recall"].to_list(), pr["precision"].to_list()
    if convention == "trec":  # the trec curve has no rank-0 point; its area starts there
        xs, ys = [0.0, *xs], [1.0, *ys]
    assert got["AUC-PR"] == pytest.approx(trapezoid(xs, ys))
    if (df["label"] < 1).any():
        fx, fy = roc["fpr"].to_list(), roc["tpr"].to_list()
        if convention == "trec":
            fx, fy = [*fx, 1.0], [*fy, 1.0]
        assert got["AUC-ROC"] == pytest.approx(trapezoid(fx, fy))


@pytest.mark.parametrize("seed", range(6))
def test_auc_roc_and_threshold_measures_match_scikit_learn(seed: int) -> None:
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    n = 150
    tied = seed % 2 == 1
    scores = np.round(rng.random(n), 1) if tied else rng.random(n)
    labels = (rng.random(n) < 0.35).astype(int)
    df = pl.DataFrame({"query": ["q"] * n, "score": scores, "label": labels})
    want = sk.roc_auc_score(labels, scores)
    if tied:  # scikit-learn's tie groups = the mean of the two extreme orders of each tie
        opt = one_row(preval.evaluate(df, ["AUC-ROC"], ties="optimistic"))["AUC-ROC"]
        pes = one_row(preval.evaluate(df, ["AUC-ROC"], ties="pessimistic"))["AUC-ROC"]
        assert (opt + pes) / 2 == pytest.approx(want)
        assert pes < want < opt
    else:
        assert one_row(preval.evaluate(df, ["AUC-ROC"]))["AUC-ROC"] == pytest.approx(want)
    t = 0.5
    predicted = (scores >= t).astype(int)
    got = one_row(preval.evaluate(df, [f"SetP(threshold={t})", f"SetR(threshold={t})",
                                       f"Accuracy(threshold={t})", f"Specificity(threshold={t})",
                                       f"SetF(fbeta=2,threshold={t})",
                                       f"SetF(beta=4,threshold={t})"]))  # fmt: skip
    assert got[f"SetP(threshold={t})"] == pytest.approx(sk.precision_score(labels, predicted))
    assert got[f"SetR(threshold={t})"] == pytest.approx(sk.recall_score(labels, predicted))
    assert got[f"Accuracy(threshold={t})"] == pytest.approx(sk.accuracy_score(labels, predicted))
    tn = int(((predicted == 0) & (labels == 0)).sum())
    assert got[f"Specificity(threshold={t})"] == pytest.approx(tn / int((labels == 0).sum()))
    assert got[f"SetF(fbeta=2,threshold={t})"] == pytest.approx(
        sk.fbeta_score(labels, predicted, beta=2)
    )
    # beta= is trec_eval's set_F weight, beta squared
    assert got[f"SetF(beta=4,threshold={t})"] == pytest.approx(
        sk.fbeta_score(labels, predicted, beta=2)
    )


def test_alpha_is_the_lecture_notes_weighting() -> None:
    # F_alpha = 1/(alpha/P + (1 - alpha)/R) with P = .5, R = .4 at threshold -1.5
    alpha = 0.8
    want = 1 / (alpha / 0.5 + (1 - alpha) / 0.4)
    got = one_row(preval.evaluate(lingpipe_table(), [f"SetF(alpha={alpha},threshold=-1.5)"]))
    assert next(iter(got.values())) == pytest.approx(want)
    assert not math.isnan(want)


RANDOM_CASE = st.lists(
    st.tuples(st.sampled_from([0.1, 0.2, 0.3, 0.5, 0.7, 0.9, None]), st.booleans()),
    min_size=1,
    max_size=14,
)


@settings(max_examples=examples(120), deadline=None)
@given(case=RANDOM_CASE, extra_negatives=st.integers(0, 3))
def test_lingpipe_convention_matches_the_lingpipe_port(case, extra_negatives) -> None:
    # rows in input order (LingPipe keeps it for ties); a None score is a missed case
    from tests.reference_curves import LingPipe

    port = LingPipe()
    for score, correct in case:
        if score is not None:
            port.add_case(correct, score)
    port.add_misses(sum(1 for s, c in case if s is None and c))
    port.add_negative_misses(extra_negatives + sum(1 for s, c in case if s is None and not c))
    df = pl.DataFrame(
        {"query": ["q"] * len(case), "score": [s for s, _ in case],
         "label": [int(c) for _, c in case]},
        schema={"query": pl.String, "score": pl.Float64, "label": pl.Int64},
    )  # fmt: skip
    negatives = sum(1 for _, c in case if not c) + extra_negatives
    got = one_row(preval.evaluate(
        df, ["AP", "AUC-PR", "AUC-PR(interpolate=true)", "AUC-ROC", "AUC-ROC(interpolate=true)",
             "MaxF", "MaxF(beta=2)", "AP11", "RR", "P@3"],
        convention="lingpipe", num_negatives=negatives,
    ))  # fmt: skip
    if port.num_positive_ref() == 0:
        assert got["AUC-PR"] is None
        return
    want = {
        "AP": port.average_precision(),
        "AUC-PR": port.area_under_pr_curve(False),
        "AUC-PR(interpolate=true)": port.area_under_pr_curve(True),
        "MaxF": port.maximum_f_measure(1.0),
        "MaxF(beta=2)": port.maximum_f_measure(2.0),
        "AP11": sum(port.eleven_pt_interp_precision()) / 11,
        "RR": port.reciprocal_rank(),
        "P@3": port.precision_at(3),
    }
    if negatives:
        want["AUC-ROC"] = port.area_under_roc_curve(False)
        want["AUC-ROC(interpolate=true)"] = port.area_under_roc_curve(True)
    for name, value in want.items():
        assert got[name] == pytest.approx(value, abs=1e-12), name


@settings(max_examples=examples(120), deadline=None)
@given(
    labels=st.lists(st.sampled_from([-1, 1, 2, 0]), min_size=1, max_size=14),
    scores=st.lists(st.sampled_from([0.1, 0.5, 0.9, float("-inf")]), min_size=14, max_size=14),
    include_inf=st.booleans(),
)
def test_vlfeat_convention_matches_the_vl_pr_port(labels, scores, include_inf) -> None:
    from tests.reference_curves import vl_pr

    scores = scores[: len(labels)]
    if not any(lab > 0 for lab in labels):
        return  # vl_pr: 0/0 (NaN); preval: AUC-PR null (and no query if every label is 0)
    _, _, info = vl_pr(labels, scores, include_inf=include_inf)
    df = pl.DataFrame({"query": ["q"] * len(labels), "score": scores, "label": labels})
    got = one_row(preval.evaluate(df, ["AP", "AUC-PR", "AP11"], convention="vlfeat",
                                  include_inf=include_inf))  # fmt: skip
    # vl_pr's precision before the first positive is 1e-10, not 0: 1e-9 absorbs it
    assert got["AP"] == pytest.approx(info["ap"], abs=1e-9)
    assert got["AUC-PR"] == pytest.approx(info["auc"], abs=1e-9)
    assert got["AP11"] == pytest.approx(info["ap_interp_11"], abs=1e-9)


def test_cli_warns_when_an_auc_is_undefined(tmp_path: Path, capsys) -> None:
    from preval.cli import main

    path = tmp_path / "one_class.csv"
    path.write_text("query,doc,score,label\nq1,a,1.0,1\nq1,b,0.5,0\nq2,c,1.0,1\n")
    assert main(["evaluate", str(path), "-m", "AUC-ROC", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert "AUC-ROC is undefined (null) for 1 query with a single class" in err
    assert out.splitlines()[1] == "2,1.0"  # NumQ (an integer) counts both; the mean skips null


def test_per_query_count_columns() -> None:
    # query a: R from its column is 4 (3 relevant documents were never retrieved): AP = 1/4;
    # query b: 1. The curve reads the same column: a's recall ends at 1/4.
    df = pl.DataFrame({"query": ["a", "a", "b"], "doc": ["1", "2", "3"], "score": [2.0, 1.0, 1.0],
                       "label": [1, 0, 1], "npos": [4, 4, 1]})  # fmt: skip
    got = preval.evaluate(df, ["AP", "NumRel"], num_positives="npos").collect()
    assert got.rows() == [("a", 0.25, 4.0), ("b", 1.0, 1.0)]
    points = preval.curve(df, "pr", num_positives="npos").collect()
    assert points.filter(pl.col("query") == "a")["recall"].to_list() == [0.25, 0.25]
    with pytest.raises(preval.InvalidValueError, match=r"num_positives \(a column\)"):
        preval.evaluate(df.with_columns(npos=0), ["AP"], num_positives="npos").collect()
    with pytest.raises(preval.MissingColumnError, match="'nneg'"):
        preval.evaluate(df, ["AP"], num_negatives="nneg")
