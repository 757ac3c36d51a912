"""What the steps of one case × version share, and the exceptions a step ends with.

A step that finds the broker departing from its expectation raises :class:`Departure`; a step that
cannot run because the target lacks something raises :class:`Skip`; a case that cannot be run to its
end raises :class:`Incomplete`. Anything else that goes wrong is a harness or infrastructure error.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..client.cluster import Cluster
from ..results.record import StepRole
from ..suite.kinds import StepRef
from ..targets.base import CapabilityMissing, Target
from .learned import ItemView
from .shared_fault import SharedFault
from .shared_restart import SharedRestart

if TYPE_CHECKING:  # verdict reads these records: it is imported where a role is asked for
    from .verdict import Passage
    from .walk_ahead import WalkAhead


class Departure(Exception):
    """The broker did not do what the step expects: a record of what happened, judged in :mod:`.verdict`.

    The raiser says what the broker did (``expected``, ``actual``, ``api`` and ``version``) and what it knows of
    that answer (the keyword facts below); facts learnt on the way out are added (the API and version by
    :class:`attributed`, the steps it left by :func:`~conformance.runner.dispatch.run_step`, one
    :class:`~.verdict.Passage` each). Whom it blames (:attr:`role`) and the step it names (:attr:`step`) are read
    from those facts by :mod:`.verdict`; nothing sets them.
    """

    def __init__(self, message: str, expected=None, actual=None, api: str | None = None, *,
                 version: int | None = None, final: str | None = None, hangs: bool = False, blind: bool = False,
                 broken_version: bool = False, root_cause: str | None = None, preparation: bool = False,
                 control: bool = False):
        super().__init__(message)
        self.expected, self.actual, self.api = expected, actual, api
        self.version = version
        self.final = final  # why waiting cannot change what was observed (an until stops at once)
        self.hangs = hangs  # no answer came in the step's time: a repeated sequence would wait as long again
        # a check that could not observe (its own request failed): no evidence, so never the step under test's
        self.blind = blind
        self.broken_version = broken_version  # a version advertised and not served (observe.served)
        # One fault of one API version that departs wherever that version is sent (an answer that does not
        # decode, a version advertised and not served): results group the items it touches by it.
        self.root_cause = root_cause
        self.preparation = preparation  # the request only prepared the case (a fast-forward): never the step under test
        self.control = control  # the well-formed control of a malformed request departed: the fault shows nothing
        # the finding a control of an observer names when it departs (dispatch.observer_departed)
        self.observer: str | None = None
        self.trail: tuple[Passage, ...] = ()  # the steps it left, innermost first

    def left(self, passage: Passage) -> None:
        """Records one more step the departure left on its way out."""
        self.trail = (*self.trail, passage)

    @property
    def role(self) -> StepRole:
        """Whom it blames (:func:`.verdict.role`)."""
        from . import verdict
        return verdict.role(self)

    @property
    def step(self) -> StepRef | None:
        """The innermost step that departed (:func:`.verdict.step`)."""
        from . import verdict
        return verdict.step(self)


class Skip(Exception):
    """The step needs something this target or version does not have."""


class Incomplete(Exception):
    """The case could not be run to its end (a branch still running at its deadline): never a pass."""


@dataclass
class Progress:
    """What a case has proven so far, shared by its parallel branches."""

    tested: bool = False  # the step under test ran at the version under test and its expectation was checked
    checked: int = 0  # expectations checked in all
    left_out: list[str] = field(default_factory=list)  # steps under test that a `when` dropped, for the diagnosis
    refused: bool = False  # the step under test's `refused: or_no_effect` was met by a refusal: no effect to judge


@dataclass
class Context:
    """Everything the steps of one case × version share."""

    cluster: Cluster
    target: Target
    version: int | None  # the version under test
    api: str | None  # the API under test
    variables: dict
    topic_ids: dict
    step_kinds: dict = field(default_factory=dict)
    matchers: dict = field(default_factory=dict)
    sequences: dict = field(default_factory=dict)  # (producer id, epoch, topic, partition) -> next sequence
    lock: threading.RLock = field(default_factory=threading.RLock)
    principals: dict = field(default_factory=dict)  # name -> Cluster connected as that principal
    progress: Progress = field(default_factory=Progress)
    acls: list = field(default_factory=list)  # the ACL bindings the case created, removed after it
    shared_restart: SharedRestart | None = None  # the group whose restarts the item shares (serial: restart)
    shared_fault: SharedFault | None = None  # the versions of its case whose faults the item shares (shared_fault)
    notes: list = field(default_factory=list)  # departures of other APIs and versions, each once (observe.note)
    # the step running now only prepares the condition a later step of the API under test is judged on
    # (policy.preparing_steps): its requests are set-up, whatever their API
    preparing: bool = False
    # observer controls (dispatch): findings that top-level checks name in ``observed_by``, the departures of the
    # controls of those findings, and the checks left out for them
    relied_on: set = field(default_factory=set)
    blind_observers: dict = field(default_factory=dict)
    unobserved: list = field(default_factory=list)
    # what the run learnt about the target before this item (learned.py): broken versions, hazardous requests
    learned: ItemView | None = None
    # transactional ids the run walked to the end of the epoch space ahead of its serial items (walk_ahead.py)
    walked_ahead: WalkAhead | None = None
    case_id: str = ""  # the case's full id (suite::case)

    def under_test(self, api: str | None, version: int | None) -> bool:
        """Whether a request of ``api`` at ``version`` is the step under test (every step, in a case
        about no one API); never in a step that only prepares a later one of the same API."""
        return self.api is None or (api == self.api and version == self.version and not self.preparing)

    def checked(self, api: str | None, version: int | None, expect: dict) -> None:
        """Reports an expectation that held. Every step kind that checks an answer reports each one here: an item
        whose step under test reported none has no verdict (:func:`.verdict.unproven`), whatever else it saw."""
        if expect:
            with self.lock:
                self.progress.checked += 1
                if self.under_test(api, version):
                    self.progress.tested = True

    def restart_target(self) -> None:
        """A restart step: the broker restarts once every item sharing its restarts is at one, or at once."""
        if self.shared_restart is not None:
            self.shared_restart.restart()
        else:
            self.target.restart()

    def cluster_as(self, principal: str | None) -> Cluster:
        """The harness's own connections, or connections authenticated as one of the target's principals."""
        if principal is None:
            return self.cluster
        with self.lock:
            if principal not in self.principals:
                try:
                    bootstrap, security = self.target.principal(principal)
                except CapabilityMissing as missing:
                    raise Skip(str(missing)) from None
                cluster = Cluster(bootstrap, self.cluster.codec, self.cluster.transcript,
                                  client_id=self.cluster.client_id, timeout=self.cluster.timeout, security=security)
                cluster.api_versions()
                cluster.metadata([])  # the brokers' addresses on the principal's listener
                self.principals[principal] = cluster
            return self.principals[principal]

    def close(self) -> None:
        """Closes the principals' connections; the harness's own belong to whoever made the context."""
        for cluster in self.principals.values():
            cluster.close()
        self.principals.clear()

    def branch(self) -> "Context":
        """A context for a parallel branch: its own connections, the same transcript and variables."""
        cluster = Cluster(self.cluster.bootstrap, self.cluster.codec, self.cluster.transcript,
                          client_id=self.cluster.client_id, timeout=self.cluster.timeout,
                          security=self.cluster.security)
        cluster.supported, cluster.brokers = self.cluster.supported, dict(self.cluster.brokers)
        cluster.finalized_features = self.cluster.finalized_features
        return Context(cluster, self.target, self.version, self.api, self.variables, self.topic_ids,
                       self.step_kinds, self.matchers, self.sequences, self.lock, progress=self.progress,
                       acls=self.acls, shared_restart=self.shared_restart, notes=self.notes,
                       relied_on=self.relied_on, blind_observers=self.blind_observers, unobserved=self.unobserved,
                       learned=self.learned)


class attributed:
    """Stamps a Departure raised inside with the API and version of the request that departed."""

    def __init__(self, api: str, version: int):
        self.api, self.version = api, version

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if isinstance(error, Departure) and error.api is None:
            error.api, error.version = self.api, self.version
        return False
