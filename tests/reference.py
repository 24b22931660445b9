"""Independent plain-Python reference implementation of IR evaluation measures.

This module deliberately shares no code with ``preval`` (it neither imports
nor copies anything from ``src/preval``): it is written directly from the
measure definitions, following trec_eval 9.x semantics, so that tests can use
it as an independent oracle.  Only the standard library is used, and clarity
is preferred over speed.

Measure strings follow the grammar ``NAME[(param=value,...)][@cutoff]``, e.g.
``AP``, ``AP(norm=min)@10``, ``R(norm=min)@5``, ``F(beta=0.5)@10``,
``nDCG@10``, ``P(rel=2)@5``.  See ``evaluate`` for the supported measures.
"""

from __future__ import annotations

import math
import re
import struct

__all__ = ["evaluate", "parse_measure", "summarize"]

# name -> (allowed params, cutoff: "required" | "optional" | "forbidden")
_MEASURES = {
    "AP": ({"rel", "norm"}, "optional"),
    "GMAP": ({"rel"}, "forbidden"),
    "P": ({"rel"}, "required"),
    "R": ({"rel", "norm"}, "required"),
    "RR": ({"rel"}, "optional"),
    "Rprec": ({"rel"}, "forbidden"),
    "nDCG": ({"rel"}, "optional"),  # rel accepted but ignored: gains are labels
    "Success": ({"rel"}, "required"),
    "F": ({"rel", "beta"}, "optional"),
    "NumRet": ({"rel"}, "forbidden"),
    "NumRel": ({"rel"}, "forbidden"),
    "NumRelRet": ({"rel"}, "forbidden"),
    "NumQ": ({"rel"}, "forbidden"),
}
_SUMMED = {"NumRet", "NumRel", "NumRelRet", "NumQ"}
_MEASURE_RE = re.compile(r"^([A-Za-z]+)(?:\(([^()]*)\))?(?:@([0-9]+))?$")
_GM_FLOOR = 1e-5  # trec_eval MIN_GEO_MEAN


def parse_measure(text):
    """Parse ``NAME[(k=v,...)][@K]`` into ``(name, params, cutoff)``.

    ``params`` is a dict with typed values (rel: int, norm: str, beta: float);
    ``cutoff`` is an int >= 1 or None.  Raises ValueError on anything invalid.
    """
    m = _MEASURE_RE.match(text)
    if m is None:
        msg = f"cannot parse measure {text!r}"
        raise ValueError(msg)
    name, param_text, cutoff_text = m.groups()
    if name not in _MEASURES:
        msg = f"unknown measure {name!r} in {text!r}"
        raise ValueError(msg)
    allowed, cutoff_rule = _MEASURES[name]

    params = {}
    if param_text is not None:
        for item in param_text.split(","):
            key, sep, value = item.partition("=")
            if not sep or key not in allowed or key in params:
                msg = f"bad parameter {item!r} in {text!r}"
                raise ValueError(msg)
            if key == "rel":
                params[key] = int(value)
            elif key == "beta":
                params[key] = float(value)
                if not 0 <= params[key] < math.inf:
                    msg = f"beta must be finite and >= 0 in {text!r}"
                    raise ValueError(msg)
            else:  # norm
                choices = {"R", "min", "hits"} if name == "AP" else {"R", "min"}
                if value not in choices:
                    msg = f"bad norm {value!r} in {text!r}"
                    raise ValueError(msg)
                params[key] = value

    cutoff = None if cutoff_text is None else int(cutoff_text)
    if cutoff is not None and cutoff < 1:
        msg = f"cutoff must be >= 1 in {text!r}"
        raise ValueError(msg)
    if cutoff_rule == "required" and cutoff is None:
        msg = f"{name} needs a cutoff: {text!r}"
        raise ValueError(msg)
    if cutoff_rule == "forbidden" and cutoff is not None:
        msg = f"{name} takes no cutoff: {text!r}"
        raise ValueError(msg)
    if name == "AP" and cutoff is None and params.get("norm", "R") != "R":
        msg = f"AP norm other than R needs a cutoff: {text!r}"
        raise ValueError(msg)
    return name, params, cutoff


def _float32(x):
    """Round a Python float to IEEE single precision (as trec_eval stores it)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _rank(docs, judgments, ties):
    """Return the run's doc ids in rank order (rank 1 first)."""
    items = list(docs.items())  # insertion order == input order
    if ties == "trec":
        # score (float32) descending, then doc id descending in byte order.
        items.sort(
            key=lambda it: (_float32(it[1]), str(it[0]).encode("utf-8")),
            reverse=True,
        )
    elif ties == "input":
        items.sort(key=lambda it: -it[1])  # sort is stable
    elif ties in ("optimistic", "pessimistic"):
        sign = -1 if ties == "optimistic" else 1

        def key(it):
            label = judgments.get(it[0])
            lab = -math.inf if label is None else label  # unjudged: lowest
            return (-it[1], sign * lab)

        items.sort(key=key)  # stable: input order among full ties
    else:
        msg = f"unknown ties mode {ties!r}"
        raise ValueError(msg)
    return [doc for doc, _ in items]


def _query_values(ranked, judgments, parsed, relevance_level):
    """Compute every requested measure for one query."""
    labels = [judgments.get(doc) for doc in ranked]  # None == unjudged
    n = len(labels)
    out = {}
    for text, (name, params, cutoff) in parsed.items():
        level = params.get("rel", relevance_level)
        rel = [lab is not None and lab >= level for lab in labels]
        num_rel = sum(1 for lab in judgments.values() if lab >= level)

        def tp(k, rel=rel):
            return sum(rel[: max(0, min(k, n))])

        if name in ("AP", "GMAP"):
            k_max = n if cutoff is None else min(cutoff, n)
            total = sum(tp(k) / k for k in range(1, k_max + 1) if rel[k - 1])
            norm = params.get("norm", "R")
            if norm == "R":
                denom = num_rel
            elif norm == "min":
                denom = min(num_rel, cutoff)
            else:  # hits
                denom = tp(cutoff)
            value = total / denom if denom > 0 else 0.0
        elif name == "P":
            value = tp(cutoff) / cutoff
        elif name == "R":
            denom = num_rel if params.get("norm", "R") == "R" else min(num_rel, cutoff)
            value = tp(cutoff) / denom if denom > 0 else 0.0
        elif name == "RR":
            k_max = n if cutoff is None else min(cutoff, n)
            first = next((k for k in range(1, k_max + 1) if rel[k - 1]), None)
            value = 0.0 if first is None else 1.0 / first
        elif name == "Rprec":
            value = tp(num_rel) / num_rel if num_rel > 0 else 0.0
        elif name == "nDCG":
            k_max = n if cutoff is None else min(cutoff, n)
            gains = [0 if lab is None else max(lab, 0) for lab in labels]
            dcg = sum(gains[k - 1] / math.log2(k + 1) for k in range(1, k_max + 1))
            ideal = sorted((max(lab, 0) for lab in judgments.values()), reverse=True)
            if cutoff is not None:
                ideal = ideal[:cutoff]
            idcg = sum(g / math.log2(k + 1) for k, g in enumerate(ideal, start=1))
            value = dcg / idcg if idcg > 0 else 0.0
        elif name == "Success":
            value = 1.0 if tp(cutoff) > 0 else 0.0
        elif name == "F":
            k = n if cutoff is None else cutoff
            precision = tp(k) / k if k > 0 else 0.0
            recall = tp(k) / num_rel if num_rel > 0 else 0.0
            b2 = params.get("beta", 1.0) ** 2
            if precision + recall == 0:
                value = 0.0
            else:
                value = (1 + b2) * precision * recall / (b2 * precision + recall)
        elif name == "NumRet":
            value = n
        elif name == "NumRel":
            value = num_rel
        elif name == "NumRelRet":
            value = tp(n)
        else:  # NumQ
            value = 1
        out[text] = float(value)
    return out


def evaluate(run, qrels, measures, *, relevance_level=1, ties="trec", queries="judged"):
    """Evaluate ``run`` against ``qrels``; return ``{query: {measure: value}}``.

    run:      {query: {doc: score}}; inner insertion order is the input order.
    qrels:    {query: {doc: int label}} (labels may be negative).
    measures: measure strings; result keys are these strings as given.
    relevance_level: a doc is relevant iff judged with label >= level
              (overridable per measure with the ``rel=L`` parameter).
    ties:     "trec" (float32 scores, doc id descending), "input" (stable),
              "optimistic" / "pessimistic" (tied scores ordered by label).
    queries:  "judged" (every qrels query, like trec_eval -c) or "retrieved"
              (qrels queries with at least one retrieved doc).
    """
    if queries not in ("judged", "retrieved"):
        msg = f"unknown queries mode {queries!r}"
        raise ValueError(msg)
    if ties not in ("trec", "input", "optimistic", "pessimistic"):
        msg = f"unknown ties mode {ties!r}"
        raise ValueError(msg)
    parsed = {text: parse_measure(text) for text in measures}

    results = {}
    for query, judgments in qrels.items():
        docs = run.get(query) or {}
        if queries == "retrieved" and not docs:
            continue
        ranked = _rank(docs, judgments, ties)
        results[query] = _query_values(ranked, judgments, parsed, relevance_level)
    return results


def summarize(per_query):
    """Aggregate ``evaluate`` output over queries.

    Arithmetic mean for rate measures, sum for NumRet/NumRel/NumRelRet/NumQ,
    and for GMAP the geometric mean exp(mean(log(max(AP, 1e-5)))) as in
    trec_eval's gm_map.  Returns {} for an empty input.
    """
    if not per_query:
        return {}
    rows = list(per_query.values())
    summary = {}
    for text in rows[0]:
        name = parse_measure(text)[0]
        values = [row[text] for row in rows]
        if name in _SUMMED:
            summary[text] = float(sum(values))
        elif name == "GMAP":
            logs = [math.log(max(v, _GM_FLOOR)) for v in values]
            summary[text] = math.exp(sum(logs) / len(logs))
        else:
            summary[text] = sum(values) / len(values)
    return summary
