"""Example counts of property tests by Hypothesis profile (see conftest.py)."""

from __future__ import annotations

from hypothesis import settings


def examples(thorough: int) -> int:
    """`thorough` examples under the thorough profile, a fifth of them (at least 10) else.

    Read when a test module is imported, which is after pytest loaded the profile."""
    if settings.get_current_profile_name() == "thorough":
        return thorough
    return max(10, thorough // 5)
