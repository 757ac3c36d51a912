#!/usr/bin/env python3
"""Capture request and response frames from a real Apache Kafka broker as golden fixtures.

Starts the ``kafka`` target and drives a transactional session through the raw client, each API
at several versions (the oldest and newest both sides support, and the last non-flexible and
first flexible ones between them): ApiVersions, Metadata, CreateTopics, FindCoordinator,
InitProducerId, then three transactions (committed with the oldest versions, aborted with the
middle ones, committed with the newest), then Fetch read_committed, ListOffsets,
DescribeTransactions, ListTransactions, DescribeProducers and OffsetFetch. Then librdkafka runs
transactions and a read_committed consumer group through a recording proxy that the broker
advertises as its listener, which also records the requests the broker sends itself (transaction
markers). The responses, and the librdkafka and broker requests, are bytes our codec did not
write; our own requests at least were accepted by the broker.

Usage:
    python tools/capture_golden.py                 # writes fixtures/golden/kafka-<version>.json
    python tools/capture_golden.py --output FILE
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from frame_recorder import FrameRecorder, RecordedExchange

from conformance.client.cluster import Cluster, split_host_port
from conformance.client.connection import Connection
from conformance.client.transcript import Exchange
from conformance.protocol.codec import default_codec
from conformance.protocol.exceptions import SpecError
from conformance.protocol.records import TRANSACTIONAL_FLAG, Record, RecordBatch, encode_batch
from conformance.targets.kafka.broker import KafkaTarget

TOPIC = "golden"
TRANSACTIONAL_ID = "golden-transaction"
GROUP = "golden-group"
# Load in progress, coordinator not available, not coordinator, concurrent transactions, unknown
# topic (a topic just created), leader not available: all pass if asked again a moment later.
TRANSIENT_ERRORS = {14, 15, 16, 51, 3, 5}
ATTEMPTS = 100


class Session:
    """A connection to the broker that keeps the last exchange of every request it makes."""

    def __init__(self, connection: Connection, supported: dict[int, tuple[int, int]]):
        self.connection = connection
        self.supported = supported
        self.codec = connection.codec
        self.kept: list[Exchange] = []

    def versions(self, api: str) -> list[int]:
        """Oldest, last non-flexible, first flexible and newest version both sides speak."""
        specs = self.codec.registry.api(api)
        broker_low, broker_high = self.supported[specs.api_key]
        ours = specs.versions()
        low, high = max(broker_low, ours[0]), min(broker_high, ours[-1])
        first_flexible = specs.request.flexible_versions.low
        picks = {low, high, first_flexible - 1, first_flexible}
        return sorted(version for version in picks if low <= version <= high)

    def call(self, api: str, version: int, body: dict, *, allowed: set[int] = frozenset()) -> dict:
        """Send until no transient error remains; fail on any error code not in ``allowed``."""
        for _ in range(ATTEMPTS):
            exchange = self.connection.request(api, version, body)
            codes = set(error_codes(exchange.response)) - {0}
            if not codes & TRANSIENT_ERRORS:
                break
            time.sleep(0.2)
        self.kept.append(exchange)
        unexpected = codes - allowed
        if unexpected:
            raise SystemExit(f"{api} v{version} answered error codes {sorted(unexpected)}: {exchange.response}")
        return exchange.response


def error_codes(message):
    if isinstance(message, dict):
        for key, value in message.items():
            if key.endswith("error_code"):
                yield value
            else:
                yield from error_codes(value)
    elif isinstance(message, list):
        for item in message:
            yield from error_codes(item)


class Producer:
    """The transactional producer's state: id, epoch and the next sequence number."""

    def __init__(self, session: Session, topic_id):
        self.session = session
        self.topic_id = topic_id
        self.producer_id = -1
        self.epoch = -1
        self.sequence = 0
        self.next_value = 0

    def ids(self, prefix: str = "") -> dict:
        return {f"{prefix}transactional_id": TRANSACTIONAL_ID, f"{prefix}producer_id": self.producer_id,
                f"{prefix}producer_epoch": self.epoch}

    def init(self, version: int) -> None:
        answer = self.session.call("InitProducerId", version, {
            "transactional_id": TRANSACTIONAL_ID, "transaction_timeout_ms": 60000,
            "producer_id": self.producer_id, "producer_epoch": self.epoch})
        self.producer_id, self.epoch, self.sequence = answer["producer_id"], answer["producer_epoch"], 0

    def add_partition(self, version: int) -> None:
        if version <= 3:
            body = {**self.ids("v3_and_below_"), "v3_and_below_topics": [{"name": TOPIC, "partitions": [0]}]}
        else:  # the broker-to-broker form: verify that the partition is already in the transaction
            body = {"transactions": [{**self.ids(), "verify_only": True,
                                      "topics": [{"name": TOPIC, "partitions": [0]}]}]}
        self.session.call("AddPartitionsToTxn", version, body)

    def produce(self, version: int, count: int) -> None:
        records = [Record(offset_delta=index, timestamp_delta=index, key=f"k{self.next_value + index}".encode(),
                          value=f"value {self.next_value + index}".encode(), headers=[("h", b"1")])
                   for index in range(count)]
        batch = RecordBatch(attributes=TRANSACTIONAL_FLAG, base_timestamp=1_700_000_000_000,
                            producer_id=self.producer_id, producer_epoch=self.epoch,
                            base_sequence=self.sequence, records=records)
        topic = {"topic_id": self.topic_id} if version >= 13 else {"name": TOPIC}
        self.session.call("Produce", version, {
            "transactional_id": TRANSACTIONAL_ID, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{**topic, "partition_data": [{"index": 0, "records": encode_batch(batch)}]}]})
        self.sequence += count
        self.next_value += count

    def commit_offsets(self, add_version: int, commit_version: int, offset: int) -> None:
        self.session.call("AddOffsetsToTxn", add_version, {**self.ids(), "group_id": GROUP})
        topic = {"topic_id": self.topic_id} if commit_version >= 6 else {"name": TOPIC}
        self.session.call("TxnOffsetCommit", commit_version, {
            **self.ids(), "group_id": GROUP,
            "topics": [{**topic, "partitions": [{"partition_index": 0, "committed_offset": offset,
                                                 "committed_metadata": "golden"}]}]})

    def end(self, version: int, commit: bool) -> None:
        answer = self.session.call("EndTxn", version, {**self.ids(), "committed": commit})
        if version >= 5 and answer["producer_epoch"] >= 0:  # KIP-890: every transaction bumps the epoch
            if answer["producer_epoch"] != self.epoch:
                self.sequence = 0
            self.producer_id, self.epoch = answer["producer_id"], answer["producer_epoch"]


def setup(session: Session) -> object:
    for version in session.versions("ApiVersions"):
        session.call("ApiVersions", version, {"client_software_name": "kafka-conformance",
                                             "client_software_version": "0.1.0"})
    create = session.versions("CreateTopics")
    for version in create:
        name = TOPIC if version == create[-1] else f"{TOPIC}-created-v{version}"
        session.call("CreateTopics", version, {
            "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                        "configs": [{"name": "cleanup.policy", "value": "delete"}]}],
            "timeout_ms": 30000})
    topic_id = None
    for version in session.versions("Metadata"):
        topics = [{"name": TOPIC}]
        answer = session.call("Metadata", version, {"topics": topics, "allow_auto_topic_creation": False})
        topic_id = answer["topics"][0].get("topic_id", topic_id)
    for version in session.versions("FindCoordinator"):
        for key_type, key in ((1, TRANSACTIONAL_ID), (0, GROUP)):
            body = {"key_type": key_type, "coordinator_keys": [key]} if version >= 4 \
                else {"key_type": key_type, "key": key}
            session.call("FindCoordinator", version, body)
    return topic_id


def transactions(session: Session, producer: Producer) -> None:
    for version in session.versions("InitProducerId"):
        producer.init(version)
    add = session.versions("AddPartitionsToTxn")
    client_add = [version for version in add if version <= 3]
    produce, offsets = session.versions("Produce"), session.versions("TxnOffsetCommit")
    add_offsets, end = session.versions("AddOffsetsToTxn"), session.versions("EndTxn")

    producer.add_partition(client_add[0])  # committed, oldest versions
    producer.produce(produce[0], 3)
    producer.commit_offsets(add_offsets[0], offsets[0], 3)
    producer.end(end[0], commit=True)

    producer.add_partition(client_add[-1])  # aborted, middle versions
    producer.produce(produce[len(produce) // 2], 2)
    producer.commit_offsets(add_offsets[len(add_offsets) // 2], offsets[len(offsets) // 2], 5)
    producer.end(end[len(end) // 2], commit=False)

    producer.add_partition(client_add[-1])  # committed, newest versions
    producer.produce(produce[-1], 4)
    for version in add:
        if version > 3:
            producer.add_partition(version)
    producer.commit_offsets(add_offsets[-1], offsets[-1], 9)
    producer.end(end[-1], commit=True)


def reads(session: Session, topic_id) -> None:
    for version in session.versions("Fetch"):
        topic = {"topic_id": topic_id} if version >= 13 else {"topic": TOPIC}
        # Kafka answers a fetch from 0 with the first batch only; one from 3 (the first commit
        # marker) brings the rest: markers, the aborted transaction and its aborted_transactions entry
        for offset in (0, 3):
            session.call("Fetch", version, {
                "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 1,
                "session_id": 0, "session_epoch": -1,
                "topics": [{**topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                     "partition_max_bytes": 1 << 20}]}]})
    for version in session.versions("ListOffsets"):
        for timestamp in (-1, -2):  # latest, earliest
            session.call("ListOffsets", version, {
                "replica_id": -1, "isolation_level": 1, "timeout_ms": 30000,
                "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": timestamp}]}]})
    session.call("DescribeTransactions", 0, {"transactional_ids": [TRANSACTIONAL_ID, "golden-unknown"]},
                 allowed={105})  # TRANSACTIONAL_ID_NOT_FOUND for the unknown one
    for version in session.versions("ListTransactions"):
        session.call("ListTransactions", version, {"state_filters": [], "producer_id_filters": []})
    session.call("DescribeProducers", 0, {"topics": [{"name": TOPIC, "partition_indexes": [0]}]})
    for version in session.versions("OffsetFetch"):
        if version >= 8:
            topic = {"topic_id": topic_id} if version >= 10 else {"name": TOPIC}
            body = {"groups": [{"group_id": GROUP, "topics": [{**topic, "partition_indexes": [0]}]}],
                    "require_stable": True}
        else:
            body = {"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}],
                    "require_stable": True}
        session.call("OffsetFetch", version, body)


def librdkafka_session(bootstrap: str) -> None:
    """A transactional producer and a read_committed consumer as librdkafka drives them."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka import Producer as KafkaProducer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{GROUP}-librdkafka",
                         "client.id": "librdkafka-consumer", "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    producer = KafkaProducer({"bootstrap.servers": bootstrap, "client.id": "librdkafka-producer",
                              "transactional.id": f"{TRANSACTIONAL_ID}-librdkafka"})
    producer.init_transactions(30)
    for commit, count in ((True, 3), (False, 2), (True, 1)):
        producer.begin_transaction()
        for index in range(count):
            producer.produce(TOPIC, key=b"librdkafka", value=f"value {index}".encode(), headers=[("h", b"2")])
        producer.flush(30)
        if commit:
            producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, count)],
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    received = 0
    while received < 4 and time.monotonic() < deadline:  # the two committed transactions
        message = consumer.poll(1.0)
        if message is not None and message.error() is None and message.key() == b"librdkafka":
            received += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    if received < 4:
        raise SystemExit(f"the read_committed consumer got {received} of 4 committed records")


def recorded_entries(recorder: FrameRecorder, codec) -> list[dict]:
    """Per client and API version, the first exchange and the one with the largest response."""
    chosen: dict[tuple, list[RecordedExchange]] = {}
    for exchange in recorder.exchanges:
        try:
            specs = codec.registry.api(exchange.api_key)
        except SpecError:
            continue  # an API the bundled specs leave out (telemetry, KRaft-internal ...)
        if exchange.version not in specs.request.valid_versions:
            continue
        kept = chosen.setdefault((exchange.client_id, exchange.api_key, exchange.version), [])
        if not kept:
            kept.append(exchange)
        elif len(kept) == 1 or len(exchange.response) > len(kept[1].response):
            kept[1:] = [exchange]
    return [{"source": f"client id {exchange.client_id}", "api": codec.registry.api(exchange.api_key).name,
             "api_key": exchange.api_key, "version": exchange.version,
             "request": exchange.request.hex(), "response": exchange.response.hex()}
            for kept in chosen.values() for exchange in kept]


def raw_entries(kept: list[Exchange]) -> list[dict]:
    return [{"source": "kafka-conformance raw client", "api": exchange.api, "api_key": exchange.api_key,
             "version": exchange.version, "request": exchange.request_bytes.hex(),
             "response": exchange.response_bytes.hex()}
            for exchange in kept]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, help="default: fixtures/golden/kafka-<version>.json")
    arguments = parser.parse_args(argv)
    recorder = FrameRecorder(lambda: split_host_port(target.bootstrap))
    # Clients (and the broker's own marker requests) reach the broker through the recorder
    target = KafkaTarget("kafka", profile=None,
                         overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{recorder.port}"})
    target.start()
    try:
        codec = default_codec()
        cluster = Cluster(target.bootstrap, codec)
        session = Session(cluster.connection(), cluster.api_versions())
        topic_id = setup(session)
        transactions(session, Producer(session, topic_id))
        reads(session, topic_id)
        librdkafka_session(f"127.0.0.1:{recorder.port}")
        entries = raw_entries(session.kept) + recorded_entries(recorder, codec)
    finally:
        target.stop()
        recorder.close()
    result = {"source": f"Apache Kafka {target.version}, captured by tools/capture_golden.py",
              "kafka_version": target.version, "exchanges": entries}
    output = arguments.output or REPO_ROOT / "fixtures" / "golden" / f"kafka-{target.version}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{len(entries)} exchanges, {output.stat().st_size} bytes -> {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
