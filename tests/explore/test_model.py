"""The reference model on its own: answers written by hand, judged without a broker."""

from __future__ import annotations

import pytest

from conformance.explore.model import TABLE, Inconclusive, Model, Names
from conformance.explore.ops import READ_COMMITTED, READ_UNCOMMITTED, Op
from conformance.explore.rules import DEVIATIONS, RULES
from conformance.resources import suites

SUITES = suites()

NONE, INVALID_TXN_STATE, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, UNSTABLE = 0, 48, 90, 51, 88
INVALID_PRODUCER_EPOCH = 47


class History:
    """A model with its names; ``do`` resolves an operation, judges the given answer, returns the rule ids."""

    def __init__(self):
        self.model = Model()
        self.names = Names("test")
        self.last = None

    def do(self, op: Op, **answer) -> list[str]:
        resolved = self.model.resolve(op, self.names)
        self.last = resolved
        answer.setdefault("error", NONE)
        return [departure.rule.id for departure in self.model.step(op, resolved, answer)]

    def init(self, txn=0, pid=1000, epoch=0) -> None:
        assert self.do(Op("InitProducerId", 3, txn=txn), producer_id=pid, producer_epoch=epoch) == []

    def produce(self, offset: int, *, txn=0, topic=0, partition=0, error=NONE, **fields) -> list[str]:
        return self.do(Op("Produce", 9, txn=txn, topic=topic, partition=partition, **fields), error=error,
                       base_offset=offset)

    def fetch(self, values, *, isolation=READ_COMMITTED, hw=10, lso=10, offsets=None) -> list[str]:
        return self.do(Op("Fetch", 12, isolation=isolation), high_watermark=hw, last_stable_offset=lso,
                       values=list(values), offsets=offsets or {})


def test_every_rule_the_table_names_is_written_with_its_kip_sentence():
    used = {rule_id for rows in TABLE.values() for _, _, rule_id in rows}
    assert used <= set(RULES)
    assert all(rule.kip.startswith("KIP-") and rule.text and rule.summary for rule in RULES.values())


def test_the_kip_890_and_kip_664_sentences_are_the_ones_the_bundled_suites_quote():
    suites = " ".join(" ".join(path.read_text(encoding="utf-8").split()) for path in SUITES.rglob("*.yaml"))
    for rule in RULES.values():
        if rule.kip in ("KIP-890", "KIP-664"):
            assert " ".join(rule.text.split()) in suites, rule.id


def test_a_transactional_write_to_a_partition_not_added_must_be_refused():
    history = History()
    history.init()
    assert history.produce(0) == ["produce.partition-in-transaction"]  # KAFKA-14402: accepted
    history = History()
    history.init()
    assert history.produce(-1, error=INVALID_TXN_STATE) == []  # refused, with any code


def test_a_write_to_an_added_partition_is_accepted_and_a_refusal_departs():
    history = History()
    history.init()
    assert history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),))) == []
    assert history.produce(0) == []
    assert history.produce(-1, error=INVALID_TXN_STATE) == ["produce.accepted"]


def test_a_retriable_error_where_an_answer_is_due_leaves_the_history_inconclusive():
    history = History()
    history.init()
    with pytest.raises(Inconclusive):
        history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),)), error=CONCURRENT_TRANSACTIONS)


def test_a_new_generation_must_raise_the_epoch_or_change_the_producer_id():
    history = History()
    history.init(pid=7, epoch=3)
    assert history.do(Op("InitProducerId", 3, txn=0), producer_id=7, producer_epoch=3) == ["init.fences-older-generation"]
    history = History()
    history.init(pid=7, epoch=3)
    assert history.do(Op("InitProducerId", 3, txn=0), producer_id=8, producer_epoch=0) == []


def test_an_older_generation_is_refused_whatever_the_code():
    history = History()
    history.init(epoch=0)
    history.init(epoch=1)
    assert history.do(Op("EndTxn", 3, txn=0, stale=True), error=PRODUCER_FENCED) == []
    assert history.do(Op("AddPartitionsToTxn", 3, txn=0, stale=True, partitions=((0, 1),))) == ["fenced.refused"]


def test_sequences_a_gap_is_refused_and_a_repeat_is_not_written_twice():
    history = History()
    history.do(Op("InitProducerId", 3, producer=0), producer_id=50, producer_epoch=0)
    assert history.do(Op("Produce", 9, producer=0), base_offset=0) == []
    first = history.last.values
    assert history.do(Op("Produce", 9, producer=0, sequence="gap"), base_offset=1) == ["produce.sequence"]
    history = History()
    history.do(Op("InitProducerId", 3, producer=0), producer_id=50, producer_epoch=0)
    history.do(Op("Produce", 9, producer=0), base_offset=0)
    first = history.last.values
    assert history.do(Op("Produce", 9, producer=0, sequence="repeat"), base_offset=0) == []
    assert history.last.values == first
    assert history.fetch(first * 2, isolation=READ_UNCOMMITTED) == ["produce.exactly-once"]


def test_read_committed_never_returns_an_aborted_or_open_record_and_the_lso_stays_below_an_open_transaction():
    history = History()
    history.init()
    history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),)))
    history.produce(0)
    written = history.last.values
    assert history.fetch(written, lso=1, offsets={written[0]: 0}) == [
        "read-committed.committed-only", "lso.below-open-transaction"]
    assert history.fetch([], hw=1, lso=0) == []
    assert history.do(Op("EndTxn", 3, txn=0, commit=False)) == []
    assert history.fetch(written, hw=2, lso=2, offsets={written[0]: 0}) == ["read-committed.committed-only"]
    assert history.fetch(written, isolation=READ_UNCOMMITTED, hw=2, lso=2) == []


def test_a_refused_write_never_appears():
    history = History()
    history.init()
    history.produce(-1, error=INVALID_TXN_STATE)
    assert history.fetch(history.last.values, isolation=READ_UNCOMMITTED) == ["refused.not-written"]


def test_committed_offsets_appear_only_after_the_commit():
    history = History()
    history.init()
    history.do(Op("AddOffsetsToTxn", 3, txn=0, group=0))
    assert history.do(Op("TxnOffsetCommit", 3, txn=0, group=0, offset=5)) == []
    read = Op("OffsetFetch", 7, group=0, require_stable=True)
    assert history.do(read, partitions={(0, 0): (NONE, 5)}) == ["offsets.committed-only"]
    assert history.do(read, partitions={(0, 0): (UNSTABLE, -1)}) == []
    assert history.do(Op("OffsetFetch", 7, group=0), partitions={(0, 0): (NONE, -1)}) == []
    history.do(Op("EndTxn", 3, txn=0, commit=True))
    assert history.do(Op("OffsetFetch", 7, group=0), partitions={(0, 0): (NONE, -1)}) == []  # still completing
    assert history.do(Op("OffsetFetch", 7, group=0), partitions={(0, 0): (NONE, 5)}) == []
    assert history.do(Op("OffsetFetch", 7, group=0), partitions={(0, 0): (NONE, -1)}) == ["offsets.committed-only"]


def test_txn_offset_commit_before_add_offsets_is_refused_or_has_no_effect_outside_the_transaction():
    """KIP-98 names no error for it: a refusal, or an acceptance whose offsets follow the transaction."""
    for error in (INVALID_TXN_STATE, NONE):
        history = History()
        history.init()
        assert history.do(Op("TxnOffsetCommit", 3, txn=0, group=0, offset=5), error=error) == []
    history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),)))
    history.do(Op("EndTxn", 3, txn=0, commit=False))
    assert history.do(Op("OffsetFetch", 7, group=0), partitions={(0, 0): (NONE, -1)}) == []
    assert history.do(Op("OffsetFetch", 7, group=0), partitions={(0, 0): (NONE, 5)}) == ["offsets.committed-only"]


def test_end_txn_after_only_an_unadded_txn_offset_commit_may_be_refused():
    """The transaction coordinator heard of no partition and no group: ending it is either answer, as with no
    transaction at all (a run on Kafka 3.5.2 wrote a case out of its INVALID_TXN_STATE); once a partition is added
    the transaction is the coordinator's, and EndTxn must be accepted again."""
    history = History()
    history.init()
    assert history.do(Op("TxnOffsetCommit", 3, txn=0, group=1, offset=6)) == []
    assert history.do(Op("EndTxn", 3, txn=0, commit=False), error=INVALID_TXN_STATE) == []
    assert history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),))) == []
    assert history.do(Op("EndTxn", 3, txn=0, commit=False), error=INVALID_TXN_STATE) == ["end-txn.accepted"]


def test_reinitialising_aborts_the_open_transaction():
    history = History()
    history.init(epoch=0)
    history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),)))
    history.produce(0)
    written = history.last.values
    history.init(epoch=1)
    assert history.fetch(written, hw=2, lso=2, offsets={written[0]: 0}) == ["read-committed.committed-only"]


def test_a_write_while_the_transaction_ends_may_be_accepted_or_refused():
    for error in (NONE, INVALID_TXN_STATE):
        history = History()
        history.init()
        history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),)))
        history.do(Op("EndTxn", 3, txn=0, commit=True))
        assert history.produce(0, error=error) == []


def test_transaction_version_2_adds_partitions_itself_and_bumps_the_epoch_at_the_end():
    history = History()
    history.model.tv2 = True
    history.init(pid=9, epoch=0)
    assert history.do(Op("Produce", 12, txn=0), base_offset=0) == []  # no AddPartitionsToTxn: added implicitly
    written = history.last.values
    assert history.fetch([], hw=1, lso=1) == ["lso.below-open-transaction"]  # the write opened a transaction
    assert history.do(Op("EndTxn", 5, txn=0, commit=True), producer_id=9, producer_epoch=0) == ["end-txn.bumps-epoch"]
    history = History()
    history.model.tv2 = True
    history.init(pid=9, epoch=0)
    history.do(Op("Produce", 12, txn=0), base_offset=0)
    written = history.last.values
    assert history.do(Op("EndTxn", 5, txn=0, commit=False), producer_id=9, producer_epoch=1) == []
    assert history.fetch(written, hw=2, lso=2, offsets={written[0]: 0}) == ["read-committed.committed-only"]
    assert history.produce(0, topic=1, stale=True) == ["fenced.refused"]  # the epoch before the bump: an older generation


def test_transaction_version_2_the_same_end_txn_again_at_the_epoch_before_its_bump_is_a_retry():
    history = History()
    history.model.tv2 = True
    history.init(pid=9, epoch=0)
    history.do(Op("Produce", 12, txn=0), base_offset=0)
    assert history.do(Op("EndTxn", 5, txn=0, commit=True), producer_id=9, producer_epoch=1) == []
    assert history.do(Op("EndTxn", 5, txn=0, commit=True, stale=True), producer_id=9, producer_epoch=1) == []
    assert history.model.transactional[0].current == (9, 1)
    assert history.do(Op("EndTxn", 5, txn=0, commit=False, stale=True)) == ["fenced.refused"]  # not the same EndTxn


def test_transaction_version_2_a_write_at_the_epoch_just_bumped_from_may_join_the_ending_transaction():
    """Kafka's documented deviation: its partition leader still holds the transaction open until the marker."""
    history = History()
    history.model.tv2 = True
    history.init(pid=9, epoch=0)
    history.do(Op("Produce", 12, txn=0, topic=1, partition=1), base_offset=0)
    assert history.do(Op("EndTxn", 5, txn=0, commit=False), producer_id=9, producer_epoch=1) == []
    assert history.do(Op("Produce", 12, txn=0, topic=1, partition=1, stale=True), base_offset=1) == []
    assert history.do(Op("Produce", 12, txn=0, topic=0, partition=0, stale=True), base_offset=0) == ["fenced.refused"]
    assert "fenced.refused" in {deviation.rule for deviation in DEVIATIONS}


def test_transaction_version_2_offsets_at_the_epoch_just_bumped_from_follow_the_ended_transaction():
    """Kafka 4.2.0 accepts them while the offsets partition still holds the transaction open: after an abort they
    must never show; after a commit they may (they joined it), and an offset nobody sent never may."""
    for commit, shown, departs in ((False, 7, ["offsets.committed-only"]), (False, -1, []), (True, 7, []),
                                   (True, 8, ["offsets.committed-only"])):
        history = History()
        history.model.tv2 = True
        history.init(pid=9, epoch=0)
        assert history.do(Op("TxnOffsetCommit", 5, txn=0, group=0, offset=5)) == []
        assert history.do(Op("EndTxn", 5, txn=0, commit=commit), producer_id=9, producer_epoch=1) == []
        assert history.do(Op("TxnOffsetCommit", 5, txn=0, group=1, offset=7, stale=True)) == []  # another group too
        assert history.do(Op("TxnOffsetCommit", 5, txn=0, group=0, offset=7, stale=True), error=47) == []
        assert history.do(Op("TxnOffsetCommit", 5, txn=0, group=0, offset=7, stale=True)) == []
        fetched = history.do(Op("OffsetFetch", 9, group=0), partitions={(0, 0): (NONE, shown)})
        assert fetched == departs, (commit, shown)
    history = History()
    history.model.tv2 = True
    history.init(pid=9, epoch=0)
    history.do(Op("Produce", 12, txn=0), base_offset=0)  # a transaction with no offsets: nothing to join
    history.do(Op("EndTxn", 5, txn=0, commit=True), producer_id=9, producer_epoch=1)
    assert history.do(Op("TxnOffsetCommit", 5, txn=0, group=0, offset=7, stale=True)) == ["fenced.refused"]


def test_a_refused_repeat_of_a_written_batch_leaves_its_records_written():
    """A repeat carries the values of the batch it repeats: refused at the epoch before the bump, it does not make
    the aborted, legitimately written records "refused" (a false departure seen on Kafka 4.0.0 and 4.0.1)."""
    history = History()
    history.model.tv2 = True
    history.init(pid=9, epoch=0)
    assert history.do(Op("Produce", 12, txn=0, topic=1, partition=0), base_offset=0) == []
    written = history.last.values
    assert history.do(Op("EndTxn", 5, txn=0, commit=False), producer_id=9, producer_epoch=1) == []
    repeat = Op("Produce", 12, txn=0, topic=1, partition=0, stale=True, sequence="repeat")
    assert history.do(repeat, error=INVALID_PRODUCER_EPOCH, base_offset=-1) == []
    assert history.last.values == written  # the same batch, sent again
    uncommitted = Op("Fetch", 12, topic=1, partition=0, isolation=READ_UNCOMMITTED)
    assert history.do(uncommitted, high_watermark=2, last_stable_offset=2, values=list(written),
                      offsets={written[0]: 0}) == []
    # a write refused with values no accepted write carried still may never appear
    assert history.do(Op("Produce", 12, txn=0, topic=1, partition=0, stale=True), error=INVALID_PRODUCER_EPOCH,
                      base_offset=-1) == []
    refused = history.last.values
    assert history.do(uncommitted, high_watermark=2, last_stable_offset=2, values=[*written, *refused],
                      offsets={written[0]: 0}) == ["refused.not-written"]


def test_a_committed_record_may_come_with_a_last_stable_offset_taken_before_its_markers():
    """The markers are written after EndTxn is answered, and Kafka takes the LSO before it reads the log: the
    record is committed, which is what read_committed must hold, whatever the LSO field says of the moment before."""
    history = History()
    history.init()
    history.do(Op("AddPartitionsToTxn", 3, txn=0, partitions=((0, 0),)))
    history.produce(0)
    written = history.last.values
    assert history.do(Op("EndTxn", 3, txn=0, commit=True)) == []
    assert history.fetch(written, hw=1, lso=0, offsets={written[0]: 0}) == []
