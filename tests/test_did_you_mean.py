"""Errors that say what was meant: a mistyped measure gets the closest requests that parse
(``nDCG10``: did you mean 'nDCG@10'?), a missing column the present column that most likely
holds it, as the keyword and flag to name it (``query='qid' (--query qid)``). Python API and
command line; every message stays one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import preval
from preval.errors import MeasureError, MissingColumnError
from preval.measures import suggest

ROOT = Path(__file__).resolve().parents[1]
PARQUET = ROOT / "fixtures" / "example.parquet"
# a joined table whose columns have other names than preval's defaults
QPY = pl.DataFrame(
    {"qid": ["1", "1", "2"], "pid": ["a", "b", "a"], "pred": [0.3, 0.2, 0.5], "y": [1, 0, 1]}
)
BASE = pl.DataFrame(
    {"query": ["1", "1"], "doc": ["a", "b"], "score": [0.3, 0.2], "label": [1, 0],
     "system": ["x", "x"]}
)  # fmt: skip


def measure_error(request: str) -> str:
    with pytest.raises(MeasureError) as info:
        preval.evaluate(BASE, ["AP", request])
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# ---------------------------------------------------------------------------------------------
# Measures
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "meant"),
    [
        ("nDCG10", "nDCG@10"),
        ("P10", "P@10"),
        ("map_cut10", "AP@10"),  # trec_eval's map_cut_10
        ("ndcg_cut10", "nDCG@10"),
        ("NDCG10", "nDCG@10"),  # case is not the slip: the @ is
        ("ndcg10", "nDCG@10"),
        ("Ndcg_10", "nDCG@10"),
        ("p_10", "P@10"),
        ("AP10", "AP@10"),
        ("MRR10", "RR@10"),
        ("hits10", "Hits@10"),
        ("Succes1", "Success@1"),
        ("precison@10", "P@10"),
        ("Rprec10", "Rprec"),  # the measure, which takes no cutoff
        ("NumRet10", "NumRet"),
    ],
)
def test_an_unknown_measure_says_the_one_meant(request_: str, meant: str) -> None:
    msg = measure_error(request_)
    name = request_.split("@")[0]
    assert f"unknown measure {name!r} in {request_!r}; did you mean {meant!r}? known: " in msg
    for known in preval.CATALOGUE:  # the list of names stays
        assert known in msg
    assert suggest(request_) == [meant]


def test_a_slip_close_to_two_measures_names_both() -> None:
    # judge: Judged (ir_measures) and Unjudged (trec_eval 10's unj), the closer first
    msg = measure_error("judge@10")
    assert "did you mean 'Judged@10' or 'Unjudged@10'? known: " in msg
    assert suggest("judge@10") == ["Judged@10", "Unjudged@10"]


def test_the_exact_messages() -> None:
    known = ", ".join(preval.CATALOGUE)
    for request_, meant in (("nDCG10", "nDCG@10"), ("P10", "P@10"), ("map_cut10", "AP@10")):
        assert measure_error(request_) == (
            f"unknown measure {request_!r} in {request_!r}; did you mean {meant!r}? known: {known}"
        )


def test_a_misspelt_name_gets_the_closest_names_with_its_cutoff() -> None:
    msg = measure_error("ndgc@10")
    # ndcgAt (Spark MLlib's spelling) is nDCG(dcg=exp-log2)
    assert "did you mean 'nDCG@10', 'nDCG(dcg=exp-log2)@10' or 'alpha_nDCG@10'?" in msg
    assert suggest("ndgc@10")[0] == "nDCG@10"
    assert suggest("prec@10")[0] == "P@10"  # precision@10, a name that begins so, first
    assert suggest("mapp")[0] == "AP"
    assert suggest("NumRett")[0] == "NumRet"
    assert len(suggest("alphanDCG@10")) == 3


def test_a_request_that_does_not_parse_gets_the_request_meant() -> None:
    msg = measure_error("P(rel=2)10")
    assert msg.startswith("cannot parse measure 'P(rel=2)10': expected NAME")
    assert msg.endswith("; did you mean 'P(rel=2)@10'?")
    assert measure_error("IPrec0.5").endswith("; did you mean 'IPrec@0.5'?")


def test_nothing_close_gives_no_guess() -> None:
    msg = measure_error("Bogus@10")
    assert msg.startswith("unknown measure 'Bogus' in 'Bogus@10'; known: AP, ")
    assert "did you mean" not in msg
    assert suggest("Bogus") == [] and suggest("@@") == []


def test_a_known_measure_still_parses_in_any_case() -> None:
    assert preval.measures.parse("ndcg@10").name == "nDCG@10"
    assert preval.measures.parse("NDCG@10").name == "nDCG@10"


# ---------------------------------------------------------------------------------------------
# Columns
# ---------------------------------------------------------------------------------------------


def column_error(data, **kw) -> str:
    with pytest.raises(MissingColumnError) as info:
        preval.evaluate(data, ["AP"], **kw)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def test_one_missing_column_is_told_its_keyword_and_flag() -> None:
    assert column_error(QPY, doc="pid", score="pred", label="y") == (
        "input: missing query column 'query' (columns present: qid, pid, pred, y); say which "
        "column holds it: query='qid' (--query qid)"
    )


def test_every_missing_column_and_the_doc_ids() -> None:
    # the doc column may be absent from a joined table (ties then follow the input order): it
    # is hinted at beside the columns that are missing
    assert column_error(QPY) == (
        "input: missing query column 'query', score column 'score', label column 'label' "
        "(columns present: qid, pid, pred, y); say which columns hold them: query='qid' "
        "(--query qid), score='pred' (--score pred), label='y' (--label y); and the doc ids: "
        "doc='pid' (--doc pid)"
    )


def test_qrels_columns() -> None:
    qrels = pl.DataFrame({"topic": ["1"], "iter": [0], "docno": ["a"], "rel": [1]})
    with pytest.raises(MissingColumnError) as info:
        preval.evaluate(BASE.drop("label"), ["AP"], qrels=qrels)
    assert str(info.value).endswith(
        "(columns present: topic, iter, docno, rel); say which columns hold them: "
        "query='topic' (--query topic), doc='docno' (--doc docno), label='rel' (--label rel)"
    )


def test_a_run_without_qrels_is_told_to_give_them() -> None:
    # a newcomer's first `preval evaluate run.csv`: labels are in another file
    run = BASE.drop("label")
    assert column_error(run) == (
        "input: missing label column 'label' (columns present: query, doc, score, system); a "
        "run without labels needs its judgments: qrels=... (--qrels FILE)"
    )


def test_qrels_given_where_the_run_goes_are_named_so() -> None:
    # `preval evaluate qrels.csv --qrels run.csv`
    qrels, run = BASE.select("query", "doc", "label"), BASE.drop("label")
    with pytest.raises(MissingColumnError) as info:
        preval.evaluate(qrels, ["AP"], qrels=run)
    assert str(info.value) == (
        "input: missing score column 'score' (columns present: query, doc, label); it has a "
        "label column ('label') and no score, as qrels do: are the qrels given where the run "
        "goes?"
    )


def test_a_csv_file_without_a_header_line_says_so(tmp_path) -> None:
    # its first row read as the names: not 'a run without labels'
    path = tmp_path / "no_header.csv"
    path.write_text("q1,d1,0.5,1\nq1,d2,0.4,0\n")
    assert column_error(path) == (
        f"input {path}: missing query column 'query', score column 'score', label column "
        "'label' (columns present: q1, d1, 0.5, 1); column name '0.5' is a number: is the "
        "first line data? A CSV file needs a header line naming its columns "
        "(query,doc,score,label)"
    )


def test_a_frame_whose_column_names_are_numbers_is_told_to_name_them() -> None:
    # a frame made from an array (pandas' default labels): not told of a CSV header line
    frame = pl.DataFrame({"0": ["q"], "1": ["d"], "2": [0.5], "3": [1]})
    assert column_error(frame) == (
        "input: missing query column 'query', score column 'score', label column 'label' "
        "(columns present: 0, 1, 2, 3); column name '0' is a number: name the columns"
    )


def test_names_close_to_the_one_asked_for() -> None:
    assert column_error(BASE, by="sytem").endswith("say which column holds it: by='system' "
                                                   "(--by system)")  # fmt: skip
    renamed = BASE.rename({"query": "Query", "label": "my label"})
    assert column_error(renamed).endswith(
        "query='Query' (--query Query), label='my label' (--label 'my label')"
    )
    assert column_error(BASE.rename({"score": "scores"})).endswith(
        "score='scores' (--score scores)"
    )


def test_a_csv_header_of_one_column_holding_another_separator_says_so(tmp_path) -> None:
    # a ;-separated (or tab-separated) file named .csv reads as one column
    for sep in (";", "\t"):
        path = tmp_path / "run.csv"
        path.write_text(sep.join(["query", "doc", "score", "label"]) + "\n" + sep.join(
            ["q1", "d1", "1.0", "1"]) + "\n")  # fmt: skip
        msg = column_error(path)
        assert msg.startswith("input")
        assert f"the header is one column holding {sep!r}" in msg
        assert "a .csv file as comma-separated" in msg
    # a one-column table without one is told only what is missing
    assert "one column holding" not in column_error(pl.DataFrame({"query": ["q1"]}))


def test_a_column_another_role_takes_is_not_offered() -> None:
    # qid is the doc column here: no other column looks like a query id
    msg = column_error(QPY, doc="qid", score="pred", label="y")
    assert msg == "input: missing query column 'query' (columns present: qid, pid, pred, y)"
    # the column named score holds the labels here: it is not offered as the score
    assert column_error(BASE, score="points", label="score") == (
        "input: missing score column 'points' (columns present: query, doc, score, label, system)"
    )


def test_a_column_of_the_wrong_dtype_is_not_offered() -> None:
    as_text = QPY.with_columns(pl.col("pred").cast(pl.String))
    msg = column_error(as_text, query="qid", doc="pid", label="y")
    assert msg == "input: missing score column 'score' (columns present: qid, pid, pred, y)"
    floats = QPY.with_columns(pl.col("qid").cast(pl.Float64))
    assert "say which" not in column_error(floats, doc="pid", score="pred", label="y")


def test_subtopic_column() -> None:
    qrels = pl.DataFrame({"query": ["1"], "intent": ["1"], "doc": ["a"], "label": [1]})
    with pytest.raises(MissingColumnError) as info:
        preval.evaluate(BASE.drop("label"), ["NRBP"], qrels=qrels, subtopic="subtopic")
    assert str(info.value).endswith("say which column holds it: subtopic='intent' "
                                    "(--subtopic intent)")  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Command line: exit 2, one line on stderr, the suggestion in it
# ---------------------------------------------------------------------------------------------


def run_cli(*args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "preval", *map(str, args)],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["-m", "nDCG10"], "did you mean 'nDCG@10'?"),
        (["-m", "AP", "-m", "P10"], "did you mean 'P@10'?"),
        (["-m", "map_cut10"], "did you mean 'AP@10'?"),
    ],
)
def test_cli_measure(args: list[str], hint: str) -> None:
    done = run_cli("evaluate", PARQUET, "--by", "system", *args)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "unknown measure" in lines[0] and hint in lines[0]


def test_cli_column(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    QPY.write_csv(path)
    done = run_cli("evaluate", path)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert (
        "query='qid' (--query qid), score='pred' (--score pred), label='y' (--label y)"
        in (lines[0])
    )
    # and the flags it names work
    done = run_cli("evaluate", path, "--query", "qid", "--score", "pred", "--label", "y",
                   "--doc", "pid", "-q")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split()[0] == "2"  # NumQ


@pytest.mark.parametrize(
    ("request_", "listed"),
    [
        ("AP P@10", "'AP', 'P@10'"),  # ir_measures' command line: measures in one argument
        ("AP,P@10", "'AP', 'P@10'"),
        ("map P_10 ndcg_cut_10", "'AP', 'P@10', 'nDCG@10'"),
        ("P(rel=2,norm=min)@10 AP", "'P(norm=min,rel=2)@10', 'AP'"),
    ],
)
def test_several_measures_in_one_request_are_named(request_: str, listed: str) -> None:
    n = listed.count("'") // 2
    msg = measure_error(request_)
    assert msg == f"{request_!r} names {n} measures: give each its own -m (or list entry): {listed}"


@pytest.mark.parametrize(
    ("request_", "listed"),
    [("ndcg_cut.5,10", "'nDCG@5', 'nDCG@10'"), ("P.5,10,20", "'P@5', 'P@10', 'P@20'")],
)
def test_trec_evals_list_of_cutoffs_is_named_so(request_: str, listed: str) -> None:
    # `preval trec -m P.5,10` is trec_eval's; `evaluate` said only 'cannot parse measure'
    assert measure_error(request_) == (
        f"{request_!r} is trec_eval's list of cutoffs: give each its own -m (or list entry): "
        f"{listed} (preval trec reads it as trec_eval does)"
    )


def test_one_request_with_spaces_inside_brackets_still_parses() -> None:
    assert preval.measures.parse("P(rel=2, norm=min)@10").name == "P(norm=min,rel=2)@10"
    assert preval.measures.parse("nDCG(gains={1:3, 2:9})@10").name == "nDCG(gains={1:3,2:9})@10"
    assert "cannot parse measure 'AP, bogus'" in measure_error("AP, bogus")


def test_cli_several_measures_in_one_flag() -> None:
    done = run_cli("evaluate", PARQUET, "--by", "system", "-m", "AP P@10")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "preval: error: 'AP P@10' names 2 measures: give each its own -m (or list entry): "
        "'AP', 'P@10'"
    ]


def test_a_dict_of_dicts_is_told_how_to_make_rows() -> None:
    # pytrec_eval's and ranx's {query: {doc: score}}: the first thing their users pass
    run = {"q1": {"d1": 0.9, "d2": 0.5}}
    with pytest.raises(preval.InputError) as info:
        preval.evaluate(run, ["AP"])
    assert str(info.value).endswith(
        "; a dict {query: {doc: value}}, as pytrec_eval and ranx take: make it rows, "
        "pl.DataFrame([(q, d, v) for q, docs in run.items() for d, v in docs.items()], "
        "schema=['query', 'doc', 'score'], orient='row') ('label' for qrels)"
    )
    rows = pl.DataFrame(  # and the code it gives runs
        [(q, d, v) for q, docs in run.items() for d, v in docs.items()],
        schema=["query", "doc", "score"], orient="row",
    )  # fmt: skip
    qrels = pl.DataFrame({"query": ["q1"], "doc": ["d1"], "label": [1]})
    assert preval.evaluate(rows, ["AP"], qrels=qrels).collect()["AP"].to_list() == [1.0]


def test_a_ranx_run_is_told_its_to_dataframe() -> None:
    ranx = pytest.importorskip("ranx", reason="ranx is not installed (the bench extra has it)")
    run, qrels = ranx.Run({"q1": {"d1": 0.9, "d2": 0.5}}), ranx.Qrels({"q1": {"d1": 1}})
    with pytest.raises(preval.InputError) as info:
        preval.evaluate(run, ["AP"], qrels=qrels)
    assert "a ranx Run or Qrels: give its .to_dataframe(), with query='q_id'" in str(info.value)
    judged = qrels.to_dataframe().rename(columns={"score": "label"})
    per_query = preval.evaluate(
        run.to_dataframe(), ["AP"], qrels=judged, query="q_id", doc="doc_id"
    ).collect()
    assert per_query["AP"].to_list() == [1.0]


def test_a_csv_comment_line_is_one_row_in_the_singular(tmp_path) -> None:
    # a newcomer's '# comment' in a CSV: '(1 rows with a wrong field count)' before
    path = tmp_path / "commented.csv"
    path.write_text("query,doc,score,label\n# made by hand\nq1,d1,0.5,1\n")
    with pytest.raises(preval.InputError) as info:
        preval.evaluate(path, ["AP"]).collect()
    assert "found 1: '# made by hand' (1 row with a wrong field count)" in str(info.value)
