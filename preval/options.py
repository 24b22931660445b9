"""The options of an evaluation: each declared once, in `OPTIONS`, and validated once.

`OPTIONS` is the one table of options (name, type, default, allowed values, help, CLI flag,
the entry points that take it). From it come the keyword options of every public function
(`accepts`), the flags of every subcommand (`add_arguments`, `from_args`) and the options
table of the docs (`markdown_table`). Adding an option is one row here and one field in the
object it belongs to:

* `Columns`: which input column plays which role (query, doc, score, label, by keys, subtopic);
* `Semantics`: what the measures mean (relevance level, ties, which queries count, ...);
* `Intervals`: the confidence intervals of a summary (level, method, resamples, seed);
* ``input_format``: how a path is read (the `Options` bundle holds it beside the others).

`Hints` are an engine's, never a caller's: what an engine knows of one piece of the input that
the plan cannot check (rows presorted, groups contiguous).
"""

from __future__ import annotations

import argparse
import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from numbers import Real
from typing import TYPE_CHECKING, Any

from . import validate
from .conventions import CONVENTIONS, get_convention
from .errors import InputError, PrevalError
from .ranking import EXPECTED, TIES

if TYPE_CHECKING:
    import polars as pl

QUERIES = ("judged", "retrieved")
DUPLICATES = ("error", "max", "first")
INPUT_FORMATS = ("auto", "table", "trec")

# The entry points, by the name `accepts` and `add_arguments` know them (``cli-trec`` takes
# trec_eval's own flags but for --input-format)
EVALUATE = frozenset({"evaluate", "audit", "plan", "spark", "cli-evaluate", "cli-compare"})
CURVE = frozenset({"curve", "plot", "cli-plot"})
SQL = frozenset({"sql"})
# the confidence intervals of a summary (`preval.summarize`, `Result.summary`, `evaluate --ci`);
# the subcommands that resample (compare's randomization and bootstrap tests) take the same
# --resamples and --seed flags: `add_arguments(parser, "cli-resampling")`
SUMMARY = frozenset({"summarize", "cli-evaluate"})
RESAMPLING = frozenset({"cli-resampling"})
CI_METHODS = ("t", "percentile", "bca")


def _check_choice(name: str, value: object, choices: Sequence[object]) -> None:
    if value not in choices:
        msg = f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}"
        raise InputError(msg)


def _count(text: str) -> int | str:
    """A CLI total: a whole number, or the name of a column holding each query's total."""
    return int(text) if text.strip().isdigit() else text


@dataclass(frozen=True)
class Option:
    """One option: where its value goes, its default and rule, and how each face spells it."""

    name: str
    goes_to: str  # "columns" | "semantics" | "source": the object that holds the value
    annotation: str  # the type, as the signature and the docs show it
    default: object
    help: str
    where: frozenset[str]  # the entry points that take it
    choices: tuple[object, ...] = ()
    flags: tuple[str, ...] = ()  # CLI spellings; () is --name-with-dashes
    metavar: str | None = None
    parse: Callable[[str], object] | None = None  # CLI text -> value
    repeat: bool = False  # a CLI flag given once per value (a list)

    @property
    def cli_flags(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)


def _column(role: str, where: frozenset[str], help: str = "") -> Option:
    return Option(role, "columns", "str", role, help or f"name of the {role} column",
                  where, metavar="COL")  # fmt: skip


OPTIONS: dict[str, Option] = {
    o.name: o
    for o in (
        _column("query", EVALUATE | CURVE | SQL),
        _column("doc", EVALUATE | CURVE | SQL),
        _column("score", EVALUATE | CURVE | SQL),
        _column("label", EVALUATE | CURVE | SQL),
        Option("by", "columns", "str | Sequence[str] | None", None,
               "key column(s) whose groups are evaluated separately, e.g. a system column "
               "(a column the qrels also have is a property of the query, joined on)",
               EVALUATE | CURVE | SQL, metavar="COL", repeat=True),
        Option("subtopic", "columns", "str | None", None,
               "the qrels' subtopic column: judgments per (query, subtopic, doc), for the "
               "diversity measures (alpha_nDCG@K, ERR_IA@K, NRBP, StRecall@K ...)",
               EVALUATE - {"spark", "cli-compare"}, metavar="COL"),
        Option("relevance_level", "semantics", "float", 1,
               "a document is relevant when label >= this level (trec_eval -l); nDCG uses the "
               "raw grades", EVALUATE | CURVE | SQL, flags=("-l", "--relevance-level"),
               metavar="N", parse=float),
        Option("ties", "semantics", "str | None", None,
               "order of equal scores: trec (default with a doc column: scores as float32, "
               "then doc id descending, as trec_eval 9), input (default without one: input "
               "row order), optimistic / pessimistic (relevant first / last), threshold (tied "
               "scores form one operating point, as scikit-learn's and Spark's curves), "
               "expected (the expected value over every order of the tied documents)",
               EVALUATE | CURVE, choices=(*TIES, EXPECTED)),
        Option("queries", "semantics", "str", "judged",
               "judged: every judged query counts, 0 where nothing was retrieved (trec_eval "
               "-c); retrieved: judged queries with a result (trec_eval's default)",
               EVALUATE | SQL | CURVE, choices=QUERIES),
        Option("duplicates", "semantics", "str", "error",
               "a repeated (query, doc): error, or keep the max score (max label in qrels) or "
               "the first row", EVALUATE, choices=DUPLICATES),
        Option("depth", "semantics", "int | None", None,
               "evaluate the top N documents of each ranking only (trec_eval -M)",
               EVALUATE, flags=("-M", "--depth"), metavar="N", parse=int),
        Option("judged_only", "semantics", "bool", False,
               "drop unjudged retrieved documents before ranking (trec_eval -J)",
               EVALUATE, flags=("-J", "--judged-only")),
        Option("unjudged_label", "semantics", "float | None", None,
               "label given to retrieved documents that have no judgment, in judged queries: "
               "0 counts them non-relevant, the relevance level (or a higher grade) relevant, "
               "and R counts them (the bounds of docs/semantics.md); None: unjudged",
               EVALUATE, metavar="LABEL", parse=float),
        Option("trec_version", "semantics", "int", 9,
               "9: trec_eval 9 and pytrec_eval (scores tie as float32; IPrec cutoff "
               "floor(r*R + 0.9)); 10: doubles, IPrec cutoff round(r*R)",
               EVALUATE | SQL, choices=(9, 10), parse=int),
        Option("convention", "semantics", "str", "trec",
               "the evaluator whose tie order, label meaning, -inf scores and curve end points "
               "are followed", EVALUATE | CURVE, choices=tuple(CONVENTIONS)),
        Option("num_positives", "semantics", "int | str | None", None,
               "relevant documents per query, misses included (LingPipe addMisses, VLFeat "
               "NumPositives): a number, or a column holding each query's total",
               EVALUATE | CURVE - {"plot", "cli-plot"}, metavar="N|COL", parse=_count),
        Option("num_negatives", "semantics", "int | str | None", None,
               "non-relevant documents per query, misses included (VLFeat NumNegatives): a "
               "number, or a column holding each query's total",
               EVALUATE | CURVE - {"plot", "cli-plot"}, metavar="N|COL", parse=_count),
        Option("include_inf", "semantics", "bool", False,
               "with convention vlfeat: rank -inf scores instead of treating them as "
               "unretrieved", EVALUATE | CURVE - {"plot", "cli-plot"}),
        Option("input_format", "source", "str", "auto",
               "how a path is read: auto (by its suffix: .parquet, .pq, .csv, .tsv, .tab are "
               "tables, any other a TREC run or qrels file), table, or trec (run files, one "
               "system each, by defaults to system; TREC qrels)",
               EVALUATE - {"spark"} | CURVE | {"cli-trec"}, choices=INPUT_FORMATS),
        Option("ci", "intervals", "float | None", None,
               "add a confidence interval of each rate's mean at this level (e.g. 0.95): "
               "columns MEASURE_ci_low and MEASURE_ci_high", SUMMARY, metavar="LEVEL",
               parse=float),
        Option("ci_method", "intervals", "str", "t",
               "how the interval is computed: t (Student's t), percentile or bca (bootstrap "
               "over queries, resamples shared by every system and measure); t and bca need "
               "scipy (preval[stats])", SUMMARY,
               choices=CI_METHODS),
        Option("resamples", "intervals", "int", 10_000,
               "bootstrap resamples (compare: randomization and bootstrap resamples)",
               SUMMARY | RESAMPLING, metavar="N", parse=int),
        Option("seed", "intervals", "int", 0,
               "seed of the resamples (numpy's default_rng): the same seed, the same numbers",
               SUMMARY | RESAMPLING, metavar="S", parse=int),
    )
}  # fmt: skip


@dataclass(frozen=True)
class Columns:
    """The input's column names by role; `by` keys evaluate each group separately;
    `subtopic` names the qrels' subtopic column (diversity measures), None without one.
    `query=None` pools each `by` group into one ranking (curves only)."""

    query: str | None = "query"
    doc: str = "doc"
    score: str = "score"
    label: str = "label"
    by: tuple[str, ...] = ()
    subtopic: str | None = None

    def __post_init__(self) -> None:
        by = self.by
        if isinstance(by, str) or by is None:
            by = () if by is None else (by,)
        object.__setattr__(self, "by", tuple(dict.fromkeys(by)))  # a key given twice: once
        named = [("query", self.query), ("doc", self.doc), ("score", self.score),
                 ("label", self.label), ("subtopic", self.subtopic),
                 *[("by", b) for b in self.by]]  # fmt: skip
        for role, name in named:
            if name is not None and not isinstance(name, str):
                # (a pandas frame's default column labels are integers, Polars' are strings)
                hint = f" (Polars names column {name} {str(name)!r}: {role}={str(name)!r})"
                msg = (
                    f"{role} must be a column name (a string), got {name!r} of type "
                    f"{type(name).__name__}{hint if isinstance(name, int) else ''}"
                )
                raise InputError(msg)
        for b in self.by:
            if b in (self.query, self.doc, self.score, self.label):
                msg = f"by column {b!r} is also the query, doc, score or label column"
                raise InputError(msg)
        if self.subtopic is not None and self.subtopic in (self.query, self.doc, self.label):
            msg = f"subtopic column {self.subtopic!r} is also the query, doc or label column"
            raise InputError(msg)

    @property
    def roles(self) -> dict[str, str]:
        return {"query": self.query, "doc": self.doc, "score": self.score, "label": self.label}


@dataclass(frozen=True)
class Semantics:
    """What an evaluation counts and how (each field is the option of that name)."""

    relevance_level: float = 1
    ties: str | None = None
    queries: str = "judged"
    duplicates: str = "error"
    depth: int | None = None
    judged_only: bool = False
    trec_version: int = 9
    convention: str = "trec"
    num_positives: int | str | None = None
    num_negatives: int | str | None = None
    include_inf: bool = False
    unjudged_label: float | None = None

    def __post_init__(self) -> None:
        for name in ("num_positives", "num_negatives"):
            value = getattr(self, name)
            if not isinstance(value, str):
                validate.require_count(name, value)
        validate.require_count("depth", self.depth, minimum=1)
        level = self.relevance_level
        if (
            isinstance(level, bool)
            or not isinstance(level, Real)  # numpy's numbers too
            or not math.isfinite(level)
        ):
            # a NaN or infinite level (-l nan) made every document non-relevant: all zeros
            msg = f"relevance_level must be a finite number (a label), got {level!r}"
            raise InputError(msg)
        unjudged = self.unjudged_label
        if unjudged is not None and (
            isinstance(unjudged, bool)
            or not isinstance(unjudged, (int, float))
            or not math.isfinite(unjudged)
        ):
            msg = f"unjudged_label must be a finite number (a label) or None, got {unjudged!r}"
            raise InputError(msg)
        for name in ("trec_version", "queries", "duplicates", "ties"):
            value = getattr(self, name)
            if not (name == "ties" and value is None):
                _check_choice(name, value, OPTIONS[name].choices)
        get_convention(self.convention)


@dataclass(frozen=True)
class Options:
    """Every option of one call: the columns, the semantics, the intervals of a summary and
    how paths are read."""

    columns: Columns = field(default_factory=Columns)
    semantics: Semantics = field(default_factory=Semantics)
    input_format: str = "auto"
    intervals: Intervals = field(default_factory=lambda: Intervals())  # (defined below)

    def __post_init__(self) -> None:
        _check_choice("input_format", self.input_format, INPUT_FORMATS)

    @classmethod
    def of(cls, values: Mapping[str, object], base: Options | None = None) -> Options:
        """The options `values` (option name -> value) set, the others from `base` (or the
        defaults); each object validates its own fields once."""
        base = cls() if base is None else base
        unknown = [name for name in values if name not in OPTIONS]
        if unknown:
            raise InputError(_unknown(unknown[0], OPTIONS))
        parts: dict[str, dict[str, object]] = {
            "columns": {}, "semantics": {}, "source": {}, "intervals": {}
        }  # fmt: skip
        for name, value in values.items():
            parts[OPTIONS[name].goes_to][name] = value
        return cls(
            columns=_replace(base.columns, parts["columns"]),
            semantics=_replace(base.semantics, parts["semantics"]),
            input_format=str(parts["source"].get("input_format", base.input_format)),
            intervals=_replace(base.intervals, parts["intervals"]),
        )

    def values(self) -> dict[str, object]:
        """option name -> value, every option (the inverse of `of`)."""
        out: dict[str, object] = {f.name: getattr(self.columns, f.name) for f in fields(Columns)}
        out |= {f.name: getattr(self.semantics, f.name) for f in fields(Semantics)}
        out |= {f.name: getattr(self.intervals, f.name) for f in fields(Intervals)}
        return out | {"input_format": self.input_format}


@dataclass(frozen=True)
class Intervals:
    """The confidence intervals of a summary: `ci` the level (None: no interval), `ci_method`
    one of t, percentile, bca; `resamples` and `seed` of the bootstrap (`preval.intervals`)."""

    ci: float | None = None
    ci_method: str = "t"
    resamples: int = 10_000
    seed: int = 0

    def __post_init__(self) -> None:
        if self.ci is not None and not (isinstance(self.ci, int | float) and 0 < self.ci < 1):
            msg = f"ci must be a level between 0 and 1 (e.g. 0.95), got {self.ci!r}"
            raise InputError(msg)
        _check_choice("ci_method", self.ci_method, CI_METHODS)
        for name, minimum in (("resamples", 1), ("seed", 0)):
            if getattr(self, name) is None:
                msg = f"{name} must be a whole number >= {minimum}, got None"
                raise InputError(msg)
            validate.require_count(name, getattr(self, name), minimum=minimum)


def _replace(obj: Any, changes: Mapping[str, object]) -> Any:
    return obj if not changes else type(obj)(**{**obj.__dict__, **changes})


def _unknown(name: str, known: Mapping[str, object] | Sequence[str]) -> str:
    import difflib  # (an error's hint: loaded when a name is unknown)

    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown option {name!r}{hint}"


def supported(entry: str) -> list[str]:
    """The options `entry` takes, in table order."""
    return [o.name for o in OPTIONS.values() if entry in o.where]


def accepts(entry: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give the public function `entry` the keyword options the table says it takes.

    The function is written with an ``options: Options`` keyword; its public signature (what
    `help` and IDEs show) lists each supported option as a keyword with its default instead,
    and a call's option keywords are gathered into `Options` (validated once) before the body
    runs. An option the function does not take is refused by name; an unknown keyword gets
    a suggestion. A caller may also pass ``options=Options(...)``; keywords then override it.
    """
    names = supported(entry)

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn)
        own = [p for p in signature.parameters.values() if p.name != "options"]

        @functools.wraps(fn)
        def call(*args: Any, options: Options | None = None, **kwargs: Any) -> Any:
            # (a keyword of the function's own, such as summarize's by, stays its own)
            given = {
                k: kwargs.pop(k)
                for k in list(kwargs)
                if k in OPTIONS and k not in signature.parameters
            }
            refused = [k for k in given if k not in names]
            if refused:
                msg = (
                    f"{entry} does not take the option {refused[0]!r} "
                    f"(it takes: {', '.join(names)})"
                )
                raise InputError(msg)
            for k in kwargs:
                if k not in signature.parameters:
                    msg = f"{entry}() got an {_unknown(k, [*names, *signature.parameters])}"
                    raise TypeError(msg)
            try:
                return fn(*args, options=Options.of(given, options), **kwargs)
            except PrevalError as exc:  # (raised here, not by a returned plan's collect)
                # a hint names a keyword only when this function takes it (`Hint`)
                exc.args = (exc.spoken(names.__contains__, cli=False),)
                exc.hints = tuple(hint for hint in exc.hints if hint.option in names)
                raise

        keyword = inspect.Parameter.KEYWORD_ONLY
        extra = [inspect.Parameter(n, keyword, default=OPTIONS[n].default,
                                   annotation=OPTIONS[n].annotation) for n in names]  # fmt: skip
        positional = [p for p in own if p.kind != keyword]
        keywords = [p for p in own if p.kind == keyword]
        call.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*positional, *keywords, *extra]
        )
        call.__doc__ = (fn.__doc__ or "") + _options_doc(names)
        return call

    return wrap


def _options_doc(names: Sequence[str]) -> str:
    lines = ["", "    Options (keywords; `preval.options.OPTIONS`)", "    -------"]
    for name in names:
        o = OPTIONS[name]
        choices = f" One of {', '.join(map(repr, o.choices))}." if o.choices else ""
        lines += [f"    {name} : {o.annotation}, default {o.default!r}",
                  f"        {o.help[0].upper()}{o.help[1:]}.{choices}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser, entry: str, *, skip: Sequence[str] = ()) -> None:
    """The CLI flags of every option `entry` takes (except `skip`), from the table."""
    for name in supported(entry):
        if name in skip:
            continue
        o = OPTIONS[name]
        kw: dict[str, Any] = {"dest": name, "help": _flag_help(o)}
        if o.annotation == "bool":
            kw |= {"action": "store_true"}
        else:
            kw |= {"default": [] if o.repeat else o.default, "metavar": o.metavar}
            if o.repeat:
                kw["action"] = "append"
            if o.parse is not None:
                kw["type"] = o.parse
            if o.choices:
                kw |= {"choices": o.choices, "metavar": None}
        parser.add_argument(*o.cli_flags, **kw)


def _flag_help(o: Option) -> str:
    default = (
        "" if o.default is None or o.default is False or o.repeat else f" (default: {o.default})"
    )
    repeat = " (repeatable)" if o.repeat else ""
    return f"{o.help}{default}{repeat}".replace("%", "%%")


def from_args(args: argparse.Namespace, entry: str) -> Options:
    """The `Options` of a parsed command line (the flags `add_arguments` made)."""
    return Options.of({n: getattr(args, n) for n in supported(entry) if hasattr(args, n)})


def markdown_table() -> str:
    """The options as a Markdown table, for the docs (generated: docs/options.md)."""
    entries = ("evaluate", "curve", "sql", "spark", "summarize", "cli-evaluate", "cli-plot")
    rows = ["| option | default | values | CLI flag | taken by | meaning |",
            "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for o in OPTIONS.values():
        # a type's `|` would end the Markdown cell: escaped
        values = ", ".join(f"`{c}`" for c in o.choices) or o.annotation.replace("|", "\\|")
        flags = " ".join(f"`{f}`" for f in o.cli_flags) if "cli-evaluate" in o.where or (
            "cli-plot" in o.where) else ""  # fmt: skip
        taken = ", ".join(e for e in entries if e in o.where and not e.startswith("cli-"))
        meaning = o.help.replace("|", "\\|")
        rows.append(f"| `{o.name}` | `{o.default!r}` | {values} | {flags} | {taken} | {meaning} |")
    return "\n".join(rows)


@dataclass(frozen=True)
class Hints:
    """What an engine tells the plan of one piece of the input (never checked by the plan:
    wrong hints give wrong results).

    `placeholders` (with qrels): True adds judged queries the run did not answer as one
    placeholder row each; False leaves them out (a chunk of a larger run, which cannot know);
    a LazyFrame of (keys..., query) rows answered elsewhere adds exactly the judged queries
    missing from it. `rows_per_query`: an estimate of the rows of each group, from which the
    plan decides whether ranking only each query's top K rows pays. `presorted`: the rows are
    in ranking order within each group; the plan skips its sort. `contiguous` (with
    `presorted`): each group's rows are also one run; the plan groups by run number. `runs`:
    the name of a column that holds each row's run number already.
    """

    placeholders: bool | pl.LazyFrame = True
    rows_per_query: float | None = None
    presorted: bool = False
    contiguous: bool = False
    runs: str | None = None
