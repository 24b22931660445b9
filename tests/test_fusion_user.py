"""Fusion as a user combining runs meets it (QA of `preval.fuse` / `preval fuse`): parameters and
weights refused in one line when they can only give nonsense, and conventions that differ from
ranx 0.3.21 or trec_eval said where the user looks. Golden values are worked by hand in the
comments."""

from __future__ import annotations

import math

import polars as pl
import pytest

import preval
from preval.cli import main
from preval.errors import DuplicateError, InputError

A = pl.DataFrame({"query": ["q1"] * 3, "doc": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]})
B = pl.DataFrame({"query": ["q1"] * 2, "doc": ["d3", "d1"], "score": [5.0, 4.0]})


def _cli_inputs(tmp_path):
    """Runs A and B as Parquet files and a one-line qrels file, for the command line."""
    a, b, qrels = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "qrels"
    A.write_parquet(a)
    B.write_parquet(b)
    qrels.write_text("q1 0 d1 1\n")
    return a, b, qrels


# --- weights -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weight_is_refused_when_the_plan_is_built(bad):
    # a NaN weight gave NaN fused scores, which sort first: a wrong run, silently
    with pytest.raises(InputError, match="weights must be finite numbers"):
        preval.fuse([A, B], "wsum", weights=[bad, 1.0])


@pytest.mark.parametrize("bad", [0.5, "0.5,0.5", ["x", 1.0], [None, 1.0]])
def test_weights_that_are_not_numbers_are_one_input_error(bad):
    with pytest.raises(InputError, match="weights"):
        preval.fuse([A, B], "wsum", weights=bad)


def test_zero_and_negative_weights_are_kept_as_ranx_keeps_them():
    # wsum after min-max: A -> d1 1, d2 0.5, d3 0; B -> d3 1, d1 0.
    # weights (1, -1): d1 1 - 0 = 1, d2 0.5, d3 0 - 1 = -1
    got = preval.fuse([A, B], "wsum", weights=[1, -1]).collect()
    assert got["doc"].to_list() == ["d1", "d2", "d3"]
    assert got["score"].to_list() == [1.0, 0.5, -1.0]


def test_cli_refuses_a_nan_weight_in_one_line(tmp_path, capsys):
    a, b, _ = _cli_inputs(tmp_path)
    code = main(["fuse", str(a), str(b), "--method", "wsum", "--weights", "nan,1",
                 "-o", str(tmp_path / "f.run")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "weights must be finite numbers" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "f.run").exists()


# --- method parameters -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "param", "value"),
    [
        ("rrf", "k", -1),  # 1 / (k + 1) at the top: a division by zero, inf scores
        ("rrf", "k", -0.5),
        ("rrf", "k", float("inf")),  # every score 0
        ("rrf", "k", float("nan")),
        ("rrf", "k", "60"),  # a string: a Polars traceback before
        ("rrf", "k", True),
        ("rbc", "phi", 2.0),  # (1 - φ) φ^i: negative, growing scores
        ("rbc", "phi", -0.1),
        ("logn_isr", "sigma", -1.0),  # ln(|R| + σ) = ln 0 for a document of one run
        ("comb_gmnz", "gamma", float("nan")),
        ("probfuse", "n_segments", 0),
        ("probfuse", "n_segments", 2.5),
        ("slidefuse", "w", -1),
    ],
)
def test_parameter_outside_its_domain_is_refused(method, param, value):
    with pytest.raises(InputError, match=f"{method}.*{param}"):
        preval.fuse([A, B], method, **{param: value}, learned=pl.DataFrame())


@pytest.mark.parametrize(
    ("method", "param", "value"),
    [("rrf", "k", 0), ("rrf", "k", 0.5), ("rbc", "phi", 1.0), ("rbc", "phi", 0.01),
     ("logn_isr", "sigma", 0.0), ("comb_gmnz", "gamma", -2.0)],
)  # fmt: skip
def test_parameter_at_its_domain_edge_is_accepted(method, param, value):
    got = preval.fuse([A, B], method, **{param: value}).collect()
    assert got.height == 3
    assert all(math.isfinite(s) for s in got["score"])


def test_rrf_k_zero_is_the_plain_reciprocal_rank():
    # k = 0: d1 at ranks 1 and 2 -> 1 + 1/2; d3 at 3 and 1 -> 1/3 + 1; d2 at 2 -> 1/2
    got = preval.fuse([A, B], "rrf", k=0).collect()
    assert dict(zip(got["doc"], got["score"], strict=True)) == pytest.approx(
        {"d1": 1.5, "d3": 4 / 3, "d2": 0.5}
    )


def test_cli_refuses_a_negative_k_in_one_line(tmp_path, capsys):
    a, b, _ = _cli_inputs(tmp_path)
    code = main(["fuse", str(a), str(b), "--param", "k=-1", "-o", str(tmp_path / "f.run")])
    err = capsys.readouterr().err
    assert code == 2
    assert "k" in err and len(err.strip().splitlines()) == 1


def test_a_search_value_outside_the_domain_is_refused_before_any_work():
    # --search k=-1,5 searched k = -1 (inf fused scores) and reported a winner
    from preval.fusion import tuning
    from preval.fusion.core import get_method

    with pytest.raises(InputError, match="rrf: k must be"):
        tuning.candidates(get_method("rrf"), 2, {"k": [-1, 5]})
    with pytest.raises(InputError, match="weights must be finite"):
        tuning.candidates(get_method("wsum"), 2, {"weights": [[float("nan"), 1.0]]})
    # ranx's own searches stay valid (phi up to 1.0, k from 10)
    for name in ("rbc", "rrf", "logn_isr", "comb_gmnz", "wsum"):
        assert tuning.candidates(get_method(name), 3, None)


# --- the fused run's ties, as evaluators read them ------------------------------------------


def test_fused_ties_are_evaluated_by_doc_id_unless_ties_input():
    # RRF, k = 60: A ranks d1, d2, d3; B ranks d3, d1. d1: 1/61 + 1/62, d3: 1/63 + 1/61.
    # Make them tie: C ranks d3 first, d1 second, D ranks d1 first, d3 second.
    c = pl.DataFrame({"query": ["q1"] * 2, "doc": ["d1", "d3"], "score": [2.0, 1.0]})
    d = pl.DataFrame({"query": ["q1"] * 2, "doc": ["d3", "d1"], "score": [2.0, 1.0]})
    fused = preval.fuse([c, d], "rrf").collect()
    # both 1/61 + 1/62: the fused order puts d1 first (met first: run 0's top document)
    assert fused["doc"].to_list() == ["d1", "d3"]
    assert fused["score"][0] == fused["score"][1]
    qrels = pl.DataFrame({"query": ["q1"], "doc": ["d1"], "label": [1]})
    # trec_eval's order (the default): equal scores by doc id descending, d3 before d1: RR 1/2
    trec = preval.evaluate(fused, ["RR"], qrels=qrels).collect()
    assert trec["RR"].to_list() == [0.5]
    # the fused order, as the rank column says: RR 1
    kept = preval.evaluate(fused, ["RR"], qrels=qrels, ties="input").collect()
    assert kept["RR"].to_list() == [1.0]


def test_tuned_score_is_what_preval_trec_prints_for_the_written_run(tmp_path, capsys):
    # tied fused scores (C and D swap d1 and d3) and a judged query no run answers (q9)
    c = pl.DataFrame({"query": ["q1", "q1", "q1", "q2"], "doc": ["d1", "d3", "d2", "d7"],
                      "score": [3.0, 2.0, 1.0, 1.0]})  # fmt: skip
    d = pl.DataFrame({"query": ["q1", "q1", "q2", "q2"], "doc": ["d3", "d1", "d8", "d7"],
                      "score": [2.0, 1.0, 5.0, 4.0]})  # fmt: skip
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 1\nq2 0 d7 2\nq9 0 d1 1\n")
    a, b = tmp_path / "c.parquet", tmp_path / "d.parquet"
    c.write_parquet(a)
    d.write_parquet(b)
    out = tmp_path / "fused.run"
    code = main(["fuse", str(a), str(b), "--method", "rrf", "--optimize", "nDCG@10",
                 "--qrels", str(qrels), "--search", "k=0,60", "-o", str(out)])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    reported = float(printed.split("best nDCG@10 ")[1].split()[0])
    tuning = preval.optimize_fusion([c, d], str(qrels), method="rrf", search={"k": [0, 60]})
    assert main(["trec", "-c", "-m", "ndcg_cut.10", str(qrels), str(out)]) == 0
    line = capsys.readouterr().out.split()
    assert line[0] == "ndcg_cut_10"
    assert float(line[2]) == pytest.approx(reported, abs=5e-5)
    assert float(line[2]) == pytest.approx(tuning.candidates["score"].max(), abs=5e-5)


# --- a run's tied scores: input order (ranx) or doc id (trec_eval), row order independent -------


def _tied_runs() -> list[pl.DataFrame]:
    a = pl.DataFrame({"query": ["q1"] * 4 + ["q2"] * 2, "doc": ["d1", "d2", "d3", "d4", "d1", "d5"],
                      "score": [3.0, 2.0, 2.0, 1.0, 5.0, 5.0]})  # fmt: skip
    b = pl.DataFrame({"query": ["q1"] * 3, "doc": ["d3", "d5", "d1"], "score": [8.0, 8.0, 8.0]})
    return [a, b]


def test_ties_trec_orders_a_runs_equal_scores_by_doc_id_descending():
    # run a, q1: d1 (3), then d2 and d3 tie at 2: trec_eval's order d3, d2; then d4.
    # run b, q1: all tie: d5, d3, d1. RRF k = 60 (i the 0-based position):
    #   d3: 1/62 (a, i=1) + 1/62 (b, i=1); d1: 1/61 + 1/63; d5: 1/61; d2: 1/63; d4: 1/64
    got = preval.fuse(_tied_runs(), "rrf", ties="trec").collect()
    q1 = got.filter(pl.col("query") == "q1")
    expected = {"d3": 2 / 62, "d1": 1 / 61 + 1 / 63, "d5": 1 / 61, "d2": 1 / 63, "d4": 1 / 64}
    assert dict(zip(q1["doc"], q1["score"], strict=True)) == pytest.approx(expected, rel=1e-15)
    # 1/61 + 1/63 = 0.0322665 > 2/62 = 0.0322581
    assert q1["doc"].to_list() == ["d1", "d3", "d5", "d2", "d4"]
    # q2: d5 and d1 tie in a: d5 first
    assert got.filter(pl.col("query") == "q2")["doc"].to_list() == ["d5", "d1"]


@pytest.mark.parametrize("method", ["rrf", "comb_mnz", "bordafuse", "condorcet", "rbc"])
def test_ties_trec_output_is_the_same_for_any_row_order(method):
    runs = _tied_runs()
    base = preval.fuse(runs, method, ties="trec").collect()
    for seed in range(3):
        shuffled = [r.sample(fraction=1.0, shuffle=True, seed=seed) for r in runs]
        assert preval.fuse(shuffled, method, ties="trec").collect().equals(base)
    # the default is ranx's: input order (a reversed run ties the other way)
    reversed_ = [r.reverse() for r in runs]
    assert not preval.fuse(reversed_, method).collect().equals(preval.fuse(runs, method).collect())


def test_ties_cli_and_api_write_the_same_bytes_in_memory_and_out_of_core(tmp_path):
    paths = []
    for i, r in enumerate(_tied_runs()):
        p = tmp_path / f"r{i}.run"
        lines = [f"{q} Q0 {d} 0 {s} t{i}" for q, d, s in r.reverse().iter_rows()]
        p.write_text("\n".join(lines) + "\n")
        paths.append(str(p))
    cli, api, spilled = tmp_path / "cli.run", tmp_path / "api.run", tmp_path / "spilled.run"
    assert main(["fuse", *paths, "--ties", "trec", "-o", str(cli)]) == 0
    from preval.fusion import writers

    writers.write(preval.fuse([_tied_runs()[0], _tied_runs()[1]], ties="trec"), api, tag="rrf")
    writers.fuse_to(paths, spilled, ties="trec", buckets=2)
    assert cli.read_bytes() == api.read_bytes() == spilled.read_bytes()


def test_ties_unknown_value_is_refused():
    with pytest.raises(InputError, match="ties must be one of"):
        preval.fuse(_tied_runs(), ties="doc")


# --- writing a TREC run ------------------------------------------------------------------------


@pytest.mark.parametrize(("column", "bad"), [("query", "q 1"), ("doc", "d\t1"), ("doc", "")])
def test_an_id_a_trec_line_cannot_hold_is_refused_not_written(tmp_path, column, bad):
    # "q 1 Q0 d1 1 0.03 fused" reads back as query "q", doc "1": another run, silently
    run = A.with_columns(pl.when(pl.col("doc") == "d1").then(pl.lit(bad)).otherwise(pl.col(column))
                         .alias(column))  # fmt: skip
    from preval.fusion import writers

    out = tmp_path / "fused.run"
    with pytest.raises(InputError, match=f"cannot write a TREC run: {column} id"):
        writers.write(preval.fuse([run, B]), out)
    assert not out.exists()
    writers.write(preval.fuse([run, B]), tmp_path / "fused.parquet")  # a table holds any id
    assert pl.read_parquet(tmp_path / "fused.parquet")[column].to_list().count(bad) == 1


# --- one table of several systems --------------------------------------------------------------


def test_a_table_of_several_systems_gets_a_duplicate_error_that_says_so():
    # a long table (system, query, doc, score), as preval.evaluate reads it with by=system: the
    # same document in two systems is a duplicate of one run; the message says what to do
    long = pl.concat([A.with_columns(system=pl.lit("a")), B.with_columns(system=pl.lit("b"))])
    with pytest.raises(DuplicateError, match=r"'system' column.*one run per system"):
        preval.fuse(long).collect()
    # as the message says: one run per system
    runs = {s: long.filter(pl.col("system") == s) for s in ("a", "b")}
    assert preval.fuse(runs).collect().equals(preval.fuse([A, B]).collect())


# --- flags that would change nothing ------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "says"),
    [(["--qrels", "QRELS"], "--optimize"), (["--folds", "3"], "--optimize"),
     (["--search", "k=10,20"], "--optimize"), (["--train-runs", "A"], "--train-qrels")],
)  # fmt: skip
def test_a_tuning_flag_without_optimize_is_refused_not_ignored(tmp_path, capsys, extra, says):
    # `preval fuse a b --qrels q -o f.run` fused with k = 60 and said nothing of the qrels
    a, b, qrels = _cli_inputs(tmp_path)
    extra = [{"QRELS": str(qrels), "A": str(a)}.get(x, x) for x in extra]
    out = tmp_path / "f.run"
    code = main(["fuse", str(a), str(b), *extra, "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert says in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


# --- cross-validation folds --------------------------------------------------------------------


def test_folds_depend_on_the_seed_only_not_on_row_orders():
    queries = [f"q{i}" for i in range(12)]
    rows = [(q, f"d{j}", float(10 - j)) for q in queries for j in range(4)]
    run_a = pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row")
    run_b = run_a.with_columns(pl.col("score").neg())
    qrels = pl.DataFrame({"query": queries, "doc": ["d1"] * 12, "label": [1] * 12})

    def folds(seed, shuffle):
        runs = [r.sample(fraction=1.0, shuffle=True, seed=shuffle) for r in (run_a, run_b)]
        judged = qrels.sample(fraction=1.0, shuffle=True, seed=shuffle)
        tuning = preval.optimize_fusion(runs, judged, method="rrf", search={"k": [1, 60]},
                                        folds=3, seed=seed)  # fmt: skip
        return tuning.per_query.sort("query").select("query", "fold")

    base = folds(7, 0)
    assert base["fold"].value_counts()["count"].to_list() == [4, 4, 4]
    assert folds(7, 1).equals(base) and folds(7, 2).equals(base)
    assert not folds(8, 0).equals(base)


def test_written_trec_tag_is_the_system_column_when_no_tag_is_given(tmp_path):
    # preval.fuse's docstring: system= adds a column "holding this name (a TREC run's tag when
    # written)"; the writer wrote "fused" instead
    from preval.fusion import writers

    writers.write(preval.fuse([A, B], system="mine"), tmp_path / "f.run")
    tags = {line.split()[5] for line in (tmp_path / "f.run").read_text().splitlines()}
    assert tags == {"mine"}
    writers.write(preval.fuse([A, B], system="mine"), tmp_path / "g.run", tag="given")
    assert {line.split()[5] for line in (tmp_path / "g.run").read_text().splitlines()} == {"given"}
    writers.write(preval.fuse([A, B]), tmp_path / "h.run")  # no system column: "fused"
    assert {line.split()[5] for line in (tmp_path / "h.run").read_text().splitlines()} == {"fused"}
    with pytest.raises(InputError, match="tag"):
        writers.write(preval.fuse([A, B], system="my run"), tmp_path / "i.run")


# --- runs named alike ----------------------------------------------------------------------------


def test_trec_runs_with_one_tag_keep_apart_in_the_comparison(tmp_path):
    # two TREC files tagged "bm25" were both named "bm25": the per-query table merged them and
    # the comparison printed run a's mean for run b. Named by their paths, as evaluate does.
    a, b, qrels = tmp_path / "a.run", tmp_path / "b.run", tmp_path / "qrels"
    # a ranks d1 (relevant) first: AP 1; b ranks it second: AP 1/2
    a.write_text("q1 Q0 d1 1 2 bm25\nq1 Q0 d2 2 1 bm25\n")
    b.write_text("q1 Q0 d2 1 2 bm25\nq1 Q0 d1 2 1 bm25\n")
    qrels.write_text("q1 0 d1 1\n")
    from preval.fusion import core

    stacked = core.stack([a, b])
    assert stacked.names == (str(a), str(b))
    tuning = preval.optimize_fusion([a, b], qrels, method="rrf", metric="AP", search={"k": [60]})
    table = tuning.compare().sort("baseline")
    assert table["baseline"].to_list() == [str(a), str(b)]
    assert table["baseline_mean"].to_list() == [1.0, 0.5]
    # the same file twice: still two names
    assert len(set(core.stack([a, a]).names)) == 2


def test_numpy_scalars_are_parameters_as_python_numbers():
    # k=np.int64(10) failed in Polars ("UDF called without return type") with a plan dump
    np = pytest.importorskip("numpy")
    want = preval.fuse([A, B], "rrf", k=10).collect()
    assert preval.fuse([A, B], "rrf", k=np.int64(10)).collect().equals(want)
    assert preval.fuse([A, B], "rrf", k=np.float64(10.0)).collect().equals(want)
    rbc = preval.fuse([A, B], "rbc", phi=0.5).collect()
    assert preval.fuse([A, B], "rbc", phi=np.float32(0.5)).collect().equals(rbc)
    wsum = preval.fuse([A, B], "wsum", weights=[0.25, 0.75]).collect()
    assert preval.fuse([A, B], "wsum", weights=np.array([0.25, 0.75])).collect().equals(wsum)


@pytest.mark.parametrize(
    ("extra", "says"),
    [(["--method", "wsum", "--weights", "0.3,0.7"], "--weights"),
     (["--search", "k=10,20", "--param", "k=60"], "k")],
)  # fmt: skip
def test_optimize_refuses_a_flag_it_would_ignore(tmp_path, capsys, extra, says):
    # --weights was ignored by --optimize (the grid searched instead); --param k=60 silently
    # replaced --search k=10,20
    a, b, qrels = _cli_inputs(tmp_path)
    out = tmp_path / "f.run"
    code = main(["fuse", str(a), str(b), "--optimize", "AP", "--qrels", str(qrels), *extra,
                 "-o", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert says in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_signal_as_the_folder_of_o_dash_is_made_leaves_nothing(tmp_path, monkeypatch):
    # `fuse -o -` writes the run in a folder first; mkdtemp made it before the try that
    # removes it, and a signal raised as mkdtemp returned left it in --tmp-dir
    import os
    import signal

    from preval.cli import fuse as fuse_command

    made = os.mkdir

    def mkdir_then_interrupt(path, *args, **kwargs):
        made(path, *args, **kwargs)
        if os.path.basename(path).startswith("preval-fuse-"):
            signal.raise_signal(signal.SIGINT)  # its handler runs as the call returns

    monkeypatch.setattr(os, "mkdir", mkdir_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        fuse_command._to_stdout(lambda path: 0, str(tmp_path))
    assert list(tmp_path.iterdir()) == []
