"""The targets of one run: built up front, each started the first time a case needs it, stopped at the end.

Starting is lazy so that selecting only some cases (``-k``, ``-m``) never provisions a broker no
selected case uses, and so that ``--collect-only`` starts nothing. A start is attempted once:
an unavailable target or a failed start is remembered and answered again for every later case,
instead of paying a broker's start-up timeout per case.

Inside :func:`kept_started` (``conformance flaky``: N pytest sessions in a row in one process),
pools share their targets by spec and a session's end leaves them running for the next session;
a target the session found down is stopped for real, so the next session starts it afresh.
"""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterable, Iterator

from .base import Capability, Target, TargetUnavailable
from .registry import TargetKind, resolve

LOG_TAIL_LINES = 40


class TargetStartFailed(RuntimeError):
    """The target should run here but did not start; the message is the diagnosis (with its log tail)."""


@dataclass
class _Slot:
    target: Target
    started: bool = False
    problem: Exception | None = None  # TargetUnavailable or TargetStartFailed, once a start was tried


# spec -> slot, shared by the pools made inside kept_started(); None outside one
_KEPT: ContextVar[dict[str, _Slot] | None] = ContextVar("conformance_kept_targets", default=None)


class TargetPool:
    def __init__(self, specs: Iterable[str], kinds: Iterable[TargetKind]):
        """Resolves every spec now so a typo is a usage error before anything is collected."""
        kinds = self._kinds = list(kinds)
        self._kept = _KEPT.get()
        self._twins: list[Future] = []  # started by start_twin
        self._slots = {}
        for spec in dict.fromkeys(specs):
            if self._kept is not None and spec in self._kept:
                self._slots[spec] = self._kept[spec]
                continue
            self._slots[spec] = _Slot(resolve(spec, kinds))
            if self._kept is not None:
                self._kept[spec] = self._slots[spec]

    @property
    def specs(self) -> list[str]:
        return list(self._slots)

    def target(self, spec: str) -> Target:
        """The target for ``spec``, started or not."""
        return self._slots[spec].target

    def configurable(self) -> list[Target]:
        """The targets that take the user's client config and principals (capability ``configure``: brokers
        the harness attaches to), in the order of the specs."""
        return [slot.target for slot in self._slots.values() if Capability.CONFIGURE in slot.target.capabilities]

    def acquire(self, spec: str) -> Target:
        """The started target; raises ``TargetUnavailable`` or ``TargetStartFailed`` (each time, once tried)."""
        slot = self._slots[spec]
        if slot.problem is not None:
            raise slot.problem.with_traceback(None)  # else each re-raise lengthens the stored traceback
        if not slot.started:
            try:
                slot.target.start()
            except TargetUnavailable as unavailable:
                slot.problem = unavailable
                raise
            except Exception as error:  # noqa: BLE001 - every start failure becomes a diagnosis
                slot.problem = TargetStartFailed(diagnosis(spec, slot.target, error))
                _stop_quietly(slot.target)
                raise slot.problem from error
            except BaseException:  # Ctrl-C or SIGTERM mid-start: leave no half-started broker behind
                _stop_quietly(slot.target)
                raise
            slot.started = True
        return slot.target

    def twin(self, spec: str) -> Target | None:
        """Another target of ``spec``, not started, where one can run beside the first (its ``twin``
        capability); None otherwise, for a broker the harness only attaches to (``HOST:PORT``) say."""
        if Capability.TWIN not in self._slots[spec].target.capabilities:
            return None
        return resolve(spec, self._kinds)

    def start_twin(self, spec: str) -> Future | None:
        """A :meth:`twin` of ``spec`` starting in the background from now on: a Future of the started target,
        or of what its start raised (None where the target has no twin). :meth:`stop_all` stops it, unless
        whoever took it already has."""
        twin = self.twin(spec)
        if twin is None:
            return None
        started: Future = Future()

        def start() -> None:
            try:
                twin.start()
            except BaseException as error:  # noqa: BLE001 - handed to whoever takes the twin
                _stop_quietly(twin)
                started.set_exception(error)
            else:
                started.set_result(twin)

        threading.Thread(target=start, name=f"start twin {spec}", daemon=True).start()
        self._twins.append(started)
        return started

    def discards(self, spec: str) -> bool:
        """Whether the end of this session stops the target and drops its data with it: one the harness
        provisioned (it knows its brokers), not kept for a next session (``kept_started``)."""
        slot = self._slots[spec]
        return self._kept is None and slot.target.provisioned_brokers() is not None

    def started(self) -> list[Target]:
        return [slot.target for slot in self._slots.values() if slot.started]

    def stop_all(self, *, down: Iterable[str] = ()) -> list[str]:
        """Stops every started target; returns the problems instead of raising, so all get stopped.

        Inside :func:`kept_started` only the targets named in ``down`` are stopped (and forgotten,
        so the next pool starts them again); the others stay up for the next session."""
        problems = _stop_twins(self._twins)
        if self._kept is not None:
            down = set(down)
            return problems + _stop_slots({spec: self._kept.pop(spec) for spec in self._slots
                                           if spec in down and spec in self._kept})
        return problems + _stop_slots(self._slots)


@contextmanager
def kept_started() -> Iterator[None]:
    """Pools made inside share targets by spec and leave them started between sessions; every target
    still started is stopped when the block ends (Ctrl-C and SIGTERM included)."""
    kept: dict[str, _Slot] = {}
    token = _KEPT.set(kept)
    try:
        yield
    finally:
        _KEPT.reset(token)
        for problem in _stop_slots(kept):
            warnings.warn(problem, stacklevel=1)


def _stop_twins(twins: list[Future]) -> list[str]:
    """Stop the twins started in the background (a second stop of one already stopped does nothing)."""
    problems = []
    while twins:
        started = twins.pop()
        if started.exception() is None:  # waits for a start under way
            try:
                started.result().stop()
            except Exception as error:  # noqa: BLE001
                problems.append(f"stopping a twin of {started.result().spec!r} failed: {error}")
    return problems


def _stop_slots(slots: dict[str, _Slot]) -> list[str]:
    problems = []
    for spec, slot in slots.items():
        if slot.started:
            try:
                slot.target.stop()
            except Exception as error:  # noqa: BLE001
                problems.append(f"stopping target {spec!r} failed: {error}")
            slot.started = False
    return problems


def diagnosis(spec: str, target: Target, error: Exception) -> str:
    """The start error, followed by the target's log tail unless the error already carries it."""
    text = f"target {spec!r} failed to start: {type(error).__name__}: {error}"
    try:
        log = target.logs()
    except Exception:  # noqa: BLE001 - a target that cannot even show its log still gets its error reported
        log = None
    lines = (log or "").rstrip().splitlines()[-LOG_TAIL_LINES:]
    if lines and lines[-1] not in str(error):
        text += "\nlast lines of its log:\n" + "\n".join(lines)
    return text


def _stop_quietly(target: Target) -> None:
    try:
        target.stop()
    except Exception:  # noqa: BLE001 - cleaning up after a failed start must not hide the start error
        pass
