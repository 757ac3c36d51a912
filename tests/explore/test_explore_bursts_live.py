"""On Apache Kafka: requests in flight together (pipelined on one connection, or each on its own) are answered
as some order of them, and the model, trying every order, finds no departure."""

from __future__ import annotations

import time

import pytest

from conformance.explore.driver import PARTITIONS, TOPICS, ExploredTarget
from conformance.explore.model import Model
from conformance.explore.ops import READ_COMMITTED, Op
from conformance.extension import Extensions
from conformance.targets.pool import TargetPool

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("pipelined", [True, False], ids=["pipelined", "connections"])
def test_kafka_serves_a_burst_in_an_order_the_model_allows(pipelined):
    pool = TargetPool(["kafka"], Extensions.for_run().target_kinds())
    try:
        kafka = pool.acquire("kafka")
        target = ExploredTarget(kafka.bootstrap, run=f"explore-burst-{int(pipelined)}-{int(time.time())}")
        try:
            names = target.new_names()
            model = Model(TOPICS, PARTITIONS)

            def op(kind: str, **fields) -> Op:
                return Op(kind, target.versions[kind][1], **fields)

            def burst(*ops: Op) -> list[dict]:
                resolved = [model.resolve(each, names) for each in ops]
                sent = time.monotonic()
                answers = target.send_burst([(each, names, r) for each, r in zip(ops, resolved)], pipelined)
                assert all(got is not None for got, *_ in answers), [problem for _, problem, *_ in answers]
                order, departures = model.step_concurrently(
                    [(each, r, got, sent, at) for each, r, (got, _, _, at) in zip(ops, resolved, answers)])
                # every order departed: the answers say why the others did (only the order sent is reported)
                assert departures == [], ([departure.message for departure in departures], answers)
                return [got for got, *_ in answers]

            for producer in (0, 1):
                burst(op("InitProducerId", producer=producer), op("InitProducerId", txn=producer))
            burst(op("AddPartitionsToTxn", txn=0, partitions=((0, 0),)),
                  op("AddPartitionsToTxn", txn=1, partitions=((0, 0),)))
            for _ in range(3):
                got = burst(op("Produce", producer=0), op("Produce", producer=1), op("Produce", txn=0),
                            op("Fetch", isolation=READ_COMMITTED))
                assert [answer["error"] for answer in got[:3]] == [0, 0, 0]
            burst(op("EndTxn", txn=0, commit=False), op("Produce", txn=1), op("Fetch", isolation=READ_COMMITTED))
            offsets = sorted(write.base_offset for write in model.partitions[(0, 0)].writes)
            assert len(offsets) == 10 and len(set(offsets)) == 10  # ten writes, each at an offset of its own
        finally:
            target.close()
    finally:
        for problem in pool.stop_all():
            print(problem)
