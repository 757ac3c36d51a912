"""On proxy+kafka: the proxy's faults between the requests of a history (a dropped request or answer, the
request sent again; a duplicated request; a delayed or reordered answer), every answer judged by the model
without a departure, and the log holding each write once (KIP-98's exactly-once)."""

from __future__ import annotations

import time

import pytest

from conformance.explore.driver import PARTITIONS, TOPICS, ExploredTarget
from conformance.explore.model import Model
from conformance.explore.ops import READ_COMMITTED, READ_UNCOMMITTED, Op
from conformance.extension import Extensions
from conformance.targets.pool import TargetPool

pytestmark = pytest.mark.broker


def test_kafka_behind_the_proxys_faults_answers_as_the_model_allows():
    pool = TargetPool(["proxy+kafka"], Extensions.for_run().target_kinds())
    try:
        proxied = pool.acquire("proxy+kafka")
        target = ExploredTarget(proxied.bootstrap, run=f"explore-faults-{int(time.time())}", inject=proxied.fault)
        try:
            names = target.new_names()
            model = Model(TOPICS, PARTITIONS)

            def op(kind: str, **fields) -> Op:
                return Op(kind, min(target.versions[kind][1], {"Produce": 11, "EndTxn": 4}.get(kind, 99)), **fields)

            def do(each: Op) -> dict:
                resolved = model.resolve(each, names)
                sent = time.monotonic()
                got, problem, attempts = target.send(each, names, resolved)
                assert got is not None, problem
                departures = model.step(each, resolved, got, sent_at=sent, answered_at=time.monotonic())
                assert departures == [], [departure.message for departure in departures]
                return got

            assert do(op("InitProducerId", txn=0, fault="drop_response"))["error"] == 0
            assert do(op("InitProducerId", producer=0, fault="drop_request"))["error"] == 0
            assert do(op("AddPartitionsToTxn", txn=0, partitions=((0, 0),), fault="duplicate_request"))["error"] == 0
            assert do(op("Produce", txn=0, fault="drop_response"))["error"] == 0  # sent again: not written again
            assert do(op("Produce", txn=0, fault="duplicate_request"))["error"] == 0
            assert do(op("Produce", producer=0, fault="drop_response"))["error"] == 0
            assert do(op("Produce", producer=0, fault="delay"))["error"] == 0
            seen = do(op("Fetch", isolation=READ_UNCOMMITTED, fault="duplicate_request"))
            assert sorted(seen["values"]) == ["v1", "v2", "v3", "v4"]  # each once
            assert do(op("EndTxn", txn=0, commit=True, fault="drop_response"))["error"] == 0
            deadline = time.monotonic() + 30
            while len(do(op("Fetch", isolation=READ_COMMITTED))["values"]) < 4:  # the markers are written after
                assert time.monotonic() < deadline
                time.sleep(0.2)
            # a pipelined burst whose first answer the proxy puts behind the second
            ops = [op("Produce", producer=0, fault="reorder"), op("Fetch", isolation=READ_UNCOMMITTED)]
            resolved = [model.resolve(each, names) for each in ops]
            sent = time.monotonic()
            answers = target.send_burst([(each, names, r) for each, r in zip(ops, resolved)], True)
            assert all(got is not None for got, *_ in answers), answers
            _, departures = model.step_concurrently(
                [(each, r, got, sent, at) for each, r, (got, _, _, at) in zip(ops, resolved, answers)])
            assert departures == []
        finally:
            target.close()
    finally:
        for problem in pool.stop_all():
            print(problem)
