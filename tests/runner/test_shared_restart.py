"""SharedRestart: the items of a group share broker restarts; the broker restarts only once every item
under way waits at a restart step (or has ended), so none is between its own steps when it does."""

from __future__ import annotations

import threading
import time

import pytest

from conformance.runner.shared_restart import SharedRestart


class Broker:
    """Notes each restart's span; ``fails`` makes restarts raise."""

    def __init__(self, fails: bool = False, restart_s: float = 0.05):
        self.spans: list[tuple[float, float]] = []
        self.fails, self.restart_s = fails, restart_s

    def restart(self):
        began = time.monotonic()
        time.sleep(self.restart_s)
        self.spans.append((began, time.monotonic()))
        if self.fails:
            raise RuntimeError("the broker did not come back")


def item(shared: SharedRestart, steps: list, log: list, name: str) -> threading.Thread:
    """A thread running ``steps`` as a member: a number is seconds of work, "restart" a restart step."""
    def run():
        try:
            for step in steps:
                began = time.monotonic()
                if step == "restart":
                    try:
                        shared.restart()
                    except RuntimeError as error:
                        log.append((name, "raised", str(error)))
                        return
                else:
                    time.sleep(step)
                log.append((name, step, began, time.monotonic()))
        finally:
            shared.leave()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def work_spans(log: list) -> list[tuple[float, float]]:
    return [(entry[2], entry[3]) for entry in log if entry[1] != "restart" and entry[1] != "raised"]


def test_items_at_their_restart_step_share_one_restart_that_falls_between_their_steps():
    broker, log = Broker(), []
    shared = SharedRestart(broker.restart, 3)
    threads = [item(shared, [pause, "restart", 0.02], log, f"i{n}") for n, pause in enumerate((0.01, 0.1, 0.2))]
    for thread in threads:
        thread.join(5)
    assert len(broker.spans) == 1 and shared.restarts == 1
    (began, ended), = broker.spans
    assert all(end <= began or start >= ended for start, end in work_spans(log))  # no step overlaps it
    assert sum(entry[1] == "restart" for entry in log) == 3  # every item's restart step returned


def test_an_item_still_at_work_holds_the_restart_back_and_one_that_ends_without_restarting_does_not():
    broker, log = Broker(), []
    shared = SharedRestart(broker.restart, 2)
    early = item(shared, [0.01, "restart"], log, "early")
    busy = item(shared, [0.3], log, "busy")  # ends without a restart step (a case that failed before it)
    early.join(5)
    busy.join(5)
    (began, _), = broker.spans
    busy_end = next(entry[3] for entry in log if entry[0] == "busy")
    assert began >= busy_end  # the restart waited for it to end, then served the one waiting


def test_a_case_with_two_restarts_gets_two_rounds():
    broker, log = Broker(), []
    shared = SharedRestart(broker.restart, 2)
    threads = [item(shared, ["restart", 0.02, "restart"], log, f"i{n}") for n in range(2)]
    for thread in threads:
        thread.join(5)
    assert shared.restarts == 2 and len(broker.spans) == 2


def test_a_failed_restart_reaches_every_item_waiting_for_it():
    broker, log = Broker(fails=True), []
    shared = SharedRestart(broker.restart, 3)
    threads = [item(shared, [0.01 * n, "restart", 0.01], log, f"i{n}") for n in range(3)]
    for thread in threads:
        thread.join(5)
    assert len(broker.spans) == 1
    assert sorted(entry[0] for entry in log if entry[1] == "raised") == ["i0", "i1", "i2"]
    assert all(entry[2] == "the broker did not come back" for entry in log if entry[1] == "raised")


def test_an_item_not_yet_begun_holds_the_restart_back():
    broker, log = Broker(), []
    shared = SharedRestart(broker.restart, 2)
    first = item(shared, ["restart"], log, "first")
    time.sleep(0.2)
    assert broker.spans == []  # the other member has not even begun
    second = item(shared, [0.01, "restart"], log, "second")
    first.join(5)
    second.join(5)
    assert len(broker.spans) == 1


def test_a_lone_item_restarts_at_once_and_each_round_has_its_own_outcome():
    broker = Broker()
    shared = SharedRestart(broker.restart, 1)
    shared.restart()
    assert len(broker.spans) == 1
    broker.fails = True
    with pytest.raises(RuntimeError):
        shared.restart()
    broker.fails = False
    shared.restart()
    shared.leave()
    assert len(broker.spans) == 3


@pytest.mark.kafka
@pytest.mark.broker
def test_on_kafka_the_cases_that_share_restarts_pass_with_one_restart_of_the_twin():
    """The bundled restart cases (KIP-98: a transaction open at a restart survives it, or is aborted by the
    next producer instance), all their versions at once on a twin, as ``conformance run`` runs them."""
    from pathlib import Path

    from conformance.runner.parallel import RunAhead, items_of
    from conformance.runner.runner import Runner
    from conformance.runner.steps import bundled
    from conformance.suite.loader import load_suites
    from conformance.results.record import Outcome
    from conformance.targets.kafka.broker import KafkaTarget, kafka_target_kind

    reason = kafka_target_kind().availability()
    if reason:
        pytest.skip(reason)
    suites, errors = load_suites([Path(__file__).resolve().parents[2] / "suites" / "kip98" / "faults.yaml"],
                                 components=bundled())
    assert errors == []
    cases = [case for case in suites[0].cases if case.shares_restart]
    assert len(cases) == 2
    target, twin = KafkaTarget("kafka"), KafkaTarget("kafka")
    target.start()
    try:
        runner = Runner(target, run_id="shared-restart")
        items = [item for item in items_of(runner, cases)]

        def start_twin():
            twin.start()
            return Runner(twin, run_id="shared-restart"), twin.stop

        ahead = RunAhead(runner, items, 4, twin=start_twin)
        try:
            results = [ahead.result(case, version) for case, version in items]
            twin_log = twin.logs()
        finally:
            ahead.close()
            runner.close(keep_topics=True)
    finally:
        target.stop()
    assert len(results) >= 4  # each case at every version Kafka has of its API
    assert {result.outcome for result in results} <= {Outcome.PASSED, Outcome.UNSUPPORTED}, \
        [(result.case_id, result.version, result.message) for result in results]
    assert sum(result.outcome is Outcome.PASSED for result in results) >= 4
    assert twin_log.count("Kafka Server started") == 2  # its start, and the one restart all items shared
