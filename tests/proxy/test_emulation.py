"""Emulation targets (``emulate:DRAFT+SPEC``): the mechanism and KIP-1309's interceptor with fake frames (no broker)."""

from __future__ import annotations

import pytest

from conformance.extension import Extensions
from conformance.protocol import frames
from conformance.proxy.emulation import Emulation
from conformance.proxy.pipe import CLIENT, UPSTREAM
from conformance.targets.emulated import EmulatedTarget, parse
from conformance.targets.registry import resolve

from draft_plugins import KIP1309, registered
from emulation_pipes import pipe_with, sent

INIT_V7 = {"transactional_id": "t", "transaction_timeout_ms": 60000, "transaction_heartbeat_interval_ms": 1000,
           "producer_id": -1, "producer_epoch": -1}


@pytest.fixture
def kip1309_plugins():
    with registered(KIP1309) as extensions:
        yield extensions


@pytest.fixture
def kip1309(kip1309_plugins):
    from kip1309_txn_heartbeat.emulation import TxnHeartbeatEmulation

    return kip1309_plugins.codec(), TxnHeartbeatEmulation


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def api_versions(pipe, codec, keys):
    body = {"error_code": 0, "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in keys]}
    pipe.from_client(frames.encode_request(codec, "ApiVersions", 3, 1, {"client_software_name": "x",
                                                                         "client_software_version": "1"}))
    [answer] = sent(pipe.from_upstream(frames.encode_response(codec, "ApiVersions", 3, 1, body)), CLIENT)
    return {e["api_key"]: (e["min_version"], e["max_version"])
            for e in frames.decode_response(codec, "ApiVersions", 3, answer)[1]["api_keys"]}


def test_the_spec_names_the_draft_and_the_inner_target():
    assert parse("emulate:kip1309+kafka") == ("kip1309", "kafka")
    assert parse("emulate:kip609+proxy+kafka:3.9.1") == ("kip609", "proxy+kafka:3.9.1")
    assert parse("emulate:kip1309") is None and parse("proxy+kafka") is None


def test_the_target_kind_finds_the_plugins_emulation_and_refuses_an_unknown_one(kip1309_plugins):
    extensions = kip1309_plugins
    target = resolve("emulate:kip1309+127.0.0.1:9092", extensions.target_kinds())
    assert isinstance(target, EmulatedTarget) and target.draft == "kip1309" and "proxy" in target.capabilities
    assert "kip1309" in extensions.emulations()
    with pytest.raises(ValueError, match="no emulation named 'nope'"):
        resolve("emulate:nope+127.0.0.1:9092", extensions.target_kinds())


def test_an_emulation_advertises_the_drafts_versions_beside_the_brokers(kip1309):
    codec, emulation = kip1309
    emulation = emulation()
    advertised = api_versions(pipe_with(codec, emulation), codec, [(22, 0, 5), (26, 0, 5)])
    assert advertised[22] == (0, 7) and advertised[1309] == (0, 0) and advertised[26] == (0, 5)
    assert emulation.broker_max("InitProducerId", 0) == 5


def test_init_producer_id_v7_is_forwarded_as_the_brokers_newest_and_answered_as_v7(kip1309):
    codec, Emulation1309 = kip1309
    emulation = Emulation1309(clock=Clock())
    pipe = pipe_with(codec, emulation)
    api_versions(pipe, codec, [(22, 0, 5)])
    [forwarded] = sent(pipe.from_client(frames.encode_request(codec, "InitProducerId", 7, 2, INIT_V7)), UPSTREAM)
    header, body = frames.decode_request(codec, forwarded)
    assert header["request_api_version"] == 5 and body["transactional_id"] == "t"
    reply = frames.encode_response(codec, "InitProducerId", 5, 2, {"error_code": 0, "producer_id": 7, "producer_epoch": 3})
    [answer] = sent(pipe.from_upstream(reply), CLIENT)
    assert frames.decode_response(codec, "InitProducerId", 7, answer)[1]["producer_id"] == 7
    assert emulation.producers["t"].interval_ms == 1000
    emulation.close()


@pytest.mark.parametrize("fields", [{"transaction_timeout_ms": 500}, {"enable2_pc": True}])
def test_the_drafts_invalid_combinations_are_answered_by_the_proxy(kip1309, fields):
    codec, Emulation1309 = kip1309
    pipe = pipe_with(codec, Emulation1309())
    effects = pipe.from_client(frames.encode_request(codec, "InitProducerId", 7, 2, {**INIT_V7, **fields}))
    assert sent(effects, UPSTREAM) == []
    assert frames.decode_response(codec, "InitProducerId", 7, sent(effects, CLIENT)[0])[1]["error_code"] == 42


def heartbeat(codec, pipe, correlation, pid, epoch) -> int:
    request = frames.encode_request(codec, "TxnHeartbeat", 0, correlation,
                                    {"transactional_id": "t", "producer_id": pid, "producer_epoch": epoch})
    [answer] = sent(pipe.from_client(request), CLIENT)
    return frames.decode_response(codec, "TxnHeartbeat", 0, answer)[1]["error_code"]


def test_heartbeats_are_checked_against_the_producer_the_broker_gave_and_missing_ones_abort(kip1309):
    codec, Emulation1309 = kip1309
    clock, aborts = Clock(), []
    emulation = Emulation1309(clock=clock, abort=lambda txn_id, producer: aborts.append((txn_id, producer.producer_id)))
    emulation._start_watchdog = lambda: None            # the test drives check() itself
    pipe = pipe_with(codec, emulation)
    assert heartbeat(codec, pipe, 1, 7, 3) == 49        # no producer yet: INVALID_PRODUCER_ID_MAPPING
    pipe.from_client(frames.encode_request(codec, "InitProducerId", 7, 2, INIT_V7))
    pipe.from_upstream(frames.encode_response(codec, "InitProducerId", 5, 2,
                                              {"error_code": 0, "producer_id": 7, "producer_epoch": 3}))
    assert heartbeat(codec, pipe, 3, 7, 3) == 0
    assert heartbeat(codec, pipe, 4, 7, 2) == 90        # an older epoch: PRODUCER_FENCED
    clock.now += 10
    emulation.check()
    assert aborts == []                                 # nothing open: nothing to abort
    add = {"v3_and_below_transactional_id": "t", "v3_and_below_producer_id": 7, "v3_and_below_producer_epoch": 3,
           "v3_and_below_topics": [{"name": "out", "partitions": [0]}]}
    pipe.from_client(frames.encode_request(codec, "AddPartitionsToTxn", 3, 5, add))
    pipe.from_upstream(frames.encode_response(codec, "AddPartitionsToTxn", 3, 5, {"results_by_topic_v3_and_below": []}))
    assert heartbeat(codec, pipe, 6, 7, 3) == 0
    clock.now += 2.9
    emulation.check()
    assert aborts == []                                 # under three intervals
    clock.now += 0.2
    emulation.check()
    assert aborts == [("t", 7)] and "t" not in emulation.producers


def test_the_emulation_base_passes_other_calls_through():
    codec = Extensions.for_run().codec()
    pipe = pipe_with(codec, Emulation())
    end_txn = frames.encode_request(codec, "EndTxn", 3, 1, {"transactional_id": "t", "producer_id": 1,
                                                            "producer_epoch": 0, "committed": True})
    assert sent(pipe.from_client(end_txn), UPSTREAM) == [end_txn[4:]]


def test_an_emulated_target_advertises_the_draft_over_sockets_and_closes_its_emulation(kip1309_plugins):
    import threading

    from conformance.client.cluster import Cluster
    from fake_kafka import FakeKafka

    extensions = kip1309_plugins
    codec = extensions.codec()
    broker = FakeKafka()
    target = resolve(f"emulate:kip1309+{broker.address}", extensions.target_kinds())
    target.start()
    try:
        assert target.info().kind.startswith("emulate:kip1309+") and target.info().extra["emulates"] == "kip1309"
        cluster = Cluster(target.bootstrap, codec, timeout=5)
        try:
            versions = cluster.api_versions()
        finally:
            cluster.close()
        assert versions[22][1] == 7 and versions[1309] == (0, 0)
        target.emulation._start_watchdog()
    finally:
        target.stop()
        broker.stop()
    assert target.emulation is None
    assert [t for t in threading.enumerate() if t.name.startswith(("kafka-proxy", "kip1309"))] == []
