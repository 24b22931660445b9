"""Peers' names give peers' numbers (issue #25): ir_measures, ranx and trec_eval spellings.

Golden numbers from peers that are not test dependencies (ir_measures 0.4.3, ranx 0.3.21) are
fixed here, each with the call that produced it; pytrec_eval (trec_eval 9) is asked directly.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

import preval
import preval.cli
import preval.measures
from tests import reference


def values(
    run: dict, qrels: dict, measures: list[str], *, table: bool = False, **kw
) -> dict[str, dict[str, float]]:
    """Per-query values with separate qrels, or (`table`) from one joined table."""
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    run_df = pl.DataFrame(
        rows, schema={"query": pl.String, "doc": pl.String, "score": pl.Float64}, orient="row"
    )
    judged = [(q, d, lab) for q, docs in qrels.items() for d, lab in docs.items()]
    qrels_df = pl.DataFrame(
        judged, schema={"query": pl.String, "doc": pl.String, "label": pl.Int64}, orient="row"
    )
    if table:
        both = run_df.join(qrels_df, on=["query", "doc"], how="full", coalesce=True)
        got = preval.evaluate(both, measures, **kw).collect()
    else:
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


# ranx 0.3.21: Run(RANX_RUN) evaluated with evaluate(Qrels(RANX_QRELS), run, [names]); the
# per-query values are run.scores[name] (untied scores: ranx has no defined tie order)
RANX_QRELS = {
    "q1": {"d1": 2, "d2": 1, "d3": 0, "d4": 3, "d9": 1},
    "q2": {"d1": 1, "d5": 0, "d6": 2},
    "q3": {"d2": 1, "d7": 4, "d8": 0, "d3": 2},
}
RANX_RUN = {
    "q1": {"d1": 0.9, "d3": 0.8, "d2": 0.7, "d5": 0.6, "d4": 0.5, "d6": 0.4, "d7": 0.3},
    "q2": {"d5": 0.9, "d4": 0.8, "d6": 0.7},
    "q3": {"d8": 0.95, "d9": 0.85, "d7": 0.75, "d2": 0.65, "d1": 0.55, "d3": 0.45},
}
RANX = {
    "hits@5": (3.0, 1.0, 2.0),
    "hits": (3.0, 1.0, 3.0),
    "hit_rate@2": (1.0, 0.0, 0.0),
    "precision@5": (0.6, 0.2, 0.4),
    "recall@5": (0.75, 0.5, 0.6666666666666666),
    "f1@5": (0.6666666666666665, 0.28571428571428575, 0.5),
    "f1": (0.5454545454545454, 0.4, 0.6666666666666666),
    "r-precision": (0.5, 0.0, 0.3333333333333333),
    "r_precision": (0.5, 0.0, 0.3333333333333333),  # the spelling of r-precision
    "mrr": (1.0, 0.3333333333333333, 0.3333333333333333),
    "mrr@2": (1.0, 0.0, 0.0),
    "map": (0.5666666666666667, 0.16666666666666666, 0.4444444444444444),
    "map@5": (0.5666666666666667, 0.16666666666666666, 0.27777777777777773),
    "ndcg": (0.704965430326989, 0.38009376671593426, 0.5454994049044377),
    "ndcg@5": (0.704965430326989, 0.38009376671593426, 0.42185626967476547),
    "bpref": (0.25, 0.0, 0.0),
}
RANX_LATER = {  # measures of the next commits, same run
    "ndcg_burges@5": (0.6319530973242462, 0.41311732856427996, 0.4559749698104292),
    "ndcg_burges": (0.6319530973242462, 0.41311732856427996, 0.5174154636441465),
    "dcg@5": (3.660558421703625, 1.0, 2.430676558073393),
    "dcg_burges@5": (6.207969650641791, 1.5, 7.930676558073393),
    "rbp.8": (0.77376, 0.256, 0.745472),
    "rbp.5": (1.21875, 0.25, 0.59375),
}


def check_ranx(names: dict[str, tuple[float, ...]], *, table: bool = False) -> None:
    got = values(RANX_RUN, RANX_QRELS, list(names), table=table)
    for name, want in names.items():
        column = preval.measures.parse(name).name
        for q, v in zip(("q1", "q2", "q3"), want, strict=True):
            assert got[q][column] == pytest.approx(v, abs=1e-12), (name, q)


def test_ranx_names_give_ranx_numbers() -> None:
    check_ranx(RANX)


# ranx 0.3.21's relevance-level suffix, same run: evaluate(Qrels(RANX_QRELS), run, [names])
RANX_LEVELS = {
    "map-l2": (0.7, 0.3333333333333333, 0.3333333333333333),
    "precision@5-l2": (0.4, 0.2, 0.2),
    "recall@5-l2": (1.0, 1.0, 0.5),
    "mrr-l2": (1.0, 0.3333333333333333, 0.3333333333333333),
    "hit_rate@2-l2": (1.0, 0.0, 0.0),
    "ndcg@5-l2": (0.7415914148287854, 0.5, 0.38009376671593426),
    "ndcg@5-l3": (0.38685280723454163, 0.0, 0.5),
    "dcg@5-l2": (3.160558421703625, 1.0, 2.0),
    "map@5-l3": (0.2, 0.0, 0.3333333333333333),
}


@pytest.mark.parametrize("name", list(RANX_LEVELS))
def test_ranx_level_suffix_is_refused_naming_the_request_with_ranx_numbers(name: str) -> None:
    # map-l2 used to be answered "did you mean 'AP@2'?": a cutoff, not a level, and another
    # number; the request the error names now gives ranx's number
    with pytest.raises(preval.MeasureError) as info:
        preval.measures.parse(name)
    msg = str(info.value)
    assert "ranx's relevance-level suffix" in msg and "\n" not in msg
    meant = msg.split("; write '")[1].split("'")[0]
    got = values(RANX_RUN, RANX_QRELS, [meant], table=True)
    column = preval.measures.parse(meant).name
    for q, v in zip(("q1", "q2", "q3"), RANX_LEVELS[name], strict=True):
        assert got[q][column] == pytest.approx(v, abs=1e-12), (name, meant, q)


def test_ranx_level_suffix_without_a_preval_spelling() -> None:
    with pytest.raises(preval.MeasureError, match="no spelling of ndcg_burges at a relevance"):
        preval.measures.parse("ndcg_burges@10-l2")


def test_ranx_hits_is_averaged_num_rel_ret_summed() -> None:
    got = values(RANX_RUN, RANX_QRELS, ["hits@5", "NumRelRet"])
    per_query = pl.DataFrame(list(got.values()))
    summary = preval.summarize(per_query.lazy()).collect().row(0, named=True)
    assert summary["Hits@5"] == pytest.approx(2.0)  # ranx: evaluate(...) mean 2.0
    assert summary["NumRelRet"] == 7.0


def test_relative_p_is_recall_over_min_r_k_in_evaluate() -> None:
    got = values(RANX_RUN, RANX_QRELS, ["relative_P@2", "relative_P_2", "relative_P.2"])
    assert list(got["q1"])[-1] == "R(norm=min)@2"
    # q1: d1 rel, d3 not: 1 / min(4, 2)
    assert got["q1"]["R(norm=min)@2"] == 0.5


def test_relative_p_matches_pytrec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    want = pytrec_eval.RelevanceEvaluator(RANX_QRELS, {"relative_P.2,5"}).evaluate(RANX_RUN)
    got = values(RANX_RUN, RANX_QRELS, ["relative_P@2", "relative_P@5"])
    for q in want:
        assert got[q]["R(norm=min)@2"] == pytest.approx(want[q]["relative_P_2"], abs=1e-12)
        assert got[q]["R(norm=min)@5"] == pytest.approx(want[q]["relative_P_5"], abs=1e-12)


GAIN_FORMS = ["ndcg_burges@5", "ndcg_burges", "dcg@5", "dcg_burges@5"]


def test_ranx_dcg_and_exponential_gain() -> None:
    check_ranx({k: RANX_LATER[k] for k in GAIN_FORMS}, table=True)
    check_ranx({k: RANX_LATER[k] for k in ("dcg@5", "dcg_burges@5")})  # no ideal: any plan


def test_exponential_ndcg_with_separate_qrels() -> None:
    check_ranx({k: RANX_LATER[k] for k in GAIN_FORMS})


def test_gdeval_ndcg_exp_log2() -> None:
    # ir_measures' nDCG(dcg='exp-log2')@3 is gdeval.pl (bundled with ir_measures 0.4.3):
    # perl gdeval.pl qrels run 3 on this case printed "r,1,0.37263,0.20443" (ndcg@3, err@3)
    qrels = {"1": {"a": 2, "b": 0, "c": 1, "d": 3}}
    run = {"1": {"a": 3.0, "b": 2.0, "c": 1.0, "x": 0.5, "y": 0.2}}
    got = values(run, qrels, ["nDCG(dcg='exp-log2')@3"], table=True)["1"]
    assert got["nDCG(dcg=exp-log2)@3"] == pytest.approx(0.37263, abs=5e-6)


# trec_eval's own case for custom gains (pytrec_eval cannot pass them: it asserts or crashes):
# trec_eval 9.0.8 and 10.0 built from usnistgov/trec_eval, -q on these files printed
#   ndcg 0.4597, ndcg_1=3.5,2=9.0 0.6611, ndcg_0=-1,3=1 0.4930, ndcg_1=5,2=9.5 0.7104 (9.0.8);
#   dcg 2.3869, dcg_1=3.5,2=9.0 9.3540, dcg_1=5,2=9.5 11.6843 (10.0)
TREC_QRELS = {"1": {"a": 1, "b": 0, "c": 2, "d": 3, "e": 1}}
TREC_RUN = {"1": {"a": 3.0, "b": 2.0, "c": 1.0, "x": 0.5, "e": 0.2}}


def test_trec_eval_custom_gains() -> None:
    ms = ["nDCG", "nDCG(gains={1:3.5,2:9.0})", "nDCG(gains={0:-1,3:1})", "DCG",
          "DCG(gains={1:3.5,2:9.0})", "nDCG(gains={1:5,2:9.5})",
          "DCG(gains={1:5,2:9.5})"]  # fmt: skip
    got = values(TREC_RUN, TREC_QRELS, ms, table=True)["1"]
    assert round(got["nDCG"], 4) == 0.4597
    assert round(got["nDCG(gains={0:-1,3:1})"], 4) == 0.4930
    assert round(got["nDCG(gains={1:5,2:9.5})"], 4) == 0.7104
    assert round(got["DCG"], 4) == 2.3869
    assert round(got["DCG(gains={1:3.5,2:9})"], 4) == 9.3540
    assert round(got["DCG(gains={1:5,2:9.5})"], 4) == 11.6843
    # trec_eval sorts the ideal's gains with a comparator that truncates their difference to a
    # whole number (comp_rel_gain returns int), so grade 1 (3.5) and grade 3 (3.0) compare
    # equal and its ideal puts 3.0 first: IDCG 14.150 instead of 14.250, nDCG 0.6611. preval
    # sorts the gains: 9.3540 / 14.2503
    assert got["nDCG(gains={1:3.5,2:9})"] == pytest.approx(
        got["DCG(gains={1:3.5,2:9})"] / (9 + 3.5 / math.log2(3) + 3.5 / 2 + 3 / math.log2(5))
    )
    assert round(got["nDCG(gains={1:3.5,2:9})"], 4) == 0.6564


def test_trec_m_set_f_twice_prints_the_first_as_trec_eval_9(tmp_path, monkeypatch) -> None:
    # trec_eval 9.0.8 (built from usnistgov/trec_eval) on TREC_QRELS / TREC_RUN:
    #   -m set_F.0.5 -m set_F.2  ->  "set_F_0.5 all 0.6429" and nothing else
    #   -m set_F.2 -m set_F.0.5  ->  "set_F_2   all 0.6923"   (10.0 alike)
    # the first parameter list of a measure wins; pytrec_eval reports one set_F too
    import contextlib
    import io

    from preval import cli

    (tmp_path / "q").write_text("".join(f"1 0 {d} {g}\n" for d, g in TREC_QRELS["1"].items()))
    lines = [f"1 Q0 {d} {i} {s} r\n" for i, (d, s) in enumerate(TREC_RUN["1"].items(), 1)]
    (tmp_path / "r").write_text("".join(lines))
    monkeypatch.chdir(tmp_path)
    for options, want in (
        (["-m", "set_F.0.5", "-m", "set_F.2"], "set_F_0.5             \tall\t0.6429"),
        (["-m", "set_F.2", "-m", "set_F.0.5"], "set_F_2               \tall\t0.6923"),
    ):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["trec", *options, "q", "r"]) == 0
        assert out.getvalue().splitlines() == [want]


def test_ranx_rbp_is_graded_and_unscaled() -> None:
    check_ranx({k: RANX_LATER[k] for k in ("rbp.8", "rbp.5")})
    assert preval.measures.parse("rbp.95").name == "RBP(gain=label,p=0.95)"


def test_trec_eval_10_rbp_and_residual() -> None:
    # trec_eval 10.0 -q -m rbp.p=0.5 -m rbp_resid.p=0.5 on TREC_QRELS / TREC_RUN:
    #   rbp_p=0.5 0.2604, rbp_resid_p=0.5 0.0938 (grades scaled by the highest, 3; the
    #   residual: 0.5^5 for the tail + 0.5 * 0.5^3 for the unjudged x at rank 4)
    got = values(TREC_RUN, TREC_QRELS, ["RBP(p=0.5,gain=scaled)", "RBPResid(p=0.5)"], table=True)
    assert got["1"]["RBP(gain=scaled,p=0.5)"] == pytest.approx(0.5 * (1 / 3 + 2 / 3 / 4 + 1 / 48))
    assert round(got["1"]["RBP(gain=scaled,p=0.5)"], 4) == 0.2604
    assert got["1"]["RBPResid(p=0.5)"] == 0.09375
    got = values(TREC_RUN, TREC_QRELS, ["RBPResid(p=0.5)", "RBP(p=0.5,gain=scaled)"])
    assert got["1"]["RBPResid(p=0.5)"] == 0.09375
    assert round(got["1"]["RBP(gain=scaled,p=0.5)"], 4) == 0.2604  # judged rows joined in


def test_gdeval_err() -> None:
    # gdeval.pl (ir_measures ERR@3) on the case of test_gdeval_ndcg_exp_log2: err@3 0.20443;
    # the other queries: by hand, R = (2^g - 1)/16
    qrels = {"1": {"a": 2, "b": 0, "c": 1, "d": 3}}
    run = {"1": {"a": 3.0, "b": 2.0, "c": 1.0, "x": 0.5, "y": 0.2}}
    got = values(run, qrels, ["ERR@3", "err@1", "ERR"])["1"]
    assert got["ERR@3"] == pytest.approx(0.20443, abs=5e-6)
    assert got["ERR@3"] == pytest.approx(3 / 16 + (13 / 16) * (1 / 16) / 3)
    assert got["ERR@1"] == 3 / 16
    assert got["ERR"] == got["ERR@3"]  # nothing relevant below rank 3


# trec_eval 9 families new in all_trec, against pytrec_eval on the random tied data of
# test_peer_pytrec (its golden files are checked line for line in test_trec_golden)
FAMILIES = {
    "Rprec(mult=0.2)": "Rprec_mult_0.20",
    "Rprec(mult=0.6)": "Rprec_mult_0.60",
    "Rprec(mult=1.8)": "Rprec_mult_1.80",
    "Utility": "utility",
    "binG": "binG",
    "SetRelP": "set_relative_P",
    "SetAP": "set_map",
    "relative_P@5": "relative_P_5",
}


def _pytrec_families(qrels: dict, run: dict) -> dict:
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(qrels, set(FAMILIES.values())).evaluate(run)


@pytest.mark.parametrize("seed", range(8))
def test_trec_families_match_pytrec_eval(seed: int) -> None:
    pytest.importorskip("pytrec_eval")
    import concurrent.futures as cf

    from tests.test_peer_pytrec import joined_table, make_case

    qrels, rows, run_df, qrels_df = make_case(seed)
    got = preval.evaluate(
        run_df, list(FAMILIES), qrels=qrels_df, by="system", queries="retrieved"
    ).collect()
    table = preval.evaluate(
        joined_table(run_df, qrels_df), list(FAMILIES), by="system", queries="retrieved"
    ).collect()
    columns = {m: preval.measures.parse(m).name for m in FAMILIES}
    with cf.ProcessPoolExecutor(max_workers=1) as pool:  # pytrec_eval under a timeout
        for system in ("bm25", "dense"):
            run: dict[str, dict[str, float]] = {}
            for s, q, d, score in rows:
                if s == system:
                    run.setdefault(q, {})[d] = score
            want = pool.submit(_pytrec_families, qrels, run).result(timeout=120)
            for frame in (got, table):
                mine = {r["query"]: r for r in frame.iter_rows(named=True) if r["system"] == system}
                assert sorted(mine) == sorted(want)
                for q, vals in want.items():
                    for m, t in FAMILIES.items():
                        assert mine[q][columns[m]] == pytest.approx(vals[t], abs=1e-9), (q, m)


WALKS = {"G": "G", "nDCGRel": "ndcg_rel", "Rndcg": "Rndcg", "nDCG": "ndcg"}


def _pytrec_walks(qrels: dict, run: dict, level: int) -> dict:
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(WALKS.values()), relevance_level=level)
    return evaluator.evaluate(run)


@pytest.mark.parametrize("seed", range(10))
def test_g_ndcg_rel_rndcg_match_pytrec_eval_on_a_joined_table(seed: int) -> None:
    # trec_eval computes them walking the ideal ranking: preval on one joined table
    pytest.importorskip("pytrec_eval")
    import concurrent.futures as cf

    from tests.test_peer_pytrec import joined_table, make_case

    qrels, rows, run_df, qrels_df = make_case(seed)
    level = 1 + seed % 2
    table = joined_table(run_df, qrels_df)
    got = preval.evaluate(
        table, list(WALKS), by="system", queries="retrieved", relevance_level=level
    ).collect()
    with cf.ProcessPoolExecutor(max_workers=1) as pool:
        for system in ("bm25", "dense"):
            run: dict[str, dict[str, float]] = {}
            for s, q, d, score in rows:
                if s == system:
                    run.setdefault(q, {})[d] = score
            want = pool.submit(_pytrec_walks, qrels, run, level).result(timeout=120)
            mine = {r["query"]: r for r in got.iter_rows(named=True) if r["system"] == system}
            assert sorted(mine) == sorted(want)
            for q, vals in want.items():
                for m, t in WALKS.items():
                    assert mine[q][m] == pytest.approx(vals[t], abs=1e-9), (q, m, seed)


def test_walks_of_the_ideal_ranking_with_separate_qrels_or_one_table() -> None:
    # trec_eval 9.0.8 -q -m G -m ndcg_rel -m Rndcg on TREC_QRELS / TREC_RUN
    for table in (True, False):
        got = values(TREC_RUN, TREC_QRELS, ["G", "ndcg_rel", "Rndcg"], table=table)["1"]
        assert [round(got[m], 4) for m in ("G", "nDCGRel", "Rndcg")] == [0.2497, 0.4182, 0.3177]
    # with the diversity measures (judgments per subtopic) they cannot share one call
    run = pl.DataFrame({"query": ["1"], "doc": ["a"], "score": [1.0]})
    qrels = pl.DataFrame({"query": ["1"], "topic": [1], "doc": ["a"], "label": [1]})
    with pytest.raises(preval.MeasureError, match="evaluate them apart"):
        preval.evaluate(run, ["G", "alpha_nDCG@5"], qrels=qrels, subtopic="topic")
    got = preval.evaluate(run, ["G"], qrels=qrels, subtopic="topic").collect()
    assert got["G"].to_list() == [1.0]  # the highest label over the subtopics, as other measures


def test_pair_accuracy_is_ir_measures_accuracy() -> None:
    # ir_measures 0.4.3: {m.query_id: m.value for m in iter_calc([Accuracy, Accuracy@3,
    # Accuracy(rel=2)@5], RANX_QRELS, RANX_RUN)} (untied scores)
    want = {
        "PairAccuracy": (0.75, 0.0, 0.2222222222222222),
        "PairAccuracy@3": (0.5, 0.0, 0.0),
        "PairAccuracy(rel=2)@5": (0.5, 0.0, 0.5),
    }
    got = values(RANX_RUN, RANX_QRELS, list(want))
    for m, vals in want.items():
        for q, v in zip(("q1", "q2", "q3"), vals, strict=True):
            assert got[q][m] == pytest.approx(v, abs=1e-12), (m, q)
    # no relevant document in the top k: no value (ir_measures reports none for the query)
    got = values(RANX_RUN, RANX_QRELS, ["PairAccuracy@1"])
    assert got["q2"]["PairAccuracy@1"] is None
    # and the summary averages the queries with a value, as ir_measures' aggregate
    summary = preval.summarize(pl.DataFrame(list(got.values())).lazy()).collect()
    assert summary["PairAccuracy@1"][0] == got["q1"]["PairAccuracy@1"] == 1.0


class _IrMeasuresAccuracy:
    """Stands in for ``ir_measures.Accuracy@3`` (not a test dependency): what preval reads of
    an ir_measures measure object is its module, its NAME and its text."""

    __module__ = "ir_measures.measures.accuracy"
    NAME = "Accuracy"

    def __str__(self) -> str:
        return "Accuracy@3"


def test_ir_measures_spellings_give_ir_measures_numbers(tmp_path) -> None:
    # the same numbers as test_pair_accuracy_is_ir_measures_accuracy, asked for by the names
    # ir_measures users write: an ir_measures object in Python, --ir-measures on the command
    # line, where Accuracy is pairwise accuracy
    got = values(RANX_RUN, RANX_QRELS, [_IrMeasuresAccuracy()])
    assert [got[q]["PairAccuracy@3"] for q in ("q1", "q2", "q3")] == [0.5, 0.0, 0.0]
    assert preval.measures.from_ir_measures("Accuracy(rel=2)@5") == "PairAccuracy(rel=2)@5"
    assert preval.measures.from_ir_measures("nDCG@10") == "nDCG@10"
    # without the switch, Accuracy is preval's threshold accuracy, and the error says so
    with pytest.raises(preval.MeasureError, match="ir_measures' Accuracy is preval's PairAcc"):
        preval.evaluate(pl.DataFrame({"query": ["a"], "score": [1.0], "label": [1]}),
                        ["Accuracy@3"])  # fmt: skip
    table = tmp_path / "t.csv"
    table.write_text("query,doc,score,label\na,w,4,0\na,x,3,1\na,y,2,0\na,z,1,1\n")
    out = tmp_path / "pq.csv"
    assert preval.cli.main(["evaluate", str(table), "--ir-measures", "-m", "Accuracy@4",
                            "-m", "Accuracy@3", "--per-query", str(out)]) == 0  # fmt: skip
    # ir_measures 0.4.3: calc_aggregate([Accuracy@4, Accuracy@3], {"a": {"w": 0, "x": 1,
    # "y": 0, "z": 1}}, {"a": {"w": 4., "x": 3., "y": 2., "z": 1.}}) -> 0.25, 0.5
    row = pl.read_csv(out).row(0, named=True)
    assert (row["PairAccuracy@4"], row["PairAccuracy@3"]) == (0.25, 0.5)


def test_num_ret_with_rel_is_ir_measures_num_rel_ret() -> None:
    # ir_measures 0.4.3: NumRet(rel=1) is NumRelRet; on the example above NumRet(rel=1) = 2.0
    # and NumRet = 4.0 (calc_aggregate)
    run = {"a": {"w": 4.0, "x": 3.0, "y": 2.0, "z": 1.0}}
    qrels = {"a": {"w": 0, "x": 1, "y": 0, "z": 2}}
    got = values(run, qrels, ["NumRet", "NumRet(rel=1)", "NumRet(rel=2)", "NumRelRet"])["a"]
    assert (got["NumRet"], got["NumRet(rel=1)"], got["NumRet(rel=2)"]) == (4, 2, 1)
    assert got["NumRelRet"] == got["NumRet(rel=1)"]


def test_sdcg_is_ir_measures_cwl_eval() -> None:
    # ir_measures 0.4.3 with cwl-eval 1.0.12: iter_calc([SDCG(...)@k], RANX_QRELS, RANX_RUN)
    want = {
        "SDCG(max_rel=4)@5": (0.3103789364302664, 0.08479005131840403, 0.20609719009748467),
        "SDCG(max_rel=3,min_rel=1)@3": (
            0.23463936301137828, 0.11731968150568914, 0.23463936301137828,
        ),
        "SDCG(max_rel=2)@20": (0.23249863761405754, 0.07102001981682866, 0.15220236048046165),
    }  # fmt: skip
    got = values(RANX_RUN, RANX_QRELS, list(want))
    for m, vals in want.items():
        for q, v in zip(("q1", "q2", "q3"), vals, strict=True):
            assert got[q][m] == pytest.approx(v, abs=1e-12), (m, q)


def test_inst_insq_are_ir_measures_cwl_eval() -> None:
    # ir_measures 0.4.3 with cwl-eval 1.0.12 on RANX_QRELS / RANX_RUN, per query
    want = {
        "INST(max_rel=4)": (0.298730905040826, 0.05095581631683743, 0.13898544296914156),
        "INST(max_rel=2,T=2.0)": (0.4228367974127957, 0.10871767648873698, 0.20268042406767367),
        "INSQ(max_rel=4)": (0.25073678515089753, 0.048529700351786616, 0.12843533758407527),
        "INSQ(max_rel=3,T=3.0)": (0.1870301463258951, 0.057764973127421265, 0.14002156403170193),
    }
    got = values(RANX_RUN, RANX_QRELS, list(want))
    for m, vals in want.items():
        column = preval.measures.parse(m).name
        for q, v in zip(("q1", "q2", "q3"), vals, strict=True):
            assert got[q][column] == pytest.approx(v, abs=1e-12), (m, q)


def test_nerr_variants_are_ir_measures_cwl_eval() -> None:
    # ir_measures 0.4.3 with cwl-eval 1.0.12 on RANX_QRELS / RANX_RUN, per query
    want = {
        "NERR8(max_rel=4)@5": (0.32954545454545453, 0.125, 0.3333333333333333),
        "NERR8(max_rel=2)@20": (1.0, 0.3333333333333333, 0.3333333333333333),
        "NERR9(max_rel=4)@3": (0.38235294117647056, 0.09090909090909091, 0.18181818181818182),
        "NERR9(max_rel=4)@10": (0.3632665054358881, 0.06999416715273726, 0.18181818181818182),
        "NERR10(max_rel=4)": (0.2683671323931997, 0.06372934697088904, 0.2988929889298893),
        "NERR10(max_rel=2,p=0.5)": (1.0, 0.14285714285714285, 0.14285714285714285),
        "NERR11(max_rel=4)": (0.37348269113316, 0.058545449503102344, 0.14754098360655737),
        "NERR11(max_rel=3,T=2.0)": (0.5179949325295743, 0.10224033118622583, 0.21321961620469088),
    }
    got = values(RANX_RUN, RANX_QRELS, list(want))
    for m, vals in want.items():
        column = preval.measures.parse(m).name
        for q, v in zip(("q1", "q2", "q3"), vals, strict=True):
            assert got[q][column] == pytest.approx(v, abs=1e-12), (m, q)


def test_bpm_is_ir_measures_cwl_eval() -> None:
    # ir_measures 0.4.3 with cwl-eval 1.0.12 on RANX_QRELS / RANX_RUN, per query
    want = {
        "BPM(max_rel=4,T=1.0)@5": (0.3, 0.1, 0.3333333333333333),
        "BPM(max_rel=2,T=0.5)@3": (1.0, 0.3333333333333333, 0.3333333333333333),
        "BPM(max_rel=3,T=2.0)@20": (0.4, 0.03333333333333333, 0.3333333333333333),
    }
    got = values(RANX_RUN, RANX_QRELS, list(want))
    for m, vals in want.items():
        column = preval.measures.parse(m).name
        for q, v in zip(("q1", "q2", "q3"), vals, strict=True):
            assert got[q][column] == pytest.approx(v, abs=1e-12), (m, q)


def test_compat_is_ir_measures_compat() -> None:
    # ir_measures 0.4.3 (its own compat provider) on RANX_QRELS / RANX_RUN, per query
    want = {
        "Compat": (0.5089278994036824, 0.1178967994774657, 0.3299410672134651),
        "Compat(p=0.8)": (0.4398697719337965, 0.09580838323353295, 0.24647864093682995),
        "Compat(p=0.5,normalize=false)": (
            0.27161604799400074, 0.047619047619047616, 0.0947089947089947,
        ),
    }  # fmt: skip
    for table in (True, False):  # separate qrels are joined in as rows first
        got = values(RANX_RUN, RANX_QRELS, list(want), table=table)
        for m, vals in want.items():
            column = preval.measures.parse(m).name
            for q, v in zip(("q1", "q2", "q3"), vals, strict=True):
                assert got[q][column] == pytest.approx(v, abs=1e-12), (m, q, table)


# ir_measures' own unit-test cases (tests/test_judged.py and tests/test_accuracy.py of
# terrierteam/ir_measures), restated here: their judgments, rankings and expected values
def _trec_lines(text: str, run: bool) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in filter(None, (x.split() for x in text.strip().splitlines())):
        q, d, v = (line[0], line[2], float(line[4])) if run else (line[0], line[2], int(line[3]))
        out.setdefault(q, {})[d] = v
    return out


IRM_JUDGED_QRELS = """
0 0 D0 0
0 0 D1 1
0 0 D2 1
0 0 D3 2
0 0 D4 0
1 0 D0 1
1 0 D3 2
1 0 D5 2
"""
IRM_JUDGED_RUN = """
0 0 D0 1 0.8 run
0 0 D2 2 0.7 run
0 0 D1 3 0.3 run
0 0 D3 4 0.4 run
0 0 D4 5 0.1 run
1 0 D1 1 0.8 run
1 0 D3 2 0.7 run
1 0 D4 3 0.3 run
1 0 D2 4 0.4 run
"""


def test_ir_measures_own_judged_case() -> None:
    qrels, run = _trec_lines(IRM_JUDGED_QRELS, False), _trec_lines(IRM_JUDGED_RUN, True)
    want = {
        "Judged": (1.0, 1 / 4), "Judged@1000": (1.0, 1 / 4), "Judged@10": (1.0, 1 / 4),
        "Judged@3": (1.0, 1 / 3), "Judged@1": (1.0, 0.0),
    }  # fmt: skip
    got = values(run, qrels, list(want))
    for m, (v0, v1) in want.items():
        assert (got["0"][m], got["1"][m]) == (pytest.approx(v0), pytest.approx(v1)), m


IRM_ACCURACY_QRELS = """
0 0 C0_1 0
0 0 B0_1 1
0 0 A0_1 2
1 0 A1_1 2
1 0 A1_2 2
1 0 B1_1 1
1 0 C1_2 0
2 0 B1_1 1
"""
IRM_ACCURACY_RUN = """
0 0 C0_1 1 0.4 run
0 0 A0_1 2 0.3 run
0 0 C0_2 3 0.2 run
0 0 C0_3 4 0.1 run
1 0 C1_1 1 0.8 run
1 0 A1_1 2 0.7 run
1 0 C1_2 3 0.6 run
1 0 B1_1 4 0.5 run
1 0 C1_3 5 0.4 run
2 0 B1_1 2 0.2 run
2 0 C1_1 3 0.1 run
"""


def test_ir_measures_own_accuracy_case() -> None:
    qrels, run = _trec_lines(IRM_ACCURACY_QRELS, False), _trec_lines(IRM_ACCURACY_RUN, True)
    got = values(run, qrels, ["PairAccuracy", "PairAccuracy(rel=2)"])
    level1 = [got[q]["PairAccuracy"] for q in ("0", "1", "2")]
    assert level1 == [pytest.approx(2 / 3), pytest.approx(0.5 * (2 / 3 + 1 / 3)), 1.0]
    level2 = [got[q]["PairAccuracy(rel=2)"] for q in ("0", "1", "2")]
    assert level2 == [pytest.approx(2 / 3), pytest.approx(0.75), None]  # q2: no value


# ranx's own unit-test cases (tests/unit/ranx/metrics/rank_biased_precision_test.py and
# tests/unit/ranx/metrics_test.py::test_hits of AmenRa/ranx), restated here
def test_ranx_own_rbp_case() -> None:
    # relevant at ranks 1, 2, 6, 11 and 17 of 20 (Moffat & Zobel's example)
    qrels = {"q1": {f"d{i}": 1 for i in (1, 2, 6, 11, 17)}}
    run = {"q1": {f"d{i}": 21.0 - i for i in range(1, 21)}}
    got = values(run, qrels, ["rbp.5", "rbp.8", "rbp.95"])["q1"]
    assert round(got["RBP(gain=label,p=0.5)"], 4) == 0.7661
    assert round(got["RBP(gain=label)"], 4) == 0.4526  # p = 0.8, the default
    assert round(got["RBP(gain=label,p=0.95)"], 4) == 0.1881


def test_ranx_own_hits_case() -> None:
    # every score is 1: ranx keeps the given order, preval's ties="input" too
    qrels = {"a": dict.fromkeys(["1", "4", "5", "6"], 1), "b": dict.fromkeys(["1", "4", "6"], 1)}
    run = {"a": dict.fromkeys(["1", "2", "3", "4", "5", "7"], 1.0),
           "b": dict.fromkeys(["1", "2", "4", "3", "5", "7"], 1.0)}  # fmt: skip
    got = values(run, qrels, ["hits@5"], ties="input")
    per_query = pl.DataFrame(list(got.values())).lazy()
    assert preval.summarize(per_query).collect()["Hits@5"][0] == 2.5


def test_ir_measures_rr_at_k_orders_ties_by_doc_id_ascending() -> None:
    # ir_measures 0.4.3: iter_calc([RR@10, RR], qrels, run) on three documents all scored 1,
    # d1 relevant: RR@10 = 1.0 (msmarco provider: (-score, doc id) sort puts d1 first),
    # RR = 0.3333 (pytrec_eval: doc id descending puts d1 third)
    table = pl.DataFrame(
        {"query": ["q"] * 3, "doc": ["d2", "d1", "d3"], "score": [1.0] * 3, "label": [0, 1, 0]}
    )
    trec = preval.evaluate(table, ["RR@10", "RR"]).collect().row(0, named=True)
    assert trec["RR@10"] == pytest.approx(1 / 3) and trec["RR"] == pytest.approx(1 / 3)
    ascending = table.sort(["query", "score", "doc"], descending=[False, True, False])
    got = preval.evaluate(ascending, ["RR@10"], ties="input").collect()
    assert got["RR@10"][0] == 1.0  # the docs' recipe gives ir_measures' RR@10


def test_ir_measures_judged_only_is_the_judged_only_option() -> None:
    # ir_measures' nDCG(judged_only=True)@10 is pytrec_eval's judged_docs_only_flag (trec_eval
    # -J): refused as a measure parameter, naming preval's option, which gives its numbers
    with pytest.raises(preval.MeasureError, match=r"judged_only=True \(--judged-only, -J\)"):
        preval.measures.parse("nDCG(judged_only=True)@10")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = {"q": {"a": 3.0, "u": 2.5, "b": 2.0, "c": 1.0, "x": 0.5}}
    qrels = {"q": {"a": 1, "b": 0, "c": 2, "d": 1}}
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut_10", "P_2", "map"}, judged_docs_only_flag=True
    )
    want = evaluator.evaluate(run)["q"]
    got = values(run, qrels, ["nDCG@10", "P@2", "AP"], judged_only=True)["q"]
    assert got["nDCG@10"] == pytest.approx(want["ndcg_cut_10"], abs=1e-12)
    assert got["P@2"] == pytest.approx(want["P_2"], abs=1e-12)
    assert got["AP"] == pytest.approx(want["map"], abs=1e-12)
