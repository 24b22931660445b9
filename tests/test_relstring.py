"""trec_eval's relstring on a hand-made case: every code, ties, -M, -J, -c, -l and the depth.

The expected strings are derived by hand from trec_eval's m_relstring.c and form_res_rels.c:
the first N ranked documents (score descending, ties by doc id descending), a label 0-9 as its
digit, '>' above 9, '.' a negative label (in the pool, not assessed), '-' a document not in
the qrels; after -M, then -J (judged documents only); per query only, no `all` line.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import polars as pl
import pytest

import preval
from preval import cli, engines
from preval import plan as build_plan
from preval.engines.chunked import collect_chunked
from preval.errors import MeasureError

QRELS = """\
q1 0 d1 2
q1 0 d2 0
q1 0 d3 12
q1 0 d4 -1
q1 0 d5 1
q1 0 ta 5
q1 0 tb 4
q1 0 d9 3
q2 0 e1 1
q3 0 f1 1
"""
# q1 ranks d1 d2 x1 d3 d4 d5 x2 tb ta (tb before ta: a tie, broken by doc id descending);
# q2 ranks e2 (not in the qrels) then e1; q3 retrieves nothing; q4 has no judgments
RUN = """\
q1 Q0 d1 1 10 sys
q1 Q0 ta 8 3 sys
q1 Q0 d2 2 9 sys
q1 Q0 x1 3 8 sys
q1 Q0 d3 4 7 sys
q1 Q0 d4 5 6 sys
q1 Q0 d5 6 5 sys
q1 Q0 x2 7 4 sys
q1 Q0 tb 9 3 sys
q2 Q0 e2 1 1.0 sys
q2 Q0 e1 2 0.5 sys
q4 Q0 g1 1 1.0 sys
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    return str(tmp_path / "qrels"), str(tmp_path / "run")


def trec(*args: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["trec", *args]) == 0
    return out.getvalue().splitlines()


def lines(name: str, values: dict[str, str]) -> list[str]:
    return [f"{name:<22}\t{q}\t'{v}'" for q, v in values.items()]


@pytest.mark.parametrize("version", ["9", "10"])
def test_codes_ties_and_default_length(files, version) -> None:
    got = trec("--trec-version", version, "-q", "-m", "relstring", *files)
    assert got == lines("relstring", {"q1": "20->.1-45", "q2": "-1"})
    # the length cuts the string; a length above the ranking's is the whole ranking
    got = trec("--trec-version", version, "-q", "-m", "relstring.3", *files)
    assert got == lines("relstring_3", {"q1": "20-", "q2": "-1"})
    assert trec("-q", "-m", "relstring.0", *files) == lines("relstring_0", {"q1": "", "q2": ""})


def test_depth_and_judged_only(files) -> None:
    assert trec("-q", "-M4", "-m", "relstring", *files) == lines(
        "relstring", {"q1": "20->", "q2": "-1"}
    )
    # -J drops x1, d4 (a negative label) and x2 from the ranking, e2 from q2's
    assert trec("-q", "-J", "-m", "relstring", *files) == lines(
        "relstring", {"q1": "20>145", "q2": "1"}
    )
    # -M first, then -J: of d1 d2 x1 d3, the judged ones
    assert trec("-q", "-M4", "-J", "-m", "relstring", *files) == lines(
        "relstring", {"q1": "20>", "q2": "1"}
    )


def test_complete_and_level(files) -> None:
    # -c: trec_eval 10 prints '' for a judged query the run did not answer, 9.0.8 no line
    expected = lines("relstring", {"q1": "20->.1-45", "q2": "-1"})
    assert trec("-q", "-c", "-m", "relstring", *files) == expected
    assert trec("--trec-version", "10", "-q", "-c", "-m", "relstring", *files) == [
        *expected,
        *lines("relstring", {"q3": ""}),
    ]
    # the codes are the labels, whatever the relevance level
    assert trec("-q", "-l3", "-m", "relstring", *files) == expected


def test_per_query_only(files) -> None:
    # no `all` line, nothing without -q, no row in --table
    assert trec("-m", "relstring", *files) == []
    got = trec("-m", "relstring", "-m", "num_ret", *files)
    assert got == ["num_ret               \tall\t11"]
    table = "\n".join(trec("--table", "-m", "relstring", "-m", "num_ret", *files))
    assert "num_ret" in table
    assert "relstring" not in table
    # all_trec prints it among the per-query lines, after P (trec_eval's measure order)
    names = [line.split("\t")[0].strip() for line in trec("-q", "-m", "all_trec", *files)]
    assert names.index("relstring") == names.index("P_1000") + 1


def test_bad_length(files, capsys) -> None:
    for bad in ("relstring.x", "relstring.-1", "relstring.1.5", "relstring.3,4"):
        assert cli.main(["trec", "-m", bad, *files]) != 0
        assert "trec measure relstring" in capsys.readouterr().err


def test_python_plan_engines_and_top_k() -> None:
    """A joined table through every engine, the chunked one in small chunks, and the top-K
    plan: the same strings; the long form and the summary leave them out."""
    table = pl.DataFrame(
        {
            "query": ["a"] * 5 + ["b"] * 3 + ["c"] * 12,
            "doc": [f"d{i:02d}" for i in range(20)],
            "score": [5.0, 4, 3, None, 1, 2.0, 2.0, 1] + [float(-i) for i in range(12)],
            "label": [3, None, -1, 2, 10, 0, 1, None] + [i % 3 for i in range(12)],
        }
    )
    # a: d03 is judged, not retrieved; b: d05 and d06 tie, d06 first (doc id descending)
    expected = {"a": "3-.>", "b": "10-", "c": "0120"}

    def strings(plan) -> dict[str, str]:
        wide = plan.per_query().collect()
        return dict(zip(wide["query"], wide["relstring@4"], strict=True))

    plan = build_plan(table, ["P@2"], relstrings=[4])
    for engine in engines.CHOICES:
        assert strings(engines.collect(plan, engine)) == expected
    assert strings(collect_chunked(plan, chunk_rows=2)) == expected
    top = build_plan(table, ["P@2"], relstrings=[4], rows_per_query=1000)
    assert top.top_k == 4  # the string's length is the plan's K
    assert strings(engines.collect(top, "in-memory")) == expected
    long = plan.per_query("long").collect()
    assert set(long["measure"]) == {"P@2"}
    wide = plan.per_query().collect()
    assert wide.schema["relstring@4"] == pl.String
    summary = preval.summarize(wide).collect()
    assert summary.columns == ["NumQ", "P@2"]
    with pytest.raises(MeasureError, match="relstrings"):
        build_plan(table, ["P@2"], relstrings=[-1])


def test_docs_example_output_is_real() -> None:
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "trec.md").read_text(encoding="utf-8")
    command, shown = re.search(
        r"\$ preval (trec [^\n]*relstring[^\n]*)\n```\n\n```text\n(.*?)```", page, flags=re.S
    ).groups()
    args = [str(root / a) if a.startswith("fixtures/") else a for a in command.split()[1:]]
    got = trec(*args)
    shown_lines = shown.splitlines()
    assert shown_lines[-1] == "..."  # (the first lines: test_readme.py reads the mark too)
    shown_lines = shown_lines[:-1]
    assert len(shown_lines) >= 4
    assert got[: len(shown_lines)] == shown_lines
