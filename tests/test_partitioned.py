"""The partitioned engine (issue 21): rows in any order give one plan's results, in memory or
spilled to buckets, and its spill never outlives the run."""

from __future__ import annotations

import dataclasses
import importlib
import os
import shutil
import signal
import stat
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import preval
from preval import engines
from preval.engines import partitioned
from preval.engines.budget import OverLimit
from preval.engines.chunked import rank_keys_of
from preval.options import Hints
from tests.profiles import examples
from tests.test_chunked import assert_same, systems
from tests.test_properties import MEASURES, cases, frames, joined

build_plan = importlib.import_module("preval").plan
ROOT = Path(__file__).resolve().parents[1]
PARQUET = ROOT / "fixtures" / "example.parquet"


def shuffled(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    return frame.sample(fraction=1.0, shuffle=True, seed=seed)


@settings(max_examples=examples(60), deadline=None)
@given(
    case=cases(),
    seed=st.integers(0, 2**16),
    chunk_rows=st.integers(1, 9),
    spilled=st.sampled_from([None, 1, 3]),
    depth=st.sampled_from([None, 2]),
    queries=st.sampled_from(["judged", "retrieved"]),
    ties=st.sampled_from(["trec", "input"]),
    two_systems=st.booleans(),
    spill_qrels=st.booleans(),
)
def test_rows_in_any_order_give_one_plans_results(
    case, seed, chunk_rows, spilled, depth, queries, ties, two_systems, spill_qrels,
    tmp_path_factory,
) -> None:  # fmt: skip
    # Any permutation of the rows, read whole (spilled=None) or through 1 or 3 spilled
    # buckets, in chunks of 1-9 rows: the same per-query table, audit and summary as one plan
    # over the same rows. With ties="input" the input order is a tie-breaker, so the rows keep
    # their order within a query through the engine (compared with one plan of the same
    # permutation); with ties="trec" any permutation gives the grouped input's results.
    # `spill_qrels`: the qrels taken as too large to hold, spilled into the run's buckets (at
    # most 4 here) and read bucket by bucket.
    from unittest import mock

    if spill_qrels:
        with (
            mock.patch.object(partitioned, "QRELS_SPILL_SHARE", 0),
            mock.patch.object(partitioned, "MAX_SPILL_BUCKETS", 4),
        ):
            rows_in_any_order(case, seed, chunk_rows, spilled, depth, queries, ties, two_systems,
                              tmp_path_factory)  # fmt: skip
    else:
        rows_in_any_order(case, seed, chunk_rows, spilled, depth, queries, ties, two_systems,
                          tmp_path_factory)  # fmt: skip


def rows_in_any_order(
    case, seed, chunk_rows, spilled, depth, queries, ties, two_systems, tmp_path_factory
) -> None:
    run_rows, qrels = case
    run, qrels_df = frames(run_rows, qrels)
    table = joined(run_rows, qrels)
    by = "system" if two_systems else None
    if two_systems:
        run, table = systems(run), systems(table)
    options = {"depth": depth, "queries": queries, "ties": ties, "by": by}
    spill = tmp_path_factory.mktemp("spill")
    for data, q in ((run, qrels_df), (table, None)):
        mixed = shuffled(data, seed)
        plan = build_plan(mixed, MEASURES, qrels=q, **options)
        got = partitioned.collect_partitioned(
            plan, chunk_rows=chunk_rows, buckets=spilled, tmp_dir=spill
        )
        assert_same(got, plan)
        if ties == "trec":
            assert_same(got, build_plan(data, MEASURES, qrels=q, **options))
        del got
    assert list(spill.iterdir()) == []


@settings(max_examples=examples(80), deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["s1", "s2"]), st.integers(0, 40), st.integers(0, 10**6)),
        max_size=200,
    ),
    hash_bits=st.sampled_from([None, 0, 1, 2, 4]),
)
def test_group_together_keeps_groups_whole_and_their_rows_in_order(rows, hash_bits) -> None:
    # Few hash bits make groups share them (0 bits: all of them): those runs are sorted by key
    frame = pl.DataFrame(rows, schema=["system", "query", "value"], orient="row")
    frame = frame.with_row_index("row")
    grouped = partitioned.group_together(frame, ["system", "query"], hash_bits=hash_bits)
    assert sorted(grouped.rows()) == sorted(frame.rows())  # the same rows
    keys = list(zip(grouped["system"], grouped["query"], strict=True))
    runs = [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]
    assert len(runs) == len(set(runs))  # each group in one run
    for _, part in grouped.group_by(["system", "query"]):
        assert part["row"].is_sorted()  # input order within a group


@pytest.mark.parametrize("as_parts", [False, True])
def test_group_together_in_parts_groups_a_frame_or_its_parts(monkeypatch, as_parts) -> None:
    # a spilled bucket comes as one frame (put in order whole), an in-memory one as parts
    monkeypatch.setattr(partitioned, "PART_ROWS", 50)
    rng = np.random.default_rng(3)
    frame = pl.DataFrame({"query": rng.integers(0, 97, 2000), "row": np.arange(2000)})
    if as_parts:  # parts of whole groups, as `_in_memory_buckets` divides a batch
        parts = frame.with_columns(part=pl.col("query") % 7).partition_by("part", include_key=False)
        given = [pl.concat([p.slice(0, 100), p.slice(100)], rechunk=False) for p in parts]
    else:
        given = pl.concat([frame.slice(0, 700), frame.slice(700)], rechunk=False)
    grouped = partitioned.group_together_in_parts(given, ["query"])
    assert grouped.n_chunks() == 1
    assert sorted(grouped.rows()) == sorted(frame.rows())
    assert grouped["query"].rle_id().max() + 1 == grouped["query"].n_unique()
    assert grouped.group_by("query").agg(pl.col("row").is_sorted())["row"].all()


def test_example_in_join_order_through_every_path(tmp_path: Path) -> None:
    table = shuffled(pl.read_parquet(PARQUET), 7)
    path = tmp_path / "mixed.parquet"
    table.write_parquet(path, row_group_size=5000)
    measures = ["AP", "nDCG@10", "P@5", "RR", "NumRet"]
    want = build_plan(PARQUET, measures, by="system")
    for source in (table, path):
        plan = build_plan(source, measures, by="system")
        assert_same(partitioned.collect_partitioned(plan, chunk_rows=4000), want)
        spilled = partitioned.collect_partitioned(plan, chunk_rows=4000, buckets=3)
        assert_same(spilled, want)
        assert_same(engines.collect(plan, "partitioned"), want)


@settings(max_examples=examples(80), deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["q1", "q2", "q3"]),
            st.one_of(st.none(), st.sampled_from(["d1", "d2", "d10", "d9"])),
            st.one_of(st.none(), st.sampled_from([0.0, -0.0, 1.5, 1.5000001, -2.0, 3.0])),
        ),
        max_size=60,
    ),
    part_rows=st.sampled_from([3, 7, 1000]),
)
def test_rank_together_groups_and_ranks_as_trec_eval(rows, part_rows) -> None:
    # Reference, in plain Python: each query's rows together, ranked by the score as a 32-bit
    # float descending (null last, -0.0 equal to 0.0), then doc id descending (null last),
    # then input order; queries in any order. Parts of 3 or 7 rows divide the bucket.
    frame = pl.DataFrame(rows, schema=["query", "doc", "score"], orient="row").with_columns(
        pl.int_range(pl.len()).alias("row"), label=pl.lit(1)
    )
    plan = build_plan(frame.with_columns(doc=pl.col("doc").fill_null("x")), ["AP"])
    rank_keys = partial(rank_keys_of, recipe=plan.recipe, hints=Hints())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(partitioned, "PART_ROWS", part_rows)
        ranked, done = partitioned.rank_together_in_parts(frame, rank_keys, ["query"])
    assert done
    assert sorted(ranked["row"]) == list(range(frame.height))  # every row, once
    assert ranked.equals(frame[ranked["row"]])
    queries = ranked["query"].to_list()
    runs = [q for i, q in enumerate(queries) if i == 0 or queries[i - 1] != q]
    assert len(runs) == len(set(runs))  # each query's rows together

    def f32(x):
        return None if x is None else float(np.float32(x))

    for q in set(queries):
        got = ranked.filter(pl.col("query") == q)["row"].to_list()
        mine = [(i, r) for i, r in enumerate(rows) if r[0] == q]
        # stable sorts, the last key first: doc descending (a null doc, "", last; Python's
        # reverse sort keeps equal items in order), then the score descending (null last)
        mine.sort(key=lambda x: x[1][1] or "", reverse=True)
        mine.sort(key=lambda x: (f32(x[1][2]) is None, -(f32(x[1][2]) or 0.0)))
        assert got == [i for i, _ in mine]


def test_bad_data_raises_and_leaves_no_spill(tmp_path: Path) -> None:
    table = shuffled(pl.read_parquet(PARQUET), 1)
    bad = table.with_columns(
        score=pl.when(pl.int_range(pl.len()) == 20_000).then(float("nan")).otherwise("score")
    )
    plan = build_plan(bad, ["AP"], by="system")
    for buckets in (None, 4):
        with pytest.raises(preval.InvalidValueError, match="NaN in 1 rows"):
            partitioned.collect_partitioned(plan, chunk_rows=3000, buckets=buckets,
                                            tmp_dir=tmp_path)  # fmt: skip
        assert list(tmp_path.iterdir()) == []


def test_too_little_free_disk_is_an_error_before_spilling(tmp_path: Path, monkeypatch) -> None:
    real = shutil.disk_usage
    monkeypatch.setattr(partitioned.shutil, "disk_usage", lambda p: real(p)._replace(free=1_000))
    plan = build_plan(PARQUET, ["AP"], by="system")
    with pytest.raises(preval.InputError, match="not enough free disk") as info:
        partitioned.collect_partitioned(plan, buckets=4, tmp_dir=tmp_path)
    assert "--tmp-dir" in str(info.value) and "rows need about" in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("free_share", "want"), [(3, "lz4"), (5, "uncompressed")])
def test_spill_files_are_uncompressed_when_the_disk_has_room(
    tmp_path: Path, monkeypatch, free_share, want
) -> None:
    # free disk of `free_share` times the rows' bytes in memory: below `UNCOMPRESSED_ROOM`
    # (4) the spill is lz4-compressed, above it plain; the results are one plan's either way
    plan = build_plan(shuffled(pl.read_parquet(PARQUET), 3), ["AP", "P@5"], by="system")
    size = partitioned._size(plan)[1]
    real = shutil.disk_usage
    monkeypatch.setattr(
        partitioned.shutil, "disk_usage", lambda p: real(p)._replace(free=free_share * size)
    )
    written = []
    scatter = partitioned.scatter

    def recorded(source, group, buckets, folder, compression="lz4") -> None:
        scatter(source, group, buckets, folder, compression)
        written.append(compression)
        # the files are what was asked for
        assert all(_compressed(f) == (compression == "lz4") for f in folder.glob("*/*.ipc"))

    monkeypatch.setattr(partitioned, "scatter", recorded)
    got = partitioned.collect_partitioned(plan, chunk_rows=4000, buckets=3, tmp_dir=tmp_path)
    assert written == [want]
    assert_same(got, build_plan(PARQUET, ["AP", "P@5"], by="system"))


def _compressed(path: Path) -> bool:
    """Whether the Arrow IPC file at `path` takes fewer bytes than its record batches' buffers
    once read (pyarrow, which does not share Polars' writer, decompresses them)."""
    import pyarrow.ipc

    with pyarrow.ipc.open_file(path) as reader:
        batches = [reader.get_batch(i) for i in range(reader.num_record_batches)]
    size = sum(b.size for x in batches for c in x.columns for b in c.buffers() if b is not None)
    return path.stat().st_size < size


def test_spilled_buckets_are_removed_as_they_are_read(tmp_path: Path) -> None:
    # a bucket's files go once the next bucket is asked for (its rows have been taken), and
    # the last one's when the reading ends; every row is read back once
    table = shuffled(pl.read_parquet(PARQUET), 5)
    partitioned.scatter(table.lazy(), ["system", "query"], 3, tmp_path)
    folders = sorted(tmp_path.iterdir())
    assert len(folders) == 3
    read = []
    for i, bucket in enumerate(partitioned.spilled_buckets(tmp_path, ["system", "query"], 10**6)):
        assert [f.exists() for f in folders] == [j >= i for j in range(3)]
        read.append(bucket)
    assert list(tmp_path.iterdir()) == []
    assert sorted(pl.concat(read).rows()) == sorted(table.rows())


def test_auto_chooses_from_the_first_rows(tmp_path: Path) -> None:
    grouped = pl.read_parquet(PARQUET)
    mixed = tmp_path / "mixed.parquet"
    shuffled(grouped, 2).write_parquet(mixed)
    assert engines.choose(build_plan(PARQUET, ["AP"], by="system"), 10**9) == "chunked"
    assert engines.choose(build_plan(mixed, ["AP"], by="system"), 10**9) == "partitioned"
    assert engines.choose(build_plan(mixed, ["AP"], by="system"), 1000) == "in-memory"
    assert engines.choose(build_plan(grouped.head(100), ["AP"], by="system")) == "in-memory"
    assert engines.looks_grouped(pl.LazyFrame({"q": ["a", "a", "b"]}), ["q"])
    assert not engines.looks_grouped(pl.LazyFrame({"q": ["a", "b", "a"]}), ["q"])


def test_auto_recovers_when_only_the_first_rows_are_grouped(monkeypatch) -> None:
    # Two shards appended: each grouped, their queries overlapping. The first rows look grouped,
    # the chunked engine finds the split at the end, and auto evaluates with the other engine.
    table = pl.read_parquet(PARQUET)
    shards = pl.concat([table.filter(pl.col("doc") < "d5"), table.filter(pl.col("doc") >= "d5")])
    plan = build_plan(shards, ["AP", "P@10"], by="system")
    monkeypatch.setattr(engines, "SMALL_ROWS", 0)
    monkeypatch.setattr(engines, "SAMPLE_ROWS", 5000)  # the first shard's rows only
    assert engines.choose(plan) == "chunked"
    assert_same(engines.collect(plan), build_plan(PARQUET, ["AP", "P@10"], by="system"))


def test_memory_limit_and_tmp_dir_on_the_command_line(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.parquet"
    shuffled(pl.read_parquet(PARQUET), 5).write_parquet(mixed)
    spill = tmp_path / "spill"
    spill.mkdir()

    def run(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "preval", "evaluate", *map(str, args)],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "TMPDIR": str(tmp_path / "nowhere")},
        )  # fmt: skip

    want = run(PARQUET, "--by", "system", "--engine", "in-memory")
    assert want.returncode == 0, want.stderr
    got = run(mixed, "--by", "system", "--engine", "partitioned", "--memory-limit", "500MB",
              "--tmp-dir", spill)  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert got.stdout == want.stdout
    assert list(spill.iterdir()) == []
    for bad, words in (("--memory-limit=lots", "expected a size"),
                       ("--tmp-dir=/no/such/dir", "no such directory"),
                       ("--memory-limit=10KB", "within the memory limit")):  # fmt: skip
        result = run(mixed, "--engine", "partitioned", bad)
        assert result.returncode == 2
        assert words in result.stderr and "Traceback" not in result.stderr


def test_a_full_disk_while_spilling_leaves_nothing_behind(tmp_path: Path, monkeypatch) -> None:
    def full_disk(self, target, **kwargs) -> None:
        (next(tmp_path.glob("preval-buckets-*")) / "half-written.ipc").write_bytes(b"x" * 100)
        msg = "No space left on device (os error 28)"
        raise OSError(msg)

    monkeypatch.setattr(pl.LazyFrame, "sink_ipc", full_disk)
    plan = build_plan(PARQUET, ["AP"], by="system")
    with pytest.raises(preval.InputError, match=r"spilling to .* failed: No space left"):
        partitioned.collect_partitioned(plan, buckets=4, tmp_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


class _CloseThenInterrupt:
    """shutil's `os`, whose first close of a directory's descriptor is followed at once by
    Ctrl-C: the signal's handler then runs as the close returns, the instant that Python
    3.11's rmtree has closed the descriptor and not yet noted it."""

    def __init__(self) -> None:
        self.sent = False

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def close(self, fd: int) -> None:
        directory = stat.S_ISDIR(os.fstat(fd).st_mode)
        os.close(fd)
        if directory and not self.sent:
            self.sent = True
            signal.raise_signal(signal.SIGINT)


def test_a_signal_as_a_bucket_is_removed_is_the_signal(tmp_path: Path, monkeypatch) -> None:
    # rmtree closed the bucket's descriptor again in its finally: the interruption became
    # "[Errno 9] Bad file descriptor" (the CLI said that, not "terminated", and exited 2)
    monkeypatch.setattr(shutil, "os", _CloseThenInterrupt())
    plan = build_plan(PARQUET, ["AP"], by="system")
    with pytest.raises(KeyboardInterrupt):
        partitioned.collect_partitioned(plan, chunk_rows=4000, buckets=4, tmp_dir=tmp_path)
    assert shutil.os.sent
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("buckets", [None, 2])
def test_qrels_with_ids_of_another_type_are_found_by_value(buckets) -> None:
    # equal ids of two types hash apart: the judgments are then not divided by bucket
    run = pl.DataFrame(
        {"query": [1, 2, 1, 3, 2, 1], "doc": list("abcdef"), "score": [6.0, 5, 4, 3, 2, 1]}
    )
    qrels = pl.DataFrame({"query": ["1", "2", "2", "4"], "doc": list("aexy"), "label": [1] * 4})
    plan = build_plan(run, ["AP", "NumRel"], qrels=qrels)
    got = partitioned.collect_partitioned(plan, chunk_rows=2, buckets=buckets)
    assert_same(got, plan)
    assert got.per_query().collect()["AP"].to_list() == [1.0, 0.25, 0.0]


def test_a_trec_run_is_sized_by_its_lines_not_by_a_parse(tmp_path: Path) -> None:
    run = tmp_path / "r.run"
    run.write_text(
        "# a comment line\nq1 Q0 a 1 3.0 t\nq2 Q0 b 1 2.0 t\n\nq1 Q0 c 2 1.0 t\nq2 Q0 d 2 0.5 t\n"
    )
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a 1\nq1 0 c 0\nq2 0 d 1\nq3 0 e 1\n")
    plan = build_plan(run, ["AP", "NumRel"], qrels=qrels, input_format="trec")
    assert plan.count_rows is not None and plan.count_rows() == 6  # 4 rows in 6 lines
    calls = []
    counted = dataclasses.replace(plan, count_rows=lambda: calls.append(1) or 6)
    got = partitioned.collect_partitioned(counted, chunk_rows=2)
    assert calls == [1]
    assert_same(got, plan)
    assert got.per_query().collect().sort("query")["AP"].to_list() == [1.0, 0.5, 0.0]


@pytest.mark.parametrize("queries", ["retrieved", "judged"])
def test_qrels_too_large_to_hold_are_spilled_with_the_run(
    tmp_path: Path, monkeypatch, queries: str
) -> None:
    """Qrels that would take more than their share of the budget are not read whole: they
    are scattered into the run's buckets and each bucket reads its own; the judged queries no
    run line answered (-c) are evaluated bucket by bucket. The numbers are one plan's."""
    run = tmp_path / "r.run"
    run.write_text("".join(f"q{i % 40} Q0 d{i} 1 {(i * 7919) % 101 / 10} r\n" for i in range(900)))
    qrels = tmp_path / "q.qrels"
    judged = [f"q{i % 45} 0 d{i} {i % 3}\n" for i in range(0, 1200, 2)]  # q40-q44: no line
    qrels.write_text("".join(judged))
    calls = []
    spilled = partitioned._spilled_judgments

    def spy(*args, **kwargs):
        calls.append(args[2])  # the buckets
        return spilled(*args, **kwargs)

    monkeypatch.setattr(partitioned, "_spilled_judgments", spy)
    monkeypatch.setattr(partitioned, "QRELS_SPILL_SHARE", 0)
    plan = build_plan(run, ["AP", "NumRel", "P@5"], qrels=qrels, input_format="trec",
                      queries=queries)  # fmt: skip
    got = partitioned.collect_partitioned(plan, chunk_rows=50, tmp_dir=tmp_path)
    assert calls and calls[0] >= 1
    assert_same(got, plan)
    evaluated = got.per_query().collect().height
    assert evaluated == (45 if queries == "judged" else 40)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("preval-buckets")] == []


def test_spilled_buckets_are_raised_to_one_piece_each_while_their_scatter_fits() -> None:
    """10M rows of 24 bytes in pieces of 500k rows: 10M x 1.15 / 500k = 23 buckets rather than
    the 5 the budget alone asks for (each read back and evaluated as it is), never fewer than
    asked, at most MAX_BUCKETS, and the 5 when the scatter of 23 does not fit."""
    one = partial(partitioned._one_piece_buckets, rows=10_000_000, size=240_000_000,
                  per_row=24.0, read_rows=1_048_576)  # fmt: skip
    assert one(5, chunk_rows=500_000, budget=2**30) == 23
    assert one(40, chunk_rows=500_000, budget=2**30) == 40
    assert one(5, chunk_rows=10_000, budget=2**30) == partitioned.MAX_BUCKETS
    # the scatter of 23 buckets: 24 bytes x (the 10M rows, fewer than 12 row groups of
    # 1,048,576, + 3 x 16,384 x 23 rows of the writers' batches) = 267 MB
    scatter = partitioned.scatter_bytes(23, 24.0, 1_048_576, 240_000_000)
    assert 24 * (10_000_000 + 3 * 16_384 * 23) == scatter
    assert one(5, chunk_rows=500_000, budget=int(scatter)) == 23
    assert one(5, chunk_rows=500_000, budget=int(scatter) - 1) == 5


def _budgets_seen(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The data budgets `collect_partitioned` sizes its work to, as it sizes it."""
    seen: list[int] = []
    decide = partitioned._qrels_to_spill

    def spy(ev, budget):
        seen.append(budget)
        return decide(ev, budget)

    monkeypatch.setattr(partitioned, "_qrels_to_spill", spy)
    return seen


def _small_run_and_qrels() -> tuple[pl.DataFrame, pl.DataFrame]:
    run = pl.DataFrame({"query": ["q1", "q2", "q1"], "doc": ["a", "b", "c"], "score": [3.0, 2, 1]})
    qrels = pl.DataFrame({"query": ["q1", "q2"], "doc": ["a", "b"], "label": [1, 1]})
    return run, qrels


@pytest.mark.parametrize("limit", [None, 2**40, 2**31, 2**28])
def test_with_separate_qrels_the_budget_is_what_qrels_memory_leaves(limit, monkeypatch) -> None:
    """With separate qrels and no limit given, the engine sizes everything within what
    QRELS_MEMORY (1 GiB) leaves for data beside the 320 MB a frame's evaluation holds; a
    limit given (1 TiB, 2 GiB, 256 MiB) is kept as given, and a table with its labels keeps
    the limit or the default. The numbers are one plan's either way."""
    seen = _budgets_seen(monkeypatch)
    run, qrels = _small_run_and_qrels()
    table = run.join(qrels, on=["query", "doc"], how="left").fill_null(0)
    default = partitioned.DEFAULT_MEMORY_LIMIT
    for data, q, expected in (
        (run, qrels, 2**30 - 320 * 2**20 if limit is None else limit),
        (table, None, default if limit is None else limit),
    ):
        plan = build_plan(data, ["AP", "P@5"], qrels=q)
        seen.clear()
        assert_same(partitioned.collect_partitioned(plan, memory_limit=limit), plan)
        assert seen == [expected]


def test_an_input_the_qrels_cap_cannot_hold_takes_the_default(monkeypatch) -> None:
    """No limit given, separate qrels, and an input that QRELS_MEMORY cannot hold (here a
    cap of 1 byte above the base): not refused, evaluated within DEFAULT_MEMORY_LIMIT, as
    before the cap; a limit given that cannot be kept is still refused."""
    seen = _budgets_seen(monkeypatch)
    monkeypatch.setattr(partitioned, "QRELS_MEMORY", 320 * 2**20 + 1)
    run, qrels = _small_run_and_qrels()
    plan = build_plan(run, ["AP", "P@5"], qrels=qrels)
    assert_same(partitioned.collect_partitioned(plan), plan)
    assert seen == [1, partitioned.DEFAULT_MEMORY_LIMIT]
    with pytest.raises(OverLimit, match="cannot be evaluated within the memory limit"):
        partitioned.collect_partitioned(plan, memory_limit=1)


def spilled_with(tmp_path: Path, run, qrels, keys, buckets, piece_rows):
    """`run` and `qrels` scattered into `buckets` under `tmp_path`, and the judgments the
    pieces of the run take (`_spilled_judgments`)."""
    partitioned.scatter(qrels.lazy(), keys, buckets, tmp_path / "qrels")
    partitioned.scatter(run.lazy(), keys, buckets, tmp_path)
    return partitioned._spilled_judgments(
        tmp_path / "qrels", keys, buckets, qrels.lazy(), tmp_path, piece_rows
    )


def test_spilled_qrels_give_each_piece_its_own_queries_judgments(tmp_path: Path) -> None:
    """Qrels spilled into the run's buckets are divided as each bucket's rows are when it is
    read back: every piece gets all the judgments of its queries, no query's judgments go to
    two pieces, and the pieces of the last plan hold every judgment once (q50-q59 are judged
    but in no run row)."""
    run = pl.DataFrame(
        {"query": [f"q{i * 7 % 50}" for i in range(2000)], "doc": [f"d{i}" for i in range(2000)]}
    )
    qrels = pl.DataFrame(
        {
            "query": [f"q{i % 60}" for i in range(900)],
            "doc": [f"d{i}" for i in range(900)],
            "label": [i % 3 for i in range(900)],
        }
    )
    keys, buckets, piece_rows = ["query"], 3, 200
    judgments = spilled_with(tmp_path, run, qrels, keys, buckets, piece_rows)
    order = ["query", "doc"]
    given: dict[str, int] = {}
    pieces = 0
    for i, item in enumerate(partitioned.spilled_buckets(tmp_path, keys, piece_rows)):
        piece = item if isinstance(item, pl.DataFrame) else pl.concat(item)
        got = judgments.of(piece)
        wanted = qrels.filter(pl.col("query").is_in(piece["query"].unique().implode()))
        mine = got.filter(pl.col("query").is_in(piece["query"].unique().implode()))
        assert mine.sort(order).equals(wanted.sort(order))
        for query in got["query"].unique():
            assert given.setdefault(query, i) == i  # (in one piece only)
        pieces += 1
    assert pieces > buckets  # (buckets of about 667 rows: divided into pieces of 200)
    every = pl.concat([p.lazy() for p in judgments.in_pieces()]).collect()
    assert every.sort(order).equals(qrels.sort(order))


def test_judgments_no_piece_took_are_left_to_check(tmp_path: Path) -> None:
    """A piece takes its part of the judgments whole, and its plan checks all of it; the last
    plan then checks only what no piece took (`Judgments.unchecked`): every judgment is in a
    taken part or left unchecked, a bucket every part of which was taken is not read again,
    and judgments with a null query are always left to check."""
    run = pl.DataFrame(
        {"query": [f"q{i * 7 % 30}" for i in range(600)], "doc": [f"d{i}" for i in range(600)]}
    )
    qrels = pl.DataFrame(
        {
            "query": [*(f"q{i % 60}" for i in range(900)), None],
            "doc": [f"d{i}" for i in range(901)],
            "label": [i % 3 for i in range(901)],
        }
    )
    keys, buckets, piece_rows = ["query"], 4, 100
    judgments = spilled_with(tmp_path, run, qrels, keys, buckets, piece_rows)
    taken = []
    for item in partitioned.spilled_buckets(tmp_path, keys, piece_rows):
        piece = item if isinstance(item, pl.DataFrame) else pl.concat(item)
        taken.append(judgments.of(piece))
    order = ["query", "doc"]
    left = list(judgments.unchecked_pieces())
    seen = pl.concat([*taken, *left]).unique().sort(order, nulls_last=True)
    assert seen.equals(qrels.sort(order, nulls_last=True))
    assert pl.concat(left)["query"].null_count() == 1
    # the run answers half the judged queries, so some parts are taken by no piece; buckets
    # wholly taken are not read again (each left piece is one bucket: fewer than all four)
    assert 0 < len(left) < buckets

    # divided in memory (`_by_bucket`): the parts no piece took and the null keys, no more
    divided = partitioned._by_bucket(qrels, keys, 3, 2)
    took = divided.of(run.filter(pl.col("query") == "q0"))
    rest = pl.concat(list(divided.unchecked_pieces()))
    assert rest.height == qrels.height - took.height
    assert (
        pl.concat([took, rest])
        .sort(order, nulls_last=True)
        .equals(qrels.sort(order, nulls_last=True))
    )


@pytest.mark.parametrize("query", [f"q{i}" for i in range(40, 48)])
def test_a_duplicate_judgment_of_an_unanswered_query_is_found_when_qrels_are_spilled(
    tmp_path: Path, monkeypatch, query: str
) -> None:
    """Without -c the last plan adds no row and checks only the judgments no piece took: a
    duplicate judgment of a query no run line answers is still an error, whether its part
    was taken by a piece (checked by that piece's plan) or not (by the last plan). The eight
    queries fall in different parts."""
    run = tmp_path / "r.run"
    run.write_text("".join(f"q{i % 40} Q0 d{i} 1 {(i * 7919) % 101 / 10} r\n" for i in range(900)))
    qrels = tmp_path / "q.qrels"
    judged = [f"q{i % 48} 0 d{i} {i % 3}\n" for i in range(0, 1200, 2)]
    qrels.write_text("".join([*judged, f"{query} 0 dup 1\n", f"{query} 0 dup 0\n"]))
    monkeypatch.setattr(partitioned, "QRELS_SPILL_SHARE", 0)
    plan = build_plan(run, ["AP"], qrels=qrels, input_format="trec", queries="retrieved")
    with pytest.raises(preval.PrevalError, match="dup"):
        partitioned.collect_partitioned(plan, chunk_rows=50, tmp_dir=tmp_path)
