"""`preval trec` reproduces trec_eval's own test outputs (9.0.8 and 10.0), line for line.

The data and expected outputs are trec_eval's own test files, copied into
tests/data/trec_eval/ (its README says where from and how each output was made). For
`-m all_trec`, the expected file is filtered to the measures preval implements (the others
are listed in preval.trec); what remains must equal preval's output exactly: names, query
order, measure order, values to the printed 4 decimals and the integer counts.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from preval import cli, trec

DATA = Path(__file__).resolve().parent / "data" / "trec_eval"

VERSIONS = {9: "v9.0.8", 10: "v10.0"}
# expected file -> trec_eval arguments, as trec_eval was run (tests/data/trec_eval/README.md)
CASES = {
    "out.test.a": ["-m", "all_trec", "qrels.test", "results.test"],
    "out.test.aq": ["-m", "all_trec", "-q", "qrels.test", "results.test"],
    "out.test.aqc": ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"],
    "out.test.aqcM": ["-m", "all_trec", "-q", "-c", "-M100", "qrels.test", "results.trunc"],
    "out.test.aql": ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", "qrels.rel_level",
                     "results.test"],
}  # fmt: skip
# lines compared per file (a floor, so that filtering can never silently compare nothing)
MIN_LINES = {
    "out.test.a": 77, "out.test.aq": 299, "out.test.aqc": 225, "out.test.aqcM": 225,
    "out.test.aql": 299,
}  # fmt: skip
# relstring lines (per query only) in each expected file, at least: 9.0.8 prints none for the
# query -c adds (302 in results.trunc), 10.0 prints ''
RELSTRING_LINES = {"out.test.aq": 3, "out.test.aqc": 2, "out.test.aqcM": 2, "out.test.aql": 3}


def run_trec(args: list[str], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.chdir(DATA)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["trec", *args]) == 0
    return out.getvalue().splitlines()


# trec_eval 9.0.8 cannot read commented qrels: its README records that output for v10 only
@pytest.mark.parametrize(
    ("version", "qrels"),
    [(9, "qrels.test"), (10, "qrels.test"), (10, "qrels.test.with-comments")],
)
def test_official_measures_byte_for_byte(version, qrels, monkeypatch) -> None:
    got = run_trec(["--trec-version", str(version), qrels, "results.test"], monkeypatch)
    expected = (DATA / VERSIONS[version] / "out.test").read_text().splitlines()
    assert got == expected


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", CASES)
def test_all_trec_for_every_implemented_measure(version, name, monkeypatch) -> None:
    args = CASES[name]
    asked = [a[2:] or args[i + 1] for i, a in enumerate(args) if a.startswith("-m")]
    implemented = {line.name for line in trec.parse_m(asked, version=version)}
    expected = [
        line
        for line in (DATA / VERSIONS[version] / name).read_text().splitlines()
        if line.split("\t")[0].strip() in implemented
    ]
    got = run_trec(["--trec-version", str(version), *args], monkeypatch)
    assert got == expected
    assert len(got) >= MIN_LINES[name]
    relstrings = [line for line in got if line.startswith("relstring")]
    assert len(relstrings) >= RELSTRING_LINES.get(name, 0)
    assert "relstring_20" in implemented or name != "out.test.aql"


def test_versions_differ_where_trec_eval_did(monkeypatch) -> None:
    # iprec cutoffs: 9.0.8 (long)(p*R + 0.9), 10.0 lround(p*R) -> 0.3884 vs 0.3885 at 0.10
    args = ["-m", "iprec_at_recall.0.10,0.60", "qrels.test", "results.test"]
    v9 = run_trec(args, monkeypatch)
    v10 = run_trec(["--trec-version", "10", *args], monkeypatch)
    assert v9[-2:] == ["iprec_at_recall_0.10  \tall\t0.3884", "iprec_at_recall_0.60  \tall\t0.0822"]
    assert v10[-2:] == [
        "iprec_at_recall_0.10  \tall\t0.3885",
        "iprec_at_recall_0.60  \tall\t0.0858",
    ]
