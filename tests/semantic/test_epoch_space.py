"""--start-epoch: the tier fast-forwards every transactional id before its clients start, asks the coordinator
where each ended, and says in every check's message how many crossed the end of the epoch space; against a
scripted coordinator."""

from __future__ import annotations

import threading

from conformance.semantic.checks import CHECKS, CheckVerdict
from conformance.semantic.epoch_space import fast_forward_all, where_they_ended
from conformance.semantic.history import History
from conformance.semantic.eos_run import SemanticRun, results
from conformance.semantic.workload import Plan

from fake_kafka import FakeKafka


class Coordinator:
    """Producer ids and epochs per transactional id; ``rotated`` ids report another producer id afterwards."""

    def __init__(self, rotated: set[str]):
        self.state: dict[str, tuple[int, int]] = {}
        self.rotated = rotated
        self.lock = threading.Lock()

    def __call__(self, api, version, body):
        with self.lock:
            if api == "InitProducerId":
                transactional_id = body["transactional_id"]
                producer_id, epoch = self.state.get(transactional_id, (len(self.state) + 10, -1))
                if body["producer_id"] not in (-1, producer_id) or body["producer_epoch"] not in (-1, epoch):
                    return {"error_code": 90, "producer_id": -1, "producer_epoch": -1}
                self.state[transactional_id] = (producer_id, epoch + 1)
                return {"error_code": 0, "producer_id": producer_id, "producer_epoch": epoch + 1}
            if api == "DescribeTransactions":
                [transactional_id] = body["transactional_ids"]
                producer_id, epoch = self.state[transactional_id]
                if transactional_id in self.rotated:
                    producer_id, epoch = producer_id + 1000, 0
                return {"transaction_states": [{"error_code": 0, "transactional_id": transactional_id,
                                                "transaction_state": "CompleteCommit", "producer_id": producer_id,
                                                "producer_epoch": epoch, "topics": []}]}
            return None


def test_every_id_starts_at_the_epoch_asked_and_the_crossing_is_counted_in_every_message():
    plan = Plan("", run="r1")
    coordinator = Coordinator(rotated={plan.transactional_id("writer-0")})
    broker = FakeKafka(coordinator)
    plan.bootstrap = broker.address
    history = History()
    try:
        started = fast_forward_all(plan, ["writer-0", "processor-0"], 500, history)
        ended = where_they_ended(plan, started)
    finally:
        broker.stop()
    assert {entry["producer_epoch"] for entry in started.values()} == {500}
    assert [event.value["producer_epoch"] for event in history.events if event.kind == "epoch"] == [500, 500]
    assert {transactional_id: entry["crossed"] for transactional_id, entry in ended.items()} == {
        "semantic-writer-0-r1": True, "semantic-processor-0-r1": False}

    run = SemanticRun("fake", None, history, verdicts=[(check, CheckVerdict(checked="it")) for check in CHECKS],
                      stats={"transactions": {"committed": 1}, "epoch_space": ended})
    messages = {result.message for result in results(run, run_id="r", history_file=None)}
    assert all("1 of 2 transactional ids crossed the end of the epoch space" in message for message in messages)
