"""Where evaluators differ: each convention names one consistent set of choices (tie order,
label meaning, -inf scores, curve end points), read by the plan and by the curves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import InputError


@dataclass(frozen=True)
class Convention:
    """One evaluator's choices where evaluators differ (see the README's table)."""

    name: str
    ties: Literal["trec", "input"]
    labels: Literal["level", "sign"]  # label >= level | > 0 positive, < 0 negative, 0 ignored
    inf_retrieved: bool  # are -inf scores ranked? (vlfeat: not unless include_inf)
    pr_start: bool  # a first PR point (recall 0, precision 1)
    pr_end: bool  # a last PR point (recall 1, precision 0)
    skip_origin: bool  # drop PR points where recall and precision are both 0
    roc_end: bool  # a last ROC point (1, 1)
    prune_pr: bool  # interpolated PR keeps the first point of each recall


CONVENTIONS = {
    "trec": Convention("trec", "trec", "level", True, False, False, False, False, False),
    "lingpipe": Convention("lingpipe", "input", "level", True, True, True, True, True, True),
    "vlfeat": Convention("vlfeat", "input", "sign", False, True, False, False, False, False),
}


def get_convention(name: str) -> Convention:
    if name not in CONVENTIONS:
        msg = f"convention must be one of {', '.join(CONVENTIONS)}, got {name!r}"
        raise InputError(msg)
    return CONVENTIONS[name]
