"""The KIP-447 draft's emulating interceptor with fake frames (no broker)."""

from __future__ import annotations

import pytest

from conformance.protocol import frames
from conformance.proxy.pipe import DEFER

from draft_plugins import KIP447, registered
from emulation_pipes import pipe_with, sent


@pytest.fixture
def kip447():
    with registered(KIP447) as extensions:
        from kip447_draft_group_eos.emulation import GroupAwareEmulation

        fenced = []
        codec = extensions.codec()
        emulation = GroupAwareEmulation(fence=fenced.append)
        yield codec, pipe_with(codec, emulation), emulation, fenced


def init(codec, pipe, correlation, txn, generation, partitions):
    body = {"transactional_id": txn, "transaction_timeout_ms": 60000, "consumer_group_id": "app",
            "consumer_group_generation": generation, "assigned_partitions": [{"name": "in", "partitions": partitions}],
            "producer_id": -1, "producer_epoch": -1}
    effects = pipe.from_client(frames.encode_request(codec, "InitProducerId", 7, correlation, body))
    deferred = [effect for effect in effects if effect.kind == DEFER]
    if deferred:
        effects = pipe.deferred_done(deferred[0].call, deferred[0].work())
    return effects


def answer_init(codec, pipe, correlation, pid=5):
    reply = frames.encode_response(codec, "InitProducerId", 5, correlation,
                                   {"error_code": 0, "producer_id": pid, "producer_epoch": 0})
    [answer] = sent(pipe.from_upstream(reply), "client")
    return frames.decode_response(codec, "InitProducerId", 7, answer)[1]


def test_v7_goes_to_kafka_without_the_group_fields_and_comes_back_as_v7(kip447):
    codec, pipe, _, _ = kip447
    [forwarded] = sent(init(codec, pipe, 1, "first", 1, [0, 1]), "upstream")
    header, body = frames.decode_request(codec, forwarded)
    assert header["request_api_version"] == 5 and "consumer_group_id" not in body
    assert answer_init(codec, pipe, 1)["producer_id"] == 5


def test_an_older_generation_is_refused_by_the_proxy(kip447):
    codec, pipe, _, _ = kip447
    init(codec, pipe, 1, "second", 2, [0])
    answer_init(codec, pipe, 1)
    effects = init(codec, pipe, 2, "first", 1, [1])
    assert sent(effects, "upstream") == []
    assert frames.decode_response(codec, "InitProducerId", 7, sent(effects, "client")[0])[1]["error_code"] == 22


def test_a_moved_partition_fences_its_previous_owner_only_while_its_transaction_is_open(kip447):
    codec, pipe, emulation, fenced = kip447
    init(codec, pipe, 1, "first", 1, [0])
    answer_init(codec, pipe, 1)
    init(codec, pipe, 2, "second", 2, [0])                 # first has nothing open: not fenced
    answer_init(codec, pipe, 2)
    assert fenced == []
    add_offsets = {"transactional_id": "second", "producer_id": 5, "producer_epoch": 0, "group_id": "app"}
    pipe.from_client(frames.encode_request(codec, "AddOffsetsToTxn", 3, 3, add_offsets))
    pipe.from_upstream(frames.encode_response(codec, "AddOffsetsToTxn", 3, 3, {"error_code": 0}))
    assert len(sent(init(codec, pipe, 4, "first", 3, [0]), "upstream")) == 1
    assert fenced == ["second"] and "second" not in emulation.open
