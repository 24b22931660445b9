"""The evaluation plan (internal): what the engines execute. `build_plan` builds it from a source,
measure names and `Options`; `build` rebuilds it for each piece of the input an engine reads.

    source ──io──> canonical rows ──validate──> judged rows ──ranking──> ranked frame
           ──aggregate (one group_by)──> per-query status ──Plan.per_query / audit──> tables
"""

from .plan import Plan, Recipe, build, build_plan

__all__ = ["Plan", "Recipe", "build", "build_plan"]
