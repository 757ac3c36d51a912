"""The model and a transaction timeout: a clock the test moves, answers written by hand, no broker."""

from __future__ import annotations

from conformance.explore.model import Model, Names
from conformance.explore.ops import READ_COMMITTED, Op

NONE, PRODUCER_FENCED = 0, 90


class Clock:
    """The model's clock, moved by the test."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class History:
    def __init__(self):
        self.clock = Clock()
        self.model = Model(clock=self.clock)
        self.names = Names("test")

    def do(self, op: Op, **answer) -> list[str]:
        resolved = self.model.resolve(op, self.names)
        answer.setdefault("error", NONE)
        return [departure.rule.id for departure in self.model.step(op, resolved, answer)]

    def begin(self, short=True) -> None:
        """A transaction with one write at offset 0 of t0-0, its InitProducerId asking for a short timeout."""
        assert self.do(Op("InitProducerId", 3, txn=0, short_timeout=short), producer_id=7, producer_epoch=0) == []
        assert self.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),))) == []
        assert self.do(Op("Produce", 9, txn=0), base_offset=0) == []

    def fetch(self, values, lso=1) -> list[str]:
        return self.do(Op("Fetch", 12, isolation=READ_COMMITTED), high_watermark=1, last_stable_offset=lso,
                       values=list(values), offsets={value: 0 for value in values})


def test_before_the_timeout_the_open_transaction_is_judged_as_always():
    history = History()
    history.begin()
    history.clock.now += 0.5  # within the 1 s the InitProducerId asked for
    assert history.do(Op("EndTxn", 3, txn=0, commit=True), error=PRODUCER_FENCED) == ["end-txn.accepted"]
    history = History()
    history.begin()
    assert history.fetch([], lso=1) == ["lso.below-open-transaction"]  # passed the open transaction's first offset


def test_past_the_timeout_the_coordinator_may_abort_and_fence():
    history = History()
    history.begin()
    history.clock.now += 1.5
    assert history.fetch([], lso=1) == []  # aborted by the coordinator: the LSO moves on
    assert history.do(Op("Produce", 9, txn=0), error=PRODUCER_FENCED, base_offset=-1) == []
    assert history.do(Op("EndTxn", 3, txn=0, commit=True), error=PRODUCER_FENCED) == []
    # fenced or not, whatever the generation sends until a new InitProducerId is either answer
    assert history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 1),)), error=PRODUCER_FENCED) == []


def test_past_the_timeout_the_records_stay_invisible_until_a_commit_is_accepted():
    history = History()
    history.begin()
    history.clock.now += 1.5
    assert history.fetch(["v1"]) == ["read-committed.committed-only"]  # open or aborted: never to read_committed
    history = History()
    history.begin()
    history.clock.now += 1.5
    assert history.do(Op("EndTxn", 3, txn=0, commit=False)) == []  # an abort accepted: aborted whoever went first
    assert history.fetch(["v1"]) == ["read-committed.committed-only"]


def test_a_commit_accepted_past_the_timeout_leaves_the_records_fate_open():
    history = History()
    history.begin()
    history.clock.now += 1.5
    assert history.do(Op("EndTxn", 3, txn=0, commit=True)) == []
    assert history.fetch(["v1"]) == []
    assert history.fetch([]) == []


def test_a_new_init_makes_the_generation_certain_again_and_must_fence():
    history = History()
    history.begin()
    history.clock.now += 1.5
    assert history.do(Op("InitProducerId", 3, txn=0), producer_id=7, producer_epoch=2) == []
    assert history.fetch(["v1"]) == ["read-committed.committed-only"]  # the init aborted it, if nothing else did
    # the new generation's timeout is the long one: its transaction is judged as always
    assert history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 1),)), error=PRODUCER_FENCED) == [
        "add-partitions.accepted"]
    assert history.do(Op("EndTxn", 3, txn=0, stale=True)) == ["fenced.refused"]


def test_a_long_timeout_counts_on_the_same_clock():
    history = History()
    history.begin(short=False)
    history.clock.now += 60
    assert history.do(Op("EndTxn", 3, txn=0, commit=True), error=PRODUCER_FENCED) == ["end-txn.accepted"]
    history = History()
    history.begin(short=False)
    history.clock.now += 121  # past the 120 s it asked for: a slow history may outlive it too
    assert history.do(Op("EndTxn", 3, txn=0, commit=True), error=PRODUCER_FENCED) == []


def test_the_written_case_waits_and_asks_for_the_short_timeout():
    from conformance.explore.cases import _Generations, _step
    from conformance.explore.driver import HistoryStep
    from conformance.explore.ops import Resolved

    init = Op("InitProducerId", 3, txn=0, short_timeout=True)
    written = _step(HistoryStep(init, Resolved(), answer={"error": 0}), _Generations(), expect={"error_code": "NONE"})
    assert written["fields"]["transaction_timeout_ms"] == 1000
    assert _step(HistoryStep(Op("Wait", 0), Resolved(), answer={"error": 0}), _Generations(), expect={}) == {"wait": 1500}


def test_a_request_answered_after_its_timeout_may_meet_the_transaction_its_first_attempt_began():
    history = History()
    assert history.do(Op("InitProducerId", 3, txn=0, short_timeout=True), producer_id=7, producer_epoch=0) == []
    history.model.tv2 = True
    resolved = history.model.resolve(Op("TxnOffsetCommit", 5, txn=0, group=0), history.names)
    # sent, its answer lost, sent again 3 s later: the first attempt began a transaction the coordinator aborted
    found = history.model.step(Op("TxnOffsetCommit", 5, txn=0, group=0), resolved, {"error": 47},
                               sent_at=100.0, answered_at=103.0)
    assert found == []
    fresh = History()
    assert fresh.do(Op("InitProducerId", 3, txn=0, short_timeout=True), producer_id=7, producer_epoch=0) == []
    fresh.model.tv2 = True
    resolved = fresh.model.resolve(Op("TxnOffsetCommit", 5, txn=0, group=0), fresh.names)
    found = fresh.model.step(Op("TxnOffsetCommit", 5, txn=0, group=0), resolved, {"error": 47},
                             sent_at=100.0, answered_at=100.5)  # within the timeout: the rule holds
    assert [departure.rule.id for departure in found] == ["txn-offset-commit.added-implicitly"]
