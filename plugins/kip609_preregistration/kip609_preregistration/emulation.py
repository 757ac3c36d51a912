"""KIP-609 emulated in the proxy in front of a Kafka that implements only the adopted protocol.

The proxy keeps what the draft adds, the registration (partitions and group per transactional id, from an
AddPartitionsToTxn v6 until its EndTxn); the transaction itself is Kafka's:

- AddPartitionsToTxn v6 waits until the previous transaction's markers are written (DescribeTransactions
  leaves Prepare*), adds the group with AddOffsetsToTxn, remembers the partitions and answers NONE.
  A partition joins Kafka's transaction (AddPartitionsToTxn v3) only when a Produce first writes to it,
  so markers go to written partitions alone, as EndTxn v6 names them.
- AddPartitionsToTxn v3 and below (older clients) block too: CONCURRENT_TRANSACTIONS is retried here.
- In a registered transaction, a Produce to another partition gets UNKNOWN_TOPIC_OR_PARTITION and a
  TxnOffsetCommit for another group INVALID_GROUP_ID, without reaching Kafka.
- EndTxn v6 goes to Kafka as v5 once the partitions it names are known to be registered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance import Emulation, interceptor as act

from .broker import Broker

UNKNOWN_TOPIC_OR_PARTITION, INVALID_GROUP_ID, INVALID_REQUEST = 3, 24, 42


@dataclass
class Registration:
    producer_id: int
    epoch: int
    group: str | None
    partitions: set = field(default_factory=set)     # (topic name, partition)
    added: set = field(default_factory=set)          # those already in Kafka's transaction
    names: dict = field(default_factory=dict)        # topic id -> name (Produce v13 names topics by id)


class PreregistrationEmulation(Emulation):
    advertise = {"AddPartitionsToTxn": (0, 6), "EndTxn": (0, 6)}

    def __init__(self, target=None, *, broker=None):
        super().__init__()
        self.target = target
        self._broker = broker
        self.registered: dict[str, Registration] = {}

    @property
    def broker(self) -> Broker:
        if self._broker is None:
            inner = self.target.inner
            self._broker = Broker(inner.bootstrap, self.target.server.codec, inner.security)
        return self._broker

    # ------------------------------------------------------------------ requests
    def request(self, call):
        api = call.api
        if api == "AddPartitionsToTxn":
            if call.api_version >= 6:
                return self._register(call)
            if call.api_version <= 3:
                return act.defer(lambda: self._blocking_v3(call))
        elif api == "EndTxn" and call.api_version >= 6:
            return self._end(call)
        elif api == "Produce" and self.registered:
            return self._produce(call)
        elif api == "TxnOffsetCommit" and self.registered:
            return self._offsets(call)
        return None

    def _register(self, call):
        body = call.request()[1]
        txns = body["transactions"]
        if len(txns) != 1 or txns[0]["verify_only"]:
            if any(t.get("group_id") is not None for t in txns):
                return act.answer(call.encode_response({"error_code": INVALID_REQUEST}))
            # A broker's batch (KIP-890): nothing of the draft's, so Kafka answers it as v5.
            return self.translated(call, body, min(self.broker_max("AddPartitionsToTxn", 5), 5))
        return act.defer(lambda: self._registered(call, txns[0]))

    def _registered(self, call, txn: dict):
        txn_id, pid, epoch, group = txn["transactional_id"], txn["producer_id"], txn["producer_epoch"], txn["group_id"]
        self.broker.wait_markers(txn_id)           # the draft's block: no CONCURRENT_TRANSACTIONS answer
        error = self.broker.add_offsets(txn_id, pid, epoch, group) if group is not None else 0
        topics = [t["name"] for t in txn["topics"]]
        if not error:
            registration = Registration(pid, epoch, group, {(t["name"], p) for t in txn["topics"] for p in t["partitions"]})
            registration.names = self.broker.topic_ids(topics)
            with self.lock:
                self.registered[txn_id] = registration
        return act.answer(call.encode_response({"error_code": 0, "results_by_transaction": [{
            "transactional_id": txn_id, "topic_results": [
                {"name": t["name"], "results_by_partition": [{"partition_index": p, "partition_error_code": error}
                                                              for p in t["partitions"]]} for t in txn["topics"]]}]}))

    def _blocking_v3(self, call):
        body = call.request()[1]
        response = self.broker.add_partitions(body["v3_and_below_transactional_id"], body["v3_and_below_producer_id"],
                                              body["v3_and_below_producer_epoch"], body["v3_and_below_topics"])
        return act.answer(call.encode_response(response))

    def _end(self, call):
        body = call.request()[1]
        with self.lock:
            registration = self.registered.get(body["transactional_id"])
        named = {(t["name"], p) for t in body.get("topics") or [] for p in t["partitions"]}
        if registration is not None and not named <= registration.partitions:
            return act.answer(call.encode_response({"error_code": INVALID_REQUEST, "producer_id": -1, "producer_epoch": -1}))
        forwarded = {k: v for k, v in body.items() if k != "topics"}
        return self.translated(call, forwarded, min(self.broker_max("EndTxn", 5), 5))

    def _produce(self, call):
        body = call.request()[1]
        with self.lock:
            registration = self.registered.get(body.get("transactional_id"))
        if registration is None:
            return None
        written = [(registration.names.get(t.get("topic_id"), t.get("name")), p["index"])
                   for t in body["topic_data"] for p in t["partition_data"]]
        if not all(partition in registration.partitions for partition in written):
            # Refused as a whole: the draft forbids the write, and half a Produce cannot be forwarded.
            return act.answer(call.encode_response({"responses": [
                {**_topic_key(t), "partition_responses": [
                    {"index": p["index"], "error_code": UNKNOWN_TOPIC_OR_PARTITION, "base_offset": -1}
                    for p in t["partition_data"]]} for t in body["topic_data"]]}))
        new = sorted(set(written) - registration.added)
        if not new:
            return None
        return act.defer(lambda: self._add_then_forward(body["transactional_id"], registration, new))

    def _add_then_forward(self, txn_id: str, registration: Registration, new: list) -> act.Action:
        topics: dict[str, list[int]] = {}
        for name, partition in new:
            topics.setdefault(name, []).append(partition)
        self.broker.add_partitions(txn_id, registration.producer_id, registration.epoch,
                                   [{"name": name, "partitions": parts} for name, parts in topics.items()])
        with self.lock:
            registration.added.update(new)
        return act.forward()       # a failed add shows in Kafka's answer to the Produce

    def _offsets(self, call):
        body = call.request()[1]
        with self.lock:
            registration = self.registered.get(body["transactional_id"])
        if registration is None or body["group_id"] == registration.group:
            return None
        return act.answer(call.encode_response({"topics": [
            {**_topic_key(t), "partitions": [{"partition_index": p["partition_index"], "error_code": INVALID_GROUP_ID}
                                               for p in t["partitions"]]} for t in body["topics"]]}))

    # ------------------------------------------------------------------ responses
    def response(self, call, payload):
        if call.api != "EndTxn":
            return self.answer_as_asked(call, call.response(payload)[1]) if call.state.get("translated") else None
        _, body = call.response(payload)
        if body["error_code"] == 0:       # the registration ends with its transaction
            with self.lock:
                self.registered.pop(call.request()[1]["transactional_id"], None)
        return self.answer_as_asked(call, body) if call.state.get("translated") else None


def _topic_key(topic: dict) -> dict:
    # Newer versions name topics by id, older ones by name; the answer uses what the request did.
    return {key: topic[key] for key in ("name", "topic_id") if key in topic}
