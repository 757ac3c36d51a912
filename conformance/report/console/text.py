"""A case result as plain text for a terminal: what was checked, where it departed, and the wire evidence.

This replaces a Python traceback in pytest's failure report: for a spec deviation the harness's
own call stack says nothing, while the citation, the step and the transcript say everything.
"""

from __future__ import annotations

import pprint

from ...results.ids import case_id, named_target
from ...suite.model import CaseResult
from ...results.record import OUTCOME_LABELS, OUTCOME_ORDER, Outcome

LABEL_WIDTH = 10


def headline(result: CaseResult) -> str:
    """One line: the exception message, pytest's short summary and Allure's status message."""
    if result.outcome is Outcome.DIFFERS:
        return f"differs from Kafka (IMPLEMENTATION, not a conformance requirement): {summary(result)}"
    if result.outcome is Outcome.FAILED:
        if result.requirement.value == "IMPLEMENTATION":  # only a crash fails an IMPLEMENTATION case
            return f"IMPLEMENTATION case failed (not a conformance requirement): {summary(result)}"
        return f"{result.requirement.value} not met: {summary(result)}"
    if result.outcome is Outcome.BLOCKED:
        return f"blocked, no verdict on {result.api or 'the case'}: {summary(result)}"
    if result.outcome is Outcome.ERROR:
        return f"error, no verdict on the target: {summary(result)}"
    return f"{result.outcome.value}: {summary(result)}"


def outcome_counts(counts: dict[str, int]) -> str:
    """``4 passed, 1 differs from Kafka``: the outcomes present, in the canonical order, each apart."""
    shown = [f"{counts[outcome]} {OUTCOME_LABELS[outcome]}" for outcome in OUTCOME_ORDER if counts.get(outcome)]
    shown += [f"{count} {outcome}" for outcome, count in counts.items() if outcome not in OUTCOME_LABELS and count]
    return ", ".join(shown) or "no items"


def summary(result: CaseResult) -> str:
    """Where the case departed and why, on one line."""
    reason = (result.message or (result.failure.message if result.failure else "")).strip()
    reason = reason.splitlines()[0] if reason else result.outcome.value
    failure = result.failure
    if failure is not None and not reason.startswith(failure.step_label):
        reason = f"step {failure.step} ({failure.step_label}): {reason}"
    return reason


def render(result: CaseResult, *, location: str = "", brief: bool = False) -> str:
    """The report of one result; ``location`` is ``path:line`` of the case when known. ``brief`` shows
    only the departing step's exchanges in full (the results file and Allure keep the whole transcript)."""
    version = "" if result.version is None else f" v{result.version}"
    target = named_target(result.target, result.target_version, result.target_name) or (
        result.target + (f" ({result.target_version})" if result.target_version else ""))
    lines = [
        headline(result),
        _field("title", result.title),
        _field("case", case_id(result.suite_id, result.case_id) + (f"  ({location})" if location else "")),
        _field("target", target + (f", {result.api}{version}" if result.api else "")),
        _field("cites", result.cites if result.kip in result.cites else f"{result.kip}: {result.cites}"),
    ]
    if result.failure is not None:
        lines += [
            _field(f"step {result.failure.step}", result.failure.step_label),
            _field("expected", _show(result.failure.expected)),
            _field("actual", _show(result.failure.actual)),
        ]
        if result.failure.message and result.failure.message != result.message:
            lines.append(_field("why", result.failure.message))
    if "\n" in result.message.strip():  # the headline showed only its first line
        lines.append(_field("message", result.message.strip()))
    source = result.transcript_source
    if brief and source is not None and getattr(source, "exchanges", None):
        focus = result.failure.step_label if result.failure is not None else None
        lines += ["", "transcript (the departing step in full; every exchange is in the results file):",
                  source.render(focus=focus or "").rstrip()]
    elif result.rendered_transcript():
        lines += ["", "transcript:", result.rendered_transcript().rstrip()]
    return "\n".join(lines)


def _field(label: str, value: str) -> str:
    indent = " " * (LABEL_WIDTH + 2)
    value = str(value).replace("\n", "\n" + indent)
    return f"{label + ':':<{LABEL_WIDTH}}  {value}"


def _show(value: object) -> str:
    if isinstance(value, str):
        return value
    return pprint.pformat(value, width=100, sort_dicts=False)
