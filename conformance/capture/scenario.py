"""A real client's transactions, to capture and diff: confluent-kafka (librdkafka) end to end.

The scenario: a transactional producer reads its input through a consumer group, writes one
record to each of two partitions and the group's input offset in one committed transaction,
then writes two more records in a transaction it aborts. A ``read_committed`` consumer then
reads the output. On a conforming broker it sees the committed records only, and the group's
committed offset is the one the first transaction carried.

Run it under a :class:`~.sniffer.Capture` against two brokers and diff the captures to see
how they answer the same client.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field

INPUT_RECORDS = 3
TIMEOUT = 30.0


@dataclass
class ScenarioSummary:
    topics: dict[str, str]
    transactional_id: str
    group: str
    committed_values: list[str]  # what the committed transaction wrote
    aborted_values: list[str]  # what the aborted transaction wrote
    seen: list[tuple[int, int, str]] = field(default_factory=list)  # (partition, offset, value) read_committed
    group_offset: int | None = None  # the input offset the group has committed
    errors: list[str] = field(default_factory=list)

    @property
    def conforms(self) -> bool:
        """Only committed records were read, all of them, and the offset commit took effect."""
        values = sorted(value for _, _, value in self.seen)
        return not self.errors and values == sorted(self.committed_values) and self.group_offset == INPUT_RECORDS

    def to_json(self) -> dict:
        return {**asdict(self), "conforms": self.conforms}


def run_scenario(bootstrap: str, *, name: str | None = None, timeout: float = TIMEOUT) -> ScenarioSummary:
    """Run the scenario against ``bootstrap``; ``name`` makes topic and id names (default: random)."""
    from confluent_kafka import KafkaException

    name = name or f"scenario-{uuid.uuid4().hex[:8]}"
    summary = ScenarioSummary(topics={"input": f"{name}.input", "output": f"{name}.output"},
                              transactional_id=f"{name}.txn", group=f"{name}.group",
                              committed_values=["committed-0", "committed-1"], aborted_values=["aborted-0", "aborted-1"])
    try:
        _create_topics(bootstrap, summary.topics, timeout)
        _seed_input(bootstrap, summary.topics["input"], timeout)
        _transactions(bootstrap, summary, timeout)
        summary.seen = _read_committed(bootstrap, summary.topics["output"], timeout)
        summary.group_offset = _group_offset(bootstrap, summary, timeout)
    except KafkaException as error:
        summary.errors.append(f"{type(error).__name__}: {error}")
    return summary


def _create_topics(bootstrap: str, topics: dict[str, str], timeout: float) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [NewTopic(topics["input"], num_partitions=1, replication_factor=1),
              NewTopic(topics["output"], num_partitions=2, replication_factor=1)]
    for future in admin.create_topics(wanted, operation_timeout=timeout).values():
        future.result(timeout=timeout)


def _seed_input(bootstrap: str, topic: str, timeout: float) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for index in range(INPUT_RECORDS):
        producer.produce(topic, value=f"input-{index}".encode(), partition=0)
    if producer.flush(timeout):
        raise RuntimeError(f"seeding {topic} did not finish within {timeout}s")


def _transactions(bootstrap: str, summary: ScenarioSummary, timeout: float) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": summary.group, "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(summary.topics["input"], 0, 0)])
        _consume(consumer, INPUT_RECORDS, timeout)
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": summary.transactional_id})
        producer.init_transactions(timeout)
        producer.begin_transaction()
        for partition, value in enumerate(summary.committed_values):
            producer.produce(summary.topics["output"], value=value.encode(), partition=partition)
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), timeout)
        producer.commit_transaction(timeout)
        producer.begin_transaction()
        for partition, value in enumerate(summary.aborted_values):
            producer.produce(summary.topics["output"], value=value.encode(), partition=partition)
        producer.flush(timeout)  # the aborted records reach the log before the abort marker
        producer.abort_transaction(timeout)
    finally:
        consumer.close()


def _consume(consumer, count: int, timeout: float) -> list:
    messages: list = []
    deadline = time.monotonic() + timeout
    while len(messages) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            messages.append(message)
    return messages


def _read_committed(bootstrap: str, topic: str, timeout: float, quiet: float = 3.0) -> list[tuple[int, int, str]]:
    """Everything a read_committed consumer reads from both partitions, until ``quiet`` seconds pass
    without a record (the aborted records never come, so there is no count to wait for)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}.reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    seen = []
    try:
        consumer.assign([TopicPartition(topic, partition, 0) for partition in range(2)])
        deadline = time.monotonic() + timeout
        last = time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - last < quiet:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                value = message.value() or b""
                seen.append((message.partition() or 0, message.offset() or 0, value.decode(errors="replace")))
                last = time.monotonic()
    finally:
        consumer.close()
    return sorted(seen)


def _group_offset(bootstrap: str, summary: ScenarioSummary, timeout: float) -> int | None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": summary.group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(summary.topics["input"], 0)], timeout)
    finally:
        consumer.close()
    offset = committed[0].offset
    return offset if offset >= 0 else None
