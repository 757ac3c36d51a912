"""The model and requests in flight together: every order the target may serve them in is allowed, and a
departure only when every order departs. Answers written by hand, no broker."""

from __future__ import annotations

import pytest

from conformance.explore.model import Inconclusive, Model, Names
from conformance.explore.ops import READ_COMMITTED, READ_UNCOMMITTED, Op

NONE, COORDINATOR_LOAD_IN_PROGRESS = 0, 14


class History:
    def __init__(self):
        self.model = Model()
        self.names = Names("test")

    def do(self, op: Op, **answer) -> list[str]:
        resolved = self.model.resolve(op, self.names)
        answer.setdefault("error", NONE)
        return [departure.rule.id for departure in self.model.step(op, resolved, answer)]

    def burst(self, *members: tuple[Op, dict]) -> tuple[tuple, list[str]]:
        steps = []
        for op, answer in members:
            steps.append((op, self.model.resolve(op, self.names), {"error": NONE, **answer}, 0.0, 0.0))
        order, departures = self.model.step_concurrently(steps)
        return order, [departure.rule.id for departure in departures]


def fetch(isolation=READ_UNCOMMITTED) -> Op:
    return Op("Fetch", 12, isolation=isolation)


def produce(producer: int) -> Op:
    return Op("Produce", 9, producer=producer)


def init_both(history: History) -> None:
    assert history.do(Op("InitProducerId", 3, producer=0), producer_id=1, producer_epoch=0) == []
    assert history.do(Op("InitProducerId", 3, producer=1), producer_id=2, producer_epoch=0) == []


def test_two_writes_in_flight_may_be_served_in_either_order():
    history = History()
    init_both(history)
    # sent 0 then 1, served 1 then 0: allowed
    assert history.burst((produce(0), {"base_offset": 1}), (produce(1), {"base_offset": 0})) == ((1, 0), [])
    assert [write.base_offset for write in history.model.partitions[(0, 0)].writes] == [0, 1]


def test_a_read_in_flight_with_a_write_may_see_it_or_not():
    for seen in ([], ["v1"]):
        history = History()
        init_both(history)
        offsets = {"v1": 0} if seen else {}
        assert history.burst((fetch(), {"high_watermark": len(seen), "last_stable_offset": len(seen),
                                        "values": seen, "offsets": offsets}),
                             (produce(0), {"base_offset": 0}))[1] == []


def test_a_read_committed_in_flight_with_a_commit_may_see_the_records():
    history = History()
    assert history.do(Op("InitProducerId", 3, txn=0), producer_id=1, producer_epoch=0) == []
    assert history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),))) == []
    assert history.do(Op("Produce", 9, txn=0), base_offset=0) == []
    read = fetch(READ_COMMITTED)
    assert history.burst((read, {"high_watermark": 2, "last_stable_offset": 2, "values": ["v1"], "offsets": {"v1": 0}}),
                         (Op("EndTxn", 3, txn=0, commit=True), {}))[1] == []
    history = History()
    assert history.do(Op("InitProducerId", 3, txn=0), producer_id=1, producer_epoch=0) == []
    assert history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),))) == []
    assert history.do(Op("Produce", 9, txn=0), base_offset=0) == []
    # an abort in flight: in no order may read_committed see the records
    order, departures = history.burst(
        (read, {"high_watermark": 2, "last_stable_offset": 2, "values": ["v1"], "offsets": {"v1": 0}}),
        (Op("EndTxn", 3, txn=0, commit=False), {}))
    assert departures[0] == "read-committed.committed-only" and order == (0,)  # the order sent, up to it


def test_what_no_order_explains_departs():
    history = History()
    init_both(history)
    history.do(produce(0), base_offset=0)
    order, departures = history.burst((produce(0), {"base_offset": 0}), (produce(1), {"base_offset": 0}))
    assert departures == ["read.known-records"]  # two writes at the offset an earlier write holds


def test_a_burst_no_order_can_judge_is_inconclusive():
    history = History()
    with pytest.raises(Inconclusive):
        history.burst((Op("InitProducerId", 3, producer=0), {"error": COORDINATOR_LOAD_IN_PROGRESS}),
                      (Op("InitProducerId", 3, producer=1), {"producer_id": 2, "producer_epoch": 0}))


def test_a_read_in_flight_with_a_write_may_return_it_with_the_offsets_from_before_it():
    """Kafka takes a Fetch's high watermark and last stable offset before it reads the log: a write served in
    between is returned with the fields of the log without it (a run on Kafka 3.5.2 wrote a case out of it)."""
    history = History()
    init_both(history)
    read = {"high_watermark": 0, "last_stable_offset": 0, "values": ["v1"], "offsets": {"v1": 0}}
    assert history.burst((fetch(READ_COMMITTED), read), (produce(0), {"base_offset": 0})) == ((1, 0), [])
    # alone, after the write was answered, the same fields leave it out: the write came before the Fetch was sent
    assert history.do(fetch(READ_COMMITTED), **read) == ["read.known-records"]
