"""Input rules (docs/semantics.md, bad input): schema checks up front, data checks inside the
lazy plan.

Schema rules (missing column, non-numeric score or label) need only the schema and fail at
once. Data rules (NaN score, null ids, duplicates) need the data, so they are computed as
per-query counters in the same ``group_by().agg()`` that computes the measures
(`row_checks`), and `checker` turns the first nonzero counter into a `PrevalError` when the
plan runs. Nothing is collected here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from .errors import (
    ColumnTypeError,
    DuplicateError,
    Hint,
    InputError,
    InvalidValueError,
    MissingColumnError,
)
from .ranking import DOC, LABEL, PAD, QUERY, SCORE, count

CHECK_PREFIX = "_chk_"
_EXAMPLE_DOC = f"{CHECK_PREFIX}doc"


def require_columns(
    schema: pl.Schema,
    columns: dict[str, str],
    what: str,
    optional: dict[str, str] | None = None,
    unread: Mapping[str, str] | None = None,
) -> None:
    """Raise `MissingColumnError` naming every role whose column is absent, and which present
    column each may be (`column_hints`): ``query='qid' (--query qid)``; or, when it is one of
    `unread` (names of a pandas frame that are no columns, with why: `io.pandas_unread`), why.

    `columns`: role -> column (a role is ``query``, ``doc``, ``score``, ``label``,
    ``subtopic``, ``by (name)`` or ``count (name)``); `optional`: roles whose column may be
    absent (a joined table's doc), hinted at only when a required one is missing.
    """
    unread = unread or {}
    absent = {role: name for role, name in columns.items() if name not in schema}
    # an optional column that is there but unreadable: without it the rules would change
    # silently (a joined table without doc ids breaks ties by input order)
    absent |= {role: name for role, name in (optional or {}).items()
               if name not in schema and name in unread}  # fmt: skip
    if not absent:
        return
    missing = [f"{role} column {name!r}" for role, name in absent.items()]
    have = ", ".join(schema.names()) or "none"
    msg = f"{what}: missing {', '.join(missing)} (columns present: {have})"
    why = [f"{name!r} is {unread[name]}" for name in absent.values() if name in unread]
    if why:
        msg += f"; {'; '.join(why)}"
        raise MissingColumnError(msg)
    other = [c for c in ";\t|" if len(schema) == 1 and c in schema.names()[0]]
    if other:  # a header of one column that holds another separator
        msg += (
            f"; the header is one column holding {other[0]!r}: preval reads a .csv file as "
            "comma-separated and a .tsv file as tab-separated (rename a tab-separated file "
            "to .tsv; write other separators as commas)"
        )
        raise MissingColumnError(msg)
    numbers = [c for c in schema.names() if _is_number(c)]
    if numbers and what.lower().endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")):
        # a CSV file without a header line: its first row was read as the names
        msg += (
            f"; column name {numbers[0]!r} is a number: is the first line data? A CSV file "
            "needs a header line naming its columns (query,doc,score,label)"
        )
        raise MissingColumnError(msg)
    if numbers:  # a frame made from an array (pandas' labels 0, 1, ...: "0", "1", ...)
        msg += f"; column name {numbers[0]!r} is a number: name the columns"
        raise MissingColumnError(msg)
    if "score" in absent:
        msg += _evaluated_hint(schema)
    optional = {r: n for r, n in (optional or {}).items() if r not in columns}
    taken = {name for name in (*columns.values(), *optional.values()) if name in schema}
    extra = {role: name for role, name in optional.items() if name not in schema}
    hints = column_hints(schema, {**absent, **extra}, taken)
    needed = [hint for role, hint in hints.items() if role in absent]
    if needed:
        which = "column holds it" if len(absent) == 1 else "columns hold them"
        msg += f"; say which {which}: {', '.join(needed)}"
        also = [hint for role, hint in hints.items() if role in extra]
        if also:
            msg += f"; and the {'/'.join(extra)} ids: {', '.join(also)}"
    if what != "qrels" and "label" in absent and "label" not in hints:
        # a run evaluated alone: its judgments are elsewhere
        msg += "; a run without labels needs its judgments: qrels=... (--qrels FILE)"
    labels = [c for c in schema.names() if _norm(c) in SYNONYMS["label"]]
    if what != "qrels" and "score" in absent and "label" not in columns and labels:
        # `preval evaluate QRELS --qrels RUN`: the judgments where the run goes
        msg += (
            f"; it has a label column ({labels[0]!r}) and no score, as qrels do: "
            "are the qrels given where the run goes?"
        )
    ranks = [c for c in schema.names() if _norm(c) in _RANKS and c not in taken]
    if "score" in absent and "score" not in hints and ranks:
        # a recommender's output often ranks (1 = best): read as a score it ranks backwards
        msg += (
            f"; {ranks[0]!r} looks like a rank, and scores rank higher first: give -rank "
            f"as the score (df.assign(score=-df[{ranks[0]!r}]), pl.col({ranks[0]!r}).neg())"
        )
    raise MissingColumnError(msg)


def _is_number(name: str) -> bool:
    try:
        float(name)
    except ValueError:
        return False
    return True


def _evaluated_hint(schema: pl.Schema) -> str:
    """What to say when a table of results (a per-query table, wide or long, or a summary) is
    given where rankings are read: the mistake of `preval compare per_query.parquet`."""
    from .measures import measure_columns  # (the error path only)

    if {"measure", "value"} <= set(schema.names()):
        kind = "a per-query table in the long form (measure, value columns)"
    else:
        measures = list(measure_columns(schema))
        if not measures:
            return ""
        shown = ", ".join(measures[:4]) + (", ..." if len(measures) > 4 else "")
        table = "a summary" if measures[0] == "NumQ" else "a per-query table"
        kind = f"{table} (measure columns {shown})"
    return (
        f"; it looks like {kind}, not rankings: compare, power and agreement read a wide "
        "per-query table with --per-query-table (Python: preval.compare(table), "
        "preval.summarize(table))"
    )


_RANKS = ("rank", "ranking", "position", "pos", "rank_position")


# Names that a column of each role often has (compared with case, spaces and dashes ignored)
SYNONYMS = {
    "query": ("query", "qid", "query_id", "queryid", "topic", "topic_id", "topicid", "qno",
              "query_no", "q_id", "user", "user_id", "userid", "session", "session_id",
              "request_id", "search_id", "group", "group_id"),
    "doc": ("doc", "docid", "doc_id", "pid", "docno", "doc_no", "item", "item_id", "itemid",
            "passage_id", "document", "document_id", "did", "corpus_id", "product",
            "product_id", "candidate", "candidate_id"),
    "score": ("score", "pred", "prediction", "predictions", "sim", "similarity", "rank_score",
              "relevance_score", "y_pred", "y_score", "logit", "prob", "probability",
              "preds", "logits", "y_hat", "model_score"),
    "label": ("label", "rel", "relevance", "y", "target", "grade", "judgment", "judgement",
              "qrel", "y_true", "gold", "relevant", "is_relevant", "click", "clicked",
              "clicks", "is_clicked", "rating", "purchased", "converted"),
    "subtopic": ("subtopic", "subtopic_id", "intent", "intent_id", "aspect", "facet"),
}  # fmt: skip
# how close (difflib's ratio) a name must be to a role's name or synonym to be hinted at
_CLOSE = 0.75


def column_hints(schema: pl.Schema, roles: dict[str, str], taken: set[str]) -> dict[str, str]:
    """For each of `roles` (role -> the column asked for, absent), the present column that
    most likely holds it, as the keyword and flag that name it: ``query='qid' (--query qid)``.

    A column is a candidate for a role when no other role takes it (`taken`) and its dtype
    fits (numbers for score and label, no floats for ids); it matches a role by its name: one
    of the role's `SYNONYMS`, or close to one or to the name asked for. Each column goes to
    one role, best matches first; roles without a likely column get none.
    """
    import difflib  # (a missing column's hint: loaded only when a column is missing)
    import shlex

    matches = []
    for order, (role, asked) in enumerate(roles.items()):
        kind = role.split(" ", 1)[0]
        if kind == "count":  # num_positives or num_negatives: which, the role does not say
            continue
        names = [_norm(asked), *map(_norm, SYNONYMS.get(kind, ()))]
        for position, column in enumerate(schema.names()):
            if column in taken or not _fits(kind, schema[column]):
                continue
            text = _norm(column)
            closeness = max(difflib.SequenceMatcher(None, text, n).ratio() for n in names)
            if text in names:
                closeness = 2.0 if text == names[0] else 1.5  # the name asked for, other case
            if closeness >= _CLOSE:
                matches.append((-closeness, order, position, role, kind, column))
    hints: dict[str, str] = {}
    used: set[str] = set()
    for *_, role, kind, column in sorted(matches):
        if role not in hints and column not in used:
            hints[role] = f"{kind}={column!r} (--{kind} {shlex.quote(column)})"
            used.add(column)
    return {role: hints[role] for role in roles if role in hints}


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def _fits(kind: str, dtype: pl.DataType) -> bool:
    """Whether a column of `dtype` can play the role `kind` (`require_numeric`, `require_key`)."""
    if kind in ("score", "label"):
        return dtype.is_numeric() or dtype == pl.Boolean
    return not (dtype.is_nested() or dtype.is_float())


def require_numeric(schema: pl.Schema, name: str, role: str, what: str) -> None:
    dtype = schema[name]
    if not (dtype.is_numeric() or dtype == pl.Boolean or dtype == pl.Null):
        msg = (
            f"{what}: {role} column {name!r} must be numeric, but its dtype is {dtype} "
            f"(rule: {role}s are numbers; cast the column or pick another with --{role})"
        )
        raise ColumnTypeError(msg)


def require_count(name: str, value: object, minimum: int = 0) -> None:
    """An option that must be None or a whole number >= minimum (depth, num_positives ...)."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or value < minimum
    ):
        msg = f"{name} must be a whole number >= {minimum}, got {value!r}"
        raise InputError(msg)


def require_key(schema: pl.Schema, name: str, role: str, what: str) -> None:
    dtype = schema[name]
    if dtype.is_nested() or dtype.is_float():
        msg = (
            f"{what}: {role} column {name!r} has dtype {dtype}; ids must be strings or "
            "integers (rule: ids are compared exactly)"
        )
        if dtype.is_float():  # pandas turns an integer column with a missing value to floats
            msg += (
                "; whole-number ids held as floats (pandas' integer column with a NaN) are "
                "cast with .astype('Int64') in pandas, .cast(pl.Int64) in Polars"
            )
        raise ColumnTypeError(msg)


@dataclass(frozen=True)
class Rule:
    """A data rule: its counter, an optional example-doc expression, the error it raises."""

    name: str
    count: pl.Expr
    example: pl.Expr | None
    error: type[Exception]
    text: str  # "{n}" = offending rows, "{col}" = the column's user-facing name, "{hints}"
    # When `count` is only a cheap signal (nonzero whenever the rule is broken, possibly also
    # when it is not), `recount` gives the exact count and the example from the rows of the
    # groups it flags, on the error path only: rows (LazyFrame) and group keys -> (keys..., n,
    # example) per offending group; none: a false alarm, no error.
    recount: Callable[[pl.LazyFrame, list[str]], pl.LazyFrame] | None = None
    # the ways out that name an option, said where the text has "{hints}" (`Hint`): each
    # face (Python, the CLI) spells them, or leaves out those the caller does not take
    hints: tuple[Hint, ...] = ()


def row_checks(
    *,
    has_doc: bool,
    has_score: bool,
    label_may_be_null: bool,
    has_pad: bool,
    float_score: bool = True,
    float_label: bool = True,
    per: Sequence[str] = ("query",),
) -> list[Rule]:
    """Rules over the rows of one (keys..., query) group.

    `has_pad`: the rows may include placeholders (`PAD`), which are not input rows. A column
    whose input dtype is not a float (`float_score`, `float_label`) cannot hold NaN: no NaN
    rule for it (an integer label column is the usual one). `per`: the roles a group is one
    of, as a repeated doc's message says them (diversity qrels: query and subtopic).
    """

    def bad_value(name: str, flag: pl.Expr, text: str) -> Rule:
        """Rows where `flag` holds break rule `name`; the first one's doc is the example."""
        example = pl.col(DOC).filter(flag).first() if has_doc else None
        return Rule(name, count(flag), example, InvalidValueError, text)

    rules: list[Rule] = []
    if has_score and float_score:
        rules.append(
            bad_value(
                "nan_score",
                pl.col(SCORE).is_nan().fill_null(False),
                "column {score!r} is NaN in {n} rows (rule: scores must be numbers; use null for a "
                "document that was not retrieved)",
            )
        )
    if float_label:
        rules.append(
            bad_value(
                "nan_label",
                # an infinite grade makes nDCG NaN and AP meaningless: rejected with NaN
                pl.col(LABEL).is_finite().not_().fill_null(False),
                "column {label!r} is NaN or infinite in {n} rows (rule: labels must be finite "
                "numbers; use null for an unjudged document)",
            )
        )
    if not label_may_be_null:
        rules.append(
            bad_value(
                "null_label",
                pl.col(LABEL).is_null(),
                "column {label!r} is null in {n} rows (rule: every qrels row is a judgment)",
            )
        )
    if has_doc:
        null_doc = pl.col(DOC).is_null()
        if has_pad:
            null_doc = null_doc & pl.col(PAD).not_()
        rules.append(
            Rule(
                "null_doc",
                count(null_doc),
                None,
                InvalidValueError,
                "column {doc!r} is null in {n} rows (rule: doc ids must not be null)",
            )
        )
        # a signal (`Rule.recount`): is_duplicated() in every group cost ~25% of an evaluation.
        # Distinct hashes of the docs, not distinct docs: Polars keeps a set of numbers per group
        # rather than one of strings, cheaper when a group's rows come scattered (qrels not
        # sorted by query). Equal docs hash alike, so a repeat always shows; a collision is a
        # false alarm. (Null docs count as one value; every step stays >= 0, unsigned.)
        doc, nulls = pl.col(DOC), pl.col(DOC).null_count()
        tuple_word = "pair" if len(per) == 1 else "triple"
        rules.append(
            Rule(
                "duplicate",
                pl.len() + (nulls > 0).cast(pl.UInt32) - nulls - doc.hash().n_unique(),
                None,
                DuplicateError,
                f"{{n}} rows repeat a ({', '.join(per)}, doc) {tuple_word}"
                f" (rule: a document appears once per {' and '.join(per)}{{hints}})",
                recount=_duplicates,
                hints=DUPLICATE_HINTS,
            )
        )
    return rules


# a repeated (query, doc): the ways out, said by the face the user called (`Hint`)
KEEP_ONE = Hint("duplicates", "or pass {} to keep one", ("max", "first"))
DUPLICATE_HINTS = (Hint("by", "if the table holds several systems, name their column with {}"),
                   KEEP_ONE)  # fmt: skip


def _duplicates(rows: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Per group with a repeated doc: the rows involved and the smallest repeated doc id."""
    return (
        rows.filter(pl.col(DOC).is_not_null())
        .group_by([*keys, DOC])
        .len()
        .filter(pl.col("len") > 1)
        .group_by(keys)
        .agg(pl.col("len").sum().alias("n"), pl.col(DOC).min().cast(pl.String).alias("example"))
    )


def total_rule(what: str, shown: str, total: pl.Expr, found: pl.Expr, of: str) -> Rule:
    """A given total (num_positives / num_negatives) below what the data holds is an error.

    `shown` names the total as the user gave it, `of` the groups ("queries", "rankings").
    """
    text = (
        f"{shown} is smaller than the {what} the data holds for some {of} "
        f"({{n}} {what} in those; rule: num_{what} is the total, misses included)"
    )
    count = pl.when(found > total).then(found).otherwise(0)
    return Rule(f"total_{what}", count, None, InvalidValueError, text)


def check_exprs(rules: Sequence[Rule], *, has_doc: bool, has_pad: bool) -> list[pl.Expr]:
    """The counters of `rules`, plus the group's real rows and one doc (for null-key errors).

    Placeholder rows (`has_pad`) are not input rows: they are neither counted nor examples.
    """
    rows = count(~pl.col(PAD)) if has_pad else pl.len()
    exprs = [rows.cast(pl.Int64).alias(f"{CHECK_PREFIX}rows")]
    if has_doc:
        docs = pl.col(DOC).filter(~pl.col(PAD)) if has_pad else pl.col(DOC)
        exprs.append(docs.first().cast(pl.String).alias(_EXAMPLE_DOC))
    for rule in rules:
        exprs.append(rule.count.cast(pl.Int64).alias(f"{CHECK_PREFIX}{rule.name}"))
        if rule.example is not None:
            exprs.append(rule.example.cast(pl.String).alias(f"{CHECK_PREFIX}{rule.name}_ex"))
    return exprs


def named(text: str, sources: Iterable[tuple[str, str]]) -> str:
    """`text`, a message that begins with an input's role (``"input: ..."``, ``"qrels: ..."``),
    with that input's file named when it was given as a path (`sources`: (role, path) pairs):
    ``"input runs.csv: ..."``. Other messages are returned as they are."""
    for role, path in sources:
        if text.startswith(f"{role}: "):
            return f"{role} {path}: {text[len(role) + 2 :]}"
    return text


def path_sources(given: dict[str, object]) -> tuple[tuple[str, str], ...]:
    """(role, path) of the inputs in `given` (role -> source) that were given as paths, for
    `named`: ``path_sources({"input": "run.csv", "qrels": frame})`` is
    ``(("input", "run.csv"),)``."""
    return tuple((role, str(p)) for role, p in given.items() if isinstance(p, (str, Path)))


def checker(
    rules: Sequence[Rule],
    keys: dict[str, str],
    names: dict[str, str],
    what: str,
    rows: pl.LazyFrame | None = None,
    sources: Sequence[tuple[str, str]] = (),
) -> Callable[[pl.DataFrame], pl.DataFrame]:
    """A `map_batches` function: raise on the first broken rule, else drop the counters.

    `keys` maps internal key columns to user names (null keys are errors too); `names` maps
    the roles (query, doc, score, label) to the user's column names for messages. `rows` are
    the rows that were aggregated, for rules that `recount` when they are broken. `sources`
    ((role, path) of the inputs given as paths) name the file `what` is read from (`named`):
    the plan may run where no engine can add it, in the caller's own ``collect()``.
    """

    def check(df: pl.DataFrame) -> pl.DataFrame:
        for internal, user in keys.items():
            bad = df.filter(pl.col(internal).is_null() & (pl.col(f"{CHECK_PREFIX}rows") > 0))
            if bad.height:
                n = bad[f"{CHECK_PREFIX}rows"].sum()
                rule = (
                    "ids must not be null"
                    if internal == QUERY or user == names.get("query")
                    else "by keys must not be null; fill them (fill_null, fillna) or drop the rows"
                )
                msg = f"{what}: column {user!r} is null in {n} rows (rule: {rule})"
                if _EXAMPLE_DOC in bad.columns:
                    row = bad.sort(list(keys), nulls_last=True).row(0, named=True)
                    others = [f"{u} {row[k]!r}" for k, u in keys.items() if k != internal]
                    example = ", ".join([*others, f"{names['doc']} {row[_EXAMPLE_DOC]!r}"])
                    msg += f"; example: {example}"
                error = InvalidValueError(named(msg, sources))
                error.counted = True
                raise error
        for rule in rules:
            counts = df[f"{CHECK_PREFIX}{rule.name}"]
            n = int(counts.sum() or 0)
            if n:
                bad = df.filter(counts > 0)
                example = None
                if rule.example is not None:
                    example = f"{CHECK_PREFIX}{rule.name}_ex"
                elif rule.recount is not None and rows is not None:
                    bad = _recount(rule, rows, bad.select(list(keys)))
                    if not bad.height:  # the signal's false alarm
                        continue
                    n, example = int(bad["n"].sum()), "example"
                # the first offending query in key order: the same example on every run
                row = bad.sort(list(keys), nulls_last=True).row(0, named=True)
                where = ", ".join(f"{user} {row[k]!r}" for k, user in keys.items())
                if example is not None:
                    where += f", {names['doc']} {row[example]!r}"
                hints = "".join(hint.said() for hint in rule.hints)
                msg = f"{what}: {rule.text.format(n=n, hints=hints, **names)}; example: {where}"
                error = rule.error(named(msg, sources))
                error.example = {user: row[k] for k, user in keys.items()}
                error.hints = rule.hints
                error.counted = True
                raise error
        return df.drop(cs_checks(df))

    return check


def _recount(rule: Rule, rows: pl.LazyFrame, bad: pl.DataFrame) -> pl.DataFrame:
    """`rule.recount` over the rows of the `bad` groups only (ids compared as strings where
    a join cast them)."""
    keys = bad.columns
    schema = rows.collect_schema()
    differ = [k for k in keys if schema[k] != bad.schema[k]]
    if differ:
        rows = rows.with_columns(pl.col(differ).cast(pl.String))
        bad = bad.with_columns(pl.col(differ).cast(pl.String))
    rows = rows.join(bad.lazy(), on=keys, how="semi", nulls_equal=True)
    return rule.recount(rows, keys).collect()  # type: ignore[misc]  # set: see the caller


def cs_checks(df: pl.DataFrame | pl.Schema) -> list[str]:
    names = df.columns if isinstance(df, pl.DataFrame) else df.names()
    return [c for c in names if c.startswith(CHECK_PREFIX)]
