"""Self-checks for tests/reference_curves.py (LingPipe 4.0.1 and VLFeat vl_pr).

1. LingPipe's worked example (class Javadoc of ScoredPrecisionRecallEvaluation
   and ScoredPrecisionRecallEvaluationTest), with the exact values of the
   areas, 11-point precisions and average precision recorded as golden numbers.
2. VLFeat vl_pr on the same example, and the cases of VLFeat's own
   toolbox/xtest/vl_test_pr.m.
3. Tie handling and the quirks of both sources.
4. Agreement with scikit-learn and between the two references.
"""

from __future__ import annotations

import math
import random
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from tests.profiles import examples

sys.path.insert(0, str(Path(__file__).resolve().parent))
import reference_curves as rc

EXACT = 1e-12
NEG_INF = float("-inf")

# (score, correct) in rank order, plus one missed positive (addMisses(1)):
# 5 positive references, 6 negative references.
EXAMPLE = [
    (-1.21, False),
    (-1.27, True),
    (-1.39, False),
    (-1.47, True),
    (-1.60, True),
    (-1.65, False),
    (-1.79, False),
    (-1.80, False),
    (-2.01, True),
    (-3.70, False),
]


def lingpipe_example(order=None) -> rc.LingPipe:
    lp = rc.LingPipe()
    cases = EXAMPLE if order is None else [EXAMPLE[i] for i in order]
    for score, correct in cases:
        lp.add_case(correct, score)
    lp.add_misses(1)
    return lp


def approx_curve(actual, expected, tol):
    assert len(actual) == len(expected), (actual, expected)
    for (ax, ay), (ex, ey) in zip(actual, expected, strict=True):
        assert ax == pytest.approx(ex, abs=tol), (actual, expected)
        assert ay == pytest.approx(ey, abs=tol), (actual, expected)


# ---------------------------------------------------------------------------
# 1. LingPipe worked example
# ---------------------------------------------------------------------------

# Exact operating points (recall, precision) after each rank; rank 0 (a false
# positive, recall 0 / precision 0) is dropped by prCurve.
PR_EXACT = [
    (0.0, 1.0),
    (1 / 5, 1 / 2),
    (1 / 5, 1 / 3),
    (2 / 5, 2 / 4),
    (3 / 5, 3 / 5),
    (3 / 5, 3 / 6),
    (3 / 5, 3 / 7),
    (3 / 5, 3 / 8),
    (4 / 5, 4 / 9),
    (4 / 5, 4 / 10),
    (1.0, 0.0),
]
PR_INTERP_EXACT = [(0.0, 1.0), (0.2, 0.6), (0.4, 0.6), (0.6, 0.6), (0.8, 4 / 9), (1.0, 0.0)]
ROC_EXACT = [
    (0.0, 0.0),
    (1 / 6, 0.0),
    (1 / 6, 0.2),
    (2 / 6, 0.2),
    (2 / 6, 0.4),
    (2 / 6, 0.6),
    (3 / 6, 0.6),
    (4 / 6, 0.6),
    (5 / 6, 0.6),
    (5 / 6, 0.8),
    (1.0, 0.8),
    (1.0, 1.0),
]
ROC_INTERP_EXACT = [
    (0.0, 0.0),
    (1 / 6, 0.2),
    (2 / 6, 0.6),
    (3 / 6, 0.6),
    (4 / 6, 0.6),
    (5 / 6, 0.8),
    (1.0, 1.0),
]

# As printed on the Javadoc page (2 decimals).  The page lists {0.60, 0.38}
# twice; the unit test (and the code) has it once: 11 points, not 12.
DOC_PR_FALSE = [
    (0.00, 1.00), (0.20, 0.50), (0.20, 0.33), (0.40, 0.50), (0.60, 0.60), (0.60, 0.50),
    (0.60, 0.43), (0.60, 0.38), (0.60, 0.38), (0.80, 0.44), (0.80, 0.40), (1.00, 0.00),
]  # fmt: skip
DOC_PR_TRUE = [(0.00, 1.00), (0.20, 0.60), (0.40, 0.60), (0.60, 0.60), (0.80, 0.44), (1.00, 0.00)]
DOC_ROC_FALSE = [
    (1 - 1.00, 0.00), (1 - 0.83, 0.00), (1 - 0.83, 0.20), (1 - 0.67, 0.20), (1 - 0.67, 0.40),
    (1 - 0.67, 0.60), (1 - 0.50, 0.60), (1 - 0.33, 0.60), (1 - 0.17, 0.60), (1 - 0.17, 0.80),
    (1 - 0.00, 0.80), (1 - 0.00, 1.00),
]  # fmt: skip
DOC_ROC_TRUE = [
    (1 - 1.00, 0.00), (1 - 0.83, 0.20), (1 - 0.67, 0.60), (1 - 0.50, 0.60), (1 - 0.33, 0.60),
    (1 - 0.17, 0.80), (1 - 0.00, 1.00),
]  # fmt: skip

# ---- golden numbers (values of the port, derived by hand below) -----------
#
# areaUnderPrCurve(false): trapezoids on PR_EXACT (vertical steps add 0):
#   (0,1)-(.2,1/2): .2*(1+.5)/2 = .15
#   (.2,1/3)-(.4,1/2): .2*(5/6)/2 = 1/12
#   (.4,1/2)-(.6,3/5): .2*(1.1)/2 = .11
#   (.6,3/8)-(.8,4/9): .2*(59/72)/2 = 59/720
#   (.8,2/5)-(1,0): .2*.4/2 = .04
#   total = 67/144 = 0.465277...
AUPR_FALSE = 0.4652777777777778
# areaUnderPrCurve(true): (0,1)-(.2,.6) .16; (.2,.6)-(.4,.6) .12; (.4,.6)-(.6,.6)
#   .12; (.6,.6)-(.8,4/9) .2*(47/45)/2 = 47/450; (.8,4/9)-(1,0) 2/45;
#   total = 247/450 = 0.548888...
AUPR_TRUE = 0.5488888888888889
# areaUnderRocCurve(false): only the horizontal segments count:
#   y=.2 over [1/6,2/6], y=.6 over [2/6,5/6], y=.8 over [5/6,1]:
#   .2/6 + 3*.6/6 + .8/6 = 2.8/6 = 7/15 = 0.4666...
#   (= Mann-Whitney: 5+4+4+1+0 positive-above-negative pairs out of 5*6 = 14/30;
#   the missed positive is ranked below every negative).
AUROC_FALSE = 0.4666666666666667
# areaUnderRocCurve(true) (the unit test's comment):
#   (1/6)*(0+.2)/2 + (1/6)*(.2+.6)/2 + (1/6)*.6 + (1/6)*.6 + (1/6)*(.6+.8)/2
#   + (1/6)*(.8+1)/2 = (.1 + .4 + .6 + .6 + .7 + .9)/6 = 3.3/6 = 0.55
AUROC_TRUE = 0.55
# elevenPtInterpPrecision(): first point of prCurve(true) with
#   recall + 1e-13 >= 0.1*i:
#   i=0 -> (0,1): 1.0;   i=1,2 -> (.2,.6); i=3,4 -> (.4,.6); i=5,6 -> (.6,.6)
#   (0.1*6 = 0.6000000000000001 is caught by the 1e-13 slack);
#   i=7,8 -> (.8,4/9); i=9,10 -> (1,0).
ELEVEN_PT = [1.0, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 4 / 9, 4 / 9, 0.0, 0.0]
# averagePrecision(): precisions where recall first increases, including the
#   (1,0) sentinel for the missed positive: (1/2 + 2/4 + 3/5 + 4/9 + 0)/5
#   = 92/225 = 0.408888...
AVG_PREC = 0.40888888888888886


def test_lingpipe_pr_curve_uninterpolated():
    lp = lingpipe_example()
    curve = lp.pr_curve(False)
    approx_curve(curve, PR_EXACT, EXACT)
    # unit test (tolerance 0.01)
    approx_curve(curve, [(round(r, 2), round(p, 2)) for r, p in PR_EXACT], 0.01)
    # Javadoc page, after removing its duplicated {0.60, 0.38}
    doc = DOC_PR_FALSE[:8] + DOC_PR_FALSE[9:]
    approx_curve(curve, doc, 0.005 + EXACT)
    assert len(DOC_PR_FALSE) == 12 and len(curve) == 11


def test_lingpipe_pr_curve_interpolated():
    curve = lingpipe_example().pr_curve(True)
    approx_curve(curve, PR_INTERP_EXACT, EXACT)
    approx_curve(curve, DOC_PR_TRUE, 0.005 + EXACT)


def test_lingpipe_roc_curves():
    lp = lingpipe_example()
    approx_curve(lp.roc_curve(False), ROC_EXACT, EXACT)
    approx_curve(lp.roc_curve(False), DOC_ROC_FALSE, 0.005 + EXACT)
    approx_curve(lp.roc_curve(True), ROC_INTERP_EXACT, EXACT)
    approx_curve(lp.roc_curve(True), DOC_ROC_TRUE, 0.005 + EXACT)
    assert len(lp.roc_curve(False)) == 12
    assert len(lp.roc_curve(True)) == 7


def test_lingpipe_scalars_from_doc():
    lp = lingpipe_example()
    assert [lp.precision_at(k) for k in (0, 1, 5, 10, 20, 100)] == pytest.approx(
        [1.0, 0.0, 0.6, 0.4, 0.2, 0.04], abs=EXACT
    )
    assert lp.reciprocal_rank() == 0.5
    assert lp.r_precision() == pytest.approx(0.6, abs=EXACT)
    assert lp.pr_breakeven_point() == pytest.approx(0.6, abs=EXACT)
    assert lp.maximum_f_measure() == pytest.approx(0.6, abs=EXACT)
    assert lp.num_positive_ref() == 5 and lp.num_negative_ref() == 6 and lp.num_cases() == 11
    with pytest.raises(ValueError):
        lp.precision_at(-1)


def test_lingpipe_unit_test_assertions():
    lp = lingpipe_example()
    assert lp.eleven_pt_interp_precision() == pytest.approx(
        [1.0, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.444, 0.444, 0.0, 0.0], abs=0.01
    )
    assert lp.average_precision() == pytest.approx((0.5 + 0.5 + 0.6 + 0.4444 + 0.0) / 5, abs=0.001)
    assert lp.area_under_roc_curve(True) == pytest.approx(0.55, abs=0.001)


def test_lingpipe_golden_numbers():
    lp = lingpipe_example()
    assert lp.area_under_pr_curve(False) == pytest.approx(AUPR_FALSE, abs=EXACT)
    assert lp.area_under_pr_curve(True) == pytest.approx(AUPR_TRUE, abs=EXACT)
    assert lp.area_under_roc_curve(False) == pytest.approx(AUROC_FALSE, abs=EXACT)
    assert lp.area_under_roc_curve(True) == pytest.approx(AUROC_TRUE, abs=EXACT)
    assert lp.eleven_pt_interp_precision() == pytest.approx(ELEVEN_PT, abs=EXACT)
    assert lp.average_precision() == pytest.approx(AVG_PREC, abs=EXACT)
    # the rational forms of the hand derivations
    assert AUPR_FALSE == pytest.approx(float(Fraction(67, 144)), abs=EXACT)
    assert AUPR_TRUE == pytest.approx(float(Fraction(247, 450)), abs=EXACT)
    assert AUROC_FALSE == pytest.approx(7 / 15, abs=EXACT)
    assert AVG_PREC == pytest.approx(float(Fraction(92, 225)), abs=EXACT)
    # the eleven-point values average to VLFeat's ap_interp_11 on this example
    assert sum(ELEVEN_PT) / 11 == pytest.approx(float(Fraction(247, 495)), abs=EXACT)


def test_lingpipe_insertion_order_irrelevant_without_ties():
    base = lingpipe_example()
    rng = random.Random(7)
    for _ in range(5):
        order = list(range(len(EXAMPLE)))
        rng.shuffle(order)
        lp = lingpipe_example(order)
        assert lp.pr_curve(False) == base.pr_curve(False)
        assert lp.roc_curve(True) == base.roc_curve(True)
        assert lp.area_under_pr_curve(True) == base.area_under_pr_curve(True)


# ---------------------------------------------------------------------------
# LingPipe ties and quirks
# ---------------------------------------------------------------------------


def test_lingpipe_ties_keep_insertion_order():
    # ReverseScoredComparator returns 0 on equal scores and Collections.sort
    # is stable: tied cases are ranked in addCase order, one point each.
    first_pos = rc.LingPipe()
    first_pos.add_case(True, 1.0)
    first_pos.add_case(False, 1.0)
    first_neg = rc.LingPipe()
    first_neg.add_case(False, 1.0)
    first_neg.add_case(True, 1.0)
    assert first_pos.pr_curve(False) == [(0.0, 1.0), (1.0, 1.0), (1.0, 0.5), (1.0, 0.0)]
    assert first_neg.pr_curve(False) == [(0.0, 1.0), (1.0, 0.5), (1.0, 0.0)]
    assert first_pos.area_under_roc_curve(False) == 1.0
    assert first_neg.area_under_roc_curve(False) == 0.0
    assert first_pos.reciprocal_rank() == 1.0 and first_neg.reciprocal_rank() == 0.5
    # 0.0 and -0.0 are ties for the comparator (it uses > and <)
    signed = rc.LingPipe()
    signed.add_case(False, 0.0)
    signed.add_case(True, -0.0)
    assert signed.precision_at(1) == 0.0


def test_lingpipe_in_place_sort_has_no_memory():
    # sortedCases() sorts mCases in place; cases added later are appended and
    # the stable re-sort still gives "score desc, ties in insertion order".
    cases = [(True, 1.0), (False, 2.0), (False, 1.0), (True, 2.0), (True, 1.0), (False, 0.5)]
    fresh = rc.LingPipe()
    for c, s in cases:
        fresh.add_case(c, s)
    incremental = rc.LingPipe()
    for c, s in cases:
        incremental.add_case(c, s)
        incremental.pr_curve(False)  # triggers the in-place sort
    assert incremental.pr_curve(False) == fresh.pr_curve(False)
    assert incremental.roc_curve(False) == fresh.roc_curve(False)


def test_lingpipe_r_precision_indexes_the_curve_not_the_ranking():
    # [F, T], R = 1: the leading F is dropped from prCurve, so rps[R-1] is the
    # (0, 1) start point; the precision at rank 1 would be 0.
    lp = rc.LingPipe()
    lp.add_case(False, 2.0)
    lp.add_case(True, 1.0)
    assert lp.r_precision() == 1.0
    assert lp.precision_at(1) == 0.0
    # [F, F, T, T], R = 2: rps = (0,1), (.5,1/3), (1,.5), (1,0) -> rps[1] = 1/3
    lp = rc.LingPipe()
    for c, s in [(False, 4), (False, 3), (True, 2), (True, 1)]:
        lp.add_case(c, s)
    assert lp.r_precision() == pytest.approx(1 / 3, abs=EXACT)
    assert lp.precision_at(2) == 0.0
    # R >= len(rps): the last point is the (1, 0) sentinel, so the result is 0
    lp = rc.LingPipe()
    lp.add_case(True, 1.0)
    lp.add_misses(5)
    assert lp.r_precision() == 0.0
    assert lp.precision_at(6) == pytest.approx(1 / 6, abs=EXACT)


def test_lingpipe_degenerate_cases_follow_java_arithmetic():
    empty = rc.LingPipe()
    assert empty.pr_curve(False) == [(0.0, 1.0), (1.0, 0.0)]
    assert empty.pr_curve(True) == [(0.0, 1.0), (1.0, 0.0)]
    assert empty.roc_curve(False) == [(0.0, 0.0), (1.0, 1.0)]
    assert empty.area_under_roc_curve(False) == 0.5
    assert math.isnan(empty.average_precision())  # 0.0 / 0
    assert empty.r_precision() == 1.0
    assert empty.reciprocal_rank() == 0.0
    assert empty.precision_at(3) == 0.0
    # maximumFMeasure(0): F_0 at (0, 1) is 0/0 = NaN and Math.max keeps NaN
    assert math.isnan(lingpipe_example().maximum_f_measure(0.0))
    assert lingpipe_example().maximum_f_measure(2.0) == pytest.approx(
        max(5 * r * p / (r + 4 * p) for r, p in PR_EXACT), abs=EXACT
    )
    # no positive reference: recall is 0/0 = NaN on every case point
    negatives_only = rc.LingPipe()
    negatives_only.add_case(False, 1.0)
    assert math.isnan(negatives_only.pr_curve(False)[1][0])
    with pytest.raises(ValueError):
        rc.LingPipe().add_case(True, float("nan"))
    with pytest.raises(ValueError):
        rc.LingPipe().add_misses(-1)
    with pytest.raises(ValueError):
        rc.LingPipe().add_negative_misses(-1)


# ---------------------------------------------------------------------------
# 2. VLFeat vl_pr
# ---------------------------------------------------------------------------

VL_LABELS = [1 if c else -1 for _, c in EXAMPLE]
VL_SCORES = [s for s, _ in EXAMPLE]

# info.auc (trapezoids): the rank-0 point is (0, 1) but rank 1 is a negative,
# so the curve drops to (0, 1e-10) before the first positive:
#   (1e-10 + 1/2)/2*.2 + (1/3 + 1/2)/2*.2 + (1/2 + 3/5)/2*.2 + (3/8 + 4/9)/2*.2
#   = 1171/3600 + 1e-11 = 0.32527777778777...
VL_AUC = 1171 / 3600 + 1e-11
VL_AP = 92 / 225  # (1/2 + 2/4 + 3/5 + 4/9) / 5
VL_AP11 = 247 / 495  # (1 + 6 * .6 + 2 * 4/9 + 0 + 0) / 11
# interpolate=True: precision at the recall steps becomes .6, .6, .6, 4/9;
# auc is *set to* ap (no area is computed): (3 * .6 + 4/9) / 5 = 101/225
VL_AP_INTERP = 101 / 225


def test_vl_pr_example_num_positives():
    recall, precision, info = rc.vl_pr(VL_LABELS, VL_SCORES, num_positives=5)
    assert info["auc"] == pytest.approx(0.325278, abs=5e-7)
    assert info["ap"] == pytest.approx(0.408889, abs=5e-7)
    assert info["ap_interp_11"] == pytest.approx(0.498990, abs=5e-7)
    assert info["auc"] == pytest.approx(VL_AUC, abs=EXACT)
    assert info["ap"] == pytest.approx(VL_AP, abs=EXACT)
    assert info["ap_interp_11"] == pytest.approx(VL_AP11, abs=EXACT)
    assert info["auc_pa08"] == info["ap_interp_11"]
    assert recall == pytest.approx([0, 0, 0.2, 0.2, 0.4, 0.6, 0.6, 0.6, 0.6, 0.8, 0.8], abs=EXACT)
    assert precision == pytest.approx(
        [1, 1e-10, 1 / 2, 1 / 3, 2 / 4, 3 / 5, 3 / 6, 3 / 7, 3 / 8, 4 / 9, 4 / 10], abs=EXACT
    )
    assert precision[1] == 1e-10  # max(tp, small) / max(tp + fp, small), not 0


def test_vl_pr_example_minus_inf_positive_is_the_same():
    with_inf = rc.vl_pr([*VL_LABELS, 1], [*VL_SCORES, NEG_INF])
    with_num = rc.vl_pr(VL_LABELS, VL_SCORES, num_positives=5)
    assert with_inf == with_num
    # num_negatives only changes n, which vl_pr never uses for these outputs
    assert rc.vl_pr(VL_LABELS, VL_SCORES, num_positives=5, num_negatives=60) == with_num


def test_vl_pr_example_interpolated():
    _, precision, info = rc.vl_pr(VL_LABELS, VL_SCORES, num_positives=5, interpolate=True)
    assert precision == pytest.approx(
        [1, 0.6, 0.6, 0.6, 0.6, 0.6, 0.5, 4 / 9, 4 / 9, 4 / 9, 0.4], abs=EXACT
    )
    assert info["auc"] == info["ap"]
    assert info["ap"] == pytest.approx(VL_AP_INTERP, abs=EXACT)  # 0.448889
    assert info["ap_interp_11"] == pytest.approx(VL_AP11, abs=EXACT)  # unchanged


def test_vl_pr_example_include_inf():
    # The -inf positive is ranked 11th: recall 1 at precision 5/11.
    recall, precision, info = rc.vl_pr([*VL_LABELS, 1], [*VL_SCORES, NEG_INF], include_inf=True)
    assert recall[-1] == 1.0 and precision[-1] == pytest.approx(5 / 11, abs=EXACT)
    assert info["ap"] == pytest.approx((92 / 45 + 5 / 11) / 5, abs=EXACT)
    assert info["auc"] == pytest.approx(VL_AUC + (0.4 + 5 / 11) / 2 * 0.2, abs=EXACT)
    # 5/11 > 4/9, so the 11-point maxima for rc = .7 ... 1.0 all become 5/11
    assert info["ap_interp_11"] == pytest.approx((1 + 3.6 + 4 * 5 / 11) / 11, abs=EXACT)
    # surrogates from num_positives are never included, even with include_inf
    r2, _, info2 = rc.vl_pr(VL_LABELS, VL_SCORES, num_positives=5, include_inf=True)
    assert r2[-1] == pytest.approx(0.8, abs=EXACT) and info2["ap"] == pytest.approx(VL_AP)


def test_vl_pr_linspace_is_matlab_not_numpy():
    # MATLAB computes k*(1-0)/10, so linspace(0,1,11)(7) is exactly 0.6 and
    # recall 3/5 counts for rc = 0.6; 6 * 0.1 (numpy) would not include it and
    # would give (1 + 5*.6 + 3*4/9)/11 = 0.4848... on the example.
    grid = rc._matlab_linspace(0.0, 1.0, 11)
    assert grid == [k / 10 for k in range(11)]
    assert grid[6] == 3 / 5 and 6 * 0.1 > 3 / 5


# The cases of VLFeat's toolbox/xtest/vl_test_pr.m (non-'stable' outputs).
def test_vl_test_pr_perfect():
    rcl, prc, info = rc.vl_pr([1, 1, -1, -1, -1], [5, 4, 3, 2, 1])
    assert prc == pytest.approx([1, 1 / 1, 2 / 2, 2 / 3, 2 / 4, 2 / 5], abs=EXACT)
    assert rcl == pytest.approx([x / 2 for x in (0, 1, 2, 2, 2, 2)], abs=EXACT)
    assert (info["auc"], info["ap"], info["ap_interp_11"]) == pytest.approx((1, 1, 1), abs=EXACT)


def test_vl_test_pr_swap1():
    rcl, prc, info = rc.vl_pr([1, 1, -1, -1, -1], [5, 3, 4, 2, 1])
    assert prc == pytest.approx([1, 1 / 1, 1 / 2, 2 / 3, 2 / 4, 2 / 5], abs=EXACT)
    assert rcl == pytest.approx([x / 2 for x in (0, 1, 1, 2, 2, 2)], abs=EXACT)
    assert info["auc"] == pytest.approx(0.5 + 0.5 * (0.5 + 2 / 3) / 2, abs=EXACT)
    assert info["ap"] == pytest.approx((1 / 1 + 2 / 3) / 2, abs=EXACT)
    assert info["ap_interp_11"] == pytest.approx((6 * 1 + 5 * 2 / 3) / 11, abs=EXACT)


def test_vl_test_pr_inf():
    scores = [1, NEG_INF, -1, -1, -1, -1]
    labels = [1, 1, -1, -1, -1, -1]
    rc1, _, info1 = rc.vl_pr(labels, scores, include_inf=True)
    rc2, _, info2 = rc.vl_pr(labels, scores, include_inf=False)
    assert len(rc1) == len(rc2) + 1
    assert info1["auc"] == pytest.approx(1 * 0.5 + (1 / 5 + 2 / 6) / 2 * 0.5, abs=EXACT)
    assert info1["ap"] == pytest.approx(1 * 0.5 + 2 / 6 * 0.5, abs=EXACT)
    assert info1["ap_interp_11"] == pytest.approx(1 * 6 / 11 + 2 / 6 * 5 / 11, abs=EXACT)
    assert info2["auc"] == pytest.approx(0.5, abs=EXACT)
    assert info2["ap"] == pytest.approx(0.5, abs=EXACT)
    assert info2["ap_interp_11"] == pytest.approx(6 / 11, abs=EXACT)


def test_vl_test_pr_inf_unstable_outputs():
    scores = [-1, -1, -1, -1, NEG_INF, +1]
    labels = [-1, -1, -1, -1, +1, +1]
    rcl1, prc1, _ = rc.vl_pr(labels, scores, include_inf=True)
    rcl2, prc2, _ = rc.vl_pr(labels, scores, include_inf=False)
    assert rcl1 == pytest.approx([0, 0.5, 0.5, 0.5, 0.5, 0.5, 1], abs=EXACT)
    assert prc1 == pytest.approx([1, 1, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 2 / 6], abs=EXACT)
    assert rcl2 == pytest.approx([0, 0.5, 0.5, 0.5, 0.5, 0.5], abs=EXACT)
    assert prc2 == pytest.approx([1, 1, 1 / 2, 1 / 3, 1 / 4, 1 / 5], abs=EXACT)


# ---------------------------------------------------------------------------
# VLFeat ties and quirks
# ---------------------------------------------------------------------------


def test_vl_pr_ties_keep_input_order():
    # sort(scores, 'descend') is stable: tied samples stay in input order.
    r1, p1, i1 = rc.vl_pr([1, -1], [0.0, 0.0])
    r2, p2, i2 = rc.vl_pr([-1, 1], [0.0, -0.0])
    assert (r1, p1) == ([0.0, 1.0, 1.0], [1.0, 1.0, 0.5])
    assert r2 == [0.0, 0.0, 1.0] and p2 == pytest.approx([1.0, 1e-10, 0.5], abs=EXACT)
    assert i1["ap"] == 1.0 and i2["ap"] == 0.5


def test_vl_pr_zero_labels_repeat_a_point():
    # vl_tpfp keeps label-0 samples in the ranking: they add a rank where
    # neither TP nor FP grows (a repeated point); the info numbers are unchanged.
    r0, p0, info0 = rc.vl_pr([1, 0, -1, 1], [4, 3, 2, 1])
    r, _, info = rc.vl_pr([1, -1, 1], [4, 2, 1])
    assert r0 == [0.0, 0.5, 0.5, 0.5, 1.0] and r == [0.0, 0.5, 0.5, 1.0]
    assert p0 == [1.0, 1.0, 1.0, 0.5, 2 / 3]
    assert info0 == info


def test_vl_pr_degenerate():
    # no positives: recall = 0/1e-10 = 0, ap = 0/0 = NaN (MATLAB arithmetic)
    recall, _, info = rc.vl_pr([-1, -1], [2, 1])
    assert recall == [0.0, 0.0, 0.0] and math.isnan(info["ap"])
    # nothing retrieved (all -inf): only the rank-0 point remains
    recall, precision, info = rc.vl_pr([1, -1], [NEG_INF, NEG_INF])
    assert (recall, precision) == ([0.0], [1.0])
    assert info == {"auc": 0.0, "ap": 0.0, "ap_interp_11": 1 / 11, "auc_pa08": 1 / 11}
    # NaN scores sort first in a descending MATLAB sort (and are retrieved)
    recall, _, _ = rc.vl_pr([-1, 1], [1.0, float("nan")])
    assert recall == [0.0, 1.0, 1.0]
    # NumPositives smaller than the actual count only warns
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, _, info = rc.vl_pr([1, 1, -1], [3, 2, 1], num_positives=1)
    assert caught and info["ap"] == 2.0


# ---------------------------------------------------------------------------
# 3. Agreement with scikit-learn and between the references
# ---------------------------------------------------------------------------


def _lingpipe(labels, scores, order=None):
    lp = rc.LingPipe()
    idx = range(len(labels)) if order is None else order
    for i in idx:
        lp.add_case(bool(labels[i]), scores[i])
    return lp


def _random_case(rng, n, distinct):
    labels = [rng.random() < 0.4 for _ in range(n)]
    labels[0], labels[1] = True, False  # both classes present
    scores = [rng.random() for _ in range(n)] if distinct else [rng.randint(0, 4) for _ in range(n)]
    return labels, scores


def test_sklearn_agreement_without_ties():
    rng = random.Random(20240601)
    for _ in range(60):
        n = rng.randint(2, 40)
        labels, scores = _random_case(rng, n, distinct=True)
        assert len(set(scores)) == n
        lp = _lingpipe(labels, scores)
        y = [int(v) for v in labels]
        assert lp.area_under_roc_curve(False) == pytest.approx(roc_auc_score(y, scores), abs=1e-12)
        ap = average_precision_score(y, scores)
        assert lp.average_precision() == pytest.approx(ap, abs=1e-12)
        _, _, info = rc.vl_pr([1 if v else -1 for v in labels], scores)
        assert info["ap"] == pytest.approx(ap, abs=1e-12)


def test_sklearn_roc_auc_with_ties_is_mean_of_extreme_tie_orders():
    # LingPipe ranks tied cases in insertion order, one point each: a tied
    # (positive, negative) pair counts 1 if the positive was added first, else
    # 0.  sklearn groups ties (diagonal segment) and counts 1/2.  Hence
    # sklearn == (area with tied positives first + area with them last) / 2.
    rng = random.Random(99)
    for _ in range(60):
        n = rng.randint(2, 40)
        labels, scores = _random_case(rng, n, distinct=False)
        pos_first = sorted(range(n), key=lambda i: not labels[i])
        pos_last = sorted(range(n), key=lambda i: labels[i])
        hi = _lingpipe(labels, scores, pos_first).area_under_roc_curve(False)
        lo = _lingpipe(labels, scores, pos_last).area_under_roc_curve(False)
        skl = roc_auc_score([int(v) for v in labels], scores)
        assert (hi + lo) / 2 == pytest.approx(skl, abs=1e-12)
        assert lo <= skl + 1e-12 and skl <= hi + 1e-12


def test_sklearn_roc_auc_with_misses():
    # LingPipe joins the last case point to (1, 1) with a straight segment:
    # the same as sklearn with every missed positive and negative given one
    # common score below all the others.
    rng = random.Random(5)
    for _ in range(40):
        n = rng.randint(2, 30)
        labels, scores = _random_case(rng, n, distinct=True)
        pos_miss, neg_miss = rng.randint(0, 5), rng.randint(0, 5)
        lp = _lingpipe(labels, scores)
        lp.add_misses(pos_miss)
        lp.add_negative_misses(neg_miss)
        y = [int(v) for v in labels] + [1] * pos_miss + [0] * neg_miss
        s = scores + [-1.0] * (pos_miss + neg_miss)
        assert lp.area_under_roc_curve(False) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


cases_strategy = st.lists(
    st.tuples(st.booleans(), st.integers(min_value=-3, max_value=3)), min_size=0, max_size=25
)


@settings(max_examples=examples(200), deadline=None)
@given(cases=cases_strategy, misses=st.integers(min_value=0, max_value=3))
def test_lingpipe_and_vlfeat_agree_on_ap_and_11pt(cases, misses):
    # Both rank ties in input order, give missed positives precision 0 and
    # divide by the number of positives, so their AP coincide exactly, ties
    # included; LingPipe's 11 interpolated precisions average to ap_interp_11.
    n_pos = sum(1 for c, _ in cases if c) + misses
    if n_pos == 0:
        return
    lp = rc.LingPipe()
    for correct, score in cases:
        lp.add_case(correct, score)
    lp.add_misses(misses)
    _, _, info = rc.vl_pr(
        [1 if c else -1 for c, _ in cases], [s for _, s in cases], num_positives=n_pos
    )
    assert lp.average_precision() == info["ap"]
    assert sum(lp.eleven_pt_interp_precision()) / 11 == pytest.approx(
        info["ap_interp_11"], abs=1e-12
    )
