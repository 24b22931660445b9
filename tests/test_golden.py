"""Golden values from the seed documents and hand derivations (written next to each number)."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

import preval

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def values(frame: pl.LazyFrame) -> dict[str, float]:
    df = frame.collect()
    assert df.height == 1
    return {k: v for k, v in df.row(0, named=True).items() if k != "query"}


# --- LingPipe ScoredPrecisionRecallEvaluation worked example -----------------------------------
# Ten cases in rank order (score, correct) plus one positive never returned (addMisses(1)):
#   rank: 1     2     3     4     5     6     7     8     9     10
#   rel : no    yes   no    yes   yes   no    no    no    yes   no       (+1 missed positive)
# R = 5 positives.
# AP     = (1/2 + 2/4 + 3/5 + 4/9 + 0) / 5 = 2.0444.../5 = 0.408889 (the miss contributes 0)
# RR     = 1/2 (first relevant at rank 2)
# Rprec  = tp(5)/5 = 3/5 = 0.6 (the break-even point, LingPipe's prBreakevenPoint)
# P@1 = 0, P@5 = 3/5, P@10 = 4/10, P@20 = 4/20, P@100 = 4/100 (missing ranks are errors)
LINGPIPE = {
    "AP": 0.408889,
    "RR": 0.5,
    "Rprec": 0.6,
    "BEP": 0.6,
    "P@1": 0.0,
    "P@5": 0.6,
    "P@10": 0.4,
    "P@20": 0.2,
    "P@100": 0.04,
}


@pytest.fixture
def lingpipe() -> pl.DataFrame:
    return pl.read_csv(FIXTURES / "lingpipe.csv", schema_overrides={"doc": pl.String})


def test_lingpipe_joined_table(lingpipe: pl.DataFrame) -> None:
    got = values(preval.evaluate(lingpipe, list(LINGPIPE)))
    assert got.keys() == {"AP", "RR", "Rprec", "P@1", "P@5", "P@10", "P@20", "P@100"}
    for name, want in LINGPIPE.items():
        column = "Rprec" if name == "BEP" else name
        assert got[column] == pytest.approx(want, abs=5e-7), name


def test_lingpipe_from_path_and_as_run_plus_qrels(lingpipe: pl.DataFrame) -> None:
    from_path = values(preval.evaluate(FIXTURES / "lingpipe.csv", ["AP", "Rprec"]))
    run = lingpipe.filter(pl.col("score").is_not_null()).select("query", "doc", "score")
    qrels = lingpipe.select("query", "doc", "label")
    split = values(preval.evaluate(run, ["AP", "Rprec"], qrels=qrels))
    assert from_path == pytest.approx({"AP": 0.408889, "Rprec": 0.6}, abs=5e-7)
    assert split == from_path


def test_lingpipe_counts_and_f(lingpipe: pl.DataFrame) -> None:
    # tp(10) = 4, n = 10, R = 5: F1@10 = 2·4/(5 + 10) = 0.533333; F1 over all retrieved = same.
    # F(beta=2)@5: (1+4)·tp(5)/(4·R + 5) = 5·3/25 = 0.6
    got = values(
        preval.evaluate(
            lingpipe, ["NumRet", "NumRel", "NumRelRet", "F@10", "F", "F(beta=2)@5", "R@5"]
        )
    )
    assert got == pytest.approx(
        {
            "NumRet": 10,
            "NumRel": 5,
            "NumRelRet": 4,
            "F@10": 8 / 15,
            "F": 8 / 15,
            "F(beta=2)@5": 0.6,
            "R@5": 0.6,
        }
    )


# --- The seed notes on AP@K and R-precision ----------------------------------------------------
# Useful lemmas a, b, c; the model ranks x, a, y, b, c, z (R = 3). The notes' table has two slips
# (rank 5 prints 3/4 and the sixth row is numbered 5); recomputed from the definitions:
#   k   : 1    2    3    4    5    6
#   P@k : 0   1/2  1/3  2/4  3/5  3/6
#   R@k : 0   1/3  1/3  2/3   1    1
# AP = Σ p(k)δ(k)/s(N) = (1/2 + 2/4 + 3/5)/3 = 1.6/3
# R-precision: K = s(N) = 3 -> P@3 = 1/3
# AP@K variants at K = 4 (hits in top 4: a, b): R-normalised (1/2 + 2/4)/3 = 1/3;
# min(R, K) = 3 -> 1/3; hits-normalised (the notes' s(K)) (1/2 + 2/4)/2 = 1/2.
# At K = 2: min(R, 2) = 2 -> (1/2)/2 = 1/4.
# F1@5 = 2·P·R/(P+R) = 2·0.6·1/1.6 = 0.75; the lecture notes' F_alpha with alpha = 0.8 is
# beta² = 1/alpha - 1 = 0.25, beta = 0.5: (1.25·0.6·1)/(0.25·0.6 + 1) = 0.75/1.15.
NOTES = {
    "P@1": 0.0,
    "P@2": 1 / 2,
    "P@3": 1 / 3,
    "P@4": 2 / 4,
    "P@5": 3 / 5,
    "P@6": 3 / 6,
    "R@1": 0.0,
    "R@2": 1 / 3,
    "R@4": 2 / 3,
    "R@5": 1.0,
    "AP": 1.6 / 3,
    "Rprec": 1 / 3,
    "AP@4": 1 / 3,
    "AP(norm=min)@4": 1 / 3,
    "AP(norm=hits)@4": 1 / 2,
    "AP(norm=min)@2": 1 / 4,
    "R(norm=min)@2": 1 / 2,
    "F@5": 0.75,
    "F(beta=0.5)@5": 0.75 / 1.15,
    "RR": 1 / 2,
    "RR@1": 0.0,
    "Success@1": 0.0,
    "Success@2": 1.0,
}


def test_seed_notes_example() -> None:
    order = ["x", "a", "y", "b", "c", "z"]
    df = pl.DataFrame(
        {
            "query": ["g"] * 6,
            "doc": order,
            "score": [6.0, 5.0, 4.0, 3.0, 2.0, 1.0],
            "label": [1 if d in "abc" else 0 for d in order],
        }
    )
    got = values(preval.evaluate(df, list(NOTES)))
    assert got == pytest.approx(NOTES)


# --- nDCG (trec_eval ndcg_cut: linear gain, log2(rank+1), ideal from ALL judged gains) ---------
def test_ndcg_graded_with_unretrieved_and_negative() -> None:
    # Ranked: d4 (unjudged), d2 (0), d1 (1), d3 (2); judged but not retrieved: d9 (1), d8 (-1).
    # DCG@10 = 1/log2(4) + 2/log2(5); IDCG@10 from gains 2, 1, 1, 0, 0 (max(-1, 0) = 0):
    #   2/log2(2) + 1/log2(3) + 1/log2(4).  nDCG@2 = 0 (no gain in the top 2).
    df = pl.DataFrame(
        {
            "query": ["q"] * 6,
            "doc": ["d4", "d2", "d1", "d3", "d9", "d8"],
            "score": [0.9, 0.8, 0.7, 0.6, None, None],
            "label": [None, 0, 1, 2, 1, -1],
        }
    )
    dcg = 1 / math.log2(4) + 2 / math.log2(5)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    got = values(preval.evaluate(df, ["nDCG@10", "nDCG@2", "nDCG", "ndcg_cut_10"]))
    assert got == pytest.approx({"nDCG@10": dcg / idcg, "nDCG@2": 0.0, "nDCG": dcg / idcg})
    # the relevance level does not apply to nDCG (trec_eval ignores -l there)
    level2 = values(preval.evaluate(df, ["nDCG@10"], relevance_level=2))
    assert level2["nDCG@10"] == pytest.approx(dcg / idcg)


# --- Ties --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("ties", "rr"),
    [
        # rows in input order b, a, c, all score 0.5, only a relevant
        ("trec", 1 / 3),  # doc id descending: c, b, a
        ("input", 1 / 2),  # b, a, c
        ("optimistic", 1.0),  # relevant first
        ("pessimistic", 1 / 3),  # relevant last
    ],
)
def test_tie_rules(ties: str, rr: float) -> None:
    df = pl.DataFrame(
        {"query": ["q"] * 3, "doc": ["b", "a", "c"], "score": [0.5] * 3, "label": [0, 1, 0]}
    )
    assert values(preval.evaluate(df, ["RR"], ties=ties))["RR"] == pytest.approx(rr)


def test_trec_ties_compare_scores_as_float32() -> None:
    # 0.1 and 0.1 + 1e-12 differ as float64 but are the same float32 (trec_eval 9 / pytrec_eval):
    # under "trec" they tie and doc id descending puts "b" (non-relevant) first; under "input"
    # the higher float64 score of "a" wins.
    df = pl.DataFrame(
        {"query": ["q", "q"], "doc": ["a", "b"], "score": [0.1 + 1e-12, 0.1], "label": [1, 0]}
    )
    assert values(preval.evaluate(df, ["RR"]))["RR"] == 0.5
    assert values(preval.evaluate(df, ["RR"], ties="input"))["RR"] == 1.0


def test_trec_ties_compare_integer_doc_ids_as_strings() -> None:
    # trec_eval compares docnos with strcmp: "9" > "10", so 9 ranks before 10 in a tie.
    df = pl.DataFrame({"query": [1, 1], "doc": [10, 9], "score": [1.0, 1.0], "label": [1, 0]})
    assert values(preval.evaluate(df, ["RR"]))["RR"] == 0.5


def test_no_doc_column_defaults_to_input_order() -> None:
    df = pl.DataFrame({"query": ["q"] * 3, "score": [1.0, 1.0, 0.5], "label": [0, 1, 1]})
    assert values(preval.evaluate(df, ["RR", "AP"])) == pytest.approx(
        {"RR": 0.5, "AP": (1 / 2 + 2 / 3) / 2}
    )


# --- Which queries count (docs/semantics.md) -------------------------------------------------
RUN = pl.DataFrame(
    {
        "system": ["s1", "s1", "s1", "s2", "s2"],
        "query": ["q1", "q1", "q9", "q1", "q2"],
        "doc": ["a", "b", "z", "b", "c"],
        "score": [2.0, 1.0, 1.0, 1.0, 1.0],
    }
)
QRELS = pl.DataFrame(
    {"query": ["q1", "q1", "q2", "q3"], "doc": ["a", "x", "c", "y"], "label": [1, 1, 2, 0]}
)


def test_judged_queries_default_scores_unanswered_queries_zero() -> None:
    # s1 answers q1 (AP = (1/1)/2 with R = 2: a and x), not q2 (R = 1) nor q3 (R = 0);
    # q9 has no judgment and is never averaged. s2 answers q1 (b: non-relevant) and q2 (c: rel).
    got = preval.evaluate(RUN, ["AP", "NumRel", "NumRet", "NumQ"], qrels=QRELS, by="system")
    df = got.collect()
    assert df.columns == ["system", "query", "AP", "NumRel", "NumRet", "NumQ"]
    assert df.rows() == [
        ("s1", "q1", 0.5, 2.0, 2.0, 1.0),
        ("s1", "q2", 0.0, 1.0, 0.0, 1.0),
        ("s1", "q3", 0.0, 0.0, 0.0, 1.0),
        ("s2", "q1", 0.0, 2.0, 1.0, 1.0),
        ("s2", "q2", 1.0, 1.0, 1.0, 1.0),
        ("s2", "q3", 0.0, 0.0, 0.0, 1.0),
    ]
    summary = preval.summarize(got).collect()
    assert summary.rows() == [
        ("s1", 3.0, 0.5 / 3, 3.0, 2.0),
        ("s2", 3.0, 1.0 / 3, 3.0, 2.0),
    ]


def test_retrieved_queries_is_the_intersection() -> None:
    got = preval.evaluate(RUN, ["AP"], qrels=QRELS, by="system", queries="retrieved").collect()
    assert got.rows() == [("s1", "q1", 0.5), ("s2", "q1", 0.0), ("s2", "q2", 1.0)]


def test_audit_counts() -> None:
    got = preval.audit(RUN, qrels=QRELS, by="system").collect()
    assert got.to_dicts() == [
        {
            "system": "s1",
            "queries_evaluated": 3,
            "queries_without_relevant": 1,
            "queries_judged_not_retrieved": 2,
            "queries_retrieved_not_judged": 1,
            "rows_retrieved_unjudged": 1,
            "rows_dropped": 1,
        },
        {
            "system": "s2",
            "queries_evaluated": 3,
            "queries_without_relevant": 1,
            "queries_judged_not_retrieved": 1,
            "queries_retrieved_not_judged": 0,
            "rows_retrieved_unjudged": 1,
            "rows_dropped": 0,
        },
    ]


def test_audit_counts_the_same_queries_in_retrieved_mode() -> None:
    # queries="retrieved" builds no placeholder rows (they are never evaluated): the audit
    # counts the judged queries a system did not answer from the qrels' keys instead, and must
    # find what the placeholders find, with a by column found in the qrels (a segment) too
    for by in ("system", ["system", "topic"]):
        run = RUN.with_columns(topic=pl.lit("t"))
        qrels = QRELS.with_columns(topic=pl.lit("t"))
        judged = preval.audit(run, qrels=qrels, by=by).collect()
        retrieved = preval.audit(run, qrels=qrels, by=by, queries="retrieved").collect()
        for column, expected in (
            ("queries_judged_not_retrieved", [2, 1]),
            ("queries_retrieved_not_judged", [1, 0]),
        ):  # (the other counts are of the evaluated queries, which the modes choose apart)
            assert retrieved[column].to_list() == judged[column].to_list() == expected


def test_by_column_found_in_qrels_is_a_query_attribute() -> None:
    # "topic" partitions the queries: an unanswered judged query joins its own topic only.
    run = pl.DataFrame({"topic": ["t1"], "query": ["q1"], "doc": ["a"], "score": [1.0]})
    qrels = pl.DataFrame(
        {"topic": ["t1", "t2"], "query": ["q1", "q2"], "doc": ["a", "b"], "label": [1, 1]}
    )
    got = preval.evaluate(run, ["AP"], qrels=qrels, by="topic").collect()
    assert got.rows() == [("t1", "q1", 1.0), ("t2", "q2", 0.0)]


def test_joined_table_query_modes() -> None:
    # qa: answered; qb: judged, nothing retrieved; qc: retrieved, no judgment at all.
    df = pl.DataFrame(
        {
            "query": ["qa", "qa", "qb", "qc"],
            "doc": ["1", "2", "3", "4"],
            "score": [1.0, 0.5, None, 1.0],
            "label": [0, 1, 1, None],
        }
    )
    judged = preval.evaluate(df, ["AP", "NumRel"]).collect()
    assert judged.rows() == [("qa", 0.5, 1.0), ("qb", 0.0, 1.0)]
    retrieved = preval.evaluate(df, ["AP"], queries="retrieved").collect()
    assert retrieved.rows() == [("qa", 0.5)]


# --- Summary ---------------------------------------------------------------------------------
def test_summary_means_sums_and_gmap() -> None:
    # AP per query: 1/2 (q1) and 0 (q2: its only relevant doc is ranked nowhere).
    # GMAP = exp((log 0.5 + log 1e-5)/2) with trec_eval's 1e-5 floor.
    df = pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q2"],
            "doc": ["a", "b", "c", "d"],
            "score": [2.0, 1.0, 1.0, None],
            "label": [0, 1, 0, 1],
        }
    )
    per_query = preval.evaluate(df, ["AP", "GMAP", "NumRel", "NumRet", "P@2"])
    got = preval.summarize(per_query).collect().row(0, named=True)
    assert got == pytest.approx(
        {
            "NumQ": 2,
            "AP": 0.25,
            "GMAP": math.exp((math.log(0.5) + math.log(1e-5)) / 2),
            "NumRel": 2,
            "NumRet": 3,
            "P@2": 0.5 / 2 + 0.0,
        }
    )


def test_long_form() -> None:
    df = pl.DataFrame({"query": ["q"], "doc": ["a"], "score": [1.0], "label": [1]})
    got = preval.evaluate(df, ["P@1", "AP"], form="long").collect()
    assert got.rows() == [("q", "P@1", 1.0), ("q", "AP", 1.0)]
    assert got.columns == ["query", "measure", "value"]


def test_aliases_in_canonical_names_out() -> None:
    df = pl.DataFrame({"query": ["q"], "doc": ["a"], "score": [1.0], "label": [1]})
    got = preval.evaluate(
        df, ["map", "P_1", "P.1", "recip_rank", "ndcg_cut_5", "RPrec", "MRR", "P(rel=1)@1"]
    ).collect()
    assert got.columns == ["query", "AP", "P@1", "RR", "nDCG@5", "Rprec", "P(rel=1)@1"]


def test_per_query_streams_to_parquet(tmp_path: Path) -> None:
    # lazy out: the per-query plan sinks to Parquet (streaming) with the collected values
    per_query = preval.evaluate(RUN, ["AP", "NumRel"], qrels=QRELS, by="system")
    per_query.sink_parquet(tmp_path / "pq.parquet")
    assert pl.read_parquet(tmp_path / "pq.parquet").equals(per_query.collect())
