"""The end of ``conformance run``'s console: one compact entry per departing case, read from the results.

A case that departs at twelve versions is one entry, not twelve transcripts: its versions folded
(``v0-5, v7``), its citation, the step, what was expected and what was observed at the first
departing version, and the command that reruns that item. Failed, blocked and error items are
listed apart. The full record and its exchanges are in the results file, Allure and
``conformance show ITEM``.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ... import ledger
from ...results.record import Outcome, ResultRecord, StepRole
from ..itemref import case_id, known_bug, label, reproduce
from ..root_causes import RootCause, noted, others, root_causes

# The outcomes listed, in this order, and what their section says about them.
SECTIONS = (
    (Outcome.FAILED.value, "FAILED", "the API under test departs"),
    (Outcome.BLOCKED.value, "BLOCKED", "no verdict: a step on another API departed"),
    (Outcome.ERROR.value, "ERROR", "no verdict: harness, infrastructure or target failed"),
)
VALUE_CHARS = 240  # expected / observed / message beyond this are cut: `conformance show` has them whole
NOT_RUN = "not run: "


@dataclass
class Entry:
    outcome: str
    records: list[ResultRecord]  # one case's items of one target with this outcome, by version

    @property
    def first(self) -> ResultRecord:
        return self.records[0]

    def lines(self) -> list[str]:
        first = self.first
        versions = fold_versions(record.api_version for record in self.records)
        where = f"{first.target}{' ' + versions if versions else ''}"
        items = f", {len(self.records)} items" if len(self.records) > 1 else ""
        lines = [f"{self.outcome.upper()} {case_id(first)}  [{where}; {first.requirement or '?'}{items}]"]
        if first.cites:
            lines.append(_field("cites", first.cites))
        bug = known_bug(first)
        if bug:  # a departure of an Apache Kafka release that the known-bugs ledger explains
            lines.append(_field("known bug", f"{bug} ({ledger.jira_link(bug)})"))
        # What follows is the first departing version's: the others may differ (conformance show has each).
        at = "" if first.api_version is None else f"at v{first.api_version}: "
        if first.step_label:
            detail = [part for part in (first.step_role if first.step_role != StepRole.UNDER_TEST else None,
                                        first.step_api) if part]
            step = str(first.step_label)
            if first.step is not None and not step.startswith(str(first.step)):
                step = f"{first.step} {step}"  # runners' labels begin with the step's number already
            lines.append(_field(at.rstrip(": ") or "step", f"step {step}" + (f" ({', '.join(detail)})" if detail else "")))
            at = ""
        if first.expected is not None or first.actual is not None:
            lines.append(_field("expected", at + _one_line(first.expected)))
            lines.append(_field("observed", _one_line(first.actual)))
        else:
            lines.append(_field("message", at + _message(first)))
        lines.append(_field("reproduce", reproduce(first)))
        return lines


@dataclass
class CauseEntry:
    """The items one root cause decided, of every case it touches: one entry."""

    cause: RootCause

    @property
    def first(self) -> ResultRecord:
        return self.cause.first

    def lines(self) -> list[str]:
        cause = self.cause
        shown = ", ".join(f"{case} {fold_versions(row.api_version for row in cause.records if case_id(row) == case)}"
                          .rstrip() for case in cause.cases)
        return [f"ROOT CAUSE {cause.title}  [{cause.target}; {cause.outcomes}]",
                _field("cause", _cut(cause.cause)),
                _field("cases", _cut(shown)),
                _field("reproduce", reproduce(cause.first))]


@dataclass
class Section:
    outcome: str
    title: str
    entries: list = field(default_factory=list)  # Entry, or CauseEntry in the root causes' section
    not_run: list[str] = field(default_factory=list)  # one line per target and reason: items a stop left unrun

    def lines(self) -> list[str]:
        return [line for entry in self.entries for line in entry.lines()] + self.not_run


def fold_versions(versions) -> str:
    """``[0, 1, 2, 3, 4, 5, 7]`` → ``v0-5, v7``; None (a case about no single API) is left out."""
    numbers = sorted({version for version in versions if isinstance(version, int)})
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(f"v{low}" if low == high else f"v{low}-{high}" for low, high in runs)


def sections(records: list[ResultRecord]) -> list[Section]:
    """The root causes first (one entry for the items each decided, whatever their case), then the failed,
    blocked and error sections of the other items that have entries, cases in the order they first departed."""
    found = []
    causes = root_causes(records)
    if causes:
        items = sum(len(cause.records) for cause in causes)
        found.append(Section("root_cause", f"ROOT CAUSES: {len(causes)} fault{'' if len(causes) == 1 else 's'} of one "
                                           f"API version each, {items} item{'' if items == 1 else 's'} (each fault is "
                                           "one finding: the items it failed or blocked are listed under it)",
                             [CauseEntry(cause) for cause in causes]))
    notes = noted(records)
    if notes:
        found.append(Section("noted", f"NOTED: {len(notes)} API version{'' if len(notes) == 1 else 's'} that set-up or "
                                      "check steps went around (findings on those versions, not the items' verdicts)",
                             not_run=[f"NOTED {note.title} [{note.target}]: {_cut(note.example)}" for note in notes]))
    records = others(records)
    for outcome, heading, meaning in SECTIONS:
        groups: dict[tuple, list[ResultRecord]] = {}
        not_run: dict[tuple, list[ResultRecord]] = {}
        for record in records:
            if record.outcome != outcome:
                continue
            message = str(record.message or "")
            if outcome == Outcome.ERROR and message.startswith(NOT_RUN):  # a target that is down: one line, not N cases
                not_run.setdefault((record.target, message.splitlines()[0]), []).append(record)
                continue
            groups.setdefault((record.target, record.suite, record.case), []).append(record)
        if not groups and not not_run:
            continue
        entries = [Entry(outcome, sorted(rows, key=_version_order)) for rows in groups.values()]
        items = sum(len(rows) for rows in groups.values()) + sum(len(rows) for rows in not_run.values())
        title = (f"{heading}: {len(entries)} case{'' if len(entries) == 1 else 's'}, {items} "
                 f"item{'' if items == 1 else 's'} ({meaning})")
        lines = [f"ERROR {len(rows)} item{'' if len(rows) == 1 else 's'} of "
                 f"{len({case_id(row) for row in rows})} cases on {target}: {_cut(reason)}"
                 for (target, reason), rows in not_run.items()]
        found.append(Section(outcome, title, entries, lines))
    return found


def show_hint(records: list[ResultRecord], results_path: str | Path, *, default_results: str = "") -> str:
    """The line that says where each item's whole record is, with a command for the first entry."""
    example = next((section.entries[0].first for section in sections(records) if section.entries), None)
    shown = _relative(str(results_path))
    option = "" if shown == default_results else f" --results {shlex.quote(shown)}"
    command = f"conformance show {shlex.quote(label(example)) if example else 'ITEM'}{option}"
    return (f"each item's full record and exchanges: {command} (the id its reproduce line "
            "names; also in the results file and Allure)")


def render(records: list[ResultRecord]) -> str:
    """The sections as plain text (a title line, then the entries)."""
    lines = []
    for section in sections(records):
        lines += [f"--- {section.title}", *section.lines()]
    return "\n".join(lines) + ("\n" if lines else "")


def _version_order(record: ResultRecord) -> tuple:
    version = record.api_version
    return (0, version) if isinstance(version, int) else (-1, 0)


def _field(name: str, value: str) -> str:
    return f"    {name + ':':<10} {value}"


def _message(record: ResultRecord) -> str:
    """The message's first line; when it announces what follows (``the runner raised:``), its last line too."""
    lines = [line.strip() for line in str(record.message or "").splitlines() if line.strip()]
    if not lines:
        return str(record.outcome)
    return _cut(lines[0] + (f" {lines[-1]}" if lines[0].endswith(":") and len(lines) > 1 else ""))


def _one_line(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "), default=str)
    return _cut(" ".join(text.split()))


def _cut(text: str) -> str:
    text = str(text).splitlines()[0] if str(text).strip() else str(text)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + f"… ({len(text)} chars)"


def _relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path
