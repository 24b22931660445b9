"""Writers: a LazyFrame is streamed by a sink and gives the same file as its DataFrame."""

from __future__ import annotations

import contextlib
import os
import random
import stat
from pathlib import Path

import polars as pl
import pytest

import preval
from preval import report

FRAME = pl.DataFrame(
    {"system": ["a", "a", "b"], "query": ["q1", "q2", "q1"], "AP": [0.5, 0.25, 1.0]}
)


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".tsv", ".ndjson", ".json", ".txt"])
def test_lazy_and_eager_writes_give_the_same_file(tmp_path: Path, suffix: str) -> None:
    eager, lazy = tmp_path / f"eager{suffix}", tmp_path / f"lazy{suffix}"
    report.write(FRAME, eager)
    report.write(FRAME.lazy(), lazy)
    if suffix == ".parquet":
        assert pl.read_parquet(lazy).equals(FRAME)
        assert pl.read_parquet(eager).equals(FRAME)
    else:
        assert lazy.read_bytes() == eager.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([eager.name, lazy.name])


def test_written_files_get_the_usual_permissions(tmp_path: Path) -> None:
    # the temporary file is private (mkstemp); the result must be like any new file
    mask = os.umask(0o022)
    try:
        report.write(FRAME.lazy(), tmp_path / "out.parquet")
        report.write(FRAME, tmp_path / "out.csv")
    finally:
        os.umask(mask)
    for name in ("out.parquet", "out.csv"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_replaced_file_keeps_its_mode(tmp_path: Path, suffix: str) -> None:
    # the temporary file is made 0o666 less the umask; renamed over a 0o640 file it used to
    # make it 0o644 (umask 022): the replacement now takes the old file's bits, through a
    # symbolic link too (its target's); a hard link keeps the old contents (docs/cli.md)
    mask = os.umask(0o022)
    try:
        out, link, other = tmp_path / f"out{suffix}", tmp_path / f"link{suffix}", tmp_path / "x"
        out.write_text("old")
        out.chmod(0o640)
        os.link(out, other)
        report.write(FRAME, out)
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
        assert other.read_text() == "old"  # the old file, under its other name
        link.symlink_to(out)
        out.chmod(0o600)
        report.write(FRAME.lazy(), link)
        assert link.is_symlink() and stat.S_IMODE(out.stat().st_mode) == 0o600
        fresh = tmp_path / f"new{suffix}"
        report.write(FRAME, fresh)
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # a new file: 0o666 less the umask
    finally:
        os.umask(mask)
    written = pl.read_parquet(out) if suffix == ".parquet" else pl.read_csv(out)
    assert written.equals(FRAME)


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".json"])
def test_a_failing_lazy_write_leaves_nothing(tmp_path: Path, suffix: str) -> None:
    def fail(df: pl.DataFrame) -> pl.DataFrame:
        msg = "boom"
        raise preval.InputError(msg)

    broken = FRAME.lazy().map_batches(fail, schema=FRAME.schema)
    with pytest.raises(Exception, match="boom"):
        report.write(broken, tmp_path / f"out{suffix}")
    assert list(tmp_path.iterdir()) == []


def test_summaries_do_not_depend_on_row_order() -> None:
    # A float sum depends on the order of its terms: summarize must add in query order, so a
    # per-query table gives the same last digit whichever engine or chunk produced its rows.
    rng = random.Random(5)
    per_query = pl.DataFrame(
        {
            "system": [s for s in ("a", "b") for _ in range(2000)],
            "query": [f"q{i:04d}" for _ in range(2) for i in range(2000)],
            "AP": [rng.random() ** 3 for _ in range(4000)],
            "RR": [rng.random() for _ in range(4000)],
        }
    )
    # per system and overall; the rows are sorted by query once, before the group_by
    for by in (None, []):
        want = preval.summarize(per_query, by=by).collect(engine="in-memory")
        for seed in range(5):
            shuffled = per_query.sample(fraction=1.0, shuffle=True, seed=seed)
            for engine in ("in-memory", "streaming"):
                got = preval.summarize(shuffled, by=by).collect(engine=engine)
                assert got.equals(want), (by, seed, engine)


def test_a_signal_as_the_handlers_are_swapped_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch
) -> None:
    """Ctrl-C that Polars' sink deferred is sent again as the sink ends; arriving as the
    outputs' block swaps in its holding handlers (before they hold anything), it left the
    block before its clean-up, and the hidden temporary file beside the output stayed."""

    @contextlib.contextmanager
    def interrupted_on_entry():
        raise KeyboardInterrupt
        yield  # (a generator: the context manager's shape)

    monkeypatch.setattr(report._signals, "held", interrupted_on_entry)
    with pytest.raises(KeyboardInterrupt), report.Outputs() as files:
        files.write(pl.DataFrame({"a": [1, 2]}), tmp_path / "x.csv")
        files.write(pl.DataFrame({"a": [1, 2]}).lazy(), tmp_path / "y.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_signal_as_a_streams_copy_is_made_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    """An output to a stream (/dev/null, a pipe) is written to a copy in the temporary
    directory first; made by mkstemp before it was listed for removal, a signal raised as
    mkstemp returned left the copy there."""
    import signal
    import tempfile

    spill, fifo = tmp_path / "tmp", tmp_path / "out.csv"
    spill.mkdir()
    os.mkfifo(fifo)  # (a stream: never opened here, the signal comes first)
    monkeypatch.setattr(tempfile, "tempdir", str(spill))
    made = os.open
    sent = []

    def open_then_interrupt(path, *args, **kwargs):
        fd = made(path, *args, **kwargs)
        name = os.path.basename(path)
        if name.startswith("preval-") and name.endswith(".tmp") and not sent:
            sent.append(name)
            signal.raise_signal(signal.SIGINT)  # its handler runs as the call returns
        return fd

    monkeypatch.setattr(os, "open", open_then_interrupt)
    with pytest.raises(KeyboardInterrupt), report.Outputs() as files:
        files.write(pl.DataFrame({"a": [1, 2]}), fifo)
    assert sent
    assert list(spill.iterdir()) == []
