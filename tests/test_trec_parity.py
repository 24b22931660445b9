"""`preval trec` on generated TREC files against pytrec_eval, value by value.

A seeded generator writes 3 run files (distinct tags) and a qrels file with what trips
trec_eval clones up: heavy score ties (few distinct values, and pairs such as 0.1 and
0.1 + 1e-12 that are equal as float32, so that the docno tie-breaker decides), docnos whose
byte order differs from their numeric order, graded labels 0..3, unjudged retrieved documents,
judged documents nobody retrieved, queries without a relevant document, judged queries a run
does not answer, run queries without judgments, and fields separated by single spaces, tabs and
runs of blanks. Labels stay >= 0 (pytrec_eval misbehaves on negative grades with ndcg).

Every per-query line of ``preval trec -q -m all_trec`` whose measure pytrec_eval computes must
equal pytrec_eval's value formatted as trec_eval formats it (``%6.4f`` / integer), string for
string; the ``all`` lines must equal the mean (or sum, for counts) of those values, and
gm_map / gm_bpref the geometric mean with trec_eval's 1e-5 floor. Configurations: default,
-l 2, -M 10 (pytrec_eval gets each query's top 10 in trec_eval order), -J, -c, -c -J, and
--trec-version 10 with -c. Every pytrec_eval call runs in a worker process with a timeout.

One explained difference is accepted: where -J leaves a query no document, trec_eval's
iprec_at_recall computes 0/0 and pytrec_eval reports NaN; preval prints 0.0000.
"""

from __future__ import annotations

import concurrent.futures as cf
import math
import random
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from preval.cli import main

pytrec_eval = pytest.importorskip("pytrec_eval")

SEEDS = (7, 2024, 31337)
TAGS = ("bm25", "dense.v2", "hybrid")
SEPARATORS = (" ", "\t", "   ", " \t ", "\t\t")

# pytrec_eval measures compared line by line: exact names, then name prefixes
EXACT = {
    "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "infAP",
    "11pt_avg", "ndcg", "set_P", "set_recall", "set_F", "num_nonrel_judged_ret", "relative_P",
    "G", "ndcg_rel", "Rndcg",
}  # fmt: skip
PREFIXES = ("iprec_at_recall_", "P_", "recall_", "ndcg_cut_", "map_cut_", "success_", "relative_P_")
COUNTS = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}
PYTREC_MEASURES = {
    "num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "recall", "infAP", "11pt_avg", "ndcg", "ndcg_cut", "map_cut",
    "relative_P", "success", "set_P", "set_recall", "set_F", "num_nonrel_judged_ret",
    "G", "ndcg_rel", "Rndcg",
}  # fmt: skip


def compared(name: str) -> bool:
    return name in EXACT or name.startswith(PREFIXES)


# ---------------------------------------------------------------------------------------------
# The generated case
# ---------------------------------------------------------------------------------------------


@dataclass
class Case:
    qrels: dict[str, dict[str, int]]
    runs: dict[str, dict[str, dict[str, float]]]  # tag -> query -> doc -> score
    qrels_path: Path
    run_paths: list[Path]


def _docno(rnd: random.Random, n: int) -> str:
    # byte order differs from numeric order ("d10" < "d9"), and case matters ("D" < "d")
    return rnd.choice(["d{}", "D{}", "doc-{:03d}", "d{}x"]).format(n)


def make_case(seed: int, directory: Path) -> Case:
    rnd = random.Random(seed)
    docs = sorted({_docno(rnd, n) for n in range(60)})
    queries = [str(300 + i) for i in range(12)] + ["q7", "Q10", "q_only_judged"]
    run_only = ["999", "q_not_judged"]  # run queries without qrels
    qrels: dict[str, dict[str, int]] = {}
    for q in queries:
        pool = rnd.sample(docs, rnd.randint(1, 20))  # R < 32: no %6.4f half-way cases
        grades = [0] if rnd.random() < 0.15 else [0, 0, 0, 1, 2, 3]  # some R = 0
        qrels[q] = {d: rnd.choice(grades) for d in pool}
    runs: dict[str, dict[str, dict[str, float]]] = {}
    for s, tag in enumerate(TAGS):
        run: dict[str, dict[str, float]] = {}
        for q in queries + run_only:
            unjudged_only = s == 0 and q == queries[0]
            if q == "q_only_judged" or (rnd.random() < 0.12 and not unjudged_only):
                continue  # a judged query this run does not answer
            if unjudged_only:
                retrieved = rnd.sample([d for d in docs if d not in qrels[q]], 8)
            else:
                retrieved = rnd.sample(docs, rnd.randint(1, 35))
            mode = rnd.choice(["one", "few", "float32", "spread"])
            scores = {}
            for d in retrieved:
                if mode == "one":
                    scores[d] = 0.5
                elif mode == "few":
                    scores[d] = rnd.choice([3.0, 2.0, 1.0, -1.5])
                elif mode == "float32":
                    scores[d] = rnd.choice([0.1, 0.1 + 1e-12, 0.25, 0.25 - 1e-13, 7.0])
                else:
                    scores[d] = round(rnd.uniform(-10, 10), 2)
            run[q] = scores
        runs[tag] = run
    qrels_path = directory / "qrels.txt"
    lines = [
        f"{q}{rnd.choice(SEPARATORS)}0{rnd.choice(SEPARATORS)}{d}{rnd.choice(SEPARATORS)}{lab}"
        for q, judged in qrels.items()
        for d, lab in judged.items()
    ]
    rnd.shuffle(lines)
    qrels_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run_paths = []
    for i, (tag, run) in enumerate(runs.items()):
        rows = [(q, d, score) for q, scores in run.items() for d, score in scores.items()]
        rnd.shuffle(rows)  # neither file order nor the rank field decides the ranking
        text = []
        for rank, (q, d, score) in enumerate(rows):
            fields = [q, "Q0", d, str(rank), repr(score), tag]
            text.append("".join(f + rnd.choice(SEPARATORS) for f in fields[:-1]) + fields[-1])
        path = directory / f"run{i}.txt"
        path.write_text("\n".join(text) + "\n", encoding="utf-8")
        run_paths.append(path)
    return Case(qrels, runs, qrels_path, run_paths)


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def truncate(run: dict[str, dict[str, float]], depth: int) -> dict[str, dict[str, float]]:
    """Each query's top `depth` in trec_eval order: float32 score desc, then docno desc (bytes)."""
    out = {}
    for q, scores in run.items():
        order = sorted(scores, key=lambda d: (f32(scores[d]), d.encode()), reverse=True)
        out[q] = {d: scores[d] for d in order[:depth]}
    return out


# ---------------------------------------------------------------------------------------------
# pytrec_eval in a worker process, preval in-process
# ---------------------------------------------------------------------------------------------


def _pytrec(qrels: dict, run: dict, level: int, judged_only: bool) -> dict:
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, PYTREC_MEASURES, relevance_level=level, judged_docs_only_flag=judged_only
    )
    return evaluator.evaluate(run)


@pytest.fixture(scope="module")
def peer():
    with cf.ProcessPoolExecutor(max_workers=1) as pool:

        def call(qrels: dict, run: dict, level: int = 1, judged_only: bool = False) -> dict:
            return pool.submit(_pytrec, qrels, run, level, judged_only).result(timeout=120)

        yield call


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def case(request, tmp_path_factory) -> Case:
    return make_case(request.param, tmp_path_factory.mktemp(f"trec{request.param}"))


def preval_trec(capsys: pytest.CaptureFixture[str], case: Case, *options: str) -> list[str]:
    argv = ["trec", "-q", "-m", "all_trec", *options, str(case.qrels_path)]
    rc = main([*argv, *map(str, case.run_paths)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "Traceback" not in err
    return out.splitlines()


@dataclass(frozen=True)
class Parsed:
    per_query: dict[str, dict[str, dict[str, str]]]  # run -> query -> measure -> line
    summary: dict[str, dict[str, str]]  # run -> measure -> line
    order: dict[str, list[tuple[str, str]]]  # run -> [(query, measure)] as printed


def parse(lines: list[str]) -> Parsed:
    per_query: dict = {t: {} for t in TAGS}
    summary: dict = {t: {} for t in TAGS}
    order: dict = {t: [] for t in TAGS}
    for line in lines:
        run, name, qid, value = line.split("\t")
        assert value.strip() == value and value, line
        measure = name.rstrip(" ")
        assert name == f"{measure:<22}", line
        if qid == "all":
            assert measure not in summary[run], line
            summary[run][measure] = line
        else:
            assert measure not in per_query[run].get(qid, {}), line
            per_query[run].setdefault(qid, {})[measure] = line
        order[run].append((qid, measure))
    return Parsed(per_query, summary, order)


def line(run: str, measure: str, qid: str, value: str) -> str:
    return f"{run}\t{measure:<22}\t{qid}\t{value}"


def fmt(measure: str, value: float) -> str:
    return str(int(value)) if measure in COUNTS else f"{value:6.4f}"


def assert_summary_value(got_line: str, want: float, measure: str) -> None:
    """%6.4f of a mean: exact, unless the mean sits on a rounding boundary (summation order)."""
    got = got_line.rsplit("\t", 1)[1]
    expected = fmt(measure, want)
    if got == expected:
        return
    scaled = want * 10_000
    on_boundary = abs(scaled - math.floor(scaled) - 0.5) < 1e-6
    assert on_boundary and abs(float(got) - want) <= 0.5e-4 + 1e-9, (got_line, want)


# ---------------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------------

CONFIGS = {
    "default": [],
    "l2": ["-l", "2"],
    "M10": ["-M", "10"],
    "J": ["-J"],
    "c": ["-c"],
}


def expected_per_query(
    peer, case: Case, options: list[str]
) -> dict[str, dict[str, dict[str, float]]]:
    """pytrec_eval's values of the compared measures, per run and query.

    NaN becomes 0: trec_eval computes iprec_at_recall from num_rel_ret / num_ret, which is
    0/0 when -J leaves a query no document (so do iprec_at_recall_0.00, 11pt_avg, and every
    cutoff when R = 0); preval's rule is 0 where a denominator is 0 (see
    `test_judged_only_query_left_without_documents`).
    """
    level = int(options[options.index("-l") + 1]) if "-l" in options else 1
    depth = int(options[options.index("-M") + 1]) if "-M" in options else None
    out = {}
    for tag, run in case.runs.items():
        given = truncate(run, depth) if depth else run
        result = peer(case.qrels, given, level, "-J" in options)
        out[tag] = {
            q: {m: 0.0 if math.isnan(v) else v for m, v in values.items() if compared(m)}
            for q, values in result.items()
        }
    return out


def check_per_query(parsed: Parsed, want: dict, tag: str) -> None:
    got = parsed.per_query[tag]
    assert sorted(got) == sorted(want), tag
    for qid, values in want.items():
        printed = {m: text for m, text in got[qid].items() if compared(m)}
        assert sorted(printed) == sorted(values), (tag, qid)
        mismatches = [
            (printed[m], line(tag, m, qid, fmt(m, v)))
            for m, v in values.items()
            if printed[m] != line(tag, m, qid, fmt(m, v))
        ]
        assert not mismatches, mismatches


def check_order(parsed: Parsed, tag: str) -> None:
    """Queries ascending (as strings), each query's lines together, then the summary."""
    order = parsed.order[tag]
    queries = [q for q, _ in order if q != "all"]
    blocks = [q for i, q in enumerate(queries) if i == 0 or queries[i - 1] != q]
    assert blocks == sorted(set(queries))
    first_all = next(i for i, (q, _) in enumerate(order) if q == "all")
    assert all(q == "all" for q, _ in order[first_all:])
    assert order[first_all][1] == "runid"


def check_summary(
    parsed: Parsed, per_query: dict[str, dict[str, float]], tag: str, num_q: int | None = None
) -> None:
    """`all` lines: means of rates, sums of counts, gm_map, num_q and runid."""
    summary = parsed.summary[tag]
    n = len(per_query) if num_q is None else num_q
    assert summary["runid"] == line(tag, "runid", "all", tag)
    assert summary["num_q"] == line(tag, "num_q", "all", str(n))
    names = {m for values in per_query.values() for m in values}
    for m in names:
        total = sum(values[m] for values in per_query.values())
        want = total if m in COUNTS else total / n
        assert summary[m].startswith(line(tag, m, "all", "")), summary[m]
        assert_summary_value(summary[m], want, m)
    maps = [values["map"] for values in per_query.values()] + [0.0] * (n - len(per_query))
    gm_map = math.exp(sum(math.log(max(v, 1e-5)) for v in maps) / n)
    assert_summary_value(summary["gm_map"], gm_map, "gm_map")
    bprefs = [values["bpref"] for values in per_query.values()] + [0.0] * (n - len(per_query))
    gm_bpref = math.exp(sum(math.log(max(v, 1e-5)) for v in bprefs) / n)
    assert_summary_value(summary["gm_bpref"], gm_bpref, "gm_bpref")


@pytest.mark.parametrize("config", list(CONFIGS))
def test_per_query_and_summary_match_pytrec_eval(
    peer, case: Case, capsys: pytest.CaptureFixture[str], config: str
) -> None:
    """Every compared line equals pytrec_eval's; `all` = mean over the printed queries.

    Under -J this includes queries whose retrieved documents are all unjudged: trec_eval
    still evaluates them (num_ret 0) and counts them in num_q.
    """
    parsed = parse(preval_trec(capsys, case, *CONFIGS[config]))
    want = expected_per_query(peer, case, CONFIGS[config])
    for tag in TAGS:
        check_per_query(parsed, want[tag], tag)
        check_order(parsed, tag)
        if config != "c":
            check_summary(parsed, want[tag], tag)


# q2's only retrieved document is unjudged: -J leaves it no document at all
SMALL_QRELS = "q1 0 d1 1\nq2 0 d1 1\nq3 0 d1 1\n"
SMALL_RUN = "q1 Q0 d1 1 1.0 r\nq2 Q0 dX 1 1.0 r\n"
SMALL_DICTS = (
    {"q1": {"d1": 1}, "q2": {"d1": 1}, "q3": {"d1": 1}},
    {"q1": {"d1": 1.0}, "q2": {"dX": 1.0}},
)


def small_trec(tmp_path: Path, capsys: pytest.CaptureFixture[str], *options: str) -> list[str]:
    qrels_path = tmp_path / "qrels"
    qrels_path.write_text(SMALL_QRELS, encoding="utf-8")
    run_path = tmp_path / "run"
    run_path.write_text(SMALL_RUN, encoding="utf-8")
    names = ("num_q", "num_ret", "map", "iprec_at_recall.0", "11pt_avg")
    measures = [arg for name in names for arg in ("-m", name)]
    rc = main(["trec", "-q", *measures, *options, str(qrels_path), str(run_path)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out.splitlines()


def test_judged_only_query_left_without_documents(peer, tmp_path: Path, capsys) -> None:
    """-J: q2 is still evaluated (num_ret 0) and counted, as in trec_eval 9 / pytrec_eval.

    Explained difference: trec_eval's iprec_at_recall starts from num_rel_ret / num_ret = 0/0,
    so pytrec_eval gives NaN for iprec_at_recall_0.00 and 11pt_avg here; preval prints 0.
    """
    want = peer(*SMALL_DICTS, 1, True)
    assert sorted(want) == ["q1", "q2"]
    assert want["q2"]["num_ret"] == 0
    assert math.isnan(want["q2"]["iprec_at_recall_0.00"])
    assert math.isnan(want["q2"]["11pt_avg"])
    out = small_trec(tmp_path, capsys, "-J")
    assert f"{'num_ret':<22}\tq2\t0" in out
    assert f"{'map':<22}\tq2\t0.0000" in out
    assert f"{'iprec_at_recall_0.00':<22}\tq2\t0.0000" in out
    assert f"{'11pt_avg':<22}\tq2\t0.0000" in out
    assert f"{'num_q':<22}\tall\t2" in out
    assert f"{'map':<22}\tall\t0.5000" in out


def test_complete_judged_only_prints_query_left_without_documents(
    peer, tmp_path: Path, capsys
) -> None:
    out = small_trec(tmp_path, capsys, "-c", "-J")
    assert f"{'num_q':<22}\tall\t3" in out
    assert f"{'map':<22}\tall\t0.3333" in out
    printed = {text.split("\t")[1] for text in out} - {"all"}
    assert printed == set(peer(*SMALL_DICTS, 1, True)) == {"q1", "q2"}


def test_complete_judged_only_per_query_set_matches_pytrec_eval(
    peer, case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    parsed = parse(preval_trec(capsys, case, "-c", "-J"))
    want = expected_per_query(peer, case, ["-J"])
    for tag in TAGS:
        check_per_query(parsed, want[tag], tag)


def test_complete_averages_over_every_judged_query(
    peer, case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    """-c: per-query lines only for queries with results (9.x), `all` over all qrels queries."""
    parsed = parse(preval_trec(capsys, case, "-c"))
    want = expected_per_query(peer, case, [])
    num_q = len(case.qrels)
    for tag in TAGS:
        answered = want[tag]
        assert set(parsed.per_query[tag]) == set(answered)
        assert set(answered) < set(case.qrels)  # some judged queries are not answered
        summary = parsed.summary[tag]
        assert summary["num_q"] == line(tag, "num_q", "all", str(num_q))
        total_map = sum(values["map"] for values in answered.values())
        assert_summary_value(summary["map"], total_map / num_q, "map")
        check_summary(parsed, with_unanswered(case, answered), tag, num_q)


def with_unanswered(case: Case, answered: dict[str, dict[str, float]]) -> dict:
    """-c: a judged query with no results scores 0 everywhere; its num_rel still counts."""
    complete = dict(answered)
    zeros = dict.fromkeys(next(iter(answered.values())), 0.0)
    for q, judged in case.qrels.items():
        if q not in answered:
            complete[q] = {**zeros, "num_rel": float(sum(v >= 1 for v in judged.values()))}
    return complete


def test_complete_judged_only_values_and_summary(
    peer, case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    """-c -J: printed lines equal pytrec_eval's; `all` averages over every qrels query.

    Only the values are checked here; which queries get lines is tested above.
    """
    parsed = parse(preval_trec(capsys, case, "-c", "-J"))
    want = expected_per_query(peer, case, ["-J"])
    for tag in TAGS:
        printed = {q: v for q, v in want[tag].items() if q in parsed.per_query[tag]}
        check_per_query(parsed, printed, tag)
        check_summary(parsed, with_unanswered(case, want[tag]), tag, len(case.qrels))


def test_trec_version_10_complete_prints_every_judged_query(
    case: Case, capsys: pytest.CaptureFixture[str]
) -> None:
    parsed = parse(preval_trec(capsys, case, "-c", "--trec-version", "10"))
    for tag in TAGS:
        got = parsed.per_query[tag]
        assert set(got) == set(case.qrels)
        for q in set(case.qrels) - set(case.runs[tag]):
            relevant = sum(v >= 1 for v in case.qrels[q].values())
            assert got[q]["num_ret"] == line(tag, "num_ret", q, "0")
            assert got[q]["num_rel"] == line(tag, "num_rel", q, str(relevant))
            assert got[q]["map"] == line(tag, "map", q, "0.0000")
            assert got[q]["P_5"] == line(tag, "P_5", q, "0.0000")
        assert parsed.summary[tag]["num_q"] == line(tag, "num_q", "all", str(len(case.qrels)))


def _tie_at_cutoff(scores: dict[str, float], depth: int) -> bool:
    ranked = sorted(map(f32, scores.values()), reverse=True)
    return len(ranked) > depth and ranked[depth - 1] == ranked[depth]


def test_generated_case_has_the_hard_parts(case: Case) -> None:
    """Guard the generator: the edge cases above must actually occur."""
    judged = set(case.qrels)
    assert any(all(v == 0 for v in j.values()) for j in case.qrels.values())  # R = 0
    for run in case.runs.values():
        assert judged - set(run)  # judged, not answered
        assert set(run) - judged  # answered, not judged
        scores = [s for q in run.values() for s in q.values()]
        assert any(a != b and f32(a) == f32(b) for a in scores for b in (0.1, 0.25))
        assert any(_tie_at_cutoff(q, 10) for q in run.values())  # -M 10 cuts through a tie
    first = case.runs[TAGS[0]]
    q0 = min(judged)
    assert not set(first[q0]) & set(case.qrels[q0])  # only unjudged documents retrieved
