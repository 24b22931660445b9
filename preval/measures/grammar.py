"""Measure requests: the ir_measures grammar ``NAME[(param=value,...)][@cutoff]`` and
trec_eval's spellings parsed into a `Spec` (`parse`, `parse_all`, `from_ir_measures`), and the
aggregation expression of a spec (`build`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import polars as pl

from ..errors import MeasureError
from ..ranking import Ranking
from .registry import _ALIASES, _PRESETS, CATALOGUE, Definition, Spec

# measures with a closed form of their expected value over the orders of tied documents
# (ties="expected"); count measures that do not read the order are exact anyway
EXPECTED_FORMS = frozenset(
    {"AP", "P", "R", "RR", "Success", "nDCG", "DCG", "Hits", "TieAtCutoff", "NumRet", "NumRel",
     "NumRelRet", "NumQ", "SetP", "SetR", "SetF", "SetRelP", "SetAP", "Utility",
     "NumNonrelJudgedRet"}
)  # fmt: skip
# measures defined when tied scores form one operating point (ties="threshold"): those that
# read the curve of operating points, and those that do not read the order
THRESHOLD_FORMS = frozenset(
    {"AP", "GMAP", "AUC-PR", "AUC-ROC", "MaxF", "NumRet", "NumRel", "NumRelRet", "NumQ",
     "SetP", "SetR", "SetF", "SetRelP", "SetAP", "Utility", "Accuracy", "Specificity",
     "NumNonrelJudgedRet"}
)  # fmt: skip


def build(spec: Spec, ranking: Ranking) -> pl.Expr:
    """The aggregation expression of `spec`, as Float64 (a count as Int64, `Spec.dtype`),
    named by its canonical name."""
    name = spec.definition.name
    if spec.definition.diversity:
        msg = (
            f"{spec.name} is a diversity measure: it needs qrels with a subtopic column "
            "(subtopic=..., --subtopic), and is evaluated from them"
        )
        raise MeasureError(msg)
    if ranking.expected and name not in EXPECTED_FORMS:
        msg = (
            f"{spec.name} has no closed form under ties='expected'; those that do: "
            f"{', '.join(sorted(EXPECTED_FORMS))}. ties='optimistic' and 'pessimistic' "
            "bound any measure"
        )
        raise MeasureError(msg)
    if ranking.threshold and name not in THRESHOLD_FORMS:
        msg = (
            f"{spec.name} is not defined under ties='threshold' (tied scores as one operating "
            f"point); those that are: {', '.join(sorted(THRESHOLD_FORMS))}"
        )
        raise MeasureError(msg)
    return spec.definition.build(ranking, spec).cast(spec.dtype).alias(spec.name)


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

_GRAMMAR = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9_\-]*?)(?:\((?P<params>[^()]*)\))?(?:@(?P<cutoff>[^@()]+))?$"
)
# trec_eval spellings with the cutoff fused into the name: P_10, P.10, map_cut_100 ...
_TREC = re.compile(
    r"^(?P<name>map_cut|P|recall|relative_P|ndcg_cut|success|iprec_at_recall|Judged)[._]"
    r"(?P<cutoff>\d+(\.\d+)?)$"
)


# Spark MLlib's RankingMetrics spellings, the cutoff as the call's argument: ndcgAt(10) ...
_MLLIB = re.compile(
    r"^(?P<name>precisionAt|recallAt|ndcgAt|meanAveragePrecisionAt)\((?P<cutoff>\d+)\)$"
)


def measure_columns(schema: pl.Schema) -> dict[str, Spec]:
    """Columns of a per-query table that are measures: their names parse as one and they
    hold numbers, or strings (a CSV column with no value at all is read as strings); a
    categorical, date or nested column named ``G`` is a key, not a measure."""
    found = {}
    for name, dtype in schema.items():
        if not (dtype.is_numeric() or dtype in (pl.Boolean, pl.Null, pl.String)):
            continue
        try:
            found[name] = parse(name, hint=False)
        except MeasureError:
            continue
    return found


def parse(text: str, *, hint: bool = True) -> Spec:
    """Parse one measure request into a `Spec`, or raise `MeasureError` saying what is wrong.

    `hint`: the error about an unknown or unparsable request names the closest requests that
    parse (`suggest`); False where a failure is no mistake (is this column a measure?).
    """
    raw = text.strip()
    ranx_rbp = re.fullmatch(r"rbp\.(\d+)", raw)  # ranx: rbp.95 is p = 0.95, graded
    if ranx_rbp:
        raw = f"RBP(p=0.{ranx_rbp[1]},gain=label)"
    mult = re.fullmatch(r"Rprec_mult[._](\d+(?:\.\d+)?)", raw)  # trec_eval's Rprec_mult_0.20
    if mult:
        raw = f"Rprec(mult={mult[1]})"
    ranx_level = _RANX_LEVEL.match(raw)
    if ranx_level and ranx_level["name"].lower() in _ALIASES:
        raise MeasureError(_ranx_level_message(text, ranx_level))
    cutoffs = re.fullmatch(r"(?P<name>[A-Za-z_]+)\.(?P<list>\d+(?:,\d+)+)", raw)
    listed = []
    if cutoffs:
        listed = _parsed(f"{cutoffs['name']}.{c}" for c in cutoffs["list"].split(","))
    if len(listed) > 1:  # trec_eval's -m P.5,10: preval trec reads it, a request is one measure
        msg = (
            f"{text!r} is trec_eval's list of cutoffs: give each its own -m (or list entry): "
            f"{', '.join(repr(s) for s in listed)} (preval trec reads it as trec_eval does)"
        )
        raise MeasureError(msg)
    several = _several(raw)
    if several:  # ir_measures' command line takes "AP P@10" in one argument
        listed = ", ".join(repr(s) for s in several)
        msg = (
            f"{text!r} names {len(several)} measures: give each its own -m (or list "
            f"entry): {listed}"
        )
        raise MeasureError(msg)
    trec = _TREC.match(raw) or _MLLIB.match(raw)
    if trec:
        raw = f"{trec['name']}@{trec['cutoff']}"
    m = _GRAMMAR.match(raw)
    if not m:
        msg = (
            f"cannot parse measure {text!r}: expected NAME[(param=value,...)][@cutoff], "
            f"e.g. AP, P@10, P(rel=2)@10, F(beta=0.5)@10{_did_you_mean(text) if hint else ''}"
        )
        raise MeasureError(msg)
    key = _ALIASES.get(m["name"].lower())
    peer = _PEER_NAMES.get(m["name"].lower())
    if key is None and peer is not None:
        msg = (
            f"unknown measure {m['name']!r} in {text!r}: {peer} (docs/measures.md, "
            "Translation tables; the input's shape and the tie rule matter too)"
        )
        raise MeasureError(msg)
    if key is None:
        meant = _did_you_mean(text).lstrip(";") if hint else ""
        msg = f"unknown measure {m['name']!r} in {text!r};{meant} known: {', '.join(CATALOGUE)}"
        raise MeasureError(msg)
    definition = CATALOGUE[key]
    preset = _PRESETS.get(m["name"].lower(), ())
    try:
        spec = Spec(
            definition,
            _cutoff(definition, m["cutoff"], text),
            _params(definition, m["params"], text, preset),
        )
    except MeasureError as exc:
        other = IR_MEASURES_NAMES.get(m["name"])
        if other is None:
            raise
        msg = (
            f"{exc}; ir_measures' {m['name']} is preval's {other} (or read names as "
            "ir_measures does: preval evaluate --ir-measures, or ir_measures objects in Python)"
        )
        raise MeasureError(msg) from exc
    ideal_keys(spec)  # raises now, not in the plan, when gains= and dcg= are both given
    return spec


def _several(raw: str) -> list[str]:
    """The requests of `raw` split at commas and spaces outside brackets (``AP P@10``,
    ``AP,P@10``) when there are several and every one parses, else []."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(raw + " "):
        depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(ch, 0)
        if depth == 0 and (ch == "," or ch.isspace()):
            pieces.append(raw[start:i])
            start = i + 1
    pieces = [p for p in pieces if p]
    if len(pieces) < 2:
        return []
    found = [_parsed([p]) for p in pieces]
    return [f[0] for f in found] if all(found) else []


# ranx's relevance-level suffix: precision@10-l2, map-l2, ndcg@10-l2
_RANX_LEVEL = re.compile(
    r"^(?P<name>[A-Za-z][A-Za-z0-9_\-]*?)(?:@(?P<cutoff>[0-9]+))?-l(?P<level>[0-9]+)$"
)


def _ranx_level_message(text: str, m: re.Match[str]) -> str:
    """The error for ranx's ``-lN`` suffix, with the preval request that gives ranx's number.

    The suffix is not read as an alias: a guess at the name without it (``map-l2``: 'AP@2')
    would give another number silently. ranx counts a document relevant at level N when its
    label is >= N, which is ``rel=N``; its nDCG and DCG at level N drop the gains of the lower
    grades (``gains={1:0,...,N-1:0}``; checked against ranx 0.3.21, tests/test_measures_peers).
    """
    name, level = m["name"], int(m["level"])
    measure = CATALOGUE[_ALIASES[name.lower()]].name
    cutoff = f"@{m['cutoff']}" if m["cutoff"] else ""
    head = f"{text!r} ends with ranx's relevance-level suffix -l{level}, which preval does not read"
    if measure in ("nDCG", "DCG"):
        zeros = ",".join(f"{g}:0" for g in range(1, level))
        found = _parsed([f"{name}(gains={{{zeros}}}){cutoff}" if zeros else f"{name}{cutoff}"])
        meaning = f"grades below {level} gain 0, as in ranx"
    else:
        found = _parsed([f"{name}(rel={level}){cutoff}"])
        meaning = f"a label >= {level} is relevant, as in ranx"
    if found:
        return f"{head}; write {found[0]!r} ({meaning})"
    return f"{head}; preval has no spelling of {name} at a relevance level"


# scikit-learn's and torchmetrics' metric names, which are not aliases: their numbers need a
# tie rule or a shape of the input besides the name (docs/measures.md, Translation tables), so
# a request by one is refused with its translation rather than answered by a look-alike
_SK_TIES = "with ties='threshold'"
_PEER_NAMES = {
    **dict.fromkeys(("top_k_accuracy", "top_k_accuracy_score"), (
        "scikit-learn's top_k_accuracy_score(k=k) is Success@k, one query per sample and one "
        "doc per class")),
    **dict.fromkeys(("roc_auc", "roc_auc_score"), (
        f"scikit-learn's roc_auc_score is AUC-ROC {_SK_TIES}")),
    **dict.fromkeys(("average_precision", "average_precision_score"), (
        f"scikit-learn's average_precision_score is AP {_SK_TIES}")),
    "label_ranking_average_precision_score": (
        f"scikit-learn's label_ranking_average_precision_score is AP {_SK_TIES}, one query "
        "per row"),
    "ndcg_score": "scikit-learn's ndcg_score(k=k) is nDCG@k with ties='expected'",
    "dcg_score": "scikit-learn's dcg_score(k=k, log_base=b) is DCG(base=b)@k with ties='expected'",
    "retrievalmap": (
        "torchmetrics' RetrievalMAP(top_k=k) is AP(norm=hits)@k (without top_k: AP(norm=hits))"),
    "retrievalmrr": "torchmetrics' RetrievalMRR(top_k=k) is RR@k",
    "retrievalnormalizeddcg": (
        "torchmetrics' RetrievalNormalizedDCG(top_k=k) is nDCG@k with ties='expected'"),
    "retrievalprecision": (
        "torchmetrics' RetrievalPrecision(top_k=k) is P@k (adaptive_k=True: P(norm=min)@k; "
        "without top_k: SetP)"),
    "retrievalrecall": "torchmetrics' RetrievalRecall(top_k=k) is R@k (without top_k: SetR)",
    "retrievalhitrate": "torchmetrics' RetrievalHitRate(top_k=k) is Success@k",
    "retrievalfallout": "torchmetrics' RetrievalFallOut(top_k=k) is FallOut@k",
    "retrievalauroc": f"torchmetrics' RetrievalAUROC is AUC-ROC {_SK_TIES}",
    "retrievalrprecision": "torchmetrics' RetrievalRPrecision is Rprec",
    # Spark ML's RankingEvaluator metric names: their k is a separate parameter (default 10)
    "precisionatk": "Spark ML's RankingEvaluator precisionAtK with k is precisionAt(k), P@k",
    "recallatk": "Spark ML's RankingEvaluator recallAtK with k is recallAt(k), R@k",
    "ndcgatk": (
        "Spark ML's RankingEvaluator ndcgAtK with k is ndcgAt(k), nDCG(dcg=exp-log2)@k"),
    "meanaverageprecisionatk": (
        "Spark ML's RankingEvaluator meanAveragePrecisionAtK with k is "
        "meanAveragePrecisionAt(k), AP(norm=min)@k"),
    # recommender papers' hit ratio: 1 when a held-out item is in the top k (He et al. 2017,
    # NCF, one held-out item per user), but some divide the hits by the held-out items
    **dict.fromkeys(("hr", "hit_ratio", "hitratio"), (
        "a recommender's HR@k (hit ratio) is Success@k, 1 when a relevant item is in the top "
        "k (NCF's HR with one held-out item; RecBole's hit); hits divided by the held-out "
        "items is R@k")),
}  # fmt: skip


# the cutoff fused into the name: nDCG10, P10, map_cut10, Ndcg_10, nDCG(rel=2)10, IPrec0.5
_FUSED = re.compile(r"(?P<head>.*?[^0-9._@])[._]?(?P<cutoff>[0-9]+(?:\.[0-9]+)?)")


def suggest(text: str, n: int = 3) -> list[str]:
    """The canonical spellings of up to `n` requests close to `text` that parse, closest first.

    A cutoff written without its ``@`` (``nDCG10``, ``P10``, ``map_cut10``: the commonest
    slip) gives the one request meant. Otherwise the names and aliases closest to the name
    (difflib, case ignored), tried without the digits it ends with (as a cutoff) and as
    written, with the request's parameters and cutoff; when none of those parses, the closest
    measures' names.
    """
    import difflib  # (an unknown name's hint: loaded for one only)

    raw = text.strip()
    fused = _FUSED.fullmatch(raw)
    if fused:
        head, cutoff = fused["head"], fused["cutoff"]
        found = _parsed([f"{head}@{cutoff}", f"{head}_{cutoff}"])
        if found:
            return found[:n]
    m = _GRAMMAR.match(raw)
    if m is None:
        return []
    name, rest = m["name"], raw[m.end("name") :]
    bases = [(name, rest)]
    digits = re.fullmatch(r"(?P<base>.*?[^0-9._])[._]?(?P<cutoff>[0-9]+)", name)
    if digits and m["cutoff"] is None:
        bases.insert(0, (digits["base"], f"{rest}@{digits['cutoff']}"))
    aliases = list(_ALIASES)
    names: list[str] = []
    for base, tail in bases:
        word = base.lower()
        if word in _ALIASES:  # Rprec10, NumRet10: that measure, which takes no cutoff
            return [CATALOGUE[_ALIASES[word]].name]
        close = difflib.get_close_matches(word, aliases, n=10, cutoff=0.6)
        # a name that the request begins (prec: precision) or extends (mapp: map) first
        close.sort(key=lambda alias: not (alias.startswith(word) or word.startswith(alias)))
        found = _parsed(alias + tail for alias in close)
        if found:
            return found[:n]
        names.extend(CATALOGUE[_ALIASES[alias]].name for alias in close)
    # the request is wrong in another way too (a cutoff the measure does not take ...)
    return list(dict.fromkeys(names))[:n]


def _parsed(requests: Iterable[str]) -> list[str]:
    """The canonical names of the `requests` that parse, each once, in order."""
    out: dict[str, None] = {}
    for request in requests:
        try:
            out[parse(request, hint=False).name] = None
        except MeasureError:
            continue
    return list(out)


def _did_you_mean(text: str) -> str:
    """``; did you mean 'nDCG@10'?`` (or nothing), to end an error message about `text`."""
    close = [repr(s) for s in suggest(text)]
    if not close:
        return ""
    listed = close[0] if len(close) == 1 else f"{', '.join(close[:-1])} or {close[-1]}"
    return f"; did you mean {listed}?"


def ideal_keys(spec: Spec) -> list[Any]:
    """The per-query ideal DCGs (`ranking.ideal_key`) that `spec` reads: a plan whose
    judgments come in columns (separate qrels) computes each with
    ``Ranking.ideal_dcg_of_rows(key)`` into the column ``ranking.ideal_column(key)``."""
    ideals = spec.definition.ideals
    # diversity measures read greedy ideals of their own stage (`diversity.requests`)
    return [] if ideals is None or spec.definition.diversity else ideals(spec)


def _cutoff(definition: Definition, raw: str | None, text: str) -> int | None:
    if raw is None:
        if definition.cutoff == "required":
            msg = f"{definition.name} needs a cutoff in {text!r}: write e.g. {definition.name}@10"
            raise MeasureError(msg)
        return None
    if definition.cutoff == "none":
        msg = f"{definition.name} takes no cutoff: {text!r} (write {definition.name})"
        raise MeasureError(msg)
    if definition.fraction:
        if not re.fullmatch(r"[0-9]+(\.[0-9]*)?|\.[0-9]+", raw) or float(raw) > 1:
            msg = f"the cutoff in {text!r} must be a recall level from 0 to 1, got {raw!r}"
            raise MeasureError(msg)
        return float(raw)
    if not re.fullmatch(r"[0-9]+", raw) or int(raw) < 1:
        msg = f"the cutoff in {text!r} must be a whole number >= 1, got {raw!r}"
        raise MeasureError(msg)
    return int(raw)


def _params(
    definition: Definition, params: str | None, text: str, preset: tuple[tuple[str, str], ...] = ()
) -> tuple[tuple[str, Any], ...]:
    given: dict[str, Any] = {}
    items = [f"{k}={v}" for k, v in preset]
    for item in [*items, *filter(None, (p.strip() for p in _split(params or "")))]:
        key, sep, raw = (part.strip() for part in item.partition("="))
        if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "'\"":  # ir_measures: dcg='exp-log2'
            raw = raw[1:-1]
        allowed = ", ".join(definition.params) or "none"
        if key == "judged_only" and key not in definition.params:
            # ir_measures' judged_only=True is trec_eval's -J, an option of the whole call here
            msg = (
                f"bad parameter {item!r} in {text!r}: judged_only is an option of the whole "
                "evaluation in preval, not of one measure: judged_only=True (--judged-only, "
                "-J), as trec_eval -J"
            )
            raise MeasureError(msg)
        if not sep or key not in definition.params:
            msg = f"bad parameter {item!r} in {text!r}: {definition.name} takes ({allowed})"
            raise MeasureError(msg)
        param = definition.params[key]
        try:
            value = param.parse(raw)
        except ValueError as exc:
            msg = f"bad value for {key} in {text!r}: {exc}"
            raise MeasureError(msg) from None
        if param.choices and value not in param.choices:
            msg = f"bad value for {key} in {text!r}: expected one of {', '.join(param.choices)}"
            raise MeasureError(msg)
        if key in given:
            msg = f"parameter {key} given twice in {text!r}"
            raise MeasureError(msg)
        given[key] = value
    # Defaults are dropped so that spellings of the same measure share one column name.
    return tuple((k, v) for k, v in given.items() if v != definition.params[k].default)


def _split(params: str) -> list[str]:
    """Split ``a=1,gains={1:3,2:9}`` at the commas outside braces."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(params):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(params[start:i])
            start = i + 1
    return [*items, params[start:]]


# ir_measures names whose meaning differs from preval's measure of that name
IR_MEASURES_NAMES = {"Accuracy": "PairAccuracy"}


def from_ir_measures(request: object) -> str:
    """A request in the ir_measures grammar (a string, or an ir_measures measure object such
    as ``ir_measures.Accuracy@5``) as the preval request that gives ir_measures' number.

    The grammar is the same; the names of `IR_MEASURES_NAMES` mean another measure in
    ir_measures than in preval (``Accuracy`` is pairwise accuracy there, `PairAccuracy` here).
    """
    text = str(request).strip()
    m = _GRAMMAR.match(text)
    if m and m["name"] in IR_MEASURES_NAMES:
        text = IR_MEASURES_NAMES[m["name"]] + text[m.end("name") :]
    return text


def _is_ir_measures(item: object) -> bool:
    """Whether `item` is an ir_measures measure object (checked without importing it)."""
    return type(item).__module__.startswith("ir_measures") and hasattr(item, "NAME")


def parse_all(measures: str | Iterable[str]) -> list[Spec]:
    """Parse requests, keeping the first of any that share a canonical name. ir_measures
    measure objects (``ir_measures.nDCG@10``) are read as ir_measures means them
    (`from_ir_measures`)."""
    single = isinstance(measures, str) or not isinstance(measures, Iterable)
    items = [measures] if single else list(measures)
    items = [from_ir_measures(item) if _is_ir_measures(item) else item for item in items]
    for item in items:
        if not isinstance(item, str):
            msg = f"a measure request must be a string such as 'AP' or 'P@10', got {item!r}"
            raise MeasureError(msg)
    if not items:
        msg = "no measures requested: name at least one, e.g. AP or P@10"
        raise MeasureError(msg)
    specs: dict[str, Spec] = {}
    for item in items:
        spec = parse(item)
        specs.setdefault(spec.name, spec)
    return list(specs.values())
