"""trec_eval compatibility: its measure names, `-m` grammar, measure sets and output format.

Every trec_eval measure preval implements maps onto catalogue measures (``P.5,10`` ->
``P@5``, ``P@10``), except ``relstring``, a per-query String column of the same plan
(``relstring.20`` -> ``relstring@20``, `build_plan`'s `relstrings`); nothing is computed
here. `TREC_MEASURES` lists them in the order of trec_eval's measure table (``measures.c``),
which is the order trec_eval prints in, whatever the order of ``-m`` options.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from .errors import MeasureError
from .measures import parse
from .ranking import relstring_column

LONG_CUTOFFS = ("5", "10", "15", "20", "30", "100", "200", "500", "1000")
RECALL_LEVELS = tuple(f"{i / 10:.2f}" for i in range(11))
RPREC_MULTS = tuple(f"{i / 10:.1f}" for i in range(2, 21, 2))


@dataclass(frozen=True)
class TrecMeasure:
    """A trec_eval measure: how its parameters become catalogue measures and output names."""

    name: str
    kind: str  # "float", "int", "runid", "numq", "string" (relstring)
    # one parameter (or None) -> a catalogue measure (for "string": a per-query String column)
    to_preval: Callable[[str | None], str]
    defaults: tuple[str, ...] = ()  # default parameters: one output line each
    # "long" / "float": a list of cutoffs; "pairs": rel_level=gain pairs; "": one optional
    # parameter
    cutoffs: str = ""
    per_query: bool = True

    def expand(self, params: Sequence[str] | None) -> list[tuple[str, str]]:
        """(output name, catalogue measure) pairs for the given or default parameters."""
        if self.cutoffs == "long":
            values = self._distinct(_long, params)
            return [(f"{self.name}_{v}", self.to_preval(str(v))) for v in values]
        if self.cutoffs == "mult":
            values = self._distinct(_positive, params)
            return [(f"{self.name}_{v:3.2f}", self.to_preval(repr(v))) for v in values]
        if self.cutoffs == "float":
            values = self._distinct(_fraction, params)
            return [(f"{self.name}_{v:3.2f}", self.to_preval(repr(v))) for v in values]
        if self.cutoffs == "pairs":  # rel_level=gain pairs: one measure, named as given
            if not params:
                return [(self.name, self.to_preval(None))]
            text = ",".join(params)
            return [(f"{self.name}_{text}", self.to_preval(text))]
        if params:
            if len(params) != 1:
                msg = f"trec measure {self.name} takes one parameter, got {','.join(params)}"
                raise MeasureError(msg)
            return [(f"{self.name}_{params[0]}", self.to_preval(params[0]))]
        return [(self.name, self.to_preval(None))]

    def _distinct(self, read: Callable[[str, str], float], params: Sequence[str] | None) -> list:
        """The cutoffs read, ascending; two equal ones (``P.5,05``) are refused, as trec_eval
        refuses them (``duplicate cutoffs detected``, meas_init.c), rather than printed once."""
        values = [read(self.name, p) for p in (params or self.defaults)]
        if len(set(values)) != len(values):
            given = ",".join(params or ())
            msg = f"trec measure {self.name}: duplicate cutoffs in {given!r} (as trec_eval says)"
            raise MeasureError(msg)
        return sorted(values)


def _long(name: str, text: str) -> int:
    # blanks around a cutoff and a leading '+' are read, as trec_eval's atol reads them
    # (`-m "P.5, 10"` is P_5 and P_10 there); anything else is refused
    digits = text.strip(" \t\n\v\f\r").removeprefix("+")
    if not digits.isascii() or not digits.isdigit() or int(digits) < 1:
        msg = f"trec measure {name}: cutoffs must be whole numbers > 0, got {text!r}"
        raise MeasureError(msg)
    return int(digits)


def _fraction(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:
        msg = f"trec measure {name}: cutoffs must be numbers from 0 to 1, got {text!r}"
        raise MeasureError(msg)
    return value


def _positive(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        msg = f"trec measure {name}: multiples must be positive numbers, got {text!r}"
        raise MeasureError(msg)
    return value


def _utility(param: str | None) -> str:
    if param is None:
        return "Utility"
    values = param.split(",")
    try:
        numbers = [float(v) for v in values]
    except ValueError:
        numbers = []
    if len(numbers) != 4 or not all(math.isfinite(v) for v in numbers):
        msg = f"trec measure utility takes four numbers a,b,c,d, got {param!r}"
        raise MeasureError(msg)
    return "Utility(" + ",".join(f"{k}={v!r}" for k, v in zip("abcd", numbers, strict=True)) + ")"


def _with_docs(measure: str, docs: int) -> str:
    """``Utility`` or ``Utility(a=...)`` with trec_eval's ``-N`` as its ``docs`` parameter."""
    if measure.endswith(")"):
        return f"{measure[:-1]},docs={docs})"
    return f"{measure}(docs={docs})"


def _fixed(measure: str) -> Callable[[str | None], str]:
    def build(param: str | None) -> str:
        if param is not None:
            msg = f"{measure} takes no parameter here, got {param!r}"
            raise MeasureError(msg)
        return measure

    return build


def _gains(measure: str) -> Callable[[str | None], str]:
    """trec_eval ``ndcg.1=3.5,2=9.0`` -> ``nDCG(gains={1:3.5,2:9.0})``."""

    def build(param: str | None) -> str:
        if param is None:
            return measure
        pairs = param.split(",")
        if not all(re.fullmatch(r"-?\d+=[-+0-9.eE]+", p) for p in pairs):
            msg = f"trec measure {measure}: parameters are rel_level=gain pairs, got {param!r}"
            raise MeasureError(msg)
        return f"{measure}(gains={{{param.replace('=', ':')}}})"

    return build


def _rbp(measure: str, extra: str) -> Callable[[str | None], str]:
    """trec_eval 10 ``rbp.p=0.8`` -> ``RBP(p=0.8,gain=scaled)`` (its default p is 0.9)."""

    def build(param: str | None) -> str:
        p = "0.9"
        for pair in (param or "").split(","):
            key, _, value = pair.partition("=")
            if pair and key != "p":
                msg = f"trec measure {measure}: the parameter is p=<persistence>, got {pair!r}"
                raise MeasureError(msg)
            p = value if pair else p
        return f"{measure}(p={p}{extra})"

    return build


def _relstring(param: str | None) -> str:
    """``relstring.N`` -> the per-query String column of the first N codes (default 10)."""
    if param is None:
        return relstring_column(10)
    if not param.isascii() or not param.isdigit():
        msg = f"trec measure relstring: the length must be a whole number >= 0, got {param!r}"
        raise MeasureError(msg)
    return relstring_column(int(param))


def relstring_cutoff(line: Line) -> int:
    """N of a relstring line (its column, `relstring_column`)."""
    return int(line.column.rpartition("@")[2])


def _set_f(param: str | None) -> str:
    # trec_eval's set_F parameter is beta squared: (x+1)PR/(xP+R)
    if param is None:
        return "F"
    try:
        beta2 = float(param)
    except ValueError:
        beta2 = -1.0
    if not beta2 > 0:
        msg = f"set_F takes a positive number (beta squared), got {param!r}"
        raise MeasureError(msg)
    return f"SetF(beta={beta2!r})"  # SetF's beta is trec_eval's weight, as given


TREC_MEASURES: list[TrecMeasure] = [
    TrecMeasure("runid", "runid", _fixed("NumQ"), per_query=False),
    TrecMeasure("num_q", "numq", _fixed("NumQ"), per_query=False),
    TrecMeasure("num_ret", "int", _fixed("NumRet")),
    TrecMeasure("num_rel", "int", _fixed("NumRel")),
    TrecMeasure("num_rel_ret", "int", _fixed("NumRelRet")),
    TrecMeasure("map", "float", _fixed("AP")),
    TrecMeasure("gm_map", "float", _fixed("GMAP"), per_query=False),
    TrecMeasure("Rprec", "float", _fixed("Rprec")),
    TrecMeasure("bpref", "float", _fixed("Bpref")),
    TrecMeasure("recip_rank", "float", _fixed("RR")),
    TrecMeasure("iprec_at_recall", "float", lambda p: f"IPrec@{p}", RECALL_LEVELS, "float"),
    TrecMeasure("P", "float", lambda p: f"P@{p}", LONG_CUTOFFS, "long"),
    # per query only: trec_eval prints no `all` line for it
    TrecMeasure("relstring", "string", _relstring),
    TrecMeasure("recall", "float", lambda p: f"R@{p}", LONG_CUTOFFS, "long"),
    TrecMeasure("infAP", "float", _fixed("infAP")),
    TrecMeasure("gm_bpref", "float", _fixed("GMBpref"), per_query=False),
    TrecMeasure("Rprec_mult", "float", lambda p: f"Rprec(mult={p})", RPREC_MULTS, "mult"),
    TrecMeasure("utility", "float", _utility, cutoffs="pairs"),
    TrecMeasure("11pt_avg", "float", _fixed("AP11")),
    TrecMeasure("binG", "float", _fixed("binG")),
    TrecMeasure("G", "float", _gains("G"), cutoffs="pairs"),
    TrecMeasure("ndcg", "float", _gains("nDCG"), cutoffs="pairs"),
    TrecMeasure("ndcg_rel", "float", _gains("nDCGRel"), cutoffs="pairs"),
    TrecMeasure("Rndcg", "float", _gains("Rndcg"), cutoffs="pairs"),
    TrecMeasure("ndcg_cut", "float", lambda p: f"nDCG@{p}", LONG_CUTOFFS, "long"),
    TrecMeasure("map_cut", "float", lambda p: f"AP@{p}", LONG_CUTOFFS, "long"),
    TrecMeasure("relative_P", "float", lambda p: f"R(norm=min)@{p}", LONG_CUTOFFS, "long"),
    TrecMeasure("success", "float", lambda p: f"Success@{p}", ("1", "5", "10"), "long"),
    TrecMeasure("set_P", "float", _fixed("SetP")),
    TrecMeasure("set_relative_P", "float", _fixed("SetRelP")),
    TrecMeasure("set_recall", "float", _fixed("SetR")),
    TrecMeasure("set_map", "float", _fixed("SetAP")),
    TrecMeasure("set_F", "float", _set_f),
    TrecMeasure("num_nonrel_judged_ret", "int", _fixed("NumNonrelJudgedRet")),
    # trec_eval 10 only: in all_trec with --trec-version 10 (9.0.8 has none of them)
    TrecMeasure("rbp", "float", _rbp("RBP", ",gain=scaled"), cutoffs="pairs"),
    TrecMeasure("rbp_resid", "float", _rbp("RBPResid", ""), cutoffs="pairs"),
    TrecMeasure("unj", "float", lambda p: f"Unjudged@{p}", ("5", "10", "20"), "long"),
]
BY_NAME = {m.name: m for m in TREC_MEASURES}
OFFICIAL = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
    "recip_rank", "iprec_at_recall", "P",
)  # fmt: skip
# trec_eval 9.0.8's all_trec; 10.0's adds ONLY_10 (measures.c's trec_names)
ONLY_10 = ("rbp", "rbp_resid", "unj")
ALL_TREC = tuple(m.name for m in TREC_MEASURES if m.name not in ONLY_10)
ALL_TREC_10 = tuple(m.name for m in TREC_MEASURES)
# trec_eval's `set` nickname: the measures of the retrieved set, whatever its order
SET = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
    "set_relative_P", "set_map", "set_F",
)  # fmt: skip
NICKNAMES = {"official": OFFICIAL, "all_trec": ALL_TREC, "set": SET}


@dataclass(frozen=True)
class Line:
    """One output line's measure: trec_eval's name, its kind and the catalogue column."""

    name: str
    kind: str
    column: str
    per_query: bool


def _trec_spelling(option: str) -> str | None:
    """trec_eval's ``-m`` for a measure spelt as preval, ranx or ir_measures spell it
    (``nDCG@10``, ``ndcg_cut_10``, ``MAP``, ``mrr``: ``ndcg_cut.10``, ``map``, ``recip_rank``),
    or None."""
    from .measures import parse  # (the error path only)

    try:
        wanted = parse(option, hint=False).name
    except MeasureError:
        return None
    cutoff = wanted.rpartition("@")[2] if "@" in wanted else None
    for m in TREC_MEASURES:
        for params in ([cutoff] if cutoff else []), None:
            try:
                found = [column for _, column in m.expand(params)]
            except (MeasureError, ValueError):
                continue
            if wanted in found:
                return f"{m.name}.{cutoff}" if params else m.name
    return None


def parse_m(options: Sequence[str], docs: int = 0, version: int = 9) -> list[Line]:
    """trec_eval ``-m`` options (``official``, ``P.5,10``, ``ndcg_cut.10`` ...) -> lines.

    As in trec_eval, the first parameter list given for a measure wins, and lines come in the
    order of trec_eval's measure table. `docs` is trec_eval's ``-N`` (the collection size,
    read by ``utility``'s d term only; 0 by default, as there); `version` trec_eval's
    (``all_trec`` of version 10 holds ``rbp``, ``rbp_resid`` and ``unj`` too).
    """
    nicknames = {**NICKNAMES, "all_trec": ALL_TREC_10} if version >= 10 else NICKNAMES
    chosen: dict[str, list[str] | None] = {}
    for option in options or ["official"]:
        name, _, params = option.partition(".")
        if name in nicknames and params:  # (trec_eval ignores them: refused, not guessed)
            msg = f"-m {option}: {name} names a set of measures and takes no parameters"
            raise MeasureError(msg)
        if name in nicknames:
            for member in nicknames[name]:
                chosen.setdefault(member, None)
            continue
        if name not in BY_NAME:
            known = ", ".join([*NICKNAMES, *BY_NAME])
            meant = _trec_spelling(option)
            meant = f"; did you mean -m {meant}?" if meant else ";"
            msg = f"unknown trec_eval measure {name!r} in -m {option}{meant} known here: {known}"
            raise MeasureError(msg)
        if "." in option and not params:
            msg = f"-m {option}: empty parameter list"
            raise MeasureError(msg)
        if chosen.get(name) is None:
            chosen[name] = params.split(",") if params else None
    lines = []
    for m in TREC_MEASURES:
        if m.name in chosen:
            for out_name, measure in m.expand(chosen[m.name]):
                if m.name == "utility" and docs:
                    measure = _with_docs(measure, docs)
                column = measure if m.kind == "string" else parse(measure).name
                lines.append(Line(out_name, m.kind, column, m.per_query))
    return lines


def format_value(line: Line, value: float | str) -> str:
    """A value as trec_eval prints it: %6.4f for rates (a NaN with its sign, as C prints it),
    %ld for counts, the runid as is, a relstring in single quotes."""
    if line.kind == "runid":
        return str(value)
    if line.kind == "string":
        return f"'{value}'"
    if line.kind in ("int", "numq"):
        return str(int(value))
    if math.isnan(value):  # C's printf keeps a NaN's sign ("-nan": x86's 0/0), Python drops it
        return f"{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    return f"{value:6.4f}"


def format_lines(
    per_query: pl.DataFrame | None,
    summary: pl.DataFrame | None,
    lines: list[Line],
    runid: str,
    query: str = "query",
) -> list[str]:
    """trec_eval output for one run: per-query lines (if given), then the ``all`` lines."""
    out = []
    if per_query is not None:
        for row in per_query.sort(query).iter_rows(named=True):
            for line in lines:
                if line.per_query:
                    value = format_value(line, row[line.column])
                    out.append(f"{line.name:<22}\t{row[query]}\t{value}")
    if summary is not None:
        row = summary.row(0, named=True) if summary.height else {}
        for line in lines:
            if line.kind == "string":  # per query only, as in trec_eval
                continue
            value = runid if line.kind == "runid" else row.get(line.column)
            if value is None:  # no query evaluated: trec_eval prints nothing to average
                continue
            out.append(f"{line.name:<22}\tall\t{format_value(line, value)}")
    return out
