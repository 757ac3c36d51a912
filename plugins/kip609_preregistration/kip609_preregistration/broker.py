"""The emulation's own client: the adopted calls a draft request is translated into, retried the way the
draft's blocking calls would wait (CONCURRENT_TRANSACTIONS while the previous markers are written)."""

from __future__ import annotations

import time

from conformance import Cluster

CONCURRENT_TRANSACTIONS = 51
COORDINATOR_RETRIABLE = {14, 15, 16}
BLOCK_S = 30.0      # the draft names no limit; the Java client's default request.timeout.ms
PENDING = {"PrepareCommit", "PrepareAbort", "PrepareEpochFence"}


class Broker:
    """Calls to the broker behind the proxy, each on a fresh :class:`Cluster` (worker threads never share one)."""

    def __init__(self, bootstrap: str, codec, security=None):
        self.bootstrap, self.codec, self.security = bootstrap, codec, security
        self.exchanges = 0          # requests sent, for the round-trip benchmark

    def _cluster(self) -> Cluster:
        return Cluster(self.bootstrap, self.codec, security=self.security, client_id="kip609-emulation")

    def _retrying(self, cluster: Cluster, destination, api: str, version: int, body: dict, error) -> dict:
        deadline = time.monotonic() + BLOCK_S
        while True:
            self.exchanges += 1
            response = cluster.connection(destination).request(api, version, body, step="kip609").response
            if error(response) not in ({CONCURRENT_TRANSACTIONS} | COORDINATOR_RETRIABLE) \
                    or time.monotonic() > deadline:
                return response
            time.sleep(0.02)

    def wait_markers(self, txn_id: str) -> None:
        """Returns once the previous transaction of ``txn_id`` has all its markers written (or after BLOCK_S)."""
        cluster = self._cluster()
        try:
            node = cluster.coordinator(txn_id)
            deadline = time.monotonic() + BLOCK_S
            while time.monotonic() < deadline:
                self.exchanges += 1
                state = cluster.connection(node).request("DescribeTransactions", 0, {"transactional_ids": [txn_id]},
                                                         step="kip609").response["transaction_states"][0]
                if state["transaction_state"] not in PENDING:
                    return
                time.sleep(0.02)
        finally:
            cluster.close()

    def add_partitions(self, txn_id: str, pid: int, epoch: int, topics: list[dict]) -> dict:
        """AddPartitionsToTxn v3 (the clients' version), retried on CONCURRENT_TRANSACTIONS: the v3 response."""
        cluster = self._cluster()
        try:
            return self._retrying(cluster, cluster.coordinator(txn_id), "AddPartitionsToTxn", 3, {
                "v3_and_below_transactional_id": txn_id, "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": topics},
                lambda r: max((p["partition_error_code"] for t in r["results_by_topic_v3_and_below"]
                               for p in t["results_by_partition"]), default=0))
        finally:
            cluster.close()

    def add_offsets(self, txn_id: str, pid: int, epoch: int, group: str) -> int:
        cluster = self._cluster()
        try:
            version = min(cluster.best_version("AddOffsetsToTxn"), 4)
            return self._retrying(cluster, cluster.coordinator(txn_id), "AddOffsetsToTxn", version, {
                "transactional_id": txn_id, "producer_id": pid, "producer_epoch": epoch, "group_id": group},
                lambda r: r["error_code"])["error_code"]
        finally:
            cluster.close()

    def topic_ids(self, names: list[str]) -> dict:
        """``{topic id: name}`` (Produce v13 names topics by id)."""
        cluster = self._cluster()
        try:
            self.exchanges += 1
            return {t["topic_id"]: t["name"] for t in cluster.metadata(names)["topics"] if "topic_id" in t}
        finally:
            cluster.close()
