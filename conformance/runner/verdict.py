"""The one place where an item's verdict is decided: whom a departure blames, which step it names, and what the
item ends in.

What happened is reported where it happens, never judged there. A step kind, the exchange and :mod:`.observe`
raise a :class:`~.context.Departure` holding what the broker did (expected, actual, the API and version that
departed) and facts about that answer (it could not be read, it is one version's fault, it was a control's);
as it leaves each step, :func:`~.dispatch.run_step` adds one :class:`Passage` to it (the step, and what the item
knew at that moment). A request the harness sends for itself (creating topics, reading the broker's settings,
finding a coordinator) that departs raises the client's own error, which holds the exchange. A step kind that
sends reports each expectation that held with :meth:`~.context.Context.checked`: that is how an item shows that
its step under test ran (:func:`ran_to_end`).

The functions here read those records and decide; nothing else sets a role or an outcome.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from ..client.cluster import ClusterError
from ..client.connection import ClientError
from ..results.record import STOPPED_ANSWERING, Outcome, Requirement, StepRole
from ..suite.kinds import StepRef
from ..suite.model import Case, StepFailure
from ..targets.base import ControlFailed
from .context import Departure, Incomplete, Progress, Skip
from .resources import CannotCreateTopics, TooFewBrokers, UnknownSetting
from .under_way import replayable


@dataclass(frozen=True)
class Passage:
    """One step a departure left, innermost first: the step, and what the item knew as it departed."""

    step: StepRef
    verifies: bool = False  # the step verifies the step under test: a check's departure inside it is that step's
    under_test: bool = False  # the departing request was the step under test (its API and version, not preparing)
    tested: bool = False  # the step under test had already run and been checked


@dataclass(frozen=True)
class Judged:
    """What an item ends in: its outcome, the message a person reads, and where it departed (None: no step did)."""

    outcome: Outcome
    message: str
    failure: StepFailure | None = None
    root_cause: str = ""


# ------------------------------------------------------------------------------ a departure's role and step
def role(departure: Departure) -> StepRole:
    """Whom ``departure`` blames: the step under test (the item fails), or set-up before it or a check after it
    (the item is blocked)."""
    if not departure.trail:  # raised outside any step (a harness that calls a kind directly): the step's own
        return StepRole.UNDER_TEST
    first = departure.trail[0]
    before_or_after = StepRole.CHECK if first.tested else StepRole.SETUP
    if departure.observer is not None or departure.control:
        # a control of an observer (dispatch.observer_departed), or the well-formed control of a malformed request:
        # it shows the case cannot be judged here, never that the step under test departs
        return before_or_after if departure.observer is not None else StepRole.SETUP
    if first.under_test and not departure.preparation:
        return StepRole.UNDER_TEST
    if before_or_after is StepRole.SETUP:
        return StepRole.SETUP
    # a check after the step under test is that step's where a step around it verifies it, unless it could not
    # observe (its own request failed): that is no evidence about the step under test
    verified = any(passage.verifies for passage in departure.trail)
    return StepRole.UNDER_TEST if verified and not departure.blind else StepRole.CHECK


def step(departure: Departure) -> StepRef | None:
    """The innermost step that departed (a pipelined request, a step inside an until or a branch)."""
    return departure.trail[0].step if departure.trail else None


def no_use_waiting(departure: Departure, *, one_step: bool) -> str | None:
    """Why asking again cannot change what ``departure`` saw (an ``until`` then ends at once), or None. One step
    repeated asks the same question each time; a sequence may ask another (a new offset), but not of a target that
    left a request unanswered for the step's whole time."""
    return departure.final if departure.final and (one_step or departure.hangs) else None


# ------------------------------------------------------------------------------ an item's outcome
def judge(case: Case, version: int | None, departure: Departure) -> Judged:
    """The outcome of an item whose steps raised ``departure``."""
    where = step(departure) or StepRef("", "")
    blamed = role(departure)
    # what has no verdict: a case with no API under test (a robustness case about the connection) is the case
    judged = judged_name(case, version)
    if departure.root_cause and (departure.api, departure.version) == (case.api, version):
        # the fault of the very API version under test, met by a step preparing it (or a control sent at that
        # version): that version's finding, whichever step met it
        blamed = StepRole.UNDER_TEST
    failure = StepFailure(step=where.number, step_label=where.label, expected=departure.expected,
                          actual=departure.actual, message=str(departure), role=blamed, api=departure.api)

    def ends(outcome: Outcome, message: str) -> Judged:
        return Judged(outcome, message, failure, departure.root_cause or "")

    if blamed is not StepRole.UNDER_TEST and departure.observer:
        return ends(Outcome.BLOCKED, f"the observer could not observe: {departure.observer} (its control "
                                     f"{where.label!r} departed), so the check that relies on it is no evidence and "
                                     f"there is no verdict on {judged}: {departure}")
    elsewhere = case.api is not None and departure.api not in (None, case.api)  # a case about the connection
    if departure.root_cause and (blamed is not StepRole.UNDER_TEST or elsewhere):  # judges every request
        # one fault of another API version (met in set-up, a check, or by the step under test before it could
        # send: an id the broker never gave): that is where it is reported, once, for every item it touches
        return ends(Outcome.BLOCKED, f"blocked by a root cause on another request: {departure.root_cause} (its "
                                     f"{blamed.word} step {where.label!r}), so there is no verdict on {judged}: "
                                     f"{departure}")
    if blamed is StepRole.UNDER_TEST:
        # An IMPLEMENTATION case describes Apache Kafka, not a KIP: departing from it is information.
        differs = case.requirement is Requirement.IMPLEMENTATION
        return ends(Outcome.DIFFERS if differs else Outcome.FAILED, str(departure))
    if blamed is StepRole.SETUP and (departure.api, departure.version) == (case.api, version):
        # the same API, but a step before the one judged (policy.preparing_steps)
        return ends(Outcome.BLOCKED, f"the preparing step {where.label!r} ({case.api}, not the step under test: a "
                                     f"later {case.api} step is judged on what it sets up) departed, so there is no "
                                     f"verdict on {judged}: {departure}")
    return ends(Outcome.BLOCKED, f"a {blamed.word} step on {departure.api or 'another step kind'} departed, so there "
                                 f"is no verdict on {judged}: {departure}")


def ended_by(case: Case, version: int | None, error: Exception, *, tested: bool) -> Judged:
    """The outcome of an item its steps or set-up ended by raising ``error`` (``tested``: its step under test had
    run and been checked). Only a departure of the step under test fails it; what the target lacks makes it
    unsupported or skipped, naming it; what the harness's own requests met blocks it, naming them; what no request
    explains (the target unreachable, a harness bug) is an error."""
    if isinstance(error, Departure):
        return judge(case, version, error)
    if isinstance(error, (Skip, TooFewBrokers, UnknownSetting)):
        return Judged(Outcome.SKIPPED, str(error))
    if isinstance(error, Incomplete):
        return Judged(Outcome.ERROR, f"incomplete: {error}")
    if isinstance(error, ControlFailed):  # the user's command to stop or start a node: no verdict, naming it
        return Judged(Outcome.BLOCKED, f"no verdict: a node could not be controlled: {error}")
    if isinstance(error, CannotCreateTopics):  # something the target lacks or refuses, named: no harness error
        return Judged(Outcome.UNSUPPORTED if error.unsupported else Outcome.BLOCKED,
                      f"{error}, so there is no verdict on this case")
    if isinstance(error, (ClusterError, ClientError)):
        return harness_request(case, version, error, tested) or Judged(Outcome.ERROR, f"infrastructure: {error}")
    return Judged(Outcome.ERROR, f"harness: {type(error).__name__}: {error}\n{traceback.format_exc(limit=4)}")


def harness_request(case: Case, version: int | None, error: Exception, tested: bool) -> Judged | None:
    """The outcome where a request the harness sent for itself departed (``error``, the client's, holds its
    exchange): set-up, or a check once the step under test ran, on that API and version, so the item is blocked
    naming them. An API the harness needs and the target lacks makes it unsupported, naming the API. None where
    no request went out (the target could not be reached): that is the infrastructure's, and the liveness check
    says whether the target is down."""
    blamed = StepRole.CHECK if tested else StepRole.SETUP
    exchange = getattr(error, "exchange", None)
    lacking = getattr(error, "lacking", None)
    first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
    if exchange is None and lacking is None:
        return None
    if exchange is None:
        return Judged(Outcome.UNSUPPORTED, f"the harness needs {lacking} for its own {blamed.word} requests and "
                                           f"{first_line}, so there is no verdict on {judged_name(case, version)}")
    request = f"{exchange.api} v{exchange.version}"
    purpose = f" ({exchange.step})" if exchange.step not in (None, "", "setup") else ""  # routing, reading settings
    failure = StepFailure(step=0, step_label=exchange.step or "", expected="an answer the harness can go on with",
                          actual=first_line, message=first_line, role=blamed, api=exchange.api)
    return Judged(Outcome.BLOCKED, f"the harness's own {blamed.word} request {request}{purpose} departed, so there is "
                                   f"no verdict on {judged_name(case, version)}: {first_line}", failure)


def ran_to_end(case: Case, version: int | None, progress: Progress) -> Judged:
    """The outcome of an item whose steps all ran without departing: a pass only where it proved something."""
    why = unproven(case, version, progress)
    return Judged(Outcome.ERROR, why) if why else Judged(Outcome.PASSED, "")


def unproven(case: Case, version: int | None, progress: Progress) -> str:
    """Why an item that ran to its end proves nothing ('' when it proves something): its step under test never
    reported an expectation that held (:meth:`~.context.Context.checked`), or, in a case about no one API, no
    step did. Such an item ends in ERROR, never a pass."""
    if case.api is None:
        return "" if progress.checked else "no step checked an expectation"
    if progress.tested:
        return ""
    why = "; ".join(progress.left_out) or "no step sends it with an expectation"
    return f"the step under test never ran: {case.api} v{version} was not sent and checked ({why})"


def crashed(case: Case, failure: StepFailure | None, problem: str, then: str, transcript) -> tuple[Outcome, str]:
    """The outcome of an item alone on the target when it stopped answering, and why: a set-up or check request
    that took it down blocks the item (the crash is that request's API's finding, named with the bytes that
    replay it); otherwise the item took it down and fails, whatever its steps saw and whatever its requirement
    level: a crash is never a pass (nor information, for an IMPLEMENTATION case)."""
    if failure is not None and failure.role != StepRole.UNDER_TEST:
        # the mock's abort on a set-up ConsumerGroupHeartbeat was once failed on TxnOffsetCommit
        return Outcome.BLOCKED, (f"{STOPPED_ANSWERING}: its {StepRole(failure.role).word} request took the target "
                                 f"down ({problem}){then}: the crash is {failure.api or 'that request'}'s finding, so "
                                 f"there is no verdict on {judged_name(case, None, versionless=True)}; "
                                 f"{replayable(transcript)}")
    return Outcome.FAILED, f"{STOPPED_ANSWERING}: it took the target down ({problem}){then}; {replayable(transcript)}"


def judged_name(case: Case, version: int | None, *, versionless: bool = False) -> str:
    """What an item without a verdict has none on: the API and version under test, or the case itself where it
    is about no one API (a robustness case about the connection)."""
    if not case.api:
        return f"this case ({case.id})"
    return case.api if versionless else f"{case.api} v{version}"
