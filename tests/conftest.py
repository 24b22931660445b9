"""Hypothesis profiles: ``fast`` for a contributor's run, ``thorough`` where ``CI`` is set.

Property tests state their example counts for the thorough profile, through `examples`; the
fast profile runs a fifth of them (at least 10), so that ``pytest`` on a laptop takes about a
minute and CI still searches as widely as before. Choose one by hand with
``pytest --hypothesis-profile=thorough`` (or ``fast``).
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("fast", deadline=None)
settings.register_profile("thorough", deadline=None)
settings.load_profile("thorough" if os.environ.get("CI") else "fast")
