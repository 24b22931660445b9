"""Per-query parity with pytrec_eval (trec_eval 9.x) on random data with heavy ties.

The data forces what trips evaluators up: tied scores (few distinct values, plus float64
values that collide as float32), graded labels, unjudged retrieved documents, judged
documents nobody retrieved, queries without a relevant document, judged queries a system did
not answer and run queries without judgments. Labels stay >= 0 (pytrec_eval has been seen to
hang on negative grades with nDCG), and every pytrec_eval call runs in a worker process with
a timeout.
"""

from __future__ import annotations

import concurrent.futures as cf
import random

import polars as pl
import pytest

import preval

pytrec_eval = pytest.importorskip("pytrec_eval")

# preval name -> pytrec_eval name
MEASURES = {
    "AP": "map",
    "AP@5": "map_cut_5",
    "AP@100": "map_cut_100",
    "RR": "recip_rank",
    "Rprec": "Rprec",
    "P@5": "P_5",
    "P@10": "P_10",
    "P@30": "P_30",
    "R@5": "recall_5",
    "R@100": "recall_100",
    "nDCG@5": "ndcg_cut_5",
    "nDCG@10": "ndcg_cut_10",
    "nDCG": "ndcg",
    "Success@1": "success_1",
    "Success@10": "success_10",
    "NumRet": "num_ret",
    "NumRel": "num_rel",
    "NumRelRet": "num_rel_ret",
}
SYSTEMS = ("bm25", "dense")


def _pytrec(qrels: dict, run: dict, level: int) -> dict:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()), relevance_level=level)
    return evaluator.evaluate(run)


@pytest.fixture(scope="module")
def peer():
    with cf.ProcessPoolExecutor(max_workers=1) as pool:

        def call(qrels: dict, run: dict, level: int) -> dict:
            return pool.submit(_pytrec, qrels, run, level).result(timeout=120)

        yield call


def make_case(seed: int, int_ids: bool = False):
    rnd = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    rows = []
    n_queries = rnd.randint(1, 12)
    for q in range(n_queries):
        qid = str(100 + q) if int_ids else f"q{q}"
        if rnd.random() < 0.85:  # some run queries have no judgments at all
            pool_size = rnd.randint(1, 15)
            labels = [0, 0, 0, 1, 2, 3] if rnd.random() < 0.9 else [0]  # some R = 0
            qrels[qid] = {
                _doc(d, int_ids): rnd.choice(labels) for d in rnd.sample(range(40), pool_size)
            }
        for system in SYSTEMS:
            if rnd.random() < 0.15:  # this system does not answer this query
                continue
            ties = rnd.choice([(0.5,), (0.1, 0.2, 0.3), None])
            for d in rnd.sample(range(40), rnd.randint(1, 25)):
                if ties:
                    score = rnd.choice(ties)
                elif rnd.random() < 0.2:
                    score = 0.1 + rnd.choice([0.0, 1e-12])  # equal as float32 only
                else:
                    score = round(rnd.uniform(-5, 5), 3)
                rows.append((system, qid, _doc(d, int_ids), score))
    run = pl.DataFrame(rows, schema=["system", "query", "doc", "score"], orient="row")
    judgments = [(q, d, lab) for q, docs in qrels.items() for d, lab in docs.items()]
    qrels_df = pl.DataFrame(judgments, schema=["query", "doc", "label"], orient="row")
    if int_ids:
        run = run.with_columns(pl.col("query", "doc").cast(pl.Int64))
        qrels_df = qrels_df.with_columns(pl.col("query", "doc").cast(pl.Int64))
    return qrels, rows, run, qrels_df


def _doc(d: int, int_ids: bool) -> str:
    return str(d + 1) if int_ids else f"d{d:02d}"


def joined_table(run: pl.DataFrame, qrels: pl.DataFrame) -> pl.DataFrame:
    """One table per system: retrieved rows with their labels + judged rows not retrieved."""
    systems = run.select("system").unique()
    judged = systems.join(qrels, how="cross")
    return run.join(judged, on=["system", "query", "doc"], how="full", coalesce=True)


def expected(peer, qrels: dict, rows: list, level: int) -> dict[tuple[str, str], dict]:
    out = {}
    for system in SYSTEMS:
        run: dict[str, dict[str, float]] = {}
        for s, q, d, score in rows:
            if s == system:
                run.setdefault(q, {})[d] = score
        for q, vals in peer(qrels, run, level).items():
            out[(system, q)] = {m: vals[t] for m, t in MEASURES.items()}
    return out


def assert_same(got: pl.DataFrame, want: dict, query_col: str = "query") -> None:
    rows = {(r["system"], str(r[query_col])): r for r in got.iter_rows(named=True)}
    assert sorted(rows) == sorted(want)
    for key, values in want.items():
        for m, v in values.items():
            assert rows[key][m] == pytest.approx(v, abs=1e-9), (key, m)


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("level", [1, 2])
def test_run_and_qrels_match_pytrec_eval(peer, seed: int, level: int) -> None:
    qrels, rows, run, qrels_df = make_case(seed)
    want = expected(peer, qrels, rows, level)
    got = preval.evaluate(
        run,
        list(MEASURES),
        qrels=qrels_df,
        by="system",
        relevance_level=level,
        queries="retrieved",
    ).collect()
    assert_same(got, want)


@pytest.mark.parametrize("seed", range(25))
def test_joined_table_matches_pytrec_eval(peer, seed: int) -> None:
    qrels, rows, run, qrels_df = make_case(seed)
    want = expected(peer, qrels, rows, 1)
    table = joined_table(run, qrels_df)
    got = preval.evaluate(table, list(MEASURES), by="system", queries="retrieved").collect()
    assert_same(got, want)


@pytest.mark.parametrize("seed", range(10))
def test_integer_ids_match_pytrec_eval_on_their_string_form(peer, seed: int) -> None:
    qrels, rows, run, qrels_df = make_case(seed, int_ids=True)
    want = expected(peer, qrels, rows, 1)
    got = preval.evaluate(
        run, list(MEASURES), qrels=qrels_df, by="system", queries="retrieved"
    ).collect()
    assert_same(got, want)


@pytest.mark.parametrize("seed", range(15))
def test_judged_mode_adds_unanswered_judged_queries_as_zeros(peer, seed: int) -> None:
    # trec_eval -c (pytrec_eval has no -c): the answered queries keep pytrec_eval's values; every
    # other judged query scores 0 with NumRel = R; summaries are the means and sums.
    qrels, rows, run, qrels_df = make_case(seed)
    want = expected(peer, qrels, rows, 1)
    for system in SYSTEMS:
        for q, docs in qrels.items():
            if (system, q) not in want:
                zeros = dict.fromkeys(MEASURES, 0.0)
                zeros["NumRel"] = float(sum(lab >= 1 for lab in docs.values()))
                want[(system, q)] = zeros
    want = {k: v for k, v in want.items() if k[0] in set(run["system"])}
    for table_form in (False, True):
        if table_form:
            got = preval.evaluate(joined_table(run, qrels_df), list(MEASURES), by="system")
        else:
            got = preval.evaluate(run, list(MEASURES), qrels=qrels_df, by="system")
        df = got.collect()
        assert_same(df, want)
        summary = preval.summarize(got).collect()
        for row in summary.iter_rows(named=True):
            mine = [v for k, v in want.items() if k[0] == row["system"]]
            assert row["NumQ"] == len(mine)
            for m in MEASURES:
                col = [v[m] for v in mine]
                agg = sum(col) if m.startswith("Num") else sum(col) / len(col)
                assert row[m] == pytest.approx(agg, abs=1e-9), m
