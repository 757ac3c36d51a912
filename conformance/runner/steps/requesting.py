"""What a step that sends a request through the exchange (``conformance.runner.exchange``) declares about it: the
request it sends and judges, and the traits the exchange's own keys give it.

The exchange honours the same keys for every kind that sends through it (``malform``, ``{raw_hex: ...}`` in a field,
``expect: {disconnect | no_response | refused}``), so send, produce, fetch and any new such kind declare their
traits from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...suite import tree

# Words (keys, or text values) that make a step rough on the target: a malformed frame, an expected disconnect,
# refusal or silence, raw bytes. The target is checked to still answer after each of the case's items.
ROUGH_WORDS = frozenset({"malform", "disconnect", "no_response", "refused", "raw_hex"})
# Keys that send what a broker may not survive: a malformed frame (an unknown API key or version, an impossible
# size), raw bytes, a request the broker is expected to answer by closing the connection. Their items run after
# every other item of the target, one at a time (runner.parallel), so a crash costs no other verdict.
HAZARD_KEYS = frozenset({"malform", "raw_hex", "disconnect"})


def rough(step: Mapping) -> bool:
    """Whether the step's request treats the target roughly (:data:`ROUGH_WORDS`)."""
    return any(text in ROUGH_WORDS for text in tree.texts(step))


def hazard(step: Mapping) -> bool:
    """Whether the step's request is one a broker may not survive (:data:`HAZARD_KEYS`)."""
    return any(key in HAZARD_KEYS for key, _ in tree.entries(step))


def pinned(step: Mapping, built: object = None):
    """The version a step pins its request to, as written: its request's own (``produce: {version: ...}``), else the
    step's; None where it pins none."""
    own = built.get("version") if isinstance(built, Mapping) else None
    return own if own is not None else step.get("version")
