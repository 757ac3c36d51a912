"""The operations an explored history is made of, and the wire requests and answers they become (sans-IO).

An operation names its actors by index (transactional id 0, idempotent producer 1, topic 0 partition 1, group 0)
and says what is wrong with it on purpose (``stale``: an older generation's producer id and epoch; a sequence
that skips or repeats). The model resolves it against its state into concrete values (:class:`Resolved`);
:func:`request` turns those into an API, a version and a body; :func:`answer` reads what the model judges from
the response.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..protocol import records
from ..protocol.compression import Compression
from ..runner.steps.fetch import visible_records

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
LATEST = -1
TRANSACTION_TIMEOUT_MS = 120_000  # the usual timeout: longer than most histories (the model still counts it)
# A short transaction timeout an InitProducerId may ask for, and the wait (an operation of its own) that outlasts
# it: the coordinator may then abort the transaction (KIP-98's transaction.timeout.ms), and the model allows it.
SHORT_TRANSACTION_TIMEOUT_MS = 1_000
WAIT_MS = 1_500


@dataclass(frozen=True)
class Op:
    """One request of a history; ``kind`` is the API, the other fields what the driver drew."""

    kind: str
    version: int
    txn: int | None = None            # a transactional id, by index
    producer: int | None = None       # an idempotent producer, by index
    topic: int = 0
    partition: int = 0
    group: int | None = None
    stale: bool = False               # send an older generation's producer id and epoch
    sequence: str = "next"            # next | gap | repeat
    commit: bool = True
    isolation: int = READ_COMMITTED
    require_stable: bool = False
    compression: str = "none"
    count: int = 1
    offset: int = 0                   # TxnOffsetCommit's offset
    partitions: tuple = ()            # AddPartitionsToTxn: ((topic, partition), ...)
    short_timeout: bool = False       # InitProducerId asks for SHORT_TRANSACTION_TIMEOUT_MS
    fault: str = ""                   # on proxy+SPEC: the proxy's fault on this request (delay, drop_response, ...)

    @property
    def timeout_ms(self) -> int:
        """The transaction timeout an InitProducerId asks for."""
        return SHORT_TRANSACTION_TIMEOUT_MS if self.short_timeout else TRANSACTION_TIMEOUT_MS

    def describe(self) -> str:
        """A short line naming the operation, for histories on the console and in results."""
        who = (f" txn{self.txn}" if self.txn is not None else "") + (
            f" producer{self.producer}" if self.producer is not None else "")
        where = {"Produce": f" t{self.topic}-{self.partition} seq={self.sequence} x{self.count} {self.compression}",
                 "Fetch": f" t{self.topic}-{self.partition} {'committed' if self.isolation else 'uncommitted'}",
                 "ListOffsets": f" t{self.topic}-{self.partition} {'committed' if self.isolation else 'uncommitted'}",
                 "AddPartitionsToTxn": " " + ",".join(f"t{t}-{p}" for t, p in self.partitions),
                 "AddOffsetsToTxn": f" group{self.group}",
                 "TxnOffsetCommit": f" group{self.group} t{self.topic}-{self.partition}@{self.offset}",
                 "OffsetFetch": f" group{self.group}{' require_stable' if self.require_stable else ''}",
                 "EndTxn": " commit" if self.commit else " abort",
                 "InitProducerId": f" timeout={self.timeout_ms}ms" if self.short_timeout else "",
                 "Wait": f" {WAIT_MS}ms"}.get(self.kind, "")
        return (f"{self.kind} v{self.version}{who}{where}{' STALE' if self.stale else ''}"
                f"{f' [proxy.{self.fault}]' if self.fault else ''}")


@dataclass
class Resolved:
    """Concrete values of an operation: names, ids, epochs, sequences, record values."""

    transactional_id: str | None = None
    producer_id: int = -1
    producer_epoch: int = -1
    topic: str = ""
    topic_id: object = None
    group: str = ""
    base_sequence: int = -1
    values: tuple[str, ...] = ()
    partitions: tuple = ()            # ((topic name, partition), ...)
    names: dict = field(default_factory=dict)  # topic name -> index, for answers


def batch_bytes(resolved: Resolved, op: Op) -> bytes:
    """The record batch of a Produce: one record per value, transactional when a transactional id writes."""
    batch = records.RecordBatch(
        attributes=records.TRANSACTIONAL_FLAG if resolved.transactional_id is not None else 0,
        base_timestamp=int(time.time() * 1000), producer_id=resolved.producer_id,
        producer_epoch=resolved.producer_epoch, base_sequence=resolved.base_sequence,
        records=[records.Record(offset_delta=index, value=value.encode()) for index, value in enumerate(resolved.values)])
    return records.encode_batch(batch, compression=Compression[op.compression.upper()])


def request(op: Op, resolved: Resolved) -> tuple[str, int, dict]:
    """(API, version, body) of ``op``; the codec writes the fields its version has."""
    r = resolved
    if op.kind == "InitProducerId":
        return op.kind, op.version, {"transactional_id": r.transactional_id, "transaction_timeout_ms": op.timeout_ms,
                                     "producer_id": -1, "producer_epoch": -1}
    if op.kind == "AddPartitionsToTxn":
        topics: dict[str, list[int]] = {}
        for name, partition in r.partitions:
            topics.setdefault(name, []).append(partition)
        return op.kind, op.version, {
            "v3_and_below_transactional_id": r.transactional_id, "v3_and_below_producer_id": r.producer_id,
            "v3_and_below_producer_epoch": r.producer_epoch,
            "v3_and_below_topics": [{"name": name, "partitions": parts} for name, parts in topics.items()]}
    if op.kind == "Produce":
        return op.kind, op.version, {
            "transactional_id": r.transactional_id, "acks": -1, "timeout_ms": 30_000,
            "topic_data": [{"name": r.topic, "topic_id": r.topic_id,
                            "partition_data": [{"index": op.partition, "records": batch_bytes(r, op)}]}]}
    if op.kind == "AddOffsetsToTxn":
        return op.kind, op.version, {"transactional_id": r.transactional_id, "producer_id": r.producer_id,
                                     "producer_epoch": r.producer_epoch, "group_id": r.group}
    if op.kind == "TxnOffsetCommit":
        return op.kind, op.version, {
            "transactional_id": r.transactional_id, "group_id": r.group, "producer_id": r.producer_id,
            "producer_epoch": r.producer_epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": r.topic, "partitions": [{"partition_index": op.partition, "committed_offset": op.offset,
                                                          "committed_leader_epoch": -1, "committed_metadata": ""}]}]}
    if op.kind == "EndTxn":
        return op.kind, op.version, {"transactional_id": r.transactional_id, "producer_id": r.producer_id,
                                     "producer_epoch": r.producer_epoch, "committed": op.commit}
    if op.kind == "Fetch":
        return op.kind, op.version, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 4 << 20, "isolation_level": op.isolation,
            "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": r.topic, "topic_id": r.topic_id, "partitions": [
                {"partition": op.partition, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 4 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}
    if op.kind == "ListOffsets":
        return op.kind, op.version, {
            "replica_id": -1, "isolation_level": op.isolation, "timeout_ms": 5000,
            "topics": [{"name": r.topic, "partitions": [{"partition_index": op.partition, "current_leader_epoch": -1,
                                                         "timestamp": LATEST}]}]}
    if op.kind == "OffsetFetch":
        asked = [{"name": name, "partition_indexes": [partition]} for name, partition in r.partitions]
        return op.kind, op.version, {"group_id": r.group, "topics": asked, "require_stable": op.require_stable,
                                     "groups": [{"group_id": r.group, "topics": asked}]}
    if op.kind == "DescribeTransactions":
        return op.kind, op.version, {"transactional_ids": [r.transactional_id]}
    if op.kind == "ListTransactions":
        return op.kind, op.version, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
    raise ValueError(f"unknown operation {op.kind}")


def answer(op: Op, resolved: Resolved, response: dict) -> dict:
    """What the model judges of ``response``: ``error`` (the one that concerns the operation) and the fields it
    checks, in plain values."""
    kind = op.kind
    if kind in ("InitProducerId", "AddOffsetsToTxn", "EndTxn"):
        return {"error": response["error_code"], "producer_id": response.get("producer_id"),
                "producer_epoch": response.get("producer_epoch")}
    if kind == "AddPartitionsToTxn":
        results = response.get("results_by_topic_v3_and_below") or []
        errors = [partition["partition_error_code"] for topic in results for partition in topic["results_by_partition"]]
        return {"error": next((error for error in errors if error), 0) if errors else response.get("error_code", 0)}
    if kind == "Produce":
        partition = response["responses"][0]["partition_responses"][0]
        return {"error": partition["error_code"], "base_offset": partition["base_offset"]}
    if kind == "TxnOffsetCommit":
        return {"error": response["topics"][0]["partitions"][0]["error_code"]}
    if kind == "Fetch":
        partition = response["responses"][0]["partitions"][0]
        batches = list(records.decode_batches(partition.get("records") or b""))
        seen = visible_records(batches, partition.get("aborted_transactions") or [], op.isolation)
        offsets = {}
        for batch in batches:
            if isinstance(batch, records.RecordBatch) and not batch.is_control:
                for record in batch.records:
                    offsets[(record.value or b"").decode(errors="replace")] = batch.base_offset + record.offset_delta
        return {"error": partition["error_code"], "high_watermark": partition["high_watermark"],
                "last_stable_offset": partition.get("last_stable_offset", -1),
                "values": [(record.value or b"").decode(errors="replace") for record in seen], "offsets": offsets}
    if kind == "ListOffsets":
        partition = response["topics"][0]["partitions"][0]
        return {"error": partition["error_code"], "offset": partition.get("offset", -1)}
    if kind == "OffsetFetch":
        if op.version >= 8:
            group = response["groups"][0]
            topics, error = group["topics"], group["error_code"]
        else:
            topics, error = response["topics"], response.get("error_code", 0)
        found = {}
        for topic in topics:
            for partition in topic["partitions"]:
                found[(resolved.names.get(topic["name"], topic["name"]), partition["partition_index"])] = (
                    partition["error_code"], partition["committed_offset"])
        return {"error": error, "partitions": found}
    if kind == "DescribeTransactions":
        state = response["transaction_states"][0]
        return {"error": state["error_code"], "state": state["transaction_state"], "producer_id": state["producer_id"]}
    if kind == "ListTransactions":
        return {"error": response["error_code"],
                "listed": {entry["transactional_id"]: (entry["transaction_state"], entry["producer_id"])
                           for entry in response["transaction_states"]}}
    raise ValueError(f"unknown operation {kind}")
