"""The supervised fusion methods (preval/fusion/supervised.py) against ranx 0.3.21's fused
scores (tests/data/fusion_supervised, written by
benchmarks/peers/ranx_fusion_supervised_golden.py) and against worked examples.

The stacked frames are built here, following the contract of preval/fusion/registry.py, by a
helper that shares no code with the fusion core: rank by score descending (the cases have no
ties), min-max normalisation per run and query as ranx's (``(s - min) / max(max - min,
1e-9)``).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from preval.errors import InputError
from preval.fusion import supervised  # noqa: F401  (registers the methods)
from preval.fusion.registry import METHODS

# ranx 0.3.21's golden case (benchmarks/peers/ranx_fusion_supervised_golden.py); another draw,
# made with that script's --seed and --out, is checked with PREVAL_FUSION_SUPERVISED_GOLDEN=DIR
DATA = Path(
    os.environ.get("PREVAL_FUSION_SUPERVISED_GOLDEN")
    or Path(__file__).parent / "data" / "fusion_supervised"
)
PARAM = {"probfuse": "n_segments", "slidefuse": "w"}


def stack(runs: pl.DataFrame, normalise: bool = True) -> pl.LazyFrame:
    """runs (run, query, doc, score) -> the stacked frame of the registry's contract."""
    rank = pl.col("score").rank("ordinal", descending=True).over("run", "query")
    low, high = (
        pl.col("score").min().over("run", "query"),
        pl.col("score").max().over("run", "query"),
    )
    norm = (pl.col("score") - low) / pl.max_horizontal(high - low, pl.lit(1e-9))
    return runs.lazy().select(
        "query",
        "doc",
        pl.col("run").cast(pl.UInt32),
        (norm if normalise else pl.col("score")).cast(pl.Float64).alias("score"),
        rank.cast(pl.UInt32).alias("rank"),
    )


def fuse(name: str, runs, qrels=None, train_runs=None, **params) -> pl.DataFrame:
    m = METHODS[name]
    params = {**m.params, **params}
    trained = None
    if qrels is not None:
        trained = m.train(stack(train_runs), qrels.lazy(), params)
    weights = (1.0,) * (runs["run"].max() + 1)
    out = m.fuse(stack(runs), weights, params, trained).collect()
    return out.select("query", "doc", "score").sort("query", "doc")


@pytest.fixture(scope="module")
def golden():
    return {
        name: pl.read_parquet(DATA / f"{name}.parquet")
        for name in ("train_runs", "test_runs", "qrels", "expected")
    }


CASES = [
    ("posfuse", 0),
    ("segfuse", 0),
    ("bayesfuse", 0),
    ("mapfuse", 0),
    *[("probfuse", s) for s in (1, 3, 10, 25)],
    *[("slidefuse", w) for w in (1, 3, 10)],
]


@pytest.mark.parametrize(("name", "param"), CASES)
def test_ranx_golden(golden, name, param):
    params = {PARAM[name]: param} if name in PARAM else {}
    got = fuse(name, golden["test_runs"], golden["qrels"], golden["train_runs"], **params)
    want = golden["expected"].filter(method=name, param=param).select("query", "doc", "score")
    assert got.height == want.height
    joined = want.join(got, on=["query", "doc"], how="left", suffix="_preval")
    assert joined["score_preval"].null_count() == 0
    diff = (joined["score"] - joined["score_preval"]).abs().max()
    assert diff < 1e-9, (name, param, diff)


def test_registered():
    for name in ("posfuse", "probfuse", "segfuse", "slidefuse", "bayesfuse", "mapfuse"):
        m = METHODS[name]
        assert m.supervised and not m.weighted
        assert m.doc  # the docstring's first line is the help


def test_untrained_refused():
    runs = pl.DataFrame({"run": [0], "query": ["q"], "doc": ["a"], "score": [1.0]})
    with pytest.raises(InputError, match="supervised"):
        METHODS["posfuse"].fuse(stack(runs), (1.0,), {}, None)


def test_bad_parameter():
    runs = pl.DataFrame({"run": [0], "query": ["q"], "doc": ["a"], "score": [1.0]})
    qrels = pl.LazyFrame({"query": ["q"], "doc": ["a"], "label": [1]})
    with pytest.raises(InputError, match="n_segments"):
        METHODS["probfuse"].train(stack(runs), qrels, {"n_segments": 0})


# --- worked examples of the conventions ---------------------------------------------------------

# Training: run 0 answers q1 with [a, b, c] (a relevant) and q2 with [d] (d relevant); run 1
# answers q1 with [b, a] only (q2 is judged but run 1 did not answer it). q3 is answered by run 0
# but has no judgment: it is left out. Judged queries retrieved by a run: Q = {q1, q2}.
TRAIN = pl.DataFrame(
    {
        "run": [0, 0, 0, 0, 1, 1, 0],
        "query": ["q1", "q1", "q1", "q2", "q1", "q1", "q3"],
        "doc": ["a", "b", "c", "d", "b", "a", "x"],
        "score": [3.0, 2.0, 1.0, 5.0, 2.0, 1.0, 9.0],
    }
)
QRELS = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "c", "d"], "label": [1, 0, 2]})
# Fusing: q1 with run 0 = [e, f] and run 1 = [f]; q9 in run 1 only = [g]
FUSE = pl.DataFrame(
    {
        "run": [0, 0, 1, 1],
        "query": ["q1", "q1", "q1", "q9"],
        "doc": ["e", "f", "f", "g"],
        "score": [2.0, 1.0, 7.0, 4.0],
    }
)


def scores(frame: pl.DataFrame) -> dict[tuple[str, str], float]:
    return {(q, d): s for q, d, s in frame.select("query", "doc", "score").rows()}


def test_posfuse_worked_example():
    # run 0: position 0 relevant in q1 and q2 -> 2/2; position 1: 0/1 (only q1 reaches it)
    # run 1: position 0 (b) not relevant, position 1 (a) relevant -> 0/1, 1/1
    got = scores(fuse("posfuse", FUSE, QRELS, TRAIN))
    assert got == {("q1", "e"): 1.0, ("q1", "f"): 0.0 + 0.0, ("q9", "g"): 0.0}


def test_probfuse_worked_example():
    # S = 2. Training, run 0: q1 has 3 docs -> segments of 2: [a, b] -> 1/2, [c] -> 0;
    # q2 has 1 -> segments of 1: [d] -> 1, [] -> nothing; P_0 = ((1/2 + 1) / 2, 0) = (3/4, 0).
    # run 1: q1 [b, a] -> segments of 1: [b] 0, [a] 1; q2 unanswered: empty, counts in |Q| = 2:
    # P_1 = (0, 1/2).
    # Fusing q1: run 0 [e, f] -> segments of 1: e -> 3/4 / 1, f -> 0 / 2; run 1 [f] -> f -> 0.
    # q9: run 1 [g] -> 0.
    got = scores(fuse("probfuse", FUSE, QRELS, TRAIN, n_segments=2))
    assert got == {("q1", "e"): 0.75, ("q1", "f"): 0.0, ("q9", "g"): 0.0}


def test_segfuse_worked_example():
    # First segment: 5 positions. run 0: q1 1 hit, q2 1 hit -> (1/5 + 1/5) / 2 = 0.2;
    # run 1: q1 1 hit, q2 none -> (1/5 + 0) / 2 = 0.1. Scores are min-max normalised: run 0 of
    # q1: e -> 1, f -> 0; run 1: f -> 0 (one document: 0 / 1e-9), g -> 0.
    got = scores(fuse("segfuse", FUSE, QRELS, TRAIN))
    assert got[("q1", "e")] == pytest.approx(0.2 * 2)
    assert got[("q1", "f")] == pytest.approx(0.2 * 1 + 0.1 * 1)
    assert got[("q9", "g")] == pytest.approx(0.1)


def test_slidefuse_worked_example():
    # PosFuse probabilities: run 0 (1, 0, 0), run 1 (0, 1). w = 1.
    # q1 run 0 [e, f]: e: window [0, 1] -> (1 + 0) / 2; f: window [0, 1] -> 1/2.
    # q1 run 1 [f]: window [0, 0] -> 0. q9 run 1 [g] -> 0.
    got = scores(fuse("slidefuse", FUSE, QRELS, TRAIN, w=1))
    assert got == {("q1", "e"): 0.5, ("q1", "f"): 0.5, ("q9", "g"): 0.0}
    # past the trained depth: a list of 4 in run 1 (depth 2) with w = 1; position 3's window
    # [2, 3] holds no trained position: 0 / 2; position 2's [1, 3]: (1 + 0 + 0) / 3
    deep = pl.DataFrame(
        {"run": [1] * 4, "query": ["q1"] * 4, "doc": list("wxyz"), "score": [4.0, 3, 2, 1]}
    )
    got = scores(fuse("slidefuse", deep, QRELS, TRAIN, w=1))
    assert got[("q1", "y")] == pytest.approx(1 / 3)
    assert got[("q1", "z")] == 0.0


def test_bayesfuse_worked_example():
    # First segment (5 positions): run 0 precision (1/5 + 1/5) / 2 = 0.2, run 1 0.1; the others
    # 0 -> 0.001. Two runs. q1 e: run 0 only: ln(0.2/0.8) + ln(0.001/0.999); f: both runs.
    floor = math.log(0.001 / 0.999)
    got = scores(fuse("bayesfuse", FUSE, QRELS, TRAIN))
    assert got[("q1", "e")] == pytest.approx(math.log(0.25) + floor)
    assert got[("q1", "f")] == pytest.approx(math.log(0.25) + math.log(0.1 / 0.9))
    assert got[("q9", "g")] == pytest.approx(math.log(0.1 / 0.9) + floor)


def test_mapfuse_worked_example():
    # AP run 0: q1 (a relevant at 1, R = 1) 1, q2 1 -> MAP 1; run 1: q1 a at rank 2 -> 1/2,
    # q2 unanswered -> 0: MAP 1/4. q3 is not judged: left out.
    got = scores(fuse("mapfuse", FUSE, QRELS, TRAIN))
    assert got == {("q1", "e"): 1.0, ("q1", "f"): 0.5 + 0.25, ("q9", "g"): 0.25}


# --- properties ------------------------------------------------------------------------------


def _reference_posfuse(train: pl.DataFrame, qrels: pl.DataFrame, runs: pl.DataFrame):
    """Plain Python PosFuse under the module's conventions (no Polars plan)."""
    relevant = {(q, d) for q, d, label in qrels.rows() if label >= 1}
    judged = {q for q, _, _ in qrels.rows()}
    lists: dict[tuple[int, str], list[str]] = {}
    for r, q, d, _s in sorted(train.rows(), key=lambda t: (t[0], t[1], -t[3])):
        if q in judged:
            lists.setdefault((r, q), []).append(d)
    probs: dict[int, list[list[int]]] = {}
    for (r, q), docs in lists.items():
        table = probs.setdefault(r, [])
        for i, d in enumerate(docs):
            if i == len(table):
                table.append([0, 0])
            table[i][0] += (q, d) in relevant
            table[i][1] += 1
    fused: dict[tuple[str, str], float] = {}
    fused_lists: dict[tuple[int, str], list[str]] = {}
    for r, q, d, _s in sorted(runs.rows(), key=lambda t: (t[0], t[1], -t[3])):
        fused_lists.setdefault((r, q), []).append(d)
    for (r, q), docs in fused_lists.items():
        table = probs.get(r, [])
        for i, d in enumerate(docs):
            p = table[i][0] / table[i][1] if i < len(table) else 0.0
            fused[(q, d)] = fused.get((q, d), 0.0) + p
    return fused


runs_strategy = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(["q1", "q2", "q3"]),
        st.sampled_from(list("abcdefgh")),
    ),
    min_size=1,
    max_size=40,
    unique_by=lambda t: (t[0], t[1], t[2]),
)


def _frame(rows) -> pl.DataFrame:
    return pl.DataFrame(
        [(r, q, d, float(i)) for i, (r, q, d) in enumerate(rows)],
        schema=["run", "query", "doc", "score"],
        orient="row",
    )


@settings(max_examples=40, deadline=None)
@given(
    runs_strategy,
    runs_strategy,
    st.lists(
        st.tuples(st.sampled_from(["q1", "q2"]), st.sampled_from(list("abcdefgh")),
                  st.integers(0, 2)),
        min_size=1, max_size=10, unique_by=lambda t: (t[0], t[1]),
    ),
)  # fmt: skip
def test_posfuse_matches_reference(train_rows, fuse_rows, qrels_rows):
    train, runs = _frame(train_rows), _frame(fuse_rows)
    qrels = pl.DataFrame(qrels_rows, schema=["query", "doc", "label"], orient="row")
    if not train.join(qrels, on="query", how="semi").height:
        return  # no training query: nothing to learn
    got = scores(fuse("posfuse", runs, qrels, train))
    want = _reference_posfuse(train, qrels, runs)
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12)


def test_integer_ids_join_string_qrels():
    # integer query and doc ids in the runs, strings in the qrels: joined as text
    runs = pl.DataFrame({"run": [0, 0], "query": [1, 1], "doc": [10, 11], "score": [2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["1"], "doc": ["10"], "label": [1]})
    got = fuse("posfuse", runs, qrels, runs)
    assert got.filter(pl.col("doc") == 10)["score"].item() == 1.0


def test_fuse_trains_on_train_qrels_in_one_plan_as_learn_then_apply() -> None:
    # preval.fuse(train_qrels=) is learn() followed by apply(learned=): the same fused scores
    # (to an ulp: the learned probabilities are sums a parallel group_by may add in another
    # order); without judgments a supervised method is refused before any run is read
    import preval
    from preval.fusion import apply, learn, stack

    root = Path(__file__).resolve().parents[1] / "fixtures" / "trec"
    runs = [str(root / "bm25.run"), str(root / "hybrid.run.gz")]
    qrels = str(root / "qrels.txt")
    for method, params in (("probfuse", {"n_segments": 7}), ("posfuse", {})):
        got = preval.fuse(runs, method, train_qrels=qrels, **params).collect()
        learned = learn(runs, qrels, method, **params)
        want = apply(stack(runs), method, learned=learned, params=params).collect()
        both = got.join(want, on=["query", "doc"], how="full", suffix="_learned")
        assert both.height == got.height == want.height
        assert both.select((pl.col("score") - pl.col("score_learned")).abs().max()).item() < 1e-12
    with pytest.raises(InputError, match="supervised: give the judgments"):
        preval.fuse(runs, "probfuse")
