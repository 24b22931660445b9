"""Bad input (docs/semantics.md): one test, or parametrized case, per rule and input shape.

Two input shapes: one joined table (query, doc, score, label) and a run (query, doc, score)
with separate qrels (query, doc, label). Schema rules raise when `evaluate` is called; data
rules raise when the returned LazyFrame is collected. Every error is a `PrevalError` whose
message names the column or rule, the number of offending rows and one example.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import preval
from preval import (
    ColumnTypeError,
    DuplicateError,
    InputError,
    InvalidValueError,
    MeasureError,
    MissingColumnError,
    PrevalError,
)

NAN = float("nan")


# Tiny hand data. q1: d1 (rel), d2 (non-rel), d3 (rel); q2: d4 (rel).
def joined() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query": ["q1", "q1", "q1", "q2"],
            "doc": ["d1", "d2", "d3", "d4"],
            "score": [1.0, 0.5, 0.2, 0.9],
            "label": [1, 0, 1, 1],
        }
    )


def run() -> pl.DataFrame:
    return joined().drop("label")


def qrels() -> pl.DataFrame:
    return joined().drop("score")


def set_col(df: pl.DataFrame, name: str, values: list) -> pl.DataFrame:
    """`df` with column `name` replaced by `values` (dtype inferred, nulls allowed)."""
    dtype = df.schema[name]
    return df.with_columns(pl.Series(name, values, dtype=dtype, strict=False))


def evaluate_shape(shape: str, table: str, change, measures=("AP",), **kw) -> pl.LazyFrame:
    """Evaluate the hand data in `shape`, with `change` applied to `table`.

    shape: "joined" (one table) or "run+qrels"; table: "joined", "run" or "qrels".
    """
    if shape == "joined":
        assert table == "joined"
        return preval.evaluate(change(joined()), list(measures), **kw)
    r, q = run(), qrels()
    if table == "run":
        r = change(r)
    else:
        assert table == "qrels"
        q = change(q)
    return preval.evaluate(r, list(measures), qrels=q, **kw)


def assert_example(msg: str, pairs: list[tuple[str, str]]) -> None:
    """The message names one example (query and doc) among the offending `pairs`."""
    ok = any(f"query '{q}'" in msg and f"doc '{d}'" in msg for q, d in pairs)
    assert ok, f"no example among {pairs} in: {msg}"


def test_error_classes_are_prevalerrors() -> None:
    for cls in (
        InputError,
        MissingColumnError,
        ColumnTypeError,
        InvalidValueError,
        DuplicateError,
        MeasureError,
    ):
        assert issubclass(cls, PrevalError)
        assert issubclass(cls, ValueError)


# ---------------------------------------------------------------------------------------------
# Missing columns (schema: raised by evaluate() itself, before any collect)
# ---------------------------------------------------------------------------------------------

MISSING = [
    pytest.param("joined", "joined", "query", id="joined-query"),
    pytest.param("joined", "joined", "score", id="joined-score"),
    pytest.param("joined", "joined", "label", id="joined-label"),
    pytest.param("run+qrels", "run", "query", id="run-query"),
    pytest.param("run+qrels", "run", "score", id="run-score"),
    pytest.param(
        "run+qrels",
        "run",
        "doc",
        id="run-doc",
    ),
    pytest.param("run+qrels", "qrels", "query", id="qrels-query"),
    pytest.param("run+qrels", "qrels", "doc", id="qrels-doc"),
    pytest.param("run+qrels", "qrels", "label", id="qrels-label"),
]


@pytest.mark.parametrize(("shape", "table", "column"), MISSING)
def test_missing_column(shape: str, table: str, column: str) -> None:
    with pytest.raises(MissingColumnError) as info:
        evaluate_shape(shape, table, lambda df: df.drop(column))
    msg = str(info.value)
    assert f"'{column}'" in msg
    assert ("qrels" if table == "qrels" else "input") in msg


@pytest.mark.parametrize("shape", ["joined", "run+qrels"])
def test_missing_renamed_column_names_the_users_name(shape: str) -> None:
    table = "joined" if shape == "joined" else "run"
    with pytest.raises(MissingColumnError, match="'sim'"):
        evaluate_shape(shape, table, lambda df: df, score="sim")


@pytest.mark.parametrize("shape", ["joined", "run+qrels"])
def test_missing_by_column(shape: str) -> None:
    table = "joined" if shape == "joined" else "run"
    with pytest.raises(MissingColumnError, match="'system'"):
        evaluate_shape(shape, table, lambda df: df, by="system")


# ---------------------------------------------------------------------------------------------
# Wrong dtypes (schema)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "table", "column"),
    [
        ("joined", "joined", "score"),
        ("run+qrels", "run", "score"),
        ("joined", "joined", "label"),
        ("run+qrels", "qrels", "label"),
    ],
)
def test_non_numeric_column(shape: str, table: str, column: str) -> None:
    def to_string(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(pl.col(column).cast(pl.String))

    with pytest.raises(ColumnTypeError) as info:
        evaluate_shape(shape, table, to_string)
    msg = str(info.value)
    assert f"'{column}'" in msg
    assert "numeric" in msg
    assert "String" in msg


def test_float_query_id_is_rejected() -> None:
    with pytest.raises(ColumnTypeError, match="'query'"):
        preval.evaluate(joined().with_columns(query=pl.Series([1.0, 1.0, 1.0, 2.0])), ["AP"])


def test_float_doc_id_is_rejected() -> None:
    with pytest.raises(ColumnTypeError, match="'doc'"):
        preval.evaluate(joined().with_columns(doc=pl.Series([1.5, 2.5, 3.5, 4.5])), ["AP"])


# ---------------------------------------------------------------------------------------------
# Data rules: raised when the plan is collected
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "table"), [("joined", "joined"), ("run+qrels", "run")])
def test_nan_score(shape: str, table: str) -> None:
    # NaN for q1/d2 and q2/d4: 2 offending rows
    lf = evaluate_shape(shape, table, lambda df: set_col(df, "score", [1.0, NAN, 0.2, NAN]))
    assert isinstance(lf, pl.LazyFrame)  # nothing raised before collect
    with pytest.raises(InvalidValueError) as info:
        lf.collect()
    msg = str(info.value)
    assert "'score'" in msg
    assert "NaN" in msg
    assert "2 rows" in msg
    assert_example(msg, [("q1", "d2"), ("q2", "d4")])


@pytest.mark.parametrize(("shape", "table"), [("joined", "joined"), ("run+qrels", "qrels")])
def test_nan_label(shape: str, table: str) -> None:
    def nan_label(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(label=pl.Series([1.0, NAN, 1.0, 1.0]))

    with pytest.raises(InvalidValueError) as info:
        evaluate_shape(shape, table, nan_label).collect()
    msg = str(info.value)
    assert "'label'" in msg
    assert "NaN" in msg
    assert "1 rows" in msg
    assert_example(msg, [("q1", "d2")])


def test_nan_rules_only_for_float_columns() -> None:
    # an integer column cannot hold NaN: its rule would cost every row a test for nothing
    ints = joined().with_columns(pl.col("label").cast(pl.Int64))
    floats = ints.with_columns(pl.col("label").cast(pl.Float64))
    plans = {
        name: preval.evaluate(table, ["AP"]).explain()
        for name, table in (("ints", ints), ("floats", floats))
    }
    assert "_chk_nan_label" not in plans["ints"]
    assert "_chk_nan_label" in plans["floats"]
    assert "_chk_nan_score" in plans["ints"]  # the score is a float
    no_nan_score = preval.evaluate(ints.with_columns(pl.col("score").cast(pl.Int64)), ["AP"])
    assert "_chk_nan_score" not in no_nan_score.explain()


NULL_ID_CASES = [
    pytest.param("joined", "joined", id="joined"),
    pytest.param("run+qrels", "run", id="run"),
    pytest.param("run+qrels", "qrels", id="qrels"),
]


@pytest.mark.parametrize(("shape", "table"), NULL_ID_CASES)
def test_null_query_id(shape: str, table: str) -> None:
    lf = evaluate_shape(shape, table, lambda df: set_col(df, "query", ["q1", None, None, "q2"]))
    with pytest.raises(InvalidValueError) as info:
        lf.collect()
    msg = str(info.value)
    assert "'query'" in msg
    assert "null" in msg
    assert "2 rows" in msg
    assert ("qrels" if table == "qrels" else "input") in msg


@pytest.mark.parametrize(("shape", "table"), NULL_ID_CASES)
def test_null_query_id_names_an_example_doc(shape: str, table: str) -> None:
    lf = evaluate_shape(shape, table, lambda df: set_col(df, "query", ["q1", None, "q1", "q2"]))
    with pytest.raises(InvalidValueError) as info:
        lf.collect()
    assert "'d2'" in str(info.value)


@pytest.mark.parametrize(("shape", "table"), NULL_ID_CASES)
def test_null_doc_id(shape: str, table: str) -> None:
    lf = evaluate_shape(shape, table, lambda df: set_col(df, "doc", ["d1", None, "d3", "d4"]))
    with pytest.raises(InvalidValueError) as info:
        lf.collect()
    msg = str(info.value)
    assert "'doc'" in msg
    assert "null" in msg
    assert "1 rows" in msg
    assert "query 'q1'" in msg  # the example: the doc itself is null
    assert ("qrels" if table == "qrels" else "input") in msg


@pytest.mark.parametrize(
    "shape",
    [
        "joined",
        pytest.param(
            "run+qrels",
        ),
    ],
)
def test_null_by_key(shape: str) -> None:
    table = "joined" if shape == "joined" else "run"

    def add_system(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(system=pl.Series(["s1", "s1", None, "s1"], dtype=pl.String))

    with pytest.raises(InvalidValueError) as info:
        evaluate_shape(shape, table, add_system, by="system").collect()
    msg = str(info.value)
    assert "'system'" in msg
    assert "null" in msg
    assert "1 rows" in msg


def test_null_label_in_qrels_is_an_error() -> None:
    lf = evaluate_shape("run+qrels", "qrels", lambda df: set_col(df, "label", [1, None, 1, 1]))
    with pytest.raises(InvalidValueError) as info:
        lf.collect()
    msg = str(info.value)
    assert msg.startswith("qrels")
    assert "'label'" in msg
    assert "null" in msg
    assert "1 rows" in msg
    assert_example(msg, [("q1", "d2")])


# ---------------------------------------------------------------------------------------------
# Duplicates
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "table"),
    [("joined", "joined"), ("run+qrels", "run"), ("run+qrels", "qrels")],
)
def test_duplicate_query_doc(shape: str, table: str) -> None:
    # q1 has d1 twice: 2 rows repeat a pair
    lf = evaluate_shape(shape, table, lambda df: set_col(df, "doc", ["d1", "d1", "d3", "d4"]))
    with pytest.raises(DuplicateError) as info:
        lf.collect()
    msg = str(info.value)
    assert "2 rows" in msg
    assert "(query, doc)" in msg
    assert_example(msg, [("q1", "d1")])
    assert msg.startswith("qrels" if table == "qrels" else "input")


def with_systems(df: pl.DataFrame, systems: list[str], docs: list[str]) -> pl.DataFrame:
    return df.with_columns(pl.Series("system", systems), pl.Series("doc", docs))


@pytest.mark.parametrize("shape", ["joined", "run+qrels"])
def test_duplicate_within_one_system(shape: str) -> None:
    table = "joined" if shape == "joined" else "run"

    def change(df: pl.DataFrame) -> pl.DataFrame:  # system s1 returns q1/d1 twice
        return with_systems(df, ["s1", "s1", "s2", "s2"], ["d1", "d1", "d1", "d4"])

    lf = evaluate_shape(shape, table, change, by="system")
    with pytest.raises(DuplicateError) as info:
        lf.collect()
    msg = str(info.value)
    assert "2 rows" in msg
    assert "system 's1'" in msg
    assert_example(msg, [("q1", "d1")])


@pytest.mark.parametrize("shape", ["joined", "run+qrels"])
def test_same_pair_in_two_systems_is_fine(shape: str) -> None:
    table = "joined" if shape == "joined" else "run"

    def change(df: pl.DataFrame) -> pl.DataFrame:  # q1/d1 once in s1 and once in s2
        return with_systems(df, ["s1", "s2", "s2", "s2"], ["d1", "d1", "d3", "d4"])

    out = evaluate_shape(shape, table, change, measures=["NumRet"], by="system").collect()
    assert out.columns == ["system", "query", "NumRet"]
    got = {(s, q): n for s, q, n in out.iter_rows()}
    assert got[("s1", "q1")] == 1.0
    assert got[("s2", "q1")] == 2.0
    assert got[("s2", "q2")] == 1.0


# Measures that read every judged document as a row (nDCGRel, G: `reads_judged_rows`) join the
# qrels into the run before they rank it. The qrels keep their rules there, and a broken one is
# the qrels' error, worded as with AP (which checks the qrels beside the run): before, the joined
# table blamed the input for a judgment given twice (the join doubled the run's row), for a null
# or NaN label and a null id, and took a null label for an unjudged document (no error).
QRELS_RULES = [
    pytest.param(lambda df: set_col(df, "doc", ["d1", "d1", "d3", "d4"]), DuplicateError,
                 "2 rows repeat a (query, doc) pair", id="duplicate"),
    pytest.param(lambda df: set_col(df, "label", [1, None, 1, 1]), InvalidValueError,
                 "column 'label' is null in 1 rows", id="null-label"),
    pytest.param(lambda df: df.with_columns(label=pl.Series([1.0, NAN, 1.0, 1.0])),
                 InvalidValueError,
                 "column 'label' is NaN or infinite in 1 rows", id="nan-label"),
    pytest.param(lambda df: set_col(df, "doc", ["d1", None, "d3", "d4"]), InvalidValueError,
                 "column 'doc' is null in 1 rows", id="null-doc"),
    pytest.param(lambda df: set_col(df, "query", ["q1", None, None, "q2"]), InvalidValueError,
                 "column 'query' is null in 2 rows", id="null-query"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "error", "text"), QRELS_RULES)
def test_a_qrels_rule_is_the_qrels_whether_they_are_joined_or_not(
    change, error: type[PrevalError], text: str
) -> None:
    messages = set()
    for measure in ("AP", "nDCGRel", "G"):
        lf = evaluate_shape("run+qrels", "qrels", change, [measure])
        with pytest.raises(error) as info:  # raised when the plan runs, not before
            lf.collect()
        messages.add(str(info.value))
    assert len(messages) == 1, messages  # one wording, whichever way the qrels are read
    msg = messages.pop()
    assert msg.startswith("qrels: ")
    assert text in msg


def test_a_judgment_given_twice_is_the_qrels_with_systems_and_segments() -> None:
    # systems (the run's by column) are crossed with the qrels after the check: the error names
    # no system; a segment in both tables describes the query: d1 once in each segment is fine
    r = with_systems(run(), ["s1", "s1", "s2", "s2"], ["d1", "d2", "d1", "d4"])
    q = qrels().with_columns(pl.Series("doc", ["d1", "d1", "d3", "d4"]))
    with pytest.raises(DuplicateError) as info:
        preval.evaluate(r, ["nDCGRel"], qrels=q, by="system").collect()
    msg = str(info.value)
    assert msg.startswith("qrels: 2 rows repeat") and "system" not in msg.split("example")[1]
    assert_example(msg, [("q1", "d1")])
    segments = ["a", "b", "a", "a"]
    r2 = run().with_columns(pl.Series("segment", segments))
    q2 = q.with_columns(pl.Series("segment", segments))
    out = preval.evaluate(r2, ["nDCGRel", "AP"], qrels=q2, by="segment").collect()
    assert out.height == 3  # (a, q1), (b, q1), (a, q2)
    with pytest.raises(DuplicateError, match="example: segment 'a', query 'q1', doc 'd1'"):
        preval.evaluate(r2, ["nDCGRel"], qrels=q2.with_columns(segment=pl.lit("a")),
                        by="segment").collect()  # fmt: skip


# Hand case: q1 has d1 (score 1.0, non-relevant) and d2 twice (scores 0.5 and 2.0, relevant).
#   max:   d2 (2.0) ranks before d1 -> AP = 1, P@1 = 1
#   first: d2 (0.5) ranks after d1  -> AP = 1/2, P@1 = 0
DUP_EXPECTED = {"max": (1.0, 1.0), "first": (0.5, 0.0)}


@pytest.mark.parametrize("how", ["max", "first"])
def test_duplicates_option_in_joined_table(how: str) -> None:
    df = pl.DataFrame(
        {
            "query": ["q1", "q1", "q1"],
            "doc": ["d1", "d2", "d2"],
            "score": [1.0, 0.5, 2.0],
            "label": [0, 1, 1],
        }
    )
    out = preval.evaluate(df, ["AP", "P@1", "NumRet"], duplicates=how).collect()
    assert out.row(0) == ("q1", *DUP_EXPECTED[how], 2.0)


@pytest.mark.parametrize("how", ["max", "first"])
def test_duplicates_option_in_run(how: str) -> None:
    r = pl.DataFrame({"query": ["q1"] * 3, "doc": ["d1", "d2", "d2"], "score": [1.0, 0.5, 2.0]})
    q = pl.DataFrame({"query": ["q1", "q1"], "doc": ["d1", "d2"], "label": [0, 1]})
    out = preval.evaluate(r, ["AP", "P@1", "NumRet"], qrels=q, duplicates=how).collect()
    assert out.row(0) == ("q1", *DUP_EXPECTED[how], 2.0)


# Qrels: d1 is judged 0 first and 2 later. Run: d1 (1.0), d2 (0.5, judged 1).
#   max:   d1 relevant (2) -> R = 2, AP = (1/1 + 2/2)/2 = 1, P@1 = 1
#   first: d1 non-relevant -> R = 1, AP = (1/2)/1 = 1/2, P@1 = 0
@pytest.mark.parametrize(
    ("how", "expected"), [("max", (1.0, 1.0, 2.0)), ("first", (0.5, 0.0, 1.0))]
)
def test_duplicates_option_in_qrels(how: str, expected: tuple[float, ...]) -> None:
    r = pl.DataFrame({"query": ["q1", "q1"], "doc": ["d1", "d2"], "score": [1.0, 0.5]})
    q = pl.DataFrame({"query": ["q1"] * 3, "doc": ["d1", "d2", "d1"], "label": [0, 1, 2]})
    out = preval.evaluate(r, ["AP", "P@1", "NumRel"], qrels=q, duplicates=how).collect()
    assert out.row(0) == ("q1", *expected)


def test_duplicates_option_must_be_known() -> None:
    with pytest.raises(PrevalError, match="duplicates"):
        preval.evaluate(joined(), ["AP"], duplicates="last")


@pytest.mark.parametrize("level", [float("nan"), float("inf"), "2", True, None])
def test_relevance_level_must_be_a_finite_number(level: object) -> None:
    # -l nan made every document non-relevant (AP 0 for every query, no error); "2" failed
    # inside Polars when the plan ran
    with pytest.raises(PrevalError, match="relevance_level must be a finite number"):
        preval.evaluate(joined(), ["AP"], relevance_level=level)


def test_relevance_level_takes_numpy_numbers() -> None:
    np = pytest.importorskip("numpy")
    want = preval.evaluate(joined(), ["AP"], relevance_level=2).collect()
    got = preval.evaluate(joined(), ["AP"], relevance_level=np.int64(2)).collect()
    assert got.equals(want)


# ---------------------------------------------------------------------------------------------
# Nulls that are not errors
# ---------------------------------------------------------------------------------------------


# q1: d1 (1.0, non-rel), d2 (null score: not retrieved, rel), d3 (0.5, rel).
# Ranking d1, d3; R = 2 -> AP = (1/2)/2 = 0.25, NumRet 2, NumRel 2.
def test_null_score_is_unretrieved_in_joined_table() -> None:
    df = pl.DataFrame(
        {
            "query": ["q1"] * 3,
            "doc": ["d1", "d2", "d3"],
            "score": [1.0, None, 0.5],
            "label": [0, 1, 1],
        }
    )
    out = preval.evaluate(df, ["AP", "NumRet", "NumRel"]).collect()
    assert out.row(0) == ("q1", 0.25, 2.0, 2.0)


def test_null_score_is_unretrieved_in_run() -> None:
    r = pl.DataFrame({"query": ["q1"] * 3, "doc": ["d1", "d2", "d3"], "score": [1.0, None, 0.5]})
    q = pl.DataFrame({"query": ["q1"] * 3, "doc": ["d1", "d2", "d3"], "label": [0, 1, 1]})
    out = preval.evaluate(r, ["AP", "NumRet", "NumRel"], qrels=q).collect()
    assert out.row(0) == ("q1", 0.25, 2.0, 2.0)


# q1: d1 (1.0, unjudged = non-relevant), d2 (0.5, rel) -> AP = 1/2, NumRel 1, NumRet 2.
def test_null_label_in_joined_table_is_unjudged() -> None:
    df = pl.DataFrame(
        {"query": ["q1", "q1"], "doc": ["d1", "d2"], "score": [1.0, 0.5], "label": [None, 1]}
    )
    out = preval.evaluate(df, ["AP", "NumRet", "NumRel"]).collect()
    assert out.row(0) == ("q1", 0.5, 2.0, 1.0)


# ---------------------------------------------------------------------------------------------
# Measures
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["joined", "run+qrels"])
def test_unknown_measure(shape: str) -> None:
    table = "joined" if shape == "joined" else "run"
    with pytest.raises(MeasureError) as info:
        evaluate_shape(shape, table, lambda df: df, measures=["AP", "Bogus@10"])
    msg = str(info.value)
    assert "'Bogus'" in msg
    for name in preval.CATALOGUE:
        assert name in msg


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("P@0", ">= 1"),
        ("Rprec@5", "no cutoff"),
        ("P(k=3)@5", "(rel, norm)"),
        ("P", "P@10"),
        ("AP(norm=foo)@10", "R, min, hits"),
        ("F(beta=-1)@5", "positive"),
        ("P@1.5", ">= 1"),
        pytest.param(
            "P@²",
            ">= 1",
        ),
    ],
)
def test_bad_measure_parameter(text: str, hint: str) -> None:
    with pytest.raises(MeasureError) as info:
        preval.evaluate(joined(), ["AP", text])
    msg = str(info.value)
    assert repr(text) in msg
    assert hint in msg


def test_empty_measure_list() -> None:
    with pytest.raises(MeasureError, match="no measures"):
        preval.evaluate(joined(), [])


# ---------------------------------------------------------------------------------------------
# Empty input: a valid, empty result with the right schema
# ---------------------------------------------------------------------------------------------

MEASURES = ["AP", "P@5", "NumRet"]
# rates Float64, counts Int64, even with no row
SCHEMA = {"AP": pl.Float64, "P@5": pl.Float64, "NumRet": pl.Int64}


def test_empty_joined_table() -> None:
    per_query = preval.evaluate(joined().clear(), MEASURES)
    out = per_query.collect()
    assert out.height == 0
    assert dict(out.schema) == {"query": pl.String, **SCHEMA}
    summary = preval.summarize(per_query).collect()
    assert summary.height == 1
    assert summary["NumQ"].to_list() == [0.0]
    assert summary.columns == ["NumQ", *MEASURES]


def test_empty_joined_table_by_system() -> None:
    df = joined().with_columns(system=pl.lit("s1")).clear()
    out = preval.evaluate(df, MEASURES, by="system").collect()
    assert out.height == 0
    assert dict(out.schema) == {"system": pl.String, "query": pl.String, **SCHEMA}


def test_empty_run_and_empty_qrels() -> None:
    per_query = preval.evaluate(run().clear(), MEASURES, qrels=qrels().clear())
    out = per_query.collect()
    assert out.height == 0
    assert dict(out.schema) == {"query": pl.String, **SCHEMA}
    assert preval.summarize(per_query).collect()["NumQ"].to_list() == [0.0]


@pytest.mark.parametrize(
    "kw", [{"queries": "retrieved"}, {"by": "system"}], ids=["retrieved", "by-system"]
)
def test_empty_run_with_qrels(kw: dict) -> None:
    r = run().with_columns(system=pl.lit("s1")).clear()
    per_query = preval.evaluate(r, MEASURES, qrels=qrels(), **kw)
    out = per_query.collect()
    assert out.height == 0
    keys = {"system": pl.String} if "by" in kw else {}
    assert dict(out.schema) == {**keys, "query": pl.String, **SCHEMA}
    if "by" not in kw:
        assert preval.summarize(per_query).collect()["NumQ"].to_list() == [0.0]


def test_empty_run_with_qrels_scores_judged_queries_zero() -> None:
    # docs/semantics.md, which queries count (trec_eval -c): a judged query the run did not
    # answer scores 0
    out = preval.evaluate(run().clear(), MEASURES, qrels=qrels()).collect()
    assert out.to_dicts() == [
        {"query": "q1", "AP": 0.0, "P@5": 0.0, "NumRet": 0.0},
        {"query": "q2", "AP": 0.0, "P@5": 0.0, "NumRet": 0.0},
    ]


def test_empty_csv_header_only(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("query,doc,score,label\n")
    out = preval.evaluate(path, MEASURES).collect()
    assert out.height == 0
    assert dict(out.schema) == {"query": pl.String, **SCHEMA}


# ---------------------------------------------------------------------------------------------
# CSV ids stay strings
# ---------------------------------------------------------------------------------------------


def test_csv_ids_keep_leading_zeros(tmp_path: Path) -> None:
    path = tmp_path / "joined.csv"
    # "01" and "1" are different docs: no duplicate; "007" stays "007"
    path.write_text("query,doc,score,label\n007,01,1.5,0\n007,1,0.5,1\n010,1,0.7,1\n")
    out = preval.evaluate(path, ["AP", "NumRet"]).collect()
    assert out.schema["query"] == pl.String
    assert out.rows() == [("007", 0.5, 2.0), ("010", 1.0, 1.0)]


def test_csv_ids_keep_leading_zeros_in_run_and_qrels(tmp_path: Path) -> None:
    run_path, qrels_path = tmp_path / "run.tsv", tmp_path / "qrels.csv"
    run_path.write_text("system\tquery\tdoc\tscore\n01\t007\t01\t1.5\n01\t007\t1\t0.5\n")
    qrels_path.write_text("query,doc,label\n007,1,1\n007,01,0\n7,1,1\n")
    out = preval.evaluate(run_path, ["AP", "NumRet"], qrels=qrels_path, by="system").collect()
    assert out.schema["system"] == pl.String
    assert out.schema["query"] == pl.String
    # query "7" is judged but not retrieved: scores 0 (it is not "007")
    assert out.rows() == [("01", "007", 0.5, 2.0), ("01", "7", 0.0, 0.0)]


def test_csv_ids_keep_leading_zeros_with_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_text("\ufeffquery,doc,score,label\n007,01,1.5,1\n", encoding="utf-8")
    out = preval.evaluate(path, ["AP"]).collect()
    assert out["query"].to_list() == ["007"]


def test_nan_in_csv(tmp_path: Path) -> None:
    path = tmp_path / "nan.csv"
    path.write_text("query,doc,score,label\nq1,a,NaN,1\nq1,b,0.5,0\n")
    with pytest.raises(InvalidValueError) as info:
        preval.evaluate(path, ["AP"]).collect()
    msg = str(info.value)
    assert "NaN" in msg
    assert "1 rows" in msg
    assert_example(msg, [("q1", "a")])


def test_duplicate_count_is_every_repeated_row() -> None:
    # d1 three times in q1: 3 offending rows, one example
    lf = evaluate_shape("joined", "joined", lambda df: set_col(df, "doc", ["d1", "d1", "d1", "d4"]))
    with pytest.raises(DuplicateError) as info:
        lf.collect()
    msg = str(info.value)
    assert "3 rows" in msg
    assert len(re.findall(r"example:", msg)) == 1


# the data rules of a file: (file name, its text, the file's role, the rule's words)
RULED_FILES = {
    "nan-score": ("t.csv", "query,doc,score,label\nq1,a,NaN,1\nq1,b,0.5,0\n", "input", "NaN"),
    "inf-label": ("t.csv", "query,doc,score,label\nq1,a,0.9,inf\nq1,b,0.5,0\n", "input", "NaN"),
    "repeat": ("t.csv", "query,doc,score,label\nq1,a,0.9,1\nq1,a,0.5,0\n", "input", "repeat"),
    "repeat-run": ("r.run", "q1 Q0 a 1 0.9 A\nq1 Q0 a 2 0.5 A\n", "input", "repeat"),
    "nan-qrels": ("q.csv", "query,doc,label\nq1,a,NaN\nq1,b,0\n", "qrels", "NaN"),
}


@pytest.mark.parametrize("case", list(RULED_FILES))
def test_a_data_rule_of_a_file_names_it_when_the_caller_collects(tmp_path: Path, case: str):
    # `preval.evaluate` returns a lazy plan that the caller collects with Polars' own
    # `collect()`, where no engine can add the file's name: the plan's checker names it, in
    # the words `preval.collect` and the commands use ("input PATH: ...")
    name, text, role, words = RULED_FILES[case]
    path = tmp_path / name
    path.write_text(text)
    data, qrels = str(path), None
    if role == "qrels":
        data = tmp_path / "run.csv"
        data.write_text("query,doc,score\nq1,a,0.9\nq1,b,0.5\n")
        qrels = str(path)
    elif name.endswith(".run"):
        qrels = tmp_path / "q.qrels"
        qrels.write_text("q1 0 a 1\n")
    with pytest.raises(PrevalError) as lazy:
        preval.evaluate(data, ["AP"], qrels=qrels).collect()
    msg = str(lazy.value)
    assert msg.startswith(f"{role} {path}: "), msg
    assert words in msg and "\n" not in msg, msg
    scopes = {  # a chunked engine's count is of the part where it stopped, and says so
        "in-memory": "",
        "chunked": " (counted over the queries of input rows 1-2, where the chunked engine "
        "stopped)",
        "partitioned": " (counted over one bucket of the queries, where the partitioned engine "
        "stopped)",
    }
    for engine, scope in scopes.items():
        with pytest.raises(PrevalError) as collected:
            preval.collect(preval.plan(data, ["AP"], qrels=qrels), engine)
        assert str(collected.value) == msg + scope, engine


def test_a_data_rule_of_a_frame_names_the_role() -> None:
    frame = joined().with_columns(score=pl.Series([1.0, NAN, 0.2, 0.9]))
    with pytest.raises(InvalidValueError, match=r"^input: column 'score' is NaN"):
        preval.evaluate(frame, ["AP"]).collect()


def test_a_data_rule_of_a_curve_names_its_file(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("query,doc,score,label\nq1,a,NaN,1\nq1,b,0.5,0\n")
    with pytest.raises(InvalidValueError, match=rf"^input {re.escape(str(path))}: .* NaN"):
        preval.curve(str(path)).collect()


@given(
    st.lists(
        st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.sampled_from(["d1", "d2", "d3", None])),
        max_size=12,
    )
)
def test_duplicate_counter_fires_whenever_a_pair_repeats(
    pairs: list[tuple[str, str | None]],
) -> None:
    # the duplicate rule's per-query counter: nonzero exactly for the queries where a doc
    # repeats (the rule's recount then gives the exact figure; distinct short ids do not
    # collide here); null docs are the null-doc rule's, never a repeat
    from preval import validate

    (rule,) = [
        r for r in validate.row_checks(has_doc=True, has_score=False, label_may_be_null=True,
                                       has_pad=False, float_label=False)
        if r.name == "duplicate"
    ]  # fmt: skip
    df = pl.DataFrame({"_q": [q for q, _ in pairs], "_d": [d for _, d in pairs]},
                      schema={"_q": pl.String, "_d": pl.String})  # fmt: skip
    got = dict(df.group_by("_q").agg(rule.count.alias("n")).iter_rows())
    for query in {q for q, _ in pairs}:
        docs = [d for q, d in pairs if q == query and d is not None]  # plain Python
        assert (got[query] > 0) == (len(docs) != len(set(docs)))


def test_a_signal_without_offenders_raises_nothing() -> None:
    # a rule whose cheap counter fires but whose exact recount finds no offending group (a
    # hash collision) is a false alarm: the checker passes the frame on without the counters
    from preval import validate

    rule = validate.Rule(
        "duplicate", pl.lit(1), None, DuplicateError, "{n} rows repeat",
        recount=lambda rows, keys: rows.filter(pl.lit(False)).select(
            *keys, pl.lit(0).alias("n"), pl.lit("").alias("example")
        ),
    )  # fmt: skip
    rows = pl.LazyFrame({"_q": ["q1", "q2"], "_d": ["d1", "d2"]})
    stats = pl.DataFrame({"_q": ["q1", "q2"], "_chk_rows": [1, 1], "_chk_duplicate": [1, 1]})
    check = validate.checker([rule], {"_q": "query"}, {"doc": "doc"}, "qrels", rows)
    assert check(stats).columns == ["_q"]
