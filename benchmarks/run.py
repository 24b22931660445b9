"""End-to-end benchmark of `preval evaluate` against a floor and peer tools.

Usage::

    python benchmarks/run.py --sizes 1000000 10000000 [--repeat 3] [--format parquet|trec] \
        [--measures AP RR Rprec P@5 P@10] [--out NEW.md | --append benchmarks/results.md]
    python benchmarks/run.py --format trec --runs 100 --sizes 10000 --tools preval-trec \
        trec_eval-O2   # 100 runs: one preval call against 100 calls of each peer

For each size the data is generated once by ``benchmarks/generate.py`` (cached
in ``benchmarks/.data/``): a joined Parquet table with ``--format parquet``
(default), a TREC run + qrels pair of text files with ``--format trec``. Then
every tool of that format in ``TOOLS`` runs as a separate subprocess
``--repeat`` times, the tools taking turns (round 1 runs each once, then round 2 ...), so
that a drift in the machine's speed reaches every tool alike. Wall time (perf_counter around
spawn..reap) and peak RSS (``ru_maxrss`` from ``os.wait4`` of that very child) are recorded;
the table reports medians, the ratio to the floor of that format, and the peak
memory in MB.

Adding a peer = one command-builder function registered in ``TOOLS[format]``:
it gets a ``Context`` and returns the argv to run, or raises ``Skip(reason)``.

The table goes to stdout, and to ``--out`` (a new file: an existing one is never overwritten)
or ``--append`` (added at the end of a file, e.g. results.md, whose history stays).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
DEFAULT_MEASURES = ["AP", "RR", "Rprec", "P@5", "P@10"]
# preval measure name -> trec_eval name, for `preval trec`
TREC_MEASURES = {
    "AP": "map",
    "RR": "recip_rank",
    "Rprec": "Rprec",
    "P@5": "P.5",
    "P@10": "P.10",
    "P@20": "P.20",
    "nDCG": "ndcg",
    "nDCG@10": "ndcg_cut.10",
    "R@100": "recall.100",
}


class Skip(Exception):
    """Raised by a command builder when its tool cannot run here."""


@dataclass
class Context:
    data: Path  # the joined Parquet table, or the TREC run file
    measures: list[str]
    workdir: Path  # scratch directory for this tool's outputs
    qrels: Path | None = None  # the TREC qrels file (--format trec)
    runs: list[Path] = field(default_factory=list)  # --runs N: every run file (data the first)
    options: argparse.Namespace | None = None  # the command line (peer interpreter, builds)


@dataclass
class Outcome:
    status: str  # "ok", "failed: ...", "capped: ...", "skipped: ..."
    wall: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user + system seconds of the child
    load: list[float] = field(default_factory=list)  # 1-minute load average as the run began
    output: str = ""  # how its trec_eval-format output compares (`compare_outputs`)
    chained: bool = False  # one call per run file in one shell: its peak RSS is not its own


# --------------------------------------------------------------------------
# command builders: name -> argv
# --------------------------------------------------------------------------


def build_floor(ctx: Context) -> list[str]:
    return [sys.executable, str(PEERS / "floor.py"), str(ctx.data)]


def preval_command() -> list[str]:
    exe = shutil.which("preval") or shutil.which("preval", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "preval"]


def build_preval(ctx: Context) -> list[str]:
    cmd = [*preval_command(), "evaluate", str(ctx.data)]
    for m in ctx.measures:
        cmd += ["-m", m]
    return [*cmd, "--summary", str(ctx.workdir / "preval_summary.csv")]


def build_preval_engine(engine: str) -> Callable[[Context], list[str]]:
    """`preval evaluate --engine ENGINE`: the engines side by side on the same data."""

    def build(ctx: Context) -> list[str]:
        return [*build_preval(ctx), "--engine", engine]

    return build


def build_duckdb(ctx: Context) -> list[str]:
    return _parquet_peer("duckdb", "duckdb_peer.py", ctx)


def build_pytrec_eval(ctx: Context) -> list[str]:
    if importlib.util.find_spec("pytrec_eval") is None:
        msg = "pytrec_eval is not importable"
        raise Skip(msg)
    return [
        sys.executable,
        str(PEERS / "pytrec_eval_peer.py"),
        str(ctx.data),
        *ctx.measures,
        "--summary",
        str(ctx.workdir / "pytrec_eval_summary.csv"),
    ]


def _parquet_peer(module: str, script: str, ctx: Context) -> list[str]:
    """argv of a peer script that reads the joined Parquet table (skipped without ``module``)."""
    if importlib.util.find_spec(module) is None:
        msg = f"{module} is not importable (pip install '.[bench]')"
        raise Skip(msg)
    return [
        sys.executable,
        str(PEERS / script),
        str(ctx.data),
        *ctx.measures,
        "--summary",
        str(ctx.workdir / f"{module}_summary.csv"),
    ]


def build_ranx(ctx: Context) -> list[str]:
    return _parquet_peer("ranx", "ranx_peer.py", ctx)


def build_ir_measures(ctx: Context) -> list[str]:
    return _parquet_peer("ir_measures", "ir_measures_peer.py", ctx)


def _trec_files(ctx: Context) -> list[str]:
    if ctx.qrels is None:
        msg = "needs a TREC run + qrels pair (--format trec)"
        raise Skip(msg)
    return [str(ctx.qrels), *map(str, ctx.runs or [ctx.data])]


def build_floor_trec(ctx: Context) -> list[str]:
    return [sys.executable, str(PEERS / "floor_trec.py"), *_trec_files(ctx)]


def trec_measure_args(measures: list[str]) -> list[str]:
    """``-m`` options for `preval trec`; cutoffs of one measure are merged (``P.5,10``)."""
    cutoffs: dict[str, list[str]] = {}  # base name -> cutoffs, in first-seen order
    for m in measures:
        name = TREC_MEASURES.get(m, m)
        base, dot, cut = name.partition(".")
        cutoffs.setdefault(base, [])
        if dot:
            cutoffs[base].append(cut)
    args: list[str] = []
    for base, cuts in cutoffs.items():
        args += ["-m", f"{base}.{','.join(cuts)}" if cuts else base]
    return args


def build_preval_trec(ctx: Context) -> list[str]:
    # trec_eval-format lines go to stdout, which run_once writes to a file
    return [*preval_command(), "trec", *trec_measure_args(ctx.measures), *_trec_files(ctx)]


def build_pytrec_eval_trec(ctx: Context) -> list[str]:
    if importlib.util.find_spec("pytrec_eval") is None:
        msg = "pytrec_eval is not importable"
        raise Skip(msg)
    return [
        sys.executable,
        str(PEERS / "pytrec_eval_trec.py"),
        *_trec_files(ctx),
        *ctx.measures,
        "--summary",
        str(ctx.workdir / "pytrec_eval_summary.csv"),
    ]


def _peer_python(ctx: Context, module: str) -> str:
    """The interpreter of a peer library: --peer-python (a venv of its own), else this one."""
    python = getattr(ctx.options, "peer_python", None) or sys.executable
    if python == sys.executable and importlib.util.find_spec(module) is None:
        msg = f"{module} is not importable (pip install '.[bench]', or give --peer-python)"
        raise Skip(msg)
    return python


def _trec_peer(module: str, script: str, ctx: Context) -> list[str]:
    return [
        _peer_python(ctx, module), str(PEERS / script), *_trec_files(ctx), *ctx.measures,
        "--summary", str(ctx.workdir / f"{module}_summary.csv"),
    ]  # fmt: skip


def build_ir_measures_trec(ctx: Context) -> list[str]:
    return _trec_peer("ir_measures", "ir_measures_trec.py", ctx)


def build_ranx_trec(ctx: Context) -> list[str]:
    return _trec_peer("ranx", "ranx_trec.py", ctx)


def build_trec_eval(option: str) -> Callable[[Context], list[str]]:
    """trec_eval itself, the executable given by --trec-eval (as shipped: no -O) or
    --trec-eval-o2 (built with -O2); its output is trec_eval's, as preval trec's."""

    def build(ctx: Context) -> list[str]:
        exe = getattr(ctx.options, option, None)
        if not exe or not Path(exe).is_file():
            msg = f"no trec_eval build given (--{option.replace('_', '-')})"
            raise Skip(msg)
        return [exe, *trec_measure_args(ctx.measures), *_trec_files(ctx)]

    return build


# format -> tool name -> command builder; the first tool of each format is its floor
# preval's engines one by one: not run unless named with --tools
ENGINE_TOOLS = {
    f"preval-{e}": build_preval_engine(e)
    for e in ("chunked", "partitioned", "streaming", "in-memory")
}
TOOLS: dict[str, dict[str, Callable[[Context], list[str]]]] = {
    "parquet": {
        "floor": build_floor,
        "preval": build_preval,
        "duckdb": build_duckdb,
        "pytrec_eval": build_pytrec_eval,
        "ranx": build_ranx,
        "ir_measures": build_ir_measures,
        **ENGINE_TOOLS,
    },
    "trec": {
        "floor-trec": build_floor_trec,
        "preval-trec": build_preval_trec,
        "trec_eval": build_trec_eval("trec_eval"),
        "trec_eval-O2": build_trec_eval("trec_eval_o2"),
        "pytrec_eval-trec": build_pytrec_eval_trec,
        "ir_measures-trec": build_ir_measures_trec,
        "ranx-trec": build_ranx_trec,
    },
}
FLOOR = {fmt: next(iter(tools)) for fmt, tools in TOOLS.items()}
# what runs without --tools: every tool of the format but the single engines
DEFAULT_TOOLS = {fmt: [t for t in tools if t not in ENGINE_TOOLS] for fmt, tools in TOOLS.items()}
FORMAT_OF = {name: fmt for fmt, tools in TOOLS.items() for name in tools}


# --------------------------------------------------------------------------
# running and measuring one subprocess
# --------------------------------------------------------------------------


def _error_line(stderr_path: Path) -> str:
    lines = [
        ln.strip() for ln in stderr_path.read_text(errors="replace").splitlines() if ln.strip()
    ]
    if not lines:
        return "(no stderr)"
    # a Python traceback's first line says nothing; its last line says what failed
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    return line[:160]


def _rss_mb(pid: int) -> float:
    """Current resident memory of a process (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        pass
    return 0.0


def run_once(
    cmd: list[str], workdir: Path, timeout: float, tag: str, memory_mb: float = float("inf")
) -> tuple[str, float, float, float]:
    """Run cmd; return (status, wall seconds, peak RSS MB, CPU seconds) of that child.

    The child is killed when it runs longer than `timeout` seconds or its resident memory
    exceeds `memory_mb` (polled every 0.1 s), so that one peer cannot stall or swap the suite;
    the status then says "capped: ...".
    """
    out_path, err_path = workdir / f"{tag}.stdout", workdir / f"{tag}.stderr"
    timed_out = threading.Event()
    over_memory = threading.Event()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=err, cwd=workdir, start_new_session=True
            )
        except OSError as exc:
            return f"failed: {exc}", float("nan"), float("nan"), float("nan")

        def kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        def watch() -> None:
            while not done.wait(0.1):
                if _rss_mb(proc.pid) > memory_mb:
                    over_memory.set()
                    kill()
                    return

        done = threading.Event()
        timer = threading.Timer(timeout, kill)
        timer.start()
        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            _, wstatus, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            done.set()
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(wstatus)  # reaped by wait4
    rss_mb = usage.ru_maxrss * 1024 / 1e6  # Linux: ru_maxrss is in KiB
    cpu = usage.ru_utime + usage.ru_stime
    if over_memory.is_set():
        return f"capped: memory > {memory_mb / 1000:g} GB", wall, rss_mb, cpu
    if timed_out.is_set():
        return f"capped: time > {timeout:g} s", wall, rss_mb, cpu
    if proc.returncode != 0:
        return f"failed: {_error_line(err_path)}", wall, rss_mb, cpu
    return "ok", wall, rss_mb, cpu


def warm(paths: list[Path], block: int = 1 << 23) -> None:
    """Read `paths` once, so that every run finds them in the page cache.

    A run right after a peer that filled the memory (a capped 16 GB run) otherwise reads its
    data back from disk: 100M rows, preval 7.1 s before the capped peers and 10.9 s after them
    in one pass. Every tool starts warm instead, and the table measures the work, not the disk.
    """
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while f.read(block):
                pass


def bench_size(
    names: list[str],
    data: Path,
    measures: list[str],
    repeat: int,
    timeout: float,
    scratch: Path,
    qrels: Path | None = None,
    memory_mb: float = float("inf"),
    runs: list[Path] | None = None,
    options: argparse.Namespace | None = None,
) -> dict[str, Outcome]:
    """Every tool of `names` on one data set: `repeat` rounds, each running every tool once in
    turn, each run with the data files in the page cache (`warm`).

    Tools take turns rather than running their repeats back to back, so that a drift in the
    machine's speed over the minutes of a pass (seen here: ±30% between passes) reaches every
    tool alike and the ratios to the floor hold. A capped or failed run is not repeated.

    `runs` (several run files against one qrels): the tools of `MULTI_RUN` take them all in
    one call; every other tool runs once per run file, one process after the other, as a user
    of it does (one shell, the calls chained; its wall and CPU time are the sum).
    """
    runs = runs or []
    commands: dict[str, tuple[list[str], Path]] = {}  # name -> (argv, working directory)
    outcomes: dict[str, Outcome] = {}
    for name in names:
        workdir = scratch / name
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            build = TOOLS[FORMAT_OF[name]][name]
            cmd = build(Context(data, measures, workdir, qrels, runs, options))
            if len(runs) > 1 and name not in MULTI_RUN:
                each = [build(Context(r, measures, workdir, qrels, [], options)) for r in runs]
                cmd = ["sh", "-c", " && ".join(shlex.join(c) for c in each)]
            commands[name] = (cmd, workdir)
            outcomes[name] = Outcome("ok", chained=len(runs) > 1 and name not in MULTI_RUN)
        except Skip as exc:
            outcomes[name] = Outcome(f"skipped: {exc}")
    for i in range(repeat):
        for name, (cmd, workdir) in commands.items():
            outcome = outcomes[name]
            if outcome.status != "ok":
                continue
            warm([data] if qrels is None else [*(runs or [data]), qrels])
            load = os.getloadavg()[0]
            status, wall, rss, cpu = run_once(cmd, workdir, timeout, f"run{i}", memory_mb)
            print(
                f"  {name:<16} #{i + 1}: {status:<8.60} {wall:8.2f} s {cpu:8.2f} s CPU "
                f"{rss:9.1f} MB  load {load:.1f}",
                file=sys.stderr,
                flush=True,
            )
            outcome.wall.append(wall)
            outcome.rss_mb.append(rss)
            outcome.cpu.append(cpu)
            outcome.load.append(load)
            outcome.status = status
    compare_outputs(outcomes, scratch, multi=len(runs) > 1)
    return outcomes


# the tools whose stdout is trec_eval's output format, compared byte for byte
TREC_OUTPUT = ("trec_eval-O2", "trec_eval", "preval-trec")
# the tools that take several run files in one call
MULTI_RUN = ("floor-trec", "preval-trec")


def compare_outputs(outcomes: dict[str, Outcome], scratch: Path, *, multi: bool) -> None:
    """Set each trec_eval-format tool's `output`: whether its first run's stdout is the
    reference's (the first of `TREC_OUTPUT` that ran) byte for byte. preval trec given
    several runs starts each line with the run's name and a tab: without it, its lines are
    the reference's, run after run (one trec_eval call per run, in the same order)."""
    ran = [n for n in TREC_OUTPUT if n in outcomes and outcomes[n].status == "ok"]
    if len(ran) < 2:
        return
    reference = (scratch / ran[0] / "run0.stdout").read_bytes()
    for name in ran[1:]:
        text = (scratch / name / "run0.stdout").read_bytes()
        if multi and name == "preval-trec":
            text = b"".join(line.split(b"\t", 1)[1] for line in text.splitlines(keepends=True))
        same = text == reference
        outcomes[name].output = (
            f"output identical to {ran[0]}'s" if same else f"OUTPUT DIFFERS from {ran[0]}'s"
        )


# --------------------------------------------------------------------------
# data and report
# --------------------------------------------------------------------------


def ensure_data(
    rows: int,
    dpq: int,
    seed: int,
    int_ids: bool,
    data_dir: Path,
    timeout: float,
    fmt: str = "parquet",
    ranked: bool = False,
    order: str = "grouped",
) -> list[Path]:
    """The cached data files: ``[table.parquet]`` or ``[run, qrels]`` (generated if missing)."""
    ranked = ranked and fmt == "parquet"  # TREC runs are always written in rank order
    stem = f"rows{rows}_dpq{dpq}_seed{seed}{'_int' if int_ids else ''}{'_ranked' if ranked else ''}"
    stem += "_join" if order == "join" else ""
    suffixes = [".parquet"] if fmt == "parquet" else [".run", ".qrels"]
    paths = [data_dir / (stem + s) for s in suffixes]
    if all(p.exists() for p in paths):
        return paths
    data_dir.mkdir(parents=True, exist_ok=True)
    # generate.py writes OUT (parquet) or OUT.run + OUT.qrels (trec)
    tmp = data_dir / (stem + (".tmp.parquet" if fmt == "parquet" else ".tmp"))
    tmps = [tmp] if fmt == "parquet" else [data_dir / (stem + ".tmp" + s) for s in suffixes]
    cmd = [
        sys.executable,
        str(HERE / "generate.py"),
        "--rows",
        str(rows),
        "--docs-per-query",
        str(dpq),
        "--seed",
        str(seed),
        "--out",
        str(tmp),
        "--format",
        fmt,
    ]
    if int_ids:
        cmd.append("--int-ids")
    if ranked:
        cmd.append("--ranked")
    if order == "join":
        cmd += ["--order", "join"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, timeout=timeout)
    for t, p in zip(tmps, paths, strict=True):
        t.replace(p)
    names = " + ".join(str(p) for p in paths)
    print(f"generated {names} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return paths


def derive_runs(run: Path, n: int) -> list[Path]:
    """`run` and n - 1 runs derived from it (cached beside it): the same query and document
    lines, each run's scores a hash of (document, run number) with 3 decimals, so that each
    run ranks differently and ties occur; tags ``run1`` ... (the rank field is kept: trec_eval
    and preval ignore it)."""
    import polars as pl

    paths = [run] + [run.with_name(f"{run.stem}_r{i}{run.suffix}") for i in range(1, n)]
    missing = [(i, p) for i, p in enumerate(paths) if i and not p.exists()]
    if missing:
        base = pl.read_csv(run, separator=" ", has_header=False, quote_char=None,
                           new_columns=["query", "q0", "doc", "rank", "score", "tag"],
                           schema_overrides={"query": pl.String, "doc": pl.String})  # fmt: skip
        for i, path in missing:
            score = (pl.col("doc").hash(seed=i) % 1000).cast(pl.Float64) / 1000
            base.with_columns(score.alias("score"), pl.lit(f"run{i}").alias("tag")).write_csv(
                path, separator=" ", include_header=False, quote_style="never"
            )
    return paths


def human(n: int) -> str:
    for div, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= div and n % (div // 10) == 0:
            return f"{n / div:g}{suffix}"
    return str(n)


def machine() -> str:
    mem = ""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        mem = f", {pages / 2**30:.1f} GiB RAM"
    except (ValueError, OSError):
        pass
    versions = []
    dists = {"pytrec_eval": "pytrec_eval-terrier", "ir_measures": "ir-measures"}
    for mod in ("polars", "pyarrow", "duckdb", "pytrec_eval", "ranx", "ir_measures"):
        try:
            from importlib.metadata import version

            versions.append(f"{mod} {version(dists.get(mod, mod))}")
        except Exception:  # not installed
            continue
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores{mem}; "
        f"Python {platform.python_version()}; " + ", ".join(versions)
    )


def fmt(x: float, spec: str) -> str:
    return "" if x != x else format(x, spec)  # NaN -> empty


JOIN_TEXT = "rows in join order (each at a random position); "
FORMAT_TEXT = {
    "parquet": "parquet (one joined table `query, doc, score, label`, zstd)",
    "trec": "trec (a TREC run file + a qrels file, plain text, single spaces)",
}


def report(
    results: list[tuple[int, str, Outcome]],
    args: argparse.Namespace,
    files: dict[int, list[Path]] | None = None,
) -> str:
    reading = "reading Parquet" if args.format == "parquet" else "reading the text files"
    lines = [
        f"Benchmark run {dt.datetime.now().isoformat(timespec='seconds')} — {machine()}",
        "",
        f"Format: {FORMAT_TEXT[args.format]}. "
        f"Measures: {' '.join(args.measures)}; docs per query: {args.docs_per_query}; "
        f"{'Int64' if args.int_ids else 'string'} ids; "
        f"{'rows in ranking order within each query; ' if args.ranked else ''}"
        f"{JOIN_TEXT if getattr(args, 'order', '') == 'join' else ''}"
        f"median of {args.repeat} "
        f"run(s), the tools taking turns, data in the page cache; timeout {args.timeout:g} s. "
        f"Wall time is end to end (process start, imports, {reading}, computing, writing); "
        "CPU is the child's user + system time; peak RSS is the child's ru_maxrss; load is "
        "the machine's 1-minute load average as each run began (median; 2 cores: above 2, "
        "other work was waiting for a core and the times are inflated).",
    ]
    if getattr(args, "runs", 1) > 1:
        lines.append(
            f"{args.runs} runs of each size against one qrels file: preval-trec and the floor "
            "read them all in one call; every other tool runs once per run file, the calls "
            "one after the other in one shell (times are the sums)."
        )
    if files:
        sizes = "; ".join(
            f"{human(rows)}: " + " + ".join(f"{p.name} {p.stat().st_size / 1e6:.1f} MB" for p in ps)
            for rows, ps in files.items()
        )
        lines.append(f"Data files: {sizes}.")
    lines += [
        "",
        "| rows | tool | wall (s) | × floor | × preval | CPU (s) | × floor CPU | peak RSS (MB) "
        "| × floor RSS | load | status |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    # "× preval" compares with `preval` (auto); without it, with the first preval engine run
    mine: dict[int, float] = {}
    for rows, name, o in sorted(results, key=lambda r: r[1] not in ("preval", "preval-trec")):
        if name.startswith("preval") and o.status == "ok":
            mine.setdefault(rows, statistics.median(o.wall))
    floors: dict[int, Outcome] = {
        rows: o for rows, name, o in results if name in FLOOR.values() and o.status == "ok"
    }
    notes: list[str] = []
    for rows, name, o in results:
        wall = statistics.median(o.wall) if o.wall else float("nan")
        # (a chain's ru_maxrss is the shell's and its children's largest, as Linux counts it)
        rss = statistics.median(o.rss_mb) if o.rss_mb and not o.chained else float("nan")
        cpu = statistics.median(o.cpu) if o.cpu else float("nan")
        floor = floors.get(rows)
        fw = statistics.median(floor.wall) if floor else float("nan")
        fr = statistics.median(floor.rss_mb) if floor else float("nan")
        fc = statistics.median(floor.cpu) if floor and floor.cpu else float("nan")
        ok = o.status == "ok"
        status = o.status.replace("|", "\\|")
        if o.status.startswith("skipped"):
            notes.append(f"- {name} ({human(rows)} rows): {o.status}")
        # a capped run's time and memory are lower bounds: shown with ">"
        capped = o.status.startswith("capped")
        shown = ok or capped
        mark = ">" if capped else ""
        vs = wall / mine[rows] if rows in mine else float("nan")
        lines.append(
            f"| {human(rows)} | {name} | {mark}{fmt(wall, '.2f') if shown else ''} | "
            f"{mark}{fmt(wall / fw, '.1f') if shown else ''} | "
            f"{mark}{fmt(vs, '.1f') if shown else ''} | "
            f"{mark}{fmt(cpu, '.2f') if shown else ''} | "
            f"{mark}{fmt(cpu / fc, '.1f') if shown else ''} | "
            f"{mark}{fmt(rss, '.0f') if shown else ''} | "
            f"{mark}{fmt(rss / fr, '.1f') if shown else ''} | "
            f"{fmt(statistics.median(o.load), '.1f') if o.load else ''} | {status} |"
        )
        if o.output:
            notes.append(f"- {name} ({human(rows)} rows): {o.output}")
    if notes:
        lines += ["", "Notes:", *notes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark preval end to end.")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--measures", nargs="+", default=DEFAULT_MEASURES)
    parser.add_argument(
        "--out", type=Path, help="write the table to this new file (an existing one is refused)"
    )
    parser.add_argument(
        "--append", type=Path, help="add the table at the end of this file (e.g. results.md)"
    )
    parser.add_argument(
        "--runs", type=int, default=1,
        help="--format trec: this many runs of each size against one qrels (default 1)",
    )  # fmt: skip
    parser.add_argument("--trec-eval", help="trec_eval built as shipped (tool trec_eval)")
    parser.add_argument("--trec-eval-o2", help="trec_eval built with -O2 (tool trec_eval-O2)")
    parser.add_argument(
        "--peer-python", help="the Python of the peer libraries (ranx, ir_measures), if not this"
    )
    parser.add_argument(
        "--format",
        choices=list(TOOLS),
        default="parquet",
        help="data and tools: one joined Parquet table (default) or TREC run + qrels files",
    )
    parser.add_argument(
        "--tools",
        nargs="+",
        choices=list(FORMAT_OF),
        help="default: every tool of --format (parquet: "
        + ", ".join(TOOLS["parquet"])
        + "; trec: "
        + ", ".join(TOOLS["trec"])
        + ")",
    )
    parser.add_argument("--docs-per-query", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--int-ids", action="store_true")
    parser.add_argument(
        "--ranked",
        action="store_true",
        help="Parquet rows in ranking order within each query, as TREC runs are",
    )
    parser.add_argument(
        "--order",
        choices=["grouped", "join"],
        default="grouped",
        help="rows grouped by query (default) or in join order (each at a random position)",
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per subprocess (default 600)"
    )
    parser.add_argument(
        "--memory-limit",
        type=float,
        default=16.0,
        help="GB of resident memory per subprocess before it is killed (default 16)",
    )
    parser.add_argument(
        "--json", type=Path, help="also write the raw results here (input of plot.py)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=HERE / ".data",
        help="cache of generated data (git-ignored)",
    )
    parser.add_argument(
        "--no-cache", action="store_true", help="generate into a temporary directory instead"
    )
    args = parser.parse_args(argv)
    if args.tools is None:
        args.tools = list(DEFAULT_TOOLS[args.format])
    wrong = [t for t in args.tools if FORMAT_OF[t] != args.format]
    if wrong:
        parser.error(f"--tools {' '.join(wrong)}: not a tool of --format {args.format}")
    if args.out is not None and args.out.exists():
        parser.error(f"--out {args.out} exists: give a new file, or --append to it")
    if FLOOR[args.format] not in args.tools:
        args.tools.insert(0, FLOOR[args.format])  # ratios need the floor

    results: list[tuple[int, str, Outcome]] = []
    files: dict[int, list[Path]] = {}
    with tempfile.TemporaryDirectory(prefix="preval-bench-") as tmp:
        scratch = Path(tmp)
        data_dir = scratch / "data" if args.no_cache else args.data_dir
        for rows in args.sizes:
            paths = ensure_data(
                rows,
                args.docs_per_query,
                args.seed,
                args.int_ids,
                data_dir,
                args.timeout,
                args.format,
                args.ranked,
                args.order,
            )
            data, qrels = paths[0], (paths[1] if len(paths) > 1 else None)
            runs = derive_runs(data, args.runs) if args.runs > 1 else []
            print(f"{human(rows)} rows: {' + '.join(map(str, paths))}", file=sys.stderr)
            outcomes = bench_size(
                args.tools,
                data,
                args.measures,
                args.repeat,
                args.timeout,
                scratch / str(rows),
                qrels,
                args.memory_limit * 1000,
                runs,
                args,
            )
            results.extend((rows, name, outcomes[name]) for name in args.tools)
            files[rows] = paths
        table = report(results, args, files)  # before --no-cache data is deleted
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table)
    if args.append is not None:  # history stays: the table goes after it
        with args.append.open("a") as f:
            f.write("\n" + table)
    if args.json:
        records = [
            {"format": args.format, "rows": rows, "tool": name, "status": o.status,
             "wall_s": o.wall, "rss_mb": o.rss_mb, "cpu_s": o.cpu}
            for rows, name, o in results
        ]  # fmt: skip
        args.json.write_text(json.dumps({"machine": machine(), "results": records}, indent=1))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
