"""KIP-609's emulating interceptor with fake frames and a fake broker client (no broker)."""

from __future__ import annotations

import uuid

import pytest

from conformance.protocol import frames
from conformance.proxy.pipe import DEFER

from emulation_pipes import pipe_with, sent
from draft_plugins import KIP609, registered

TOPIC_ID = uuid.UUID(int=7)


class FakeBroker:
    def __init__(self):
        self.calls = []

    def wait_markers(self, txn_id):
        self.calls.append(("wait", txn_id))

    def add_offsets(self, txn_id, pid, epoch, group):
        self.calls.append(("offsets", group))
        return 0

    def add_partitions(self, txn_id, pid, epoch, topics):
        self.calls.append(("add", [(t["name"], t["partitions"]) for t in topics]))
        return {"results_by_topic_v3_and_below": [
            {"name": t["name"], "results_by_partition": [{"partition_index": p, "partition_error_code": 0}
                                                         for p in t["partitions"]]} for t in topics]}

    def topic_ids(self, names):
        return {TOPIC_ID: "out"}


@pytest.fixture
def kip609():
    with registered(KIP609) as extensions:
        from kip609_preregistration.emulation import PreregistrationEmulation

        broker = FakeBroker()
        codec = extensions.codec()
        emulation = PreregistrationEmulation(broker=broker)
        yield codec, pipe_with(codec, emulation), emulation, broker


def run_deferred(pipe, effects):
    [deferred] = [effect for effect in effects if effect.kind == DEFER]
    return pipe.deferred_done(deferred.call, deferred.work())


def register(codec, pipe, group="app", partitions=(0,)):
    body = {"transactions": [{"transactional_id": "t", "producer_id": 5, "producer_epoch": 1, "verify_only": False,
                              "group_id": group, "topics": [{"name": "out", "partitions": list(partitions)}]}]}
    effects = run_deferred(pipe, pipe.from_client(frames.encode_request(codec, "AddPartitionsToTxn", 6, 1, body)))
    return frames.decode_response(codec, "AddPartitionsToTxn", 6, sent(effects, "client")[0])[1]


def produce(codec, pipe, correlation, partition):
    body = {"transactional_id": "t", "acks": -1, "timeout_ms": 1000,
            "topic_data": [{"topic_id": TOPIC_ID, "partition_data": [{"index": partition, "records": None}]}]}
    return pipe.from_client(frames.encode_request(codec, "Produce", 13, correlation, body))


def test_registration_waits_for_markers_adds_the_group_and_keeps_the_partitions(kip609):
    codec, pipe, emulation, broker = kip609
    answer = register(codec, pipe, partitions=(0, 1))
    assert answer["results_by_transaction"][0]["topic_results"][0]["results_by_partition"][1]["partition_error_code"] == 0
    assert broker.calls == [("wait", "t"), ("offsets", "app")]     # no partition joins Kafka's transaction yet
    assert emulation.registered["t"].partitions == {("out", 0), ("out", 1)}


def test_a_partition_joins_kafkas_transaction_on_its_first_write_and_others_are_refused(kip609):
    codec, pipe, emulation, broker = kip609
    register(codec, pipe)
    effects = run_deferred(pipe, produce(codec, pipe, 2, 0))
    assert broker.calls[-1] == ("add", [("out", [0])]) and len(sent(effects, "upstream")) == 1
    pipe.from_upstream(frames.encode_response(codec, "Produce", 13, 2, {"responses": []}))
    assert len(sent(produce(codec, pipe, 3, 0), "upstream")) == 1     # already added: straight through
    pipe.from_upstream(frames.encode_response(codec, "Produce", 13, 3, {"responses": []}))
    [refused] = sent(produce(codec, pipe, 4, 1), "client")
    response = frames.decode_response(codec, "Produce", 13, refused)[1]
    assert response["responses"][0]["partition_responses"][0]["error_code"] == 3


def test_offsets_for_another_group_are_refused(kip609):
    codec, pipe, _, _ = kip609
    register(codec, pipe)
    body = {"transactional_id": "t", "group_id": "other", "producer_id": 5, "producer_epoch": 1,
            "topics": [{"name": "in", "partitions": [{"partition_index": 0, "committed_offset": 7}]}]}
    [answer] = sent(pipe.from_client(frames.encode_request(codec, "TxnOffsetCommit", 4, 2, body)), "client")
    assert frames.decode_response(codec, "TxnOffsetCommit", 4, answer)[1]["topics"][0]["partitions"][0]["error_code"] == 24


def test_end_txn_v6_goes_as_v5_and_ends_the_registration(kip609):
    codec, pipe, emulation, _ = kip609
    register(codec, pipe, partitions=(0, 1))
    end = {"transactional_id": "t", "producer_id": 5, "producer_epoch": 1, "committed": True,
           "topics": [{"name": "out", "partitions": [0]}]}
    [forwarded] = sent(pipe.from_client(frames.encode_request(codec, "EndTxn", 6, 2, end)), "upstream")
    assert frames.decode_request(codec, forwarded)[0]["request_api_version"] == 5
    [answer] = sent(pipe.from_upstream(frames.encode_response(codec, "EndTxn", 5, 2, {"error_code": 0, "producer_id": 5,
                                                                                      "producer_epoch": 2})), "client")
    assert frames.decode_response(codec, "EndTxn", 6, answer)[1]["producer_epoch"] == 2
    assert emulation.registered == {}


def test_end_txn_naming_an_unregistered_partition_is_refused(kip609):
    codec, pipe, _, _ = kip609
    register(codec, pipe)
    end = {"transactional_id": "t", "producer_id": 5, "producer_epoch": 1, "committed": True,
           "topics": [{"name": "out", "partitions": [3]}]}
    [answer] = sent(pipe.from_client(frames.encode_request(codec, "EndTxn", 6, 2, end)), "client")
    assert frames.decode_response(codec, "EndTxn", 6, answer)[1]["error_code"] == 42


def test_an_old_clients_add_partitions_is_retried_inside_the_proxy(kip609):
    codec, pipe, _, broker = kip609
    body = {"v3_and_below_transactional_id": "t", "v3_and_below_producer_id": 5, "v3_and_below_producer_epoch": 1,
            "v3_and_below_topics": [{"name": "out", "partitions": [0]}]}
    effects = run_deferred(pipe, pipe.from_client(frames.encode_request(codec, "AddPartitionsToTxn", 3, 1, body)))
    assert broker.calls == [("add", [("out", [0])])] and sent(effects, "upstream") == []
    answer = frames.decode_response(codec, "AddPartitionsToTxn", 3, sent(effects, "client")[0])[1]
    assert answer["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
