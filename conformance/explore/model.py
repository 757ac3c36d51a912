"""The reference model: what each answer of an explored history may be, by the KIP texts, and the invariants.

The model holds what the requests so far established: per transactional id its producer id, epoch and older
generations and its transaction (partitions and groups added, pending offsets, whether EndTxn ended it and how);
per idempotent producer its id; per partition the writes accepted (their record values and offsets) and the
values of writes refused; per group the offsets committed. For each operation :meth:`Model.expect` picks the
row of :data:`TABLE` that applies and says which answers the rule allows; :meth:`Model.step` judges the answer,
applies its effect and checks the invariants. A retriable error is never a departure: it leaves the state as it
was, and where the rule demands an answer the step is inconclusive (:class:`Inconclusive`).

What the model does not know it does not judge: a write accepted while its transaction was ending (transaction
version 1 lets it join the ending transaction or start another) has no known fate, and the offsets of a commit
still completing may be read old or new. Time counts too: once a transaction has been open longer than the
timeout its InitProducerId asked for (by the clock the driver reads as it sends and is answered), the coordinator
may abort it at any moment (``timeout.aborts``): its producer's requests may be answered or refused until a new
InitProducerId, and the LSO may pass its first offset; its records stay invisible to read_committed unless a
commit is accepted.
"""

from __future__ import annotations

import copy
import itertools
import time
from collections import Counter
from dataclasses import dataclass, field

from .ops import TRANSACTION_TIMEOUT_MS, Op, Resolved
from .rules import Rule, rule

NONE = 0
# Errors that say "not now": the coordinator loading or moving, a transaction still completing, a replica set
# short for a moment. They never make a departure, and they have no effect.
RETRIABLE = frozenset({6, 13, 14, 15, 16, 19, 51})
# Errors after which a write may or may not have happened: never judged, the history is inconclusive.
UNKNOWN_OUTCOME = frozenset({7, 20})
UNSTABLE_OFFSET_COMMIT = 88

ACCEPT, REFUSE, EITHER = "accept", "refuse", "either"


class Inconclusive(Exception):
    """The answer leaves the model unable to judge what follows (a retriable error where an answer was due)."""


@dataclass(frozen=True)
class RuleDeparture:
    """An answer or a state the rule forbids."""

    rule: Rule
    message: str
    # the departing step's expectation in the suite format, one the answer seen fails; {} where the format has none
    expect: dict


@dataclass(frozen=True)
class Expectation:
    """What the rule allows for an operation's error: accepted, refused (any error), or either."""

    outcome: str
    rule: Rule
    condition: str = "always"  # the row of TABLE that decided


@dataclass(eq=False)
class Transaction:
    """One transaction of a transactional id; ``outcome`` is set when EndTxn (or a new generation) ended it."""

    serial: int
    partitions: set = field(default_factory=set)
    groups: set = field(default_factory=set)
    pending: dict = field(default_factory=dict)   # (group, topic, partition) -> offset
    first_offsets: dict = field(default_factory=dict)  # (topic, partition) -> first offset written
    outcome: str | None = None                    # None while open, then "commit", "abort" or "unknown"
    started: float | None = None                  # when the request that began it was sent (the model's clock)
    timeout_s: float = TRANSACTION_TIMEOUT_MS / 1000


@dataclass
class Producer:
    """A transactional id or an idempotent producer: its generations (producer id, epoch), newest last."""

    generations: list = field(default_factory=list)
    transaction: Transaction | None = None
    ended: tuple | None = None  # transaction version 2: (generation before the bump, commit) of the last EndTxn
    ended_transaction: Transaction | None = None  # transaction version 2: the transaction that EndTxn ended
    timeout_ms: int = TRANSACTION_TIMEOUT_MS  # what its last InitProducerId asked for
    uncertain: bool = False  # a transaction of this generation outlived its timeout: it may have been fenced

    @property
    def current(self) -> tuple[int, int] | None:
        """The newest generation: (producer id, epoch)."""
        return self.generations[-1] if self.generations else None


@dataclass(eq=False)
class Write:
    """Records an accepted Produce wrote; ``transaction`` None for an idempotent write, ``fate_known`` False for
    a write that arrived while its transaction was ending."""

    values: tuple
    key: tuple
    base_offset: int
    transaction: Transaction | None
    fate_known: bool = True


@dataclass
class Partition:
    """What the history wrote to one partition, and what was refused."""
    writes: list = field(default_factory=list)
    by_value: dict = field(default_factory=dict)
    refused: set = field(default_factory=set)  # values of refused writes that no accepted write carried
    end: int = 0  # one past the last offset an accepted write took: the high watermark is at least this


@dataclass
class Batch:
    """The last batch a producer wrote to a partition, to recognise a repeat."""

    sequence: int
    values: tuple
    base_offset: int


# The table: per operation kind, the rows in order; the first whose condition holds decides. A condition reads
# the model's view of the operation (:class:`Situation`).
TABLE: dict[str, list[tuple[str, str, str]]] = {
    "InitProducerId": [("always", ACCEPT, "init.assigns-producer-id")],
    "AddPartitionsToTxn": [("stale", REFUSE, "fenced.refused"),
                           ("timed_out", EITHER, "timeout.aborts"),
                           ("always", ACCEPT, "add-partitions.accepted")],
    "AddOffsetsToTxn": [("stale", REFUSE, "fenced.refused"),
                        ("timed_out", EITHER, "timeout.aborts"),
                        ("always", ACCEPT, "add-offsets.accepted")],
    # Kafka's documented deviation (rules.DEVIATIONS): a write at the epoch EndTxn v5 just bumped from, to a
    # partition of the transaction it ended, may still be accepted while the markers are written
    "Produce": [("tv2_just_bumped", EITHER, "fenced.refused"),
                ("stale", REFUSE, "fenced.refused"),
                ("timed_out", EITHER, "timeout.aborts"),
                ("tv2_sequence_gap", REFUSE, "produce.sequence"),
                ("tv2_repeat", EITHER, "produce.exactly-once"),
                ("tv2", ACCEPT, "produce.added-implicitly"),
                ("late", EITHER, "produce.partition-in-transaction"),
                ("outside_transaction", REFUSE, "produce.partition-in-transaction"),
                ("sequence_gap", REFUSE, "produce.sequence"),
                ("repeat", EITHER, "produce.exactly-once"),
                ("always", ACCEPT, "produce.accepted")],
    "TxnOffsetCommit": [("tv2_just_bumped", EITHER, "fenced.refused"),  # the same deviation, on the offsets partition
                        ("stale", REFUSE, "fenced.refused"),
                        ("timed_out", EITHER, "timeout.aborts"),
                        ("tv2", ACCEPT, "txn-offset-commit.added-implicitly"),
                        ("late_group", EITHER, "txn-offset-commit.after-add-offsets"),
                        # KIP-98 names no error for it: refused, or no effect outside the transaction (accepted,
                        # the offsets follow the transaction as a broker adding them itself would, v5's way)
                        ("no_offsets_added", EITHER, "txn-offset-commit.after-add-offsets"),
                        ("group_not_added", EITHER, "txn-offset-commit.after-add-offsets"),
                        ("always", ACCEPT, "txn-offset-commit.after-add-offsets")],
    "EndTxn": [("end_retry", EITHER, "end-txn.bumps-epoch"),
               ("stale", REFUSE, "fenced.refused"),
               ("timed_out", EITHER, "timeout.aborts"),
               ("no_open_transaction", EITHER, "end-txn.accepted"),
               ("tv2", ACCEPT, "end-txn.bumps-epoch"),
               ("always", ACCEPT, "end-txn.accepted")],
    "Fetch": [("always", ACCEPT, "read.known-records")],
    "ListOffsets": [("always", ACCEPT, "read.known-records")],
    "OffsetFetch": [("require_stable_pending", EITHER, "offsets.pending-refused"),
                    ("always", ACCEPT, "offsets.committed-only")],
    "DescribeTransactions": [("always", EITHER, "describe.answers")],
    "ListTransactions": [("always", EITHER, "describe.answers")],
}


def table_rows() -> list[tuple[str, str]]:
    """Every row of :data:`TABLE` as (operation kind, condition), in the table's order."""
    return [(kind, condition) for kind, rows in TABLE.items() for condition, _, _ in rows]


class Model:
    """The state a history established, and the judge of its next answer."""

    def __init__(self, topics: int = 2, partitions: int = 2, *, tv2: bool = False, clock=time.monotonic):
        """``tv2``: the history speaks transaction version 2 (KIP-890 part 2): EndTxn v5 bumps the epoch, Produce
        v12 and TxnOffsetCommit v5 add their partition to the transaction themselves. ``clock``: the time
        :meth:`step` judges at when the driver does not say (transaction timeouts are counted on it)."""
        self.tv2 = tv2
        self.clock = clock
        self.now = clock()  # when the answer being judged arrived
        self.sent_at = self.now  # when its request was sent
        self.transactional: dict[int, Producer] = {}
        self.idempotent: dict[int, Producer] = {}
        self.partitions = {(t, p): Partition() for t in range(topics) for p in range(partitions)}
        self.committed: dict[tuple, int] = {}       # (group, topic, partition) -> committed offset
        self.maybe_committed: dict[tuple, set] = {}  # offsets a commit still completing may show
        self.sequences: dict[tuple, int] = {}        # (pid, epoch, topic, partition) -> next sequence
        self.last_batch: dict[tuple, Batch] = {}
        self.producer_ids: dict[int, str] = {}       # every producer id answered, to whom
        self._serials = itertools.count(1)
        self._values = itertools.count(1)
        # In a burst, the states of the partitions before each member served ahead of the Fetch being judged:
        # Kafka takes a Fetch's high watermark and last stable offset before it reads the log (Partition's
        # readRecords), so those two fields may describe any of them while its records describe the latest.
        self._states_since_sent: list[dict] = []
        self.reached: Counter = Counter()  # (operation kind, condition): the rows of TABLE the answers were judged by

    # ------------------------------------------------------------------ what an operation may do
    def can(self, op: Op) -> bool:
        """Whether ``op`` makes sense now (the driver draws only those): a producer must exist to act, a stale
        operation needs an older generation, a repeat needs a batch to repeat."""
        producer = self._producer(op)
        if op.kind in ("AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "Produce"):
            if producer is None or producer.current is None:
                return False
            if op.stale and len(producer.generations) < 2:
                return False
        if op.kind == "Produce" and not op.stale:
            key = self._sequence_key(op)
            if op.sequence == "gap" and self.sequences.get(key, 0) == 0:
                return False  # the text ties a refusal to a sequence after "the last committed message" only
            if op.sequence == "repeat" and key not in self.last_batch:
                return False
        if op.kind == "TxnOffsetCommit" and op.group is None:
            return False
        return True

    def _producer(self, op: Op) -> Producer | None:
        if op.txn is not None:
            return self.transactional.get(op.txn)
        if op.producer is not None:
            return self.idempotent.get(op.producer)
        return None

    def _sequence_key(self, op: Op) -> tuple:
        producer = self._producer(op)
        assert producer is not None  # can() asks only of operations whose producer exists
        pid, epoch = producer.generations[-2 if op.stale else -1]
        return (pid, epoch, op.topic, op.partition)

    def resolve(self, op: Op, names: "Names") -> Resolved:
        """Concrete values for ``op``: the generation it speaks for, its sequence, fresh record values."""
        resolved = Resolved(transactional_id=names.txn(op.txn) if op.txn is not None else None,
                            topic=names.topic(op.topic), topic_id=names.topic_ids.get(op.topic),
                            group=names.group(op.group) if op.group is not None else "",
                            names={names.topic(index): index for index in range(names.topics)})
        producer = self._producer(op)
        if producer is not None and producer.current is not None and op.kind != "InitProducerId":
            resolved.producer_id, resolved.producer_epoch = producer.generations[-2 if op.stale else -1]
        if op.kind == "Produce":
            key = (resolved.producer_id, resolved.producer_epoch, op.topic, op.partition)
            following = self.sequences.get(key, 0)
            if op.sequence == "repeat" and key in self.last_batch:
                batch = self.last_batch[key]
                resolved.base_sequence, resolved.values = batch.sequence, batch.values
            else:
                resolved.base_sequence = following + (2 if op.sequence == "gap" else 0)
                resolved.values = tuple(f"v{next(self._values)}" for _ in range(op.count))
        if op.kind == "AddPartitionsToTxn":
            resolved.partitions = tuple((names.topic(t), p) for t, p in op.partitions)
        if op.kind == "OffsetFetch":
            resolved.partitions = tuple((names.topic(t), p) for t, p in sorted({(t, p) for (_, t, p) in self._group_keys(op.group)} | {(0, 0)}))
        return resolved

    def _group_keys(self, group) -> set:
        keys = {key for key in self.committed if key[0] == group}
        keys |= {key for key in self.maybe_committed if key[0] == group}
        for producer in self.transactional.values():
            if producer.transaction is not None:
                keys |= {key for key in producer.transaction.pending if key[0] == group}
        return keys

    # ------------------------------------------------------------------ the table
    def situation(self, op: Op, resolved: Resolved) -> set[str]:
        """The conditions of :data:`TABLE` that hold for ``op``."""
        holds = {"always"}
        if op.stale:
            holds.add("stale")
        producer = self._producer(op)
        transaction = producer.transaction if producer is not None else None
        open_ = transaction if transaction is not None and transaction.outcome is None else None
        if op.kind == "Produce" and op.txn is not None:
            where = (op.topic, op.partition)
            if transaction is not None and transaction.outcome is not None and where in transaction.partitions:
                holds.add("late")
            if open_ is None or where not in open_.partitions:
                holds.add("outside_transaction")
        if op.kind == "Produce" and not op.stale:
            key = (resolved.producer_id, resolved.producer_epoch, op.topic, op.partition)
            following = self.sequences.get(key, 0)
            batch = self.last_batch.get(key)
            if batch is not None and resolved.base_sequence == batch.sequence and resolved.values == batch.values:
                holds.add("repeat")
            elif resolved.base_sequence != following:
                holds.add("sequence_gap")
        if op.kind == "TxnOffsetCommit":
            if transaction is not None and transaction.outcome is not None and op.group in transaction.groups:
                holds.add("late_group")
            if open_ is None or not open_.groups:
                holds.add("no_offsets_added")
            elif op.group not in open_.groups:
                # the text ties AddOffsetsToTxn to a group but says nothing of another group's offsets in the same
                # transaction (Kafka checks the offsets partition, which two groups may share): either answer
                holds.add("group_not_added")
        if op.kind == "EndTxn" and (open_ is None or not (open_.partitions or open_.groups)):
            # Nor one the model opened only to carry the offsets of a TxnOffsetCommit accepted without
            # AddOffsetsToTxn: that went to the group coordinator, and the transaction coordinator added nothing
            # (Kafka 3.5.2 then answers INVALID_TXN_STATE, as it does with no transaction at all)
            holds.add("no_open_transaction")
        if op.txn is not None and producer is not None and not op.stale and (
                producer.uncertain or (open_ is not None and self._timed_out(open_))
                # its own first attempt may have begun a transaction that timed out before the attempt answered
                or self.now - self.sent_at > producer.timeout_ms / 1000):
            holds.add("timed_out")
        if self.tv2 and op.kind == "EndTxn" and op.stale and producer is not None and producer.ended == (
                producer.generations[-2], op.commit):
            holds.add("end_retry")  # the same EndTxn again at the epoch before its bump: a retry, not a zombie
        if self.tv2 and op.stale and producer is not None and producer.ended is not None \
                and producer.ended[0] == producer.generations[-2] and producer.ended_transaction is not None \
                and ((op.kind == "Produce" and (op.topic, op.partition) in producer.ended_transaction.partitions)
                     or (op.kind == "TxnOffsetCommit" and producer.ended_transaction.groups)):
            # at the epoch EndTxn v5 just bumped from, to a partition of the transaction it ended (for offsets: any
            # group, since two groups may share the offsets partition Kafka checks): Kafka's deviation
            # (rules.DEVIATIONS), the partition still holds that transaction open until its marker lands
            holds.add("tv2_just_bumped")
        if self.tv2 and op.txn is not None and op.kind in ("Produce", "TxnOffsetCommit", "EndTxn"):
            holds.add("tv2")
            holds |= {f"tv2_{name}" for name in ("sequence_gap", "repeat") if name in holds}
        if op.kind == "OffsetFetch" and op.require_stable and self._pending_offsets(op.group):
            holds.add("require_stable_pending")
        return holds

    def _timed_out(self, transaction: Transaction) -> bool:
        """Whether the coordinator may have aborted ``transaction`` by now: it began (by the sender's clock, never
        later than the coordinator's) longer than its timeout before the answer being judged arrived."""
        return transaction.outcome is None and transaction.started is not None and \
            self.now - transaction.started > transaction.timeout_s

    def expect(self, op: Op, resolved: Resolved) -> Expectation:
        """The first row of :data:`TABLE` for ``op`` whose condition holds."""
        holds = self.situation(op, resolved)
        for condition, outcome, rule_id in TABLE[op.kind]:
            if condition in holds:
                return Expectation(outcome, rule(rule_id), condition)
        raise AssertionError(f"no row of the table applies to {op.describe()}")

    # ------------------------------------------------------------------ judging
    def step(self, op: Op, resolved: Resolved, answer: dict, *, sent_at: float | None = None,
             answered_at: float | None = None) -> list[RuleDeparture]:
        """Judge ``answer`` to ``op`` (sent and answered at those times of the model's clock; now by default),
        apply its effect, check the invariants; the departures found."""
        self.now = self.clock() if answered_at is None else answered_at
        self.sent_at = self.now if sent_at is None else sent_at
        expectation = self.expect(op, resolved)
        self.reached[(op.kind, expectation.condition)] += 1
        producer = self._producer(op)
        if expectation.rule.id == "timeout.aborts" and producer is not None:
            producer.uncertain = True  # until a new InitProducerId, whatever follows may be fenced
        error = answer.get("error", NONE)
        if error in UNKNOWN_OUTCOME:
            raise Inconclusive(f"{op.describe()}: error {error} leaves the write's outcome unknown")
        if error in RETRIABLE:
            if expectation.outcome == ACCEPT:
                raise Inconclusive(f"{op.describe()}: still a retriable error ({error}) when the retries ended")
            return []
        accepted = error == NONE
        if expectation.outcome == ACCEPT and not accepted:
            return [RuleDeparture(expectation.rule, f"{op.describe()} was refused with error {error}; "
                              f"{expectation.rule.summary}", {"error_code": "NONE"})]
        if expectation.outcome == REFUSE and accepted:
            self._note_refused_accepted(op, resolved, answer)
            return [RuleDeparture(expectation.rule, f"{op.describe()} was accepted; {expectation.rule.summary}",
                              {"error_code": {"ne": "NONE"}})]
        if not accepted:
            if op.kind == "Produce":
                # a refused repeat carries the values of the batch it repeats: those were written, and stay so
                where = self.partitions[(op.topic, op.partition)]
                where.refused.update(value for value in resolved.values if value not in where.by_value)
            return []
        apply = getattr(self, f"_apply_{op.kind}")
        return apply(op, resolved, answer, expectation) or []

    def step_concurrently(self, steps: list[tuple]) -> tuple[tuple, list[RuleDeparture]]:
        """Judge the answers of requests that were in flight together ((op, resolved, answer, sent_at,
        answered_at) each): the target may have served them in any order, so each order is tried on a copy of the
        model and the first that departs nowhere is kept. Only when every order departs is it a departure: that of
        the order sent, with the members up to the one that departed ((indices in that order), departures).
        Inconclusive only when no order departs nowhere and some order could not be judged."""
        first: tuple[tuple, list[RuleDeparture], Model] | None = None
        unjudged: Inconclusive | None = None
        for order in itertools.permutations(range(len(steps))):
            trial = copy.deepcopy(self, {id(self.clock): self.clock})  # one clock for every trial
            departures: list[RuleDeparture] = []
            done: list[int] = []
            earlier: list[dict] = []  # the partitions as each member ahead of the next one left them
            try:
                for index in order:
                    op, resolved, answer, sent_at, answered_at = steps[index]
                    done.append(index)
                    earlier.append(trial._offsets_state())
                    trial._states_since_sent = earlier if op.kind == "Fetch" else []
                    try:
                        departures = trial.step(op, resolved, answer, sent_at=sent_at, answered_at=answered_at)
                    finally:
                        trial._states_since_sent = []
                    if departures:
                        break
            except Inconclusive as why:
                unjudged = unjudged or why
                continue
            if not departures:
                self.__dict__.update(trial.__dict__)
                return order, []
            if first is None:
                first = (tuple(done), departures, trial)
        if unjudged is not None:
            raise Inconclusive(str(unjudged))
        assert first is not None
        self.__dict__.update(first[2].__dict__)
        return first[0], first[1]

    def _note_refused_accepted(self, op, resolved, answer) -> None:
        """A write the rule refuses was accepted: its records exist, with no transaction the model knows."""
        if op.kind == "Produce":
            self._record_write(op, resolved, answer, transaction=None, fate_known=False)

    # ------------------------------------------------------------------ effects of accepted answers
    def _apply_InitProducerId(self, op, resolved, answer, expectation):
        pid, epoch = answer.get("producer_id", -1), answer.get("producer_epoch", -1)
        owner = f"txn{op.txn}" if op.txn is not None else f"producer{op.producer}"
        if pid is None or pid < 0 or epoch is None or epoch < 0:
            return [RuleDeparture(expectation.rule, f"{op.describe()} answered producer id {pid}, epoch {epoch}",
                              {"error_code": "NONE", "fields": {"producer_id": {"ge": 0}, "producer_epoch": {"ge": 0}}})]
        previous_owner = self.producer_ids.get(pid)
        if op.txn is None and previous_owner is not None:
            return [RuleDeparture(expectation.rule, f"{op.describe()} answered producer id {pid}, already {previous_owner}'s",
                              {})]
        if op.txn is not None and previous_owner not in (None, owner):
            return [RuleDeparture(expectation.rule, f"{op.describe()} answered producer id {pid}, already {previous_owner}'s",
                              {})]
        self.producer_ids[pid] = owner
        table = self.transactional if op.txn is not None else self.idempotent
        producer = table.setdefault(op.txn if op.txn is not None else op.producer, Producer())
        departures = []
        if producer.current is not None:
            old_pid, old_epoch = producer.current
            if pid == old_pid and epoch <= old_epoch:
                departures.append(RuleDeparture(rule("init.fences-older-generation"),
                                            f"{op.describe()} answered epoch {epoch} of producer id {pid}, not above {old_epoch}",
                                            {}))
        if producer.transaction is not None and producer.transaction.outcome is None:
            self._end(producer.transaction, "abort")  # init.aborts-pending-transaction
        producer.generations.append((pid, epoch))
        producer.uncertain = False
        if op.txn is not None:
            producer.timeout_ms = op.timeout_ms
        return departures

    def _apply_AddPartitionsToTxn(self, op, resolved, answer, expectation):
        transaction = self._open_transaction(op)
        transaction.partitions.update(op.partitions)

    def _apply_AddOffsetsToTxn(self, op, resolved, answer, expectation):
        self._open_transaction(op).groups.add(op.group)

    def _open_transaction(self, op) -> Transaction:
        producer = self.transactional[op.txn]
        if producer.transaction is None or producer.transaction.outcome is not None:
            producer.transaction = Transaction(next(self._serials), started=self.sent_at,
                                               timeout_s=producer.timeout_ms / 1000)
        return producer.transaction

    def _apply_Produce(self, op, resolved, answer, expectation):
        key = (resolved.producer_id, resolved.producer_epoch, op.topic, op.partition)
        where = self.partitions[(op.topic, op.partition)]
        batch = self.last_batch.get(key)
        if batch is not None and (resolved.base_sequence, resolved.values) == (batch.sequence, batch.values):
            return []  # a repeat: not written again (produce.exactly-once is checked where the log is read)
        departures = []
        if answer["base_offset"] < where.end:
            departures.append(RuleDeparture(rule("read.known-records"),
                                        f"{op.describe()} was written at offset {answer['base_offset']}, below "
                                        f"{where.end} where an earlier write ended", {}))
        producer = self._producer(op)
        joined_ended = expectation.rule.id == "fenced.refused"  # at the epoch just bumped from: the ended one's
        if self.tv2 and op.txn is not None and not joined_ended:
            self._open_transaction(op).partitions.add((op.topic, op.partition))  # Produce v12 adds it itself
        transaction = None if op.txn is None else producer.ended_transaction if joined_ended else producer.transaction
        late = expectation.outcome == EITHER  # joined a transaction that was ending
        self._record_write(op, resolved, answer, transaction=transaction, fate_known=not late)
        if transaction is not None and not late:
            transaction.first_offsets.setdefault((op.topic, op.partition), answer["base_offset"])
        self.sequences[key] = resolved.base_sequence + len(resolved.values)
        self.last_batch[key] = Batch(resolved.base_sequence, resolved.values, answer["base_offset"])
        return departures

    def _record_write(self, op, resolved, answer, *, transaction, fate_known) -> None:
        where = self.partitions[(op.topic, op.partition)]
        write = Write(resolved.values, (op.topic, op.partition), answer.get("base_offset", -1), transaction, fate_known)
        where.writes.append(write)
        for value in resolved.values:
            where.by_value[value] = write
            where.refused.discard(value)  # a record is refused only while no accepted write carried it
        if write.base_offset >= 0:
            where.end = max(where.end, write.base_offset + len(resolved.values))

    def _apply_TxnOffsetCommit(self, op, resolved, answer, expectation):
        if expectation.rule.id == "fenced.refused":  # accepted at the epoch just bumped from: it joined the ended one
            ended = self.transactional[op.txn].ended_transaction
            if ended is not None and ended.outcome in ("commit", "unknown"):
                self.maybe_committed.setdefault((op.group, op.topic, op.partition), set()).add(op.offset)
            return  # after an abort, its offsets are aborted with the rest: never committed
        if self.tv2:
            self._open_transaction(op).groups.add(op.group)  # TxnOffsetCommit v5 adds the offsets itself
        elif expectation.rule.id == "txn-offset-commit.after-add-offsets" and expectation.outcome == EITHER:
            # accepted without AddOffsetsToTxn: no effect outside the transaction, so its offsets follow it (committed
            # with it, if at all; never after an abort), as a coordinator that added them itself would have them
            self._open_transaction(op)
        transaction = self.transactional[op.txn].transaction
        key = (op.group, op.topic, op.partition)
        if expectation.outcome == EITHER and (transaction is None or transaction.outcome is not None
                                              or expectation.rule.id == "timeout.aborts"):
            self.maybe_committed.setdefault(key, set()).add(op.offset)  # joined an ending transaction: either offset
            return
        transaction.pending[key] = op.offset

    def _apply_EndTxn(self, op, resolved, answer, expectation):
        producer = self.transactional[op.txn]
        departures = []
        if self.tv2:  # EndTxn v5 answers the generation the producer continues with
            bumped = (answer.get("producer_id", -1), answer.get("producer_epoch", -1))
            if expectation.outcome == EITHER and op.stale:
                return []  # a retry of the EndTxn that bumped: no new generation, no effect
            if bumped[0] is not None and bumped[0] >= 0 and (bumped[1] or 0) >= 0 and bumped != producer.current:
                producer.ended = (producer.current, op.commit)
                producer.ended_transaction = producer.transaction
                producer.generations.append(bumped)
            elif expectation.outcome == ACCEPT:
                departures.append(RuleDeparture(expectation.rule, f"{op.describe()} answered producer id {bumped[0]} "
                                            f"epoch {bumped[1]}, not a new generation", {}))
        if expectation.rule.id == "timeout.aborts" and producer.transaction is not None \
                and producer.transaction.outcome is None:
            # an abort accepted aborts it whoever aborted first; a commit accepted may come after the coordinator's
            # abort (a retry, under transaction version 2): its fate is unknown
            self._end(producer.transaction, "unknown" if op.commit else "abort")
            return departures
        if expectation.outcome == EITHER or producer.transaction is None:
            return departures  # no open transaction: the text ties no effect to it
        self._end(producer.transaction, "commit" if op.commit else "abort")
        return departures

    def _end(self, transaction: Transaction, outcome: str) -> None:
        transaction.outcome = outcome
        for key, offset in transaction.pending.items():
            if outcome in ("commit", "unknown"):  # until read, the old offset may still show: the commit is completing
                self.maybe_committed.setdefault(key, set()).add(offset)
        if outcome == "unknown":
            for where in self.partitions.values():
                for write in where.writes:
                    if write.transaction is transaction:
                        write.fate_known = False

    # ------------------------------------------------------------------ reads: the invariants
    def _apply_Fetch(self, op, resolved, answer, expectation):
        where = self.partitions[(op.topic, op.partition)]
        departures, kept, seen = [], [], set()
        hw, lso = answer["high_watermark"], answer["last_stable_offset"]
        for value in answer["values"]:
            write = where.by_value.get(value)
            problem = None
            if value in where.refused:
                problem = ("refused.not-written", f"returned {value}, a record of a refused write")
            elif write is None:
                problem = ("read.known-records", f"returned {value}, a record never written")
            elif value in seen:
                problem = ("produce.exactly-once", f"returned {value} twice")
            elif op.isolation == 1 and write.fate_known and write.transaction is not None \
                    and write.transaction.outcome != "commit":
                state = "aborted" if write.transaction.outcome == "abort" else "still open"
                problem = ("read-committed.committed-only", f"returned {value}, a record of a transaction {state}")
            seen.add(value)
            if problem is None:
                kept.append(value)
            else:
                departures.append((rule(problem[0]), f"{op.describe()} {problem[1]}"))
        # the values a reader may see are those the log may hold, once each: what the case expects instead
        departures = [RuleDeparture(found, message, {"values": kept}) for found, message in departures]
        # Records at or past the answer's own last stable offset are no departure: Kafka takes that offset before
        # it reads the log, and a transaction's markers are written after its EndTxn is answered, so a committed
        # record may come with an older LSO. What read_committed must hold, only committed records, is the
        # per-record check above.
        offsets = self._check_offsets(op, hw=hw, lso=lso)
        if offsets and any(not self._check_offsets(op, hw=hw, lso=lso, state=state)
                           for state in self._states_since_sent):
            offsets = []  # the fields describe the log as it was before a write served ahead of this Fetch
        return departures + offsets

    def _apply_ListOffsets(self, op, resolved, answer, expectation):
        if op.isolation == 1:
            return self._check_offsets(op, hw=None, lso=answer["offset"])
        return self._check_offsets(op, hw=answer["offset"], lso=None)

    def _offsets_state(self) -> dict:
        """What :meth:`_check_offsets` reads, as it is now: each partition's end, its open transactions' first offsets."""
        return {key: (where.end, self.open_first_offsets(*key)) for key, where in self.partitions.items()}

    def _check_offsets(self, op, *, hw, lso, state: dict | None = None) -> list[RuleDeparture]:
        """The high watermark covers every write; the LSO stays at or below each open transaction's first offset
        and at or below the high watermark. ``state``: judged against that of :meth:`_offsets_state`, not now."""
        key = (op.topic, op.partition)
        end, open_firsts = state[key] if state is not None else (self.partitions[key].end, self.open_first_offsets(*key))
        departures = []
        if hw is not None and hw < end:
            departures.append(RuleDeparture(rule("read.known-records"),
                                        f"{op.describe()}: high watermark {hw} below {end}, the end of the "
                                        f"accepted writes", {"fields": {"high_watermark": {"ge": end}}}))
        if lso is None:
            return departures
        if hw is not None and lso > hw:
            departures.append(RuleDeparture(rule("lso.below-open-transaction"),
                                        f"{op.describe()}: last stable offset {lso} above the high watermark {hw}", {}))
        for first in open_firsts:
            if lso > first:
                field_name = "last_stable_offset" if op.kind == "Fetch" else "topics[0].partitions[0].offset"
                departures.append(RuleDeparture(rule("lso.below-open-transaction"),
                                            f"{op.describe()}: last stable offset {lso} passed {first}, the first offset "
                                            f"of a transaction still open", {"fields": {field_name: {"le": first}}}))
        return departures

    def open_first_offsets(self, topic: int, partition: int) -> list[int]:
        """First offsets on the partition of the transactions the model knows to be open."""
        return sorted(transaction.first_offsets[(topic, partition)]
                      for producer in self.transactional.values()
                      for transaction in [producer.transaction]
                      if transaction is not None and transaction.outcome is None
                      and not self._timed_out(transaction)  # the coordinator may have aborted it
                      and (topic, partition) in transaction.first_offsets)

    def _pending_offsets(self, group) -> dict:
        pending = {}
        for producer in self.transactional.values():
            transaction = producer.transaction
            if transaction is not None and transaction.outcome is None:
                pending.update({key: offset for key, offset in transaction.pending.items() if key[0] == group})
        return pending

    def _apply_OffsetFetch(self, op, resolved, answer, expectation):
        departures = []
        pending = self._pending_offsets(op.group)
        for (topic, partition), (error, offset) in answer["partitions"].items():
            key = (op.group, topic, partition)
            if error:
                if key in pending and op.require_stable:
                    continue  # offsets.pending-refused: a refusal is what the text asks
                if error in RETRIABLE or error == UNSTABLE_OFFSET_COMMIT:
                    continue
                departures.append(RuleDeparture(rule("offsets.committed-only"),
                                            f"{op.describe()}: error {error} for t{topic}-{partition}", {}))
                continue
            allowed = {self.committed.get(key, -1)} | self.maybe_committed.get(key, set())
            if offset not in allowed:
                detail = "a pending offset of an open transaction" if offset == pending.get(key) else "never committed"
                departures.append(RuleDeparture(rule("offsets.committed-only"),
                                            f"{op.describe()}: offset {offset} for t{topic}-{partition}, {detail} "
                                            f"(allowed: {sorted(allowed)})", {}))
            elif offset != self.committed.get(key, -1):
                self.committed[key] = offset  # the commit completed: from now on only it is stable
                self.maybe_committed.pop(key, None)
        return departures

    def _apply_DescribeTransactions(self, op, resolved, answer, expectation):
        return []  # describe.answers: sent and answered, the state not judged

    def _apply_ListTransactions(self, op, resolved, answer, expectation):
        return []


class Names:
    """The names of one history's topics, transactional ids and groups (unique to it)."""

    def __init__(self, prefix: str, topics: int = 2, topic_ids: dict | None = None):
        self.prefix = prefix
        self.topics = topics
        self.topic_ids = topic_ids or {}

    def topic(self, index: int) -> str:
        """The name of topic ``index``."""
        return f"{self.prefix}-t{index}"

    def txn(self, index: int) -> str:
        """The name of transactional id ``index``."""
        return f"{self.prefix}-txn{index}"

    def group(self, index: int) -> str:
        """The name of group ``index``."""
        return f"{self.prefix}-group{index}"
