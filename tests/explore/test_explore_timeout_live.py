"""On Apache Kafka: a transaction that outlives the short timeout its InitProducerId asked for is aborted by the
coordinator, and the model judges every answer on the way without a departure (KIP-98's transaction.timeout.ms)."""

from __future__ import annotations

import time

import pytest

from conformance.explore.driver import PARTITIONS, TOPICS, ExploredTarget
from conformance.explore.model import Model
from conformance.explore.ops import READ_COMMITTED, Op
from conformance.extension import Extensions
from conformance.targets.pool import TargetPool

pytestmark = pytest.mark.broker

ABORT_WITHIN_S = 90  # Kafka looks for timed-out transactions every 10 s by default; generous on a loaded machine


def test_kafka_aborts_a_timed_out_transaction_and_the_model_allows_every_answer():
    pool = TargetPool(["kafka"], Extensions.for_run().target_kinds())
    try:
        kafka = pool.acquire("kafka")
        target = ExploredTarget(kafka.bootstrap, run=f"explore-timeout-{int(time.time())}")
        try:
            names = target.new_names()
            model = Model(TOPICS, PARTITIONS)
            judged = []

            def do(kind: str, **fields) -> dict:
                op = Op(kind, target.versions[kind][1], **fields)
                resolved = model.resolve(op, names)
                sent = time.monotonic()
                got, problem, _ = target.send(op, names, resolved)
                assert got is not None, problem
                departures = model.step(op, resolved, got, sent_at=sent, answered_at=time.monotonic())
                assert departures == [], [departure.message for departure in departures]
                judged.append((model.expect(op, resolved).rule.id, got["error"]))
                return got

            assert do("InitProducerId", txn=0, short_timeout=True)["error"] == 0
            assert do("AddPartitionsToTxn", txn=0, partitions=((0, 0),))["error"] == 0
            assert do("Produce", txn=0, topic=0, partition=0)["error"] == 0
            deadline = time.monotonic() + ABORT_WITHIN_S
            while not do("AddPartitionsToTxn", txn=0, partitions=((0, 1),))["error"]:
                assert time.monotonic() < deadline, f"no abort {ABORT_WITHIN_S} s past a 1 s transaction timeout"
                time.sleep(1.0)
            assert judged[-1][0] == "timeout.aborts"  # the refusal was judged by the rule, and allowed
            fetched = do("Fetch", topic=0, partition=0, isolation=READ_COMMITTED)
            assert fetched["values"] == [] and fetched["last_stable_offset"] == fetched["high_watermark"]
            assert do("EndTxn", txn=0, commit=True)["error"] != 0  # the coordinator aborted it: fenced
            again = do("InitProducerId", txn=0)
            assert again["error"] == 0
            assert do("AddPartitionsToTxn", txn=0, partitions=((0, 0),))["error"] == 0  # judged as always again
            assert judged[-1][0] == "add-partitions.accepted"
        finally:
            target.close()
    finally:
        for problem in pool.stop_all():
            print(problem)
