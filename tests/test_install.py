"""What a bare `pip install .` promises: the extras are imported only where their feature is
used, and a missing one is one line naming it. (`.ci/run` also runs the README's quick start in
a fresh virtual environment with nothing but `pip install .`.)"""

from __future__ import annotations

import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import preval

ROOT = Path(__file__).resolve().parents[1]
# the optional dependencies, and what the test extra brings that a user need not have
BLOCKED = ("scipy", "matplotlib", "pyspark", "pandas", "duckdb", "sklearn", "pytrec_eval")
MODULES = [
    *sorted(
        m.name
        for m in pkgutil.walk_packages(preval.__path__, prefix="preval.")
        if not m.ispkg and m.name != "preval.__main__"  # (__main__ runs the command)
    ),
    "preval",
    "preval.engines",
    "preval.cli",
]


def _blocked(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where every optional package fails to import."""
    prelude = "import sys\n" + "".join(f"sys.modules[{n!r}] = None\n" for n in BLOCKED)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", prelude + code, *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def test_the_module_list_is_whole() -> None:
    assert {"preval.significance", "preval.plot", "preval.spark", "preval.cli"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_module_imports_without_the_extras(module: str) -> None:
    result = _blocked(f"import {module}")
    assert result.returncode == 0, result.stderr


def test_the_declared_dependencies_are_what_the_package_imports() -> None:
    # a module-level import of an undeclared package fails on a user's machine (issue 30)
    listed = re.search(r"^dependencies = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(), re.M)
    assert listed
    declared = {re.split(r"[<>=!~ ]", d.strip(' "'))[0] for d in listed.group(1).split(",")}
    assert declared == {"polars", "pyarrow", "numpy"}
    result = _blocked(
        "import preval.cli, preval.significance, preval.plot, preval.spark\n"
        "top = {m.split('.')[0] for m, v in sys.modules.items() if v is not None}\n"
        "print(sorted(top & {'scipy', 'matplotlib', 'pyspark', 'pandas', 'duckdb'}))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_import_preval_leaves_numpy_out() -> None:
    # start-up: only a session that compares or plots loads numpy
    result = _blocked("import preval\nprint('numpy' in sys.modules)")
    assert result.stdout.strip() == "False", result.stderr


def test_cli_help_and_evaluate_run_without_the_extras() -> None:
    code = "from preval.cli import main\nraise SystemExit(main(sys.argv[1:]))"
    assert _blocked(code, "--help").returncode == 0
    parquet = str(ROOT / "fixtures" / "example.parquet")
    result = _blocked(code, "evaluate", parquet, "--by", "system", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("system  NumQ")


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["evaluate", "{parquet}", "--by", "system", "--compare", "bm25", "-q"], "stats"),
        (["compare", "{parquet}", "--baseline", "bm25"], "stats"),
        (["plot", "roc", "{parquet}", "-o", "{tmp}/roc.png"], "plot"),
        (["evaluate", "{parquet}", "--by", "system", "--ci", "0.95", "-q"], "stats"),
        (["power", "{parquet}", "-m", "AP", "--delta", "0.02", "--baseline", "bm25"], "stats"),
        (["agreement", "{parquet}", "-m", "AP", "-m", "P@10", "--power"], "stats"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(args: list[str], extra: str, tmp_path) -> None:
    parquet = str(ROOT / "fixtures" / "example.parquet")
    argv = [a.format(parquet=parquet, tmp=tmp_path) for a in args]
    code = "from preval.cli import main\nraise SystemExit(main(sys.argv[1:]))"
    result = _blocked(code, *argv)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("preval: error:")
    assert f"pip install 'preval[{extra}]'" in last
    assert list(tmp_path.iterdir()) == []


def _imports() -> dict[str, set[str]]:
    """Each module of preval/ and the modules of preval/ it imports, at any depth of its
    file (the top, a function's body, a TYPE_CHECKING block), with the packages whose
    __init__ an import runs first."""
    import ast

    files = {}
    for path in (ROOT / "preval").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts[-1] == "__init__"
        files[".".join(parts[:-1] if package else parts)] = (path, package)

    def known(name: str) -> str:
        while name not in files:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for module, (path, package) in files.items():
        base = module.split(".") if package else module.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {known(a.name) for a in node.names if a.name.startswith("preval")}
            elif isinstance(node, ast.ImportFrom):
                anchor = base[: len(base) - node.level + 1] if node.level else []
                name = ".".join([*anchor, *([node.module] if node.module else [])])
                if name.startswith("preval"):
                    found |= {known(f"{name}.{a.name}") for a in node.names}
        for name in list(found):
            while "." in name:
                name = name.rpartition(".")[0]
                if not module.startswith(name + "."):
                    found.add(name)
        graph[module] = found - {module}
    return graph


def test_the_statistics_import_no_presentation() -> None:
    graph = _imports()
    assert graph["preval.significance"].isdisjoint({"preval.plot", "preval.report", "preval.cli"})
    assert "argparse" not in (ROOT / "preval" / "significance.py").read_text()
    assert all("preval.plot" not in graph[m] for m in graph if m.startswith("preval.significance"))


def test_no_import_cycle_between_the_modules() -> None:
    graph = _imports()

    def reaches(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for n in graph[todo.pop()] - seen:
                seen.add(n)
                todo.append(n)
        return seen

    cycles = sorted(m for m in graph if m in reaches(m))
    assert cycles == [], cycles


def test_discriminative_power_asks_for_scipy_before_it_runs() -> None:
    # asked inside its two deferred frames, the missing scipy was raised in one of Polars'
    # threads while the other ran, and `preval agreement --power` aborted at exit (rc 134, 139)
    code = (
        "from preval.meta_evaluation import discriminative_power\n"
        "from preval.extras import MissingDependencyError\n"
        "import polars as pl\n"
        "per_query = pl.DataFrame({'system': ['a', 'b'], 'query': ['q', 'q'], 'AP': [0.1, 0.2]})\n"
        "try:\n"
        "    discriminative_power(per_query, measures=['AP'])\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc)\n"
    )
    result = _blocked(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "discriminative power needs scipy, which is not installed: pip install 'preval[stats]'"
    )


@pytest.mark.parametrize(
    "call",
    ["preval.spark.evaluate(None, ['AP'])", "preval.spark.summarize(None)",
     "preval.spark.fuse([None, None])"],
)  # fmt: skip
def test_preval_spark_without_pyspark_names_the_extra(call: str) -> None:
    # it raised a bare "No module named 'pyspark'"
    code = (
        "import preval.spark\n"
        "from preval.extras import MissingDependencyError\n"
        f"try:\n    {call}\n"
        "except MissingDependencyError as exc:\n    print(exc)\n"
    )
    result = _blocked(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "preval.spark needs pyspark, which is not installed: pip install 'preval[spark]'"
    )


def test_compare_without_scipy_names_what_needs_it() -> None:
    # every test's row has the t interval of its delta: the message named "the t-test's
    # interval" when randomization was asked
    code = (
        "import preval, polars as pl\n"
        "from preval.extras import MissingDependencyError\n"
        "per_query = pl.DataFrame({'system': ['a', 'a', 'b', 'b'], 'query': ['q', 'r'] * 2,\n"
        "                          'AP': [0.1, 0.3, 0.2, 0.5]})\n"
        "try:\n"
        "    preval.compare(per_query, baseline='a', test='randomization').collect()\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc)\n"
    )
    result = _blocked(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "compare's interval of each delta needs scipy, which is not installed: "
        "pip install 'preval[stats]'"
    )
