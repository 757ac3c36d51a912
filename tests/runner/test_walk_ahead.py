"""Transactional ids walked to the end of the epoch space ahead of the serial items (runner/walk_ahead.py): as many as
their steps ask for, all in one transaction-log partition, each taken by one ``fast_forward`` step, which goes on
with it; a walk that failed leaves the step to walk its own id, as without them. Against a scripted coordinator that
keeps each transactional id's producer id and epoch as Kafka does (KIP-360)."""

from __future__ import annotations

import threading
import time

from conformance.client.cluster import Cluster
from conformance.results.record import Outcome
from conformance.runner.policy import client_version_of
from conformance.runner.runner import Runner
from conformance.runner.steps import bundled
from conformance.runner.walk_ahead import WalkAhead, eligible
from conformance.suite.loader import load_suite_file
from conformance.targets.hostport import HostPortTarget
from conformance.targets.nodes import partition_for

from fake_kafka import FakeKafka

PRODUCER_FENCED = 90
TRANSACTION_PARTITIONS = 3
EPOCH = 300

# a case's first steps: its own transactional id initialised, then walked to EPOCH
WALKED = """\
  - id: {id}
    title: {title}
    cites: KIP-360
    under_test: {{api: InitProducerId, versions: "3+"}}
    serial: true
    steps:
      - send: InitProducerId
        fields: {{transactional_id: "${{txn_ids.main}}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}}
        expect: {{error_code: NONE}}
        save: {{pid: producer_id, epoch: producer_epoch}}
      - fast_forward: {{transactional_id: "${{txn_ids.main}}", to_epoch: {epoch}}}
"""
CASE = """\
suite: walk-ahead
title: The fast_forward step with ids walked ahead
spec: KIP-360
transactional_ids: [main]
cases:
""" + WALKED.format(id="bump-after-fast-forward", title="InitProducerId bumps the epoch a fast-forward reached",
                   epoch=EPOCH) + """\
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: "${pid}", producer_epoch: "${epoch}"}
        expect: {error_code: NONE, fields: {producer_epoch: NEXT}}
      - fast_forward: {transactional_id: "${txn_ids.main}", to_epoch: 400}
        when: {feature: {transaction.version: ">=2"}}
""".replace("NEXT", str(EPOCH + 1)) + WALKED.format(id="another", title="Another case at the end of the epoch space",
                                                   epoch=EPOCH)


class Coordinator:
    """Every transactional id's producer id and epoch; an id whose name has ``stuck`` in it is fenced past epoch 10."""

    def __init__(self, stuck: str | None = None, expiration_ms: int | None = None):
        self.expiration_ms = expiration_ms  # transactional.id.expiration.ms, as DescribeConfigs answers it
        self.lock = threading.Lock()
        self.producers: dict[str, list[int]] = {}  # id -> [producer id, epoch, previous epoch]
        self.stuck = stuck
        self.bumps: dict[str, int] = {}

    def __call__(self, api, version, body):
        if api == "Metadata" and any(topic["name"] == "__transaction_state" for topic in body.get("topics") or []):
            node = {"node_id": 1, "host": "127.0.0.1", "port": 0, "rack": None}
            return {"brokers": [node], "topics": [{"name": "__transaction_state", "partitions": [
                {"partition_index": index, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                for index in range(TRANSACTION_PARTITIONS)]}]}
        if api == "DescribeConfigs" and self.expiration_ms is not None:
            return {"results": [{"error_code": 0, "resource_type": 4, "resource_name": "1", "configs": [
                {"name": "transactional.id.expiration.ms", "value": str(self.expiration_ms)}]}]}
        if api != "InitProducerId":
            return None
        fenced = {"error_code": PRODUCER_FENCED, "producer_id": -1, "producer_epoch": -1}
        name = body["transactional_id"]
        with self.lock:
            state = self.producers.setdefault(name, [len(self.producers) + 1, -1, -1])
            asked = (body["producer_id"], body["producer_epoch"])
            if asked == (-1, -1) or asked == (state[0], state[1]):
                if self.stuck and self.stuck in name and state[1] >= 10:
                    return fenced
                state[2], state[1] = state[1], state[1] + 1
                self.bumps[name] = self.bumps.get(name, 0) + 1
            elif asked != (state[0], state[2]):
                return fenced
            return {"error_code": 0, "producer_id": state[0], "producer_epoch": state[1]}


def loaded(tmp_path):
    path = tmp_path / "walk-ahead.yaml"
    path.write_text(CASE)
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    return suite.cases


def probe(target) -> Cluster:
    cluster = Cluster(target.bootstrap, timeout=2.0)
    cluster.api_versions()
    return cluster


def started(coordinator: Coordinator):
    broker = FakeKafka(coordinator)
    target = HostPortTarget(broker.address)
    target.start()
    return broker, target


def test_a_fast_forward_step_of_the_cases_own_ids_can_take_a_walked_one():
    assert eligible({"fast_forward": {"transactional_id": "${txn_ids.main}", "to_epoch": 5}}) == "main"
    assert eligible({"fast_forward": {"transactional_id": "${txn_ids.main}", "to_epoch": "${n}"}}) is None
    assert eligible({"fast_forward": {"transactional_id": "fixed", "to_epoch": 5}}) is None
    assert eligible({"fast_forward": {"transactional_id": "${txn_ids.main}", "to_epoch": 5, "producer_epoch": 3}}) is None
    assert eligible({"fast_forward": {"transactional_id": "${txn_ids.main}", "to_epoch": 5}, "version": 3}) is None


def test_as_many_ids_as_the_items_ask_for_are_walked_each_case_in_a_partition_of_its_own(tmp_path):
    case, another = loaded(tmp_path)
    coordinator = Coordinator()
    broker, target = started(coordinator)
    try:
        # three items of one case, two of another; the step a `when` leaves out on this broker (no
        # transaction.version 2) asks for none, nor does an item at a version the broker does not advertise
        items = [(another, 3), (case, 3), (case, 4), (another, 4), (case, 5), (case, 99)]
        ahead = WalkAhead(target, items, run_id="walk-ahead-test", timeout=2.0).start()
        cluster = probe(target)
        version = client_version_of(cluster, "InitProducerId")  # what the step sends
        cluster.close()
        taken = [ahead.take(case.full_id, EPOCH, 60_000, version) for _ in range(4)]
        others = [ahead.take(another.full_id, EPOCH, 60_000, version) for _ in range(2)]
    finally:
        broker.stop()
    walked, left = taken[:3], taken[3]
    assert all(walked) and left is not None and others[0] is not None, (taken, others)  # the fourth: another case's
    names = {one.transactional_id for one in walked}
    assert len(names) == 3
    partitions = {partition_for(name, TRANSACTION_PARTITIONS) for name in names}
    assert len(partitions) == 1  # one case: one partition, its versions share a kill or a move
    assert {partition_for(one.transactional_id, TRANSACTION_PARTITIONS) for one in (left, others[0])} != partitions
    assert others[1] is None  # five walks, five taken
    assert all(one.done.producer_epoch == EPOCH and coordinator.producers[one.transactional_id][1] == EPOCH
               for one in walked)
    assert all(0 < len(one.exchanges) <= 3 for one in walked)  # the walk's last exchanges: the step's evidence
    ahead = WalkAhead(target, [(case, 5)], run_id="walk-ahead-other", timeout=2.0)
    ahead.close()  # nothing walked: nothing to take
    assert ahead.take(case.full_id, EPOCH, 60_000, version) is None


def run_with_walks(tmp_path, coordinator: Coordinator):
    """The first case at v5 on ``coordinator`` with the run's walks ahead of it: its result and runner."""
    case = loaded(tmp_path)[0]
    broker, target = started(coordinator)
    runner = Runner(target, run_id="walk-ahead-item", timeout=2.0)
    try:
        runner.walked_ahead = WalkAhead(target, [(case, 5)], run_id=runner.run_id, timeout=2.0).start()
        return runner.run(case, 5), runner
    finally:
        runner.close()
        broker.stop()


def test_the_item_goes_on_with_the_walked_id_and_passes_as_when_it_walks_its_own(tmp_path):
    coordinator = Coordinator()
    result, _ = run_with_walks(tmp_path, coordinator)
    assert result.outcome is Outcome.PASSED, result.message
    [own] = [name for name in coordinator.producers if name.startswith("walk-ahead.")]
    [walked] = [name for name in coordinator.producers if name.startswith("walked-ahead.")]
    assert coordinator.bumps[own] == 1  # its own id: the first InitProducerId only
    assert coordinator.bumps[walked] == EPOCH + 2  # the walk, then the item's bump past it
    labels = [exchange["step"] for exchange in result.transcript if exchange["step"]]
    assert any("walked ahead by the run" in label and walked in label for label in labels), labels


def test_a_walk_that_failed_leaves_the_step_to_walk_its_own_id_and_meet_the_broker_there(tmp_path):
    coordinator = Coordinator(stuck="walked-ahead")
    result, runner = run_with_walks(tmp_path, coordinator)
    assert runner.walked_ahead.failed == 1
    assert result.outcome is Outcome.PASSED, result.message
    [own] = [name for name in coordinator.producers if name.startswith("walk-ahead.")]
    assert coordinator.producers[own][1] == EPOCH + 1


def test_a_broker_that_forgets_idle_ids_soon_gets_no_walks_ahead_and_the_step_walks_its_own(tmp_path):
    # the provisioned Kafka forgets an idle transactional id after 10 s: a walked id waiting for its item would be
    # forgotten, and the item would no longer be at the end of the epoch space
    coordinator = Coordinator(expiration_ms=10_000)
    result, runner = run_with_walks(tmp_path, coordinator)
    assert result.outcome is Outcome.PASSED, result.message
    assert runner.walked_ahead.expiration_ms == 10_000 and runner.walked_ahead.walked == 0
    assert not [name for name in coordinator.producers if name.startswith("walked-ahead.")]
    [own] = [name for name in coordinator.producers if name.startswith("walk-ahead.")]
    assert coordinator.producers[own][1] == EPOCH + 1


def test_a_walked_id_is_not_taken_once_half_the_expiration_has_passed(tmp_path, monkeypatch):
    case = loaded(tmp_path)[0]
    broker, target = started(Coordinator(expiration_ms=700_000))
    try:
        ahead = WalkAhead(target, [(case, 5), (case, 4)], run_id="walk-ahead-stale", timeout=2.0).start()
        cluster = probe(target)
        version = client_version_of(cluster, "InitProducerId")
        cluster.close()
        assert ahead.take(case.full_id, EPOCH, 60_000, version) is not None  # at once: fresh
        later = time.monotonic() + 350.1  # more than half of 700 s after the walks ended
        monkeypatch.setattr(time, "monotonic", lambda: later)
        assert ahead.take(case.full_id, EPOCH, 60_000, version) is None
    finally:
        broker.stop()
