"""The reference model's rules: what the KIP texts demand, one row each, with the sentence it rests on.

A rule names a demand, not an error code: where a KIP lists errors without tying one to the condition, the
model accepts any refusal, and a retriable error (the coordinator loading or moving, a transaction still
completing) is always allowed where an answer is (the driver sends the request again, as Kafka's clients do).
A departure is only what the text forbids. The quotations of KIP-98 and KIP-447 are from their texts; those of
KIP-890 and KIP-664 are as the bundled suites quote them (``tests/explore/test_model.py`` checks the table
names only rules listed here, and that the KIP-890 and KIP-664 quotations are the suites').
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One demand of the KIPs: ``id`` names it in departures, ``kip`` and ``text`` are where it is written."""

    id: str
    kip: str
    text: str
    summary: str

    @property
    def cites(self) -> str:
        """The ``cites`` of a suite case that checks this rule."""
        return f"{self.kip}: {self.text}"


def _rules(*rules: Rule) -> dict[str, Rule]:
    return {rule.id: rule for rule in rules}


RULES = _rules(
    Rule("init.assigns-producer-id", "KIP-98",
         "Every new producer will be assigned a unique PID during initialization.",
         "InitProducerId answers a producer id and epoch (a retriable error at most delays it); an idempotent "
         "producer's id is one no other producer holds"),
    Rule("init.fences-older-generation", "KIP-98",
         "Exactly one active producer with a given TransactionalId. This is achieved by fencing off old generations "
         "when a new instance with the same TransactionalId comes online.",
         "a second InitProducerId for a transactional id answers a new generation: a higher epoch or another "
         "producer id"),
    Rule("init.aborts-pending-transaction", "KIP-447",
         "we believe any pending transaction will be aborted when producer calls initTransaction again",
         "an open transaction is aborted when its transactional id is initialised again"),
    Rule("fenced.refused", "KIP-98",
         "Exactly one active producer with a given TransactionalId. This is achieved by fencing off old generations "
         "when a new instance with the same TransactionalId comes online.",
         "a request of an older generation (an older epoch, or a producer id the transactional id no longer has) "
         "is refused and has no effect"),
    Rule("add-partitions.accepted", "KIP-98",
         "At the core, transactional guarantees enable applications to produce to multiple TopicPartitions "
         "atomically, ie. all writes to these TopicPartitions will succeed or fail as a unit.",
         "the current producer adds partitions of existing topics to its transaction"),
    Rule("produce.partition-in-transaction", "KIP-890",
         "hanging transactions are prevented by verifying the partition is part of an ongoing transaction before "
         "writing",
         "a transactional write to a partition not added to the producer's ongoing transaction is refused "
         "(before Produce v12, where the partition is added implicitly)"),
    Rule("produce.added-implicitly", "KIP-890",
         "with Produce v12 the partition is added implicitly",
         "with transaction version 2, a transactional write in sequence by the current producer is accepted and "
         "its partition joins the transaction"),
    Rule("txn-offset-commit.added-implicitly", "KIP-890",
         "TxnOffsetCommit v5 adds the offsets partition implicitly",
         "with transaction version 2, TxnOffsetCommit by the current producer is accepted without AddOffsetsToTxn"),
    Rule("end-txn.bumps-epoch", "KIP-890",
         "the producer epoch is bumped at the end of every transaction; EndTxn v5 returns the new producer id and "
         "epoch",
         "with transaction version 2, EndTxn ends the open transaction and answers a new generation; the same "
         "EndTxn again at the epoch before the bump is a retry, not an older generation"),
    Rule("produce.accepted", "KIP-98",
         "For a given PID, sequence numbers will start from zero and be monotonically increasing, with one sequence "
         "number per topic partition produced to.",
         "a write in sequence by the current producer (to a partition of its transaction when transactional) is "
         "accepted"),
    Rule("produce.sequence", "KIP-98",
         "The broker will reject a produce request if its sequence number is not exactly one greater than the last "
         "committed message from that PID/TopicPartition pair.",
         "a write whose first sequence is not the next one is refused, unless it repeats a batch already written"),
    Rule("produce.exactly-once", "KIP-98",
         "This ensures that, even though a producer must retry requests upon failures, every message will be "
         "persisted in the log exactly once.",
         "a repeated batch is not written again: no record appears twice in the log"),
    Rule("refused.not-written", "KIP-890",
         "we want the server to have some control to prevent these incorrect records from being written",
         "the records of a refused write never appear in the log"),
    Rule("end-txn.accepted", "KIP-98",
         "When a producer is finished with a transaction, the newly introduced KafkaProducer.endTransaction "
         "commitTransaction or KafkaProducer.abortTransaction must be called.",
         "the current producer ends its ongoing transaction with EndTxn, commit or abort"),
    Rule("read-committed.committed-only", "KIP-98",
         "read_committed: only consume non-transactional messages or committed transactional messages in offset "
         "order.",
         "a read_committed consumer sees no record of an aborted transaction nor of one still open"),
    Rule("read.known-records", "KIP-98",
         "read_uncommitted: consume both committed and uncommitted messages in offset ordering.",
         "a read returns only records that were written, in offset order"),
    Rule("lso.below-open-transaction", "KIP-98",
         "In order to maintain offset ordering, this setting means that we will have to buffer messages in the "
         "consumer until we see all messages in a given transaction.",
         "the last stable offset never passes the first offset of a transaction still open, nor the high "
         "watermark"),
    Rule("add-offsets.accepted", "KIP-98",
         "Sent by the producer to its transaction coordinator to indicate a consumer offset commit operation is "
         "called as part of the current ongoing transaction.",
         "the current producer adds a group's offsets to its transaction"),
    Rule("txn-offset-commit.after-add-offsets", "KIP-98",
         "Sent by the producer to its transaction coordinator to indicate a consumer offset commit operation is "
         "called as part of the current ongoing transaction.",
         "TxnOffsetCommit when no group's offsets were added to the ongoing transaction is refused or has no "
         "effect outside it (before TxnOffsetCommit v5: the text names no error); for an added group it is accepted"),
    Rule("offsets.committed-only", "KIP-98",
         "a set of messages may be considered consumed only if the entire ‘consume-transform-produce’ executed in "
         "its entirety.",
         "OffsetFetch never returns an offset of a transaction not committed"),
    Rule("offsets.pending-refused", "KIP-447",
         "The proposed solution is to reject FetchOffset request by sending out PendingTransactionException to new "
         "client when there is pending transactional offset commits",
         "OffsetFetch with require_stable answers a partition with pending offsets with an error, or its stable "
         "offset"),
    Rule("timeout.aborts", "KIP-98",
         "The maximum amount of time in ms that the transaction coordinator will wait for a transaction status "
         "update from the producer before proactively aborting the ongoing transaction.",
         "once a transaction has been open longer than its transaction timeout the coordinator may abort it (and "
         "fence the generation): its producer's requests may then be answered or refused, an accepted commit "
         "leaves its records' fate open, an accepted abort aborts it; until a commit is accepted its records stay "
         "invisible to read_committed"),
    Rule("describe.answers", "KIP-664",
         "DescribeTransactions: the response has one entry per transactional id, each with its own error",
         "DescribeTransactions and ListTransactions are sent and answered; the states they show are not judged "
         "(no KIP sentence at hand ties a state to a condition)"),
)



@dataclass(frozen=True)
class KnownDeviation:
    """Where Apache Kafka departs from a rule's text and the model allows what Kafka does, as the suites'
    ``deviations`` do: the rule, the sentence, what Kafka does instead, where it was seen."""

    rule: str
    kip_text: str
    observed: str
    target: str


DEVIATIONS = (
    KnownDeviation("fenced.refused", "KIP-890: requests from the previous transaction carry the old epoch and are fenced",
              "With transaction version 2, a Produce v12 at the epoch EndTxn v5 had just bumped from, to a partition "
              "of the transaction it ended, was accepted (Kafka 4.4.0, seen by exploration): while the transaction's "
              "markers are still being written the partition leader still holds the transaction open at the old "
              "epoch, so the write joins the ending transaction. The model allows either answer there and does not "
              "judge those records' visibility. The same holds for a TxnOffsetCommit v5 at that epoch (Kafka 4.0.0 and "
              "4.2.0 seen by exploration, 4.4.0 too): the offsets partition skips verification while it holds the "
              "producer's transaction open, so the offsets join the ending transaction; after a commit they are "
              "committed with it (4.2.0: 1 of 4 tries, 4.4.0: 5 of 12), after an abort they never appear. The model "
              "allows either answer and judges the offsets by that outcome.",
              "kafka"),
)


def rule(rule_id: str) -> Rule:
    """The rule ``rule_id``; a KeyError names a rule the model uses but the table lacks."""
    return RULES[rule_id]
