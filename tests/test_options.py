"""Each option is declared once (preval.options.OPTIONS): the public functions' keywords, the
CLI's flags and the docs' table come from it, and every face reads the same input the same way."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import preval
import preval.plot
import preval.spark
from preval import options
from preval.cli import main

ROOT = Path(__file__).resolve().parents[1]
TREC = ROOT / "fixtures" / "trec"
ENTRIES = {
    "evaluate": preval.evaluate,
    "audit": preval.audit,
    "plan": preval.plan,
    "curve": preval.curve,
    "sql": preval.sql,
    "spark": preval.spark.evaluate,
    "plot": preval.plot.plot,
}


@pytest.mark.parametrize("entry", ENTRIES)
def test_each_function_offers_exactly_the_options_the_table_gives_it(entry: str) -> None:
    params = inspect.signature(ENTRIES[entry]).parameters
    taken = [n for n in params if n in options.OPTIONS]
    assert taken == options.supported(entry)
    for name in taken:
        assert params[name].default == options.OPTIONS[name].default
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
    assert "options" not in params  # internal: the keywords are the public face
    assert f"{taken[0]} :" in ENTRIES[entry].__doc__  # the docstring lists them


def spellings(text: str, window: int = 25, most: int = 12) -> int:
    """Places where `most` or more option names stand within `window` lines of each other: a
    signature, a keyword list or a dict of the options written out."""
    lines, found, last = text.splitlines(), 0, -window
    for i in range(len(lines)):
        chunk = "\n".join(lines[i : i + window])
        if (
            i >= last + window
            and sum(bool(re.search(rf"\b{name}\b", chunk)) for name in options.OPTIONS) >= most
        ):
            found, last = found + 1, i
    return found


def test_the_flat_option_list_is_written_in_two_places_at_most() -> None:
    # issue 31: the table and the objects that hold the values; every other module passes
    # the objects, or reads the few options it needs from them
    places = {}
    for path in sorted((ROOT / "preval").rglob("*.py")):
        n = spellings(path.read_text(encoding="utf-8"))
        if n:
            places[path.relative_to(ROOT).as_posix()] = n
    assert sum(places.values()) <= 2, places
    assert set(places) == {"preval/options.py"}, places


def test_a_function_refuses_an_option_it_does_not_take_by_name() -> None:
    table = pl.DataFrame({"query": ["q"], "doc": ["d"], "score": [1.0], "label": [1]})
    with pytest.raises(preval.InputError, match="curve does not take the option 'depth'"):
        preval.curve(table, depth=3)
    with pytest.raises(TypeError, match="did you mean 'relevance_level'"):
        preval.evaluate(table, ["AP"], relevance_levle=2)
    with pytest.raises(preval.InputError, match="ties must be one of"):
        preval.evaluate(table, ["AP"], ties="random")


def test_an_options_object_and_keywords_combine() -> None:
    path = ROOT / "fixtures" / "example.parquet"
    opts = preval.Options.of({"by": "system", "relevance_level": 2})
    got = preval.evaluate(path, ["P@10"], options=opts, depth=5).collect()
    want = preval.evaluate(path, ["P@10"], by="system", relevance_level=2, depth=5).collect()
    assert got.equals(want)


def test_cli_evaluate_offers_every_option_of_the_library() -> None:
    text = subprocess.run(
        [sys.executable, "-m", "preval", "evaluate", "--help"],
        capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    ).stdout  # fmt: skip
    for name in options.supported("evaluate"):
        flag = options.OPTIONS[name].cli_flags[-1]
        assert flag in text, flag


@pytest.mark.parametrize("run", ["bm25.run", "hybrid.run.gz"])
def test_evaluate_reads_trec_files_as_preval_trec_does(capsys, run: str) -> None:
    # issue 31: `preval evaluate RUN --qrels QRELS` on the TREC fixtures, the AP of trec -c
    qrels = TREC / "qrels.txt"
    assert main(["trec", "-c", "-m", "map", "-m", "P.10", str(qrels), str(TREC / run)]) == 0
    trec = dict((line.split()[0], line.split()[2]) for line in capsys.readouterr().out.splitlines())
    assert main(["evaluate", str(TREC / run), "--qrels", str(qrels), "-m", "AP", "-m", "P@10",
                 "--format", "csv", "-q"]) == 0  # fmt: skip
    summary = pl.read_csv(capsys.readouterr().out.encode())
    assert f"{summary['AP'][0]:.4f}" == trec["map"]
    assert f"{summary['P@10'][0]:.4f}" == trec["P_10"]
    assert summary["system"][0] in ("bm25", "hybrid")


def test_the_docs_table_is_generated_from_the_options() -> None:
    page = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- options:begin -->\n(.*?)\n<!-- options:end -->", page, re.S)
    assert table and table.group(1) == options.markdown_table()
    # every row keeps its six cells: a type such as `float | None` has its bar escaped
    for row in table.group(1).splitlines():
        assert len(re.split(r"(?<!\\)\|", row)) == 8, row


@pytest.mark.parametrize("engine", ["in-memory", "chunked", "partitioned"])
def test_a_result_reads_like_the_lazy_functions(engine: str) -> None:
    path = ROOT / "fixtures" / "example.parquet"
    kw = {"by": "system", "relevance_level": 2}
    # no name kept for the Result: its frames keep the engine's spill folder alive themselves
    per_query = preval.collect(preval.plan(path, ["AP", "NumRet"], **kw), engine=engine)
    per_query = per_query.per_query().collect()
    assert per_query.equals(preval.evaluate(path, ["AP", "NumRet"], **kw).collect())
    result = preval.collect(preval.plan(path, ["AP", "NumRet"], **kw), engine=engine)
    assert result.summary().collect().equals(preval.summarize(per_query, by="system").collect())
    assert result.audit().collect().equals(preval.audit(path, **kw).collect())
