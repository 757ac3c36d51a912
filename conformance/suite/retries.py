"""Named retries: a step says ``retry: coordinator`` instead of writing out the codes and the time of the retry
nearly every transaction and group step needs. The loader replaces the name by its retry before the step is
checked (:func:`conformance.suite.checks.check_steps`); a retry written out in full (``{on: [...], for_ms: N}``)
stays for anything else.
"""

from __future__ import annotations

from collections.abc import Mapping

# A coordinator that is not ready yet (its partition loading, its internal topic just created) or has moved: a
# protocol-legal first answer on the way to the one a case checks, which a client asks again after.
COORDINATOR_NOT_READY = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR")

NAMED: Mapping[str, Mapping] = {
    # the coordinator's partition may still be loading at the start of a case (20 s: a fresh broker creates its
    # internal topic first)
    "coordinator": {"on": list(COORDINATOR_NOT_READY), "for_ms": 20_000},
    # the same, and a previous transaction of the id still completing (CONCURRENT_TRANSACTIONS until its
    # markers are written)
    "coordinator-or-concurrent": {"on": ["CONCURRENT_TRANSACTIONS", *COORDINATOR_NOT_READY], "for_ms": 20_000},
}


def named(name: str) -> dict | None:
    """The retry ``name`` stands for (a fresh copy), or None for a name no retry has."""
    found = NAMED.get(name)
    return None if found is None else {key: list(value) if isinstance(value, list) else value
                                       for key, value in found.items()}
