"""Independent plain-Python references of two curve evaluators.

* ``LingPipe`` -- a line-by-line port of LingPipe 4.0.1's
  ``com.aliasi.classify.ScoredPrecisionRecallEvaluation`` (together with the
  bits of ``PrecisionRecallEvaluation`` and ``ScoredObject`` it relies on).
* ``vl_pr`` -- a port of VLFeat's ``toolbox/plotop/vl_pr.m`` and its helper
  ``vl_tpfp.m`` (the ``Interpolate``, ``NumPositives``, ``NumNegatives`` and
  ``IncludeInf`` options; not ``Stable``, ``NormalizePrior`` or plotting).

This module shares no code with ``preval``: it neither imports nor copies
anything from ``preval/``.  It was written from the Java and MATLAB sources
only, uses the standard library only, and favours faithfulness (same control
flow, same floating-point operation order, same quirks) over speed or
"correctness".  Known quirks that are reproduced on purpose are listed in the
docstrings.

Tie handling
------------
LingPipe sorts its case list in place with ``Collections.sort`` (a stable
merge sort) and ``ScoredObject.reverseComparator()``, whose ``compare`` returns
``-1`` if ``s1 > s2``, ``1`` if ``s1 < s2`` and ``0`` otherwise.  Tied scores
(including ``0.0`` vs ``-0.0``) therefore keep their ``addCase`` order, and
every case is its own operating point (no grouping of ties).  Because the sort
is stable and new cases are appended, re-sorting after further ``addCase``
calls still yields "descending score, ties in insertion order".  NaN scores
make the Java comparator inconsistent (NaN "equals" everything), so the result
would depend on the sort algorithm; ``add_case`` rejects them.

VLFeat sorts with MATLAB's ``sort(scores, 'descend')``, which is stable (equal
elements keep their input order, in either direction), and again every sample
is its own point.  MATLAB puts NaN first when sorting in descending order; that
is emulated here.
"""

from __future__ import annotations

import functools
import math
import warnings

__all__ = ["LingPipe", "vl_pr"]


# --------------------------------------------------------------------------
# Java arithmetic helpers
# --------------------------------------------------------------------------


def _jdiv(x: float, y: float) -> float:
    """Java ``double`` division: never raises, 0/0 is NaN, x/0 is +-Infinity."""
    x = float(x)
    y = float(y)
    if y != 0.0:
        return x / y
    if x == 0.0 or math.isnan(x):
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def _jmax(a: float, b: float) -> float:
    """Java ``Math.max`` for doubles: NaN if either is NaN; +0.0 beats -0.0."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b == 0.0:
        return 0.0 if (math.copysign(1.0, a) > 0 or math.copysign(1.0, b) > 0) else -0.0
    return a if a >= b else b


def _f_measure(beta: float, recall: float, precision: float) -> float:
    """``PrecisionRecallEvaluation.fMeasure(beta, recall, precision)``."""
    beta_sq = beta * beta
    return _jdiv((1.0 + beta_sq) * recall * precision, recall + (beta_sq * precision))


def _reverse_score_compare(c1: _Case, c2: _Case) -> int:
    """``ScoredObject.ReverseScoredComparator.compare``."""
    if c1.score > c2.score:
        return -1
    if c1.score < c2.score:
        return 1
    return 0


class _Case:
    __slots__ = ("correct", "score")

    def __init__(self, correct: bool, score: float) -> None:
        self.correct = bool(correct)
        self.score = float(score)

    def __repr__(self) -> str:
        return f"{self.correct} : {self.score}"


# --------------------------------------------------------------------------
# LingPipe 4.0.1 ScoredPrecisionRecallEvaluation
# --------------------------------------------------------------------------


class LingPipe:
    """Port of LingPipe 4.0.1 ``ScoredPrecisionRecallEvaluation``.

    Curves are returned as lists of tuples: ``(recall, precision)`` for
    ``pr_curve`` and ``(1 - specificity, sensitivity)`` for ``roc_curve``.

    Quirks reproduced from the Java code:

    * ``pr_curve`` always starts with ``(0, 1)`` and ends with ``(1, 0)``, and
      drops operating points with recall 0 and precision 0 (leading false
      positives); ``roc_curve`` starts with ``(0, 0)`` and ends with ``(1, 1)``.
    * Interpolation (PR) replaces each precision by the maximum precision at
      the same or a later point, then keeps only the first point of every run
      of equal recall values; interpolation (ROC) drops every point whose x
      equals the next point's x.
    * ``r_precision`` indexes the *curve* (``rps[R - 1]``), not the ranking,
      so it is the precision at rank R only when exactly one leading false
      positive was dropped; when ``R >= len(curve)`` it returns
      ``0.0 * (len - 1) / R == 0.0`` (the last point is the ``(1, 0)``
      sentinel).
    * ``average_precision`` counts the ``(1, 0)`` sentinel (adding 0) when
      recall 1 is not reached, and divides by the number of positive
      references (including misses).
    * Divisions follow Java semantics (0/0 is NaN, never an exception), and
      ``maximum_f_measure`` uses ``Math.max``, which propagates NaN.
    """

    def __init__(self) -> None:
        self._cases: list[_Case] = []
        self._negative_ref = 0
        self._positive_ref = 0

    # ---- population ------------------------------------------------------

    def add_case(self, correct: bool, score: float) -> None:
        score = float(score)
        if math.isnan(score):
            msg = "NaN scores make LingPipe's comparator inconsistent; not modelled"
            raise ValueError(msg)
        self._cases.append(_Case(correct, score))
        if correct:
            self._positive_ref += 1
        else:
            self._negative_ref += 1

    def add_misses(self, count: int) -> None:
        if count < 0:
            msg = f"Miss count must be non-negative. Found count={count}"
            raise ValueError(msg)
        self._positive_ref += count

    def add_negative_misses(self, count: int) -> None:
        if count < 0:
            msg = f"Miss count must be non-negative. Found count={count}"
            raise ValueError(msg)
        self._negative_ref += count

    def num_cases(self) -> int:
        return self._positive_ref + self._negative_ref

    def num_positive_ref(self) -> int:
        return self._positive_ref

    def num_negative_ref(self) -> int:
        return self._negative_ref

    def _sorted_cases(self) -> list[_Case]:
        # Collections.sort(mCases, ScoredObject.reverseComparator()): in place
        # and stable (Python's list.sort is stable too).
        self._cases.sort(key=functools.cmp_to_key(_reverse_score_compare))
        return self._cases

    # ---- curves ------------------------------------------------------------

    def pr_curve(self, interpolate: bool) -> list[tuple[float, float]]:
        tp = fp = 0
        pr_list: list[list[float]] = [[0.0, 1.0]]
        for case in self._sorted_cases():
            # PrecisionRecallEvaluation.addCase(correct, true)
            if case.correct:
                tp += 1
            else:
                fp += 1
            r = _jdiv(tp, self._positive_ref)
            p = _jdiv(tp, tp + fp)  # eval.precision()
            if r == 0.0 and p == 0.0:
                continue
            pr_list.append([r, p])
        pr_list.append([1.0, 0.0])
        return _lp_interpolate(pr_list, interpolate)

    def roc_curve(self, interpolate: bool) -> list[tuple[float, float]]:
        tp = 0
        true_negs = self._negative_ref
        ss_list: list[tuple[float, float]] = [(0.0, 0.0)]
        for case in self._sorted_cases():
            if case.correct:
                tp += 1
            else:
                true_negs -= 1
            r = _jdiv(tp, self._positive_ref)
            rr = _jdiv(true_negs, self._negative_ref)
            ss_list.append((1 - rr, r))
        ss_list.append((1.0, 1.0))
        if interpolate:
            ss_list = _lp_interpolate_roc(ss_list)
        return ss_list

    # ---- scalar measures -------------------------------------------------

    def r_precision(self) -> float:
        if self._positive_ref == 0:
            return 1.0
        rps = self.pr_curve(False)
        if self._positive_ref < len(rps):
            return rps[self._positive_ref - 1][1]
        return _jdiv(rps[-1][1] * (len(rps) - 1), self._positive_ref)

    def eleven_pt_interp_precision(self) -> list[float]:
        rps = self.pr_curve(True)
        return [_lp_precision_at_recall(0.1 * i, rps) for i in range(11)]

    def average_precision(self) -> float:
        recall = 0.0
        total = 0.0
        for r, p in self.pr_curve(False):
            if r > recall:
                total += p
                recall = r
        return _jdiv(total, self._positive_ref)

    def maximum_f_measure(self, beta: float = 1.0) -> float:
        max_f = 0.0
        for r, p in self.pr_curve(False):
            max_f = _jmax(max_f, _f_measure(beta, r, p))
        return max_f

    def precision_at(self, rank: int) -> float:
        if rank < 0:
            msg = f"Rank must be positive. Found rank={rank}"
            raise ValueError(msg)
        if rank == 0:
            return 1.0
        cases = self._sorted_cases()
        correct_count = sum(1 for case in cases[: min(rank, len(cases))] if case.correct)
        return correct_count / rank

    def pr_breakeven_point(self) -> float:
        return self.r_precision()

    def reciprocal_rank(self) -> float:
        for i, case in enumerate(self._sorted_cases()):
            if case.correct:
                return 1.0 / (i + 1)
        return 0.0

    def area_under_pr_curve(self, interpolate: bool) -> float:
        return _lp_area_under(self.pr_curve(interpolate))

    def area_under_roc_curve(self, interpolate: bool) -> float:
        return _lp_area_under(self.roc_curve(interpolate))


def _lp_precision_at_recall(recall: float, rps: list[tuple[float, float]]) -> float:
    for r, p in rps:
        if r + 0.0000000000001 >= recall:  # "avoid close near misses from divisions"
            return p
    return 0.0


def _lp_interpolate(pr_list: list[list[float]], interpolate: bool) -> list[tuple[float, float]]:
    if not interpolate:
        return [(r, p) for r, p in pr_list]
    pr_list = list(reversed(pr_list))
    result_list: list[list[float]] = []
    min_p = 0.0
    for rp in pr_list:
        p = rp[1]
        if p > min_p:
            min_p = p
        else:
            rp[1] = min_p
        result_list.insert(0, rp)  # LinkedList.addFirst
    trimmed: list[list[float]] = []
    rp = [0.0, 1.0]
    for rp2 in result_list:
        if rp2[0] == rp[0]:
            continue
        trimmed.append(rp)
        rp = rp2
    trimmed.append(rp)
    return [(r, p) for r, p in trimmed]


def _lp_interpolate_roc(ss_list: list[tuple[float, float]]) -> list[tuple[float, float]]:
    result = [ss_list[i] for i in range(len(ss_list) - 1) if ss_list[i][0] != ss_list[i + 1][0]]
    result.append(ss_list[-1])
    return result


def _lp_area_under(f: list[tuple[float, float]]) -> float:
    area = 0.0
    for i in range(1, len(f)):
        x1, y1 = f[i - 1]
        x2, y2 = f[i]
        area += (y1 + y2) * (x2 - x1) / 2.0
    return area


# --------------------------------------------------------------------------
# VLFeat vl_pr.m (+ vl_tpfp.m)
# --------------------------------------------------------------------------


def _mdiv(x: float, y: float) -> float:
    """MATLAB double division (IEEE: 0/0 is NaN, x/0 is +-Inf)."""
    return _jdiv(x, y)


def _matlab_sort_descend_perm(scores: list[float]) -> list[int]:
    """Permutation of ``[~, perm] = sort(scores, 'descend')`` (0-based).

    Stable: equal scores keep their input order.  NaNs come first (MATLAB's
    placement of missing values for descending sorts), in input order.
    """
    nans = [i for i, s in enumerate(scores) if math.isnan(s)]
    rest = [i for i, s in enumerate(scores) if not math.isnan(s)]
    # key -s: stable sort ascending on -s == descending on s; 0.0 and -0.0
    # compare equal, as in MATLAB.
    rest.sort(key=lambda i: -scores[i])
    return nans + rest


def _matlab_linspace(d1: float, d2: float, n: int) -> list[float]:
    """MATLAB ``linspace``: ``d1 + (0:n1).*(d2-d1)/n1`` with exact endpoints.

    Note ``(k*(d2-d1))/n1``: for (0, 1, 11) this is ``k/10``, so the sixth
    value is exactly ``0.6`` (numpy.linspace gives ``0.6000000000000001``).
    """
    n1 = n - 1
    y = [d1 + (k * (d2 - d1)) / n1 for k in range(n)]
    y[0] = d1
    y[-1] = d2
    return y


def vl_pr(
    labels,
    scores,
    *,
    interpolate: bool = False,
    num_positives: int | None = None,
    num_negatives: int | None = None,
    normalize_prior: float | None = None,
    include_inf: bool = False,
) -> tuple[list[float], list[float], dict[str, float]]:
    """Port of VLFeat ``[recall, precision, info] = vl_pr(labels, scores, ...)``.

    ``labels > 0`` are positives, ``< 0`` negatives; a ``0`` label is *not*
    removed from the ranking: as in ``vl_tpfp.m`` it occupies a rank that
    changes neither TP nor FP, i.e. it only repeats the previous curve point
    (which leaves ``auc``, ``ap`` and ``ap_interp_11`` unchanged).  It is not
    counted in P or N.

    Returns ``recall`` and ``precision`` as lists starting with the
    conventional rank-0 point (recall 0, precision 1), and
    ``info = {"auc", "ap", "ap_interp_11", "auc_pa08"}``.

    Details (from the source):

    * samples are sorted by decreasing score (stable); unless
      ``include_inf``, the ranking is cut after the last sample with score
      ``> -inf`` (so ``-inf`` samples are never retrieved but their labels
      still count in P and N);
    * ``num_positives``/``num_negatives`` override P/N (surrogate samples
      with ``-inf`` score that are never retrieved, even with
      ``include_inf``); smaller than the actual count only warns;
    * ``recall = tp / max(p, 1e-10)``,
      ``precision = max(tp, 1e-10) / max(tp + fp, 1e-10)`` (so precision is
      ``1e-10/fp``, not 0, before the first positive);
    * ``interpolate``: precision becomes the cumulative max from the end
      (low scores) to the start (high scores);
    * ``auc`` = trapezoidal area when not interpolating; when interpolating
      the trapezoid is not computed at all and ``auc`` is set to ``ap``;
    * ``ap = sum(precision at the points where recall increases) / p``;
    * ``ap_interp_11 = sum over rc in linspace(0, 1, 11) of
      max([0, precision(recall >= rc)]) / 11``.
    """
    labels = [float(v) for v in labels]
    scores = [float(v) for v in scores]
    if len(labels) != len(scores):
        msg = "labels and scores must have the same length"
        raise ValueError(msg)

    # ---- vl_tpfp -----------------------------------------------------------
    p = sum(1 for v in labels if v > 0)
    n = sum(1 for v in labels if v < 0)
    if num_positives is not None:
        if num_positives < p:
            warnings.warn(
                "NUMPOSITIVES is smaller than the number of positives in LABELS.",
                stacklevel=2,
            )
        p = num_positives
    if num_negatives is not None:
        if num_negatives < n:
            warnings.warn(
                "NUMNEGATIVES is smaller than the number of negatives in LABELS.",
                stacklevel=2,
            )
        n = num_negatives

    perm = _matlab_sort_descend_perm(scores)
    sorted_scores = [scores[i] for i in perm]
    if include_inf:
        stop = len(sorted_scores)
    else:
        # stop = max(find(scores > -inf)); max([]) = [] and 1:[] is empty.
        stop = 0
        for k, s in enumerate(sorted_scores, start=1):
            if s > -math.inf:
                stop = k
    ranked_labels = [labels[i] for i in perm[:stop]]
    tp = [0]
    fp = [0]
    for v in ranked_labels:
        tp.append(tp[-1] + (1 if v > 0 else 0))
        fp.append(fp[-1] + (1 if v < 0 else 0))

    # ---- vl_pr -------------------------------------------------------------
    small = 1e-10
    recall = [_mdiv(t, max(p, small)) for t in tp]
    if normalize_prior is None:
        precision = [max(t, small) / max(t + f, small) for t, f in zip(tp, fp, strict=True)]
    else:  # vl_pr.m: reweigh positives and negatives to the prior a
        a = normalize_prior
        precision = [
            max(t * a / max(p, small), small)
            / max(t * a / max(p, small) + f * (1 - a) / max(n, small), small)
            for t, f in zip(tp, fp, strict=True)
        ]

    if interpolate:
        running = -math.inf
        interp = [0.0] * len(precision)
        for k in range(len(precision) - 1, -1, -1):
            running = max(running, precision[k])
            interp[k] = running
        precision = interp

    info: dict[str, float] = {}
    if not interpolate:
        terms = [
            (precision[k] + precision[k + 1]) * (recall[k + 1] - recall[k])
            for k in range(len(recall) - 1)
        ]
        info["auc"] = 0.5 * _msum(terms)

    sel = [k + 1 for k in range(len(recall) - 1) if recall[k + 1] - recall[k] != 0]
    info["ap"] = _mdiv(_msum([precision[k] for k in sel]), p)
    if interpolate:
        info["auc"] = info["ap"]

    ap11 = 0.0
    for rc in _matlab_linspace(0.0, 1.0, 11):
        pr = max([0.0] + [pk for pk, rk in zip(precision, recall, strict=True) if rk >= rc])
        ap11 = ap11 + pr / 11
    info["ap_interp_11"] = ap11
    info["auc_pa08"] = ap11
    return recall, precision, info


def _msum(values: list[float]) -> float:
    """MATLAB ``sum`` of a row vector, taken left to right (0 when empty)."""
    total = 0.0
    for v in values:
        total += v
    return total
