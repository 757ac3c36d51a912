"""Start the tier's transactional ids a few epochs before the end of the producer epoch space.

``--start-epoch N`` fast-forwards every transactional id the clients will use to epoch N through the raw
client (KIP-360's InitProducerId at the current id and epoch, :mod:`conformance.client.epochs`) before any
client starts, so that their transactions, and the re-initialisations faults cause, cross the end of the
space (Kafka moves the producer to a new producer id at 32766). After the run the coordinator is asked where
each id ended: a producer id other than the one fast-forwarded means the boundary was crossed.
"""

from __future__ import annotations

import time

from ..client.cluster import Cluster
from ..client.epochs import fast_forward
from .history import History
from .workload import Plan

RETRIABLE = {14, 15, 16, 51}  # loading, not available, not coordinator, concurrent transactions


def _connection(cluster: Cluster, transactional_id: str):
    return cluster.connection(cluster.coordinator(transactional_id, wait=30.0))


def fast_forward_all(plan: Plan, processes: list[str], to_epoch: int, history: History) -> dict:
    """Each process's transactional id at ``to_epoch``; returns {transactional id: where it started the run}."""
    cluster = Cluster(plan.bootstrap, timeout=10.0, security=plan.security)
    started = {}
    try:
        cluster.api_versions()
        version = cluster.best_version("InitProducerId")
        for process in processes:
            transactional_id = plan.transactional_id(process)
            connection = _connection(cluster, transactional_id)
            first = _init(connection, version, transactional_id)
            done = fast_forward(connection, transactional_id, first["producer_id"], first["producer_epoch"], to_epoch,
                                version=version, timeout_ms=plan.transaction_timeout_ms)
            started[transactional_id] = {"producer_id": done.producer_id, "producer_epoch": done.producer_epoch,
                                         "per_second": round(done.per_second)}
            history.record("harness", "epoch", transactional_id=transactional_id, producer_id=done.producer_id,
                           producer_epoch=done.producer_epoch, bumps=done.bumps, seconds=round(done.seconds, 2))
    finally:
        cluster.close()
    return started


def where_they_ended(plan: Plan, started: dict) -> dict:
    """{transactional id: {start, end, crossed}} from DescribeTransactions at each id's coordinator."""
    cluster = Cluster(plan.bootstrap, timeout=10.0, security=plan.security)
    ended = {}
    try:
        cluster.api_versions()
        for transactional_id, start in started.items():
            answer = _connection(cluster, transactional_id).request(
                "DescribeTransactions", 0, {"transactional_ids": [transactional_id]}).response
            state = answer["transaction_states"][0]
            end = {"producer_id": state["producer_id"], "producer_epoch": state["producer_epoch"],
                   "state": state["transaction_state"]}
            ended[transactional_id] = {"start": start, "end": end,
                                       "crossed": end["producer_id"] != start["producer_id"]}
    finally:
        cluster.close()
    return ended


def _init(connection, version: int, transactional_id: str) -> dict:
    body = {"transactional_id": transactional_id, "transaction_timeout_ms": 60_000, "producer_id": -1,
            "producer_epoch": -1}
    deadline = time.monotonic() + 30
    while True:
        answer = connection.request("InitProducerId", version, body).response
        if answer["error_code"] == 0:
            return answer
        if answer["error_code"] not in RETRIABLE or time.monotonic() > deadline:
            raise RuntimeError(f"InitProducerId for {transactional_id}: error {answer['error_code']}")
        time.sleep(0.2)
