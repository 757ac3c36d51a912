"""Captures of real traffic against a local Kafka broker: complete, paired, and agreeing with tshark.

Marked ``kafka``: they start a broker (about 8 s) and skip with the reason when this machine
cannot run Kafka or cannot capture (no root, no dumpcap and no scapy).
"""

from __future__ import annotations

import os
import uuid
from collections import defaultdict

import pytest

from conformance.capture.pcap import read_capture
from conformance.capture.scenario import run_scenario
from conformance.capture.sniffer import Capture, capture_available, target_ports
from conformance.capture.tshark import tshark_available, tshark_dissects, tshark_packets
from conformance.client.cluster import Cluster
from conformance.protocol.records import Record, RecordBatch, decode_batches, encode_batch
from conformance.runner.steps import bundled

pytestmark = [pytest.mark.kafka, pytest.mark.broker]

PAYLOAD_BYTES = 4 << 20


@pytest.fixture(scope="module")
def kafka():
    from conformance.targets.kafka.broker import KafkaTarget, kafka_target_kind

    reason = kafka_target_kind().availability() or capture_available()
    if reason:
        pytest.skip(reason)
    target = KafkaTarget("kafka")
    target.start()
    yield target
    target.stop()


def create_topic(cluster: Cluster, topic: str, partitions: int = 1) -> None:
    response = cluster.connection().request("CreateTopics", cluster.best_version("CreateTopics"), {
        "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": [{"name": "max.message.bytes", "value": str(2 * PAYLOAD_BYTES)}]}],
        "timeout_ms": 30000, "validate_only": False}).response
    assert response["topics"][0]["error_code"] == 0, response


def test_capture_holds_every_exchange_of_the_transcript(kafka, tmp_path):
    cluster = Cluster(kafka.bootstrap)
    topic = f"capture-live-{uuid.uuid4().hex[:8]}"
    payload = os.urandom(PAYLOAD_BYTES)
    path = tmp_path / "live.pcapng"
    with Capture(target_ports(kafka), path) as capture:
        cluster.api_versions()
        cluster.metadata(None)
        create_topic(cluster, topic)
        leader = cluster.leader(topic, 0)
        version = min(cluster.best_version("Produce"), 12)  # 13 names topics by id only
        batch = encode_batch(RecordBatch(records=[Record(key=b"big", value=payload)]))
        produced = cluster.connection(leader).request("Produce", version, {
            "transactional_id": None, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}, timeout=30)
        assert produced.response["responses"][0]["partition_responses"][0]["error_code"] == 0
        cluster.close()
    assert capture.warnings == []

    decoded = read_capture(path, target_ports(kafka))
    assert decoded.notes == []
    on_wire = {(exchange.api_key, exchange.version, exchange.correlation_id, exchange.request_bytes): exchange
               for exchange in decoded.exchanges}
    sent = cluster.transcript.exchanges
    assert len(sent) >= 5
    for exchange in sent:
        found = on_wire.get((exchange.api_key, exchange.version, exchange.correlation_id, exchange.request_bytes))
        assert found is not None, f"{exchange.api} v{exchange.version} corr {exchange.correlation_id} not captured"
        assert found.response_bytes == exchange.response_bytes
        assert found.problems == []
    wire_produce = next(exchange for exchange in decoded.exchanges if exchange.api == "Produce")
    assert len(wire_produce.request_bytes) > PAYLOAD_BYTES
    records = wire_produce.request["topic_data"][0]["partition_data"][0]["records"]
    assert records == batch
    assert decode_batches(records)[0].records[0].value == payload


def test_tshark_agrees_on_every_frame_of_the_kip98_suites(kafka, tmp_path):
    reason = tshark_available()
    if reason:
        pytest.skip(reason)
    from conformance.suite.loader import load_suites
    from conformance.runner.runner import Runner

    suites, errors = load_suites(["suites/kip98"], components=bundled())
    assert suites and not errors
    runner = Runner(kafka, run_id=f"tshark{uuid.uuid4().hex[:4]}")
    path = tmp_path / "kip98.pcapng"
    ports = target_ports(kafka)
    newest_done: set[str | None] = set()
    with Capture(ports, path):
        for suite in suites:
            for case in suite.cases:
                versions = runner.case_versions(case)
                # Every case at its lowest version (old enough for tshark to read bodies), and each
                # API once at its newest (flexible headers), to keep the run short.
                chosen = {versions[0]} if case.api in newest_done else {versions[0], versions[-1]}
                newest_done.add(case.api)
                for version in sorted(chosen):
                    runner.run(case, version)
    runner.close()

    ours = read_capture(path, ports)
    theirs = tshark_packets(path, ports)
    completed: dict[int, list] = defaultdict(list)  # packet -> [("request"|"response", exchange)]
    for exchange in ours.exchanges:
        completed[exchange.request_packet].append(("request", exchange))
        if exchange.response_packet:
            completed[exchange.response_packet].append(("response", exchange))
    assert set(completed) == set(theirs), "packets where a Kafka frame ends"
    errors_compared = 0
    for number, frames in completed.items():
        packet = theirs[number]
        kinds = {kind for kind, _ in frames}
        assert len(kinds) == 1, f"packet {number} carries both directions"
        exchanges = [exchange for _, exchange in frames]
        assert packet.correlation_ids == [exchange.correlation_id for exchange in exchanges], number
        if kinds == {"request"}:
            assert packet.api_keys == [exchange.api_key for exchange in exchanges], number
            assert packet.versions == [exchange.version for exchange in exchanges], number
            continue
        if not packet.api_keys:
            continue  # tshark threw on the request and lost it ("Request missing"): only the id to compare
        assert packet.api_keys == [exchange.api_key for exchange in exchanges], number
        assert packet.request_frames == [exchange.request_packet for exchange in exchanges], number
        if all(tshark_dissects(exchange.api_key, exchange.version) for exchange in exchanges):
            assert packet.errors == [code for exchange in exchanges for code in error_codes(exchange.response)], number
            errors_compared += 1
    assert len(completed) == ours.frames > 500
    assert errors_compared > 20  # the lowest versions are old enough for tshark to read their bodies


def error_codes(message) -> list[int]:
    """Every error code of a decoded message in field order (tshark's tree order)."""
    found = []
    if isinstance(message, dict):
        for name, value in message.items():
            if name.endswith("error_code") and isinstance(value, int):
                found.append(value)
            else:
                found.extend(error_codes(value))
    elif isinstance(message, list):
        for item in message:
            found.extend(error_codes(item))
    return found


def test_real_client_transactions_under_capture(kafka, tmp_path):
    path = tmp_path / "scenario.pcapng"
    with Capture(target_ports(kafka), path):
        summary = run_scenario(kafka.bootstrap)
    assert summary.errors == []
    assert summary.conforms, summary.to_json()
    decoded = read_capture(path, target_ports(kafka))
    apis = [exchange.api for exchange in decoded.exchanges]
    for api in ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "Fetch"):
        assert api in apis, api
    ends = [exchange.request["committed"] for exchange in decoded.exchanges if exchange.api == "EndTxn"]
    assert ends == [True, False]
    # APIs the bundled specs lack (librdkafka asks for telemetry, key 71) stay raw, with the reason.
    unknown = [exchange for exchange in decoded.exchanges if exchange.api.startswith("Unknown(")]
    assert all("cannot decode" in exchange.problems[0] for exchange in unknown)
    known = [exchange for exchange in decoded.exchanges if not exchange.api.startswith("Unknown(")]
    undecoded = [(exchange.api, exchange.version, exchange.problems) for exchange in known
                 if exchange.request is None or (exchange.response_bytes and exchange.response is None)]
    assert undecoded == []
