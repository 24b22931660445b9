"""Tuning fusions (preval/fusion/tuning.py): the search against a brute-force plain-Python one,
cross-validation's folds, the comparison with the inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest

import preval
from preval.errors import InputError
from preval.fusion import core, stacked
from preval.fusion.tuning import assign_folds, candidates, optimize_fusion, weight_grid


def _runs(seed: int, runs: int = 3, queries: int = 6, pool: int = 12):
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(runs):
        rows = []
        for q in range(queries):
            n = int(rng.integers(1, pool))
            for d in rng.choice(pool, size=n, replace=False):
                rows.append((f"q{q}", f"d{d:02d}", float(np.round(rng.random() * 10, 3))))
        frames.append(pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row"))
    qrels_rows = []
    for q in range(queries - 1):  # the last query is judged by nobody
        for d in rng.choice(pool, size=6, replace=False):
            qrels_rows.append((f"q{q}", f"d{d:02d}", int(rng.choice([0, 1, 2]))))
    qrels = pl.DataFrame(qrels_rows, schema=["query", "doc", "label"], orient="row")
    return frames, qrels


# --- a plain-Python reference (shares no code with preval) -----------------------------------


def _min_max(run: pl.DataFrame) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    by_query: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in run.rows():
        by_query.setdefault(q, []).append((d, s))
    for q, docs in by_query.items():
        lo, hi = min(s for _, s in docs), max(s for _, s in docs)
        out[q] = {d: (s - lo) / max(hi - lo, 1e-9) for d, s in docs}
    return out


def _wsum(normed: list[dict[str, dict[str, float]]], weights) -> dict[str, dict[str, float]]:
    fused: dict[str, dict[str, float]] = {}
    for q in sorted({q for run in normed for q in run}):
        docs = {d for run in normed for d in run.get(q, {})}
        fused[q] = {}
        for d in docs:
            total = 0.0
            for i, run in enumerate(normed):  # run order, a missing doc adding 0
                value = run.get(q, {}).get(d)
                total = (total + value * weights[i]) if value is not None else total + 0.0
            fused[q][d] = total
    return fused


def _ndcg10(fused: dict[str, dict[str, float]], qrels: pl.DataFrame) -> dict[str, float]:
    labels: dict[str, dict[str, int]] = {}
    for q, d, label in qrels.rows():
        labels.setdefault(q, {})[d] = label
    out = {}
    for q, judged in labels.items():
        docs = fused.get(q, {})
        # trec_eval 9's order: the score as a 32-bit float descending, then doc id descending
        ranked = sorted(docs, key=lambda d: (-np.float32(docs[d]), [-ord(c) for c in d]))
        dcg = sum(max(judged.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
        ideal = sorted((max(v, 0) for v in judged.values()), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        out[q] = dcg / idcg if idcg > 0 else 0.0
    return out


def test_search_equals_brute_force():
    frames, qrels = _runs(1)
    normed = [_min_max(f) for f in frames]
    grid = [round(x, 1) for x in np.arange(0, 1.1, 0.1)]
    trials = [w for w in itertools.product(grid, repeat=3) if sum(w) == 1.0]
    scores = []
    for w in trials:
        per_query = _ndcg10(_wsum(normed, w), qrels)
        scores.append(sum(per_query.values()) / len(per_query))
    best_score, best = 0.0, None
    for w, s in zip(trials, scores, strict=True):
        if s >= best_score:  # ranx's rule: the last of equal scores
            best_score, best = s, w
    tuning = optimize_fusion(frames, qrels, method="wsum")
    assert tuning.best["weights"] == list(best)
    assert tuning.candidates["weights"].to_list() == [list(w) for w in trials]
    assert tuning.candidates["score"].to_list() == pytest.approx(scores, abs=1e-12)


def test_weight_grid_is_ranx_grid():
    grid = weight_grid(0.1, 3)
    assert len(grid) == 62  # 66 tuples sum to 1 in decimals; ranx's float sum drops 4
    assert (0.1, 0.2, 0.7) in grid and (0.2, 0.7, 0.1) not in grid
    assert weight_grid(0.5, 2) == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]


def test_candidates():
    wsum, rrf = core.get_method("wsum"), core.get_method("rrf")
    assert [c.params["k"] for c in candidates(rrf, 2, None)] == list(range(10, 101, 10))
    got = candidates(wsum, 2, {"weights": [[1, 2], [3, 4]]})
    assert [c.weights for c in got] == [(1.0, 2.0), (3.0, 4.0)]
    with pytest.raises(InputError, match="no weights"):
        candidates(rrf, 2, {"weights": 0.1})
    with pytest.raises(InputError, match="no parameter 'kk'"):
        candidates(rrf, 2, {"kk": [1]})
    with pytest.raises(InputError, match="one weight per run"):
        candidates(wsum, 3, {"weights": [[1, 2]]})


def test_folds_partition_and_seed():
    queries = [f"q{i}" for i in range(23)]
    a = assign_folds(queries, 5, seed=0)
    assert a == assign_folds(queries, 5, seed=0)  # seeded: repeatable
    assert a != assign_folds(queries, 5, seed=1)
    sizes = sorted(list(a.values()).count(f) for f in range(5))
    assert sizes == [4, 4, 5, 5, 5]
    with pytest.raises(InputError, match="folds"):
        assign_folds(queries, 1, seed=0)
    with pytest.raises(InputError, match="at most one fold per query"):
        assign_folds(queries[:3], 4, seed=0)


def test_cross_validation_unsupervised():
    frames, qrels = _runs(2, queries=12)
    tuning = optimize_fusion(frames, qrels, method="wsum", search={"weights": 0.25}, folds=3)
    plain = optimize_fusion(frames, qrels, method="wsum", search={"weights": 0.25})
    normed = [_min_max(f) for f in frames]
    trials = weight_grid(0.25, 3)
    values = [_ndcg10(_wsum(normed, w), qrels) for w in trials]
    per_query = tuning.per_query
    assert per_query["fold"].null_count() == 0
    for row in tuning.folds.iter_rows(named=True):
        held = set(per_query.filter(pl.col("fold") == row["fold"])["query"].to_list())
        train = set(per_query["query"].to_list()) - held
        assert held and train and not held & train
        means = [sum(v[q] for q in train) / len(train) for v in values]
        top = max(means)
        chosen = max(i for i, m in enumerate(means) if m == pytest.approx(top, abs=1e-12))
        assert row["candidate"] == chosen
        assert row["weights"] == list(trials[chosen])
        for q in held:  # the held-out value is the fold's choice, tuned without the query
            got = per_query.filter(pl.col("query") == q)[tuning.metric].item()
            assert got == pytest.approx(values[chosen][q], abs=1e-12)
    # repeatable with the seed; the plain search does not split
    again = optimize_fusion(frames, qrels, method="wsum", search={"weights": 0.25}, folds=3)
    assert again.per_query.equals(tuning.per_query)
    assert plain.folds is None and plain.per_query["fold"].null_count() == plain.per_query.height


@pytest.mark.parametrize(("method", "param"), [("probfuse", "n_segments"), ("slidefuse", "w")])
def test_cross_validation_supervised_trains_without_the_fold(method, param):
    # (slidefuse's window is not read by its training: one training per fold serves both)
    frames, qrels = _runs(3, queries=12)
    tuning = optimize_fusion(frames, qrels, method=method, search={param: [1, 3]}, folds=3,
                             seed=7)  # fmt: skip
    m = core.get_method(method)
    stacked = core.stack(frames)
    normed = core.normalise(stacked.frame, "min-max")
    for row in tuning.folds.iter_rows(named=True):
        held = tuning.per_query.filter(pl.col("fold") == row["fold"]).select("query")
        params = {param: row[param]}
        learned = m.train(
            normed.join(held.lazy(), on="query", how="anti"),
            qrels.lazy().join(held.lazy(), on="query", how="anti"),
            params,
        )
        fused = m.fuse(normed, (1.0,) * 3, params, learned).select("query", "doc", "score")
        want = preval.evaluate(fused, ["nDCG@10"], qrels=qrels).collect()
        got = tuning.per_query.join(held, on="query").join(want, on="query", suffix="_want")
        assert got.height == held.height
        assert (got["nDCG@10"] - got["nDCG@10_want"]).abs().max() < 1e-12


def test_compare_with_inputs():
    frames, qrels = _runs(4, queries=15)
    runs = {"a": frames[0], "b": frames[1], "c": frames[2]}
    tuning = optimize_fusion(runs, qrels, method="rrf", folds=3)
    table = tuning.table()
    assert sorted(table["system"].unique().to_list()) == ["a", "b", "c", "fused"]
    result = tuning.compare(correction="holm")
    assert result["system"].to_list() == ["fused"] * 3
    assert result["baseline"].to_list() == ["a", "b", "c"]
    for row in result.iter_rows(named=True):
        pair = table.filter(pl.col("system").is_in([row["baseline"], "fused"]))
        alone = preval.compare(pair, baseline=row["baseline"], correction="none")
        assert alone["p_value"].item() == row["p_value"]
        assert alone["delta"].item() == row["delta"]
    p = sorted(result["p_value"].to_list())
    holm = [min(1.0, max(p[: i + 1][j] * (3 - j) for j in range(i + 1))) for i in range(3)]
    assert sorted(result["p_corrected"].to_list()) == pytest.approx(holm)


def test_fused_is_the_best():
    frames, qrels = _runs(5)
    tuning = optimize_fusion(frames, qrels, method="rrf")
    want = core.fuse(frames, method="rrf", k=tuning.best["k"]).collect()
    assert tuning.fused.collect().equals(want)


def test_bad_input():
    frames, qrels = _runs(6)
    with pytest.raises(InputError, match="judge no query"):
        optimize_fusion(frames, qrels.head(0), method="rrf")
    with pytest.raises(InputError):
        optimize_fusion(frames, qrels, method="rrf", folds=1)


# Bad qrels are named as the evaluator names them (its declared rules of qrels, checked before
# the search codes the ids): the file, the rule, the count, the user's ids. Without the
# evaluator's hints (--by, --duplicates): fuse's --duplicates keeps one row of a run.
BAD_QRELS = {
    "duplicate": "query,doc,label\nq1,d1,1\nq1,d2,0\nq1,d1,1\nq2,d3,1\n",
    "null doc": "query,doc,label\nq1,d1,1\nq1,,0\nq2,d3,1\n",
    "null label": "query,doc,label\nq1,d1,1\nq1,d2,\nq2,d3,1\n",
    "NaN label": "query,doc,label\nq1,d1,1\nq1,d2,NaN\nq2,d3,1.0\n",
    "null query": "query,doc,label\nq1,d1,1\n,d2,1\nq2,d3,1\n",
}


def _evaluators_message(run_csv, qrels) -> str:
    with pytest.raises(preval.errors.PrevalError) as raised:
        preval.evaluate(run_csv, ["AP"], qrels=qrels).collect()
    text = str(raised.value)
    for hint in raised.value.hints:  # the evaluator's ways out, which fusion does not take
        text = text.replace(hint.said(), "")
    return text


@pytest.mark.parametrize("bad", list(BAD_QRELS))
def test_bad_qrels_are_named_as_the_evaluator_names_them(tmp_path, bad):
    run_csv, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    run_csv.write_text("query,doc,score\nq1,d1,0.9\nq1,d2,0.8\nq2,d3,0.5\n")
    qrels.write_text(BAD_QRELS[bad])
    want = _evaluators_message(run_csv, qrels)
    assert want.startswith(f"qrels {qrels}: ")
    with pytest.raises(preval.errors.PrevalError) as raised:
        optimize_fusion([run_csv, run_csv], qrels, method="wsum", metric="AP")
    assert str(raised.value) == want
    # a supervised method's training judgments keep the same rules (they were not checked)
    with pytest.raises(preval.errors.PrevalError) as raised:
        preval.fuse([run_csv, run_csv], method="probfuse", train_qrels=qrels).collect()
    assert str(raised.value) == want


def test_bad_qrels_on_the_command_line_as_evaluate_says(capsys, tmp_path):
    from preval.cli import main

    run_csv, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    run_csv.write_text("query,doc,score\nq1,d1,0.9\nq1,d2,0.8\nq2,d3,0.5\n")
    qrels.write_text(BAD_QRELS["null label"])
    assert main(["evaluate", str(run_csv), "--qrels", str(qrels), "-m", "AP"]) == 2
    want = capsys.readouterr().err
    fused = tmp_path / "f.run"
    argv = ["fuse", str(run_csv), str(run_csv), "--optimize", "AP", "--qrels", str(qrels)]
    assert main([*argv, "-o", str(fused)]) == 2
    out, err = capsys.readouterr()
    assert err == want and "query 'q1', doc 'd2'" in err  # the user's ids, not codes
    assert out == "" and not fused.exists()


@pytest.mark.parametrize("name", ["wsum", "wmnz", "mixed"])
def test_linear_fast_path_is_the_method(name):
    # the search's column formulas give the method's own fused scores, to the bit
    from preval.fusion.tuning import LINEAR

    frames, _ = _runs(8)
    normed = core.normalise(core.stack(frames).frame, "min-max")
    weights = (0.3, 0.5, 0.2)
    m = core.get_method(name)
    want = m.fuse(normed, weights, {}, None).select("query", "doc", "score").collect()
    v = [pl.col(f"v{r}") for r in range(3)]
    got = (
        stacked.wide(normed, 3, {"v": pl.col("score")})
        .select("query", "doc", LINEAR[name](v, weights).alias("score"))
        .collect()
    )
    joined = want.join(got, on=["query", "doc"], suffix="_fast")
    assert joined.height == want.height == got.height
    assert (joined["score"] == joined["score_fast"]).all()


# --- the command line (preval fuse --optimize / --train-qrels; preval/cli/fuse_tune.py) -------

TREC = ["fixtures/trec/bm25.run", "fixtures/trec/hybrid.run.gz"]
QRELS = "fixtures/trec/qrels.txt"


def _cli(capsys, *args):
    from preval.cli import main

    rc = main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_optimize(capsys, tmp_path):
    out_path = tmp_path / "fused.run"
    rc, out, _ = _cli(capsys, "fuse", *TREC, "--method", "rrf", "--optimize", "nDCG@10",
                      "--qrels", QRELS, "--search", "k=20,60", "--folds", "3",
                      "-o", out_path)  # fmt: skip
    assert rc == 0
    tuning = optimize_fusion(TREC, QRELS, method="rrf", search={"k": [20, 60]}, folds=3)
    assert f"k={tuning.best['k']}" in out
    assert "3-fold cross-validation" in out and "fused   bm25" in out
    written = preval.scan_run(out_path).collect()
    want = tuning.fused.collect()
    assert written.height == want.height
    assert written["doc"].to_list() == want["doc"].to_list()


def test_cli_train_qrels(capsys, tmp_path):
    out_path = tmp_path / "fused.run"
    rc, _, _ = _cli(capsys, "fuse", *TREC, "--method", "probfuse", "--train-qrels", QRELS,
                      "--param", "n_segments=5", "-o", out_path)  # fmt: skip
    assert rc == 0
    from preval.fusion import learn

    learned = learn(TREC, QRELS, "probfuse", n_segments=5)
    want = core.apply(core.stack(TREC), "probfuse", learned=learned.lazy(),
                      params={"n_segments": 5}).collect()  # fmt: skip
    written = preval.scan_run(out_path).collect()
    assert written["doc"].to_list() == want["doc"].to_list()
    assert (written["score"] - want["score"]).abs().max() < 1e-12


def test_cli_bad_flags(capsys):
    rc, _, err = _cli(capsys, "fuse", *TREC, "--optimize", "nDCG@10", "-o", "x.run")
    assert rc == 2 and "--qrels" in err and len(err.strip().splitlines()) == 1
    rc, _, err = _cli(capsys, "fuse", *TREC, "--folds", "3", "--train-qrels", QRELS,
                      "--method", "posfuse", "-o", "x.run")  # fmt: skip
    assert rc == 2 and "--optimize" in err
