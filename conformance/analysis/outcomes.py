"""The outcome columns every analysis counts, in the order every report lists them.

Kept apart from :mod:`.layout` (the Spark schemas) so that the interop site's models and pictures, which
work on plain rows, load without PySpark.
"""

from __future__ import annotations

from ..results.record import COUNTED_LEVELS, OUTCOME_ORDER, Outcome

# Every outcome is counted apart; only "passed" is a pass.
OUTCOMES = list(OUTCOME_ORDER)
NO_VERDICT = {outcome.value for outcome in Outcome if not outcome.tested}  # out of every rate's denominator
CONFORMANCE_LEVELS = list(COUNTED_LEVELS)  # IMPLEMENTATION items never count towards a level
