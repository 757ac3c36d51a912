"""The certification page: one self-contained HTML file (inline CSS and SVG; no script, font or image fetched).

This module gathers what the page shows from the certificate, the grades and the results records, as
plain values; the markup is the template ``certification.html.j2`` of :mod:`conformance.pages`, which
escapes every value, and the drawings' geometry is :mod:`.svg`'s.
"""

from __future__ import annotations

import fnmatch
import json
from collections import Counter
from collections.abc import Callable, Hashable

from ... import pages
from ...results.record import (INCOMPLETE_OUTCOMES, OUTCOME_LABELS, OUTCOME_ORDER, REQUIREMENT_ORDER,
                               STOPPED_ANSWERING, Outcome, ResultRecord, StepRole)
from ..console.compact import NOT_RUN
from ..itemref import case_id, known_bug, label, reproduce
from ..root_causes import others, root_causes
from . import svg
from .levels import Grade, first_sentence
from .needs import NEEDS


def render(certificate: dict, grades: list[Grade], records: list[ResultRecord]) -> str:
    """The page of one certification, from its facts, its grades and its items (the last record of each)."""
    identity, found = certificate["identity"], certificate["fingerprint"]
    claims = certificate.get("claims")
    outside = set(claims["not_claimed_items"]) if claims else set()
    claimed = [record for record in records if label(record) not in outside]
    rest = others(records)  # the items a root cause decided are shown under it, once
    claimed_rest = others(claimed)
    return pages.render(
        "certification.html.j2",
        certificate=certificate,
        signer=certificate.get("signer"),
        said=f"{identity.get('target')} {identity.get('target_version') or ''}".strip(),
        identity=[(str(name), str(value)) for name, value in identity.items() if value not in (None, "", {})],
        fingerprint=None if found is None else _fingerprint(found),
        levels=[_level(grade) for grade in grades],
        outcomes=[(outcome, OUTCOME_LABELS[outcome]) for outcome in OUTCOME_ORDER],
        counts=certificate["counts"],
        matrix=svg.matrix(records),
        root_causes=[_root_cause(cause) for cause in root_causes(records)],
        departures=_departures(claimed_rest),
        failed=sum(1 for record in claimed_rest if record.outcome == Outcome.FAILED),
        claims=claims,
        incomplete=[_incomplete(rows) for rows in fold(
            [row for row in rest if row.outcome in INCOMPLETE_OUTCOMES],
            lambda row: (row.outcome, str(row.step_api or ""), str(row.message or "")))],
        skipped=[_skipped(rows) for rows in fold([row for row in records if row.outcome == Outcome.SKIPPED],
                                                  lambda row: first_line(row.message))],
        differs=_folded_items([row for row in rest if row.outcome == Outcome.DIFFERS], by_case=True),
        harness=json.dumps(certificate["harness"]),
        headline=headline(grades),
        crashes=crashes(records),
        lost=lost(records),
    )


def headline(grades: list[Grade]) -> list[tuple[str, str, list[str]]]:
    """The page's first line: the levels by status, reached first (status, its CSS class, the levels' labels)."""
    order = ("reached", "missed", "incomplete", "not claimed", "not run")
    by_status: dict[str, list[str]] = {}
    for grade in grades:
        by_status.setdefault(grade.status, []).append(
            grade.level.name + (f" ({grade.label})" if grade.label != grade.status else ""))
    return [(status, f"status-{status.replace(' ', '-')}", by_status[status])
            for status in sorted(by_status, key=lambda status: order.index(status) if status in order else 9)]


def crashes(records: list[ResultRecord]) -> list[dict]:
    """The items after which the target stopped answering (the runner's words begin the message): a banner."""
    return [{"label": label(row), "message": first_sentence(str(row.message or "")), "reproduce": reproduce(row)}
            for row in records if str(row.message or "").startswith(STOPPED_ANSWERING)]


def lost(records: list[ResultRecord]) -> list[dict]:
    """Why items did not run once the target was down or the run stopped (the plugin's "not run: " lines), each
    reason with how many items it cost: a banner, so a lost target is the first thing read, not row 1,436."""
    return [{"reason": first_line(rows[0].message)[len(NOT_RUN):], "count": len(rows)}
            for rows in fold([row for row in records if row.outcome == Outcome.ERROR
                              and str(row.message or "").startswith(NOT_RUN)], lambda row: first_line(row.message))]


def _fingerprint(found: dict) -> dict:
    finalized = sorted(found.get("finalized_features", {}).items())
    return {
        "source": found.get("source", ""),
        "api_count": len(found.get("apis", [])),
        "features": ", ".join(f"{name}={level}" for name, level in finalized),
        "finalized": [(name, level, str(found.get("supported_features", {}).get(name, "")))
                      for name, level in finalized],
        # The key right-aligned in three places: a column of keys in a monospace font.
        "apis": [{**entry, "api_key": f"{entry['api_key']:>3}"} for entry in found.get("apis", [])],
    }


def _level(grade: Grade) -> dict:
    return {"grade": grade, "level": grade.level, "badge": svg.badge_shape(grade.level.name, grade.label),
            "status_class": f"status-{grade.status.replace(' ', '-')}",
            "waived": [(label(record), entry.reason) for record, entry in grade.waived]}


def _value(value) -> str:
    # keys sorted: the bundle's results lines are (bundle._line), and verify makes this page again from them
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def fold(rows: list[ResultRecord], same: Callable[[ResultRecord], Hashable]) -> list[list[ResultRecord]]:
    """The rows in groups of those ``same`` says are one (a broker that died leaves a thousand items with one
    message: one row with its count, not a thousand), in the order each group first appears."""
    groups: dict[Hashable, list[ResultRecord]] = {}
    for row in rows:
        groups.setdefault(same(row), []).append(row)
    return list(groups.values())


def first_line(message: object) -> str:
    text = str(message or "").strip()
    return text.splitlines()[0] if text else ""


def _items(rows: list[ResultRecord]) -> list[dict]:
    """The items of one row of the page, each with the command that reruns it (shown folded)."""
    return [{"label": label(row), "reproduce": reproduce(row)} for row in rows]


def _folded_items(rows: list[ResultRecord], *, by_case: bool = False) -> list[dict]:
    """The rows of a departures' or differences' table: items with the same step, expectation and observation are
    one row (the same departure at every version of a case reads once), with their count and items."""
    def same(row: ResultRecord) -> Hashable:
        return (case_id(row) if by_case else "", str(row.step_label or ""), _value(row.expected), _value(row.actual))

    return [{"label": label(group[0]) if len(group) == 1 else f"{case_id(group[0])} ({_versions(group)})",
             "step": str(group[0].step_label or ""), "expected": _value(group[0].expected),
             "actual": _value(group[0].actual), "items": _items(group)} for group in fold(rows, same)]


def _versions(rows: list[ResultRecord]) -> str:
    """``v3, v4, v7``: the API versions of a group of one case's items."""
    versions = sorted({row.api_version for row in rows if row.api_version is not None})
    return ", ".join(f"v{version}" for version in versions) or f"{len(rows)} items"


def _departures(records: list[ResultRecord]) -> list[dict]:
    """Failed items grouped by case, each case with its first item's citation and departing step."""
    by_case: dict[str, list[ResultRecord]] = {}
    for record in records:
        if record.outcome == Outcome.FAILED:
            by_case.setdefault(case_id(record), []).append(record)
    cases = []
    for case, rows in by_case.items():
        first = rows[0]
        message = str(first.message or "").splitlines()[0] if first.message else ""
        bug = known_bug(first)  # an Apache Kafka release's departure the known-bugs ledger explains
        cases.append({"case": case, "title": first.title or case, "requirement": str(first.requirement),
                      "api": str(first.api or ""), "kip": str(first.kip),
                      "cites": str(first.cites or ""), "step": str(first.step),
                      "step_role": str(first.step_role or StepRole.UNDER_TEST),
                      "step_api": str(first.step_api or ""), "message": message,
                      "known_bug": bug or "", "count": len(rows),
                      "rows": _folded_items(rows)})
    return cases


def _root_cause(cause) -> dict:
    """One fault of one API version and the items it decided (failed there, or blocked by it)."""
    return {"title": cause.title, "cause": cause.cause, "outcomes": cause.outcomes,
            "count": len(cause.records), "items": _items(cause.records)}


def _incomplete(rows: list[ResultRecord]) -> dict:
    """One row of the items without a verdict: those with the same outcome, departing API and message."""
    first = rows[0]
    return {"outcome": first.outcome, "step_api": str(first.step_api or ""),
            "message": whole_lines(str(first.message or "")), "count": len(rows), "items": _items(rows)}


def _skipped(rows: list[ResultRecord]) -> dict:
    """One reason items were skipped (what the target lacks, or what the run was not asked to do), its items, and
    what would run them where their suites are those a companion or node control gives (:data:`.needs.NEEDS`)."""
    suites = {str(row.suite) for row in rows}
    return {"reason": first_line(rows[0].message) or "no reason recorded", "count": len(rows),
            "needs": [need for pattern, need in NEEDS.items()
                      if all(fnmatch.fnmatchcase(suite, pattern) for suite in suites)
                      and need.split(" (")[0] not in str(rows[0].message)],  # the reason says it already
            "items": _items(rows)}


def whole_lines(text: str, limit: int = 400) -> str:
    """A message's first lines, each whole (a line cut at a width can read as its opposite), as many as fit in
    ``limit`` characters, the first one always; how many lines are left out is said."""
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    for line in lines:
        if kept and size + len(line) > limit:
            break
        kept.append(line)
        size += len(line) + 1
    left = len(lines) - len(kept)
    return "\n".join(kept) + (f"\n({left} more line{'s' if left != 1 else ''} in the results)" if left else "")


def outcome_counts(records: list[ResultRecord]) -> dict:
    """The items counted by outcome, and by outcome within each requirement level (in the order reports list them)."""
    by_outcome = Counter(record.outcome for record in records)
    by_requirement: dict[str, Counter] = {}
    for record in records:
        by_requirement.setdefault(record.requirement or "?", Counter())[record.outcome] += 1
    order = list(REQUIREMENT_ORDER)
    return {"by_outcome": dict(by_outcome),
            "by_requirement": {name: dict(by_requirement[name]) for name in
                               sorted(by_requirement, key=lambda name: order.index(name) if name in order else 9)}}
