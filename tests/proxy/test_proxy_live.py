"""Each fault of the proxy does what it says, in front of Apache Kafka and Tansu, and clients stay behind it.

Faults are checked by their effect on the broker (a dropped request leaves no topic; a cut after the
request leaves one; a duplicated Produce doubles the log) and on the wire as the client sees it
(delays, reordering, duplicates, held responses), through ``proxy+kafka`` and ``proxy+tansu``.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid

import pytest

from conformance.client.cluster import Cluster
from conformance.client.connection import Disconnected, ResponseTimeout
from conformance.extension import Extensions
from conformance.protocol import frames, records
from conformance.protocol.codec import default_codec
from conformance.targets.registry import resolve

pytestmark = pytest.mark.broker  # starts Apache Kafka and Tansu
CODEC = default_codec()
UNKNOWN_TOPIC = 3


@pytest.fixture(scope="module", params=["kafka", "tansu"])
def proxied(request):
    kind = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches(request.param))
    reason = kind.availability()
    if reason:
        pytest.skip(f"{request.param}: {reason}")
    target = resolve(f"proxy+{request.param}", Extensions.for_run().target_kinds())
    target.start()
    yield target
    target.stop()
    assert [thread for thread in threading.enumerate() if thread.name.startswith("kafka-proxy")] == []


@pytest.fixture
def cluster(proxied):
    proxied.heal()
    made = Cluster(proxied.bootstrap, timeout=5)
    yield made
    made.close()
    proxied.heal()


def proxy_addresses(proxied) -> set[tuple[str, int]]:
    return set(proxied.server.listeners().values())


def create_topics(cluster: Cluster, name: str):
    connection = cluster.connection()
    return connection.send("CreateTopics", min(cluster.best_version("CreateTopics"), 7), {
        "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
        "timeout_ms": 10000, "validate_only": False}), connection


def topic_exists(cluster: Cluster, name: str) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        topic = cluster.metadata([name])["topics"][0]
        if topic["error_code"] != UNKNOWN_TOPIC:
            return True
        time.sleep(0.2)
    return False


def produce(cluster: Cluster, topic: str, values: list[bytes]) -> dict:
    batch = records.RecordBatch(base_timestamp=int(time.time() * 1000), producer_id=-1, producer_epoch=-1,
                                base_sequence=-1,
                                records=[records.Record(offset_delta=i, value=v) for i, v in enumerate(values)])
    leader = cluster.connection(cluster.leader(topic, 0))
    return leader.request("Produce", min(cluster.best_version("Produce"), 11), {
        "transactional_id": None, "acks": -1, "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records.encode_batch(batch)}]}]}).response


def values(cluster: Cluster, topic: str) -> list[bytes]:
    """Every record value in the partition (a Fetch from offset 0), whatever the broker says its end is."""
    leader = cluster.connection(cluster.leader(topic, 0))
    response = leader.request("Fetch", min(cluster.best_version("Fetch"), 12), {
        "replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
        }).response
    data = response["responses"][0]["partitions"][0]["records"] or b""
    return [record.value for batch in records.decode_batches(data) for record in batch.records]


def end_offset(cluster: Cluster, topic: str) -> int:
    leader = cluster.connection(cluster.leader(topic, 0))
    response = leader.request("ListOffsets", min(cluster.best_version("ListOffsets"), 7), {
        "replica_id": -1, "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]}).response
    return response["topics"][0]["partitions"][0]["offset"]


class Raw:
    """A bare socket to the proxy: to see exactly which frames arrive, in which order, when."""

    def __init__(self, address: str):
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)
        self.buffer = bytearray()

    def send(self, api: str, version: int, correlation: int, body: dict) -> None:
        self.sock.sendall(frames.encode_request(CODEC, api, version, correlation, body))

    def correlations(self, count: int, timeout: float = 5.0) -> list[int]:
        self.sock.settimeout(timeout)
        found: list[int] = []
        while len(found) < count:
            payloads, used = frames.split_frames(self.buffer)
            del self.buffer[:used]
            found += [frames.peek_correlation_id(payload) for payload in payloads]
            if len(found) >= count:
                break
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buffer += chunk
        return found

    def close(self) -> None:
        self.sock.close()


METADATA = {"topics": [], "allow_auto_topic_creation": False}


# ------------------------------------------------------------------------------------------------ addresses
def test_advertised_addresses_are_the_proxys(proxied, cluster):
    brokers = cluster.metadata(None)["brokers"]
    assert {(broker["host"], broker["port"]) for broker in brokers} <= proxy_addresses(proxied)
    node = cluster.coordinator(f"proxy-{uuid.uuid4()}")
    assert cluster.brokers[node] in proxy_addresses(proxied)
    assert proxied.server.listeners()[tuple_address(proxied.inner.bootstrap)] == tuple_address(proxied.bootstrap)


def tuple_address(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


def test_a_real_client_stays_behind_the_proxy(proxied, cluster):
    from confluent_kafka import Producer

    topic = f"proxy-client-{uuid.uuid4().hex[:8]}"
    sent, connection = create_topics(cluster, topic)
    connection.receive(sent, 10)
    before = sum(1 for event in proxied.server.events if event[2] == "Produce")
    producer = Producer({"bootstrap.servers": proxied.bootstrap, "enable.idempotence": True})
    producer.produce(topic, b"through the proxy")
    assert producer.flush(15) == 0
    assert sum(1 for event in proxied.server.events if event[2] == "Produce") > before
    assert end_offset(cluster, topic) >= 1


def test_a_users_broker_given_as_host_port_works_behind_the_proxy(proxied):
    if proxied.inner.kind != "kafka":
        pytest.skip("one HOST:PORT check is enough")
    target = resolve(f"proxy+{proxied.inner.bootstrap}", Extensions.for_run().target_kinds())
    target.start()
    try:
        cluster = Cluster(target.bootstrap, timeout=5)
        brokers = cluster.metadata(None)["brokers"]
        assert {(broker["host"], broker["port"]) for broker in brokers} <= proxy_addresses(target)
        target.fault("proxy.drop_response", api="Metadata")
        connection = cluster.connection()
        with pytest.raises(ResponseTimeout):
            connection.receive(connection.send("Metadata", 12, METADATA), 1.0)
        cluster.close()
    finally:
        target.stop()


# ------------------------------------------------------------------------------------------------ faults
def test_drop_request_never_reaches_the_broker(proxied, cluster):
    topic = f"proxy-dropped-{uuid.uuid4().hex[:8]}"
    proxied.fault("proxy.drop_request", api="CreateTopics")
    sent, connection = create_topics(cluster, topic)
    with pytest.raises(ResponseTimeout):
        connection.receive(sent, 1.5)
    assert not topic_exists(cluster, topic)


def test_drop_response_after_the_broker_handled_the_request(proxied, cluster):
    topic = f"proxy-unanswered-{uuid.uuid4().hex[:8]}"
    proxied.fault("proxy.drop_response", api="CreateTopics")
    sent, connection = create_topics(cluster, topic)
    with pytest.raises(ResponseTimeout):
        connection.receive(sent, 1.5)
    assert topic_exists(cluster, topic)


@pytest.mark.parametrize("fault,created", [("proxy.cut_before", False), ("proxy.cut_after", True)])
def test_cut_before_or_after_the_request_reaches_the_broker(proxied, cluster, fault, created):
    topic = f"proxy-cut-{uuid.uuid4().hex[:8]}"
    proxied.fault(fault, api="CreateTopics")
    sent, connection = create_topics(cluster, topic)
    with pytest.raises(Disconnected):
        connection.receive(sent, 10)
    assert topic_exists(cluster, topic) is created


def test_duplicate_request_reaches_the_broker_twice(proxied, cluster):
    topic = f"proxy-twice-{uuid.uuid4().hex[:8]}"
    sent, connection = create_topics(cluster, topic)
    connection.receive(sent, 10)
    assert topic_exists(cluster, topic)
    proxied.fault("proxy.duplicate_request", api="Produce")
    answer = produce(cluster, topic, [b"a", b"b"])     # no producer id: the broker cannot tell the copies apart
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
    deadline = time.monotonic() + 5
    while len(values(cluster, topic)) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert values(cluster, topic) == [b"a", b"b", b"a", b"b"]


def test_duplicate_response_reorder_hold_and_release_on_the_wire(proxied):
    raw = Raw(proxied.bootstrap)
    try:
        proxied.fault("proxy.duplicate_response", api="Metadata")
        raw.send("Metadata", 9, 1, METADATA)
        assert raw.correlations(2) == [1, 1]

        proxied.fault("proxy.reorder", api="Metadata")
        raw.send("Metadata", 9, 2, METADATA)
        raw.send("ApiVersions", 3, 3, {"client_software_name": "t", "client_software_version": "1"})
        assert raw.correlations(2) == [3, 2]

        proxied.fault("proxy.hold", api="Metadata")
        raw.send("Metadata", 9, 4, METADATA)
        assert _times_out(raw), "the held response arrived"
        proxied.fault("proxy.release")
        assert raw.correlations(1) == [4]
    finally:
        raw.close()


def _times_out(raw: Raw) -> bool:
    try:
        raw.sock.settimeout(1.0)
        chunk = raw.sock.recv(65536)
    except socket.timeout:
        return True
    raw.buffer += chunk
    return False


@pytest.mark.parametrize("where", ["request", "response"])
def test_delay_holds_the_exchange_back(proxied, cluster, where):
    cluster.metadata([])
    started = time.monotonic()
    cluster.metadata([])
    direct = time.monotonic() - started
    proxied.fault("proxy.delay", api="Metadata", where=where, ms=600)
    started = time.monotonic()
    cluster.metadata([])
    assert time.monotonic() - started >= 0.6 > direct


def test_the_mock_cluster_behind_the_proxy_keeps_its_own_faults_and_every_broker_is_proxied():
    kind = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches("rdkafka-mock:3"))
    if kind.availability():
        pytest.skip(kind.availability())
    target = resolve("proxy+rdkafka-mock:3", Extensions.for_run().target_kinds())
    target.start()
    try:
        cluster = Cluster(target.bootstrap, timeout=5)
        target.fault("topic_create", topic="proxied", partitions=3, replication=1)   # the mock's own fault
        metadata = cluster.metadata(["proxied"])
        assert len(metadata["brokers"]) == 3
        assert {(broker["host"], broker["port"]) for broker in metadata["brokers"]} == proxy_addresses(target)
        assert sorted(partition["leader_id"] for partition in metadata["topics"][0]["partitions"]) == [1, 2, 3]
        cluster.close()
    finally:
        target.stop()


def test_one_proxy_port_per_node_of_a_three_node_cluster():
    kind = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches("kafka,nodes=3"))
    if kind.availability():
        pytest.skip(kind.availability())
    target = resolve("proxy+kafka,nodes=3", Extensions.for_run().target_kinds())
    target.start()
    try:
        cluster = Cluster(target.bootstrap, timeout=5)
        brokers = cluster.metadata(None)["brokers"]
        assert len(brokers) == 3
        assert {(broker["host"], broker["port"]) for broker in brokers} == proxy_addresses(target)
        coordinators = {cluster.coordinator(f"proxy-{index}-{uuid.uuid4()}") for index in range(12)}
        assert {cluster.brokers[node] for node in coordinators} <= proxy_addresses(target)
        cluster.close()
    finally:
        target.stop()
