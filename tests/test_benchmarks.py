"""The benchmark harness reports what happened: capped runs are capped, plots are drawn."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_run_once_caps_memory_and_time(tmp_path: Path) -> None:
    run = load("run")
    hog = [sys.executable, "-c", "import time; x = bytearray(400_000_000); time.sleep(30)"]
    status, wall, _, _ = run.run_once(hog, tmp_path, timeout=20, tag="m", memory_mb=150)
    assert status == "capped: memory > 0.15 GB"
    assert wall < 15
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    status, wall, _, _ = run.run_once(sleeper, tmp_path, timeout=1, tag="t")
    assert status == "capped: time > 1 s"
    assert wall < 10
    status, _, rss, _ = run.run_once([sys.executable, "-c", "pass"], tmp_path, 20, "ok")
    assert status == "ok" and rss > 0
    spin = [
        sys.executable,
        "-c",
        "import time; t = time.process_time() + 0.5\nwhile time.process_time() < t: pass",
    ]
    _, wall, _, cpu = run.run_once(spin, tmp_path, 20, "cpu")
    assert 0.5 <= cpu <= wall


def test_tools_take_turns_and_capped_runs_are_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = load("run")
    calls: list[str] = []
    status = {"floor": "ok", "preval": "ok", "pytrec_eval": "capped: memory > 16 GB"}

    def run_once(cmd, workdir, timeout, tag, memory_mb=float("inf")):
        calls.append(cmd[0])
        return status[cmd[0]], 1.0, 10.0, 0.5

    def skip(ctx):
        msg = "not installed"
        raise run.Skip(msg)

    tools = {name: (lambda ctx, name=name: [name]) for name in status}
    monkeypatch.setattr(run, "run_once", run_once)
    monkeypatch.setitem(run.TOOLS, "parquet", {**tools, "ranx": skip})
    monkeypatch.setattr(run, "FORMAT_OF", dict.fromkeys([*tools, "ranx"], "parquet"))
    monkeypatch.setattr(run, "warm", lambda paths: calls.append(f"warm {len(paths)}"))
    names = ["floor", "preval", "pytrec_eval", "ranx"]
    out = run.bench_size(names, tmp_path / "d", ["AP"], 3, 60, tmp_path)
    # round by round, each tool once per round, each run after the data is read into the page
    # cache; the capped tool only in the first round
    runs = ["floor", "preval", "pytrec_eval", "floor", "preval", "floor", "preval"]
    assert calls == [c for name in runs for c in ("warm 1", name)]
    assert out["floor"].wall == [1.0, 1.0, 1.0] and out["preval"].status == "ok"
    assert out["pytrec_eval"].status == "capped: memory > 16 GB"
    assert len(out["pytrec_eval"].wall) == 1
    assert out["ranx"].status == "skipped: not installed" and out["ranx"].wall == []


def test_warm_reads_every_file(tmp_path: Path) -> None:
    run = load("run")
    data, qrels = tmp_path / "a.parquet", tmp_path / "b.qrels"
    data.write_bytes(b"x" * 100)
    qrels.write_bytes(b"y" * 10)
    run.warm([data, qrels], block=7)  # several blocks, a short last one
    with pytest.raises(FileNotFoundError):
        run.warm([tmp_path / "missing"])


def test_report_marks_capped_runs_as_lower_bounds(tmp_path: Path) -> None:
    run = load("run")
    results = [
        (1000, "floor", run.Outcome("ok", [1.0], [100.0], [1.5])),
        (1000, "preval", run.Outcome("ok", [2.0], [200.0], [3.0], [0.5, 1.5, 2.5])),
        (1000, "pytrec_eval", run.Outcome("capped: memory > 16 GB", [30.0], [16000.0], [29.0])),
    ]
    args = run.argparse.Namespace(
        format="parquet", measures=["AP"], docs_per_query=100, int_ids=False, ranked=False,
        repeat=1, timeout=600.0,
    )  # fmt: skip
    table = run.report(results, args)
    # the load column: the median of the load averages as the runs began (none recorded: empty)
    assert "| 1k | preval | 2.00 | 2.0 | 1.0 | 3.00 | 2.0 | 200 | 2.0 | 1.5 | ok |" in table
    assert (
        "| 1k | pytrec_eval | >30.00 | >30.0 | >15.0 | >29.00 | >19.3 | >16000 | >160.0 |  | capped"
        in table
    )


def test_compare_outputs_strips_the_run_name_of_many_runs(tmp_path: Path) -> None:
    """preval trec given several runs starts each line with the run's name and a tab; without
    it, its output is the concatenation of trec_eval's, one call per run."""
    run = load("run")
    te = "map                   \tall\t0.5000\nP_5                   \tall\t0.2000\n"
    te2 = "map                   \tall\t0.2500\nP_5                   \tall\t0.4000\n"
    prefixed = "".join(f"r1\t{line}\n" for line in te.splitlines())
    prefixed += "".join(f"r2\t{line}\n" for line in te2.splitlines())
    for name, text in [("trec_eval-O2", te + te2), ("preval-trec", prefixed)]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "run0.stdout").write_text(text)
    outcomes = {name: run.Outcome("ok") for name in ("trec_eval-O2", "preval-trec")}
    run.compare_outputs(outcomes, tmp_path, multi=True)
    assert outcomes["preval-trec"].output == "output identical to trec_eval-O2's"
    (tmp_path / "preval-trec" / "run0.stdout").write_text(prefixed.replace("0.4000", "0.4001"))
    run.compare_outputs(outcomes, tmp_path, multi=True)
    assert outcomes["preval-trec"].output.startswith("OUTPUT DIFFERS")


def test_out_never_overwrites(tmp_path: Path) -> None:
    run = load("run")
    existing = tmp_path / "results.md"
    existing.write_text("history\n")
    with pytest.raises(SystemExit):
        run.main(["--out", str(existing), "--sizes", "10"])
    assert existing.read_text() == "history\n"


def test_plot_draws_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    plot = load("plot")
    results = {
        "machine": "test machine",
        "results": [
            {"format": "parquet", "rows": r, "tool": t, "status": s, "wall_s": [w], "rss_mb": [m]}
            for r, t, s, w, m in [
                (10**6, "preval", "ok", 0.6, 260),
                (10**7, "preval", "ok", 2.5, 800),
                (10**6, "pytrec_eval", "ok", 1.5, 540),
                (10**7, "pytrec_eval", "capped: memory > 16 GB", 40.0, 16000),
                (10**7, "ranx", "failed: boom", 1.0, 1.0),
            ]
        ],
    }
    src = tmp_path / "r.json"
    src.write_text(json.dumps(results))
    out = tmp_path / "scale.png"
    assert plot.main([str(src), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    series, machine = plot.load([src])
    assert machine == "test machine"
    assert series["pytrec_eval"][10**7] == (40.0, 16.0, True)
    assert "ranx" not in series  # a failed run is not a point


def test_generated_trec_files_in_join_order_hold_the_same_lines_scattered(tmp_path: Path) -> None:
    generate = load("generate")
    lines = {}
    for order in ("grouped", "join"):
        out = tmp_path / order
        argv = ["--rows", "3000", "--docs-per-query", "30", "--out", str(out), "--format", "trec",
                "--order", order, "--chunk-rows", "900"]  # fmt: skip
        assert generate.main(argv) == 0
        lines[order] = [
            (tmp_path / f"{order}.{kind}").read_text().splitlines() for kind in ("run", "qrels")
        ]
    for grouped, joined in zip(lines["grouped"], lines["join"], strict=True):
        assert sorted(grouped) == sorted(joined)  # each line, its rank included, as written
        queries = [line.split()[0] for line in joined]
        runs = sum(a != b for a, b in itertools.pairwise(queries)) + 1
        assert runs > 10 * len(set(queries))  # a query's lines are spread out, not together


def test_every_format_runs_preval_and_its_peers_by_default() -> None:
    run = load("run")
    assert run.DEFAULT_TOOLS["trec"] == [
        "floor-trec", "preval-trec", "trec_eval", "trec_eval-O2", "pytrec_eval-trec",
        "ir_measures-trec", "ranx-trec",
    ]  # fmt: skip
    assert run.DEFAULT_TOOLS["parquet"][:2] == ["floor", "preval"]
    assert not set(run.DEFAULT_TOOLS["parquet"]) & set(run.ENGINE_TOOLS)
