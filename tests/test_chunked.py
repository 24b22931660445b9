"""The chunked engine (issue 5): identical results to one plan, and grouping is checked."""

from __future__ import annotations

import importlib
import re
import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import preval
from tests.profiles import examples
from tests.test_properties import MEASURES, cases, frames, joined

chunks = importlib.import_module("preval.engines.chunked")
checks = importlib.import_module("preval.engines.checks")
judgments = importlib.import_module("preval.engines.judgments")
presort = importlib.import_module("preval.engines.presort")
partitioned = importlib.import_module("preval.engines.partitioned")
reading = importlib.import_module("preval.engines.reading")
build_plan = importlib.import_module("preval").plan
build = importlib.import_module("preval.planner").build
Hints = importlib.import_module("preval.options").Hints

ROOT = Path(__file__).resolve().parents[1]
PARQUET = ROOT / "fixtures" / "example.parquet"


def outputs(plan) -> list[pl.DataFrame]:
    """Everything a caller reads from an evaluation: per-query (both forms), audit, summary."""
    per_query = plan.per_query(answered="_answered")
    return pl.collect_all(
        [per_query, plan.per_query("long"), plan.audit(), preval.summarize(plan.per_query())]
    )


def assert_same(chunked, whole) -> None:
    for got, want in zip(outputs(chunked), outputs(whole), strict=True):
        assert got.equals(want), (got, want)


def systems(run: pl.DataFrame) -> pl.DataFrame:
    """Two systems, each grouped by query: s2 is s1 with its scores reversed."""
    return pl.concat(
        [
            run.with_columns(system=pl.lit("s1")),
            run.with_columns(system=pl.lit("s2"), score=-pl.col("score")),
        ]
    )


@settings(max_examples=examples(50), deadline=None)
@given(
    case=cases(),
    chunk_rows=st.integers(1, 9),
    depth=st.sampled_from([None, 2]),
    judged_only=st.booleans(),
    queries=st.sampled_from(["judged", "retrieved"]),
    ties=st.sampled_from(["trec", "input"]),
    two_systems=st.booleans(),
)
def test_chunked_equals_one_plan(
    case, chunk_rows, depth, judged_only, queries, ties, two_systems
) -> None:
    # Chunks of 1-9 rows cut most queries across chunk boundaries: the carried tail must make
    # every query whole again, in both input shapes, with and without systems.
    run_rows, qrels = case
    run, qrels_df = frames(run_rows, qrels)
    table = joined(run_rows, qrels).sort("query", maintain_order=True)  # grouped by query
    options = {"depth": depth, "judged_only": judged_only, "queries": queries, "ties": ties}
    by = "system" if two_systems else None
    if two_systems:
        run, table = systems(run), systems(table)
    for data, q in ((run, qrels_df), (table, None)):
        plan = build_plan(data, MEASURES, qrels=q, by=by, **options)
        chunked = chunks.collect_chunked(plan, chunk_rows=chunk_rows)
        assert_same(chunked, plan)


def test_chunked_on_the_example_equals_one_plan() -> None:
    plan = build_plan(PARQUET, ["AP", "nDCG@10", "P@5", "RR", "NumRet"], by="system")
    assert_same(chunks.collect_chunked(plan, chunk_rows=1000), plan)
    assert_same(preval.engines.collect(plan, "chunked"), plan)
    for workers in (1, 3):  # chunks evaluated one at a time, or three at once
        assert_same(chunks.collect_chunked(plan, chunk_rows=1000, workers=workers), plan)


def test_chunked_qrels_with_unanswered_queries_and_a_query_attribute() -> None:
    # q3 is judged but no system answered it; s2 did not answer q2; 'topic' is in the qrels,
    # so it describes the query (joined on), while 'system' is not (each system separately).
    run = pl.DataFrame(
        {
            "system": ["s1", "s1", "s1", "s2"],
            "topic": ["a", "a", "b", "a"],
            "query": ["q1", "q1", "q2", "q1"],
            "doc": ["d1", "d2", "d1", "d2"],
            "score": [2.0, 1.0, 1.0, 3.0],
        }
    )
    qrels = pl.DataFrame(
        {
            "topic": ["a", "a", "b", "b"],
            "query": ["q1", "q1", "q2", "q3"],
            "doc": ["d1", "d2", "d1", "d9"],
            "label": [1, 0, 1, 2],
        }
    )
    evaluated = {}
    for queries in ("judged", "retrieved"):
        plan = build_plan(run, ["AP", "NumRet", "NumRel"], qrels=qrels, by=["system", "topic"],
                          queries=queries)  # fmt: skip
        chunked = chunks.collect_chunked(plan, chunk_rows=1)
        assert_same(chunked, plan)
        per_query = chunked.per_query().collect()
        evaluated[queries] = per_query.select("system", "query").rows()
    # judged: every system on every judged query (3 x 2); retrieved: what each one answered
    assert len(evaluated["judged"]) == 6
    assert evaluated["retrieved"] == [("s1", "q1"), ("s1", "q2"), ("s2", "q1")]


def test_chunked_compares_ids_of_different_types() -> None:
    run = pl.DataFrame({"query": [1, 1, 2], "doc": [5, 6, 5], "score": [1.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query": ["1", "2", "3"], "doc": ["5", "5", "7"], "label": [1, 1, 1]})
    plan = build_plan(run, ["AP", "NumRel"], qrels=qrels)
    assert_same(chunks.collect_chunked(plan, chunk_rows=2), plan)


def test_rows_not_grouped_within_a_chunk() -> None:
    table = pl.DataFrame(
        {
            "query": ["q1", "q2", "q1"],
            "doc": ["d1", "d1", "d2"],
            "score": [1.0, 1.0, 2.0],
            "label": [1, 0, 0],
        }
    )
    plan = build_plan(table, ["AP"])
    with pytest.raises(checks.NotGroupedError, match=r"query='q1'") as info:
        chunks.collect_chunked(plan, chunk_rows=10)
    assert "not grouped by (query)" in str(info.value)
    assert "--engine partitioned" in str(info.value)  # what to do about it
    assert isinstance(info.value, preval.InputError)


def test_rows_not_grouped_within_a_chunk_raise_at_that_chunk() -> None:
    # q1's rows are split inside the first chunk: the error comes before the rest is read (the
    # check across chunks would see it too, but only at the end; then `--engine auto` falls
    # back to the streaming engine after a useless pass)
    split = pl.DataFrame({"query": ["q1", "q1", "q2", "q1"], "doc": ["d1", "d3", "d1", "d2"],
                          "score": [1.0, 3.0, 1.0, 2.0], "label": [1, 0, 0, 1]})  # fmt: skip
    rest = pl.DataFrame({"query": [f"r{i // 3:03d}" for i in range(300)],
                         "doc": [f"d{i}" for i in range(300)],
                         "score": [float(i % 7) for i in range(300)],
                         "label": [i % 2 for i in range(300)]})  # fmt: skip
    for order in ("unranked", "ranked"):
        table = pl.concat([split, rest])
        if order == "ranked":
            table = table.with_columns(score=-pl.int_range(pl.len()).cast(pl.Float64))
        plan = build_plan(table, ["AP"])
        read: list[int] = []
        with pytest.raises(checks.NotGroupedError, match=r"query='q1'"):
            chunks.collect_chunked(plan, chunk_rows=7, progress=read.append)
        assert not read, order  # not even the first chunk's status was kept


def test_rows_not_grouped_across_chunks() -> None:
    # q1 comes back after q2, in another chunk: only the cross-chunk check can see it
    table = pl.DataFrame(
        {
            "system": ["s"] * 4,
            "query": ["q1", "q1", "q2", "q1"],
            "doc": ["d1", "d2", "d1", "d3"],
            "score": [1.0, 2.0, 1.0, 3.0],
            "label": [1, 0, 0, 1],
        }
    )
    plan = build_plan(table, ["AP"], by="system")
    with pytest.raises(checks.NotGroupedError, match=r"system='s', query='q1'"):
        chunks.collect_chunked(plan, chunk_rows=2)


def test_bad_data_raises_the_same_error_in_chunks() -> None:
    table = pl.DataFrame(
        {
            "query": ["q1", "q2", "q2"],
            "doc": ["d1", "d1", "d1"],
            "score": [1.0, 2.0, 3.0],
            "label": [1, 0, 1],
        }
    )
    plan = build_plan(table, ["AP"])
    with pytest.raises(preval.DuplicateError) as whole:
        plan.status.collect()
    with pytest.raises(preval.DuplicateError) as chunked:
        chunks.collect_chunked(plan, chunk_rows=1)
    # the same words, the count said to be the chunk's (q2's rows: the second chunk)
    scope = " (counted over the queries of input rows 2-3, where the chunked engine stopped)"
    assert str(chunked.value) == str(whole.value) + scope


def test_bad_data_in_two_chunks_raises_the_first_chunks_error() -> None:
    # chunks run concurrently; the error reported is still the first bad chunk's
    table = pl.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q3", "q3", "q4"],
            "doc": ["d1", "d1", "d5", "d7", "d7", "d8"],
            "score": [1.0, 2.0, 1.0, 1.0, 2.0, 1.0],
            "label": [1, 0, 1, 1, 0, 1],
        }
    )
    plan = build_plan(table, ["AP"])
    for workers in (1, 2, 3):
        with pytest.raises(preval.DuplicateError, match="'d1'") as error:
            chunks.collect_chunked(plan, chunk_rows=2, workers=workers)
        assert "d7" not in str(error.value)


def test_empty_input_in_chunks() -> None:
    empty = pl.DataFrame(
        schema={"query": pl.String, "doc": pl.String, "score": pl.Float64, "label": pl.Int64}
    )
    plan = build_plan(empty, ["AP"])
    assert_same(chunks.collect_chunked(plan), plan)
    qrels = pl.DataFrame({"query": ["q1"], "doc": ["d1"], "label": [1]})
    plan = build_plan(empty.drop("label"), ["AP"], qrels=qrels)
    chunked = chunks.collect_chunked(plan)
    assert_same(chunked, plan)
    assert chunked.per_query().collect()["AP"].to_list() == [0.0]  # judged, nothing retrieved


def test_progress_reports_rows_read() -> None:
    table = pl.read_parquet(PARQUET)
    seen: list[int] = []
    plan = build_plan(table, ["AP"], by="system")
    chunks.collect_chunked(plan, progress=seen.append, chunk_rows=5000)
    assert seen == sorted(seen) and len(seen) > 1
    assert seen[-1] == table.height


def test_spill_files_are_removed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    plan = build_plan(PARQUET, ["AP"], by="system")
    chunked = chunks.collect_chunked(plan, chunk_rows=5000)
    assert len(list(tmp_path.glob("preval-*/*.parquet"))) > 1  # spilled while in use
    chunked.per_query().collect()
    del chunked
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=examples(60), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["s1", "s2"]),
            st.sampled_from(["q1", "q2", "q3"]),
            st.sampled_from(["d1", "d2", "d3"]),
            st.floats(-3, 3),
        ),
        max_size=14,
    ),
    chunk_rows=st.integers(1, 6),
)
def test_chunked_raises_exactly_when_rows_are_not_grouped(rows, chunk_rows) -> None:
    # Any order of rows: the chunked engine either gives one plan's results or says the rows
    # are not grouped, and it says so only when a (system, query) group really is split.
    chunked_or_not_grouped(rows, ["system", "query"], chunk_rows)


def chunked_or_not_grouped(rows: list[tuple], group: list[str], chunk_rows: int) -> None:
    """`rows` (group ids..., doc, score): the chunked engine gives one plan's results exactly
    when each group's rows are together, and raises NotGroupedError otherwise."""
    names = [*group, "doc", "score"]
    schema = {c: pl.Float64 if c == "score" else pl.String for c in names}
    table = pl.DataFrame(rows, schema=schema, orient="row").unique(
        [*group, "doc"], keep="first", maintain_order=True
    )
    table = table.with_columns(label=(pl.col("score") > 0).cast(pl.Int64))
    keys = list(zip(*(table[c] for c in group), strict=True))
    runs = [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]
    plan = build_plan(table, ["AP", "P@2", "NumRet"], by=group[:-1] or None)
    if len(runs) == len(set(runs)):
        assert_same(chunks.collect_chunked(plan, chunk_rows=chunk_rows), plan)
    else:
        with pytest.raises(checks.NotGroupedError):
            chunks.collect_chunked(plan, chunk_rows=chunk_rows)


def ranked(table: pl.DataFrame, ties: str) -> pl.DataFrame:
    """The rows in ranking order within each query, as a TREC run or a pipeline writes them."""
    if ties == "trec":
        keys, desc = [pl.col("score").cast(pl.Float32), "doc"], [True, True]
    else:
        keys, desc = ["score"], [True]
    return table.sort(["query", *keys], descending=[False, *desc], nulls_last=True,
                      maintain_order=True)  # fmt: skip


@settings(max_examples=examples(50), deadline=None)
@given(
    case=cases(),
    chunk_rows=st.integers(1, 9),
    ties=st.sampled_from(["trec", "input"]),
    depth=st.sampled_from([None, 2]),
    judged_only=st.booleans(),
)
def test_ranked_input_skips_the_sort_and_gives_the_same_results(
    case, chunk_rows, ties, depth, judged_only
) -> None:
    run_rows, qrels = case
    run, qrels_df = frames(run_rows, qrels)
    table = joined(run_rows, qrels)
    options = {"ties": ties, "depth": depth, "judged_only": judged_only}
    for data, q in ((ranked(run, ties), qrels_df), (ranked(table, ties), None)):
        plan = build_plan(data, MEASURES, qrels=q, **options)
        assert plan.in_rank_order.collect().item()  # so every chunk takes the presorted plan
        assert_same(chunks.collect_chunked(plan, chunk_rows=chunk_rows), plan)
        presorted = build(data, plan.recipe, Hints(presorted=True))
        assert_same(presorted, plan)


@pytest.mark.parametrize(
    ("scores", "docs", "ties", "expected"),
    [
        ([0.7, 0.5, None], ["d1", "d2", "d3"], "trec", True),  # unretrieved (null) last
        ([0.5, 0.7], ["d1", "d2"], "trec", False),
        ([None, 0.5], ["d1", "d2"], "trec", False),
        ([0.5, 0.5], ["d2", "d1"], "trec", True),  # trec_eval: equal scores, doc id descending
        ([0.5, 0.5], ["d1", "d2"], "trec", False),
        ([0.5, 0.5], ["d1", "d2"], "input", True),  # input order breaks the tie
        ([0.1 + 1e-12, 0.1], ["d1", "d2"], "trec", False),  # equal as float32: doc order rules
        ([0.1 + 1e-12, 0.1], ["d1", "d2"], "input", True),
    ],
)
def test_in_rank_order(scores, docs, ties, expected) -> None:
    other = {"query": ["q0"], "doc": ["d9"], "score": [9.0], "label": [1]}  # another query first
    table = pl.concat(
        [
            pl.DataFrame(other),
            pl.DataFrame({"query": "q1", "doc": docs, "score": scores, "label": 1}),
        ],
        how="vertical_relaxed",
    )
    assert build_plan(table, ["AP"], ties=ties).in_rank_order.collect().item() is expected


def test_no_rank_order_shortcut_where_labels_decide_the_order() -> None:
    table = pl.DataFrame({"query": ["q1"], "doc": ["d1"], "score": [1.0], "label": [1]})
    assert build_plan(table, ["AP"], ties="optimistic").in_rank_order is None
    assert build_plan(table, ["AP"], convention="vlfeat").in_rank_order is None
    assert build_plan(table, ["AP"], duplicates="max").in_rank_order is None


def test_sorted_group_columns_are_flagged_only_when_sorted() -> None:
    # a wrong sorted flag would make Polars group wrongly: it is set only after checking
    frame = pl.DataFrame(
        {
            "system": ["b", "b", "a"],  # grouped, not sorted
            "query": ["q1", "q2", "q3"],  # sorted
            "other": ["x", "y", "z"],  # sorted, but not a group column
            "with_null": [None, "q1", "q2"],  # sorted with nulls first: not flagged
        }
    )
    flags = reading.flag_sorted(frame, ["system", "query", "with_null"])
    assert flags["query"].flags["SORTED_ASC"]
    assert not flags["system"].flags["SORTED_ASC"]
    assert not flags["other"].flags["SORTED_ASC"]
    assert not flags["with_null"].flags["SORTED_ASC"]
    unsorted = pl.DataFrame({"query": ["q2", "q1"]})
    assert reading.flag_sorted(unsorted, ["query"]) is unsorted


# scores where a packed key could go wrong: signed zeros (equal as floats), doubles that are
# one float32, subnormals, infinities, float32 overflow, nulls (not retrieved)
SCORES = st.one_of(
    st.none(),
    st.floats(allow_nan=False),
    st.sampled_from([0.0, -0.0, 0.1, 0.1 + 1e-12, 1e-45, -1e-45, 1e-40, 1e39, -1e39]),
    st.sampled_from([float("inf"), float("-inf"), 3.4e38, -3.4e38, 1.0, -1.0, 2.0]),
)


@settings(max_examples=examples(300), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["s1", "s2"]),
            st.sampled_from(["q1", "q2", "q3"]),
            SCORES,
            st.sampled_from(["d1", "d2", "d10", "d9"]),
        ),
        max_size=40,
    ),
    trec_version=st.sampled_from([9, 10]),
)
def test_packed_sort_key_orders_rows_as_the_plan_sort(rows, trec_version) -> None:
    ranking = importlib.import_module("preval.ranking")
    group = ["_by0", ranking.QUERY]
    schema = {"_by0": pl.String, ranking.QUERY: pl.String, ranking.SCORE: pl.Float64,
              ranking.DOC: pl.String}  # fmt: skip
    # each group's rows contiguous (the packed key's precondition), in no order within it
    frame = pl.DataFrame(rows, schema=schema, orient="row").sort(group, maintain_order=True)
    packed = ranking.packed_sort_keys(group, "trec", has_doc=True, trec_version=trec_version)
    if trec_version == 10:  # scores compared as doubles: no room in 64 bits for the group
        assert packed is None
        return
    order, descending = ranking.sort_keys("trec", has_doc=True, trec_version=trec_version)
    plain = pl.arg_sort_by(
        [*map(pl.col, group), *order], descending=[False, False, *descending], nulls_last=True,
        maintain_order=True,
    )  # fmt: skip
    by, desc = packed
    fast = pl.arg_sort_by(by, descending=desc, maintain_order=True)
    got = frame.select(plain.alias("plain"), fast.alias("packed"))
    assert got["plain"].equals(got["packed"]), frame
    # the chunked engine's sort of the same keys: positions packed into the key's low bits
    # (in 63 bits, always here), or one arg sort when they do not fit (in 40 bits, sometimes)
    keys = frame.select(by[0].alias("key"), by[1].alias("tie"))
    for limit in (63, 40):
        assert presort.permutation(keys, tuple(desc[1:]), limit).equals(got["plain"]), frame


def test_chunked_engine_ranks_unsorted_chunks_with_the_packed_key(monkeypatch) -> None:
    # an unsorted input goes through presort.rank_rows (and gives one plan's results); ranked
    # input and ties the key cannot express do not
    calls = []
    original = presort.rank_rows
    monkeypatch.setattr(chunks, "rank_rows", lambda *a: calls.append(1) or original(*a))
    shuffled = pl.read_parquet(PARQUET).sample(fraction=1, shuffle=True, seed=0)
    table = shuffled.sort("system", "query", maintain_order=True)  # grouped, not ranked
    one = table.filter(system="bm25").drop("system")
    cases = [(one, None, "trec", 9, True), (one, None, "trec", 10, False),
             (one, None, "input", 9, False), (table, "system", "trec", 9, True)]  # fmt: skip
    for data, by, ties, version, expected in cases:
        calls.clear()
        plan = build_plan(data, MEASURES, by=by, ties=ties, trec_version=version)
        assert not plan.in_rank_order.collect().item()
        assert_same(chunks.collect_chunked(plan, chunk_rows=5000), plan)
        assert bool(calls) is expected, (by, ties, version)
    calls.clear()
    in_order = table.sort(
        "system", "query", pl.col("score").cast(pl.Float32), "doc",
        descending=[False, False, True, True], nulls_last=True,
    )  # fmt: skip
    plan = build_plan(in_order, ["AP"], by="system")
    assert plan.in_rank_order.collect().item()
    chunks.collect_chunked(plan, chunk_rows=5000)
    assert not calls
    # measures of the top 2 rows, ~40 rows per query: the top-K plan, which sorts few rows
    plan = build_plan(table, ["P@2", "RR@2"], by="system")
    assert_same(chunks.collect_chunked(plan, chunk_rows=5000), plan)
    assert not calls


@settings(max_examples=examples(200), deadline=None)
@given(
    keys=st.lists(st.tuples(st.sampled_from(["s1", "s2"]), st.sampled_from(["q1", "q2", None])),
                  min_size=1, max_size=30),
    window=st.integers(1, 5),
)  # fmt: skip
def test_last_group_start_looks_back_until_the_run_starts(keys, window) -> None:
    frame = pl.DataFrame(keys, schema={"system": pl.String, "query": pl.String}, orient="row")
    for group in (["query"], ["system", "query"]):
        rows = frame.select(group).rows()
        want = max(i for i in range(len(rows)) if i == 0 or rows[i] != rows[i - 1])
        assert reading.last_group_start(frame, group, window) == want
        assert reading.last_group_start(frame, group) == want


@settings(max_examples=examples(100), deadline=None)
@given(
    judged=st.lists(
        st.tuples(st.sampled_from(["q1", "q2", "q3", "q4"]), st.sampled_from(["d1", "d2", "d3"])),
        max_size=20,
    ),
    asked=st.lists(st.sampled_from(["q1", "q2", "q3", "q5"]), min_size=1, max_size=6),
)
def test_judgments_of_a_chunk_by_binary_search(judged, asked) -> None:
    # the binary search over sorted qrels finds exactly the semi join's rows, in qrels order
    qrels = pl.DataFrame(
        [(q, d, i) for i, (q, d) in enumerate(judged)],
        schema={"query": pl.String, "doc": pl.String, "label": pl.Int64},
        orient="row",
    )
    chunk = pl.DataFrame({"query": asked})
    ordered = judgments.sorted_by(qrels, "query")
    assert ordered["query"].flags["SORTED_ASC"]
    want = ordered.join(chunk.unique(), on="query", how="semi", maintain_order="left")
    assert judgments.judgments_of(ordered, chunk, ["query"]).equals(want)
    assert ordered.equals(qrels.sort("query", "label"))  # stable: labels number the rows


@settings(max_examples=examples(100), deadline=None)
@given(
    judged=st.lists(
        st.tuples(st.sampled_from(["1", "2", "3", "4", None]), st.sampled_from(["d1", "d2"])),
        max_size=20,
    ),
    pieces=st.lists(
        st.lists(st.sampled_from(["1", "2", "3", "5"]), min_size=1, max_size=4), max_size=3
    ),
    as_int=st.booleans(),
)
def test_judgments_found_by_value_left_to_check_are_those_no_piece_held(
    judged, pieces, as_int
) -> None:
    """A piece takes every judgment of its queries (`by_value`), and its plan checks them; the
    last plan checks only the rest (`Judgments.unchecked`): the judgments of queries no piece
    held and those with a null query, each judgment once, whether the ids share a dtype or are
    compared as strings (integer run ids, string qrels ids)."""
    qrels = pl.DataFrame(
        [(q, d, i) for i, (q, d) in enumerate(judged)],
        schema={"query": pl.String, "doc": pl.String, "label": pl.Int64},
        orient="row",
    )
    found = judgments.by_value(qrels, ["query"])
    taken = []
    for asked in pieces:
        ids = [int(q) for q in asked] if as_int else asked
        taken.append(found.of(pl.DataFrame({"query": sorted(ids)})))
    left = pl.concat(list(found.unchecked_pieces()))
    held = {q for asked in pieces for q in asked}
    # (sorted by label: labels number the judgments, so that each is counted once)
    assert left.sort("label").equals(
        qrels.filter(~pl.col("query").is_in(list(held)) | pl.col("query").is_null())
    )
    took = set(pl.concat([qrels.clear(), *taken])["label"])
    assert took.isdisjoint(left["label"])
    assert took.union(left["label"]) == set(range(qrels.height))


@pytest.mark.parametrize("query", ["q1", "q9"])
def test_a_duplicate_judgment_of_an_unanswered_query_is_found_by_the_chunked_engine(
    tmp_path: Path, query: str
) -> None:
    """Without -c the last plan checks only the judgments no chunk held: a duplicate judgment
    of a query no run line answers (q9) is still an error, found by the last plan, and so is
    one of an answered query (q1), found by its chunk's plan."""
    run = pl.DataFrame(
        {
            "query": [f"q{i // 30}" for i in range(240)],
            "doc": [f"d{i}" for i in range(240)],
            "score": [float(i % 7) for i in range(240)],
        }
    )
    qrels = pl.DataFrame(
        {
            "query": [*(f"q{i % 10}" for i in range(100)), query, query],
            "doc": [*(f"d{i}" for i in range(100)), "dup", "dup"],
            "label": [*(i % 2 for i in range(100)), 1, 0],
        }
    )
    plan = build_plan(run, ["AP"], qrels=qrels, queries="retrieved")
    with pytest.raises(preval.PrevalError, match="dup"):
        chunks.collect_chunked(plan, chunk_rows=50).per_query().collect()


def test_presorted_plans_divide_as_the_sorted_plan() -> None:
    # F(beta=2)@3 = 5·P·R / (4·P + R) with P = 1/3, R = 1/2 (trec_eval's order of operations),
    # 0.45454545454545453, which differs in the last bit from a product with the reciprocal of
    # the divisor, 0.4545454545454546 (so did F(beta=0.5)@3 of the former 1.25 / 3.5): Polars took
    # the reciprocal in the presorted plan's groups (two systems, one row each) until
    # ranking._safe_div made the divisor a column of the numerator's length
    run = pl.DataFrame(
        {"system": ["s1", "s2"], "query": ["q2", "q2"], "doc": ["d0", "d0"], "score": [0.0, 0.0]}
    )
    qrels = pl.DataFrame(
        {"query": ["q1", "q2", "q2"], "doc": ["d0", "d0", "d1"], "label": [-1, 1, 1]}
    )
    measure = "F(beta=2)@3"
    base = build_plan(run, [measure], qrels=qrels, by="system")
    plans = [
        base,
        build(run, base.recipe, Hints(presorted=True)),
        build(run, base.recipe, Hints(presorted=True, contiguous=True)),
    ]
    for plan in plans:
        for engine in ("in-memory", "streaming"):
            values = plan.per_query().collect(engine=engine)
            p, r = 1 / 3, 1 / 2
            want = 5.0 * p * r / (4.0 * p + r)
            assert want != 5.0 * p * r * (1 / (4.0 * p + r))
            assert values.filter(query="q2")[measure].to_list() == [want] * 2
    assert_same(chunks.collect_chunked(plans[0], chunk_rows=1), plans[0])


def test_contiguous_groups_are_taken_as_runs() -> None:
    shuffled = pl.read_parquet(PARQUET).sample(fraction=1, shuffle=True, seed=1)
    table = shuffled.sort("system", "query", pl.col("score").cast(pl.Float32), "doc",
                          descending=[False, False, True, True], nulls_last=True)  # fmt: skip
    plan = build_plan(table, MEASURES, by="system")
    runs = build(table, plan.recipe, Hints(presorted=True, contiguous=True))
    assert '"_run"' in runs.status.explain() and '"_run"' not in plan.status.explain()
    assert_same(runs, plan)


@settings(max_examples=examples(100), deadline=None)
@given(
    queries=st.lists(st.sampled_from(["q1", "q2", "q3"]), max_size=25).map(sorted),
    chunk_rows=st.integers(1, 8),
)
def test_reading_by_range_gives_the_chunks_of_the_stream(queries, chunk_rows) -> None:
    # a Parquet file and a frame in memory are read range by range, anything else as a stream;
    # the chunks (whole groups, in input order, every row once) are the same either way
    frame = pl.DataFrame({"query": queries, "row": range(len(queries))}, schema_overrides={
        "query": pl.String, "row": pl.Int64})  # fmt: skip
    streamed = list(reading.chunks_of(frame.lazy(), ["query"], chunk_rows))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.parquet"
        frame.write_parquet(path, row_group_size=3)
        for source in (pl.scan_parquet(path), frame.lazy()):
            by_range = list(reading.chunks_of(source, ["query"], chunk_rows, by_range=True))
            assert [c.to_dicts() for c in by_range] == [c.to_dicts() for c in streamed]
    assert pl.concat([frame.clear(), *streamed]).equals(frame)
    starts = [c["query"][0] for c in streamed]
    assert len(set(starts)) == len(starts)  # a group is never split between chunks


@pytest.mark.parametrize("order", ["unranked", "ranked", "no packed key"])
def test_chunks_are_evaluated_in_one_piece_per_column(monkeypatch, tmp_path, order) -> None:
    # Row groups of 700 rows and chunks of 2000: every chunk is read in pieces, and Polars would
    # copy a column in pieces into one in each per-group aggregation; the plan gets one piece
    table = pl.read_parquet(PARQUET)
    if order == "ranked":
        table = table.sort("system", "query", pl.col("score").cast(pl.Float32), "doc",
                           descending=[False, False, True, True], nulls_last=True)  # fmt: skip
    path = tmp_path / "rows.parquet"
    table.write_parquet(path, row_group_size=700)
    options = {"by": "system", "ties": "input" if order == "no packed key" else None}
    plan = build_plan(path, MEASURES, **options)
    evaluated: list[pl.DataFrame] = []

    def spy(data, recipe, hints=None):
        # the plan whose status is collected: presorted, or told the chunk's rows per query
        if hints is not None and (hints.presorted or hints.rows_per_query is not None):
            evaluated.append(data)
        return build(data, recipe, hints)

    monkeypatch.setattr(chunks, "build", spy)
    assert_same(chunks.collect_chunked(plan, chunk_rows=2000, workers=1), plan)
    assert len(evaluated) >= table.height // 4000
    assert {c[n].n_chunks() for c in evaluated for n in c.columns} == {1}
    read = reading.chunks_of(plan.source, plan.group, 2000, by_range=True)
    pieces = [c[n].n_chunks() for c in read for n in c.columns]
    assert max(pieces) > 1  # the case this test is about


def test_sources_read_by_range(tmp_path: Path) -> None:
    csv = tmp_path / "run.csv"
    pl.read_parquet(PARQUET).write_csv(csv)
    assert preval.io.reads_by_range(PARQUET)
    assert preval.io.reads_by_range(str(PARQUET))
    assert preval.io.reads_by_range(pl.read_parquet(PARQUET))
    assert not preval.io.reads_by_range(csv)
    assert not preval.io.reads_by_range(pl.scan_parquet(PARQUET))  # a plan: no telling
    plan = build_plan(PARQUET, ["AP"], by="system")
    assert plan.source_by_range
    assert not build_plan(csv, ["AP"], by="system").source_by_range


@settings(max_examples=examples(300), deadline=None)
@given(total=st.integers(0, 10**9), chunk_rows=st.integers(1, 10**7), workers=st.integers(1, 4))
def test_balanced_chunks_fill_whole_rounds(total, chunk_rows, workers) -> None:
    size = reading.balanced(total, chunk_rows, workers)
    assert 1 <= size <= chunk_rows
    count = -(-total // size)  # chunks of `size` rows
    rounds = max(1, -(-total // (chunk_rows * workers)))  # rounds with chunks of `chunk_rows`
    assert count <= rounds * workers  # never an extra round
    if total and total >= rounds * workers * (rounds * workers - 1):
        assert count == rounds * workers  # every round full (exactly so from this total on)


def test_chunked_engine_reads_balanced_ranges(monkeypatch) -> None:
    # 1000 rows in chunks of at most 400, two at a time: four chunks of 250 rows, two full
    # rounds (not 400, 400, 200, whose second round leaves a worker idle)
    asked: list[int] = []
    ranges = reading.ranges

    def spy(source, rows):
        asked.append(rows)
        return ranges(source, rows)

    monkeypatch.setattr(reading, "ranges", spy)
    table = pl.DataFrame({"query": [f"q{i // 10:03d}" for i in range(1000)],
                          "score": [float(i % 7) for i in range(1000)],
                          "label": [i % 2 for i in range(1000)]})  # fmt: skip
    plan = build_plan(table, ["AP"])
    assert_same(chunks.collect_chunked(plan, chunk_rows=400, workers=2), plan)
    assert asked == [250]


def test_the_chunked_engines_promises_are_not_public_keywords() -> None:
    # a caller who passed presorted=True on unsorted rows would get wrong numbers silently
    table = pl.read_parquet(PARQUET)
    for promise in ("presorted", "contiguous"):
        with pytest.raises(TypeError, match=promise):
            preval.plan(table, ["AP"], **{promise: True})


@settings(max_examples=examples(200), deadline=None)
@given(
    query=st.sampled_from(["q1", None]),
    rows=st.lists(
        st.tuples(
            st.sampled_from(["d1", "d2", "d3", "d4", None]),
            st.sampled_from([1.0, 2.0, 3.0, float("nan"), None]),
            st.sampled_from([0, 1, None]),
        ),
        min_size=1,
        max_size=10,
    ),
    chunk_rows=st.integers(1, 4),
)
def test_chunks_word_errors_as_one_plan(query, rows, chunk_rows):
    # An error names the doc that one plan names: the first in ranking order with a NaN
    # score, or of a query whose id is null (ranked with null doc ids last, as the plan's
    # sort; and ranked again with its doc ids where a chunk kept them in place, see
    # chunks.evaluate_chunk). One query, so that one plan and the chunks see the same first
    # error (with several, the first bad chunk's error is reported).
    table = pl.DataFrame(
        [(query, *row) for row in rows],
        schema={"query": pl.String, "doc": pl.String, "score": pl.Float64, "label": pl.Int64},
        orient="row",
    )
    plan = build_plan(table, ["AP", "P@2"])
    try:
        outputs(plan)
    except preval.PrevalError as error:
        with pytest.raises(type(error)) as chunked:
            chunks.collect_chunked(plan, chunk_rows=chunk_rows)
        # the same words, and a data rule's count says which rows it counted
        scope = (
            r" \(counted over the queries of input rows 1-\d+, where the chunked engine "
            r"stopped\)"
        )
        assert re.fullmatch(re.escape(str(error)) + (scope if error.counted else ""),
                            str(chunked.value)), (str(chunked.value), str(error))  # fmt: skip
    else:
        assert_same(chunks.collect_chunked(plan, chunk_rows=chunk_rows), plan)


def test_no_measure_reads_doc_ids() -> None:
    # chunks.evaluate_chunk leaves doc ids unsorted in a ranked chunk: sound only while no measure
    # reads them (data checks do, per group and in any order)
    from preval.errors import MeasureError
    from preval.measures import CATALOGUE, Intents, parse
    from preval.ranking import DOC, Ranking

    # measures with a required parameter (ir_measures' C/W/L family: max_rel), and those that
    # walk every judged document, which a plan with judgments in columns cannot give them
    required = dict.fromkeys(["SDCG", "INST", "INSQ", "NERR8", "NERR9", "NERR10", "NERR11",
                              "BPM"], "(max_rel=3)")  # fmt: skip
    rows_only = {"G", "nDCGRel", "Rndcg", "Compat"}
    for name, definition in CATALOGUE.items():
        cutoff = {"required": "@0.5" if definition.fraction else "@3"}.get(definition.cutoff, "")
        spec = parse(name + required.get(name, "") + cutoff)
        if definition.diversity:  # read the diversity stage's rows (ranked there), not a Ranking
            view = Intents(1, {1: 0})
            assert DOC not in spec.definition.build(view, spec).meta.root_names(), name
            continue
        columns = Ranking("columns", 1, {1: "_R0"}, {None: "_i", 3: "_i3"})
        for ranking in (Ranking("rows", 1), columns):
            if name in rows_only and ranking is columns:
                with pytest.raises(MeasureError, match="one table"):
                    spec.definition.build(ranking, spec)
                continue
            assert DOC not in spec.definition.build(ranking, spec).meta.root_names(), name


@settings(max_examples=examples(80), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q3"]),
            st.sampled_from(["d1", "d2", "d3"]),
            st.floats(-3, 3),
        ),
        max_size=12,
    ),
    chunk_rows=st.integers(1, 6),
)
def test_one_query_column_raises_exactly_when_rows_are_not_grouped(rows, chunk_rows) -> None:
    # One group column: chunks whose queries ascend after the last chunk's skip the check
    # across chunks (`checks.ascends`); a query that comes back must still be caught, e.g.
    # q1 q1 | q2 | q1: every chunk sorted, the third starts before the second ended.
    chunked_or_not_grouped(rows, ["query"], chunk_rows)


@pytest.mark.parametrize(
    ("queries", "checked"),
    [
        (["q1", "q1", "q2", "q2", "q3"], False),  # ascending throughout: no check needed
        ([3, 3, 5, 5, 9], False),
        (["q2", "q2", "q1", "q1", "q3"], True),  # each chunk sorted, the second starts lower
        (["q1", "q1", "q3", "q2", "q4"], True),  # a chunk not sorted
    ],
)
def test_check_across_chunks_only_when_queries_do_not_ascend(monkeypatch, queries, checked):
    calls: list[int] = []
    check = checks.check_across_chunks
    monkeypatch.setattr(chunks, "check_across_chunks", lambda *a: calls.append(1) or check(*a))
    table = pl.DataFrame({"query": queries, "doc": [f"d{i}" for i in range(len(queries))],
                          "score": [1.0] * len(queries), "label": [1, 0, 1, 0, 1]})  # fmt: skip
    plan = build_plan(table, ["AP"])
    assert_same(chunks.collect_chunked(plan, chunk_rows=2), plan)
    assert bool(calls) == checked


def test_the_chunked_engine_refuses_a_run_joined_with_its_qrels_naming_the_measure() -> None:
    """A measure that reads every judged document (Rndcg) evaluates the run joined with its
    qrels, whose unretrieved judged documents come after the run's rows: never grouped by
    query. The chunked engine says so, naming the measure, rather than blaming a grouped run
    for being ungrouped; auto evaluates it."""
    run = pl.DataFrame(
        {"query": ["q1", "q1", "q2"], "doc": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]}
    )
    qrels = pl.DataFrame({"query": ["q1", "q1", "q2"], "doc": ["a", "z", "c"], "label": [1, 1, 1]})
    plan = build_plan(run, ["Rndcg", "AP"], qrels=qrels)
    assert plan.joined_qrels
    with pytest.raises(preval.InputError, match=r"engine .chunked.*Rndcg reads every judged"):
        preval.engines.collect(plan, "chunked")
    got = preval.engines.collect(plan, "auto").per_query().sort("query").collect()
    assert got["AP"].to_list() == [0.5, 1.0]  # q1: a at rank 1 of 2 relevant; q2: c


@pytest.mark.parametrize("engine", ["chunked", "partitioned"])
def test_a_count_in_an_error_says_which_part_of_the_input_it_counts(engine) -> None:
    # bad data stops a chunked engine at the first part that has some: the message's count is
    # that part's, and it says so; one plan counts every row (100 NaN scores in 1,000 queries)
    n = 10_000
    nan = [i % 100 == 3 for i in range(n)]
    table = pl.DataFrame({
        "query": [i // 10 for i in range(n)], "doc": [i % 10 for i in range(n)],
        "score": [float("nan") if nan[i] else 1.0 / (1 + i % 10) for i in range(n)],
        "label": [i % 2 for i in range(n)],
    })  # fmt: skip
    with pytest.raises(preval.InvalidValueError, match=r"is NaN in 100 rows") as whole:
        outputs(build_plan(table, ["AP"]))
    assert "counted in" not in str(whole.value)
    with pytest.raises(preval.InvalidValueError) as part:
        if engine == "chunked":
            chunks.collect_chunked(build_plan(table, ["AP"]), chunk_rows=2_000)
        else:
            partitioned.collect_partitioned(build_plan(table, ["AP"]), chunk_rows=2_000)
    text = str(part.value)
    counted = int(re.search(r"is NaN in (\d+) rows", text).group(1))
    if engine == "chunked":  # the first chunk's rows, and the NaN scores among them
        end = re.search(r"\(counted over the queries of input rows 1-([\d,]+), where the "
                        r"chunked engine stopped\)$", text)  # fmt: skip
        assert end, text
        assert 0 < counted == sum(nan[: int(end.group(1).replace(",", ""))]) < 100, text
    else:
        assert 0 < counted < 100 and text.endswith(
            "(counted over one bucket of the queries, where the partitioned engine stopped)"
        ), text
