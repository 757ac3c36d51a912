"""Apache Kafka's internals, which a protocol verdict must never depend on.

A MUST, SHOULD or MAY case is judged on what a KIP says. Kafka's transaction state names (its
``TransactionState`` enum, which DescribeTransactions and ListTransactions report as strings) and its
internal topics are Kafka's design, not the protocol's: a broker that names its states otherwise, or keeps
offsets and transaction state elsewhere, can still do everything the KIPs demand. Only IMPLEMENTATION cases
may expect them; a protocol case observes the effect instead (a control marker, the last stable offset, an
error that fences). The loader refuses the rest, so a new case cannot bring the class back.
"""

from __future__ import annotations

from collections.abc import Iterator

INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
# Kafka's TransactionState names, as DescribeTransactions and ListTransactions spell them.
KAFKA_TRANSACTION_STATES = frozenset({"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                                      "CompleteAbort", "Dead", "PrepareEpochFence"})
# Request fields whose values are state names (an empty filter, or a name no broker knows, is fine).
STATE_FILTER_FIELDS = ("state_filters",)


def internals_named(steps, where: list) -> Iterator[tuple[list, str]]:
    """``(path, message)`` for every place in ``steps`` that names one of Kafka's internals."""
    yield from _walk(steps, list(where), in_expect=False)


def _walk(value, path: list, in_expect: bool) -> Iterator[tuple[list, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "label":  # words for the reader, not something sent or expected
                continue
            here = [*path, key]
            text = str(key)
            if in_expect and text.split(".")[-1].split("[")[0] == "transaction_state":
                yield here, ("expects one of Apache Kafka's transaction state names, which no KIP defines; "
                             "observe the effect instead, or make the case requirement: IMPLEMENTATION")
                continue
            if text in STATE_FILTER_FIELDS and isinstance(item, list) and KAFKA_TRANSACTION_STATES & set(map(str, item)):
                yield here, ("filters on Apache Kafka's transaction state names, which no KIP defines; "
                             "leave the filter empty, or make the case requirement: IMPLEMENTATION")
                continue
            yield from _walk(item, here, in_expect or key == "expect")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, [*path, index], in_expect)
    elif isinstance(value, str) and any(topic in value for topic in INTERNAL_TOPICS):
        yield path, (f"names Apache Kafka's internal topic in {value!r}; where a broker keeps offsets or "
                     "transaction state is its own design: make the case requirement: IMPLEMENTATION")
