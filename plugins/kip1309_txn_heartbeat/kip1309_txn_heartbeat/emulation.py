"""KIP-1309 emulated in the proxy in front of a Kafka that implements only the adopted protocol.

- InitProducerId v7: the draft's checks are made here, then the request goes to the broker as the newest
  version it has (v5/v6, the heartbeat interval left out) and the answer is re-encoded as v7.
- TxnHeartbeat: answered here against the producer id and epoch the broker last gave the transactional id.
- Missed heartbeats: once a producer with an open transaction has not heartbeaten for three intervals,
  the emulation aborts the transaction itself with EndTxn (its own client, straight to the coordinator).
Only the heartbeat bookkeeping lives here; the transactions are the broker's.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from conformance import Emulation, interceptor as act

INVALID_REQUEST, INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED = 42, 47, 49, 90
MISSED = 3                       # the draft: aborted "after 3 times this interval"
OPENS = {"AddPartitionsToTxn", "AddOffsetsToTxn", "Produce"}


@dataclass
class Producer:
    producer_id: int
    epoch: int
    interval_ms: int
    last: float
    open: bool = False           # a transaction is under way (only then is there something to abort)


class TxnHeartbeatEmulation(Emulation):
    advertise = {"InitProducerId": (0, 7), "TxnHeartbeat": (0, 0)}

    def __init__(self, target=None, *, clock=time.monotonic, abort=None):
        super().__init__()
        self.target = target
        self.clock = clock
        self.producers: dict[str, Producer] = {}
        self.aborted: list[tuple[str, int, int]] = []     # (transactional id, producer id, epoch), for tests
        self._abort = abort or self._end_txn
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None

    # ------------------------------------------------------------------ requests
    def request(self, call):
        if call.api == "InitProducerId" and call.api_version >= 7:
            return self._init(call)
        if call.api == "TxnHeartbeat":
            return act.answer(call.encode_response(self._heartbeat(call.request()[1])))
        if call.api in OPENS and self.producers:
            self._note_open(call)
        return None

    def _init(self, call):
        body = call.request()[1]
        interval = body.get("transaction_heartbeat_interval_ms", 0)
        if interval and (body.get("enable2_pc") or interval > body["transaction_timeout_ms"]):
            return act.answer(call.encode_response({"error_code": INVALID_REQUEST, "producer_id": -1,
                                                    "producer_epoch": -1}))
        call.state["heartbeat_interval_ms"] = interval
        version = min(self.broker_max("InitProducerId", 5), 6)
        if version < 6 and (body.get("enable2_pc") or body.get("keep_prepared_txn")):
            return act.answer(call.encode_response({"error_code": INVALID_REQUEST, "producer_id": -1,
                                                    "producer_epoch": -1}))
        forwarded = {k: v for k, v in body.items() if k != "transaction_heartbeat_interval_ms"}
        return self.translated(call, forwarded, version)

    def _heartbeat(self, body: dict) -> dict:
        with self.lock:
            producer = self.producers.get(body["transactional_id"])
            if producer is None or producer.producer_id != body["producer_id"]:
                return {"error_code": INVALID_PRODUCER_ID_MAPPING}
            if body["producer_epoch"] < producer.epoch:
                return {"error_code": PRODUCER_FENCED}
            if body["producer_epoch"] > producer.epoch:
                return {"error_code": INVALID_PRODUCER_EPOCH}
            producer.last = self.clock()
        return {"error_code": 0}

    def _note_open(self, call) -> None:
        try:
            body = call.request()[1]
        except Exception:  # noqa: BLE001 - a request the codec cannot read is the broker's business
            return
        ids = [body.get("transactional_id"), body.get("v3_and_below_transactional_id"),
               *(t.get("transactional_id") for t in body.get("transactions") or [])]
        with self.lock:
            for txn_id in filter(None, ids):
                if txn_id in self.producers:
                    self.producers[txn_id].open = True

    # ------------------------------------------------------------------ responses
    def response(self, call, payload):
        if call.state.get("translated") and call.api == "InitProducerId":
            _, body = call.response(payload)
            self._track(call, body)
            return self.answer_as_asked(call, body)
        if call.api == "EndTxn" and self.producers:
            txn_id = call.request()[1]["transactional_id"]
            with self.lock:
                if txn_id in self.producers:
                    self.producers[txn_id].open = False
        return None

    def _track(self, call, body: dict) -> None:
        txn_id = call.request()[1].get("transactional_id")
        if body["error_code"] or not txn_id:
            return
        interval = call.state["heartbeat_interval_ms"]
        with self.lock:
            if interval:
                self.producers[txn_id] = Producer(body["producer_id"], body["producer_epoch"], interval, self.clock())
            else:
                self.producers.pop(txn_id, None)      # heartbeats switched off for this id
        if interval:
            self._start_watchdog()

    # ------------------------------------------------------------------ missed heartbeats
    def overdue(self) -> list[tuple[str, Producer]]:
        """Producers with an open transaction and no heartbeat for MISSED intervals (forgotten here)."""
        now = self.clock()
        with self.lock:
            late = [(txn_id, p) for txn_id, p in self.producers.items()
                    if p.open and now - p.last > MISSED * p.interval_ms / 1000]
            for txn_id, _ in late:
                del self.producers[txn_id]
        return late

    def check(self) -> None:
        for txn_id, producer in self.overdue():
            self.aborted.append((txn_id, producer.producer_id, producer.epoch))
            try:
                self._abort(txn_id, producer)
            except Exception:  # noqa: BLE001 - the broker's own timeout still aborts it eventually
                pass

    def _start_watchdog(self) -> None:
        with self.lock:
            if self._watchdog is not None:
                return
            self._watchdog = threading.Thread(target=self._watch, name="kip1309-watchdog", daemon=True)
        self._watchdog.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            with self.lock:
                shortest = min((p.interval_ms for p in self.producers.values()), default=1000)
            # A quarter interval keeps the abort close to 3 intervals; never a busy loop.
            if self._stop.wait(min(max(shortest / 4000, 0.05), 1.0)):
                return
            self.check()

    def _end_txn(self, txn_id: str, producer: Producer) -> None:
        from conformance import Cluster

        inner = self.target.inner
        cluster = Cluster(inner.bootstrap, self.target.server.codec, security=inner.security,
                          client_id="kip1309-emulation")
        try:
            node = cluster.coordinator(txn_id)
            version = min(cluster.best_version("EndTxn"), 5)
            cluster.connection(node).request("EndTxn", version, {
                "transactional_id": txn_id, "producer_id": producer.producer_id,
                "producer_epoch": producer.epoch, "committed": False}, step="kip1309-abort")
        finally:
            cluster.close()

    def close(self) -> None:
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.join(5)
