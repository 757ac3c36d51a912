"""What one result is to a CI system: the one map from an outcome and its verdict to a CI state.

Every output that a CI reads (JUnit XML, SARIF for code scanning, a plugin's) asks :func:`ci_result` rather
than comparing outcome strings itself, so the harness's distinctions read the same everywhere:

- failed, binding (MUST, or SHOULD/MAY with --strict): a *failure* of type ``departure``
- blocked, binding: an *error* of type ``blocked`` (a step on another API departed: no verdict)
- error: an *error* of type ``error`` (harness, infrastructure or target down)
- failed or blocked, not binding (SHOULD/MAY without --strict, IMPLEMENTATION): *skipped*, ``not-enforced``
- differs (an IMPLEMENTATION case where the target does not do what Apache Kafka does): *skipped*,
  ``differs-from-kafka``, never a failure, with or without --strict
- unsupported and skipped: *skipped*, typed by the outcome
- passed: *passed*
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..results.record import OUTCOME_LABELS, Outcome, ResultRecord, Verdict


class CiState(enum.StrEnum):
    """The four states every CI format has (JUnit's elements, code scanning's levels)."""

    PASSED = "passed"
    FAILURE = "failure"  # it ran and found a problem
    ERROR = "error"  # it could not run properly
    SKIPPED = "skipped"


@dataclass(frozen=True)
class CiResult:
    """One record as CI sees it: its state, the kind of that state (``type``) and a one-line message."""

    state: CiState
    type: str  # departure, blocked, error, not-enforced, differs-from-kafka, unsupported, skipped or passed
    message: str
    departed: bool  # the target departed on the step under test (failed or differs, binding or not)


def ci_result(record: ResultRecord) -> CiResult:
    """The CI state of one record, from its outcome and the verdict the run stored in it."""
    outcome = record.outcome
    # a line without a verdict (written outside pytest before verdicts were recorded) binds
    binding = (record.verdict or Verdict.FAILED.value) == Verdict.FAILED.value
    message = first_line(record.message) or str(outcome)
    departed = outcome in (Outcome.FAILED.value, Outcome.DIFFERS.value)
    if outcome == Outcome.FAILED.value and binding:
        return CiResult(CiState.FAILURE, "departure", message, departed)
    if outcome == Outcome.BLOCKED.value and binding or outcome == Outcome.ERROR.value:
        return CiResult(CiState.ERROR, outcome, message, departed)
    if outcome == Outcome.DIFFERS.value:
        return CiResult(CiState.SKIPPED, "differs-from-kafka", f"differs from Kafka (IMPLEMENTATION): {message}",
                        departed)
    if outcome in (Outcome.FAILED.value, Outcome.BLOCKED.value):
        return CiResult(CiState.SKIPPED, "not-enforced", f"{record.requirement} not met: {message}", departed)
    if outcome in OUTCOME_LABELS and not Outcome(outcome).tested:
        return CiResult(CiState.SKIPPED, outcome, message, departed)
    return CiResult(CiState.PASSED, "passed", message, departed)


def first_line(text: str | None, limit: int = 500) -> str:
    """The first line of a result's message, cut at ``limit`` characters."""
    return ((text or "").strip().splitlines() or [""])[0][:limit]
