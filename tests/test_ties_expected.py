"""ties="expected": each measure's expected value over every order of tied documents
(McSherry & Najork 2008), in closed form, against brute-force enumeration of all orders
(tests/reference.py) on small tie-heavy random cases.

`evaluate` does not accept ties="expected" yet (it must hand the tie rule to its Ranking:
docs/readme-measures.md); until then these tests build the ranked frame as `evaluate` does
(sort by group and `ranking.sort_keys`, number the rows) and aggregate the same expressions.
"""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import preval
from preval.measures import build, parse
from preval.ranking import DOC, LABEL, POSITION, QUERY, RETRIEVED, ROW, SCORE, Ranking, sort_keys
from tests import reference
from tests.profiles import examples
from tests.test_properties import joined

MEASURES = [
    "P@1", "P@3", "P(rel=2)@2", "R@2", "R(norm=min)@3", "RR", "RR@2", "RR(rel=2)",
    "AP", "AP@3", "AP(norm=min)@2", "AP(rel=2)", "nDCG", "nDCG@3", "nDCG(dcg=exp-log2)@2",
    "DCG@2", "Hits@3", "NumRelRet", "SetP", "Success@1", "Success@3", "Success(rel=2)@2",
]  # fmt: skip


def expected(run_rows, qrels, measures, trec_version: int = 9) -> dict[str, dict[str, float]]:
    """preval's closed forms, one row per judged query."""
    table = joined(run_rows, qrels)
    rows = table.lazy().select(
        pl.col("query").alias(QUERY),
        pl.col("doc").alias(DOC),
        pl.col("score").cast(pl.Float64).alias(SCORE),
        pl.col("label").cast(pl.Float64).alias(LABEL),
    )
    order, descending = sort_keys("expected", has_doc=True, trec_version=trec_version)
    ranked = (
        rows.with_row_index(ROW)
        .with_columns(pl.col(SCORE).is_not_null().alias(RETRIEVED))
        .sort([pl.col(QUERY), *order], descending=[False, *descending], nulls_last=True)
        .with_row_index(POSITION)
    )
    ranking = Ranking("rows", 1.0, trec_version=trec_version, ties="expected")
    specs = [parse(m) for m in measures]
    got = ranked.group_by(QUERY).agg([build(s, ranking) for s in specs]).collect()
    return {r[QUERY]: r for r in got.iter_rows(named=True) if r[QUERY] in qrels}


SCORES = st.sampled_from([0.0, 0.5, 1.0, 0.1, 0.1 + 1e-12, -2.0])  # float32 collisions too
LABELS = st.sampled_from([-1, 0, 0, 1, 2, 3])
DOCS = [f"d{i}" for i in range(6)]


@st.composite
def tied_cases(draw):
    queries = draw(st.lists(st.sampled_from(["q1", "q2", "q3"]), unique=True, min_size=1))
    run_rows, qrels = [], {}
    for q in queries:
        retrieved = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=6))
        run_rows += [(q, d, draw(SCORES)) for d in retrieved]
        if draw(st.booleans()) or not retrieved:
            judged = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=6))
            qrels[q] = {d: draw(LABELS) for d in judged}
    return run_rows, qrels


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=tied_cases(), version=st.sampled_from([9, 10]))
def test_closed_forms_equal_the_mean_over_all_orders(case, version) -> None:
    run_rows, qrels = case
    run: dict[str, dict[str, float]] = {}
    for q, d, s in run_rows:
        run.setdefault(q, {})[d] = s
    want = reference.evaluate(run, qrels, MEASURES, ties="expected", trec_version=version)
    got = expected(run_rows, qrels, MEASURES, version)
    assert sorted(got) == sorted(want)
    for q, values in want.items():
        for m in MEASURES:
            column = parse(m).name
            assert got[q][column] == pytest.approx(values[m], abs=1e-12), (q, m)


def test_a_hand_case() -> None:
    # 4 documents tied, 2 relevant (R = 2): E[RR] = 1/1·1/2 + 1/2·1/3 + 1/3·1/6 = 13/18;
    # E[P@1] = 1/2; E[AP] = mean over the 6 placements of the two relevant documents
    run_rows = [("q", d, 1.0) for d in "abcd"]
    qrels = {"q": {"a": 1, "b": 0, "c": 1, "d": 0}}
    got = expected(run_rows, qrels, ["RR", "P@1", "AP"])["q"]
    assert got["RR"] == pytest.approx(13 / 18)
    assert got["P@1"] == pytest.approx(0.5)
    places = [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)]
    ap = sum((1 / i + 2 / j) / 2 for i, j in places) / len(places)
    assert got["AP"] == pytest.approx(ap)
    # E[Success@2]: 1 - P(both top places non-relevant) = 1 - (2/4)(1/3) = 5/6
    got = expected(run_rows, qrels, ["Success@2"])["q"]
    assert got["Success@2"] == pytest.approx(5 / 6)


def test_ndcg_matches_scikit_learn_ignore_ties_false() -> None:
    sk = pytest.importorskip("sklearn.metrics")
    labels = [3, 2, 0, 1, 0, 2]
    scores = [0.5, 0.5, 0.9, 0.5, 0.1, 0.1]
    run_rows = [("q", f"d{i}", s) for i, s in enumerate(scores)]
    qrels = {"q": {f"d{i}": lab for i, lab in enumerate(labels)}}
    got = expected(run_rows, qrels, ["nDCG", "nDCG@3"])["q"]
    assert got["nDCG"] == pytest.approx(sk.ndcg_score([labels], [scores], ignore_ties=False))
    assert got["nDCG@3"] == pytest.approx(sk.ndcg_score([labels], [scores], k=3))
    assert not math.isclose(got["nDCG@3"], sk.ndcg_score([labels], [scores], k=3, ignore_ties=True))


def test_measures_without_a_closed_form_say_so() -> None:
    with pytest.raises(preval.MeasureError, match="no closed form"):
        expected([("q", "a", 1.0)], {"q": {"a": 1}}, ["Bpref"])
    with pytest.raises(preval.MeasureError, match="no closed form"):
        expected([("q", "a", 1.0)], {"q": {"a": 1}}, ["AP(norm=hits)@3"])


def test_tie_at_cutoff_flags_a_straddling_tie() -> None:
    scores, labels = [3.0, 2.0, 2.0, 1.0], [1, 0, 1, 0]
    run = pl.DataFrame({"query": "q", "doc": list("abcd"), "score": scores, "label": labels})
    got = preval.evaluate(run, ["TieAtCutoff@1", "TieAtCutoff@2", "TieAtCutoff@4"]).collect()
    assert got.row(0) == ("q", 0.0, 1.0, 0.0)


def test_evaluate_takes_ties_expected() -> None:
    run_rows = [("q", d, 1.0) for d in "abcd"]
    table = joined(run_rows, {"q": {"a": 1, "b": 0, "c": 1, "d": 0}})
    got = preval.evaluate(table, ["RR"], ties="expected").collect()
    assert got["RR"][0] == pytest.approx(13 / 18)
