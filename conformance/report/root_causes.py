"""Items that share a root cause, as one entry.

One fault of one API version (librdkafka's mock writes its Produce v5 responses without LogStartOffset)
departs wherever that version is sent: it failed 21 items of 6 cases, each reported on its own. The runner
records such a fault as the item's ``root_cause``, in the same words for every item it touches; the console
summary, the findings page and the certification page list those items as one entry ("Produce v5 response:
21 items in 6 cases"), and the rest as before. Shared so that the three say the same.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..results.record import Outcome, ResultRecord
from .itemref import case_id

# The outcomes a root cause explains: the item failed (or differs) there, or is blocked by it.
EXPLAINED = (Outcome.FAILED.value, Outcome.DIFFERS.value, Outcome.BLOCKED.value)
# How a root cause's words begin, before what went wrong: "Produce v5 response does not decode at ..." is about
# the "Produce v5 response"; "JoinGroup v6 is advertised but ..." about "JoinGroup v6".
SUBJECT_ENDS = (" does not decode", " is advertised")


@dataclass
class RootCause:
    """The items of one target whose verdict one fault decided."""

    target: str
    cause: str
    records: list[ResultRecord]

    @property
    def subject(self) -> str:
        """What the fault is of: ``Produce v5 response``."""
        for ending in SUBJECT_ENDS:
            if ending in self.cause:
                return self.cause.split(ending, 1)[0]
        return self.cause

    @property
    def cases(self) -> list[str]:
        """The cases it touches, in the order their items first appear."""
        return list(dict.fromkeys(case_id(record) for record in self.records))

    @property
    def outcomes(self) -> str:
        """``15 failed, 6 blocked``."""
        counts = Counter(record.outcome for record in self.records)
        return ", ".join(f"{counts[outcome]} {outcome}" for outcome in EXPLAINED if counts[outcome])

    @property
    def title(self) -> str:
        """``Produce v5 response: 21 items in 6 cases``."""
        items, cases = len(self.records), len(self.cases)
        return (f"{self.subject}: {items} item{'' if items == 1 else 's'} in {cases} "
                f"case{'' if cases == 1 else 's'}")

    @property
    def first(self) -> ResultRecord:
        return self.records[0]


def has_root_cause(record: ResultRecord) -> bool:
    """Whether a root cause decided the item's verdict (it failed, differs or is blocked there)."""
    return bool(record.root_cause) and record.outcome in EXPLAINED


def root_causes(records: list[ResultRecord]) -> list[RootCause]:
    """The root causes of ``records`` by target, in the order they first appear."""
    grouped: dict[tuple[str, str], list[ResultRecord]] = {}
    for record in records:
        if has_root_cause(record):
            grouped.setdefault((str(record.target), str(record.root_cause)), []).append(record)
    return [RootCause(target, cause, rows) for (target, cause), rows in grouped.items()]


def others(records: list[ResultRecord]) -> list[ResultRecord]:
    """The records no root cause explains: reported one case at a time, as before."""
    return [record for record in records if not has_root_cause(record)]


# ------------------------------------------------------------------------------ findings noted on the way
# A set-up or check request that one version of its API does not serve goes on at another version (the runner's
# observe.py) and leaves one line in the item's message, whatever the item's verdict: "finding on Fetch v13 (not
# this item's verdict): ...; the step went on at Fetch v12". Passing items' messages are never shown, so these
# are gathered here: one entry per target and API version, however many items met it.
NOTE_PREFIX = "finding on "
NOTE_SUBJECT_END = " (not this item's verdict)"


@dataclass
class Noted:
    """One API version that set-up or check steps of several items found broken, and went around."""

    target: str
    subject: str  # "Fetch v13"
    example: str  # the first item's line, after the subject
    records: list[ResultRecord]

    @property
    def cases(self) -> list[str]:
        return list(dict.fromkeys(case_id(record) for record in self.records))

    @property
    def title(self) -> str:
        items, cases = len(self.records), len(self.cases)
        return f"{self.subject}: {items} item{'' if items == 1 else 's'} in {cases} case{'' if cases == 1 else 's'}"


def noted(records: list[ResultRecord]) -> list[Noted]:
    """The findings set-up and check steps noted on the way, by target and API version, in order of appearance."""
    grouped: dict[tuple[str, str], Noted] = {}
    for record in records:
        seen = set()
        for line in str(record.message or "").splitlines():
            if not line.startswith(NOTE_PREFIX) or NOTE_SUBJECT_END not in line:
                continue
            subject, rest = line[len(NOTE_PREFIX):].split(NOTE_SUBJECT_END, 1)
            key = (str(record.target), subject)
            if key in seen:
                continue
            seen.add(key)
            found = grouped.setdefault(key, Noted(key[0], subject, rest.lstrip(": "), []))
            found.records.append(record)
    return list(grouped.values())
