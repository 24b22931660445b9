"""Fusion (`preval.fuse`): every method and normalisation against ranx 0.3.21's own fused runs
(golden files made by benchmarks/peers/ranx_fusion_golden.py, as ranx is not a test
dependency), plain-Python references for RRF and CombMNZ, properties that need no peer, bad
input, the writers and the command line."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import preval
from preval.errors import DuplicateError, InputError, InvalidValueError
from preval.fusion import core, writers
from preval.fusion.registry import METHODS, NORMS

from .profiles import examples

# golden runs of ranx 0.3.21 (benchmarks/peers/ranx_fusion_golden.py); another draw of cases,
# made with that script's --seed and --out, is checked with PREVAL_FUSION_GOLDEN=DIR
DATA = Path(os.environ.get("PREVAL_FUSION_GOLDEN") or Path(__file__).parent / "data" / "fusion")
ROOT = Path(__file__).parents[1]
RUNS = pl.read_parquet(DATA / "runs.parquet")
GOLD = pl.read_parquet(DATA / "fused.parquet")
CASES = json.loads((DATA / "cases.json").read_text())
RANX_NORMS = ["min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda"]
RANX_METHODS = [
    "comb_sum", "comb_mnz", "comb_max", "comb_min", "comb_med", "comb_anz", "comb_gmnz", "wsum",
    "wmnz", "mixed", "rrf", "isr", "log_isr", "logn_isr", "bordafuse", "weighted_bordafuse",
    "condorcet", "weighted_condorcet", "rbc",
]  # fmt: skip


@functools.cache
def case_runs(case: str) -> list[pl.DataFrame]:
    rows = RUNS.filter(pl.col("case") == case).sort("run", "row")
    return [
        rows.filter(pl.col("run") == i).select("query", "doc", "score")
        for i in range(rows["run"].max() + 1)
    ]


def test_registry_holds_ranx_methods_and_norms():
    assert set(RANX_METHODS) <= set(METHODS)
    assert set(RANX_NORMS) <= set(NORMS)
    # each defined once, with a docstring that gives its formula and its source
    for name in RANX_METHODS:
        doc = METHODS[name].fuse.__doc__
        assert ":" in doc.splitlines()[0] and ("Source" in doc), name


def _undefined_order(
    case: str, method: str, norm: str, query: str, docs: list[str], scores: list[float]
) -> bool:
    """Whether ranx's order of this fused query is defined by no rule (see docs/fusion.md):
    numba's unstable argsort beyond 15 documents, a Python set's order after borda, Condorcet's
    comparator on a majority with ties or cycles, BordaFuse's unranked candidates."""
    tied = len(set(scores)) < len(scores)
    if norm == "borda" or (len(scores) > 15 and tied):
        return True
    if method in ("condorcet", "weighted_condorcet"):
        weights = tuple(CASES[case]["weights"]) if method == "weighted_condorcet" else None
        return not _condorcet_defined(case, query, norm, weights)
    if method in ("bordafuse", "weighted_bordafuse") and tied:
        # ranx inserts the candidates run 0 did not retrieve in a set's order
        in_first = set(case_runs(case)[0].filter(pl.col("query") == query)["doc"])
        outside = [s for d, s in zip(docs, scores, strict=True) if d not in in_first]
        return len(set(outside)) < len(outside)
    return False


@functools.cache
def _condorcet_defined(case: str, query: str, norm: str, weights: tuple | None) -> bool:
    """Whether ranx's pairwise comparator (`ranx.fusion.condorcet._compare`: x first when the
    runs ranking x strictly above y weigh at least half) orders the query's candidates one way
    only: each pair decided in one direction and the relation transitive."""
    lists = []
    for run in case_runs(case):
        rows = [(d, s) for q, d, s in run.iter_rows() if q == query]
        ranked = sorted(rows, key=lambda x: -x[1])  # stable: ties in input order
        if norm == "min-max-inverted":  # ranx sorts the inverted scores again, stably
            ranked = sorted(ranked, key=lambda x: x[1])
        lists.append({d: i for i, (d, _) in enumerate(ranked)})
    w = weights or [1.0] * len(lists)
    cands = sorted({d for p in lists for d in p})

    def first(x: str, y: str) -> bool:
        votes = sum(wr for p, wr in zip(lists, w, strict=True)
                    if p.get(x, 1_000_000) < p.get(y, 1_000_000))  # fmt: skip
        return votes >= sum(w) - votes

    wins = dict.fromkeys(cands, 0)
    for i, x in enumerate(cands):
        for y in cands[i + 1 :]:
            if first(x, y) == first(y, x):
                return False
            wins[x if first(x, y) else y] += 1
    order = sorted(cands, key=lambda x: -wins[x])
    return all(first(order[i], order[j]) for i in range(len(order))
               for j in range(i + 1, len(order)))  # fmt: skip


@functools.cache
def _zmuv_breaks(case: str, query: str) -> bool:
    """ranx's zmuv of a run padded with an empty result for a query it lacks can lose the
    documents of another query of that run (its parallel loop over queries; seen with a
    one-document query after an empty one): wherever a run of the case lacks a query,
    preval's convention (the run contributes nothing to the query it lacks, and the others
    are normalised as they are) has no peer value."""
    queries = RUNS.filter(case=case)["query"].n_unique()
    per_run = RUNS.filter(case=case).group_by("run").agg(pl.col("query").n_unique())
    return bool((per_run["query"] < queries).any())


@pytest.mark.parametrize("case", sorted(CASES))
def test_against_ranx(case):
    """Scores to 1e-9 for every (method, norm) ranx computes, and the fused order wherever
    ranx's is defined; Condorcet's scores where its order is defined (they are positions)."""
    runs = case_runs(case)
    info = CASES[case]
    gold = GOLD.filter(pl.col("case") == case)
    combos = gold.select("method", "norm").unique(maintain_order=True).rows()
    plans = [
        preval.fuse(
            runs, method, norm=norm, weights=info["weights"] if METHODS[method].weighted else None,
            **info["params"].get(method, {}),
        ).with_columns(pl.lit(method).alias("method"), pl.lit(norm).alias("norm"))
        for method, norm in combos
    ]  # fmt: skip
    ours_all = pl.concat([plan.collect() for plan in plans])
    keys = ["method", "norm", "query"]
    ranx_lists = gold.sort("pos").group_by(keys, maintain_order=True).agg("doc", "score")
    our_lists = ours_all.sort("rank").group_by(keys).agg("doc", "score")
    both = ranx_lists.join(our_lists, on=keys, how="full", suffix="_p", coalesce=True)
    checked_orders = 0
    for method, norm, query, docs, scores, our_docs, our_scores in both.iter_rows():
        if norm == "zmuv" and _zmuv_breaks(case, query):
            continue
        assert our_docs is not None and docs is not None, (method, norm, query)
        undefined = _undefined_order(case, method, norm, query, docs, scores)
        assert sorted(our_docs) == sorted(docs), (method, norm, query)
        assert our_scores == sorted(our_scores, reverse=True)  # preval's order is its scores'
        if method in ("condorcet", "weighted_condorcet") and undefined:
            continue
        expected = dict(zip(docs, scores, strict=True))
        for d, b in zip(our_docs, our_scores, strict=True):
            assert b == pytest.approx(expected[d], rel=1e-9, abs=1e-9), (method, norm, query)
        if not undefined:
            checked_orders += 1
            assert our_docs == docs, (method, norm, query)
    # a guard that orders are compared, not skipped: at least one per two (method, norm)
    assert checked_orders >= len(combos) // 2


# --- plain-Python references ---------------------------------------------------------------


def _ranked(rows):
    """{query: [doc, ...]} by score descending, ties in input order (Python's sort is stable)."""
    by_q = defaultdict(list)
    for q, d, s in rows:
        by_q[q].append((d, s))
    return {q: [d for d, _ in sorted(v, key=lambda x: -x[1])] for q, v in by_q.items()}


def ref_rrf(runs, k=60):
    out = defaultdict(dict)
    for run in runs:
        for q, docs in _ranked(run).items():
            for i, d in enumerate(docs):
                out[q][d] = out[q].get(d, 0.0) + 1 / (k + i + 1)
    return out


def ref_comb_mnz_minmax(runs):
    """CombMNZ over min-max normalised scores: (Σ s) · (number of runs with the document)."""
    total, hits = defaultdict(dict), defaultdict(lambda: defaultdict(int))
    for run in runs:
        by_q = defaultdict(list)
        for q, d, s in run:
            by_q[q].append((d, s))
        for q, v in by_q.items():
            lo, hi = min(s for _, s in v), max(s for _, s in v)
            for d, s in v:
                total[q][d] = total[q].get(d, 0.0) + (s - lo) / max(hi - lo, 1e-9)
                hits[q][d] += 1
    return {q: {d: t * hits[q][d] for d, t in docs.items()} for q, docs in total.items()}


_ids = st.sampled_from(["a", "b", "c", "d", "e", "f", "g"])
_run = st.lists(
    st.tuples(st.sampled_from(["q1", "q2", "q3"]), _ids, st.sampled_from([0.0, 0.5, 1.0, 2.5])),
    min_size=1,
    max_size=20,
    unique_by=lambda r: (r[0], r[1]),
)


def _frame(rows):
    return pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row")


def _as_dict(fused: pl.DataFrame) -> dict:
    out = defaultdict(dict)
    for q, d, s in fused.select("query", "doc", "score").iter_rows():
        out[q][d] = s
    return out


@hsettings(max_examples=examples(100))
@given(st.lists(_run, min_size=1, max_size=3))
def test_rrf_matches_reference(runs):
    fused = preval.fuse([_frame(r) for r in runs], "rrf").collect()
    expected = ref_rrf(runs)
    got = _as_dict(fused)
    assert got.keys() == expected.keys()
    for q in expected:
        assert got[q].keys() == expected[q].keys()
        for d in expected[q]:
            assert got[q][d] == pytest.approx(expected[q][d], rel=1e-12)


@hsettings(max_examples=examples(100))
@given(st.lists(_run, min_size=1, max_size=3))
def test_comb_mnz_matches_reference(runs):
    fused = preval.fuse([_frame(r) for r in runs], "comb_mnz", norm="min-max").collect()
    expected = ref_comb_mnz_minmax(runs)
    got = _as_dict(fused)
    assert got.keys() == expected.keys()
    for q in expected:
        for d in expected[q]:
            assert got[q][d] == pytest.approx(expected[q][d], rel=1e-12, abs=1e-12)


# --- properties ------------------------------------------------------------------------------


@hsettings(max_examples=examples(60))
@given(_run)
def test_rrf_of_one_run_keeps_its_order(run):
    fused = preval.fuse(_frame(run), "rrf").collect()
    expected = _ranked(run)
    for q, docs in expected.items():
        assert fused.filter(pl.col("query") == q).sort("rank")["doc"].to_list() == docs


@hsettings(max_examples=examples(60))
@given(_run)
def test_comb_sum_of_identical_runs_doubles(run):
    one = preval.fuse(_frame(run), "comb_sum", norm="none").collect()
    two = preval.fuse([_frame(run), _frame(run)], "comb_sum", norm="none").collect()
    assert one.select("query", "doc").equals(two.select("query", "doc"))
    assert (two["score"] - 2 * one["score"]).abs().max() == 0


@hsettings(max_examples=examples(60))
@given(st.lists(_run, min_size=1, max_size=3), st.sampled_from(RANX_METHODS))
def test_every_method_one_row_per_candidate(runs, method):
    plan = preval.fuse([_frame(r) for r in runs], method)
    fused = plan.collect()
    assert plan.collect(engine="streaming").equals(fused)  # the writers' engine
    candidates = {(q, d) for r in runs for q, d, _ in r}
    assert set(zip(fused["query"], fused["doc"], strict=True)) == candidates
    assert fused.height == len(candidates)
    for (_,), g in fused.group_by(["query"]):
        g = g.sort("rank")
        assert g["rank"].to_list() == list(range(1, g.height + 1))
        assert g["score"].is_sorted(descending=True)


@hsettings(max_examples=examples(60))
@given(_run, st.sampled_from(RANX_NORMS))
def test_norms_keep_rows_and_order(run, norm):
    """Every normalisation but borda (which adds rows) and min-max-inverted (which reverses the
    run) keeps a run's rows and its order: comb_sum of one run ranks as the run does."""
    fused = preval.fuse(_frame(run), "comb_sum", norm=norm).collect()
    assert fused.height == len(run)
    if norm in ("borda", "min-max-inverted"):
        return
    for q, docs in _ranked(run).items():
        assert fused.filter(pl.col("query") == q).sort("rank")["doc"].to_list() == docs


def test_norm_edge_cases():
    """All-equal scores normalise to 0 (min-max, sum, zmuv: ranx's 1e-9 floor), one document
    too; max divides by 1e-9 when every score is <= 0; rank gives 1 - i/n; borda gives a run's
    missing candidates 0.5 - (n - 1) / 2c, and (c + 1) / 2c when the run lacks the query."""
    run = _frame([("q", "a", 2.0), ("q", "b", 2.0), ("r", "x", 5.0)])
    for norm in ("min-max", "sum", "zmuv"):
        fused = preval.fuse(run, "comb_sum", norm=norm).collect()
        assert fused["score"].to_list() == [0.0, 0.0, 0.0], norm
    neg = preval.fuse(_frame([("q", "a", -1e-10)]), "comb_sum", norm="max").collect()
    assert neg["score"].item() == pytest.approx(-0.1)
    ranked = preval.fuse(_frame([("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)]),
                         "comb_sum", norm="rank").collect()  # fmt: skip
    assert ranked["score"].to_list() == pytest.approx([1.0, 2 / 3, 1 / 3])
    # borda: run 0 has a, b of candidates {a, b, c}; run 1 has c; c = 3
    r0 = _frame([("q", "a", 2.0), ("q", "b", 1.0)])
    r1 = _frame([("q", "c", 9.0), ("p", "z", 1.0)])
    got = _as_dict(preval.fuse([r0, r1], "comb_sum", norm="borda").collect())
    # a: 1 + (0.5 - 0/6); b: 2/3 + 0.5; c: (0.5 - 1/6) + 1; z (query p, run 0 lacks it):
    # 1 + (0.5 + 1/2)
    assert got["q"] == pytest.approx({"a": 1.5, "b": 2 / 3 + 0.5, "c": 0.5 - 1 / 6 + 1})
    assert got["p"] == pytest.approx({"z": 2.0})


def test_ties_and_first_occurrence():
    """Tied input scores rank in input order; tied fused scores by first occurrence."""
    r0 = _frame([("q", "b", 1.0), ("q", "a", 1.0)])  # b before a: input order
    r1 = _frame([("q", "c", 1.0), ("q", "d", 1.0)])
    fused = preval.fuse([r0, r1], "rrf").collect()
    # b and c tie at 1/61, a and d at 1/62: run 0's first
    assert fused["doc"].to_list() == ["b", "c", "a", "d"]


def test_query_in_one_run_only():
    """A query missing from a run is fused from the runs that have it (ranx refuses)."""
    r0 = _frame([("q1", "a", 1.0), ("q2", "x", 3.0)])
    r1 = _frame([("q1", "a", 2.0)])
    got = _as_dict(preval.fuse([r0, r1], "comb_mnz", norm="none").collect())
    assert got == {"q1": {"a": 6.0}, "q2": {"x": 3.0}}


def test_condorcet_majority():
    """Three runs: a above b in two of them, b above c in two, a above c in all: a, b, c with
    scores 3, 2, 1 (c candidates down to 1, as ranx)."""
    runs = [
        _frame([("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)]),
        _frame([("q", "b", 3.0), ("q", "a", 2.0), ("q", "c", 1.0)]),
        _frame([("q", "a", 3.0), ("q", "c", 2.0), ("q", "b", 1.0)]),
    ]
    fused = preval.fuse(runs, "condorcet").collect()
    assert fused["doc"].to_list() == ["a", "b", "c"]
    assert fused["score"].to_list() == [3.0, 2.0, 1.0]


def test_weights_and_params():
    r0, r1 = _frame([("q", "a", 1.0), ("q", "b", 0.0)]), _frame([("q", "b", 1.0)])
    fused = preval.fuse([r0, r1], "wsum", norm="none", weights=[0.3, 0.7]).collect()
    assert _as_dict(fused)["q"] == pytest.approx({"a": 0.3, "b": 0.7})
    k10 = _as_dict(preval.fuse([r0, r1], "rrf", k=10).collect())
    assert k10["q"]["b"] == pytest.approx(1 / 12 + 1 / 11)
    # ranx's spelling: params={...} holding the weights too
    ranx_style = preval.fuse([r0, r1], "wsum", norm="none", params={"weights": [0.3, 0.7]})
    assert ranx_style.collect().equals(fused)
    assert preval.fuse([r0, r1], "rrf", params={"k": 10}).collect()["score"][0] == max(
        k10["q"].values()
    )


def test_bad_requests():
    run = _frame([("q", "a", 1.0)])
    with pytest.raises(InputError, match=r"unknown fusion method 'rff'.*'rrf'"):
        preval.fuse([run], "rff")
    with pytest.raises(InputError, match="unknown normalisation"):
        preval.fuse([run], "rrf", norm="minmax")
    with pytest.raises(InputError, match="takes no parameter 'phi'"):
        preval.fuse([run], "rrf", phi=0.5)
    with pytest.raises(InputError, match="takes no weights"):
        preval.fuse([run], "rrf", weights=[1.0])
    with pytest.raises(InputError, match="2 weights for 1 runs"):
        preval.fuse([run], "wsum", weights=[1.0, 2.0])


def test_bad_data():
    dup = _frame([("q", "a", 1.0), ("q", "a", 2.0)])
    with pytest.raises(DuplicateError, match=r"repeat a \(query, doc\).*doc 'a'"):
        preval.fuse([dup], "rrf").collect()
    # the run that repeats the pair is named, not only "one run"
    clean = _frame([("q", "a", 1.0)])
    with pytest.raises(DuplicateError, match=r"pair in run dup \("):
        preval.fuse({"clean": clean, "dup": dup}, "rrf").collect()
    kept = preval.fuse([dup], "comb_sum", norm="none", duplicates="max").collect()
    assert kept["score"].to_list() == [2.0]
    first = preval.fuse([dup], "comb_sum", norm="none", duplicates="first").collect()
    assert first["score"].to_list() == [1.0]
    nan = _frame([("q", "a", float("nan"))])
    with pytest.raises(InvalidValueError, match="'score' is NaN in 1 rows"):
        preval.fuse([nan], "rrf").collect()
    with pytest.raises(InvalidValueError, match="'doc' is null"):
        preval.fuse([pl.DataFrame({"query": ["q"], "doc": [None], "score": [1.0]})]).collect()
    nulls = pl.DataFrame({"query": ["q", "q"], "doc": ["a", "b"], "score": [1.0, None]})
    assert preval.fuse([nulls]).collect()["doc"].to_list() == ["a"]  # null: not retrieved


def test_lazy_and_named_columns(tmp_path):
    """Building the plan reads nothing; the caller's column names come back."""
    path = tmp_path / "run.parquet"
    _frame([("q", "a", 1.0)]).rename({"query": "qid", "doc": "pid"}).write_parquet(path)
    plan = preval.fuse([path, path], "comb_sum", query="qid", doc="pid", with_rank=False)
    assert isinstance(plan, pl.LazyFrame)
    path.unlink()  # nothing was read when the plan was built (the schema was, above)
    assert plan.collect_schema().names() == ["qid", "pid", "score"]


def test_trec_files_and_system():
    bm25, hybrid = ROOT / "fixtures/trec/bm25.run", ROOT / "fixtures/trec/hybrid.run.gz"
    fused = preval.fuse([bm25, hybrid], "rrf", system="rrf").collect()
    assert fused.columns == ["query", "doc", "score", "rank", "system"]
    assert fused["query"].is_sorted()
    # the fused run is evaluated like any run
    per_query = preval.evaluate(fused, ["nDCG@10"], qrels=ROOT / "fixtures/trec/qrels.txt")
    assert per_query.collect().height > 0


def test_core_functions_for_other_modules():
    """`stack` + `apply` (what tuning and the supervised methods build on) give `fuse`."""
    runs = case_runs("ties3")
    stacked = core.stack(runs)
    assert stacked.runs == 3
    schema = stacked.frame.collect_schema()
    assert schema["run"] == pl.UInt32 and schema["rank"] == pl.UInt32
    assert schema["score"] == pl.Float64
    direct = core.apply(stacked.frame, "comb_mnz", norm="min-max", runs=3).collect()
    assert direct.equals(preval.fuse(runs, "comb_mnz").collect())


def test_aliases_of_ranx():
    runs = case_runs("ties2")
    a = preval.fuse(runs, "mnz").collect()
    assert a.equals(preval.fuse(runs, "comb_mnz").collect())


def _ranx_sum(values):
    total = 0
    for v in values:
        total += v
    return total


def test_sums_in_run_order():
    """Three runs whose RRF terms sum to different doubles in different orders: ranx adds in run
    order, and so does preval (a tie in exact arithmetic is no tie in either)."""
    r = [_frame([("q", "x", 3.0), ("q", "y", 1.0), ("q", "z", 2.0)]),
         _frame([("q", "y", 3.0), ("q", "z", 2.0), ("q", "x", 1.0)]),
         _frame([("q", "z", 3.0), ("q", "x", 2.0), ("q", "y", 1.0)])]  # fmt: skip
    got = _as_dict(preval.fuse(r, "rrf").collect())["q"]
    assert got["x"] == _ranx_sum([1 / 61, 1 / 63, 1 / 62])
    assert got["y"] == _ranx_sum([1 / 63, 1 / 61, 1 / 63])
    assert math.isclose(got["z"], 1 / 62 + 1 / 62 + 1 / 61)


def test_cli_fuse(tmp_path):
    out = tmp_path / "fused.run"
    cmd = [sys.executable, "-m", "preval", "fuse", "fixtures/trec/bm25.run",
           "fixtures/trec/hybrid.run.gz", "--method", "comb_mnz", "--norm", "min-max",
           "-o", str(out)]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    first = lines[0].split()
    assert len(first) == 6 and first[1] == "Q0" and first[3] == "1" and first[5] == "comb_mnz"
    expected = preval.fuse(
        [ROOT / "fixtures/trec/bm25.run", ROOT / "fixtures/trec/hybrid.run.gz"], "comb_mnz"
    ).collect()
    assert len(lines) == expected.height
    table = tmp_path / "fused.parquet"
    cmd[-1] = str(table)
    assert subprocess.run(cmd, cwd=ROOT, capture_output=True, check=False).returncode == 0
    assert pl.read_parquet(table).select("query", "doc").equals(expected.select("query", "doc"))
    bad = subprocess.run([*cmd[:5], "--method", "rff", "-o", str(out)], cwd=ROOT,
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert bad.returncode == 2 and "unknown fusion method 'rff'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    listing = subprocess.run([sys.executable, "-m", "preval", "fuse", "--list"], cwd=ROOT,
                             capture_output=True, text=True, check=False)  # fmt: skip
    assert listing.returncode == 0
    assert all(name in listing.stdout for name in [*RANX_METHODS, *RANX_NORMS])


class _Spy:
    """A function that counts its calls."""

    def __init__(self, function):
        self.function, self.calls = function, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.function(*args, **kwargs)


def test_out_of_core_equals_in_memory(tmp_path, monkeypatch):
    """Spilled into buckets by query and merged back, the fused run is the in-memory one."""
    runs = [ROOT / "fixtures/trec/bm25.run", ROOT / "fixtures/trec/hybrid.run.gz"]
    whole, spilled = tmp_path / "whole.run", tmp_path / "spilled.run"
    n = writers.fuse_to(runs, whole, "comb_mnz", norm="min-max")
    assert writers.fuse_to(runs, spilled, "comb_mnz", norm="min-max", buckets=5) == n
    assert whole.read_text() == spilled.read_text()
    # buckets larger than a piece are divided again when read back (parts of a bucket)
    monkeypatch.setattr(writers, "BUCKET_ROWS", 5_000)
    divided = tmp_path / "divided.run"
    writers.fuse_to(runs, divided, "comb_mnz", norm="min-max", buckets=2)
    assert divided.read_text() == whole.read_text()
    divided.unlink()
    # many parts merged a few at a time, through files, give the same run
    monkeypatch.setattr(writers, "MERGE_FAN_IN", 2)
    writers.fuse_to(runs, divided, "comb_mnz", norm="min-max", buckets=7)
    assert divided.read_text() == whole.read_text()
    divided.unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spilled.run", "whole.run"]
    # a limit below what the process takes beside its data is refused before any work
    small = tmp_path / "small.parquet"
    with pytest.raises(InputError, match="within the memory limit of 0 MB"):
        writers.fuse_to(runs, small, "rrf", memory_limit=100_000, tmp_dir=tmp_path)
    assert not small.exists()
    # runs too large for the budget (here: 4 MB of data, pieces of 1,000 rows at least) take
    # the spilled path by themselves
    monkeypatch.setattr(writers, "DEFAULT_MEMORY_LIMIT", 4 * 2**20)
    monkeypatch.setattr(writers, "MIN_CHUNK_ROWS", 1_000)
    monkeypatch.setattr(writers, "spilled_buckets", spied := _Spy(writers.spilled_buckets))
    writers.fuse_to(runs, small, "rrf", tmp_dir=tmp_path)
    assert spied.calls == 1
    expected = preval.fuse(runs, "rrf").collect()
    assert pl.read_parquet(small).equals(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "small.parquet",
        "spilled.run",
        "whole.run",
    ]


def test_a_memory_limit_below_the_floor_is_refused_before_any_run_is_read(
    tmp_path, monkeypatch, capsys
):
    """`preval fuse --memory-limit` and `fuse_to(memory_limit=)` take the engines' floor
    (`engines.budget.base`: BASE_RSS, and TEXT_RSS for text runs): a limit below it is one
    line, before a run is read (`core.stack` is never called)."""
    from preval.cli import main
    from preval.engines import budget

    runs = [ROOT / "fixtures/trec/bm25.run", ROOT / "fixtures/trec/hybrid.run.gz"]
    out = tmp_path / "fused.parquet"
    monkeypatch.setattr(core, "stack", stack := _Spy(core.stack))
    for limit in (1, 2**20, budget.base(True)):  # (TREC runs are text: 448 MB)
        with pytest.raises(InputError) as refused:
            writers.fuse_to(runs, out, "rrf", memory_limit=limit)
        (line,) = str(refused.value).splitlines()
        assert f"it needs at least {budget.base(True) // 2**20} MB" in line, line
    for limit in (0, -1):
        with pytest.raises(InputError, match="memory_limit must be a positive number"):
            writers.fuse_to(runs, out, "rrf", memory_limit=limit)
    code = main(["fuse", *map(str, runs), "-o", str(out), "--memory-limit", "1MB"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == (
        "preval: error: these runs cannot be evaluated within the memory limit of 1 MB "
        "(--memory-limit, or what ulimit -v leaves after the 1.0 GB of address space Polars "
        "reserves): it needs at least 448 MB; nothing was written, raise the limit\n"
    )
    assert stack.calls == 0
    assert list(tmp_path.iterdir()) == []
    # Parquet runs are no text: the floor is BASE_RSS alone, and above it they fuse
    monkeypatch.undo()
    tables = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for table, scores in zip(tables, ([3.0, 2.0, 1.0], [1.0, 2.0, 3.0]), strict=True):
        pl.DataFrame({"query": ["q"] * 3, "doc": ["x", "y", "z"], "score": scores}).write_parquet(
            table
        )
    with pytest.raises(InputError, match=f"needs at least {budget.BASE_RSS // 2**20} MB"):
        writers.fuse_to(tables, out, "rrf", memory_limit=budget.BASE_RSS)
    assert writers.fuse_to(tables, out, "rrf", memory_limit=budget.BASE_RSS + 2**26) == 3
    assert pl.read_parquet(out).equals(preval.fuse(tables, "rrf").collect())


def test_failed_write_leaves_nothing(tmp_path):
    """A fusion that fails while writing (a duplicate found mid-plan) leaves no file behind."""
    dup = tmp_path / "dup.csv"
    dup.write_text("query,doc,score\nq,a,1\nq,a,2\n")
    target = tmp_path / "fused.run"
    with pytest.raises(DuplicateError):
        writers.fuse_to([dup], target, "rrf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dup.csv"]


def test_docs_table_is_generated_from_the_registry():
    page = (ROOT / "docs" / "fusion.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- fusion:begin -->\n(.*?)\n<!-- fusion:end -->", page, re.S)
    assert table and table.group(1) == core.markdown_table()
