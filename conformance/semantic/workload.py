"""The clients of the exactly-once tier, each a thread that records what it does into one history.

- :class:`Writer`: confluent-kafka's transactional producer; transactions of 1-4 records to random input
  partitions, some aborted on purpose.
- :class:`Processor`: consume-transform-produce. A read_committed consumer in a group, a transactional
  producer writing one output per input (to the same partition number of the output topic) and sending
  the consumer's positions to the transaction; after an abort it rewinds to the committed offsets.
- :class:`Reader`: a read_committed consumer reading both topics from the start, all run long.
- :class:`LsoMonitor`: samples every partition's last stable offset with the harness's raw client
  (ListOffsets at read_committed isolation, sent to the leader).
- :func:`drain`: after everything stopped, waits for the last stable offsets to settle, reads both
  topics to their end with a fresh read_committed consumer and reads the group's committed offsets.

A client error the KIPs allow (a retriable error, an abortable one, fencing after a fault) is handled
the way confluent-kafka documents and recorded; only the harness's own bugs end a thread, and they are
kept in ``Plan.crashes`` so the run is reported as an error rather than judged on a partial history.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from ..client.cluster import Cluster
from ..client.security import Security
from .history import History

CALL_TIMEOUT_S = 10.0  # for one commit, abort, init or offsets call
READ_COMMITTED = 1


@dataclass
class Plan:
    """What every worker of a run shares: where the broker is, the run's names, sizes and client settings."""
    bootstrap: str
    run: str  # makes topic, transactional id and group names unique to this run
    partitions: int = 3
    producers: int = 2
    processors: int = 1
    abort_ratio: float = 0.2
    transaction_timeout_ms: int = 15000
    client_config: dict = field(default_factory=dict)  # security settings for confluent-kafka
    security: Security | None = None  # the same, for the raw client
    seed: int = 0
    logger: logging.Logger | None = None
    crashes: list[str] = field(default_factory=list)
    group_protocol: str = "classic"  # or "consumer": the processors' group is a KIP-848 consumer group

    @property
    def input_topic(self) -> str:
        """The topic the producers write and the processors read."""
        return f"semantic-in-{self.run}"

    @property
    def output_topic(self) -> str:
        """The topic the processors write."""
        return f"semantic-out-{self.run}"

    @property
    def group(self) -> str:
        """The consumer group of the processors."""
        return f"semantic-ctp-{self.run}"

    @property
    def topics(self) -> list[str]:
        """Both topics of the run."""
        return [self.input_topic, self.output_topic]

    def partitions_of_all(self) -> list[tuple[str, int]]:
        """Every ``(topic, partition)`` of the run."""
        return [(topic, partition) for topic in self.topics for partition in range(self.partitions)]

    def transactional_id(self, process: str) -> str:
        """The transactional id of the worker ``process``, unique to this run."""
        return f"semantic-{process}-{self.run}"

    def config(self, **settings) -> dict:
        """librdkafka settings to reach the broker, with the run's client config and ``settings`` over it."""
        config = {"bootstrap.servers": self.bootstrap, "socket.timeout.ms": 10000, **self.client_config, **settings}
        if self.logger is not None:  # librdkafka's own log goes beside the history, not to the terminal
            config["logger"] = self.logger
        return config

    def producer_config(self, transactional_id: str) -> dict:
        """The settings of a transactional, idempotent producer with the run's timeouts."""
        return self.config(**{"transactional.id": transactional_id, "enable.idempotence": True, "acks": "all",
                              "request.timeout.ms": 5000,
                              "linger.ms": 2, "transaction.timeout.ms": self.transaction_timeout_ms,
                              "message.timeout.ms": self.transaction_timeout_ms - 1000})

    def consumer_config(self, group: str, **settings) -> dict:
        """The settings of a read_committed consumer of ``group`` that commits nothing by itself."""
        return self.config(**{"group.id": group, "isolation.level": "read_committed", "enable.auto.commit": False,
                              "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                              "heartbeat.interval.ms": 1000, **settings})

    def processor_config(self) -> dict:
        """The consume-transform-produce group's consumer. In a KIP-848 group the session and heartbeat
        timing belong to the broker (librdkafka refuses them with group.protocol=consumer)."""
        config = self.consumer_config(self.group)
        if self.group_protocol == "consumer":
            config.pop("session.timeout.ms")
            config.pop("heartbeat.interval.ms")
            config["group.protocol"] = "consumer"
        return config


class Worker(threading.Thread):
    """A client thread: ``work()`` until ``stop`` is set; an unexpected exception is a harness crash."""

    def __init__(self, name: str, plan: Plan, history: History, stop: threading.Event):
        super().__init__(name=f"semantic-{name}", daemon=True)
        self.process, self.plan, self.history, self.stop_event = name, plan, history, stop
        self.random = random.Random(f"{plan.seed}-{name}")

    def run(self) -> None:
        """The thread's body: :meth:`work`, a crash kept for the run's report."""
        try:
            self.work()
        except BaseException:  # noqa: BLE001 - kept and reported: the run is an error, not a verdict
            self.plan.crashes.append(f"{self.process}: {traceback.format_exc(limit=6)}")

    def work(self) -> None:
        """What the worker does until the run stops (each kind of worker says)."""
        raise NotImplementedError

    def pause(self, seconds: float) -> None:
        """Wait ``seconds``, or less when the run stops."""
        self.stop_event.wait(seconds)

    def write(self, producer: Producer, kind: str, txn: str, topic: str, records: list[tuple[str, int]],
              commit: bool, *, sources: dict | None = None, before_end=None) -> tuple[str, bool]:
        """One transaction writing ``records`` (value, partition), recorded as it begins and as it ends.
        Returns (outcome, whether the producer is still usable)."""
        extra = {"sources": sources} if sources is not None else {}
        self.history.record(self.process, kind, "invoke", txn=txn, topic=topic, records=records,
                            intent="commit" if commit else "abort", **extra)
        offsets: dict[str, int] = {}
        try:
            producer.begin_transaction()
            for value, partition in records:
                producer.produce(topic, value=value.encode(), partition=partition,
                                 on_delivery=lambda error, message: _delivered(offsets, error, message))
            if before_end is not None:
                before_end()
            outcome, error, usable = end_transaction(producer, commit)
        except (KafkaException, BufferError, ClientStuck) as raised:
            outcome, error, usable = abort_after(producer, raised)
        self.history.record(self.process, kind, "ok" if outcome != "unknown" else "info", txn=txn,
                            outcome=outcome, offsets=offsets, **({"error": error} if error else {}))
        return outcome, usable

    def _start_producer(self) -> Producer | None:
        try:
            return new_producer(self.plan, self.plan.transactional_id(self.process))
        except (KafkaException, ClientStuck) as error:
            self.history.record(self.process, "client", "info", error=f"init_transactions: {error.args[0]}")
            self.pause(1.0)
            return None


class ClientStuck(Exception):
    """A client call outlived its own timeout by far; its producer is abandoned."""


def bounded(call, *args, limit: float = CALL_TIMEOUT_S + 5):
    """``call(*args)`` on a thread of its own, given up after ``limit`` seconds: librdkafka's transactional
    calls do not always honour their timeout (send_offsets_to_transaction waits forever while the group
    coordinator is down, confluentinc/librdkafka#5456), and one stuck client must not stall the run."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = call(*args)
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            box["error"] = error

    thread = threading.Thread(target=run, name=f"semantic-call-{getattr(call, '__name__', 'call')}", daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        raise ClientStuck(f"{getattr(call, '__name__', 'a client call')} did not return within {limit:.0f} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def new_producer(plan: Plan, transactional_id: str) -> Producer:
    """A transactional producer of ``transactional_id``, its transactions initialised."""
    producer = Producer(plan.producer_config(transactional_id))
    bounded(producer.init_transactions, CALL_TIMEOUT_S)
    return producer


def end_transaction(producer: Producer, commit: bool) -> tuple[str, str | None, bool]:
    """Commit or abort as confluent-kafka documents: retry what is retriable, abort what must be aborted.
    Returns (outcome, error, producer still usable); outcome is ``unknown`` when the client cannot know."""
    call = producer.commit_transaction if commit else producer.abort_transaction
    deadline = time.monotonic() + 3 * CALL_TIMEOUT_S
    while True:
        try:
            bounded(call, CALL_TIMEOUT_S)
            return ("committed" if commit else "aborted"), None, True
        except ClientStuck as stuck:
            return "unknown", str(stuck), False
        except KafkaException as raised:
            error: KafkaError = raised.args[0]
            if error.txn_requires_abort():
                return abort_after(producer, raised)
            if error.retriable() and time.monotonic() < deadline:
                continue
            return "unknown", str(error), False


def abort_after(producer: Producer, raised: Exception) -> tuple[str, str | None, bool]:
    """After a failed transactional call: abort, unless the producer is stuck."""
    reason = str(raised.args[0] if isinstance(raised, KafkaException) and raised.args else raised)
    if isinstance(raised, ClientStuck):
        return "unknown", reason, False
    try:
        bounded(producer.abort_transaction, CALL_TIMEOUT_S)
        return "aborted", reason, True
    except (KafkaException, ClientStuck) as second:
        return "unknown", f"{reason}; the abort failed too: {second.args[0]}", False


class Writer(Worker):
    """A producer writing transactions of a few records to the input topic, committing most and aborting some."""
    def work(self) -> None:
        """Write transactions until the run stops, replacing the producer when one is fenced or fails."""
        producer, number = None, 0
        while not self.stop_event.is_set():
            if producer is None:
                producer = self._start_producer()
                continue
            number += 1
            producer = self.transaction(producer, f"{self.process}-{number}")

    def transaction(self, producer: Producer, txn: str) -> Producer | None:
        """One transaction ``txn``, committed or aborted at random; the producer to go on with, or None to replace
        it."""
        records = [(f"{txn}/{index}", self.random.randrange(self.plan.partitions))
                   for index in range(self.random.randint(1, 4))]
        commit = self.random.random() >= self.plan.abort_ratio
        _, usable = self.write(producer, "txn", txn, self.plan.input_topic, records, commit)
        return producer if usable else None

def _text(message) -> str:
    """A read record's value as text: every record this workload writes has one."""
    value = message.value()
    assert value is not None, f"a record without a value at {message.topic()}-{message.partition()}@{message.offset()}"
    return value.decode()


def _delivered(offsets: dict[str, int], error, message) -> None:
    if error is None:
        offsets[message.value().decode()] = message.offset()


class Processor(Worker):
    """Consume-transform-produce with offsets sent to the transaction (KIP-98, KIP-447)."""

    def work(self) -> None:
        """Read the input, write each batch to the output with its offsets in one transaction, until the run stops."""
        consumer = self._consumer()
        producer, number = None, 0
        try:
            while not self.stop_event.is_set():
                if producer is None:
                    producer = self._start_producer()
                    continue
                messages = [message for message in consumer.consume(50, 0.5) if message.error() is None]
                if not messages:
                    continue
                for message in messages:
                    self.history.record(self.process, "read", topic=message.topic(), partition=message.partition(),
                                        offset=message.offset(), value=_text(message))
                number += 1
                outcome, usable = self.transaction(producer, consumer, f"{self.process}-{number}", messages)
                if outcome != "committed":
                    consumer = self._rewind(consumer)
                if not usable:
                    producer = None
        finally:
            consumer.close()

    def _consumer(self) -> Consumer:
        consumer = Consumer(self.plan.processor_config())
        consumer.subscribe([self.plan.input_topic])
        return consumer

    def transaction(self, producer: Producer, consumer: Consumer, txn: str, messages) -> tuple[str, bool]:
        """One consume-transform-produce transaction of ``messages``; its outcome and whether the producer can go on."""
        sources = {f"{txn}|{message.partition()}|{message.offset()}": [message.partition(), message.offset()]
                   for message in messages}
        records = [(value, source[0]) for value, source in sources.items()]
        commit = self.random.random() >= self.plan.abort_ratio / 2

        def send_offsets() -> None:
            positions = [position for position in consumer.position(consumer.assignment()) if position.offset >= 0]
            bounded(producer.send_offsets_to_transaction, positions, consumer.consumer_group_metadata(), CALL_TIMEOUT_S)

        return self.write(producer, "ctp", txn, self.plan.output_topic, records, commit, sources=sources,
                          before_end=send_offsets)

    def _rewind(self, consumer: Consumer) -> Consumer:
        """Back to the group's committed offsets, so inputs of an aborted transaction are processed again."""
        try:
            assignment = consumer.assignment()
            for position in consumer.committed(assignment, timeout=CALL_TIMEOUT_S):
                offset = position.offset if position.offset >= 0 else OFFSET_BEGINNING
                consumer.seek(TopicPartition(position.topic, position.partition, offset))
            return consumer
        except KafkaException as error:  # not fetching yet, or the coordinator moved: start over instead
            self.history.record(self.process, "client", "info", error=f"rewind by a new consumer: {error.args[0]}")
            consumer.close()
            return self._consumer()


class Reader(Worker):
    """A read_committed consumer reading both topics from the start while the workload runs."""
    def work(self) -> None:
        """Read and record every record of both topics until the run stops."""
        consumer = Consumer(self.plan.consumer_config(f"semantic-reader-{self.plan.run}"))
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)
                         for topic, partition in self.plan.partitions_of_all()])
        try:
            while not self.stop_event.is_set():
                for message in consumer.consume(200, 0.5):
                    if message.error() is None:
                        self.history.record(self.process, "read", topic=message.topic(), partition=message.partition(),
                                            offset=message.offset(), value=_text(message))
        finally:
            consumer.close()


def list_offsets(cluster: Cluster, partitions: list[tuple[str, int]], isolation: int) -> dict[tuple[str, int], tuple[int, int]]:
    """(offset, leader) of each partition's end: the high watermark (isolation 0) or the last stable offset
    (1). Partitions whose leader errs or cannot be reached are left out."""
    version = cluster.best_version("ListOffsets")
    by_leader: dict[int, list[tuple[str, int]]] = defaultdict(list)
    cluster.metadata(sorted({topic for topic, _ in partitions}))
    for topic, partition in partitions:
        leader = cluster.leaders.get((topic, partition), -1)
        if leader >= 0:
            by_leader[leader].append((topic, partition))
    found = {}
    for leader, owned in by_leader.items():
        topics = defaultdict(list)
        for topic, partition in owned:
            topics[topic].append({"partition_index": partition, "timestamp": -1, "current_leader_epoch": -1})
        request = {"replica_id": -1, "isolation_level": isolation,
                   "topics": [{"name": topic, "partitions": entries} for topic, entries in topics.items()]}
        try:
            response = cluster.connection(leader).request("ListOffsets", version, request).response
        except Exception:  # noqa: BLE001 - a leader that is down answers next round
            continue
        for topic in (response or {}).get("topics", []):  # no body: an undecodable answer, asked again next round
            for entry in topic["partitions"]:
                if entry["error_code"] == 0:
                    found[(topic["name"], entry["partition_index"])] = (entry["offset"], leader)
    return found


class LsoMonitor(Worker):
    """A worker sampling each partition's last stable offset (ListOffsets, read_committed) while the workload runs."""
    INTERVAL_S = 0.25

    def work(self) -> None:
        """Record every partition's last stable offset every ``INTERVAL_S`` until the run stops."""
        cluster, rounds = None, 0
        while not self.stop_event.is_set():
            try:
                if cluster is None or rounds % 200 == 0:  # a fresh client now and then keeps its transcript short
                    if cluster is not None:
                        cluster.close()
                    cluster = Cluster(self.plan.bootstrap, timeout=3.0, security=self.plan.security)
                rounds += 1
                for (topic, partition), (lso, node) in list_offsets(cluster, self.plan.partitions_of_all(),
                                                                    READ_COMMITTED).items():
                    self.history.record(self.process, "lso", topic=topic, partition=partition, lso=lso, node=node)
            except Exception:  # noqa: BLE001 - a target mid-fault: ask again with a new client
                if cluster is not None:
                    cluster.close()
                cluster = None
            self.pause(self.INTERVAL_S)
        if cluster is not None:
            cluster.close()


def drain(plan: Plan, history: History, settle_s: float) -> None:
    """The final read. Waits (up to ``settle_s``) until every partition's last stable offset equals its high
    watermark, then reads everything read_committed to the end and the group's committed offsets."""
    partitions = plan.partitions_of_all()
    ends: dict[tuple[str, int], tuple[int, int]] = {}
    deadline = time.monotonic() + settle_s
    cluster = Cluster(plan.bootstrap, timeout=5.0, security=plan.security)
    try:
        while True:
            try:
                stable = list_offsets(cluster, partitions, READ_COMMITTED)
                high = list_offsets(cluster, partitions, 0)
                ends = {key: (stable[key][0], high[key][0]) for key in partitions if key in stable and key in high}
            except Exception:  # noqa: BLE001 - the target may still be recovering from the last fault
                cluster.close()
                cluster = Cluster(plan.bootstrap, timeout=5.0, security=plan.security)
            settled = len(ends) == len(partitions) and all(lso == hw for lso, hw in ends.values())
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        cluster.close()
    reached = _read_to_end(plan, history, partitions, deadline=time.monotonic() + 60)
    for key in partitions:
        lso, hw = ends.get(key, (-1, -1))
        end = lso if key in reached else reached_offset(history, key)
        history.record("drain", "drained", topic=key[0], partition=key[1], lso=lso, hw=hw, end=end,
                       complete=key in reached and lso == hw and lso >= 0)
    _committed_offsets(plan, history)


def reached_offset(history: History, key: tuple[str, int]) -> int:
    """The offset after the last record the final read reached in the partition ``key``."""
    offsets = [event.value["offset"] for event in history.events if event.process == "drain" and event.kind == "read"
               and (event.value["topic"], event.value["partition"]) == key]
    return max(offsets, default=-1) + 1


def _read_to_end(plan: Plan, history: History, partitions, *, deadline: float) -> set[tuple[str, int]]:
    """Reads until every partition reports its end (for read_committed, the last stable offset)."""
    consumer = Consumer(plan.consumer_config(f"semantic-drain-{plan.run}", **{"enable.partition.eof": True}))
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for topic, partition in partitions])
    reached: set[tuple[str, int]] = set()
    try:
        while len(reached) < len(partitions) and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                topic, partition, error = message.topic(), message.partition(), message.error()
                if error is None:
                    history.record("drain", "read", topic=topic, partition=partition, offset=message.offset(),
                                   value=_text(message))
                elif error.code() == KafkaError._PARTITION_EOF and topic is not None and partition is not None:
                    reached.add((topic, partition))
    finally:
        consumer.close()
    return reached


def _committed_offsets(plan: Plan, history: History) -> None:
    consumer = Consumer(plan.consumer_config(plan.group))
    try:
        wanted = [TopicPartition(plan.input_topic, partition) for partition in range(plan.partitions)]
        committed = consumer.committed(wanted, timeout=CALL_TIMEOUT_S * 3)
        history.record("drain", "offsets", topic=plan.input_topic,
                       offsets={str(entry.partition): max(entry.offset, 0) for entry in committed})
    except KafkaException as error:
        history.record("drain", "client", "info", error=f"committed offsets: {error.args[0]}")
    finally:
        consumer.close()
