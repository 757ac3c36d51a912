"""The release matrix's summary: per Apache Kafka release, its outcomes and what departed, each departure
named by the known-bugs ledger where it is a known bug (:mod:`conformance.ledger`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..results import OUTCOME_ORDER, case_id
from ..results.record import Outcome, ResultRecord
from .itemref import known_bug

# What a release's row lists case by case ("differs" is information only).
DEPARTING = (Outcome.FAILED.value, Outcome.ERROR.value)


@dataclass
class ReleaseRow:
    target: str  # kafka:3.5.2, proxy+kafka:3.9.2
    counts: Counter = field(default_factory=Counter)
    departures: dict[str, dict] = field(default_factory=dict)  # suite::case -> {outcome, versions, bug}
    unavailable: str | None = None  # why the release did not run, one line

    @property
    def unexplained(self) -> list[str]:
        """Departing cases no ledger entry explains."""
        return [case for case, found in self.departures.items() if not found["bug"]]


def rows(records: list[ResultRecord], targets: list[str], unavailable: dict[str, str] | None = None) -> list[ReleaseRow]:
    """One row per target spec (``kafka:RELEASE``, ``proxy+kafka:RELEASE``), from its records."""
    by_target = {target: ReleaseRow(target) for target in targets}
    for target, why in (unavailable or {}).items():
        by_target.setdefault(target, ReleaseRow(target)).unavailable = why
    for record in records:
        row = by_target.get(str(record.target or ""))
        if row is None:
            continue
        outcome = record.outcome or "?"
        row.counts[outcome] += 1
        if outcome in DEPARTING:
            case = case_id(record.suite, record.case)
            found = row.departures.setdefault(case, {"outcome": outcome, "versions": [], "bug": None,
                                                     "message": record.message or ""})
            found["versions"].append(record.api_version)
            found["bug"] = found["bug"] or known_bug(record)
    return list(by_target.values())


def render(table: list[ReleaseRow]) -> str:
    """The matrix as text: a line per release, then one per departing case with the bug behind it."""
    lines = []
    for row in table:
        if row.unavailable:
            lines.append(f"{row.target}  did not run: {row.unavailable}")
            continue
        counts = ", ".join(f"{row.counts[outcome]} {outcome}" for outcome in OUTCOME_ORDER if row.counts[outcome])
        lines.append(f"{row.target}  {counts or 'no items'}")
        for case, found in sorted(row.departures.items()):
            why = found["bug"] or "no known bug: a finding"
            versions = ",".join(f"v{version}" for version in found["versions"] if version is not None)
            lines.append(f"    {found['outcome']:<6} {case} {versions}  [{why}]")
    return "\n".join(lines)
