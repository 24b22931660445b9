"""The measure catalogue: each measure is defined once, as a Polars aggregation expression.

A measure request follows the ir_measures grammar ``NAME[(param=value,...)][@cutoff]``
(``AP``, ``P@10``, ``P(rel=2)@10``, ``AP(norm=min)@10``, ``F(beta=0.5)@10``); trec_eval names
(``map``, ``P_10``, ``P.10``, ``ndcg_cut_10`` ...) are accepted as aliases. Requests are parsed
into a `Spec`, whose `name` is the canonical spelling used for output columns.

Adding a measure: write a function ``(r: Ranking, s: Spec) -> pl.Expr`` with a numpy docstring
(formula, trec_eval name, edge cases), register it with `@measure`, add it to
``tests/reference.py`` and give it a golden row in the tests. A user's measure is registered
by `preval.define_measure` (`preval.custom`, docs/custom-measures.md) through the same
`registry.register`, which refuses a name or alias that another measure holds.

The package: `registry` (parameters, `Definition`, `Spec`, the `measure` decorator and
`CATALOGUE`, in the order `registry.ORDER`), `grammar` (`parse`, `parse_all`, `build`),
`catalogue` (the README's table), then one module per family of measures, each importing
`registry` only: `precision_recall`, `ap`, `gain`, `user_models`, `curve_measures`, `counts`,
`pairs`, and `diversity` (the intent-aware measures and the plan's stage that evaluates them).
Importing the package imports every family, so the catalogue is complete.
"""

from __future__ import annotations

# --------------------------------------------------------------------------------------------
# The measures. Notation: ranks k = 1..n over retrieved documents, R = relevant documents of
# the query (retrieved or not) at the measure's level, tp(k) = relevant documents in ranks
# 1..k, tp(k) = tp(n) for k > n, K = the cutoff.
# --------------------------------------------------------------------------------------------
from .ap import (
    average_precision,
    bpref,
    geometric_bpref,
    geometric_map,
    inferred_ap,
    judged,
    reciprocal_rank,
    unjudged,
)
from .catalogue import catalogue_rows, markdown_table
from .counts import num_nonrel_judged_ret, num_q, num_rel, num_rel_ret, num_ret, tie_at_cutoff
from .curve_measures import auc_pr, auc_roc, eleven_point, interpolated_precision, max_f
from .diversity import (
    NDEVAL_ALPHA,
    NDEVAL_BETA,
    NOVELTY,
    PATIENCE,
    SUB,
    Intents,
    alpha_dcg,
    alpha_ndcg,
    ap_ia,
    attach,
    err_ia,
    ideal_ideal,
    nerr_ia,
    nrbp,
    precision_ia,
    require_subtopic,
    subtopic_recall,
    table,
)
from .gain import (
    DCG_FORM,
    GAINS,
    Gains,
    binary_g,
    dcg,
    ndcg,
    ndcg_rel,
    normalized_g,
    r_ndcg,
    scaled_dcg,
)
from .grammar import (
    EXPECTED_FORMS,
    IR_MEASURES_NAMES,
    build,
    from_ir_measures,
    ideal_keys,
    measure_columns,
    parse,
    parse_all,
    suggest,
)
from .pairs import compat, pair_accuracy
from .precision_recall import (
    accuracy,
    f_measure,
    hits,
    precision,
    r_precision,
    recall,
    set_ap,
    set_f,
    set_precision,
    set_recall,
    set_relative_precision,
    specificity,
    success,
    utility,
)
from .registry import (
    ALPHA,
    BETA,
    CATALOGUE,
    GMAP_FLOOR,
    INTERPOLATE,
    REL,
    THRESHOLD,
    Definition,
    Param,
    Spec,
    Summary,
    forget,
    measure,
    order_catalogue,
    reads_judged_rows,
    register,
)
from .user_models import (
    CWL_DEPTH,
    CWL_PARAMS,
    PERSISTENCE,
    bpm,
    expected_reciprocal_rank,
    insq,
    inst,
    nerr8,
    nerr9,
    nerr10,
    nerr11,
    rank_biased_precision,
    rbp_residual,
)

order_catalogue()

__all__ = [
    "ALPHA", "BETA", "CATALOGUE", "CWL_DEPTH", "CWL_PARAMS", "DCG_FORM", "EXPECTED_FORMS",
    "GAINS", "GMAP_FLOOR", "INTERPOLATE", "IR_MEASURES_NAMES", "NDEVAL_ALPHA", "NDEVAL_BETA",
    "NOVELTY", "PATIENCE", "PERSISTENCE", "REL", "SUB", "THRESHOLD", "Definition", "Gains",
    "Intents", "Param", "Spec", "Summary", "accuracy", "alpha_dcg", "alpha_ndcg", "ap_ia", "attach",
    "auc_pr", "auc_roc", "average_precision", "binary_g", "bpm", "bpref", "build",
    "catalogue_rows", "compat", "dcg", "eleven_point", "err_ia", "expected_reciprocal_rank",
    "f_measure", "forget", "from_ir_measures", "geometric_bpref", "geometric_map", "hits",
    "ideal_ideal", "ideal_keys", "inferred_ap", "insq", "inst", "interpolated_precision", "judged",
    "markdown_table", "max_f", "measure", "measure_columns", "ndcg", "ndcg_rel", "nerr8",
    "nerr9", "nerr10", "nerr11", "nerr_ia", "normalized_g", "nrbp", "num_nonrel_judged_ret",
    "num_q", "num_rel",
    "num_rel_ret", "num_ret", "pair_accuracy", "parse", "parse_all", "precision",
    "precision_ia", "r_ndcg", "r_precision", "rank_biased_precision", "rbp_residual",
    "reads_judged_rows", "recall", "reciprocal_rank", "register", "require_subtopic",
    "scaled_dcg",
    "set_ap", "set_f", "set_precision", "set_recall", "set_relative_precision", "specificity",
    "subtopic_recall", "success", "suggest", "table", "tie_at_cutoff", "unjudged", "utility",
]  # fmt: skip
