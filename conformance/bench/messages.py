"""The messages the codec benchmark encodes and decodes: the traffic of a transactional producer.

Each is a plain message dict for our codec; the other implementations get the same message by
decoding our encoding, so every implementation encodes and decodes exactly the same bytes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..protocol.records import TRANSACTIONAL_FLAG, Record, RecordBatch, encode_batch


@dataclass(frozen=True)
class BenchMessage:
    """One message the codec benchmark times: which API, version and direction, and its body."""
    label: str
    api: str
    version: int
    direction: str  # "request" or "response"
    body: dict


def transactional_batch(records: int, producer_id: int = 4000, first_sequence: int = 0) -> bytes:
    """A transactional record batch of ``records`` small records, encoded."""
    batch = RecordBatch(
        attributes=TRANSACTIONAL_FLAG, base_timestamp=1_700_000_000_000, producer_id=producer_id,
        producer_epoch=3, base_sequence=first_sequence,
        records=[Record(offset_delta=index, timestamp_delta=index, key=f"key-{index}".encode(),
                        value=b"v" * 100, headers=[("trace", b"abc")]) for index in range(records)])
    return encode_batch(batch)


def topic_id(index: int) -> uuid.UUID:
    """A fixed topic id for the ``index``-th topic of a message."""
    return uuid.UUID(int=(index + 1) * 0x1234_5678_9ABC_DEF0)


def produce_request() -> BenchMessage:
    """A Produce request carrying one 100-record transactional batch."""
    return BenchMessage("Produce request, 100-record batch", "Produce", 13, "request", {
        "transactional_id": "bench-transaction", "acks": -1, "timeout_ms": 30000,
        "topic_data": [{"topic_id": topic_id(0),
                        "partition_data": [{"index": 0, "records": transactional_batch(100)}]}],
    })


def fetch_response() -> BenchMessage:
    """A Fetch response with record batches and aborted transactions in each partition."""
    partitions = [{
        "partition_index": index, "error_code": 0, "high_watermark": 5000 + index,
        "last_stable_offset": 4990 + index, "log_start_offset": 0, "preferred_read_replica": -1,
        "aborted_transactions": [{"producer_id": 4000 + index, "first_offset": 100 * index},
                                 {"producer_id": 5000 + index, "first_offset": 100 * index + 50}],
        "records": transactional_batch(10, 4000 + index),
    } for index in range(3)]
    return BenchMessage("Fetch response, aborted transactions", "Fetch", 17, "response", {
        "throttle_time_ms": 0, "error_code": 0, "session_id": 7,
        "responses": [{"topic_id": topic_id(0), "partitions": partitions}],
    })


def init_producer_id_request() -> BenchMessage:
    """An InitProducerId request of a transactional producer."""
    return BenchMessage("InitProducerId request", "InitProducerId", 5, "request", {
        "transactional_id": "bench-transaction", "transaction_timeout_ms": 60000,
        "producer_id": 4000, "producer_epoch": 3,
    })


def txn_offset_commit_request() -> BenchMessage:
    """A TxnOffsetCommit request of a consume-transform-produce loop."""
    return BenchMessage("TxnOffsetCommit request", "TxnOffsetCommit", 5, "request", {
        "transactional_id": "bench-transaction", "group_id": "bench-group", "producer_id": 4000,
        "producer_epoch": 3, "generation_id_or_member_epoch": 12, "member_id": "member-1",
        "group_instance_id": None,
        "topics": [{"name": f"topic-{topic}", "partitions": [
            {"partition_index": partition, "committed_offset": 1000 * partition,
             "committed_leader_epoch": 5, "committed_metadata": ""} for partition in range(4)]}
            for topic in range(3)],
    })


def metadata_response() -> BenchMessage:
    """A Metadata response of 10 topics with 6 partitions each."""
    return BenchMessage("Metadata response, 10 topics x 6 partitions", "Metadata", 12, "response", {
        "throttle_time_ms": 0, "cluster_id": "bench-cluster", "controller_id": 1,
        "brokers": [{"node_id": node, "host": f"broker-{node}.example", "port": 9092, "rack": None}
                    for node in range(3)],
        "topics": [{"error_code": 0, "name": f"topic-{topic}", "topic_id": topic_id(topic),
                    "is_internal": False, "topic_authorized_operations": -2147483648,
                    "partitions": [{"error_code": 0, "partition_index": partition,
                                    "leader_id": partition % 3, "leader_epoch": 4,
                                    "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2],
                                    "offline_replicas": []} for partition in range(6)]}
                   for topic in range(10)],
    })


def bench_messages() -> list[BenchMessage]:
    """Every message the codec benchmark times, in its table's order."""
    return [produce_request(), fetch_response(), init_producer_id_request(), txn_offset_commit_request(),
            metadata_response()]
