"""preval's tables as an analyst uses them: per-query rows and summaries that join, filter and
group like SQL tables. Each test is a trap an analyst fell into (a silent wrong summary, a
Polars error instead of preval's one line, a convention found only by reading the code)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import preval
from preval.errors import InputError

from .profiles import examples

ROOT = Path(__file__).resolve().parents[1]
JOINED = pl.read_parquet(ROOT / "fixtures" / "example.parquet")
# a small slice: three systems, 20 queries (q001..q020), every shape of the fixture kept
SMALL = JOINED.filter(pl.col("query") <= "q020")


# --- a query column that is not called "query" ------------------------------------------


def test_summarize_refuses_a_per_query_table_whose_query_column_it_cannot_see() -> None:
    # evaluate(query="qid") keeps the user's name: the per-query table has a "qid" column.
    # summarize's default query="query" found no such column, took "qid" for a by key and
    # returned one row per (system, query) with NumQ = 1: a "summary" as long as the input.
    per_query = preval.evaluate(SMALL.rename({"query": "qid"}), ["AP"], query="qid", by="system")
    with pytest.raises(InputError, match=r"no query column 'query'.*query='qid'"):
        preval.summarize(per_query)
    # named, it is the summary of the table with the usual name
    want = preval.summarize(preval.evaluate(SMALL, ["AP"], by="system")).collect()
    assert preval.summarize(per_query, query="qid").collect().equals(want)
    # the groups named instead: every row of a group is one of its queries
    assert preval.summarize(per_query, by="system").collect().equals(want)
    # a table of measures only (no key at all) is still one overall row
    only = per_query.select("AP").collect()
    assert preval.summarize(only).collect()["NumQ"].to_list() == [SMALL["query"].n_unique() * 3]


# --- a key column with the name of an output column ---------------------------------------


@pytest.mark.parametrize(
    ("key", "measures", "form"),
    [
        ("AP", ["AP"], "wide"),  # a measure's column
        ("P@10", ["P_10"], "wide"),  # ... by its canonical name, whatever was asked
        ("measure", ["AP"], "long"),  # the long form's two columns
        ("value", ["AP"], "long"),
    ],
)
def test_a_key_named_as_an_output_column_is_one_line(key, measures, form) -> None:
    # was: Polars' DuplicateError with the plan printed, when the plan was collected
    data = SMALL.rename({"system": key})
    with pytest.raises(InputError, match=rf"column '{key}' .* rename"):
        preval.evaluate(data, measures, by=key, form=form).collect()
    with pytest.raises(InputError, match=r"query column 'AP' .* rename"):
        preval.evaluate(SMALL.rename({"query": "AP"}), ["AP"], query="AP", by="system")


def test_a_key_named_numq_is_refused() -> None:
    # the summary's own NumQ column: a String key of that name was taken for the NumQ
    # measure, skipped, and the summary was one overall row
    with pytest.raises(InputError, match=r"by column 'NumQ' .* NumQ\): rename"):
        preval.evaluate(SMALL.rename({"system": "NumQ"}), ["AP"], by="NumQ")
    per_query = preval.evaluate(SMALL, ["AP"], by="system").collect()
    with pytest.raises(InputError, match=r"by column 'NumQ' .* rename"):
        preval.summarize(per_query.rename({"system": "NumQ"}), by="NumQ")


def test_a_per_query_csv_with_a_measure_column_without_values(tmp_path: Path) -> None:
    # every query of one class: AUC-ROC is null throughout, and a CSV reader reads the empty
    # column as strings; it is still a measure (null mean), not a key
    data = SMALL.with_columns(label=pl.lit(1, pl.Int64))
    path = tmp_path / "pq.csv"
    preval.evaluate(data, ["AP", "AUC-ROC"], by="system").collect().write_csv(path)
    assert pl.read_csv(path).schema["AUC-ROC"] == pl.String
    summary = preval.summarize(str(path)).collect()
    assert summary.columns == ["system", "NumQ", "AP", "AUC-ROC"]
    assert summary.schema["AUC-ROC"] == pl.Float64 and summary["AUC-ROC"].null_count() == 3
    assert summary["NumQ"].to_list() == [20, 20, 20]
    # and its long form holds Float64 values (the strings made the value column String)
    long = preval.to_long(str(path), ["system", "query"]).collect()
    assert long.schema["value"] == pl.Float64 and long.height == 120


def test_to_long_refuses_an_index_named_measure_or_value() -> None:
    per_query = preval.evaluate(SMALL, ["AP"], by="system").rename({"system": "value"})
    with pytest.raises(InputError, match=r"column 'value' .* rename"):
        preval.to_long(per_query, ["value", "query"])


# --- undefined values (null) in a comparison ---------------------------------------------


def joined(rows: list[tuple]) -> pl.DataFrame:
    schema = {"system": pl.String, "query": pl.String, "doc": pl.String, "score": pl.Float64,
              "label": pl.Int64}  # fmt: skip
    return pl.DataFrame(rows, schema=schema, orient="row")


def test_compare_leaves_out_a_query_where_a_system_has_no_value() -> None:
    # q1: system a returns its two relevant documents and nothing else, a perfect ranking
    # whose ROC curve is undefined (no negative: AUC-ROC null); b ranks a non-relevant one
    # between them (AUC-ROC 0.5). q2: both are defined, a 1.0 and b 0.0.
    # compare scored a's undefined value 0 (as if a lacked the query), so b "won" q1:
    # a's mean 0.5, b's 0.25, delta -0.25, one win for b. An undefined value is no score:
    # q1 leaves AUC-ROC's universe (as it leaves the summary's mean), AP keeps it.
    data = joined([
        ("a", "q1", "r1", 3.0, 1), ("a", "q1", "r2", 2.0, 1),
        ("b", "q1", "r1", 3.0, 1), ("b", "q1", "n1", 2.0, 0), ("b", "q1", "r2", 1.0, 1),
        ("a", "q2", "r1", 3.0, 1), ("a", "q2", "n1", 2.0, 0),
        ("b", "q2", "n1", 3.0, 0), ("b", "q2", "r1", 2.0, 1),
    ])  # fmt: skip
    per_query = preval.evaluate(data, ["AUC-ROC", "AP"], by="system")
    values = per_query.collect().sort("system", "query")["AUC-ROC"].to_list()
    assert values == [None, 1.0, 0.5, 0.0]
    got = preval.compare(per_query, baseline="a", correction="none")
    auc = got.filter(measure="AUC-ROC").row(0, named=True)
    assert (auc["queries"], auc["queries_filled"]) == (1, 0)
    assert (auc["mean"], auc["baseline_mean"], auc["delta"]) == (0.0, 1.0, -1.0)
    assert (auc["wins"], auc["ties"], auc["losses"]) == (0, 0, 1)
    # AP is defined everywhere: both queries (a: 1, 1; b: (1 + 2/3)/2, 1/2)
    ap = got.filter(measure="AP").row(0, named=True)
    assert ap["queries"] == 2 and ap["mean"] == pytest.approx((5 / 6 + 1 / 2) / 2)
    # the summary's means are over the same defined values
    summary = preval.summarize(per_query).collect()
    assert summary["AUC-ROC"].to_list() == [1.0, 0.25]


def test_compare_still_scores_zero_for_a_query_a_system_lacks() -> None:
    # no row at all (a joined table where system b has no row for q2) is a lacking query
    table = pl.DataFrame({"system": ["a", "a", "b"], "query": ["q1", "q2", "q1"],
                          "AUC-ROC": [0.5, 0.75, None], "AP": [0.5, 0.75, 0.25]})  # fmt: skip
    got = preval.compare(table, baseline="a", correction="none")
    auc = got.filter(measure="AUC-ROC").row(0, named=True)
    # q1: b's value is undefined (out); q2: b lacks it (scored 0)
    assert (auc["queries"], auc["queries_filled"], auc["mean"]) == (1, 1, 0.0)
    ap = got.filter(measure="AP").row(0, named=True)
    assert (ap["queries"], ap["queries_filled"]) == (2, 1)
    assert ap["mean"] == pytest.approx(0.25 / 2)
    dropped = preval.compare(table, baseline="a", missing="drop").filter(measure="AUC-ROC")
    assert dropped["queries"].item() == 0


def test_the_command_warns_of_every_measure_left_out_of_a_mean(tmp_path: Path, capsys) -> None:
    # q1 ranks a relevant and a non-relevant document, q2 only a relevant one: Specificity,
    # FallOut and AUC-ROC are undefined on q2 (no negative: null) and the summary's means
    # are over q1 alone, while NumQ says 2; only the AUC-* measures were said on stderr
    from preval.cli import main

    path = tmp_path / "t.csv"
    path.write_text("query,doc,score,label\nq1,a,1.0,1\nq1,b,0.5,0\nq2,c,1.0,1\n")
    measures = ["AP", "Specificity", "FallOut@5", "AUC-ROC"]
    argv = ["evaluate", str(path), *(f"-m{m}" for m in measures), "--format", "csv"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[1] == "2,1.0,0.0,1.0,1.0"  # NumQ 2; q1's values, AP's mean of two
    for name in measures[1:]:
        assert f"{name} is undefined (null) for 1 query" in err, name
    assert "AP is undefined" not in err
    assert "AUC-ROC is undefined (null) for 1 query with a single class" in err


# --- a segment column of the judgments ----------------------------------------------------


def test_a_by_column_only_the_qrels_have_is_said_so() -> None:
    # the topic type is a column of the judgments; the message named the run's columns only
    run = pl.read_csv(ROOT / "fixtures" / "example_run.csv").filter(pl.col("query") <= "q020")
    qrels = pl.read_csv(ROOT / "fixtures" / "example_qrels.csv").filter(pl.col("query") <= "q020")
    qrels = qrels.with_columns(
        kind=pl.when(pl.col("query") < "q010").then(pl.lit("short")).otherwise(pl.lit("long"))
    )
    with pytest.raises(InputError, match="'kind' is a column of the qrels only"):
        preval.evaluate(run, ["AP"], qrels=qrels, by=["system", "kind"])
    # the way the message gives: the column joined onto the run first
    topics = qrels.select("query", "kind").unique()
    per_query = preval.evaluate(
        run.join(topics, on="query", how="left"), ["AP"], qrels=qrels, by=["system", "kind"]
    ).collect()
    assert per_query.group_by("kind").len().sort("kind").rows() == [("long", 33), ("short", 27)]


# --- curves as tables -----------------------------------------------------------------------


def test_a_curve_rate_is_null_on_every_point_where_it_is_undefined() -> None:
    # curve's contract: "Recall and TPR are null when a ranking has no positive, FPR when it
    # has no negative"; the ROC curve's (0, 0) point (and LingPipe's limit points) said 0.0
    # there, so a column held 0.0 then nulls for one ranking
    data = pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q2", "q3", "q3"],
            "doc": list("abcdef"),
            "score": [2.0, 1.0, 2.0, 1.0, 2.0, 1.0],
            "label": [1, 0, 0, 0, 1, 1],
        }
    )  # q1 both classes, q2 negatives only, q3 positives only
    roc = preval.curve(data, "roc").collect()
    assert roc.filter(query="q1")["fpr"].to_list() == [0.0, 0.0, 1.0]
    assert roc.filter(query="q1")["tpr"].to_list() == [0.0, 1.0, 1.0]
    assert roc.filter(query="q2")["tpr"].to_list() == [None, None, None]
    assert roc.filter(query="q2")["fpr"].to_list() == [0.0, 0.5, 1.0]
    assert roc.filter(query="q3")["fpr"].to_list() == [None, None, None]
    lingpipe = preval.curve(data, "pr", convention="lingpipe").collect()
    assert lingpipe.filter(query="q2")["recall"].null_count() == lingpipe.filter(query="q2").height
    assert lingpipe.filter(query="q1")["recall"].to_list() == [0.0, 1.0, 1.0, 1.0]


def test_power_and_risk_name_the_per_query_file_that_lacks_a_column(tmp_path: Path) -> None:
    # compare named the file; power and risk said "per-query table:" without it
    from preval.power import analysis
    from preval.risk_adjusted import risk

    path = tmp_path / "pq.parquet"
    preval.evaluate(SMALL, ["AP"], by="system").collect().rename({"system": "run"}).write_parquet(
        path
    )
    for fn in (preval.compare, analysis, lambda p: risk(p, baseline="bm25")):
        with pytest.raises(InputError, match=f"per-query table {path}: missing column 'system'"):
            fn(str(path))


def test_the_command_names_a_group_without_an_evaluated_query(tmp_path: Path, capsys) -> None:
    # system zzz answered only unjudged queries: it has no per-query row and no summary row,
    # and stderr's totals did not say that one system vanished from the table
    from preval.cli import main

    extra = SMALL.filter(pl.col("system") == "bm25").with_columns(
        system=pl.lit("zzz"), label=pl.lit(None, pl.Int64)
    )
    path = tmp_path / "t.parquet"
    pl.concat([SMALL, extra]).write_parquet(path)
    assert main(["evaluate", str(path), "--by", "system", "-m", "AP", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    shown = [line.split(",")[0] for line in out.splitlines()]
    assert shown == ["system", "bm25", "dense", "hybrid"]
    assert "warning: no query evaluated for system zzz (no judged query): no summary row" in err
    # systems numbered: the key is an integer column, still named
    numbered = pl.concat([SMALL, extra]).with_columns(
        pl.col("system").replace_strict({"bm25": 1, "dense": 2, "hybrid": 3, "zzz": 4})
    )
    numbered.write_parquet(path)
    assert main(["evaluate", str(path), "--by", "system", "-m", "AP", "-q"]) == 0
    assert main(["evaluate", str(path), "--by", "system", "-m", "AP"]) == 0
    _, err = capsys.readouterr()
    assert err.count("warning: no query evaluated") == 1 and "for system 4 " in err


def test_risk_pairs_on_the_queries_compare_pairs_on() -> None:
    # the baseline's AUC-ROC is undefined on q1: compare leaves q1 out, risk scored it 0 for
    # the baseline (a "win" of 0.5 for b); power already left it out
    from preval.power import analysis
    from preval.risk_adjusted import risk, risk_summary

    table = pl.DataFrame({
        "system": ["a", "a", "a", "b", "b", "b"], "query": ["q1", "q2", "q3"] * 2,
        "AUC-ROC": [None, 1.0, 0.5, 0.5, 0.0, 0.25],
    })  # fmt: skip
    rows = risk(table, baseline="a").collect()
    assert rows["query"].to_list() == ["q2", "q3"] and not rows["filled"].any()
    assert rows["delta"].to_list() == [-1.0, -0.25]
    compared = preval.compare(table, baseline="a", correction="none")
    assert compared["queries"].item() == 2 and compared["delta"].item() == -0.625
    assert analysis(table, baseline="a").collect()["queries"].item() == 2
    assert risk_summary(table, baseline="a").collect()["queries"].item() == 2


def test_a_key_given_twice_counts_once() -> None:
    # as a measure asked twice: was Polars' DuplicateError (with the plan) at collect time
    want = preval.evaluate(SMALL, ["AP"], by="system")
    twice = preval.evaluate(SMALL, ["AP", "map"], by=["system", "system"])
    assert twice.collect().equals(want.collect())
    summary = preval.summarize(want, by=["system", "system"]).collect()
    assert summary.equals(preval.summarize(want).collect())


# --- an evaluated table given where rankings are read -----------------------------------------


def test_a_per_query_table_given_as_rankings_is_named_as_such(tmp_path: Path, capsys) -> None:
    # `preval compare per_query.parquet` (without --per-query-table) said only "missing score
    # column 'score', label column 'label'"
    from preval.cli import main

    wide, long = tmp_path / "pq.parquet", tmp_path / "long.parquet"
    preval.evaluate(SMALL, ["AP", "P@10"], by="system").collect().write_parquet(wide)
    preval.evaluate(SMALL, ["AP"], by="system", form="long").collect().write_parquet(long)
    for argv in (["compare", str(wide), "-m", "AP"], ["evaluate", str(wide)],
                 ["power", str(wide), "-m", "AP"]):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "missing score column 'score'" in err
        assert "looks like a per-query table (measure columns AP, P@10)" in err
        assert "--per-query-table" in err
    assert main(["compare", str(long), "-m", "AP"]) == 2
    assert "looks like a per-query table in the long form" in capsys.readouterr().err
    summary = tmp_path / "summary.parquet"
    preval.summarize(wide).collect().write_parquet(summary)
    assert main(["compare", str(summary), "-m", "AP"]) == 2
    assert "looks like a summary (measure columns NumQ, AP, P@10)" in capsys.readouterr().err
    # a ranking table that merely lacks its score says nothing of the kind
    SMALL.drop("score").write_parquet(wide)
    assert main(["evaluate", str(wide)]) == 2
    assert "looks like" not in capsys.readouterr().err


def test_query_dtype_with_qrels_of_another_dtype(tmp_path: Path) -> None:
    # the documented rule (docs/semantics.md, key columns): Int64 for two integer dtypes,
    # String (sorted as strings) against a TREC qrels file, whose ids are strings
    run = pl.DataFrame(
        {"query": [1, 1, 2, 10], "doc": ["a", "b", "c", "x"], "score": [2.0, 1.0, 1.0, 1.0]},
        schema_overrides={"query": pl.Int32},
    )
    judged = pl.DataFrame({"query": [1, 2, 10], "doc": ["a", "c", "x"], "label": [1, 1, 1]})
    got = preval.evaluate(run, ["AP"], qrels=judged).collect()
    assert got.schema["query"] == pl.Int64 and got["query"].to_list() == [1, 2, 10]
    path = tmp_path / "qrels.txt"
    path.write_text("1 0 a 1\n2 0 c 1\n10 0 x 1\n")
    got = preval.evaluate(run, ["AP"], qrels=str(path)).collect()
    assert got.schema["query"] == pl.String and got["query"].to_list() == ["1", "10", "2"]
    back = got.with_columns(pl.col("query").cast(pl.Int32)).join(run, on="query")
    assert back.height == run.height


# --- the summary is SQL over the per-query table the same command writes --------------------

SQL_MEASURES = ["AP", "GMAP", "P@10", "nDCG@10", "RR", "AUC-ROC", "AUC-PR", "Bpref", "GMBpref",
                "Specificity", "Hits@10", "NumRet", "NumRel", "NumRelRet", "NumQ"]  # fmt: skip


def test_the_summary_is_a_group_by_of_the_per_query_file(tmp_path: Path) -> None:
    # every written file read back; each summary column is the SQL aggregate its catalogue
    # `summary` kind names (mean: AVG, which skips nulls; sum: SUM; gmean: the floored
    # geometric mean), with NumQ the group's row count (docs/semantics.md, summaries)
    duckdb = pytest.importorskip("duckdb")
    from preval.cli import main

    pq, summary = tmp_path / "pq.parquet", tmp_path / "summary.parquet"
    argv = ["evaluate", str(ROOT / "fixtures" / "example.parquet"), "--by", "system", "-q",
            "--per-query", str(pq), "--summary", str(summary),
            *(f"-m{m}" for m in SQL_MEASURES)]  # fmt: skip
    assert main(argv) == 0
    got = pl.read_parquet(summary)
    per_query = pl.read_parquet(pq)
    assert per_query.select("system", "query").is_duplicated().sum() == 0
    assert per_query.schema == preval.evaluate(JOINED, SQL_MEASURES, by="system").collect_schema()
    terms = []
    for name in SQL_MEASURES:
        kind, col = preval.parse(name).summary, f'"{name}"'
        if name == "NumQ":
            terms.append('COUNT(*) AS "NumQ"')
        elif kind == "sum":
            terms.append(f"SUM({col}) AS {col}")
        elif kind == "gmean":
            terms.append(f"EXP(AVG(LN(GREATEST({col}, 1e-5)))) AS {col}")
        else:
            terms.append(f"AVG({col}) AS {col}")
    sql = f"SELECT system, {', '.join(terms)} FROM '{pq}' GROUP BY system ORDER BY system"
    want = duckdb.sql(sql).pl()
    assert got.columns == ["system", "NumQ", *[m for m in SQL_MEASURES if m != "NumQ"]]
    for name in want.columns[1:]:
        if preval.parse(name).summary == "sum" or name == "NumQ":
            assert got[name].to_list() == want[name].to_list(), name
        else:
            assert got[name].to_list() == pytest.approx(want[name].to_list(), rel=1e-12), name
    # the undefined values the means left out: AUC-ROC and Specificity are null somewhere
    assert per_query["AUC-ROC"].null_count() > 0 and per_query["Specificity"].null_count() > 0


def test_a_per_query_csv_keeps_its_query_ids_as_written(tmp_path: Path) -> None:
    # ids "007" and "7" are two queries; read back from a CSV they were inferred as integers,
    # both 7: compare paired one query (the first row of each system), risk printed 7
    from preval.power import analysis
    from preval.risk_adjusted import risk

    table = pl.DataFrame({"system": ["a", "a", "b", "b"], "query": ["007", "7", "007", "7"],
                          "AP": [0.5, 0.25, 0.75, 0.5]})  # fmt: skip
    path = tmp_path / "pq.csv"
    table.write_csv(path)
    got = preval.compare(str(path), baseline="a", correction="none")
    assert got["queries"].item() == 2 and got["delta"].item() == 0.25
    assert analysis(str(path), baseline="a").collect()["queries"].item() == 2
    assert risk(str(path), baseline="a").collect()["query"].to_list() == ["007", "7"]
    # the summary's bootstrap resamples two queries, as from the frame itself
    kw = {"ci": 0.9, "ci_method": "percentile", "resamples": 200}
    from_file = preval.summarize(str(path), **kw).collect()
    assert from_file.equals(preval.summarize(table, **kw).collect())


def test_compare_says_when_a_per_query_table_repeats_its_pairs(tmp_path: Path, capsys) -> None:
    # evaluate --bounds writes three rows per (system, query), one per bound: compare read
    # the first of each (lower) without a word; the documented rule stands (the first row of a
    # repeated pair counts) and stderr now says it, naming the column that tells them apart
    from preval.cli import main

    path = tmp_path / "bounds.parquet"
    run = pl.read_csv(ROOT / "fixtures" / "example_run.csv").filter(pl.col("query") <= "q020")
    qrels = pl.read_csv(ROOT / "fixtures" / "example_qrels.csv").filter(pl.col("query") <= "q020")
    preval.bounds(run, ["AP"], qrels=qrels, by="system").collect().write_parquet(path)
    assert main(["compare", "--per-query-table", str(path), "-m", "AP", "--baseline", "bm25"]) == 0
    err = capsys.readouterr().err
    assert "warning: 120 rows repeat a (system, query) pair of the per-query table" in err
    assert "(other columns: bound)" in err
    # one row per pair: nothing said
    pl.read_parquet(path).filter(bound="upper").write_parquet(path)
    assert main(["compare", "--per-query-table", str(path), "-m", "AP"]) == 0
    assert "repeat" not in capsys.readouterr().err


# --- a property: per-query rows are keys of the input; the summary is their group-by -------

_ROW = st.tuples(
    st.sampled_from(["a", "b", "c"]),  # system
    st.sampled_from(["q1", "q2", "q3", "q4"]),  # query
    st.sampled_from(["d1", "d2", "d3", "d4", "d5"]),  # doc
    st.one_of(st.none(), st.sampled_from([0.5, 1.0, 2.0])),  # score (null: not retrieved)
    st.one_of(st.none(), st.integers(0, 2)),  # label (null: unjudged)
)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(_ROW, max_size=40, unique_by=lambda r: r[:3]))
def test_per_query_rows_join_back_and_the_summary_is_their_group_by(rows) -> None:
    schema = {"system": pl.String, "query": pl.String, "doc": pl.String, "score": pl.Float64,
              "label": pl.Int64}  # fmt: skip
    data = pl.DataFrame(rows, schema=schema, orient="row")
    measures = ["AP", "GMAP", "nDCG@3", "AUC-ROC", "NumRet", "NumRel"]
    per_query = preval.evaluate(data, measures, by="system").collect()
    keys = ["system", "query"]
    # one row per key, each a (system, query) of the input with a judgment, in key order
    assert per_query.select(keys).is_duplicated().sum() == 0
    judged = data.filter(pl.col("label").is_not_null()).select(keys).unique()
    assert per_query.select(keys).sort(keys).equals(judged.sort(keys))
    assert per_query.select(keys).equals(per_query.select(keys).sort(keys))
    assert per_query.schema == preval.evaluate(data.clear(), measures, by="system").collect_schema()
    # the summary: AVG skipping nulls, SUM, the floored geometric mean; NumQ counts rows
    summary = preval.summarize(per_query).collect()
    want = (
        per_query.group_by("system")
        .agg(
            pl.len().cast(pl.Int64).alias("NumQ"),
            pl.col("AP").mean(),
            pl.col("GMAP").clip(lower_bound=1e-5).log().mean().exp(),
            pl.col("nDCG@3").mean(),
            pl.col("AUC-ROC").mean(),
            pl.col("NumRet").sum(),
            pl.col("NumRel").sum(),
        )
        .sort("system")
    )
    assert summary.columns == want.columns
    for name in want.columns[1:]:
        got, expected = summary[name].to_list(), want[name].to_list()
        assert [g is None for g in got] == [e is None for e in expected], name
        pairs = [(g, e) for g, e in zip(got, expected, strict=True) if e is not None]
        assert [g for g, _ in pairs] == pytest.approx([e for _, e in pairs], rel=1e-12), name


def test_compare_means_are_the_summary_means_to_the_last_digit() -> None:
    # every system has every query: compare's mean and baseline_mean are the summary's, bit
    # for bit (numpy's pairwise mean differed in the last digits: 0.29416281377293285 for
    # bm25's AP where the summary says 0.29416281377293296), so the two tables join on
    # (system, measure) with equal numbers
    per_query = preval.evaluate(JOINED, ["AP", "nDCG@10", "P@10", "RR"], by="system").collect()
    summary = preval.summarize(per_query).collect()
    got = preval.compare(per_query)
    for row in got.iter_rows(named=True):
        mean = summary.filter(system=row["system"])[row["measure"]].item()
        base = summary.filter(system=row["baseline"])[row["measure"]].item()
        assert (row["mean"], row["baseline_mean"]) == (mean, base), row


def test_compare_delta_is_the_difference_of_the_summary_means() -> None:
    # delta was the mean of the per-query differences, which rounds otherwise: in a CSV row,
    # delta 0.1878183317672108 beside mean 0.48198114554014365 and baseline_mean
    # 0.29416281377293296, whose difference is 0.1878183317672107 (12 of 12 rows differed)
    per_query = preval.evaluate(JOINED, ["AP", "nDCG@10", "P@10", "RR"], by="system").collect()
    summary = preval.summarize(per_query).collect()
    for test in ("t", "bootstrap"):
        got = preval.compare(per_query, test=test, n_resamples=200)
        for row in got.iter_rows(named=True):
            mean = summary.filter(system=row["system"])[row["measure"]].item()
            base = summary.filter(system=row["baseline"])[row["measure"]].item()
            assert row["delta"] == mean - base == row["mean"] - row["baseline_mean"], row
            if test == "t":  # the interval is centred on it
                assert (row["ci_low"] + row["ci_high"]) / 2 == pytest.approx(row["delta"])


def test_compare_is_the_same_table_for_any_row_order() -> None:
    # the queries were taken in the order of their first row: a shuffled per-query table gave
    # the same numbers only up to the order of summation (and other resampled query sets)
    per_query = preval.evaluate(SMALL, ["AP", "P@10"], by="system").collect()
    shuffled = per_query.sample(fraction=1.0, shuffle=True, seed=3)
    for test in ("t", "randomization", "bootstrap"):
        kw = {"test": test, "n_resamples": 500}
        assert preval.compare(shuffled, **kw).equals(preval.compare(per_query, **kw)), test


def test_numbered_systems_take_a_baseline_by_its_number(tmp_path: Path, capsys) -> None:
    # an integer system column: --baseline 1 (a string on the command line) was "baseline '1'
    # is not a system of column 'system' (systems: [1, 2, 3])"
    from preval.cli import main

    numbered = SMALL.with_columns(
        pl.col("system").replace_strict({"bm25": 1, "dense": 2, "hybrid": 3}, return_dtype=pl.Int8)
    )
    path = tmp_path / "numbered.parquet"
    numbered.write_parquet(path)
    per_query = preval.evaluate(numbered, ["AP"], by="system")
    want = preval.compare(per_query, baseline=1)
    assert want["baseline"].to_list() == ["1", "1"]
    assert preval.compare(per_query, baseline="1").equals(want)
    assert main(["compare", str(path), "-m", "AP", "--baseline", "1", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("2,1,AP,")
    assert main(["evaluate", str(path), "--by", "system", "-m", "AP", "--compare", "1", "-q"]) == 0
    assert main(["power", str(path), "-m", "AP", "--baseline", "1", "--format", "csv"]) == 0
    assert capsys.readouterr().out.count("\n2,1,AP,") == 1
    pytest.importorskip("matplotlib")
    plot = tmp_path / "c.png"
    assert main(["compare", str(path), "-m", "AP", "--baseline", "1", "--plot", str(plot)]) == 0
    assert plot.stat().st_size > 0


def test_trec_evals_rprec_mult_names_are_aliases() -> None:
    # trec_eval prints Rprec_mult_0.20 ... Rprec_mult_2.00; iprec_at_recall_0.10 parsed, this
    # family did not ("cannot parse measure")
    assert preval.parse("Rprec_mult_0.20").name == "Rprec(mult=0.2)"
    assert preval.parse("Rprec_mult_1.00").name == "Rprec"
    assert preval.parse("Rprec_mult.2").name == "Rprec(mult=2)"


def test_the_undefined_count_of_bounds_counts_rows(tmp_path: Path, capsys) -> None:
    # --bounds stacks three evaluations: the count of undefined values is of (query, bound)
    # rows, and said so (it read "36 queries" of a 20-query table)
    from preval.cli import main

    path = tmp_path / "t.csv"
    path.write_text("query,doc,score,label\nq1,a,1.0,1\nq1,b,0.5,0\nq2,c,1.0,1\n")
    assert main(["evaluate", str(path), "-m", "AUC-ROC", "--bounds"]) == 0
    err = capsys.readouterr().err
    assert "AUC-ROC is undefined (null) for 3 (query, bound) rows with a single class" in err


def test_the_command_says_when_a_system_of_a_joined_table_lacks_queries(
    tmp_path: Path, capsys
) -> None:
    # the query-set line said "as trec_eval -c: every judged query counts" over "291 to 300"
    # queries, and dense's mean was over its own 291 without a word (compare scored the
    # other 9 zero, so the two commands printed two means for dense)
    from preval.cli import main

    path = tmp_path / "gap.parquet"
    JOINED.filter(~((pl.col("system") == "dense") & (pl.col("query") < "q010"))).write_parquet(path)
    assert main(["evaluate", str(path), "--by", "system", "-m", "AP"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: system dense has no row for 9 of the 300 queries evaluated for some system" in err
    )
    assert err.count("has no row for") == 1
    # every system with every query, or a key that splits the queries: nothing said
    JOINED.write_parquet(path)
    assert main(["evaluate", str(path), "--by", "system", "-m", "AP"]) == 0
    assert "has no row for" not in capsys.readouterr().err
    kind = pl.when(pl.col("query") < "q100").then(pl.lit("a")).otherwise(pl.lit("b"))
    JOINED.filter(system="bm25").with_columns(kind=kind).write_parquet(path)
    assert main(["evaluate", str(path), "--by", "kind", "-m", "AP"]) == 0
    assert "has no row for" not in capsys.readouterr().err
