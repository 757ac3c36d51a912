"""The results record: one line of a results file, for one item (a case at one API version on one target).

Rules:

- This module is the only place that says what a results line holds. Its writer
  (:func:`conformance.session.result_line`) builds a :class:`ResultRecord`; its readers go through
  :func:`upgrade` or :func:`from_line`; the Spark schema (:mod:`conformance.analysis.layout`), the
  JSON Schema shipped beside this module (``schema.json``) and the results-format reference page are
  derived from :data:`FIELDS` or checked against it by a test.
- A line's keys come out in the order of the dataclass's fields: files written before this module
  existed had that order, and a diff of two runs' lines should show values, not moved keys.
- Reading never refuses an older line. A field that a version did not write reads None, and an
  outcome is named as :data:`SCHEMA_VERSION` names it (:func:`outcome_of`).
- Nothing of the harness is imported here: the record sits below every layer that writes or reads it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import Any

from .ids import item_id

# Version 2 adds the BLOCKED outcome, the IMPLEMENTATION requirement level and step_role/step_api.
# Version 3 adds the DIFFERS outcome: an IMPLEMENTATION item whose step under test departs is
# ``differs``, no longer ``failed`` (see :func:`outcome_of`, which reads older records the same way).
# Version 4 adds target_name: the product a user named a target it attaches to (PRODUCT[:VERSION]@HOST:PORT).
SCHEMA_VERSION = 4


class Requirement(str, enum.Enum):
    MUST = "MUST"
    SHOULD = "SHOULD"
    MAY = "MAY"
    # What Apache Kafka does where the KIPs leave it open (internal topics, state names beyond the KIP's):
    # reported for information, never part of what defines conformance.
    IMPLEMENTATION = "IMPLEMENTATION"

    @property
    def conformance(self) -> bool:
        """True for the levels a certification counts (MUST, SHOULD, MAY)."""
        return self is not Requirement.IMPLEMENTATION


class Outcome(str, enum.Enum):
    """What happened to one item. Only PASSED is a pass; every consumer counts the others apart."""

    PASSED = "passed"  # the step under test ran at the version under test and met its expectation
    FAILED = "failed"  # the step under test (or a check that verifies it) departs: a finding on the API under test
    # An IMPLEMENTATION case where the target does not do what Apache Kafka does: information about
    # the target, never a departure from a KIP.
    DIFFERS = "differs"
    # a setup, precondition or check step on another API (or a step preparing the one under test, or a control of
    # a check's observer) departed: no verdict on the API under test
    BLOCKED = "blocked"
    ERROR = "error"  # the harness, the infrastructure or the target's liveness failed: no verdict
    UNSUPPORTED = "unsupported"  # the target does not advertise the API version under test
    SKIPPED = "skipped"  # the case needs something the target lacks (a fault capability, a feature)

    @property
    def tested(self) -> bool:
        """False for UNSUPPORTED and SKIPPED: the item did not test the target, so it is out of every rate's
        denominator and no level or gate counts it."""
        return self not in (Outcome.UNSUPPORTED, Outcome.SKIPPED)

    @property
    def incomplete(self) -> bool:
        """BLOCKED and ERROR: the item ran but reached no verdict on the API under test (another API departed,
        or the harness, the infrastructure or the target's liveness failed)."""
        return self in (Outcome.BLOCKED, Outcome.ERROR)

    @property
    def uneventful(self) -> bool:
        """PASSED, or not tested: nothing for a person to look at (no transcript kept by default, no liveness
        check after it)."""
        return self is Outcome.PASSED or not self.tested

    @property
    def label(self) -> str:
        """The words a person reads for the outcome (the results file, JSON and CSS keep the value)."""
        return OUTCOME_LABELS[self.value]


class StepRole(enum.StrEnum):
    """Whom a departing step blames: the step under test (the API and version under test, or a check that
    ``verifies`` it) makes the item FAILED; a set-up step before it or a check after it, on another API or version,
    makes it BLOCKED. The values are the results line's ``step_role``."""

    UNDER_TEST = "under_test"
    SETUP = "setup"
    CHECK = "check"

    @property
    def word(self) -> str:
        """How a message names a step of this role: "set-up", "check" or "under test"."""
        return {"under_test": "under test", "setup": "set-up", "check": "check"}[self.value]


# The order every report lists outcomes in, and the words a person reads for them (the results
# file, JSON and CSS classes keep the outcome word itself).
OUTCOME_ORDER: tuple[str, ...] = tuple(outcome.value for outcome in Outcome)
OUTCOME_LABELS: dict[str, str] = {outcome: outcome for outcome in OUTCOME_ORDER} | {"differs": "differs from Kafka"}
# The outcomes of an item that ran but reached no verdict on the API under test (:attr:`Outcome.incomplete`), as the
# words a results line holds: what a report lists as "without a verdict".
INCOMPLETE_OUTCOMES: tuple[str, ...] = tuple(outcome.value for outcome in Outcome if outcome.incomplete)
# Worst first: the order a drawing stacks the outcomes of several items in (the certification matrix). An
# IMPLEMENTATION item that differs from Kafka is information, below every missing verdict.
SEVERITY_ORDER: tuple[str, ...] = ("failed", "blocked", "error", "differs", "skipped", "unsupported", "passed")
# The requirement levels in the order reports list them; only the first three count towards conformance.
REQUIREMENT_ORDER: tuple[str, ...] = tuple(level.value for level in Requirement)
COUNTED_LEVELS: tuple[str, ...] = tuple(level.value for level in Requirement if level.conformance)

# How the runner's message begins for the item after which the target stopped answering: a crash is
# a crash, so that item is FAILED whatever its requirement level.
STOPPED_ANSWERING = "the target stopped answering after this case"

class Verdict(str, enum.Enum):
    """What an item's outcome makes of the run: whether it passes, fails the build, is a finding to read (an
    *xfail*), did not test the target, or is a harness error. Decided once, by :meth:`of`, for every entry point:
    the results line records it and the pytest plugin raises what it says."""

    PASSED = "passed"
    FAILED = "failed"  # a binding departure: the build fails
    XFAILED = "xfailed"  # a departure that does not bind (SHOULD/MAY without strict, IMPLEMENTATION): read, not fail
    SKIPPED = "skipped"  # unsupported or skipped: the target was not tested
    ERROR = "error"  # no verdict on the target: the harness, the infrastructure or its liveness failed

    @classmethod
    def of(cls, outcome: Outcome, requirement: Requirement, *, strict: bool) -> "Verdict":
        """The one rule: DIFFERS is information, never a failure; FAILED and BLOCKED fail where they bind
        (:func:`binding`) and are read otherwise; UNSUPPORTED and SKIPPED are skips; anything else is an error."""
        if outcome is Outcome.PASSED:
            return cls.PASSED
        if outcome is Outcome.DIFFERS:
            return cls.XFAILED
        if outcome in (Outcome.FAILED, Outcome.BLOCKED):
            return cls.FAILED if binding(requirement, strict=strict) else cls.XFAILED
        if outcome in (Outcome.UNSUPPORTED, Outcome.SKIPPED):
            return cls.SKIPPED
        return cls.ERROR


def binding(requirement: Requirement, *, strict: bool) -> bool:
    """Whether a departure fails the build: MUST always, SHOULD and MAY under strict, IMPLEMENTATION never."""
    if requirement is Requirement.IMPLEMENTATION:
        return False
    return strict or requirement is Requirement.MUST


VERDICTS: tuple[str, ...] = tuple(verdict.value for verdict in Verdict)  # what pytest made of the item


def outcome_of(record: dict[str, Any]) -> str | None:
    """A results record's outcome as schema version 3 names it.

    Before version 3 an IMPLEMENTATION item whose step under test departed was ``failed``: it is
    read as ``differs``, unless the target stopped answering after it (a crash stays ``failed``)."""
    outcome = record.get("outcome")
    version = record.get("schema_version")
    if (outcome == Outcome.FAILED.value and record.get("requirement") == Requirement.IMPLEMENTATION.value
            and (not isinstance(version, int) or version < 3)
            and not str(record.get("message") or "").startswith(STOPPED_ANSWERING)):
        return Outcome.DIFFERS.value
    return outcome


# ------------------------------------------------------------------------------ the record
def _field(json_type: dict[str, Any], *, part: str = "item", default: Any = None) -> Any:
    """A field with the JSON Schema of its value; ``part`` says who knows it: the case's result
    (``item``) or the run that recorded it (``run``: the pytest plugin or the exactly-once tier)."""
    return field(default=default, metadata={"json": json_type, "part": part})


def _nullable(json_type: dict[str, Any]) -> dict[str, Any]:
    if set(json_type) == {"type"}:
        return {"type": [json_type["type"], "null"]}
    return {"anyOf": [json_type, {"type": "null"}]}


_STRING, _INTEGER, _NUMBER, _BOOLEAN = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}


@dataclass(frozen=True, kw_only=True)
class ResultRecord:
    """One line of a results file. The field order is the line's key order."""

    schema_version: int = _field(_INTEGER, default=SCHEMA_VERSION)
    run_id: str = _field(_STRING, default="")
    target: str = _field(_STRING, default="")
    target_version: str | None = _field(_nullable(_STRING))
    target_name: str | None = _field(_nullable(_STRING))
    suite: str = _field(_STRING, default="")
    case: str = _field(_STRING, default="")
    title: str = _field(_STRING, default="")
    kip: str = _field(_STRING, default="")
    api: str | None = _field(_nullable(_STRING))
    api_version: int | None = _field(_nullable(_INTEGER))
    outcome: str = _field({"enum": list(OUTCOME_ORDER)}, default=Outcome.PASSED.value)
    requirement: str = _field({"enum": [level.value for level in Requirement]}, default=Requirement.MUST.value)
    cites: str = _field(_STRING, default="")
    draft: bool = _field(_BOOLEAN, default=False)
    tags: list[str] = _field({"type": "array", "items": _STRING}, default=())
    duration_s: float = _field(_NUMBER, default=0.0)
    message: str = _field(_STRING, default="")
    step: int | None = _field(_nullable(_INTEGER))
    step_label: str | None = _field(_nullable(_STRING))
    step_role: str | None = _field(_nullable({"enum": [role.value for role in StepRole]}))
    step_api: str | None = _field(_nullable(_STRING))
    expected: object = _field({})  # any JSON value
    actual: object = _field({})
    path: str = _field(_STRING, default="")
    artifacts: dict[str, str] = _field({"type": "object", "additionalProperties": _STRING}, default=None)
    transcript: list[dict[str, Any]] = _field({"type": "array", "items": {"type": "object"}}, default=())
    # One fault of one API version behind the item's verdict, the same words for every item it touches ("Produce
    # v5 response does not decode at ...log_start_offset"): reports list the items sharing it as one entry. An
    # item whose API under test is that API and version failed there; any other is blocked by it. Empty otherwise.
    root_cause: str = _field(_STRING, default="")
    nodeid: str = _field(_STRING, part="run", default="")
    verdict: str = _field({"enum": list(VERDICTS)}, part="run", default="")
    strict: bool = _field(_BOOLEAN, part="run", default=False)
    harness_version: str = _field(_STRING, part="run", default="")
    worker: str = _field(_STRING, part="run", default="main")
    recorded_at: str = _field(_STRING, part="run", default="")
    # The Apache Kafka bug of the known-bugs ledger behind a departure ("KAFKA-14402, fixed in 3.6.0"): written by
    # the run (conformance.ledger) for an item of a provisioned Apache Kafka release; empty otherwise.
    known_bug: str = _field(_STRING, part="run", default="")
    # Not part of the line: the JSON object this record was read from (:meth:`from_line`), None for a record built
    # in memory. Evidence that travels as it was written (a certification bundle and its digest) is this object,
    # with every key it had, not the record rewritten (:meth:`evidence`).
    as_read: dict[str, Any] | None = field(default=None, compare=False, repr=False, metadata={"part": "read"})

    def to_line(self) -> dict[str, Any]:
        """The JSON object written as one line (``json.dumps`` of it, by the results writer)."""
        line = {name: getattr(self, name) for name in FIELDS}
        line["tags"], line["transcript"] = list(self.tags), list(self.transcript)
        line["artifacts"] = dict(self.artifacts or {})
        return line

    def evidence(self) -> dict[str, Any]:
        """The line as it was read, keys this version does not know included, or the record's own line when it was
        built in memory: what a certification bundle writes and digests, so a bundle verifies byte for byte."""
        return self.as_read if self.as_read is not None else self.to_line()

    @property
    def item_id(self) -> str:
        """The item's id, ``suite::case@vN`` (:mod:`.ids`)."""
        return item_id(self.suite, self.case, self.api_version)

    @classmethod
    def from_line(cls, line: dict[str, Any]) -> "ResultRecord":
        """A line of any schema version, upgraded (:func:`upgrade`). Fields an older version did not
        write read None; keys this version does not know are dropped from the fields and kept in :attr:`as_read`
        (which is ``line`` itself, upgraded in place)."""
        upgraded = upgrade(line)
        values: dict[str, Any] = {name: upgraded.get(name) for name in FIELDS}
        return cls(**values, as_read=upgraded)


FIELDS: tuple[str, ...] = tuple(spec.name for spec in fields(ResultRecord) if spec.metadata["part"] in ("item", "run"))
ITEM_FIELDS: tuple[str, ...] = tuple(spec.name for spec in fields(ResultRecord) if spec.metadata["part"] == "item")
RUN_FIELDS: tuple[str, ...] = tuple(spec.name for spec in fields(ResultRecord) if spec.metadata["part"] == "run")


def upgrade(line: dict[str, Any]) -> dict[str, Any]:
    """The line as read, its outcome named as :data:`SCHEMA_VERSION` names it (in place, and returned):
    readers keep the keys a line has, so a report of an old file shows what that file said."""
    if "outcome" in line:
        line["outcome"] = outcome_of(line)
    return line


def json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a results line of :data:`SCHEMA_VERSION`, as ``schema.json`` ships it."""
    properties = {spec.name: dict(spec.metadata["json"]) for spec in fields(ResultRecord) if spec.name in FIELDS}
    properties["schema_version"] = {"type": "integer", "minimum": 1, "maximum": SCHEMA_VERSION}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://kafka-conformance/results-line/v{SCHEMA_VERSION}.json",
        "title": "One line of a kafka-conformance results file",
        "description": f"Schema version {SCHEMA_VERSION}; docs/reference/results-format.md says what each field means.",
        "type": "object",
        "properties": properties,
        "required": list(FIELDS),  # the writer of this version writes every field
    }
