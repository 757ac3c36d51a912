"""Facts about KIP texts the MUST lint checks citations against: no sentence is copied, only facts.

``ERRORS_NAMED``: which of Kafka's error codes each KIP's text names, in any spelling :func:`citations.names`
knows (``INVALID_TXN_STATE``, ``InvalidTxnState``, ``InvalidTxnStateException``, a KIP's own alias). Computed
from the KIP texts the suites cite (the project's seed texts, and the excerpts of ``tools/kip_excerpts``; ``tests/suite/test_kip_facts.py`` recomputes it
from them where they are beside the repository). A KIP missing here is one whose text the project does not
have: the lint does not judge citations of it. KIP-447's text here is its early draft and the revision of its
fetch-offset design (both seed files, joined): a citation of KIP-447 is judged against them, so a sentence of the
adopted design the draft does not have (TxnOffsetCommit carrying the group's generation and member) is no quote of
it; the codes that design added are cited from the message spec (TxnOffsetCommitResponse v3), which lists them.

``CONDITIONED``: errors a KIP's text ties to one condition (``If <condition>, ... <error>``, ``... result in a
<error>``, a javadoc's ``@throws <error> ... indicating that <condition>``), with words that name that condition.
A MUST that holds a broker to such an error, or cites it for a refusal, must quote the condition: a refusal of
another input is not what the sentence demands. Only these are tied: a code a KIP's text names only in a list of
a response's codes (KIP-98's InvalidPidMapping) is no MUST of an exact code; the MUST is the refusal.

``SWITCHES``: behaviour a KIP adds that a broker setting turns off (Apache Kafka's setting), by the words a
citation of that behaviour uses and the APIs it applies to. A MUST on it holds only on a broker that reports
the setting on (``requires: {config: {<setting>: true}}``, skipped elsewhere, naming the setting); otherwise the
case is SHOULD or IMPLEMENTATION.
"""

from __future__ import annotations

ERRORS_NAMED: dict[str, frozenset[str]] = {
    "KIP-98": frozenset({
        "CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE",
        "DUPLICATE_SEQUENCE_NUMBER", "GROUP_AUTHORIZATION_FAILED", "INVALID_PRODUCER_EPOCH",
        "INVALID_PRODUCER_ID_MAPPING", "INVALID_TRANSACTION_TIMEOUT", "INVALID_TXN_STATE", "NOT_COORDINATOR",
        "OUT_OF_ORDER_SEQUENCE_NUMBER", "PRODUCER_FENCED", "UNSUPPORTED_FOR_MESSAGE_FORMAT"}),
    "KIP-609": frozenset({
        "CLUSTER_AUTHORIZATION_FAILED", "DELEGATION_TOKEN_AUTHORIZATION_FAILED", "FENCED_INSTANCE_ID",
        "GROUP_AUTHORIZATION_FAILED", "INVALID_GROUP_ID", "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED",
        "TOPIC_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION",
        "UNSUPPORTED_FOR_MESSAGE_FORMAT", "UNSUPPORTED_VERSION"}),
    "KIP-1309": frozenset({
        "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "INVALID_PRODUCER_EPOCH", "INVALID_REQUEST",
        "NOT_COORDINATOR", "PRODUCER_FENCED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_NOT_FOUND",
        "TRANSACTION_ABORTABLE", "UNKNOWN_PRODUCER_ID"}),
    "KIP-447": frozenset({
        "CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS", "INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"}),
    # sentences of KIP-588 only (tools/kip_excerpts/KIP-588-excerpt.txt, which names its sources)
    "KIP-588": frozenset({"INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"}),
}

# (KIP, error): a pattern of the words that name the one condition the KIP's text ties the error to.
CONDITIONED: dict[tuple[str, str], str] = {
    # KIP-98: a requested transaction timeout larger than max.transaction.timeout.ms fails the InitPid request
    ("KIP-98", "INVALID_TRANSACTION_TIMEOUT"): r"max\.transaction\.timeout\.ms|exceed|larger than|above the max|maximum",
    # KIP-98: messages with a lower sequence number result in a duplicate error, a higher one in an out-of-sequence
    # error (the only codes of Produce its text ties to a condition)
    ("KIP-98", "DUPLICATE_SEQUENCE_NUMBER"): r"lower sequence number",
    ("KIP-98", "OUT_OF_ORDER_SEQUENCE_NUMBER"): r"higher (sequence )?number",
    # KIP-609, the producer's javadoc: AuthorizationException indicates that the transactional.id, the topic (not
    # allowed to write) or the consumer group id is not authorized; ProducerFencedException if another producer
    # with the same transactional.id is active
    ("KIP-609", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"): r"transactional\.id is not authorized",
    ("KIP-609", "TOPIC_AUTHORIZATION_FAILED"): r"not allowed to write",
    ("KIP-609", "GROUP_AUTHORIZATION_FAILED"): r"consumer group id is not authorized",
    ("KIP-609", "PRODUCER_FENCED"): r"another producer with the same transactional\.id is active",
    # KIP-1309 (draft): a heartbeat interval greater than the transaction timeout is an invalid request
    ("KIP-1309", "INVALID_REQUEST"): r"TransactionHeartbeatIntervalMs|heartbeat interval",
    # KIP-447's fetch-offset revision: a FetchOffset while transactional offset commits are pending is rejected; an
    # old consumer, for which the new exception would be unknown, gets COORDINATOR_LOAD_IN_PROGRESS to retry
    ("KIP-447", "COORDINATOR_LOAD_IN_PROGRESS"): r"old consumers",
}


# (KIP, pattern of the words citing the behaviour, APIs under test it governs, the setting that turns it off)
SWITCHES: tuple[tuple[str, str, frozenset[str], str], ...] = (
    # KIP-890 part 1: the partition leader's check that a partition is in the transaction before a
    # transactional write (Kafka 3.5+, default on)
    ("KIP-890", r"verif", frozenset({"Produce", "TxnOffsetCommit"}), "transaction.partition.verification.enable"),
)
