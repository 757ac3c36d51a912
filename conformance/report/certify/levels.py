"""Certification levels: loaded from levels.yaml (data, not code) and graded against results records."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ... import resources
from ...protocol.exceptions import SpecError
from ...results.record import COUNTED_LEVELS, Outcome, ResultRecord
from ...protocol.schema import VersionRange
from .. import known_failures
from .. import itemref
from ..itemref import key

COUNTABLE = COUNTED_LEVELS  # IMPLEMENTATION is informational: no level may count it
# Cases of a feature Kafka ships but does not serve by default yet (KIP-939's InitProducerId v6, unstable in
# Kafka 4.x) carry this tag: only a level marked preview counts them, and no adopted level includes one.
PREVIEW_TAG = "preview"

REACHED, MISSED, INCOMPLETE, NOT_RUN = "reached", "missed", "incomplete", "not run"
# With a capabilities file (--claims): a level all of whose items, or whose demands, lie outside what the vendor
# claims. Neither reached nor missed, and a level including it is graded on the rest.
NOT_CLAIMED = "not claimed"
# With reproductions (``certify reproduce``): a level counting an item whose outcome changed between runs of one
# target. Not reached: the level would hold on one run and not on the next.
UNSTABLE = "unstable"


class LevelsError(ValueError):
    """levels.yaml is malformed; the message names the level and key."""


@dataclass(frozen=True)
class Level:
    id: str
    name: str
    summary: str
    suites: tuple[str, ...] = ("*",)
    kips: tuple[str, ...] = ()
    apis: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ("MUST",)
    demands: dict = field(default_factory=dict)  # API -> VersionRange (None: every version)
    features: dict = field(default_factory=dict)  # finalized feature -> minimum level
    includes: tuple[str, ...] = ()
    allow_known_failures: bool = False
    preview: bool = False  # counts only cases tagged preview, and only those

    def selects(self, record: ResultRecord) -> bool:
        """Whether the level counts this item (its requirement, preview tag, suite, KIP, API and tags)."""
        if record.draft or record.requirement not in self.requirements:
            return False
        if (PREVIEW_TAG in (record.tags or ())) != self.preview:
            return False
        if not any(fnmatch.fnmatchcase(str(record.suite), pattern) for pattern in self.suites):
            return False
        if self.kips and record.kip not in self.kips:
            return False
        if self.apis and record.api not in self.apis:
            return False
        return not self.tags or bool(set(self.tags) & set(record.tags or ()))

    def demanded(self, record: ResultRecord) -> bool:
        """Whether the level requires the target to advertise this item's API version."""
        api, version = record.api, record.api_version
        if api not in self.demands:
            return False
        span = self.demands[api]
        return span is None or version is None or version in span

    def describe_demands(self) -> str:
        parts = [f"{api} {'all versions' if span is None else 'v' + str(span)}" for api, span in self.demands.items()]
        parts += [f"{name} ≥ {level}" for name, level in self.features.items()]
        return ", ".join(parts) or "nothing beyond the items it selects"


def default_levels_path() -> Path:
    return resources.certification_levels()


def load_levels(path: str | Path | None = None) -> list[Level]:
    path = Path(path) if path else default_levels_path()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    levels = [_level(raw, f"{path}: levels[{index}]") for index, raw in enumerate(data.get("levels") or [])]
    ids = [level.id for level in levels]
    for level in levels:
        unknown = [name for name in level.includes if name not in ids[:ids.index(level.id)]]
        if unknown:
            raise LevelsError(f"{path}: level {level.id!r} includes {unknown}, not defined before it")
        previews = [name for name in level.includes if not level.preview and levels[ids.index(name)].preview]
        if previews:
            raise LevelsError(f"{path}: level {level.id!r} includes the preview level(s) {previews}: "
                              "a preview never counts toward an adopted level")
    if len(set(ids)) != len(ids):
        raise LevelsError(f"{path}: level ids repeat")
    return levels


def _level(raw: dict, where: str) -> Level:
    allowed = {"id", "name", "summary", "select", "requirements", "demands", "features", "includes",
               "allow_known_failures", "preview"}
    if not isinstance(raw, dict) or not raw.get("id") or not raw.get("name"):
        raise LevelsError(f"{where}: a level needs an id and a name")
    if set(raw) - allowed:
        raise LevelsError(f"{where}: unknown keys {sorted(set(raw) - allowed)}")
    select = raw.get("select") or {}
    requirements = tuple(raw.get("requirements") or ["MUST"])
    if set(requirements) - set(COUNTABLE):
        raise LevelsError(f"{where}: requirements may only be {', '.join(COUNTABLE)} "
                          "(IMPLEMENTATION details never count towards a level)")
    try:
        demands = {api: None if span is None else VersionRange.parse(span, where=where)
                   for api, span in (raw.get("demands") or {}).items()}
    except SpecError as error:
        raise LevelsError(str(error)) from None
    return Level(id=raw["id"], name=raw["name"], summary=" ".join(str(raw.get("summary", "")).split()),
                 suites=tuple(select.get("suites") or ["*"]), kips=tuple(select.get("kips") or ()),
                 apis=tuple(select.get("apis") or ()), tags=tuple(select.get("tags") or ()),
                 requirements=requirements, demands=demands, features=dict(raw.get("features") or {}),
                 includes=tuple(raw.get("includes") or ()), allow_known_failures=bool(raw.get("allow_known_failures")),
                 preview=bool(raw.get("preview")))


# ------------------------------------------------------------------------------ grading
@dataclass
class Grade:
    level: Level
    status: str
    counted: int = 0
    passed: int = 0
    departures: list[ResultRecord] = field(default_factory=list)  # failed items (findings)
    unadvertised: list[ResultRecord] = field(default_factory=list)  # demanded versions the target does not advertise
    incomplete: list[ResultRecord] = field(default_factory=list)  # blocked, error, skipped: no verdict
    waived: list[tuple[ResultRecord, known_failures.Entry]] = field(default_factory=list)
    ungraded: int = 0  # unsupported versions the level does not demand
    not_run: list[str] = field(default_factory=list)  # the level's suites absent from the results
    not_claimed: int = 0  # items outside the vendor's claims (--claims): left out of the grade
    reasons: list[str] = field(default_factory=list)
    # waivers of this level whose items all pass now: the known failure is gone, so the waiver is stale
    stale: list[known_failures.Entry] = field(default_factory=list)
    flaky: list[ResultRecord] = field(default_factory=list)  # counted items whose outcome changed between runs

    @property
    def label(self) -> str:
        if self.status == REACHED and self.waived:
            return f"reached with {len(self.waived)} waived"
        return self.status


def first_sentence(text: str) -> str:
    """The first sentence of a message's first line, whole: a reason cut at a width can read as its opposite
    ("... which tansu ... does" of "... which tansu never does")."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    end = re.search(r"(?<!\d)\.(\s|$)", line)  # a full stop, not a version's dot
    return line[:end.start() + 1] if end else line


def grade(levels: list[Level], records: list[ResultRecord], features: dict[str, int] | None,
          waivers: Sequence[known_failures.Entry] = (), known_suites: Sequence[str] = (), claims=None,
          flaky: Collection[str] = ()) -> list[Grade]:
    """One grade per level, in file order (so included levels are graded first).

    ``features`` is None when the fingerprint is unknown: a level demanding features is then incomplete.
    ``known_suites`` are the suite ids that exist: a level whose suites did not all run is incomplete,
    since a level graded on part of its suites would claim more than was checked.
    ``claims`` (:class:`.claims.Claims`, optional): items outside them are not counted, and a level whose
    items or demands all lie outside them is *not claimed*.
    """
    ran = {record.suite for record in records}
    items = {key(record): record for record in records}.values()  # the last record of each item
    grades: dict[str, Grade] = {}
    for level in levels:
        result = Grade(level, NOT_RUN)
        passing: dict[known_failures.Entry, None] = {}  # waivers that name a passing item of the level
        for record in items:
            if not level.selects(record):
                continue
            if claims is not None and claims.unclaimed(record) is not None:
                result.not_claimed += 1
                continue
            outcome = record.outcome
            if outcome == Outcome.UNSUPPORTED:
                if level.demanded(record):
                    result.unadvertised.append(record)
                    result.counted += 1
                else:
                    result.ungraded += 1
                continue
            result.counted += 1
            if record.item_id in flaky:  # no one verdict: it neither passes nor departs
                result.flaky.append(record)
            elif outcome == Outcome.PASSED:
                result.passed += 1
                entry = known_failures.first_match(list(waivers), record, "known_failures")
                if entry is not None and level.allow_known_failures:
                    passing.setdefault(entry, None)
            elif outcome == Outcome.FAILED:
                entry = known_failures.first_match(list(waivers), record, "known_failures")
                if entry is not None and level.allow_known_failures:
                    result.waived.append((record, entry))
                else:
                    result.departures.append(record)
            else:
                result.incomplete.append(record)
        result.not_run = sorted(suite for suite in known_suites if suite not in ran and any(
            fnmatch.fnmatchcase(suite, pattern) for pattern in level.suites)
            and (claims is None or not claims.suite_unclaimed(suite)))
        outside = claims.level_unclaimed(level) if claims is not None else []
        if outside or (result.counted == 0 and result.not_claimed):
            result.status = NOT_CLAIMED
            result.reasons = outside or [f"all {result.not_claimed} items of this level lie outside the claims"]
        else:
            result.status, result.reasons = _status(level, result, features, grades)
            if result.not_claimed:
                result.reasons.append(f"{result.not_claimed} items outside the claims, not counted")
        still_failing = {entry for _, entry in result.waived}
        result.stale = [entry for entry in passing if entry not in still_failing]
        if result.stale:
            result.reasons.append(f"{len(result.stale)} stale waiver{'s' if len(result.stale) != 1 else ''}: the "
                                  "known failure it waives passes now, so --require fails until it is removed ("
                                  + "; ".join(f"{entry.case}, {entry.source}" for entry in result.stale) + ")")
        grades[level.id] = result
    return list(grades.values())


def _status(level: Level, result: Grade, features, grades: dict[str, Grade]) -> tuple[str, list[str]]:
    reasons, missed, incomplete, unstable = [], False, False, False
    if result.flaky:
        unstable = True
        reasons.append(f"{len(result.flaky)} flaky item{'s' if len(result.flaky) != 1 else ''}: the outcome changed "
                       "between runs of the target (" + ", ".join(itemref.label(row) for row in result.flaky[:3])
                       + (", ..." if len(result.flaky) > 3 else "") + ")")
    if result.departures:
        missed = True
        reasons.append(f"{len(result.departures)} departures from the spec" + _known_bugs(result.departures))
    if result.unadvertised:
        missed = True
        reasons.append(f"{len(result.unadvertised)} demanded API versions not advertised")
    for name, minimum in level.features.items():
        if features is None:
            incomplete = True
            reasons.append(f"finalized feature {name} unknown (no fingerprint)")
        elif features.get(name, 0) < minimum:
            missed = True
            reasons.append(f"finalized feature {name} is {features.get(name, 'absent')}, needs ≥ {minimum}")
    for included in level.includes:
        status = grades[included].status if included in grades else NOT_RUN
        if status == NOT_CLAIMED:  # graded on what is claimed: the page says what was left out
            reasons.append(f"includes {grades[included].level.name}: not claimed")
        elif status != REACHED:
            reasons.append(f"includes {grades[included].level.name if included in grades else included}: {status}")
            missed = missed or status == MISSED
            unstable = unstable or status == UNSTABLE
            incomplete = incomplete or status not in (MISSED, UNSTABLE)
    if result.not_run:
        incomplete = True
        reasons.append(f"suites not run: {', '.join(result.not_run)}")
    if result.incomplete:
        incomplete = True
        by_outcome: dict[str, list[ResultRecord]] = {}
        for record in result.incomplete:
            by_outcome.setdefault(str(record.outcome), []).append(record)
        for outcome, rows in by_outcome.items():  # with one message as an example of why
            example = first_sentence(rows[0].message or "")
            reasons.append(f"{len(rows)} {outcome}, no verdict" + (f" (e.g. {example})" if example else ""))
    if result.counted == 0:
        return NOT_RUN, reasons + ["no item of this level in the results"]
    if missed:
        return MISSED, reasons
    if unstable:
        return UNSTABLE, reasons
    if incomplete:
        return INCOMPLETE, reasons
    return REACHED, reasons


def grade_summaries(records: list[ResultRecord], known_suites: Sequence[str] = ()) -> list[dict]:
    """The bundled levels graded on ``records`` without a fingerprint (a level asking for a finalized feature
    is then incomplete), as plain values: what ``conformance analyze site`` shows per target and version."""
    return [{"name": result.level.name, "status": result.status, "label": result.label, "passed": result.passed,
             "counted": result.counted, "reasons": result.reasons}
            for result in grade(load_levels(), records, None, known_suites=known_suites)]


def _known_bugs(departures: list[ResultRecord]) -> str:
    """`` (6 of them KAFKA-20310, unfixed as of 4.4.0)``: the departures the known-bugs ledger explains, by bug, so
    a level an Apache Kafka release misses on its own bug says so where the level is shown."""
    named: dict[str, int] = {}
    for record in departures:
        bug = itemref.known_bug(record)
        if bug:
            named[bug] = named.get(bug, 0) + 1
    if not named:
        return ""
    return " (" + "; ".join(f"{count} of them {bug}" if len(departures) > 1 else bug
                            for bug, count in named.items()) + ")"
