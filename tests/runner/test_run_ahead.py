"""RunAhead: a target's items run several at a time ahead of their reports; serial items run alone, on a
twin of the target beside the others where one can be started, else after every concurrent item."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from conformance.runner.parallel import RunAhead
from conformance.targets.base import Capability


class Recorder:
    """A runner that notes which target ran each item, and when it began and ended."""

    def __init__(self, name: str, log: list, pause_s: float = 0.05):
        self.name, self.log, self.pause_s = name, log, pause_s
        self.target = SimpleNamespace(spec="fake", capabilities=frozenset())
        self.closed = False
        self.deleted: list[float] = []  # when the topics of the items done so far were deleted

    def run(self, case, version, rerun_alone=False, alone=None):
        began = time.monotonic()
        time.sleep(self.pause_s)
        self.log.append((self.name, case.id, began, time.monotonic(), threading.current_thread().name))
        return f"{self.name}:{case.id}"

    def advertised(self, api):
        return None

    def delete_finished_topics(self, until_gone=False):
        self.deleted.append(time.monotonic())
        assert until_gone  # the serial items start once the broker has applied the deletion

    def close(self, keep_topics=False):
        self.closed = True
        self.kept_topics = keep_topics


def fake_case(n: int, serial: bool = False, shares_restart: bool = False, hazardous: bool = False) -> SimpleNamespace:
    return SimpleNamespace(id=f"c{n}", serial=serial or shares_restart, shares_restart=shares_restart, api=None,
                           requires_config={}, hazardous=hazardous)


def items():
    cases = [fake_case(n) for n in range(6)]
    cases[1].serial = cases[4].serial = True
    return [(case, None) for case in cases]


def test_serial_items_wait_for_every_concurrent_one_without_a_twin():
    log = []
    work = items()
    ahead = RunAhead(Recorder("main", log), work, 4)
    results = [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert results == [f"main:c{n}" for n in range(6)]  # in order, all on the target itself
    concurrent_end = max(end for _, case, _, end, _ in log if case not in ("c1", "c4"))
    serial = [(began, end) for _, case, began, end, _ in log if case in ("c1", "c4")]
    assert all(began >= concurrent_end for began, _ in serial)
    (first_began, first_end), (second_began, _) = sorted(serial)
    assert second_began >= first_end  # and one at a time


@pytest.mark.parametrize("twin", [None, lambda: (_ for _ in ()).throw(RuntimeError("no room"))],
                         ids=["no twin", "the twin cannot start"])
def test_the_topics_of_the_items_done_go_before_the_serial_items_run_on_the_target(twin):
    """A broker a serial item restarts comes back with only what is still needed; hazardous items delete nothing."""
    log = []
    runner = Recorder("main", log)
    cases = [fake_case(0), fake_case(1, serial=True), fake_case(2), fake_case(3, serial=True),
             fake_case(4, hazardous=True)]
    work = [(case, None) for case in cases]
    ahead = RunAhead(runner, work, 4, twin=twin)
    [ahead.result(case, version) for case, version in work]
    ahead.close()
    spans = {case: (began, end) for _, case, began, end, _ in log}
    assert len(runner.deleted) == 2  # before each serial item: the second deletes the first one's topics
    first, second = sorted(runner.deleted)
    assert max(spans["c0"][1], spans["c2"][1]) <= first <= min(spans["c1"][0], spans["c3"][0])
    assert second >= min(spans["c1"][1], spans["c3"][1]) and second <= max(spans["c1"][0], spans["c3"][0])


def test_a_twin_runs_the_serial_items_and_the_targets_topics_stay_until_the_end():
    log = []
    runner, twin_runner = Recorder("main", log), Recorder("twin", log)
    work = items()
    ahead = RunAhead(runner, work, 4, twin=lambda: (twin_runner, lambda: None))
    [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert runner.deleted == [] and twin_runner.deleted == []  # the twin goes with its topics


def test_serial_items_run_on_the_twin_beside_the_others_and_the_twin_is_stopped():
    log, stopped, started = [], [], []
    twin_runner = Recorder("twin", log, pause_s=0.2)

    def twin():
        started.append(True)
        return twin_runner, lambda: stopped.append(True)

    work = items()
    ahead = RunAhead(Recorder("main", log), work, 4, twin=twin)
    results = [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert results == ["main:c0", "twin:c1", "main:c2", "main:c3", "twin:c4", "main:c5"]
    assert started == [True] and stopped == [True] and twin_runner.closed and twin_runner.kept_topics
    twin_spans = sorted((began, end) for name, _, began, end, _ in log if name == "twin")
    assert twin_spans[1][0] >= twin_spans[0][1]  # one at a time on the twin
    main_spans = [(began, end) for name, _, began, end, _ in log if name == "main"]
    assert any(began < twin_spans[0][1] for began, _ in main_spans)  # at the same time as the others


def test_a_twin_that_cannot_start_leaves_the_serial_items_to_run_after_the_others(caplog):
    log = []

    def twin():
        raise RuntimeError("no room for a second broker")

    work = items()
    ahead = RunAhead(Recorder("main", log), work, 4, twin=twin)
    results = [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert results == [f"main:c{n}" for n in range(6)]
    concurrent_end = max(end for _, case, _, end, _ in log if case not in ("c1", "c4"))
    assert all(began >= concurrent_end for _, case, began, _, _ in log if case in ("c1", "c4"))
    assert "no second fake for the serial items (no room for a second broker)" in caplog.text


def test_only_a_target_the_harness_provisions_has_a_twin():
    from conformance.extension import Extensions
    from conformance.targets.pool import TargetPool

    pool = TargetPool(["rdkafka-mock", "127.0.0.1:9092", "proxy+rdkafka-mock"], Extensions.for_run().target_kinds())
    twin = pool.twin("rdkafka-mock")
    assert twin is not None and twin is not pool.target("rdkafka-mock") and twin.spec == "rdkafka-mock"
    assert pool.twin("proxy+rdkafka-mock") is not None  # the proxy keeps what its target can do
    assert pool.twin("127.0.0.1:9092") is None  # a broker the harness only attaches to


def test_cases_waiting_on_a_broker_timer_start_first_and_are_reported_in_order():
    """They are a run's longest items (an expiry, a transaction timeout): started last, they would end the run."""
    log = []
    cases = [fake_case(n) for n in range(6)]
    cases[5].requires_config = {"transactional.id.expiration.ms": {"le": 15000}}
    work = [(case, None) for case in cases]
    ahead = RunAhead(Recorder("main", log), work, 1)
    results = [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert results == [f"main:c{n}" for n in range(6)]
    assert [case for _, case, *_ in sorted(log, key=lambda entry: entry[2])] == ["c5", "c0", "c1", "c2", "c3", "c4"]


def test_the_twin_stops_once_its_last_serial_item_is_done_while_the_others_still_run():
    log, stopped = [], threading.Event()
    cases = [fake_case(n, serial=n == 0) for n in range(2)]
    main = Recorder("main", log, pause_s=2.0)  # the concurrent item outlasts the serial one by far
    ahead = RunAhead(main, [(case, None) for case in cases], 4,
                     twin=lambda: (Recorder("twin", log, pause_s=0.01), stopped.set))
    try:
        assert stopped.wait(1.8)  # before the concurrent item ends, and before close()
        assert not any(name == "main" for name, *_ in log)
    finally:
        ahead.close()
    assert [ahead.result(case, None) for case in cases] == ["twin:c0", "main:c1"]


class SlowTarget:
    """Takes ``start_s`` to start; counts stops."""

    capabilities = frozenset({"twin"})

    def __init__(self, spec: str, start_s: float = 0.3, fails: bool = False):
        self.spec, self.start_s, self.fails, self.started, self.stops = spec, start_s, fails, False, 0

    def start(self):
        time.sleep(self.start_s)
        if self.fails:
            raise RuntimeError("no room for a second broker")
        self.started = True

    def stop(self):
        self.stops += 1


def slow_kinds(made: list, fails: bool = False):
    from conformance.targets.registry import TargetKind

    def create(spec):
        made.append(SlowTarget(spec, fails=fails and bool(made)))  # the first is the target, the others twins
        return made[-1]

    return [TargetKind("slow", "slow to start", lambda spec: spec == "slow", create, lambda: None)]


def test_a_twin_starts_in_the_background_and_the_end_of_the_session_stops_it():
    from conformance.targets.pool import TargetPool

    made = []
    pool = TargetPool(["slow"], slow_kinds(made))
    began = time.monotonic()
    starting = pool.start_twin("slow")
    assert time.monotonic() - began < 0.2 and not starting.done()  # the caller goes on meanwhile
    twin = starting.result(timeout=5)
    assert twin is made[1] and twin.started and twin is not pool.target("slow")
    assert pool.stop_all() == [] and twin.stops == 1


def test_a_twin_that_cannot_start_hands_its_error_to_whoever_takes_it():
    from conformance.targets.pool import TargetPool

    made = []
    pool = TargetPool(["slow"], slow_kinds(made, fails=True))
    starting = pool.start_twin("slow")
    with pytest.raises(RuntimeError, match="no room for a second broker"):
        starting.result(timeout=5)
    assert made[1].stops == 1  # whatever it had started is gone
    assert pool.stop_all() == [] and made[1].stops == 1


class Restarting(Recorder):
    """A target whose serial items restart its broker halfway (through the group they share, when given one)."""

    def __init__(self, log: list, name: str = "twin"):
        super().__init__(name, log, pause_s=0.1)
        self.restarts = 0
        self.target = SimpleNamespace(spec="fake", restart=self._restart, capabilities=frozenset({Capability.RESTART}))

    def _restart(self):
        self.log.append(("restart", None, time.monotonic(), time.monotonic(), ""))
        self.restarts += 1

    def run(self, case, version, shared_restart=None, rerun_alone=False, alone=None):  # the steps: work, restart, work
        began = time.monotonic()
        time.sleep(self.pause_s)
        if case.serial:
            (shared_restart.restart if shared_restart is not None else self.target.restart)()
        time.sleep(self.pause_s)
        self.log.append((self.name, case.id, began, time.monotonic(), threading.current_thread().name))
        return f"{self.name}:{case.id}"


def test_items_that_share_restarts_run_together_on_the_twin_with_one_restart_then_the_serial_ones():
    log = []
    twin_runner = Restarting(log)
    cases = [fake_case(0), fake_case(1, shares_restart=True), fake_case(2, serial=True),
             fake_case(3, shares_restart=True), fake_case(4, shares_restart=True)]
    work = [(case, None) for case in cases]
    ahead = RunAhead(Recorder("main", log), work, 4, twin=lambda: (twin_runner, lambda: None))
    results = [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert results == ["main:c0", "twin:c1", "twin:c2", "twin:c3", "twin:c4"]
    assert twin_runner.restarts == 2  # one for the three that share, one for the serial item
    spans = {case: (began, end) for name, case, began, end, _ in log if name == "twin"}
    together = [spans[case] for case in ("c1", "c3", "c4")]
    assert max(began for began, _ in together) < min(end for _, end in together)  # at once
    assert spans["c2"][0] >= max(end for _, end in together)  # the serial item alone, after them


def test_without_a_twin_items_that_share_restarts_on_a_target_that_cannot_restart_run_one_at_a_time_after_the_others():
    log = []
    cases = [fake_case(0), fake_case(1, shares_restart=True), fake_case(2, shares_restart=True)]
    work = [(case, None) for case in cases]
    ahead = RunAhead(Recorder("main", log), work, 4, twin=lambda: (_ for _ in ()).throw(RuntimeError("no room")))
    results = [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert results == ["main:c0", "main:c1", "main:c2"]
    spans = {case: (began, end) for _, case, began, end, _ in log}
    assert spans["c1"][0] >= spans["c0"][1] and spans["c2"][0] >= spans["c1"][1]


@pytest.mark.parametrize("twin", [None, lambda: (_ for _ in ()).throw(RuntimeError("no room"))],
                         ids=["no twin", "the twin cannot start"])
def test_without_a_twin_items_that_share_restarts_share_one_restart_of_the_target_after_the_others(twin):
    """As on a twin: at once, one restart for them all; on the target, once every concurrent item has ended."""
    log = []
    runner = Restarting(log, name="main")
    cases = [fake_case(0), *[fake_case(n, shares_restart=True) for n in (1, 2, 3)]]
    work = [(case, None) for case in cases]
    ahead = RunAhead(runner, work, 4, twin=twin)
    results = [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert results == [f"main:c{n}" for n in range(4)] and runner.restarts == 1
    spans = {case: (began, end) for name, case, began, end, _ in log if name == "main"}
    together = [spans[case] for case in ("c1", "c2", "c3")]
    assert max(began for began, _ in together) < min(end for _, end in together)  # at once
    assert min(began for began, _ in together) >= spans["c0"][1]  # after the concurrent item


def test_hazardous_items_run_after_every_other_item_of_the_target_one_at_a_time():
    """A crash there costs no other verdict: the concurrent items and the serial ones without a twin are done."""
    log = []
    cases = [fake_case(0, hazardous=True), fake_case(1), fake_case(2, serial=True), fake_case(3, hazardous=True),
             fake_case(4), fake_case(5)]
    work = [(case, None) for case in cases]
    ahead = RunAhead(Recorder("main", log), work, 4)
    results = [ahead.result(case, version) for case, version in work]
    ahead.close()
    assert results == [f"main:c{n}" for n in range(6)]
    spans = {case: (began, end) for _, case, began, end, _ in log}
    others_end = max(end for case, (_, end) in spans.items() if case not in ("c0", "c3"))
    assert spans["c0"][0] >= others_end and spans["c3"][0] >= spans["c0"][1]  # last, in order, one at a time
