"""KIP-447 as first drafted, emulated in the proxy in front of a Kafka that implements the adopted KIP-447.

The proxy keeps what the draft adds to the coordinator: the newest generation seen per consumer group and
which transactional id each group's input partition was last assigned to. The producers are Kafka's:

- InitProducerId v7 goes to Kafka as the newest version it has (v5/v6, the group fields left out) and the
  answer comes back as v7; one from a generation older than the newest seen is refused (ILLEGAL_GENERATION;
  the draft names no code).
- When a partition moves to another transactional id while its previous owner has a transaction open
  (AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit or a transactional Produce seen, no EndTxn yet), the
  proxy first fences that owner as a new instance of it would: InitProducerId for its transactional id,
  which makes Kafka abort the open transaction and bump the epoch.
"""

from __future__ import annotations

import time

from conformance import Cluster, Emulation, interceptor as act

ILLEGAL_GENERATION = 22
RETRIABLE = {14, 15, 16, 51}      # coordinator loading / not available / not coordinator, concurrent transactions
OPENS = {"AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "Produce"}


class GroupAwareEmulation(Emulation):
    advertise = {"InitProducerId": (0, 7)}

    def __init__(self, target=None, *, fence=None):
        super().__init__()
        self.target = target
        self.generations: dict[str, int] = {}
        self.owners: dict[tuple[str, str, int], str] = {}   # (group, topic, partition) -> transactional id
        self.open: set[str] = set()
        self.fenced: list[str] = []
        self._fence = fence or self._init_producer_id

    # ------------------------------------------------------------------ requests
    def request(self, call):
        if call.api == "InitProducerId" and call.api_version >= 7:
            return self._init(call)
        if call.api in OPENS and self.owners:
            self._note_open(call.request()[1])
        return None

    def _init(self, call):
        body = call.request()[1]
        txn_id, group = body["transactional_id"], body.get("consumer_group_id")
        forwarded = {k: v for k, v in body.items()
                     if k not in ("consumer_group_id", "consumer_group_generation", "assigned_partitions")}
        version = min(self.broker_max("InitProducerId", 5), 6)
        if group is None:
            return self.translated(call, forwarded, version)
        generation = body["consumer_group_generation"]
        assigned = [(group, t["name"], p) for t in body["assigned_partitions"] for p in t["partitions"]]
        with self.lock:
            if generation < self.generations.get(group, generation):
                return act.answer(call.encode_response({"error_code": ILLEGAL_GENERATION, "producer_id": -1,
                                                        "producer_epoch": -1}))
            self.generations[group] = generation
            victims = {self.owners[key] for key in assigned if self.owners.get(key, txn_id) != txn_id} & self.open
            self.owners.update({key: txn_id for key in assigned})
        if not victims:
            return self.translated(call, forwarded, version)

        def fence_then_forward():
            for victim in sorted(victims):
                self._fence(victim)
                with self.lock:
                    self.open.discard(victim)
                    self.fenced.append(victim)
            return self.translated(call, forwarded, version)

        return act.defer(fence_then_forward)

    def _note_open(self, body: dict) -> None:
        ids = [body.get("transactional_id"), body.get("v3_and_below_transactional_id"),
               *(t.get("transactional_id") for t in body.get("transactions") or [])]
        with self.lock:
            self.open.update(txn_id for txn_id in ids if txn_id and txn_id in self.owners.values())

    # ------------------------------------------------------------------ responses
    def response(self, call, payload):
        if call.api == "InitProducerId" and call.state.get("translated"):
            return self.answer_as_asked(call, call.response(payload)[1])
        if call.api == "EndTxn" and self.open and call.response(payload)[1]["error_code"] == 0:
            with self.lock:
                self.open.discard(call.request()[1]["transactional_id"])
        return None

    # ------------------------------------------------------------------ fencing
    def _init_producer_id(self, txn_id: str) -> None:
        """As a new instance of ``txn_id``'s producer: Kafka aborts its open transaction and bumps the epoch."""
        inner = self.target.inner
        cluster = Cluster(inner.bootstrap, self.target.server.codec, security=inner.security,
                          client_id="kip447-draft-emulation")
        try:
            connection = cluster.connection(cluster.coordinator(txn_id))
            version = min(cluster.best_version("InitProducerId"), 5)
            deadline = time.monotonic() + 30
            while True:
                error = connection.request("InitProducerId", version, {
                    "transactional_id": txn_id, "transaction_timeout_ms": 60000, "producer_id": -1,
                    "producer_epoch": -1}, step="kip447-fence").response["error_code"]
                if error not in RETRIABLE or time.monotonic() > deadline:
                    return
                time.sleep(0.02)
        finally:
            cluster.close()
