"""Diversity measures (issue #25): qrels with a subtopic column, as TREC's ndeval reads them.

Golden numbers come from pyndeval 0.0.8 (ndeval 4.5 compiled as a Python module, the peer
ir_measures uses for these measures), which is not a test dependency: each block names the
call that produced it. tests/reference.py's independent implementation is compared on
hypothesis data (ties, queries with nothing relevant, judged documents not retrieved).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import preval
import preval.engines
from preval.errors import DuplicateError, MeasureError, MissingColumnError, PrevalError
from tests import reference
from tests.profiles import examples

ROOT = Path(__file__).resolve().parents[1]

# pyndeval's own test (pyndeval-0.0.8/tests/test_pyndeval.py, test_basic): ndeval's outputs
# printed to 4 decimals
BASIC_QRELS = [("0", "a", "A", 1), ("0", "b", "B", 1), ("0", "b", "D", 1), ("0", "c", "C", 1)]
BASIC_RUN = [("0", "A", 9.3), ("0", "D", 8.4), ("0", "E", 8.1), ("0", "B", 7.6)]
BASIC_EXPECTED = {
    "ERR-IA@5": 0.3933, "ERR-IA@10": 0.3907, "ERR-IA@20": 0.3907,
    "nERR-IA@5": 0.8297, "nERR-IA@10": 0.8297, "nERR-IA@20": 0.8297,
    "alpha-DCG@5": 0.4052, "alpha-DCG@10": 0.3998, "alpha-DCG@20": 0.3997,
    "alpha-nDCG@5": 0.7868, "alpha-nDCG@10": 0.7868, "alpha-nDCG@20": 0.7868,
    "NRBP": 0.3906, "MAP-IA": 0.5000,
    "P-IA@5": 0.2000, "P-IA@10": 0.1000, "P-IA@20": 0.0500,
    "strec@5": 0.6666, "strec@10": 0.6666, "strec@20": 0.6666,
}  # fmt: skip

# three queries: graded labels, a document on two subtopics, judged documents not retrieved,
# a retrieved document not judged, a subtopic judged only non-relevant (query 2), a query with
# nothing relevant (query 3); no tied scores (pyndeval breaks ties by doc id ascending)
QRELS = [
    ("1", "1", "d1", 1), ("1", "1", "d2", 2), ("1", "2", "d2", 1), ("1", "2", "d3", 1),
    ("1", "3", "d4", 2), ("1", "3", "d5", 1), ("1", "1", "d6", 0), ("1", "2", "d7", 1),
    ("2", "1", "e1", 1), ("2", "1", "e2", 1), ("2", "2", "e3", 0),
    ("3", "1", "f1", 0),
]  # fmt: skip
RUN = [
    ("1", "d3", 9.0), ("1", "x1", 8.0), ("1", "d2", 7.5), ("1", "d1", 7.0), ("1", "d6", 6.0),
    ("1", "d4", 5.0), ("2", "e2", 3.0), ("2", "e3", 2.0), ("2", "e1", 1.0), ("3", "f1", 1.0),
]  # fmt: skip
NDEVAL_NAMES = [
    "alpha-nDCG@1", "alpha-nDCG@3", "alpha-nDCG@5", "alpha-nDCG@20", "alpha-DCG@1",
    "alpha-DCG@5", "ERR-IA@1", "ERR-IA@5", "ERR-IA@20", "nERR-IA@5", "nERR-IA@20", "NRBP",
    "P-IA@5", "P-IA@10", "strec@1", "strec@3", "strec@10", "MAP-IA",
]  # fmt: skip
# pyndeval.RelevanceEvaluator(QRELS, NDEVAL_NAMES, **kw).evaluate(RUN), kw as in each key;
# query 3 scores 0 in every measure (M = 0)
PYNDEVAL = {
    "defaults": {
        "1": [0.5, 0.6074427874648953, 0.5974227446156712, 0.6871026428290653, 1.0,
              0.43142730341254476, 1.0, 0.39334341906202724, 0.4308047961960026,
              0.5619596541786743, 0.6107954545454547, 0.3671875, 0.26666666666666666,
              0.16666666666666666, 0.3333333333333333, 0.6666666666666666, 1.0,
              0.3518518518518518],
        "2": [1.0, 0.9502344167898358, 0.9502344167898358, 0.9502344167898358, 1.0,
              0.8231928340550247, 1.0, 0.8472012102874434, 0.8415721600107957,
              0.9333333333333335, 0.9333333333333333, 0.84375, 0.4, 0.2, 1.0, 1.0, 1.0,
              0.8333333333333333],
    },
    "alpha=0.3,beta=0.8": {
        "1": [0.5, 0.6206117396035622, 0.6055030404641307, 0.6727077387510255, 1.0,
              0.3721133943982021, 1.0, 0.35247063363089276, 0.3698652024975419,
              0.5713504647348278, 0.6096911608093717, 0.4068650666666668,
              0.26666666666666666, 0.16666666666666666, 0.3333333333333333,
              0.6666666666666666, 1.0, 0.3518518518518518],
        "2": [1.0, 0.9364264732126901, 0.93642647321269, 0.93642647321269, 1.0,
              0.7004776883440363, 1.0, 0.7487892886704134, 0.7171185585541862,
              0.9135802469135802, 0.9135802469135803, 0.63712, 0.4, 0.2, 1.0, 1.0, 1.0,
              0.8333333333333333],
    },
    "relevance_level=2": {
        "1": [0.0, 0.30657359638272924, 0.3065735963827292, 0.5249810332008934, 0.0,
              0.16463856681100494, 0.0, 0.12102874432677761, 0.18033689143088477,
              0.22222222222222224, 0.3333333333333333, 0.10546875, 0.1, 0.1, 0.0, 0.5, 1.0,
              0.25],
        "2": [0.0] * 18,
    },
}  # fmt: skip


def frames(qrels: list, run: list) -> tuple[pl.DataFrame, pl.DataFrame]:
    q = pl.DataFrame(
        qrels,
        schema={"query": pl.String, "subtopic": pl.String, "doc": pl.String, "label": pl.Int64},
        orient="row",
    )
    r = pl.DataFrame(
        run, schema={"query": pl.String, "doc": pl.String, "score": pl.Float64}, orient="row"
    )
    return q, r


def nested(qrels: list, run: list) -> tuple[dict, dict]:
    """The rows as tests/reference.py takes them: {query: {subtopic: {doc: label}}} and
    {query: {doc: score}}."""
    judged: dict = {}
    for query, sub, doc, label in qrels:
        judged.setdefault(query, {}).setdefault(sub, {})[doc] = label
    ranked: dict = {}
    for query, doc, score in run:
        ranked.setdefault(query, {})[doc] = score
    return judged, ranked


def with_params(name: str, params: str) -> str:
    """An ndeval name with ir_measures-style parameters: alpha-nDCG@5 -> alpha-nDCG(alpha=..)@5."""
    base, _, k = name.partition("@")
    taken = {"NRBP": ("alpha", "beta"), "alpha-nDCG": ("alpha",), "alpha-DCG": ("alpha",),
             "ERR-IA": ("alpha",), "nERR-IA": ("alpha",)}.get(base, ())  # fmt: skip
    kept = [p for p in params.split(",") if p and p.split("=")[0] in taken]
    return base + (f"({','.join(kept)})" if kept else "") + (f"@{k}" if k else "")


def test_pyndeval_own_test_case() -> None:
    q, r = frames(BASIC_QRELS, BASIC_RUN)
    got = preval.evaluate(r, list(BASIC_EXPECTED), qrels=q, subtopic="subtopic").collect()
    for name, value in BASIC_EXPECTED.items():
        assert got[preval.parse(name).name][0] == pytest.approx(value, abs=1e-4), name


@pytest.mark.parametrize("setting", list(PYNDEVAL))
def test_values_are_pyndevals(setting: str) -> None:
    q, r = frames(QRELS, RUN)
    level = 2 if setting == "relevance_level=2" else 1
    params = "" if setting != "alpha=0.3,beta=0.8" else setting
    names = [with_params(n, params) for n in NDEVAL_NAMES]
    got = preval.evaluate(r, names, qrels=q, subtopic="subtopic", relevance_level=level).collect()
    assert got["query"].to_list() == ["1", "2", "3"]
    # the reference implementation gives pyndeval's numbers too
    canonical = [preval.parse(n).name for n in names]
    qrels, run = nested(QRELS, RUN)
    ref = reference.evaluate_diversity(run, qrels, canonical, relevance_level=level)
    for row in got.iter_rows(named=True):
        expected = PYNDEVAL[setting].get(row["query"], [0.0] * len(names))
        for name, value in zip(canonical, expected, strict=True):
            assert row[name] == pytest.approx(value, rel=1e-12, abs=1e-15), (row["query"], name)
            assert ref[row["query"]][name] == pytest.approx(value, rel=1e-12, abs=1e-15)


def test_ir_measures_own_test_case() -> None:
    # ir_measures' test/test_pyndeval.py (test_ERR_IA): ERR_IA@20 per query and its mean, to
    # 4 decimals; the rank column of its run disagrees with the scores, which decide
    q, r = frames(
        [("0", "0", "D0", 0), ("0", "0", "D1", 1), ("0", "0", "D2", 1), ("0", "1", "D2", 1),
         ("0", "1", "D3", 2), ("0", "0", "D4", 0), ("1", "0", "D0", 1), ("1", "0", "D3", 2),
         ("1", "1", "D5", 2)],
        [("0", "D0", 0.8), ("0", "D2", 0.7), ("0", "D1", 0.3), ("0", "D3", 0.4),
         ("0", "D4", 0.1), ("1", "D1", 0.8), ("1", "D3", 0.7), ("1", "D4", 0.3),
         ("1", "D2", 0.4)],
    )  # fmt: skip
    per_query = preval.evaluate(r, ["ERR_IA@20", "STREC@5"], qrels=q, subtopic="subtopic")
    got = per_query.collect()
    assert got["ERR_IA@20"].to_list() == [pytest.approx(0.4659, abs=5e-5),
                                          pytest.approx(0.1803, abs=5e-5)]  # fmt: skip
    mean = preval.summarize(per_query).collect()["ERR_IA@20"][0]
    assert mean == pytest.approx(0.3231, abs=5e-5)


def test_greedy_ideal_breaks_ties_by_greatest_doc_id_and_can_be_beaten() -> None:
    # A, B and C each cover two subtopics: ndeval places C first (the greatest id), and then
    # A and B add 1.5 each; A, B, C adds 2, 2, 1, which beats that "ideal"
    q, r = frames(
        [("q", "1", "A", 1), ("q", "2", "A", 1), ("q", "3", "B", 1), ("q", "4", "B", 1),
         ("q", "1", "C", 1), ("q", "3", "C", 1)],
        [("q", "A", 3.0), ("q", "B", 2.0), ("q", "C", 1.0)],
    )  # fmt: skip
    names = ["alpha_nDCG@3", "nERR_IA@3", "alpha_nDCG@2"]
    got = preval.evaluate(r, names, qrels=q, subtopic="subtopic").collect().row(0)[1:]
    # pyndeval.ndeval(QRELS, RUN, measures=["alpha-nDCG@3", "nERR-IA@3", "alpha-nDCG@2"])
    expected = (1.017710467450658, 1.0256410256410258, 1.1070681006323602)
    assert got == pytest.approx(expected, rel=1e-12)
    # the same judgments listed in another order: the same ideal
    shuffled = q.reverse()
    again = preval.evaluate(r, names, qrels=shuffled, subtopic="subtopic").collect().row(0)[1:]
    assert again == got


def test_rel_parameter_is_the_relevance_level_of_one_measure() -> None:
    q, r = frames(QRELS, RUN)
    got = preval.evaluate(
        r, ["alpha_nDCG(rel=2)@20", "StRecall(rel=2)@3", "StRecall@3"], qrels=q,
        subtopic="subtopic",
    ).collect()  # fmt: skip
    first = got.row(0, named=True)
    assert first["alpha_nDCG(rel=2)@20"] == pytest.approx(0.5249810332008934, rel=1e-12)
    assert (first["StRecall(rel=2)@3"], first["StRecall@3"]) == (0.5, pytest.approx(2 / 3))


def test_names_of_ndeval_and_ir_measures_are_one_measure() -> None:
    for spellings, name in [
        (["alpha-nDCG@10", "alpha_nDCG@10", "alpha_nDCG(alpha=0.5)@10"], "alpha_nDCG@10"),
        (["ERR-IA@5", "err_ia@5"], "ERR_IA@5"),
        (["nERR-IA@5", "nERR_IA@5"], "nERR_IA@5"),
        (["strec@20", "StRecall@20"], "StRecall@20"),
        (["P-IA@5", "P_IA@5"], "P_IA@5"),
        (["NRBP", "NRBP(alpha=0.5,beta=0.5)"], "NRBP"),
        (["alpha-DCG@5"], "alpha_DCG@5"),
    ]:
        assert {preval.parse(s).name for s in spellings} == {name}
    with pytest.raises(MeasureError, match="cutoff"):
        preval.parse("alpha_nDCG")
    with pytest.raises(MeasureError, match="alpha"):
        preval.parse("alpha_nDCG(alpha=1.5)@5")


def test_other_measures_read_the_highest_label_over_subtopics() -> None:
    q, r = frames(QRELS, RUN)
    measures = ["AP", "nDCG@5", "P@3", "AP(rel=2)"]
    got = preval.evaluate(r, [*measures, "alpha_nDCG@5"], qrels=q, subtopic="subtopic")
    best = q.group_by("query", "doc").agg(pl.col("label").max())
    alone = preval.evaluate(r, measures, qrels=best).collect()
    assert got.select("query", *measures).collect().equals(alone)
    # ndeval's own (non intent-aware) MAP reads them so: relevant to any subtopic
    assert alone["AP"][0] == pytest.approx((1 / 1 + 2 / 3 + 3 / 4 + 4 / 6) / 6)


def test_queries_nothing_retrieved_score_zero_and_retrieved_only_drops_them() -> None:
    q, r = frames(QRELS, [row for row in RUN if row[0] != "2"])
    names = ["alpha_nDCG@5", "NRBP", "StRecall@5"]
    got = preval.evaluate(r, names, qrels=q, subtopic="subtopic").collect()
    assert got.filter(pl.col("query") == "2").select(names).row(0) == (0.0, 0.0, 0.0)
    retrieved = preval.evaluate(
        r, names, qrels=q, subtopic="subtopic", queries="retrieved"
    ).collect()
    assert retrieved["query"].to_list() == ["1", "3"]
    audit = preval.audit(r, qrels=q, subtopic="subtopic").collect().row(0, named=True)
    assert (audit["queries_evaluated"], audit["queries_without_relevant"]) == (3, 1)
    assert audit["queries_judged_not_retrieved"] == 1


def test_systems_are_evaluated_apart_against_the_same_judgments() -> None:
    q, r = frames(QRELS, RUN)
    other = r.with_columns(pl.col("score") * -1)  # the reverse ranking
    both = pl.concat([r.with_columns(system=pl.lit("a")), other.with_columns(system=pl.lit("b"))])
    names = ["alpha_nDCG@5", "ERR_IA@5", "NRBP", "AP"]
    got = preval.evaluate(both, names, qrels=q, subtopic="subtopic", by="system").collect()
    for system, frame in (("a", r), ("b", other)):
        alone = preval.evaluate(frame, names, qrels=q, subtopic="subtopic").collect()
        assert got.filter(pl.col("system") == system).drop("system").equals(alone)
    assert (
        got.filter(pl.col("system") == "a")["NRBP"][0]
        != got.filter(pl.col("system") == "b")["NRBP"][0]
    )


def test_a_by_column_of_the_qrels_is_a_property_of_the_query() -> None:
    q, r = frames(QRELS, RUN)
    segment = pl.DataFrame({"query": ["1", "2", "3"], "segment": ["x", "y", "x"]})
    names = ["alpha_nDCG@5", "NRBP", "AP"]
    got = preval.evaluate(
        r.join(segment, on="query"), names, qrels=q.join(segment, on="query"),
        subtopic="subtopic", by="segment",
    ).collect()  # fmt: skip
    assert got.select("segment", "query").rows() == [("x", "1"), ("x", "3"), ("y", "2")]
    alone = preval.evaluate(r, names, qrels=q, subtopic="subtopic").collect()
    assert got.drop("segment").sort("query").equals(alone)


def test_depth_cuts_the_ranking_as_ndeval_minus_m() -> None:
    q, r = frames(QRELS, RUN)
    names = ["alpha_nDCG@5", "NRBP", "StRecall@10"]
    cut = preval.evaluate(r, names, qrels=q, subtopic="subtopic", depth=2).collect()
    top2 = r.sort("score", descending=True).group_by("query").head(2)
    full = preval.evaluate(top2, names, qrels=q, subtopic="subtopic").collect()
    assert cut.select(names).equals(full.select(names))
    assert cut["StRecall@10"][0] == pytest.approx(1 / 3)  # d3 only (x1 unjudged)


def test_judged_only_drops_unjudged_documents_before_ranking() -> None:
    q, r = frames(QRELS, RUN)
    names = ["alpha_nDCG@3", "NRBP", "StRecall@2", "P_IA@2"]
    got = preval.evaluate(r, names, qrels=q, subtopic="subtopic", judged_only=True).collect()
    judged = r.filter(pl.col("doc") != "x1")  # the one retrieved document without a judgment
    expected = preval.evaluate(judged, names, qrels=q, subtopic="subtopic").collect()
    assert got.equals(expected)
    assert got["StRecall@2"][0] == pytest.approx(2 / 3)  # d3, d2 (x1 no longer in between)


@pytest.mark.parametrize("engine", ["chunked", "partitioned"])
def test_engines_give_the_plans_values(engine: str, tmp_path: Path) -> None:
    q, r = frames(QRELS, RUN)
    run_path, qrels_path = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    r.write_parquet(run_path)
    q.write_parquet(qrels_path)
    names = ["alpha_nDCG@5", "nERR_IA@3", "NRBP", "P_IA@2", "AP"]
    plan = preval.plan(run_path, names, qrels=qrels_path, subtopic="subtopic")
    done = preval.engines.collect(plan, engine=engine)  # holds the chunked engine's spill directory
    got = done.per_query().collect()
    expected = preval.evaluate(r, names, qrels=q, subtopic="subtopic").collect()
    assert got.equals(expected)


def test_trec_qrels_second_field_is_the_subtopic(tmp_path: Path) -> None:
    qrels_file, run_file = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_file.write_text("".join(f"{q} {s} {d} {lab}\n" for q, s, d, lab in BASIC_QRELS))
    run_file.write_text(
        "".join(f"{q} Q0 {d} {i} {s} tag\n" for i, (q, d, s) in enumerate(BASIC_RUN, 1))
    )
    read = preval.scan_qrels(qrels_file, subtopic="intent").collect()
    assert read.columns == ["query", "intent", "doc", "label"]
    assert read["intent"].to_list() == ["a", "b", "b", "c"]
    got = preval.evaluate(
        run_file, ["alpha_nDCG@5", "NRBP"], qrels=qrels_file, input_format="trec",
        subtopic="subtopic",
    ).collect()  # fmt: skip
    assert got["alpha_nDCG@5"][0] == pytest.approx(BASIC_EXPECTED["alpha-nDCG@5"], abs=1e-4)
    assert got["system"][0] == "tag"


def test_command_line_subtopic(tmp_path: Path) -> None:
    q, r = frames(BASIC_QRELS, BASIC_RUN)
    q.write_csv(tmp_path / "qrels.csv")
    r.write_csv(tmp_path / "run.csv")
    argv = [
        sys.executable, "-m", "preval", "evaluate", "run.csv", "--qrels", "qrels.csv",
        "--subtopic", "subtopic", "-m", "alpha-nDCG@5", "-m", "strec@5", "--format", "csv",
    ]  # fmt: skip
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "NumQ,alpha_nDCG@5,StRecall@5"
    values = [float(v) for v in lines[1].split(",")]
    assert values == [1, pytest.approx(0.786895617614416), pytest.approx(2 / 3)]


def test_diversity_measure_without_subtopic_column_says_what_is_missing() -> None:
    q, r = frames(QRELS, RUN)
    with pytest.raises(MeasureError, match=r"alpha_nDCG@5 is a diversity measure.*subtopic"):
        preval.evaluate(r, ["AP", "alpha_nDCG@5"], qrels=q.drop("subtopic"))
    with pytest.raises(MeasureError, match=r"NRBP, StRecall@5 are diversity measures"):
        preval.evaluate(r, ["NRBP", "StRecall@5"], qrels=q)
    with pytest.raises(MissingColumnError, match="'intent'"):
        preval.evaluate(r, ["NRBP"], qrels=q, subtopic="intent")
    with pytest.raises(MeasureError, match="names a column of the qrels"):
        preval.evaluate(r.with_columns(label=1), ["AP"], subtopic="subtopic")
    with pytest.raises(MeasureError, match="expected"):
        preval.evaluate(r, ["NRBP"], qrels=q, subtopic="subtopic", ties="expected")
    # a tie group as one step has no meaning in ndeval's one-document-per-rank walk
    with pytest.raises(MeasureError, match="threshold"):
        preval.evaluate(r, ["alpha_nDCG@5"], qrels=q, subtopic="subtopic", ties="threshold")


def test_a_judgment_repeated_per_subtopic_is_an_error_or_one_is_kept() -> None:
    q, r = frames(QRELS, RUN)
    # d2 judged twice for subtopic 2 of query 1: first 0, then the original 1
    repeated = pl.concat([pl.DataFrame([("1", "2", "d2", 0)], schema=q.schema, orient="row"), q])
    message = (
        r"qrels: 2 rows repeat a \(query, subtopic, doc\) triple \(rule: a document appears "
        r"once per query and subtopic; .*\); example: query '1', subtopic '2', doc 'd2'"
    )
    with pytest.raises(DuplicateError, match=message):
        preval.evaluate(r, ["alpha_nDCG@5"], qrels=repeated, subtopic="subtopic").collect()
    names = ["alpha_nDCG@5", "StRecall@3"]
    plain = preval.evaluate(r, names, qrels=q, subtopic="subtopic").collect()
    kept_max = preval.evaluate(
        r, names, qrels=repeated, subtopic="subtopic", duplicates="max"
    ).collect()
    assert kept_max.equals(plain)
    kept_first = preval.evaluate(
        r, names, qrels=repeated, subtopic="subtopic", duplicates="first"
    ).collect()
    # d2 then counts for subtopic 1 only (in the run and in the ideal): query 1's top 3
    # (d3, x1, d2) covers 2 of 3 subtopics still
    first_qrels, run = nested(QRELS, RUN)
    first_qrels["1"]["2"]["d2"] = 0
    expected = reference.evaluate_diversity(run, first_qrels, ["alpha_nDCG@5"])["1"]
    assert kept_first["alpha_nDCG@5"][0] == pytest.approx(expected["alpha_nDCG@5"], rel=1e-12)
    assert kept_first["alpha_nDCG@5"][0] != pytest.approx(plain["alpha_nDCG@5"][0])
    assert kept_first["StRecall@3"][0] == plain["StRecall@3"][0] == pytest.approx(2 / 3)
    assert kept_first.filter(pl.col("query") != "1").equals(plain.filter(pl.col("query") != "1"))


# A (query, subtopic, doc) judged twice is the qrels' error whatever the measures: with the
# diversity measures, with the others alone (checked beside the run: AP), and with those that
# join the qrels into the run (nDCGRel); worded, counted and exemplified as a (query, doc)
# judged twice in other qrels, with the file's name.
@pytest.mark.parametrize("measures", [["alpha_nDCG@5", "AP"], ["AP"], ["nDCGRel"]])
def test_a_judgment_repeated_per_subtopic_is_the_qrels_error_whatever_the_measures(
    tmp_path: Path, measures: list[str]
) -> None:
    q, r = frames(QRELS, RUN)
    path, plain_path = tmp_path / "qrels.csv", tmp_path / "plain.csv"
    again = pl.DataFrame([("1", "2", "d2", 0)], schema=q.schema, orient="row")
    pl.concat([q, again]).write_csv(path)
    per_doc = q.group_by("query", "doc").agg(pl.col("label").max()).sort("query", "doc")
    per_doc.vstack(again.select(per_doc.columns)).write_csv(plain_path)
    hints = (
        "if the table holds several systems, name their column with by=; "
        "or pass duplicates='max' or 'first' to keep one"
    )
    with pytest.raises(DuplicateError) as ordinary:
        preval.evaluate(r, measures[-1:], qrels=plain_path).collect()
    assert str(ordinary.value) == (
        f"qrels {plain_path}: 2 rows repeat a (query, doc) pair (rule: a document appears once "
        f"per query; {hints}); example: query '1', doc 'd2'"
    )
    with pytest.raises(DuplicateError) as raised:
        preval.evaluate(r, measures, qrels=path, subtopic="subtopic").collect()
    assert str(raised.value) == (
        f"qrels {path}: 2 rows repeat a (query, subtopic, doc) triple (rule: a document appears "
        f"once per query and subtopic; {hints}); example: query '1', subtopic '2', doc 'd2'"
    )
    kept = preval.evaluate(r, measures, qrels=path, subtopic="subtopic", duplicates="max")
    plain = preval.evaluate(r, measures, qrels=q, subtopic="subtopic")
    assert kept.collect().equals(plain.collect())


def test_bad_qrels_labels_are_reported() -> None:
    q, r = frames(QRELS, RUN)
    bad = q.with_columns(pl.col("label").cast(pl.String))
    with pytest.raises(PrevalError, match="label"):
        preval.evaluate(r, ["NRBP"], qrels=bad, subtopic="subtopic").collect()


# --- against tests/reference.py ----------------------------------------------------------------

MEASURES = [
    "alpha_DCG@1", "alpha_DCG@3", "alpha_nDCG@1", "alpha_nDCG@4", "alpha_nDCG(alpha=0.3)@3",
    "alpha_nDCG(rel=2)@5", "ERR_IA@2", "ERR_IA(alpha=1)@4", "nERR_IA@3", "nERR_IA(alpha=0)@5",
    "NRBP", "NRBP(alpha=0.2,beta=0.9)", "NRBP(rel=2)", "P_IA@1", "P_IA@4", "StRecall@2",
    "StRecall(rel=2)@6", "AP_IA", "AP_IA(rel=2)",
]  # fmt: skip


@st.composite
def diversity_cases(draw):
    docs = [f"d{i}" for i in range(draw(st.integers(1, 7)))]
    qrels, run = {}, {}
    for query in [f"q{i}" for i in range(draw(st.integers(1, 3)))]:
        subtopics = {}
        for sub in range(draw(st.integers(0, 4))):
            judged = draw(st.lists(st.sampled_from(docs), unique=True, max_size=len(docs)))
            subtopics[str(sub)] = {d: draw(st.integers(0, 2)) for d in judged}
        if subtopics and any(subtopics.values()):
            qrels[query] = subtopics
        retrieved = draw(st.lists(st.sampled_from(docs), unique=True, max_size=len(docs)))
        # few distinct scores: many ties
        run[query] = {d: float(draw(st.integers(0, 3))) for d in retrieved}
    return qrels, run


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    case=diversity_cases(),
    ties=st.sampled_from(["trec", "input", "optimistic", "pessimistic"]),
    depth=st.sampled_from([None, 2]),
)
def test_measures_match_the_reference(case, ties: str, depth: int | None) -> None:
    qrels, run = case
    q, r = frames(
        [(qu, s, d, lab) for qu, subs in qrels.items() for s, ds in subs.items()
         for d, lab in ds.items()],
        [(qu, d, s) for qu, docs in run.items() for d, s in docs.items()],
    )  # fmt: skip
    expected = reference.evaluate_diversity(run, qrels, MEASURES, ties=ties, depth=depth)
    got = preval.evaluate(
        r, MEASURES, qrels=q, subtopic="subtopic", ties=ties, depth=depth
    ).collect()
    assert sorted(got["query"]) == sorted(expected)
    for row in got.iter_rows(named=True):
        for name in MEASURES:
            want = expected[row["query"]][name]
            assert row[preval.parse(name).name] == pytest.approx(want, rel=1e-9, abs=1e-12), (
                row["query"],
                name,
            )
