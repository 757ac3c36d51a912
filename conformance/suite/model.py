"""What a suite file becomes once loaded: suites, cases and their outcomes. No I/O here."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..protocol.schema import VersionRange
from . import tree
from .step import Step
from .walk import walk

if TYPE_CHECKING:
    from ..client.transcript import Transcript
# The outcome and requirement vocabulary belongs to the results record (conformance.results.record): import it
# from there; this module names only what a loaded suite is and what running a case gives.
from ..results.record import ITEM_FIELDS, Outcome, Requirement, ResultRecord, StepRole

LONG_TAG = "long"



@dataclass
class Case:
    suite: "Suite"
    id: str
    title: str
    requirement: Requirement
    cites: str
    api: str | None  # the API under test; None for cases that are not about one API's versions
    versions: VersionRange  # the versions the case covers (before the codec and the target narrow it)
    steps: list[Step]  # as the loader builds them (a test may hand plain mappings: the runner makes them Steps)
    tags: list[str] = field(default_factory=list)
    draft: bool = False
    deviations: list[dict] = field(default_factory=list)  # documented departures from the KIP text
    line: int = 0
    serial: bool = False  # must not run alongside other cases (restarts the broker, long waits)
    # serial only for its broker restarts: runs beside other such cases, sharing restarts (runner.shared_restart)
    shares_restart: bool = False
    # Broker settings the case relies on: {name: matcher}; read from the target, ${config.name_with_underscores}
    requires_config: dict = field(default_factory=dict)
    # settings that turn the checked behaviour off on Apache Kafka: skipped only where reported otherwise
    requires_switch: dict = field(default_factory=dict)

    @property
    def full_id(self) -> str:
        return f"{self.suite.id}::{self.id}"

    @property
    def kip(self) -> str:
        return self.suite.spec

    @property
    def long(self) -> bool:
        """Tagged ``long``: minutes of the broker's time (the end of the epoch space); runs only when asked for."""
        return LONG_TAG in self.tags

    @functools.cached_property
    def principals(self) -> list[str]:
        """The target principals the steps run as (``as: guest``)."""
        return sorted({value for key, value in tree.entries(self.steps) if key == "as" and isinstance(value, str) and value})

    @functools.cached_property
    def faults(self) -> list[str]:
        """The faults every run of the case asks the target for (``fault: restart``, ``fault: {name: ...}``):
        named outright, not computed, and on no step a ``when`` may leave out. A target lacking one cannot
        run the case at all."""
        return sorted({fault.name for visit in walk(self.steps) if not visit.conditional for fault in visit.faults
                       if isinstance(fault.name, str) and fault.name and "${" not in fault.name})

    @functools.cached_property
    def rough(self) -> bool:
        """Whether the case treats the target roughly (malformed frames, expected disconnects or silence):
        the target is checked to still answer after each of its items, even a passing one."""
        return any(visit.rough or visit.hazard for visit in walk(self.steps))

    @functools.cached_property
    def hazardous(self) -> bool:
        """Whether the case sends what a broker may not survive (its steps' kinds say which do: a malformed frame,
        raw bytes, an expected disconnect); its items run after every other item of the target, one at a time
        (runner.parallel), so a crash costs no other verdict. Such cases are rough too."""
        return any(visit.hazard for visit in walk(self.steps))

    @functools.cached_property
    def topics_used(self) -> list[str]:
        """The suite's topics this case's steps name (``${topics.x}``, ``${topic_ids.x}``): only
        those are created for it, since creating and deleting topics is most of a short case's time."""
        texts = [text for text in tree.texts(self.steps) if "${" in text]
        return [name for name in self.suite.topics
                if any(re.search(rf"\$\{{[^}}]*\btopic(s|_ids)\.{re.escape(name)}\b", text) for text in texts)]


@dataclass
class Suite:
    id: str
    title: str
    spec: str  # "KIP-98", "KIP-447 (draft)" ...
    path: str
    topics: dict[str, dict] = field(default_factory=dict)
    transactional_ids: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)


@dataclass
class StepFailure:
    """Where and how a case departed from its expectations (rendered in reports)."""

    step: int
    step_label: str
    expected: object
    actual: object
    message: str
    role: StepRole = StepRole.UNDER_TEST  # the step under test (or a check verifying it): FAILED; set-up, check: BLOCKED
    api: str | None = None  # the API of the departing step


@dataclass
class CaseResult:
    case_id: str
    suite_id: str
    title: str
    kip: str
    api: str | None
    version: int | None
    target: str
    target_version: str | None
    outcome: Outcome
    requirement: Requirement
    cites: str
    duration_s: float
    message: str = ""
    failure: StepFailure | None = None
    transcript: list[dict] = field(default_factory=list)
    transcript_text: str = ""  # rendered from transcript_source on first use: most results are never shown
    transcript_source: Transcript | None = field(default=None, repr=False, compare=False)
    tags: list[str] = field(default_factory=list)
    draft: bool = False
    run_id: str = ""
    path: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)  # name -> file (pcaps, logs)
    target_name: str | None = None  # the product the user named the target (Target.name)
    # one fault of one API version behind this item's verdict (an answer that does not decode ...): reports
    # list the items sharing it as one entry
    root_cause: str = ""
    # a known bug the item's own evidence names where the ledger has no case for it (the exactly-once tier reads it
    # from the broker's log): ``KAFKA-20734, unfixed as of 4.4.0``; the results line's ``known_bug``
    known_bug: str = ""

    @classmethod
    def for_case(cls, case: Case, version: int | None, *, target: str, target_version: str | None,
                 outcome: Outcome, run_id: str, message: str = "", target_name: str | None = None) -> "CaseResult":
        """The result of ``case`` at ``version`` on ``target``, before any step ran: what the case says of itself
        (ids, title, KIP, requirement, citation, tags, file), ``outcome`` and ``message`` until a run says more."""
        return cls(
            case_id=case.id, suite_id=case.suite.id, title=case.title, kip=case.kip, api=case.api,
            version=version, target=target, target_version=target_version, outcome=outcome,
            requirement=case.requirement, cites=case.cites, duration_s=0.0, message=message, tags=list(case.tags),
            draft=case.draft, run_id=run_id, path=case.suite.path, target_name=target_name)

    def rendered_transcript(self) -> str:
        """The exchanges as text, rendered once from the transcript on first use (most results are never shown)."""
        if not self.transcript_text and self.transcript_source is not None:
            self.transcript_text = self.transcript_source.render()
        return self.transcript_text

    def record(self, **run: Any) -> ResultRecord:
        """This result as its results line; ``run`` holds the fields the run knows (:data:`RUN_FIELDS
        <conformance.results.record.RUN_FIELDS>`: node id, verdict, harness version ...)."""
        from ..client.transcript import jsonable

        failure = self.failure
        return ResultRecord(
            run_id=self.run_id, target=self.target, target_version=self.target_version, target_name=self.target_name,
            suite=self.suite_id, case=self.case_id, title=self.title, kip=self.kip,
            api=self.api, api_version=self.version, outcome=self.outcome.value,
            requirement=self.requirement.value, cites=self.cites, draft=self.draft,
            tags=self.tags, duration_s=round(self.duration_s, 4), message=self.message,
            step=None if failure is None else failure.step,
            step_label=None if failure is None else failure.step_label,
            step_role=None if failure is None else StepRole(failure.role).value,
            step_api=None if failure is None else failure.api,
            expected=None if failure is None else jsonable(failure.expected),
            actual=None if failure is None else jsonable(failure.actual),
            path=self.path, artifacts=self.artifacts, transcript=self.transcript, root_cause=self.root_cause, **run)

    def to_json(self) -> dict:
        """The item's part of its results line (what the case alone knows)."""
        line = self.record().to_line()
        return {name: line[name] for name in ITEM_FIELDS}
