"""``conformance gate``: compare a run with a baseline and fail CI on regressions only.

An item is one target × case × API version. It regressed when it passed in the baseline and now
fails, errors or is blocked; a case the baseline does not have regresses when it does not pass.
Items present on one side only are listed, never silently dropped. IMPLEMENTATION items
(Kafka internals, not conformance) are reported as changes but never fail the gate; one that
``differs`` from Kafka is information about the target, never a regression.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import ledger
from ..results.record import SCHEMA_VERSION, ResultRecord
from ..results.store import new_run_id, read_records
from . import known_failures
from .itemref import key, known_bug, label, latest, reproduce, rerun_argument

NOT_PASSING = ("failed", "error", "blocked")  # "differs" is not among them: it is never a regression


@dataclass
class Change:
    kind: str  # regression, improvement, known, flaky, changed, lost, new, missing
    record: ResultRecord  # the new record (the baseline's for "missing")
    baseline: ResultRecord | None = None
    note: str = ""

    @property
    def transition(self) -> str:
        before = self.baseline.outcome if self.baseline else "absent"
        after = self.record.outcome if self.kind != "missing" else "absent"
        return f"{before} -> {after}"


@dataclass
class GateReport:
    changes: list[Change] = field(default_factory=list)
    stale: list[known_failures.Entry] = field(default_factory=list)
    compared: int = 0
    reruns: int = 0

    def of(self, kind: str) -> list[Change]:
        return [change for change in self.changes if change.kind == kind]

    def passed(self, *, strict: bool) -> bool:
        if self.of("regression"):
            return False
        return not strict or not (self.stale or self.of("missing"))


def compare(baseline: list[ResultRecord], results: list[ResultRecord],
            entries: Sequence[known_failures.Entry] = ()) -> GateReport:
    """Every change from ``baseline`` to ``results`` (each item's latest record on both sides), known failures
    and flaky entries applied, stale known failures listed."""
    before, after = latest(baseline), latest(results)
    report = GateReport(compared=len(after))
    for item, record in after.items():
        change = _classify(before.get(item), record)
        if change is not None:
            report.changes.append(change)
    report.changes += [Change("missing", record, record, "in the baseline, not in these results")
                       for item, record in before.items() if item not in after]
    _apply_known(report, entries)
    report.stale = [entry for entry in entries if entry.kind == "known_failures" and _no_longer_fails(entry, after)]
    return report


def _classify(base: ResultRecord | None, record: ResultRecord) -> Change | None:
    outcome = record.outcome
    informational = record.requirement == "IMPLEMENTATION"
    if base is None:
        if outcome in NOT_PASSING and not informational:
            return Change("regression", record, None, "a case the baseline does not have does not pass")
        return Change("new", record, None, "not in the baseline")
    was = base.outcome
    if was == outcome:
        return None
    if outcome == "differs":  # IMPLEMENTATION items only: Kafka's behaviour, not a KIP's
        return Change("changed", record, base, "differs from Kafka (IMPLEMENTATION, informational)")
    if was == "passed" and outcome in NOT_PASSING:
        return Change("changed" if informational else "regression", record, base,
                      "IMPLEMENTATION detail (informational)" if informational else "")
    if outcome == "passed":
        return Change("improvement", record, base)
    if was == "passed":  # now unsupported or skipped: not a departure, but a pass is gone
        return Change("lost", record, base, "no longer runs to a verdict")
    return Change("changed", record, base)


def _apply_known(report: GateReport, entries) -> None:
    for change in report.of("regression"):
        entry = known_failures.first_match(list(entries), change.record)
        if entry is not None:
            change.kind = "known" if entry.kind == "known_failures" else "flaky"
            change.note = f"listed in {entry.source}: {entry.reason}" + (f" <{entry.link}>" if entry.link else "")


def _no_longer_fails(entry: known_failures.Entry, after: dict[tuple, ResultRecord]) -> bool:
    """Stale: the entry's items ran and none of them fails any more (an entry matching nothing is not judged)."""
    matched = [record for record in after.values() if entry.matches(record)]
    return bool(matched) and not any(record.outcome in NOT_PASSING for record in matched)


# ------------------------------------------------------------------------------ reruns
def rerun(report: GateReport, times: int, *, pytest_arguments: Sequence[str] = ()) -> None:
    """Rerun every regressed item ``times`` times; one that passes at least once is flaky, measured."""
    regressions = report.of("regression")
    if times <= 0 or not regressions:
        return
    by_target: dict[str, list[Change]] = defaultdict(list)
    for change in regressions:
        by_target[change.record.target].append(change)
    for target, changes in by_target.items():
        passes: dict[tuple, int] = defaultdict(int)
        for _ in range(times):
            for record in run_items(target, [change.record for change in changes], pytest_arguments):
                passes[key(record)] += record.outcome == "passed"
        for change in changes:
            count = passes[key(change.record)]
            if count:
                change.kind = "flaky"
                change.note = f"measured: passed {count} of {times} reruns"
            else:
                change.note = f"failed all {times} reruns"
    report.reruns = times


def run_items(target: str, records: list[ResultRecord], pytest_arguments=()) -> list[ResultRecord]:
    """Run exactly these items once through pytest in a child process; their new records."""
    with tempfile.TemporaryDirectory(prefix="conformance-rerun-") as scratch:
        results = Path(scratch) / "rerun.jsonl"
        run_id = new_run_id()
        from .invocation import plugin_arguments  # -p conformance.pytest_plugin.plugin when it is not installed as an entry point

        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin_arguments(),
                   "--target", target,
                   "--results", str(results), "--conformance-run-id", run_id,
                   *pytest_arguments, *[rerun_argument(record) for record in records]]
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        return read_records(results, run_id=run_id)


# ------------------------------------------------------------------------------ output
MISSING_LISTED = 20  # beyond this, items missing from the results are summed per suite
HEADINGS = [("regression", "REGRESSION"), ("flaky", "FLAKY (tolerated)"), ("known", "KNOWN FAILURE (tolerated)"),
            ("missing", "MISSING from the results"), ("lost", "NO LONGER RUN"), ("changed", "CHANGED"),
            ("improvement", "IMPROVEMENT"), ("new", "NEW")]


def render(report: GateReport, *, strict: bool, show_new: bool = False) -> str:
    lines = []
    for kind, heading in HEADINGS:
        changes = report.of(kind)
        if kind == "missing" and len(changes) > MISSING_LISTED and not show_new:
            # A run of a subset of the suites misses whole suites: one line per suite says it.
            per_suite: dict[tuple, int] = defaultdict(int)
            for change in changes:
                per_suite[(change.record.target, change.record.suite)] += 1
            lines += [f"MISSING from the results: {target} {suite}: {count} items of the baseline"
                      for (target, suite), count in sorted(per_suite.items(), key=lambda entry: str(entry[0]))]
            lines.append(f"MISSING: {len(changes)} items in all; --show-new lists each with its command")
            continue
        if kind == "new" and not show_new:
            failing = [change for change in changes if change.record.outcome in NOT_PASSING]
            if changes:
                lines.append(f"NEW: {len(changes)} items not in the baseline ({len(failing)} not passing, "
                             "informational); --show-new lists them")
            continue
        for change in changes:
            record = change.record
            where = f"{record.target} {label(record)}"
            note = f" ({change.note})" if change.note else ""
            lines.append(f"{heading}: {where}: {change.transition}{note}")
            if kind != "missing" and record.message and record.outcome != "passed":
                lines.append(f"    {record.message.splitlines()[0][:300]}")
            bug = known_bug(record) if kind != "missing" else None
            if bug:  # the Apache Kafka release carries a bug of the known-bugs ledger
                lines.append(f"    known bug: {bug} ({ledger.jira_link(bug)})")
            if kind in ("regression", "flaky", "known", "improvement", "missing"):
                lines.append(f"    reproduce: {reproduce(record)}")
    for entry in report.stale:
        lines.append(f"STALE known failure{' (error with --strict)' if strict else ''}: {entry.describe()} "
                     f"[{entry.source}]: its items no longer fail")
    counts = {kind: len(report.of(kind)) for kind, _ in HEADINGS}
    verdict = "PASS" if report.passed(strict=strict) else "FAIL"
    lines.append(f"gate {verdict}: {report.compared} items compared; "
                 + ", ".join(f"{count} {kind}" for kind, count in counts.items())
                 + f", {len(report.stale)} stale" + (f"; regressions rerun {report.reruns}x" if report.reruns else ""))
    return "\n".join(lines) + "\n"


def to_json(report: GateReport, *, strict: bool) -> dict:
    return {"passed": report.passed(strict=strict), "compared": report.compared, "reruns": report.reruns,
            "changes": [{"kind": change.kind, "item": label(change.record), "target": change.record.target,
                         "transition": change.transition, "note": change.note,
                         "known_bug": known_bug(change.record) if change.kind != "missing" else None,
                         "reproduce": reproduce(change.record)} for change in report.changes],
            "stale": [{"entry": entry.describe(), "source": entry.source} for entry in report.stale]}


# ------------------------------------------------------------------------------ baselines
BASELINE_FIELDS = ("schema_version", "run_id", "target", "target_version", "suite", "case", "kip", "api",
                   "api_version", "outcome", "requirement", "draft", "verdict", "step_label", "nodeid")


def save_baseline(records: list[ResultRecord], path: str | Path) -> int:
    """The last record of each item, without transcripts, paths or timings: small, and stable in a diff."""
    rows = sorted(latest(records).values(), key=lambda row: tuple(str(part) for part in key(row)))
    lines = []
    for row in rows:
        kept = {name: getattr(row, name) for name in BASELINE_FIELDS}
        kept["schema_version"] = SCHEMA_VERSION  # the store named the outcome as this version does
        kept["message"] = row.message.splitlines()[0][:200] if row.message else ""
        lines.append(json.dumps(kept, separators=(",", ":")) + "\n")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(lines), encoding="utf-8")
    return len(lines)
