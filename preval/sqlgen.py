"""Portable SQL: the core measures as window-function SQL text for DuckDB and Spark SQL.

For users who work in a warehouse or want a SQL view: the query runs with no Python on the
workers. It ranks each query's retrieved rows with ``ROW_NUMBER()``, accumulates relevant
documents down the ranking with a running ``SUM() OVER``, and aggregates every measure in one
``GROUP BY``, following the same semantics as `preval.evaluate` (trec_eval's) for the measures
it covers. It does not validate the data (NaN scores, null ids, duplicates): run
`preval.evaluate` once on a sample for that.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import InputError, MeasureError
from .measures import Spec, parse_all
from .options import Options, accepts

DIALECTS = ("duckdb", "spark")
# the smallest double that rounds to float32 inf: 2**128 - 2**103, half a step above FLT_MAX
_FLOAT32_INF = 2.0**128 - 2.0**103
# measures the SQL covers, and the parameters each accepts
SQL_MEASURES = {
    "AP": ("rel",), "GMAP": ("rel",), "RR": ("rel",), "Rprec": ("rel",), "P": ("rel",),
    "R": ("rel",), "nDCG": (), "Success": ("rel",), "NumRet": (), "NumRel": ("rel",),
    "NumRelRet": ("rel",), "NumQ": (),
}  # fmt: skip


@accepts("sql")
def sql(
    measures: str | Iterable[str],
    *,
    table: str,
    qrels: str | None = None,
    dialect: str = "duckdb",
    options: Options,
) -> str:
    """SQL text that computes per-query measures, one row per (by..., query).

    The result has the columns of `preval.evaluate` (by keys, query, one column per measure
    under its canonical name: a BIGINT for a count, else a DOUBLE) and, for the measures
    covered, its values on valid data: ``AP`` and ``AP@K``, ``GMAP`` (per query: AP), ``RR``
    and ``RR@K``, ``Rprec``, ``P@K``, ``R@K``, ``nDCG`` and ``nDCG@K``, ``Success@K``, each
    with ``rel=``, and the counts ``NumRet``, ``NumRel``, ``NumRelRet``, ``NumQ``.

    Parameters
    ----------
    measures
        Measure names, e.g. ``["AP", "P@10", "nDCG@10"]`` (aliases such as ``map``, ``P_10``
        accepted). Others raise `MeasureError`.
    table
        A table name, view name or parenthesised subquery: one joined table (query, doc,
        score, label; a null score is an unretrieved document, a null label an unjudged
        one) or, with `qrels`, a run (query, doc, score).
    qrels
        A table of judgments (query, doc, label), joined on (query, doc) as strings. The
        query column of the result is then a string. Every `by` column is a system: each is
        evaluated against every judged query (query properties as `by` are not supported).
    options
        As for `preval.evaluate` (listed below); column names are used as they are (quote
        them yourself if they need quoting).
    dialect
        ``"duckdb"`` or ``"spark"`` (Spark SQL, ANSI mode or not): identifier quoting.

    Returns
    -------
    str
        One SELECT statement, ordered by (by..., query).
    """
    columns, semantics = options.columns, options.semantics
    query, doc, score, label, by = (columns.query, columns.doc, columns.score, columns.label,
                                    columns.by)  # fmt: skip
    relevance_level, queries = semantics.relevance_level, semantics.queries
    trec_version = semantics.trec_version
    if dialect not in DIALECTS:
        msg = f"dialect must be one of {', '.join(map(repr, DIALECTS))}, got {dialect!r}"
        raise InputError(msg)
    specs = parse_all(measures)
    for s in specs:
        allowed = SQL_MEASURES.get(s.definition.name)
        extra = [k for k, _ in s.given if allowed is None or k not in allowed]
        if allowed is None or extra:
            known = ", ".join(SQL_MEASURES)
            what = f"parameter {extra[0]}= of " if allowed is not None else ""
            msg = f"{what}measure {s.name!r} is not available in SQL (SQL measures: {known})"
            raise MeasureError(msg)
    by_cols = [by] if isinstance(by, str) else list(by or [])
    q = (lambda name: f'"{name}"') if dialect == "duckdb" else (lambda name: f"`{name}`")
    text = "VARCHAR" if dialect == "duckdb" else "STRING"
    keys = [f"_k{i}" for i in range(len(by_cols))]
    part = ", ".join([*keys, "_q"])

    # as Python floats, whose repr is a SQL literal (a numpy level's repr is np.float64(...))
    levels = sorted({float(s.level(relevance_level)) for s in specs} | {float(relevance_level)})
    lv = {level: i for i, level in enumerate(levels)}
    cutoffs = sorted({s.cutoff for s in specs if s.definition.name == "nDCG"}, key=str)
    ideal = {k: f"_idcg{i}" for i, k in enumerate(cutoffs)}
    gain = "CASE WHEN _l > 0 THEN _l ELSE 0 END"
    # float32 as numpy rounds: a double at or beyond half a step above float32's largest is
    # +-inf (CAST raises on it in DuckDB); CASE evaluates the CAST only on the other rows
    inf = "CAST('Infinity' AS DOUBLE)"
    order = (
        f"CASE WHEN _s >= {_FLOAT32_INF!r} THEN {inf} WHEN _s <= {-_FLOAT32_INF!r} THEN -{inf} "
        "ELSE CAST(_s AS FLOAT) END"
        if trec_version == 9
        else "_s"
    )

    def rel(level: float) -> str:
        return f"(_rnk IS NOT NULL AND _l >= {float(level)!r})"

    def ideal_dcg(group: str) -> list[str]:
        return [
            f"SUM(CASE WHEN {'TRUE' if k is None else f'_irank <= {k}'} "
            f"THEN {gain} / LOG2(_irank + 1) ELSE 0 END){group} AS {name}"
            for k, name in ideal.items()
        ]

    key_select = [f"{b} AS {k}" for k, b in zip(keys, by_cols, strict=True)]
    ctes = []
    if qrels is None:
        r_windows = [
            f"SUM(CASE WHEN _l >= {level!r} THEN 1 ELSE 0 END) OVER (PARTITION BY {part}) AS _R{i}"
            for level, i in lv.items()
        ]
        idcg = ideal_dcg(f" OVER (PARTITION BY {part})")
        ctes.append(
            f"_src AS (SELECT {', '.join([*key_select, f'{query} AS _q'])}, "
            f"CAST({doc} AS {text}) AS _d, CAST({score} AS DOUBLE) AS _s, "
            f"CAST({label} AS DOUBLE) AS _l FROM {table})"
        )
        ctes.append(
            f"_ideal AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY {part} "
            f"ORDER BY {gain} DESC) AS _irank FROM _src)"
        )
        ctes.append(f"_rows AS (SELECT *, {', '.join([*r_windows, *idcg])} FROM _ideal)")
    else:
        r_sums = [
            f"SUM(CASE WHEN _l >= {level!r} THEN 1 ELSE 0 END) AS _R{i}" for level, i in lv.items()
        ]
        ctes.append(
            f"_run AS (SELECT {', '.join([*key_select, f'CAST({query} AS {text}) AS _q'])}, "
            f"CAST({doc} AS {text}) AS _d, CAST({score} AS DOUBLE) AS _s FROM {table})"
        )
        ctes.append(
            f"_judg AS (SELECT CAST({query} AS {text}) AS _q, CAST({doc} AS {text}) AS _d, "
            f"CAST({label} AS DOUBLE) AS _l FROM {qrels})"
        )
        ctes.append(
            f"_stats AS (SELECT _q, {', '.join([*r_sums, *ideal_dcg('')])} FROM "
            f"(SELECT *, ROW_NUMBER() OVER (PARTITION BY _q ORDER BY {gain} DESC) AS _irank "
            f"FROM _judg) AS _j GROUP BY _q)"
        )
        stat_cols = [f"_st.{c}" for c in [*(f"_R{i}" for i in lv.values()), *ideal.values()]]
        run_cols = [f"_run.{c}" for c in [*keys, "_q", "_d", "_s"]]
        # an inner join with the statistics: queries without judgments are never evaluated
        ctes.append(
            f"_rows AS (SELECT {', '.join([*run_cols, '_judg._l', *stat_cols])} FROM _run "
            f"LEFT JOIN _judg ON _run._q = _judg._q AND _run._d = _judg._d "
            f"JOIN _stats AS _st ON _run._q = _st._q)"
        )

    # ranks over retrieved rows only: rows with a null score share a partition of their own,
    # whose numbers are thrown away
    rank = (
        f"CASE WHEN _s IS NOT NULL THEN ROW_NUMBER() OVER (PARTITION BY {part}, _s IS NULL "
        f"ORDER BY {order} DESC, _d DESC) END AS _rnk"
    )
    ctes.append(f"_ranked AS (SELECT *, {rank} FROM _rows)")
    running = [
        f"SUM(CASE WHEN {rel(level)} THEN 1 ELSE 0 END) OVER (PARTITION BY {part} "
        f"ORDER BY _rnk ASC NULLS LAST ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS _tp{i}"
        for level, i in lv.items()
    ]
    ctes.append(f"_tp AS (SELECT *, {', '.join(running)} FROM _ranked)")

    def within(k: object) -> str:
        return "" if k is None else f" AND _rnk <= {k}"

    columns = []
    for s in specs:
        name, k = s.definition.name, s.cutoff
        i = lv[s.level(relevance_level)]
        R, hit = f"MAX(_R{i})", rel(s.level(relevance_level))
        hits = f"SUM(CASE WHEN {hit}{within(k)} THEN 1 ELSE 0 END)"
        if name in ("AP", "GMAP"):
            total = f"SUM(CASE WHEN {hit}{within(k)} THEN CAST(_tp{i} AS DOUBLE) / _rnk ELSE 0 END)"
            expr = f"CASE WHEN {R} > 0 THEN {total} / {R} ELSE 0 END"
        elif name == "RR":
            expr = f"COALESCE(MAX(CASE WHEN {hit}{within(k)} THEN 1.0 / _rnk END), 0)"
        elif name == "Rprec":
            top_r = f"SUM(CASE WHEN {hit} AND _rnk <= _R{i} THEN 1 ELSE 0 END)"
            expr = f"CASE WHEN {R} > 0 THEN CAST({top_r} AS DOUBLE) / {R} ELSE 0 END"
        elif name == "P":
            expr = f"CAST({hits} AS DOUBLE) / {k}"
        elif name == "R":
            expr = f"CASE WHEN {R} > 0 THEN CAST({hits} AS DOUBLE) / {R} ELSE 0 END"
        elif name == "nDCG":
            discounted = f"{gain} / LOG2(_rnk + 1)"
            dcg = f"SUM(CASE WHEN _rnk IS NOT NULL{within(k)} THEN {discounted} ELSE 0 END)"
            idcg = f"MAX({ideal[k]})"
            expr = f"CASE WHEN {idcg} > 0 THEN {dcg} / {idcg} ELSE 0 END"
        elif name == "Success":
            expr = f"CASE WHEN {hits} > 0 THEN 1 ELSE 0 END"
        elif name == "NumRet":
            expr = "COUNT(_rnk)"
        elif name == "NumRel":
            expr = R
        elif name == "NumRelRet":
            expr = f"SUM(CASE WHEN {hit} THEN 1 ELSE 0 END)"
        else:  # NumQ
            expr = "1"
        columns.append((s.name, f"CAST({expr} AS {_sql_type(s)})"))

    group = ", ".join([*keys, "_q"])
    judged = "COUNT(_l) > 0" if qrels is None else "TRUE"
    measures_sql = ", ".join(f"{expr} AS {q(n)}" for n, expr in columns)
    ctes.append(
        f"_pq AS (SELECT {group}, {judged} AS _judged, COUNT(_rnk) AS _nret, "
        f"{', '.join(f'MAX(_R{i}) AS _R{i}' for i in lv.values())}, {measures_sql} "
        f"FROM _tp GROUP BY {group})"
    )
    out_keys = [f"{k} AS {q(b)}" for k, b in zip(keys, by_cols, strict=True)]
    if qrels is None:
        where = "_judged" + (" AND _nret > 0" if queries == "retrieved" else "")
        final = (
            f"SELECT {', '.join([*out_keys, f'_q AS {q(query)}'])}, "
            f"{', '.join(q(n) for n, _ in columns)} FROM _pq WHERE {where}"
        )
    else:
        # every judged query for every system seen in the run (trec_eval -c); a query a system
        # did not answer scores 0, with NumRel = R
        systems = (
            f"(SELECT DISTINCT {', '.join(keys)} FROM _run) AS _sys CROSS JOIN " if keys else ""
        )
        wanted = (
            f"_wanted AS (SELECT {', '.join([*(f'_sys.{k}' for k in keys), '_st._q'])}, "
            f"{', '.join(f'_st._R{i}' for i in lv.values())} FROM {systems}_stats AS _st)"
        )
        ctes.append(wanted)
        # null-safe on the systems: a null system is a group, as in a joined table
        on = " AND ".join(
            [*(f"_w.{k} IS NOT DISTINCT FROM _pq.{k}" for k in keys), "_w._q = _pq._q"]
        )
        values = []
        for s, (n, _) in zip(specs, columns, strict=True):
            if s.definition.name == "NumRel":
                values.append(f"CAST(_w._R{lv[s.level(relevance_level)]} AS BIGINT) AS {q(n)}")
            elif s.definition.name == "NumQ":
                values.append(f"CAST(1 AS BIGINT) AS {q(n)}")
            else:
                values.append(f"COALESCE(_pq.{q(n)}, CAST(0 AS {_sql_type(s)})) AS {q(n)}")
        where = " WHERE _pq._nret > 0" if queries == "retrieved" else ""
        w_keys = [f"_w.{k} AS {q(b)}" for k, b in zip(keys, by_cols, strict=True)]
        final = (
            f"SELECT {', '.join([*w_keys, f'_w._q AS {q(query)}'])}, "
            f"{', '.join(values)} FROM _wanted AS _w LEFT JOIN _pq ON {on}{where}"
        )
    order_by = ", ".join(q(c) for c in [*by_cols, query])
    return "WITH " + ",\n".join(ctes) + f"\n{final}\nORDER BY {order_by}"


def _sql_type(spec: Spec) -> str:
    """The SQL type of a measure's column, as `Spec.dtype`: BIGINT for a count, else DOUBLE."""
    return "BIGINT" if spec.is_count else "DOUBLE"
