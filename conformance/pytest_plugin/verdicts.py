"""How an item's outcome becomes a pytest verdict word: the one rule the plugin, results and reports share."""

from __future__ import annotations

from ..suite.model import CaseResult
from ..results.record import Outcome, Requirement


def binding(result: CaseResult, *, strict: bool) -> bool:
    """Whether a departure fails the build: MUST always, SHOULD and MAY under strict, IMPLEMENTATION never."""
    if result.requirement is Requirement.IMPLEMENTATION:
        return False
    return strict or result.requirement is Requirement.MUST


def verdict(result: CaseResult, *, strict: bool) -> str:
    """The pytest verdict :func:`conclude` gives, as a word for the results file."""
    if result.outcome is Outcome.DIFFERS:  # information about the target, never a failure
        return "xfailed"
    if result.outcome in (Outcome.FAILED, Outcome.BLOCKED):
        return "failed" if binding(result, strict=strict) else "xfailed"
    return {Outcome.PASSED: "passed", Outcome.UNSUPPORTED: "skipped", Outcome.SKIPPED: "skipped"}.get(
        result.outcome, "error")
