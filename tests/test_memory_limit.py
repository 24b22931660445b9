"""`--memory-limit` is a promise, and an address-space limit set by someone else (``ulimit -v``)
never ends in an abort, a traceback or a hang (issue 32).

Each case runs the command in a subprocess under RLIMIT_AS, beside ``--memory-limit``, on
generated inputs (Parquet, CSV and TREC, grouped by query and in join order): it either
prints the numbers an unlimited run prints, with its peak resident memory (the child's
``ru_maxrss``) at most the limit, or exits 2 with one line. The full matrix runs under the
thorough profile (``CI``); a contributor's run takes a few cases of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import settings

from preval.engines import budget
from preval.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
MB = 2**20
ROWS, PER_QUERY = 1_000_000, 100
TIMEOUT = 240

# runs `argv` under RLIMIT_AS (0: none) and prints its exit code, stderr and peak RSS (the
# child's alone: this process has no other child)
WRAPPER = """
import json, resource, subprocess, sys
limit = int(sys.argv[1])
def cap():
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    done = subprocess.run(sys.argv[3:], preexec_fn=cap, capture_output=True, text=True,
                          timeout=float(sys.argv[2]))
    code, out, err = done.returncode, done.stdout, done.stderr
except subprocess.TimeoutExpired as exc:
    code, out, err = "timeout", "", str(exc)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"code": code, "out": out, "err": err, "rss": rss}))
"""


def thorough() -> bool:
    return settings.get_current_profile_name() == "thorough"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The same rows as Parquet, CSV and TREC files, grouped by query and in join order:
    each a command's arguments after ``preval``."""
    folder = tmp_path_factory.mktemp("memory")
    rng = np.random.default_rng(32)
    label = (rng.random(ROWS) > 0.9).astype(np.int64)
    table = pl.DataFrame(
        {
            "query": np.arange(ROWS) // PER_QUERY,
            "doc": (np.arange(ROWS) * 7919) % 1_000_003,
            "score": np.round(rng.standard_normal(ROWS) + label, 3),
            "label": label,
        }
    ).with_columns(pl.format("q{}", "query").alias("query"), pl.format("d{}", "doc").alias("doc"))
    shuffled = table.sample(fraction=1.0, shuffle=True, seed=1)
    made: dict[str, list[str]] = {}
    metrics = ["-m", "map", "-m", "ndcg_cut.10", "-m", "P.5"]
    for order, frame in (("grouped", table), ("join", shuffled)):
        parquet = folder / f"{order}.parquet"
        frame.write_parquet(parquet, row_group_size=100_000)
        csv = folder / f"{order}.csv"
        frame.write_csv(csv)
        made[f"parquet-{order}"] = ["evaluate", str(parquet), "-q", "-m", "AP", "-m", "nDCG@10"]
        made[f"csv-{order}"] = ["evaluate", str(csv), "-q", "-m", "AP", "-m", "nDCG@10"]
        # a TREC run: ranks by score within the query; the qrels hold every judged row
        ranked = frame.with_columns(
            pl.col("score").rank("ordinal", descending=True).over("query").alias("rank")
        )
        run = folder / f"{order}.run"
        ranked.select(
            "query", pl.lit("Q0").alias("q0"), "doc", "rank", "score", pl.lit("t").alias("tag")
        ).write_csv(run, separator=" ", include_header=False)
        qrels = folder / f"{order}.qrels"
        frame.filter(pl.col("label") > 0).select(
            "query", pl.lit("0").alias("iter"), "doc", "label"
        ).write_csv(qrels, separator=" ", include_header=False)
        made[f"trec-{order}"] = ["trec", *metrics, str(qrels), str(run)]
    return made


def preval(args: list[str], address_space: int = 0) -> dict:
    """The command's exit code, stdout, stderr and peak RSS under `address_space`."""
    command = [sys.executable, "-m", "preval", *args]
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(address_space), str(TIMEOUT), *command],
        capture_output=True, text=True, timeout=TIMEOUT + 60, check=True, env=env, cwd=ROOT,
    )  # fmt: skip
    return json.loads(done.stdout)


_expected: dict[str, str] = {}


def expected(inputs: dict[str, list[str]], name: str) -> str:
    """What the same command prints without any limit."""
    if name not in _expected:
        done = preval(inputs[name])
        assert done["code"] == 0, done["err"]
        _expected[name] = done["out"]
    return _expected[name]


def assert_kept(done: dict, want: str, memory_limit: int | None) -> None:
    """Either the right numbers within the limit, or one line and exit 2: never a hang, an
    abort, a panic or a traceback."""
    err = done["err"]
    assert done["code"] != "timeout", "hung"
    for word in ("Traceback", "panicked", "PanicException", "memory allocation of"):
        assert word not in err, err
    if done["code"] == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("preval: error: "), err
        assert "limit" in lines[0]
        return
    assert done["code"] == 0, err
    assert done["out"] == want
    if memory_limit is not None:
        assert done["rss"] <= memory_limit, f"peak {done['rss'] / MB:.0f} MB"


NAMES = [f"{kind}-{order}" for kind in ("parquet", "csv", "trec") for order in ("grouped", "join")]
FAST = {"parquet-grouped", "parquet-join", "trec-join"}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("limit_mb", [500, 800])
def test_memory_limit_holds_under_an_address_space_limit(inputs, name: str, limit_mb: int):
    if not thorough() and (name not in FAST or limit_mb != 800):
        pytest.skip("thorough profile (CI) only")
    limit = limit_mb * MB
    args = [*inputs[name], "--memory-limit", f"{limit_mb}MB"]
    done = preval(args, address_space=2 * 2**30)
    assert_kept(done, expected(inputs, name), limit)


@pytest.mark.parametrize("name", NAMES)
def test_address_space_just_above_the_memory_limit(inputs, name: str) -> None:
    # RLIMIT_AS just above --memory-limit: Polars reserves more address space than that, so
    # the command must say so in one line (or, with room enough, finish)
    if not thorough() and name not in FAST:
        pytest.skip("thorough profile (CI) only")
    done = preval([*inputs[name], "--memory-limit", "800MB"], address_space=900 * MB)
    assert_kept(done, expected(inputs, name), 800 * MB)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("space_mb", [1600, 2048])
def test_an_address_space_limit_alone_finishes_or_says_so(inputs, name: str, space_mb: int):
    if not thorough() and (name not in FAST or space_mb != 1600):
        pytest.skip("thorough profile (CI) only")
    done = preval(inputs[name], address_space=space_mb * MB)
    assert_kept(done, expected(inputs, name), None)


def test_a_limit_below_what_the_command_takes_is_one_line_before_any_work(
    inputs, tmp_path: Path
) -> None:
    out = tmp_path / "pq.parquet"
    done = preval([*inputs["parquet-grouped"], "--memory-limit", "50MB", "--per-query", str(out)])
    assert done["code"] == 2, done["err"]
    (line,) = done["err"].strip().splitlines()
    assert "cannot be evaluated within the memory limit of 50 MB" in line
    assert not out.exists()


def test_the_model_picks_the_largest_chunks_that_fit_and_refuses_below_its_floor() -> None:
    mb = 2**20
    # 100 MB of data at 50 bytes a row: two workers and one chunk read ahead hold
    # 50 x rows x (6 x 2 + 1) bytes, so rows = 100 MB / 650 = 161,319
    fit = budget.shape(100 * mb, 50, chunk_rows=2_000_000, workers=2, read_ahead=1)
    assert fit == budget.Shape(100 * mb // 650, 2, 1)
    # never above the usual chunk
    assert budget.shape(10**12, 50, chunk_rows=2_000_000, workers=2, read_ahead=1).chunk_rows == (
        2_000_000
    )
    # 6 MB: two workers would get 9,679 rows (< 20,000); one worker gets 6 MB / 300 = 20,971
    fit = budget.shape(6 * mb, 50, chunk_rows=2_000_000, workers=2, read_ahead=1)
    assert fit == budget.Shape(6 * mb // 300, 1, 0)
    with pytest.raises(InputError, match="within the memory limit"):
        budget.shape(5 * mb, 50, chunk_rows=2_000_000, workers=2, read_ahead=1)
    # the budget is the lower of the two limits, less what the process holds beside its data
    assert budget.data_budget(None, None) is None
    assert budget.data_budget(1000 * mb, None) == 1000 * mb - budget.BASE_RSS
    assert budget.data_budget(1000 * mb, None, text=True) == 1000 * mb - budget.base(True)
    # 200 MB of data, mapped at ADDRESS_PER_BYTE bytes of address space each, beside the base
    space = budget.BASE_ADDRESS + int(200 * mb * budget.ADDRESS_PER_BYTE)
    assert budget.data_budget(None, space) == 200 * mb
    assert budget.data_budget(100 * mb + budget.BASE_RSS, space) == 100 * mb
