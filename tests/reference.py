"""Independent plain-Python reference implementation of IR evaluation measures.

This module deliberately shares no code with ``preval`` (it neither imports
nor copies anything from ``preval/``): it is written directly from the
measure definitions, following trec_eval 9.x semantics, so that tests can use
it as an independent oracle.  Only the standard library is used, and clarity
is preferred over speed.  ``evaluate(..., trec_version=10)`` switches to the
few trec_eval 10.0 differences (scores compared as doubles, IPrec cutoffs
rounded with lround).

Measure strings follow the grammar ``NAME[(param=value,...)][@cutoff]``, e.g.
``AP``, ``AP(norm=min)@10``, ``R(norm=min)@5``, ``F(beta=0.5)@10``,
``nDCG@10``, ``P(rel=2)@5``, ``IPrec@0.1``.  See ``evaluate`` for the
supported measures.

Label conventions (as in trec_eval): a retrieved doc absent from the qrels is
"nonpool"; a NEGATIVE label means "pooled but not judged" (RELVALUE_UNJUDGED):
never relevant and never judged non-relevant; 0 <= label < level is "judged
non-relevant"; label >= level is relevant.
"""

from __future__ import annotations

import itertools
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
    "Rprec": ({"rel", "mult"}, "forbidden"),
    "SetRelP": ({"rel"}, "forbidden"),
    "SetAP": ({"rel"}, "forbidden"),
    "Utility": ({"rel", "a", "b", "c", "d", "docs"}, "forbidden"),
    "binG": ({"rel"}, "forbidden"),
    "G": ({"gains"}, "forbidden"),
    "SDCG": ({"max_rel", "min_rel"}, "required"),
    "INST": ({"max_rel", "min_rel", "T"}, "forbidden"),
    "INSQ": ({"max_rel", "min_rel", "T"}, "forbidden"),
    "NERR8": ({"max_rel", "min_rel"}, "required"),
    "BPM": ({"max_rel", "min_rel", "T"}, "required"),
    "Compat": ({"p", "normalize"}, "forbidden"),
    "NERR9": ({"max_rel", "min_rel"}, "required"),
    "NERR10": ({"max_rel", "min_rel", "p"}, "forbidden"),
    "NERR11": ({"max_rel", "min_rel", "T"}, "forbidden"),
    "PairAccuracy": ({"rel"}, "optional"),
    "ndcg_rel": ({"gains"}, "forbidden"),
    "Rndcg": ({"gains"}, "forbidden"),
    "nDCG": ({"rel", "dcg", "gains"}, "optional"),  # rel accepted but ignored
    "DCG": ({"dcg", "gains"}, "optional"),
    "RBP": ({"rel", "p", "gain"}, "optional"),
    "RBPResid": ({"p"}, "forbidden"),
    "ERR": ({"max_grade"}, "optional"),
    "Success": ({"rel"}, "required"),
    "F": ({"rel", "beta"}, "optional"),
    "NumRet": ({"rel"}, "forbidden"),
    "NumRel": ({"rel"}, "forbidden"),
    "NumRelRet": ({"rel"}, "forbidden"),
    "NumQ": ({"rel"}, "forbidden"),
    "Bpref": ({"rel"}, "forbidden"),
    "GMBpref": ({"rel"}, "forbidden"),
    "IPrec": ({"rel"}, "required"),  # cutoff is a recall level p in [0, 1]
    "AP11": ({"rel"}, "forbidden"),
    "infAP": ({"rel"}, "forbidden"),
    "Judged": ({"norm"}, "optional"),
    "Hits": ({"rel"}, "optional"),
    "SetF": ({"rel", "beta", "fbeta"}, "forbidden"),
    "SetP": ({"rel"}, "forbidden"),
    "SetR": ({"rel"}, "forbidden"),
    "NumNonrelJudgedRet": ({"rel"}, "forbidden"),
}
_ALIASES = {"11pt": "AP11"}
_FLOAT_PARAMS = {
    "p", "max_grade", "mult", "a", "b", "c", "d", "docs", "max_rel", "min_rel", "T",
}  # fmt: skip
_NORMS = {"AP": {"R", "min", "hits"}, "Judged": {"min", "K"}}
_SUMMED = {"NumRet", "NumRel", "NumRelRet", "NumQ", "NumNonrelJudgedRet"}
_GEOMETRIC = {"GMAP", "GMBpref"}
_MEASURE_RE = re.compile(
    r"^([A-Za-z][A-Za-z0-9_]*|11pt)(?:\(([^()]*)\))?(?:@([0-9]+(?:\.[0-9]+)?))?$"
)
_GM_FLOOR = 1e-5  # trec_eval MIN_GEO_MEAN
_INFAP_EPS = 1e-5  # trec_eval INFAP_EPSILON
_RECALL_LEVELS = [i / 10 for i in range(11)]  # 0.0, 0.1, ..., 1.0 (== the literals)


def parse_measure(text):
    """Parse ``NAME[(k=v,...)][@K]`` into ``(name, params, cutoff)``.

    ``params`` is a dict with typed values (rel: int, norm: str, beta: float);
    ``cutoff`` is an int >= 1 or None, except for IPrec where it is a float
    recall level in [0, 1].  Aliases are resolved (``11pt`` -> ``AP11``).
    Raises ValueError on anything invalid.
    """
    m = _MEASURE_RE.match(text)
    if m is None:
        msg = f"cannot parse measure {text!r}"
        raise ValueError(msg)
    name, param_text, cutoff_text = m.groups()
    name = _ALIASES.get(name, name)
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
            elif key in _FLOAT_PARAMS:
                params[key] = float(value)
            elif key == "normalize":
                params[key] = value == "true"
            elif key == "gain":
                if value not in ("binary", "label", "scaled"):
                    msg = f"bad gain {value!r} in {text!r}"
                    raise ValueError(msg)
                params[key] = value
            elif key in ("beta", "fbeta"):
                params[key] = float(value)
                if not 0 <= params[key] < math.inf:
                    msg = f"beta must be finite and >= 0 in {text!r}"
                    raise ValueError(msg)
            elif key == "dcg":
                if value not in ("log2", "exp-log2"):
                    msg = f"bad dcg {value!r} in {text!r}"
                    raise ValueError(msg)
                params[key] = value
            elif key == "gains":  # {grade:gain;grade:gain}: ';' as the parser splits at ','
                pairs = value.strip("{}").split(";")
                params[key] = {int(a): float(b) for a, b in (p.split(":") for p in pairs)}
            else:  # norm
                choices = _NORMS.get(name, {"R", "min"})
                if value not in choices:
                    msg = f"bad norm {value!r} in {text!r}"
                    raise ValueError(msg)
                params[key] = value

    if name == "IPrec":
        cutoff = None if cutoff_text is None else float(cutoff_text)
        if cutoff is not None and not 0.0 <= cutoff <= 1.0:
            msg = f"IPrec recall level must be in [0, 1] in {text!r}"
            raise ValueError(msg)
    else:
        if cutoff_text is not None and not cutoff_text.isdigit():
            msg = f"cutoff must be an integer in {text!r}"
            raise ValueError(msg)
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


def _rank(docs, judgments, ties, trec_version=9):
    """Return the run's doc ids in rank order (rank 1 first)."""
    items = list(docs.items())  # insertion order == input order
    if ties == "trec":
        # score descending (trec_eval 9 stores scores as float32, 10 as
        # double), then doc id descending in byte order.
        as_stored = _float32 if trec_version == 9 else float
        items.sort(
            key=lambda it: (as_stored(it[1]), str(it[0]).encode("utf-8")),
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


def _lround(x):
    """C's lround for x >= 0: nearest integer, halves away from zero."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole  # x - whole is exact


def _iprec(rel, num_rel, p, trec_version):
    """Interpolated precision at recall level p (trec_eval iprec_at_recall).

    The level is turned into a number of relevant docs ``cut``: trec_eval 9
    truncates p*R + 0.9, trec_eval 10 rounds p*R (lround).  The value is the
    best precision at a relevant doc that is at least the max(cut, 1)-th
    relevant doc retrieved; 0 if there is no such doc (cut > rel. retrieved).
    """
    x = p * num_rel
    cut = int(x + 0.9) if trec_version == 9 else _lround(x)
    best = 0.0
    found = 0
    for i, is_rel in enumerate(rel, start=1):
        if is_rel:
            found += 1
            if found >= max(cut, 1):
                best = max(best, found / i)
    return best


def _bpref(labels, judgments, level, num_rel):
    """trec_eval bpref; nonpool (None) and negative labels are skipped."""
    num_nonrel = sum(1 for lab in judgments.values() if 0 <= lab < level)
    nonrel_so_far = 0
    total = 0.0
    for lab in labels:
        if lab is None or lab < 0:  # nonpool / pooled but unjudged
            continue
        if lab < level:
            nonrel_so_far += 1
        elif nonrel_so_far > 0:  # then num_nonrel >= nonrel_so_far > 0
            total += 1.0 - min(nonrel_so_far, num_rel) / min(num_nonrel, num_rel)
        else:
            total += 1.0
    return total / num_rel if num_rel > 0 else 0.0


def _infap(labels, level, num_rel):
    """trec_eval infAP: i counts every retrieved doc, nonpool ones included."""
    rel_so_far = nonrel_so_far = unjudged_so_far = 0
    total = 0.0
    for i, lab in enumerate(labels, start=1):
        if lab is None:  # nonpool: occupies a rank, changes no counter
            continue
        if lab < 0:  # pooled but unjudged
            unjudged_so_far += 1
            continue
        if lab < level:
            nonrel_so_far += 1
            continue
        rel_so_far += 1
        if i == 1:
            total += 1.0
        else:
            # 1/i + ((i-1)/i) * (judged-or-pooled above / (i-1)) * (est. precision)
            above = rel_so_far - 1 + nonrel_so_far + unjudged_so_far
            precision = (rel_so_far - 1 + _INFAP_EPS) / (
                rel_so_far - 1 + nonrel_so_far + 2 * _INFAP_EPS
            )
            total += 1.0 / i + ((i - 1) / i) * (above / (i - 1)) * precision
    return total / num_rel if num_rel > 0 else 0.0


def _gain(label, params):
    """Gain of one label: the label (max 0), 2^label - 1 (dcg=exp-log2), or a custom value."""
    if label is None:
        return 0.0
    if label in params.get("gains", {}):
        return params["gains"][label]
    g = max(label, 0)
    return 2.0**g - 1.0 if params.get("dcg") == "exp-log2" else float(g)


def _walks(name, labels, judgments, params, num_rel):
    """trec_eval's G, ndcg_rel and Rndcg: the ranking against the ideal one, rank by rank."""
    gains = [_gain(lab, params) for lab in labels]
    ideal = sorted((g for g in (_gain(lab, params) for lab in judgments.values()) if g > 0),
                   reverse=True)  # fmt: skip
    n, top = len(gains), len(ideal)

    def dcg(k):  # of ranks 1..min(k, n)
        return _dcg(gains, min(k, n))

    def idcg(k):
        return _dcg(ideal, k)

    if name == "G":
        total = cost = found = 0.0
        for k, g in enumerate(gains, start=1):
            cost += max(ideal[k - 1] if k <= top else 0.0, 1.0)
            found += g
            if g != 0:
                total += g / math.log2(2 + cost - found)
        return total / sum(ideal) if ideal else 0.0
    if name == "ndcg_rel":
        if not top:
            return 0.0
        seen = [k for k, g in enumerate(gains, start=1) if g > 0]
        total = sum(dcg(k) / idcg(min(k, top)) for k in seen)
        total += (top - len(seen)) * dcg(n) / idcg(top)
        return total / top if total > 0 else 0.0
    # Rndcg: a level ends at rank b - 1 where the ideal gain changes (to 0 after rank top)
    if num_rel == 0:
        return 0.0
    padded = [*ideal, 0.0]
    ends = [b - 1 for b in range(2, top + 2) if padded[b - 1] != padded[b - 2]]
    values = [dcg(e) / idcg(e) for e in ends]
    if n > top + 1 and top > 0:  # trec_eval's implied level at the end of the retrieval
        values.append(dcg(n) / idcg(top))
    return sum(values) / len(values) if values else 0.0


def _dcg(gains, k):
    return sum(g / math.log2(i + 1) for i, g in enumerate(gains[:k], start=1))


def _compat(ranked, docs, judgments, p, normalize):
    """Clarke et al.'s compatibility: RBO of the ranking with the ideal one to depth
    max(n, ideal size); ideal ties by the run's score (0 if not retrieved), then run order."""
    place = {doc: i for i, doc in enumerate(ranked)}
    ideal = [doc for doc, lab in judgments.items() if lab > 0]
    ideal.sort(key=lambda doc: (-judgments[doc], -docs.get(doc, 0.0), place.get(doc, len(place))))
    depth = max(len(ranked), len(ideal))

    def rbo(a, b):
        top = sum(p**i for i in range(depth))
        found = sum(p**i * len(set(a[: i + 1]) & set(b[: i + 1])) / (i + 1) for i in range(depth))
        return found / top if top else 0.0

    score = rbo(ranked, ideal)
    if normalize:
        best = rbo(ideal, ideal)
        return score / best if best > 0 else 0.0
    return score


def _query_values(ranked, judgments, parsed, relevance_level, trec_version, scores=None):
    """Compute every requested measure for one query."""
    labels = [judgments.get(doc) for doc in ranked]  # None == nonpool
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
            c = int(params.get("mult", 1.0) * num_rel + 0.9)  # trec_eval Rprec_mult
            value = tp(c) / c if c > 0 else 0.0
        elif name == "SetRelP":
            value = tp(n) / min(n, num_rel) if n and num_rel else 0.0
        elif name == "SetAP":
            value = tp(n) ** 2 / (n * num_rel) if n and num_rel else 0.0
        elif name == "Utility":
            defaults = {"a": 1.0, "b": -1.0, "c": 0.0, "d": 0.0}
            a, b, c, d = (params.get(x, dv) for x, dv in defaults.items())
            size = params.get("docs", 0.0)
            h = tp(n)
            value = a * h + b * (n - h) + c * (num_rel - h) + d * (size + h - n - num_rel)
        elif name == "Compat":
            value = _compat(ranked, scores or {}, judgments, params.get("p", 0.95),
                            params.get("normalize", True))  # fmt: skip
        elif name == "BPM":  # read ranks until the gain reaches T, at most K of them
            lo, hi, t = params.get("min_rel", 0.0), params["max_rel"], params.get("T", 1.0)
            k = min(cutoff, 1000)
            got, stop = 0.0, k
            for i in range(1, k + 1):
                lab = labels[i - 1] if i <= n else None
                got += 0.0 if lab is None else (min(max(lab, lo), hi) - lo) / (hi - lo)
                if got >= t:
                    stop = i
                    break
            value = got / stop
        elif name == "SDCG":
            lo, hi = params.get("min_rel", 0.0), params["max_rel"]
            scaled = [0.0 if lab is None else (min(max(lab, lo), hi) - lo) / (hi - lo)
                      for lab in labels]  # fmt: skip
            value = _dcg(scaled, cutoff) / _dcg([1.0] * cutoff, cutoff)
        elif name in ("INST", "INSQ", "NERR8", "NERR9", "NERR10", "NERR11"):
            # C/W/L: W_i = prod_{j<i} C_j / sum_k prod_{j<k} C_j over 1000 ranks (cwl_eval)
            lo, hi, t = params.get("min_rel", 0.0), params["max_rel"], params.get("T", 1.0)
            gains = [0.0 if lab is None else (min(max(lab, lo), hi) - lo) / (hi - lo)
                     for lab in labels[:1000]]  # fmt: skip
            gains += [0.0] * (1000 - len(gains))
            reach, weights, got = 1.0, [], 0.0
            for i, g in enumerate(gains, start=1):
                weights.append(reach)
                got += g
                if name in ("INST", "INSQ"):
                    x = 2 * t if name == "INSQ" else 2 * t - got
                    reach *= ((i + x - 1) / (i + x)) ** 2
                elif name == "NERR8":  # Azzopardi et al. 2021, equations 8 to 11
                    reach *= (1 - g) if i < cutoff else 0.0
                elif name == "NERR9":
                    reach *= i / (i + 1) * (1 - g) if i < cutoff else 0.0
                elif name == "NERR10":
                    reach *= params.get("p", 0.9) * (1 - g)
                else:
                    reach *= ((i + 2 * t - 1) / (i + 2 * t)) ** 2 * (1 - g)
            value = sum(w * g for w, g in zip(weights, gains, strict=True)) / sum(weights)
        elif name == "PairAccuracy":
            shown = rel[: n if cutoff is None else cutoff]
            pairs = ordered = 0
            for i, is_rel in enumerate(shown):
                if is_rel:
                    for j, other in enumerate(shown):
                        if not other:
                            pairs += 1
                            ordered += i < j
            if not any(shown):
                value = None
            else:
                value = ordered / pairs if pairs else 1.0
            out[text] = value
            continue
        elif name in ("G", "ndcg_rel", "Rndcg"):
            value = _walks(name, labels, judgments, params, num_rel)
        elif name == "binG":
            total, found = 0.0, 0
            for k in range(1, n + 1):
                if rel[k - 1]:
                    found += 1
                    total += 1 / math.log2(2 + k - found)
            value = total / num_rel if num_rel else 0.0
        elif name in ("nDCG", "DCG"):
            k_max = n if cutoff is None else min(cutoff, n)
            dcg = _dcg([_gain(lab, params) for lab in labels], k_max)
            # the ideal: positive gains of every judged document, best first
            ideal = sorted((_gain(lab, params) for lab in judgments.values()), reverse=True)
            ideal = [g for g in ideal if g > 0]
            idcg = _dcg(ideal, len(ideal) if cutoff is None else cutoff)
            if name == "DCG":
                value = dcg
            else:
                value = dcg / idcg if idcg > 0 else 0.0
        elif name == "RBP":
            p = params.get("p", 0.8)
            gain = params.get("gain", "binary")
            top = max([lab for lab in judgments.values()], default=0)
            total = 0.0
            for k, lab in enumerate(labels[: n if cutoff is None else cutoff]):
                if gain == "binary":
                    g = 1.0 if rel[k] else 0.0
                elif gain == "label":
                    g = float(lab) if rel[k] else 0.0
                else:  # trec_eval 10: grades scaled by the query's highest when above 1
                    g = 0.0 if lab is None or lab < 0 else lab / max(top, 1)
                total += g * p**k
            value = (1 - p) * total
        elif name == "RBPResid":
            p = params.get("p", 0.8)
            unjudged = [k for k, lab in enumerate(labels) if lab is None or lab < 0]
            value = p**n + (1 - p) * sum(p**k for k in unjudged) if unjudged else 0.0
        elif name == "ERR":
            top = params.get("max_grade", 4.0)
            value, reach = 0.0, 1.0
            for k, lab in enumerate(labels[: n if cutoff is None else cutoff], start=1):
                g = 0.0 if lab is None else min(max(lab, 0), top)
                stop = (2.0**g - 1) / 2.0**top
                value += stop * reach / k
                reach *= 1 - stop
        elif name == "Hits":
            value = tp(n if cutoff is None else cutoff)
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
        elif name in ("Bpref", "GMBpref"):
            value = _bpref(labels, judgments, level, num_rel)
        elif name == "IPrec":
            value = _iprec(rel, num_rel, cutoff, trec_version)
        elif name == "AP11":
            values = [_iprec(rel, num_rel, p, trec_version) for p in _RECALL_LEVELS]
            value = sum(values) / len(values)
        elif name == "infAP":
            value = _infap(labels, level, num_rel)
        elif name == "Judged":
            # ir_measures: judged share of the documents shown, min(K, n); norm=K: of K
            shown = n if cutoff is None else min(cutoff, n)
            found = sum(1 for lab in labels[:shown] if lab is not None and lab >= 0)
            if params.get("norm", "min") == "K" and cutoff is not None:
                value = found / cutoff
            else:
                value = found / shown if shown else 0.0
        elif name == "SetF":
            # weight x: trec_eval's set_F parameter (beta=), or fbeta squared
            x = params["fbeta"] ** 2 if "fbeta" in params else params.get("beta", 1.0)
            denom = x * num_rel + n
            value = (1 + x) * tp(n) / denom if tp(n) else 0.0
        elif name == "SetP":
            value = tp(n) / n if n > 0 else 0.0
        elif name == "SetR":
            value = tp(n) / num_rel if num_rel > 0 else 0.0
        elif name == "NumNonrelJudgedRet":
            value = sum(1 for lab in labels if lab is not None and 0 <= lab < level)
        else:  # NumQ
            value = 1
        out[text] = float(value)
    return out


def _expected_values(docs, judgments, parsed, relevance_level, trec_version):
    """ties="expected" by brute force: every measure averaged over every order of the tied
    documents (each tie group permuted independently); groups are equal scores as trec_eval
    compares them (float32 in version 9)."""
    as_stored = _float32 if trec_version == 9 else float
    groups = {}
    for doc, score in docs.items():
        groups.setdefault(as_stored(score), []).append(doc)
    ordered = [groups[score] for score in sorted(groups, reverse=True)]
    totals, count = {}, 0
    for choice in itertools.product(*(itertools.permutations(g) for g in ordered)):
        ranked = [doc for group in choice for doc in group]
        values = _query_values(ranked, judgments, parsed, relevance_level, trec_version)
        for key, value in values.items():
            totals[key] = totals.get(key, 0.0) + value
        count += 1
    return {key: value / count for key, value in totals.items()}


def evaluate(
    run,
    qrels,
    measures,
    *,
    relevance_level=1,
    ties="trec",
    queries="judged",
    trec_version=9,
    depth=None,
    judged_only=False,
):
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
    trec_version: 9 (trec_eval 9.0.8, default) or 10 (trec_eval 10.0:
              "trec" ties compare scores as doubles instead of float32, and
              IPrec/AP11 round p*R with lround instead of truncating p*R+0.9).
    depth:    None or int >= 1; keep only the top ``depth`` ranked docs
              (trec_eval -M).
    judged_only: after the depth cut, drop retrieved docs that are not judged
              (absent from qrels or negative label) and close the rank gaps
              (trec_eval -J).  R is unchanged.

    Measures (``rel=L`` overrides relevance_level where allowed): AP, GMAP,
    P@K, R@K, RR, Rprec, nDCG, Success@K, F, NumRet, NumRel, NumRelRet, NumQ,
    Bpref, GMBpref, IPrec@p, AP11 (alias 11pt), infAP, Judged@K, SetP, SetR,
    NumNonrelJudgedRet.
    """
    if queries not in ("judged", "retrieved"):
        msg = f"unknown queries mode {queries!r}"
        raise ValueError(msg)
    if trec_version not in (9, 10):
        msg = f"unknown trec_version {trec_version!r}"
        raise ValueError(msg)
    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
        msg = f"depth must be None or an int >= 1, not {depth!r}"
        raise ValueError(msg)
    if ties not in ("trec", "input", "optimistic", "pessimistic", "expected"):
        msg = f"unknown ties mode {ties!r}"
        raise ValueError(msg)
    parsed = {text: parse_measure(text) for text in measures}

    results = {}
    for query, judgments in qrels.items():
        docs = run.get(query) or {}
        if queries == "retrieved" and not docs:
            continue
        if ties == "expected":
            results[query] = _expected_values(
                docs, judgments, parsed, relevance_level, trec_version
            )
            continue
        ranked = _rank(docs, judgments, ties, trec_version)
        if depth is not None:
            ranked = ranked[:depth]
        if judged_only:
            ranked = [doc for doc in ranked if judgments.get(doc, -1) >= 0]
        results[query] = _query_values(
            ranked, judgments, parsed, relevance_level, trec_version, docs
        )
    return results


def summarize(per_query):
    """Aggregate ``evaluate`` output over queries.

    Arithmetic mean for rate measures, sum for NumRet/NumRel/NumRelRet/NumQ/
    NumNonrelJudgedRet, and for GMAP and GMBpref the geometric mean
    exp(mean(log(max(x, 1e-5)))) as in trec_eval's gm_map and gm_bpref.
    Returns {} for an empty input.
    """
    if not per_query:
        return {}
    rows = list(per_query.values())
    summary = {}
    for text in rows[0]:
        name = parse_measure(text)[0]
        values = [row[text] for row in rows if row[text] is not None]  # None: no value
        if name in _SUMMED:
            summary[text] = float(sum(values))
        elif name in _GEOMETRIC:
            logs = [math.log(max(v, _GM_FLOOR)) for v in values]
            summary[text] = math.exp(sum(logs) / len(logs))
        else:
            summary[text] = sum(values) / len(values) if values else None
    return summary


# --- Diversity measures (TREC Web track's ndeval) ---------------------------------------------
# Written from ndeval.c's definitions (version 4.5): binary judgments per subtopic, the
# greedy ideal ranking, ndeval's "ideal ideal" normalisation of alpha-DCG and ERR-IA.

_DIVERSITY = {
    "alpha_DCG": ({"alpha", "rel"}, "required"),
    "alpha_nDCG": ({"alpha", "rel"}, "required"),
    "ERR_IA": ({"alpha", "rel"}, "required"),
    "nERR_IA": ({"alpha", "rel"}, "required"),
    "NRBP": ({"alpha", "beta", "rel"}, "forbidden"),
    "AP_IA": ({"rel"}, "forbidden"),
    "P_IA": ({"rel"}, "required"),
    "StRecall": ({"rel"}, "required"),
}


def _parse_diversity(text):
    m = re.fullmatch(r"(\w+)(?:\(([^)]*)\))?(?:@(\d+))?", text)
    if not m or m[1] not in _DIVERSITY:
        msg = f"unknown diversity measure {text!r}"
        raise ValueError(msg)
    allowed, cutoff = _DIVERSITY[m[1]]
    params = {"alpha": 0.5, "beta": 0.5, "rel": None}
    for item in filter(None, (m[2] or "").split(",")):
        key, _, value = item.partition("=")
        if key not in allowed:
            msg = f"{m[1]} takes no {key}"
            raise ValueError(msg)
        params[key] = float(value)
    if (m[3] is None) != (cutoff == "forbidden"):
        msg = f"bad cutoff in {text!r}"
        raise ValueError(msg)
    return m[1], params, None if m[3] is None else int(m[3])


def _novelty_gains(ranked, relevant, alpha):
    """g(k) for each ranked doc: Σ over its subtopics of (1 - alpha)^(docs above on it)."""
    seen = {}
    gains = []
    for doc in ranked:
        g = 0.0
        for sub in sorted(relevant.get(doc, ())):
            g += (1.0 - alpha) ** seen.get(sub, 0)
            seen[sub] = seen.get(sub, 0) + 1
        gains.append(g)
    return gains


def _ideal_order(relevant, alpha):
    """ndeval's greedy ideal: best gain given the docs placed, ties to the greatest doc id."""
    left = sorted(relevant)
    weight = {}
    order = []
    while left:
        best, best_doc = None, None
        for doc in left:
            g = sum((1.0 - alpha) ** weight.get(sub, 0) for sub in sorted(relevant[doc]))
            if best is None or g > best or (g == best and doc.encode() > best_doc.encode()):
                best, best_doc = g, doc
        order.append(best_doc)
        left.remove(best_doc)
        for sub in relevant[best_doc]:
            weight[sub] = weight.get(sub, 0) + 1
    return order


def _diversity_value(name, params, k, ranked, relevant, m):
    alpha, beta = params["alpha"], params["beta"]
    if m == 0:
        return 0.0
    gains = _novelty_gains(ranked, relevant, alpha)

    def dcg(gs, kk):
        return sum(g / math.log2(i + 2) for i, g in enumerate(gs[:kk]))

    def err(gs, kk):
        return sum(g / (i + 1) for i, g in enumerate(gs[:kk]))

    def ideal_ideal(kind, kk):
        if kk == 1:  # ndeval normalises from the second rank on
            return 1.0
        d = (lambda i: 1 / math.log2(i + 2)) if kind == "dcg" else (lambda i: 1 / (i + 1))
        return sum(m * (1 - alpha) ** i * d(i) for i in range(kk))

    if name in ("alpha_nDCG", "nERR_IA"):
        ideal = _novelty_gains(_ideal_order(relevant, alpha), relevant, alpha)
        f = dcg if name == "alpha_nDCG" else err
        return f(gains, k) / f(ideal, k) if f(gains, k) else 0.0
    if name == "alpha_DCG":
        return dcg(gains, k) / ideal_ideal("dcg", k)
    if name == "ERR_IA":
        return err(gains, k) / ideal_ideal("err", k)
    if name == "NRBP":
        total = sum(g * beta**i for i, g in enumerate(gains))
        return total * (1 - (1 - alpha) * beta) / m
    if name == "AP_IA":  # AP of each subtopic with relevant documents, averaged
        total = 0.0
        for sub in {s for subs in relevant.values() for s in subs}:
            judged = sum(sub in subs for subs in relevant.values())
            hits, precisions = 0, 0.0
            for i, doc in enumerate(ranked):
                if sub in relevant.get(doc, ()):
                    hits += 1
                    precisions += hits / (i + 1)
            total += precisions / judged
        return total / m
    if name == "P_IA":
        return sum(len(relevant.get(doc, ())) for doc in ranked[:k]) / (k * m)
    covered = set()  # StRecall
    for doc in ranked[:k]:
        covered |= relevant.get(doc, set())
    return len(covered) / m


def evaluate_diversity(run, qrels, measures, *, relevance_level=1, ties="trec", depth=None):
    """Diversity measures as ndeval computes them; ``{query: {measure: value}}``.

    run:   {query: {doc: score}} (insertion order is the input order, for ties="input").
    qrels: {query: {subtopic: {doc: label}}}; a doc is relevant to a subtopic when its label
           there is >= the level (``rel=`` or `relevance_level`). Every qrels query is
           evaluated (ndeval -c); nothing retrieved scores 0.
    measures: alpha_DCG@K, alpha_nDCG@K, ERR_IA@K, nERR_IA@K, NRBP, AP_IA, P_IA@K, StRecall@K, with
           (alpha=, beta=, rel=) as ndeval's -alpha, -beta (defaults 0.5).
    The other measures read a doc's highest label over its subtopics: `ties` orders by it.
    """
    parsed = {text: _parse_diversity(text) for text in measures}
    results = {}
    for query, subtopics in qrels.items():
        best = {}
        for docs in subtopics.values():
            for doc, label in docs.items():
                best[doc] = max(best.get(doc, label), label)
        ranked = _rank(run.get(query) or {}, best, ties)
        if depth is not None:
            ranked = ranked[:depth]
        out = {}
        for text, (name, params, k) in parsed.items():
            level = relevance_level if params["rel"] is None else params["rel"]
            relevant = {}
            for sub, docs in subtopics.items():
                for doc, label in docs.items():
                    if label >= level:
                        relevant.setdefault(doc, set()).add(sub)
            m = len({s for subs in relevant.values() for s in subs})
            out[text] = _diversity_value(name, params, k, ranked, relevant, m)
        results[query] = out
    return results
