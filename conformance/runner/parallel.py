"""Run many case × version items against one target concurrently.

Every item has its own connections and uniquely named topics, transactional ids and groups, so
items do not see each other; cases marked ``serial`` (broker restarts, expiry waits that count on
quiet housekeeping) run alone: after the others, or beside them on a twin of the target. Those marked
``serial: restart`` run together and share their restarts (:mod:`.shared_restart`), on the twin or, without
one, on the target once the others are done.

A crash must cost one item, never the run. Items that send what a broker may not survive (``Case.hazardous``:
malformed frames, raw bytes, expected disconnects) run after every other item of the target, one at a time,
so a crash there is attributed at once and takes no other verdict with it. Should the target stop answering
while items ran beside each other, and the harness bring it back, the items whose verdicts the crash spoiled
run again: those whose last request got no answer (the suspects) at once and alone (:class:`Gate`: no item starts
until they are done, and they start once every item under way is), so the one that takes the target down fails
for it and its request becomes a known hazard (:mod:`.learned`); the others at once, beside the rest, as if they
had just started (a second crash under one of them: alone, once the others are done). An item about to send a
known hazard while others run stops before it and runs alone once the others are done, so each crash of a
kind after the first costs its own item only, and the run stays parallel.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from contextlib import contextmanager
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Callable, Literal

from ..suite.model import Case, CaseResult
from ..targets.base import Capability, ControlFailed
from .pacing import Slots, lending
from .learned import KnownHazard
from .runner import RerunAlone, Runner
from .shared_fault import Regroup, SharedFault, shares_faults
from .shared_restart import SharedRestart
from .walk_ahead import WalkAhead, eligible

log = logging.getLogger(__name__)
# An item mostly waits on the broker (a round trip), so more items than cores work at once.
DEFAULT_JOBS = min(16, 4 * (os.cpu_count() or 1))
# Items asleep on a timer lend their place (pacing.pause): up to this many times ``workers`` are under way.
UNDER_WAY_PER_WORKER = 4
# A crash suspect's request unanswered this long when the target was seen down was held by the broker (Suspect.turn).
HELD_S = 0.5
HELD_LAST = 1e10  # added to a held request's send time (seconds since the epoch): after every request not held


class Gate:
    """Lets concurrent items start while no item runs alone, and an item run alone once none is under way."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._open = True
        self._inside = 0  # items admitted and not yet done (asleep on a timer included: they are under way)
        self._holding = False  # an item runs alone
        self._queue: list[tuple[float, int]] = []  # those waiting to, in the order they go
        self._turns = itertools.count()
        self._waiting = 0  # items waiting to run alone, or running alone

    @contextmanager
    def beside_others(self):
        with self._condition:
            self._condition.wait_for(lambda: self._open)
            self._inside += 1
        try:
            yield
        finally:
            with self._condition:
                self._inside -= 1
                self._condition.notify_all()

    @contextmanager
    def alone(self, first: float = 0.0):
        """From a thread not admitted (:meth:`beside_others` left): no item starts from now on until every item
        waiting to run alone has (one drain for a crash's suspects, not one each); lowest ``first`` first."""
        self.take_alone(first=first)
        try:
            yield
        finally:
            self.give_alone()

    def take_alone(self, admitted: bool = False, first: float = 0.0) -> None:
        """Returns once no other admitted item is under way and no waiter with a lower ``first`` waits; no item
        starts until :meth:`give_alone`. ``admitted``: from within :meth:`beside_others` (the item waits in place,
        not counted meanwhile)."""
        with self._condition:
            self._open = False
            self._waiting += 1
            if admitted:
                self._inside -= 1
                self._condition.notify_all()
            turn = (first, next(self._turns))
            heapq.heappush(self._queue, turn)
            self._condition.wait_for(lambda: not self._holding and self._inside == 0 and self._queue[0] == turn)
            heapq.heappop(self._queue)
            self._holding = True
            if admitted:
                self._inside += 1

    def give_alone(self) -> None:
        with self._condition:
            self._holding = False
            self._waiting -= 1
            if not self._waiting:
                self._open = True
            self._condition.notify_all()


def items_of(runner: Runner, cases: list[Case]) -> list[tuple[Case, int | None]]:
    return [(case, version) for case in cases for version in runner.case_versions(case)]


def waits_on_the_broker_first(item: tuple[Case, int | None]) -> bool:
    """Sort key: cases that wait on a broker's timer (they require its settings: a transaction timeout,
    an expiry) before the others. They are a run's longest items; started first, they end while the
    short ones run instead of after them."""
    return not item[0].requires_config


def run_items(runner: Runner, items: list[tuple[Case, int | None]], workers: int = 4,
              twin: Callable[[], tuple[Runner, Callable[[], None]]] | None = None) -> list[CaseResult]:
    """Results in the order of ``items``, ``workers`` at a time and the serial ones after the others (on ``twin``
    beside them, given one: see :class:`RunAhead`)."""
    ahead = RunAhead(runner, items, workers, twin=twin)
    try:
        return [ahead.result(case, version) for case, version in items]
    finally:
        ahead.close()


class RunAhead:
    """The items of one target, run ``workers`` at a time ahead of the order they are reported in.

    pytest reports items one after another; this runs the independent ones concurrently from the first
    call on, so each item's report waits only for its own result, and a run takes about as long as its
    longest items rather than the sum of its waits. ``workers`` items work at once; an item asleep on a
    timer lends its place meanwhile (:mod:`.pacing`). ``serial`` items (broker restarts, waits that count on a
    quiet broker) run one at a time: given ``twin`` (which starts another target of the same spec and
    returns its runner and how to stop it), on that twin from the start, beside the others, those that
    share restarts first and together; without one, or if it cannot start, on the target itself once every
    concurrent item has finished, as in a serial run (those that share restarts together there). Then, on the
    target, alone and one at a time: the items a crash left without a verdict, and last the hazardous ones (see
    the module). Items never asked for (the run stopped) are cancelled by :meth:`close`.
    """

    def __init__(self, runner: Runner, items: list[tuple[Case, int | None]], workers: int,
                 twin: Callable[[], tuple[Runner, Callable[[], None]]] | None = None):
        self.runner = runner
        self._slots = Slots(workers)
        self._gate = Gate()
        self._holding = threading.local()  # alone: this thread's item has the target to itself (_alone_in_place)
        self._explained: set[int] = set()  # the crashes a suspect run alone was shown to cause
        self._pool = ThreadPoolExecutor(max_workers=workers * UNDER_WAY_PER_WORKER, thread_name_prefix="case")
        self._futures: dict[tuple[int, int | None], Future] = {}
        self._concurrent: list[Future] = []
        self._lock = threading.Lock()  # held by every item that runs alone on the target
        self._alone: ThreadPoolExecutor | None = None
        self._twin: tuple[Runner, Callable[[], None]] | Literal[False] | None = None  # False: it could not start
        self._twin_known = threading.Event()  # set once the twin started or could not
        self._spoiled: list[tuple[Case, int | None, Future]] = []  # items to run again alone after a crash
        self._spoiled_lock = threading.Lock()
        self._walks: WalkAhead | None = None  # producers walked ahead of the serial items (walk_ahead.py)
        api = next((case.api for case, _ in items if case.api is not None), None)
        if api is not None:  # the version probe, before threads share it
            try:
                runner.advertised(api)
            except Exception:  # noqa: BLE001 - each item meets the same problem and reports it, as when serial
                pass
        for case, version in sorted(items, key=waits_on_the_broker_first):
            if not case.serial and not case.hazardous:
                self._futures[(id(case), version)] = self._pool.submit(self._concurrent_item, case, version,
                                                                       self._slots.ticket())
        self._concurrent = list(self._futures.values())
        serial = [(case, version) for case, version in items if case.serial]
        # On the target after every concurrent item, one at a time and in this order: the spoiled items, the
        # serial ones without a twin (on its thread: _alone_on_target), then the hazardous ones.
        self._after = ThreadPoolExecutor(max_workers=1, thread_name_prefix="after")
        self._after.submit(self._rerun_spoiled)
        self._together: list[Future] = []  # the results of the items that share restarts, once they run
        self._serial: list[Future] = []
        if twin is not None and serial:
            self._alone = ThreadPoolExecutor(max_workers=1, thread_name_prefix="alone")
            together = [(case, version) for case, version in serial if case.shares_restart]
            if together:
                self._together = [Future() for _ in together]
                self._futures.update(((id(case), version), future)
                                     for (case, version), future in zip(together, self._together))
                self._alone.submit(self._run_together, twin, together)
            for case, version in serial:
                if not case.shares_restart:
                    self._futures[(id(case), version)] = self._alone.submit(self._run_alone, twin, case, version)
            self._serial = [self._futures[(id(case), version)] for case, version in serial]
            self._alone.submit(self._retire_twin)  # as soon as the last serial item is done, not at the run's end
            self._after.submit(self._after_serial_on_target)
        else:
            self._twin_known.set()
            grouped = self._sharing_faults(serial)
            self._walk_ahead([item for group in grouped.values() for item in group])
            together = [(case, version) for case, version in serial if case.shares_restart]
            if together:
                restarting: list[Future] = [Future() for _ in together]
                self._futures.update(((id(case), version), future)
                                     for (case, version), future in zip(together, restarting))
                self._after.submit(self._restarting_together_on_target, together, restarting)
                serial = [(case, version) for case, version in serial if not case.shares_restart]
            for case, version in serial:
                group = grouped.get(id(case))
                if group is None:
                    self._futures[(id(case), version)] = self._after.submit(self._alone_on_target, case, version)
                elif (case, version) == group[0]:  # the group runs where its first item would have
                    futures: list[Future] = [Future() for _ in group]
                    self._futures.update(((id(one), each), future) for (one, each), future in zip(group, futures))
                    self._after.submit(self._together_on_target, group, futures)
        for case, version in items:
            if case.hazardous and not case.serial:
                self._futures[(id(case), version)] = self._after.submit(self._alone_on_target, case, version)

    def result(self, case: Case, version: int | None) -> CaseResult:
        future = self._futures.get((id(case), version))
        if future is None:  # not among the items handed in: alone, after everything concurrent
            return self._alone_on_target(case, version)
        found = future.result()
        return found.result() if isinstance(found, Future) else found  # a spoiled item: its run alone

    def _concurrent_item(self, case: Case, version: int | None, ticket: int) -> CaseResult | Future:
        """A concurrent item's result. A suspect of a crash beside it runs again alone at once, unless another
        suspect of the same crash took the target down alone meanwhile (one crash, one culprit: it runs beside the
        others again, and alone should a crash spoil it again) or its last request is a known hazard (see the
        module)."""
        for again in range(2):
            with self._gate.beside_others():
                found = self._slots.run(self._beside_others, case, version, ticket=ticket)
            if not isinstance(found, Suspect):
                return found
            begin = time.monotonic()
            with self._gate.alone(first=found.turn), self._lock:
                if found.hazard is not None and self.runner.learned.hazard(*found.hazard) is not None:
                    log.info("%s v%s: a suspect of a crash whose last request is a known hazard: alone after the "
                             "others", case.full_id, version)
                    return self._later_alone(case, version)
                if found.crash not in self._explained or again:
                    log.info("%s v%s: a suspect of a crash, alone after %.1f s of waiting for the items under way",
                             case.full_id, version, time.monotonic() - begin)
                    crashes = self.runner.crashes
                    result = self.runner.run(case, version)
                    if self.runner.crashes != crashes:
                        self._explained.add(found.crash)
                    return result
            log.info("%s v%s: a suspect of a crash another item was shown to cause: beside the others again",
                     case.full_id, version)
        raise AssertionError("unreachable: the second round runs the item alone")

    def _beside_others(self, case: Case, version: int | None) -> CaseResult | Future | Suspect:
        """A concurrent item's result; :class:`Suspect` where a crash beside it left it without one and it may be
        the one that did it; where it is not, its result run again beside the others, or after a second crash
        under it (or before a known hazard), the future of its run alone once they are done (:meth:`_rerun_spoiled`)."""
        for _attempt in range(2):
            try:
                return self.runner.run(case, version, rerun_alone=True, alone=self._alone_in_place)
            except RerunAlone as spoiled:
                if spoiled.suspect:
                    return Suspect(spoiled.last, spoiled.crash, spoiled.sent_at, spoiled.seen_down_at)
            except KnownHazard as hazard:
                if hazard.again:
                    continue
                log.info("%s v%s: stops before %s, runs alone after the others", case.full_id, version, hazard)
                break
            finally:  # judged: the others may start again
                if getattr(self._holding, "alone", False):
                    self._holding.alone = False
                    self._gate.give_alone()
        return self._later_alone(case, version)

    def _alone_in_place(self) -> None:
        """On an item's thread, before a known hazard: waits (its place lent) until no other item is under way;
        no item starts until it is done (:meth:`_concurrent_item` lets them)."""
        begin = time.monotonic()
        with lending():
            self._gate.take_alone(admitted=True, first=time.time())
        self._holding.alone = True
        log.info("waited %.1f s to send a known hazard alone", time.monotonic() - begin)

    def _later_alone(self, case: Case, version: int | None) -> Future:
        """The future of the item's run alone, once every concurrent item is done (:meth:`_rerun_spoiled`)."""
        later: Future = Future()
        with self._spoiled_lock:
            self._spoiled.append((case, version, later))
        return later

    def _alone_on_target(self, case: Case, version: int | None) -> CaseResult:
        wait(self._concurrent)
        with self._lock:
            if case.serial:
                self._clear_for_serial()
            return self.runner.run(case, version)

    def _clear_for_serial(self) -> None:
        """On the target, before serial items run there (nothing else runs on it then): the topics of the items done
        so far are deleted, as at the run's end. A serial item stops, kills or restarts brokers, and a broker that
        comes back loads and replicates again every partition it holds: on a cluster, hundreds left by the others."""
        self.runner.delete_finished_topics(until_gone=True)

    def _walk_ahead(self, items: list[tuple[Case, int | None]]) -> None:
        """The walks to the end of the epoch space that ``items`` (serial, sharing faults) will ask for, started now,
        beside whatever runs before them (:mod:`.walk_ahead`)."""
        if any(eligible(step) for case, _ in items for step in case.steps):
            self._walks = WalkAhead(self.runner.target, items, run_id=self.runner.run_id, timeout=self.runner.timeout)
            self.runner.walked_ahead = self._walks.start()

    def _sharing_faults(self, serial: list[tuple[Case, int | None]]) -> dict[int, list[tuple[Case, int | None]]]:
        """The serial items of a cluster whose versions share their faults (:mod:`.shared_fault`), by case."""
        if Capability.NODES not in self.runner.target.capabilities:
            return {}
        by_case: dict[int, list[tuple[Case, int | None]]] = {}
        for case, version in serial:
            if shares_faults(case):
                by_case.setdefault(id(case), []).append((case, version))
        return {key: items for key, items in by_case.items() if len(items) > 1}

    def _together_on_target(self, items: list[tuple[Case, int | None]], futures: list[Future]) -> None:
        """The versions of one case sharing their faults, alone on the target once every concurrent item has ended:
        round after round, those whose fault was another action than the round's again (:mod:`.shared_fault`),
        the target made whole after each round."""
        wait(self._concurrent)
        pending = list(zip(items, futures))
        with self._lock:
            self._clear_for_serial()
            while pending:
                if len(pending) == 1:  # alone: as any serial item (the runner heals after it)
                    (case, version), future = pending[0]
                    _settle(future, self.runner.run, case, version)
                    return
                shared = SharedFault(self.runner.target, len(pending))
                again: list[tuple[tuple[Case, int | None], Future]] = []
                done: list[tuple[Future, CaseResult]] = []

                def run(item, future, shared=shared, again=again, done=done):
                    try:
                        done.append((future, self.runner.run(*item, shared_fault=shared)))
                    except Regroup:
                        again.append((item, future))
                    except BaseException as error:  # noqa: BLE001 - the item's reporter raises it
                        future.set_exception(error)
                    finally:
                        shared.leave()

                with ThreadPoolExecutor(max_workers=len(pending), thread_name_prefix="sharing") as pool:
                    for item, future in pending:
                        pool.submit(run, item, future)
                problem = self._heal()
                log.info("%s: %d items went past %d fault steps with %d faults made; %d run again",
                         items[0][0].full_id, len(done), shared.asked, shared.actions, len(again))
                for future, result in done:
                    if problem:
                        result.message = (f"{result.message}\n" if result.message else "") + problem
                    future.set_result(result)
                if len(again) == len(pending):  # no round leaves none behind; should one, they run alone
                    for (case, version), future in again:
                        _settle(future, self.runner.run, case, version)
                    return
                pending = again

    def _heal(self) -> str:
        """The target made whole after a round of items sharing faults; what went wrong, said in their results."""
        try:
            self.runner.target.heal()
        except ControlFailed as failed:  # these verdicts stand; the next case that needs the nodes retries
            return f"the cluster was not made whole after the case: {failed}"
        return ""

    def _rerun_spoiled(self) -> None:
        """Once every concurrent item has ended: those a crash spoiled, one at a time. Alone, the one that
        takes the target down is the one that stopped it answering (:meth:`Runner.run` fails it)."""
        wait(self._concurrent)
        with self._spoiled_lock:
            spoiled = list(self._spoiled)
        for case, version, later in spoiled:
            with self._lock:
                _settle(later, self.runner.run, case, version)

    def _after_serial_on_target(self) -> None:
        """Before the hazardous items: the serial ones, where the twin could not start and they run on the target."""
        self._twin_known.wait()
        if self._twin is False:
            wait(self._serial)

    def _on_twin(self, twin) -> Runner | None:
        """On the one thread for serial items: the twin's runner, started by the first of them; None
        where it cannot start (then they run as in a serial run, after every concurrent item)."""
        if self._twin is None:
            try:
                self._twin = twin()
            except Exception as error:  # noqa: BLE001 - without a twin they run as a serial run would
                log.warning("no second %s for the serial items (%s): they run after the others", self.runner.target.spec,
                            error)
                self._twin = False
            finally:
                self._twin_known.set()
        if self._twin is False:
            wait(self._concurrent)
            return None
        return self._twin[0]

    def _run_alone(self, twin, case: Case, version: int | None) -> CaseResult:
        runner = self._on_twin(twin)
        if runner is not None:
            return runner.run(case, version)
        with self._lock:
            self._clear_for_serial()
            return self.runner.run(case, version)

    def _run_together(self, twin, items: list[tuple[Case, int | None]]) -> None:
        """The items that share restarts, at once on the twin (on the target after the others without one)."""
        runner = self._on_twin(twin)
        if runner is None:
            self._restarting_together_on_target(items, self._together)
        else:
            _share_restarts(runner, items, self._together)

    def _restarting_together_on_target(self, items: list[tuple[Case, int | None]], futures: list[Future]) -> None:
        """The items that share restarts, at once on the target once every concurrent item has ended, and alone
        there: one restart for all of them, as on a twin."""
        wait(self._concurrent)
        with self._lock:
            self._clear_for_serial()
            if Capability.RESTART in self.runner.target.capabilities:
                _share_restarts(self.runner, items, futures)
            else:  # each item meets what its restart step meets on such a target, as in a serial run
                for (case, version), future in zip(items, futures):
                    _settle(future, self.runner.run, case, version)

    def _retire_twin(self) -> None:
        """On the serial items' thread after the last of them, or from :meth:`close` once that thread is done."""
        if self._twin:
            twin_runner, stop = self._twin
            self._twin = None
            twin_runner.close(keep_topics=True)  # the twin goes with them
            stop()

    def close(self) -> None:
        if self._walks is not None:
            self._walks.close()
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._alone is not None:
            self._alone.shutdown(wait=True, cancel_futures=True)
        self._twin_known.set()  # the twin's thread is done: nothing waits for it any more
        for future in self._together:  # never started: the run stopped first
            future.cancel()
        self._after.shutdown(wait=True, cancel_futures=True)
        with self._spoiled_lock:
            for _, _, later in self._spoiled:
                later.cancel()  # never run again: the run stopped first
        self._retire_twin()


class Suspect:
    """From _beside_others: the item runs again alone, at once; ``hazard``: its last request (api, version);
    ``crash``: which of the target's crashes it is a suspect of; ``sent_at``: when its last request went out (the
    suspect whose request went out first runs alone first: requests sent before the one that took the target down
    were answered, those after it were in flight with it, so that one is the oldest unanswered, unless the broker
    held another for longer); ``seen_down_at``: when the target was seen down (a request unanswered for longer than
    :data:`HELD_S` by then was held, see :attr:`turn`)."""

    def __init__(self, hazard: tuple[str, int] | None, crash: int, sent_at: float, seen_down_at: float = 0.0):
        self.hazard, self.crash, self.sent_at, self.seen_down_at = hazard, crash, sent_at, seen_down_at

    @property
    def turn(self) -> float:
        """Its place among the suspects run alone: oldest request first, but a request the broker had held longer
        than :data:`HELD_S` when it went down after every request it had not (a request that takes a broker down
        does so as it is read). librdkafka's mock holds a group's first JoinGroup 3 s and a rebalance's 29 s: the
        oldest unanswered request at most of its crashes, that item ran alone first, 32 s with no other item under
        way, and only then the one that crashed it."""
        held = self.seen_down_at - self.sent_at > HELD_S
        return self.sent_at + (HELD_LAST if held else 0.0)


def _share_restarts(runner: Runner, items: list[tuple[Case, int | None]], futures: list[Future]) -> None:
    """``items`` all at once on ``runner``'s target, sharing its restarts (:mod:`.shared_restart`): a thread each,
    since one waiting at its restart step holds its thread until every other item gets there."""
    shared = SharedRestart(runner.target.restart, len(items))

    def run(case: Case, version: int | None, future: Future) -> None:
        try:
            _settle(future, runner.run, case, version, shared)
        finally:
            shared.leave()

    with ThreadPoolExecutor(max_workers=len(items), thread_name_prefix="together") as pool:
        for (case, version), future in zip(items, futures):
            pool.submit(run, case, version, future)


def _settle(future: Future, work: Callable, *arguments) -> None:
    """Gives ``future`` what ``work(*arguments)`` returns or raises."""
    try:
        future.set_result(work(*arguments))
    except BaseException as error:  # noqa: BLE001 - the item's reporter raises it, as from an executor's future
        future.set_exception(error)
