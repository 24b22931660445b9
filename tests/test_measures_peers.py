"""Peers' names give peers' numbers (issue #25): ir_measures, ranx and trec_eval spellings.

Golden numbers from peers that are not test dependencies (ir_measures 0.4.3, ranx 0.3.21) are
fixed here, each with the call that produced it; pytrec_eval (trec_eval 9) is asked directly.
"""

from __future__ import annotations

import polars as pl
import pytest

import preval
from tests import reference


def values(run: dict, qrels: dict, measures: list[str], **kw) -> dict[str, dict[str, float]]:
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    run_df = pl.DataFrame(
        rows, schema={"query": pl.String, "doc": pl.String, "score": pl.Float64}, orient="row"
    )
    judged = [(q, d, lab) for q, docs in qrels.items() for d, lab in docs.items()]
    qrels_df = pl.DataFrame(
        judged, schema={"query": pl.String, "doc": pl.String, "label": pl.Int64}, orient="row"
    )
    got = preval.evaluate(run_df, measures, qrels=qrels_df, **kw).collect()
    return {r["query"]: r for r in got.iter_rows(named=True)}


# the example and a few more: 3 of 5 retrieved judged
QRELS = {"q": {"a": 1, "b": 0, "c": 1, "d": 1}}
RUN = {"q": {"a": 3.0, "b": 2.0, "c": 1.0, "x": 0.5, "y": 0.2}}


def test_judged_divides_by_the_documents_shown_as_ir_measures() -> None:
    # ir_measures.calc_aggregate([Judged@10, Judged, Judged@2], QRELS, RUN)
    # -> {Judged@10: 0.6, Judged: 0.6, Judged@2: 1.0}
    got = values(RUN, QRELS, ["Judged@10", "Judged", "Judged@2", "Judged(norm=K)@10"])["q"]
    assert got["Judged@10"] == pytest.approx(0.6)
    assert got["Judged"] == pytest.approx(0.6)
    assert got["Judged@2"] == pytest.approx(1.0)
    assert got["Judged(norm=K)@10"] == pytest.approx(0.3)  # preval's former convention
    # the case: 5 retrieved, all judged -> 1.0 at Judged@10 (0.5 with norm=K)
    full = {"q": dict.fromkeys("abcde", 0)}
    got = values({"q": {d: 1.0 / (i + 1) for i, d in enumerate("abcde")}}, full,
                 ["Judged@10", "Judged(norm=K)@10"])["q"]  # fmt: skip
    assert (got["Judged@10"], got["Judged(norm=K)@10"]) == (1.0, 0.5)


def test_judged_is_zero_when_nothing_is_retrieved() -> None:
    got = values({}, QRELS, ["Judged", "Judged@5", "Judged(norm=K)@5"])["q"]
    assert got["Judged"] == got["Judged@5"] == got["Judged(norm=K)@5"] == 0.0


def test_set_f_beta_is_trec_evals_weight() -> None:
    # ir_measures.calc_aggregate([SetF(beta=2.0)], QRELS, RUN) -> 0.5454545454545454
    # (pytrec_eval set_F.2 alike: (2 + 1)PR/(2P + R), P = 2/5, R = 2/3)
    got = values(RUN, QRELS, ["SetF(beta=2)", "SetF(fbeta=2)", "SetF(beta=4)", "set_F", "SetF"])
    q = got["q"]
    assert q["SetF(beta=2)"] == pytest.approx(0.5454545454545454, abs=1e-12)
    assert q["SetF(fbeta=2)"] == pytest.approx(q["SetF(beta=4)"], abs=1e-12)
    p, r = 2 / 5, 2 / 3
    assert q["SetF(fbeta=2)"] == pytest.approx(5 * p * r / (4 * p + r), abs=1e-12)
    assert q["SetF"] == pytest.approx(2 * p * r / (p + r), abs=1e-12)


@pytest.mark.parametrize("weight", ["0.5", "2", "0.25"])
def test_set_f_matches_pytrec_eval(weight: str) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    want = pytrec_eval.RelevanceEvaluator(QRELS, {f"set_F.{weight}"}).evaluate(RUN)
    got = values(RUN, QRELS, [f"SetF(beta={weight})"])["q"][f"SetF(beta={weight})"]
    assert got == pytest.approx(want["q"]["set_F"], abs=1e-12)


def test_set_f_rejects_two_weightings() -> None:
    with pytest.raises(preval.MeasureError, match="one of"):
        values(RUN, QRELS, ["SetF(beta=2,fbeta=2)"])


def test_reference_agrees_on_the_new_forms() -> None:
    ms = ["Judged@10", "Judged", "Judged(norm=K)@10", "SetF(beta=2)", "SetF(fbeta=2)"]
    want = reference.evaluate(RUN, QRELS, ms)["q"]
    got = values(RUN, QRELS, ms)["q"]
    for m in ms:
        assert got[m] == pytest.approx(want[m], abs=1e-12), m
