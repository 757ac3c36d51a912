"""The ``fast_forward`` step bumps a producer epoch through InitProducerId, pipelined, and stops where it was
asked: against a scripted coordinator that keeps one transactional id's producer id and epoch as Kafka does
(KIP-360: the current id and epoch bump it; the previous epoch is an idempotent retry; anything else is fenced)."""

from __future__ import annotations

import textwrap
import threading

import pytest

from conformance.client.cluster import Cluster
from conformance.client.epochs import FastForwardError, fast_forward
from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.results.record import Outcome
from conformance.targets.hostport import HostPortTarget

from fake_kafka import FakeKafka

PRODUCER_FENCED, CONCURRENT_TRANSACTIONS = 90, 51


class Coordinator:
    """One transactional id's producer id and epoch; ``busy_at`` answers CONCURRENT_TRANSACTIONS once at
    that epoch, ``stuck_at`` fences every bump from that epoch on."""

    def __init__(self, busy_at: int | None = None, stuck_at: int | None = None):
        self.producer_id, self.epoch, self.previous = 7, -1, None
        self.busy_at, self.stuck_at = busy_at, stuck_at
        self.lock = threading.Lock()
        self.init_requests = 0

    def __call__(self, api, version, body):
        if api != "InitProducerId":
            return None
        with self.lock:
            self.init_requests += 1
            asked = (body.get("producer_id", -1), body.get("producer_epoch", -1))
            if asked == (-1, -1) or asked == (self.producer_id, self.epoch):
                if self.busy_at == self.epoch:
                    self.busy_at = None
                    return {"error_code": CONCURRENT_TRANSACTIONS, "producer_id": -1, "producer_epoch": -1}
                if self.stuck_at is not None and self.epoch >= self.stuck_at:
                    return {"error_code": PRODUCER_FENCED, "producer_id": -1, "producer_epoch": -1}
                self.previous, self.epoch = self.epoch, self.epoch + 1
            elif asked != (self.producer_id, self.previous):  # the previous epoch: a retry, answered the same
                return {"error_code": PRODUCER_FENCED, "producer_id": -1, "producer_epoch": -1}
            return {"error_code": 0, "producer_id": self.producer_id, "producer_epoch": self.epoch}


def started(coordinator: Coordinator) -> tuple[FakeKafka, Cluster]:
    broker = FakeKafka(coordinator)
    cluster = Cluster(broker.address, timeout=2.0)
    cluster.api_versions()
    return broker, cluster


def test_it_reaches_the_epoch_asked_one_bump_per_request():
    coordinator = Coordinator()
    broker, cluster = started(coordinator)
    try:
        connection = cluster.connection()
        first = connection.request("InitProducerId", 5, {"transactional_id": "t", "transaction_timeout_ms": 60000,
                                                         "producer_id": -1, "producer_epoch": -1}).response
        done = fast_forward(connection, "t", first["producer_id"], first["producer_epoch"], 3000, version=5)
    finally:
        cluster.close()
        broker.stop()
    assert (done.producer_id, done.producer_epoch, done.bumps) == (7, 3000, 3000)
    assert coordinator.epoch == 3000  # it stopped there: nothing sent beyond the epoch asked
    assert coordinator.init_requests == 3001
    assert done.per_second > 0


def test_a_busy_coordinator_is_waited_for_and_the_requests_sent_behind_it_change_nothing():
    coordinator = Coordinator(busy_at=500)
    broker, cluster = started(coordinator)
    try:
        done = fast_forward(cluster.connection(), "t", 7, -1, 1000, version=5, window=16)
    finally:
        cluster.close()
        broker.stop()
    assert (done.producer_epoch, coordinator.epoch, done.bumps) == (1000, 1000, 1001)
    assert coordinator.init_requests > 1001 + 1  # the refused one and those pipelined behind it were sent again


def test_a_coordinator_that_stops_bumping_is_reported_with_its_answer():
    broker, cluster = started(Coordinator(stuck_at=100))
    try:
        with pytest.raises(FastForwardError) as raised:
            fast_forward(cluster.connection(), "t", 7, -1, 1000, version=5)
    finally:
        cluster.close()
        broker.stop()
    assert raised.value.answer["error_code"] == PRODUCER_FENCED
    assert "epoch 100 did not bump the epoch to 101" in str(raised.value)


def test_it_never_goes_past_the_end_of_the_epoch_space_or_backwards():
    with pytest.raises(ValueError, match="at most 32766"):
        fast_forward(None, "t", 7, 0, 32767, version=5)
    with pytest.raises(ValueError, match="forward only"):
        fast_forward(None, "t", 7, 10, 5, version=5)
    with pytest.raises(ValueError, match="v3 or later"):
        fast_forward(None, "t", 7, 0, 10, version=2)


CASE = """\
suite: fast-forward
title: The fast_forward step
spec: KIP-360
transactional_ids: [main]
cases:
  - id: bump-after-fast-forward
    title: InitProducerId bumps the epoch a fast-forward reached
    cites: KIP-360
    under_test: {api: InitProducerId, versions: "3+"}
    steps:
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}
        expect: {error_code: NONE}
        save: {pid: producer_id, epoch: producer_epoch}
      - fast_forward: {transactional_id: "${txn_ids.main}", to_epoch: "${TARGET}"}
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: "${pid}", producer_epoch: "${epoch}"}
        expect: {error_code: NONE, fields: {producer_epoch: "${TARGET + 1}"}}
"""


def run(tmp_path, coordinator: Coordinator, target_epoch: int):
    path = tmp_path / "fast-forward.yaml"
    path.write_text(CASE.replace("${TARGET", f"${{{target_epoch}"))
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    broker = FakeKafka(coordinator)
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="fast-forward", timeout=2.0)
    try:
        return runner.run(suite.cases[0], 5)
    finally:
        runner.close()
        broker.stop()


def test_the_step_leaves_pid_and_epoch_where_it_ended_and_the_transcript_short(tmp_path):
    result = run(tmp_path, Coordinator(), 2000)
    assert result.outcome is Outcome.PASSED, result.message
    assert len(result.transcript) < 20  # not two thousand exchanges
    labels = [exchange["step"] for exchange in result.transcript if exchange["step"]]
    assert any("2000 re-initialisations in" in label and "/s)" in label for label in labels), labels


def test_a_fast_forward_that_fails_blocks_the_case_instead_of_failing_it(tmp_path):
    result = run(tmp_path, Coordinator(stuck_at=50), 2000)
    assert result.outcome is Outcome.BLOCKED
    # the first InitProducerId only prepares (the last one is judged), so the fast-forward after it is set-up
    assert (result.failure.role, result.failure.api) == ("setup", "InitProducerId")
    assert "did not bump the epoch to 51" in result.message


def test_the_loader_refuses_an_epoch_beyond_the_space(tmp_path):
    path = tmp_path / "fast-forward.yaml"
    path.write_text(textwrap.dedent(CASE).replace('"${TARGET}"', "40000").replace("${TARGET + 1}", "1"))
    _, errors = load_suite_file(path, components=bundled())
    assert any("to_epoch 40000 is outside 0-32766" in str(error) for error in errors), errors
