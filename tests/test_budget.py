"""The memory model's spill terms (`preval.engines.budget`): how many buckets a spilled input
is scattered into, and the one line when none fits (issue 32). Worked examples: each figure is
derived in a comment from the model's formula (module docstring), not from its code."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from preval.engines import budget
from preval.errors import InputError

MiB = 2**20


def test_scatter_bytes_reads_row_groups_and_holds_a_batch_per_bucket() -> None:
    # 100M rows of 32 bytes, row groups of 1M rows, 50 buckets:
    # 32 x (12 x 1M + 3 x 16,384 x 50) = 32 x (12,582,912 + 2,457,600) = 481,296,384 bytes
    got = budget.scatter_bytes(50, 32.0, 1_048_576, 32.0 * 100_000_000)
    assert got == 481_296_384
    # never more than the input's own rows: 1,000 rows read and written into 8 buckets hold
    # 32 x (1,000 + 3 x 1,000) bytes
    assert budget.scatter_bytes(8, 32.0, 1_048_576, 32_000.0) == 32 * (1_000 + 3 * 1_000)


def test_the_fewest_buckets_whose_bucket_fits_its_share() -> None:
    # a budget of 704 MB (1 GB less BASE_RSS): a bucket takes at most 704 / 4 = 176 MB, so
    # 3,200 MB of rows make ceil(3200 / 176) = 19 buckets; of at most 64 MB, 50
    assert budget.fewest_buckets(704 * MiB, 3200 * MiB) == 19
    assert budget.fewest_buckets(704 * MiB, 3200 * MiB, most=64 * MiB) == 50
    # 100 MB of it held by qrels: (704 - 100) / 4 = 151 MB, ceil(3200 / 151) = 22
    assert budget.fewest_buckets(704 * MiB, 3200 * MiB, held=100 * MiB) == 22
    # a budget of 192 MB (512 MB less BASE_RSS): 48 MB a bucket, ceil(240 / 48) = 5 buckets
    assert budget.fewest_buckets(192 * MiB, 240 * MiB) == 5
    # a small input: one bucket; nothing left: more than any count allowed
    assert budget.fewest_buckets(192 * MiB, 10 * MiB) == 1
    assert budget.fewest_buckets(100 * MiB, 10 * MiB, held=100 * MiB) > budget.MAX_BUCKETS


def test_spill_buckets_picks_the_fewest_or_says_what_the_limit_needs() -> None:
    size, row = 3200 * MiB, 32.0  # 100M rows of 32 bytes in row groups of 1M rows
    # 704 MB: 50 buckets of 64 MB; their scatter, 32 x (12 x 1M + 3 x 16,384 x 50) = 459 MB,
    # fits
    assert budget.spill_buckets(704 * MiB, size, row, read_rows=1_048_576) == 50
    # 450 MB: buckets of 64 MB would not fit (459 MB); of 450 / 4 = 112.5 MB, 29 at least;
    # the most that fit: 384 + 1.5 x B <= 450, B = 44
    assert budget.spill_buckets(450 * MiB, size, row, read_rows=1_048_576) == 44
    # 192 MB: the row groups alone take 32 x 12 x 1M = 384 MB: refused in one line, naming
    # the least limit that fits. For a budget b a bucket takes at most b / 4, so
    # B = ceil(3200 / (b / 4)) buckets at least, and 384 MB + 1.5 MB x B <= b: at b = 430 MB,
    # B = 30 and 384 + 45 = 429 (fits); at b = 425 MB, B = 31 and 430.5 (does not); plus
    # BASE_RSS (320 MB): between 745 and 750 MB
    with pytest.raises(InputError) as refused:
        budget.spill_buckets(192 * MiB, size, row, read_rows=1_048_576, what="this input")
    (line,) = str(refused.value).splitlines()
    assert "cannot be evaluated within the memory limit of 512 MB" in line
    needed = int(line.split("needs at least ")[1].split(" MB")[0])
    assert 425 + 320 <= needed <= 430 + 320
    # what the line names is enough: that budget fits
    data = (needed - 320) * MiB
    assert budget.spill_buckets(data, size, row, read_rows=1_048_576) >= 1
    # qrels held throughout leave less for the scatter
    with pytest.raises(InputError):
        budget.spill_buckets(704 * MiB, size, row, read_rows=1_048_576, held=400 * MiB)


@given(
    budget_mb=st.integers(1, 8192),
    size_mb=st.integers(1, 100_000),
    row=st.floats(8, 200),
    read_rows=st.integers(1, 4_000_000),
)
def test_spill_buckets_keeps_both_phases_within_the_budget(budget_mb, size_mb, row, read_rows):
    b, size = budget_mb * MiB, size_mb * MiB
    try:
        n = budget.spill_buckets(b, size, row, read_rows=read_rows)
    except InputError as exc:
        # refused: the limit it names is above the one given
        assert len(str(exc).splitlines()) == 1
        return
    assert 1 <= n <= budget.MAX_BUCKETS
    # the scatter fits, and a bucket takes at most its share, a quarter of the budget
    assert budget.scatter_bytes(n, row, read_rows, size) <= b
    assert size / n <= b / 4
    # no more buckets than buckets of 64 MB (or of 1/256 of the input) would need
    assert n <= max(1, -(-size // max(64 * MiB, size / budget.MAX_BUCKETS)), -(-size // (b / 4)))


def test_read_rows_is_the_largest_row_group_of_the_parquet_files(tmp_path: Path) -> None:
    frame = pl.DataFrame({"query": ["q"] * 10_000, "score": range(10_000)})
    small, large = tmp_path / "small.parquet", tmp_path / "large.parquet"
    frame.write_parquet(small, row_group_size=1_000)
    frame.write_parquet(large, row_group_size=5_000)
    assert budget.read_rows([small]) == 1_000
    assert budget.read_rows([small, large, tmp_path / "x.csv"]) == 5_000
    # not Parquet, or not a file: the usual row group
    assert budget.read_rows([tmp_path / "x.csv"]) == budget.READ_ROWS
    assert budget.read_rows([]) == budget.READ_ROWS


def test_a_chunk_never_needs_more_rows_than_the_input_has() -> None:
    # 14 rows averaging 75,000 bytes (one id of a megabyte): the least chunk of MIN_CHUNK_ROWS
    # would "need" 75,000 x 6 x 20,000 = 9 GB, though the input is 1 MB. Bounded by its 14
    # rows, two workers and one chunk read ahead get 4 GB / (75,000 x 13) = 4,405 rows, more
    # than it has: it fits
    fit = budget.shape(4 * 2**30, 75_000.0, chunk_rows=2_000_000, workers=2, read_ahead=1,
                       input_rows=14)  # fmt: skip
    assert fit == budget.Shape(4 * 2**30 // (75_000 * 13), 2, 1)
    with pytest.raises(InputError, match=r"needs at least 8\.7 GB"):  # 9e9 B + BASE_RSS
        budget.shape(4 * 2**30, 75_000.0, chunk_rows=2_000_000, workers=2, read_ahead=1)
    # the bound only lowers the least chunk to the input's rows: a limit below even those is
    # refused, naming 75,000 x 6 x 14 = 6.3 MB (+ BASE_RSS: 326 MB)
    with pytest.raises(InputError, match="needs at least 326 MB"):
        budget.shape(MiB, 75_000.0, chunk_rows=2_000_000, workers=2, read_ahead=1,
                     input_rows=14)  # fmt: skip
    # an input of MIN_CHUNK_ROWS rows or more is refused as before
    with pytest.raises(InputError, match=r"needs at least 8\.7 GB"):
        budget.shape(4 * 2**30, 75_000.0, chunk_rows=2_000_000, workers=2, read_ahead=1,
                     input_rows=budget.MIN_CHUNK_ROWS)  # fmt: skip


def test_the_sample_says_the_rows_when_it_holds_them_all() -> None:
    frame = pl.LazyFrame({"doc": ["d" * 100] * 10})
    per_row, rows = budget.sampled(frame, 50)
    assert rows == 10
    assert per_row == frame.collect().estimated_size() / 10
    assert budget.sampled(frame, 10)[1] is None  # (10 of 10 asked for: more may follow)
    assert budget.sampled(frame, 5)[1] is None


@pytest.mark.parametrize("engine", ["auto", "partitioned", "chunked"])
def test_a_small_file_with_a_megabyte_id_is_evaluated(tmp_path: Path, engine: str) -> None:
    # 14 rows, one of them a document with an id of 1 MB, judged non-relevant (as the sweep's
    # very-long-line case): its numbers are those of the same table without that row, under the
    # default limit and under a limit of 1 GB
    import preval

    rows = ["query,doc,score,label"]
    rows += [f"q{q},d{q}{d},{1 - d / 10},{d % 2}" for q in range(2) for d in range(7)]
    plain = tmp_path / "plain.csv"
    plain.write_text("\n".join(rows) + "\n")
    wide = tmp_path / "wide.csv"
    wide.write_text("\n".join([*rows, f"q1,{'x' * 2**20},0.01,0"]) + "\n")
    assert wide.stat().st_size > 2**20  # (not small enough to be read whole by auto)
    want = preval.collect(preval.plan(plain, ["AP", "P@5"])).per_query().collect()
    for limit in (None, 2**30):
        got = preval.collect(preval.plan(wide, ["AP", "P@5"]), engine, memory_limit=limit)
        assert got.per_query().collect().equals(want)


def test_qrels_floor_bounds_the_qrels_from_below_before_reading_them(tmp_path: Path) -> None:
    """A Parquet file's rows times a label's 8 bytes, half a text file's bytes, a frame's size;
    nothing for what cannot be known unread (a compressed file, a lazy plan). Each is at most
    what the qrels take once read."""
    import gzip

    from preval import io

    lines = "".join(f"q{i % 7} 0 doc{i:06d} {i % 3}\n" for i in range(3000))
    text = tmp_path / "q.txt"
    text.write_text(lines)
    table = io.scan_qrels(text).collect()
    table.write_parquet(tmp_path / "q.parquet")
    (tmp_path / "q.txt.gz").write_bytes(gzip.compress(lines.encode()))
    assert budget.qrels_floor(text) == len(lines) // 2
    assert budget.qrels_floor(tmp_path / "q.parquet") == 8 * 3000
    assert budget.qrels_floor(table) == table.estimated_size()
    assert budget.qrels_floor(tmp_path / "q.txt.gz") == 0
    assert budget.qrels_floor(table.lazy()) == 0
    for path in (text, tmp_path / "q.parquet"):
        assert budget.qrels_floor(path) <= table.estimated_size()


@pytest.mark.parametrize("engine", ["chunked", "partitioned"])
def test_qrels_too_large_for_the_limit_are_refused_before_they_are_read(
    tmp_path: Path, monkeypatch, engine: str
) -> None:
    """The engines that hold qrels whole refuse, in one line naming the qrels file, qrels whose
    least size already exceeds the limit: reading them would break it."""
    import preval
    from preval.engines import chunked, judgments, partitioned

    run = tmp_path / "r.run"
    run.write_text("".join(f"q{i % 50} Q0 d{i} 1 {i / 7:.3f} r\n" for i in range(2000)))
    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"q{i % 50} 0 d{i} 1\n" for i in range(2000)))
    monkeypatch.setattr(budget, "QRELS_TEXT_SHARE", 10**6)  # a floor far above any limit

    def read(*args: object) -> None:
        msg = "the qrels were read"
        raise AssertionError(msg)

    for module in (judgments, chunked, partitioned):
        monkeypatch.setattr(module, "read_qrels", read, raising=False)
    plan = preval.plan(run, ["AP"], qrels=qrels, input_format="trec")
    with pytest.raises(InputError, match=rf"the qrels {qrels} .*holds them whole"):
        preval.collect(plan, engine=engine, memory_limit=2**30)
