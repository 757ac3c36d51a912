"""The driver: a hypothesis state machine sending generated operations to a target, each answer judged.

Every example is one history on fresh names (its own topics, transactional ids and groups), so histories never
see each other's state. An operation is drawn with its API version from the range the target advertises (capped
at what a client of transaction version 1 sends: the model is of that protocol), resolved by the model, sent
through the harness's client to the coordinator or leader it concerns, and sent again while the answer is a
retriable error (as Kafka's clients do). A departure fails the example; hypothesis then shrinks the history, and
:class:`Collector` keeps the shortest departing history of each rule.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from ..client.cluster import Cluster, ClusterError
from ..client.connection import ClientError, Connection
from ..client.transcript import Exchange
from ..protocol.compression import Compression, compress
from ..protocol.errors import error_name
from .model import RETRIABLE, RuleDeparture, Inconclusive, Model, Names
from .ops import READ_COMMITTED, READ_UNCOMMITTED, SHORT_TRANSACTION_TIMEOUT_MS, WAIT_MS, Op, Resolved, answer, request

TOPICS, PARTITIONS, TRANSACTIONAL_IDS, PRODUCERS, GROUPS = 2, 2, 2, 2, 2
RETRY_FOR_S = 8.0
# Who may have a request in a burst: one request each, so that each is resolved (its generation, its sequence)
# the same whatever order the target serves them in
BURST_ACTORS = [f"txn{index}" for index in range(TRANSACTIONAL_IDS)] + [
    f"producer{index}" for index in range(PRODUCERS)] + ["reader"]
MAX_INITS = 6  # InitProducerId requests in one history
# The highest version a client of transaction version 1 sends (Kafka's client caps the same ones); versions that
# name topics by id only are left out (the model names them); AddPartitionsToTxn v4+ is for brokers.
CAPS = {"Produce": 11, "EndTxn": 4, "TxnOffsetCommit": 4, "AddPartitionsToTxn": 3, "OffsetFetch": 9,
        "InitProducerId": 99}
TV2_VERSIONS = {"Produce": 12, "EndTxn": 5, "TxnOffsetCommit": 5}  # what a client of transaction version 2 sends
FLOORS = {"Produce": 3, "Fetch": 4, "ListOffsets": 2}  # the first versions with transactions / isolation
# The proxy's faults an operation may meet on proxy+SPEC, and the operations each may meet. A request without
# an answer (dropped, or its answer dropped) is sent again as it was, as Kafka's clients do after a timeout:
# the same batch and sequence, the same epoch, so the KIPs' retry rules say what the second answer may be. A
# duplicated request reaches the broker twice (the second answer swallowed): only for requests whose repeat the
# KIPs make harmless (a write's repeat is not written again), never InitProducerId (a second one is a new
# generation the client never hears of) nor EndTxn and TxnOffsetCommit (the copy may arrive after later requests
# on other connections). A response answered twice is the client's matter, not the broker's: not drawn. A
# response reordered behind the next one on its connection exists only in a pipelined burst (alone, it would
# wait for an answer that never comes).
RESENT = ("Produce", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "InitProducerId",
          "Fetch", "ListOffsets", "OffsetFetch")
FAULTS: dict[str, tuple[str, ...] | None] = {"delay": None, "reorder": (), "drop_request": RESENT, "drop_response": RESENT,
          "duplicate_request": ("Produce", "AddPartitionsToTxn", "AddOffsetsToTxn", "Fetch", "ListOffsets",
                                "OffsetFetch")}
FAULT_DELAY_MS = 300
NO_ANSWER_S = 3.0  # how long a request whose answer the proxy drops is waited for before it is sent again
RESENDS = 3
REQUIRED = ("InitProducerId", "AddPartitionsToTxn", "EndTxn", "Produce", "Fetch")


class DepartureFound(AssertionError):
    """Raised inside an example so that hypothesis shrinks it."""


@dataclass
class HistoryStep:
    """One operation of a history, what was sent and what came back."""

    op: Op
    resolved: Resolved
    answer: dict | None = None
    error: str = ""
    departures: list = field(default_factory=list)
    attempts: int = 1
    outcome: str = ""  # what the model's rule allowed: accept, refuse or either
    burst: int = 0  # sent at once with this many requests (0: alone)

    def line(self) -> str:
        """The request and its answer, in one line."""
        got = self.error or ("NONE" if not self.answer or not self.answer.get("error")
                             else error_name(self.answer["error"]))
        return f"{self.op.describe()}{f' [burst of {self.burst}]' if self.burst else ''} -> {got}"


class Collector:
    """What an exploration found: per rule the shortest departing history, and counts for the console."""

    def __init__(self):
        self.examples = 0
        self.requests = 0
        self.inconclusive = 0
        self.departing_examples = 0
        self.found: dict[str, tuple[list[HistoryStep], RuleDeparture]] = {}
        self.settled: set[str] = set()  # rules found and shrunk in a round before this one
        self.first_departure_s: float | None = None
        self.started = time.monotonic()
        self.answers: Counter = Counter()  # (API, error name): how often, to show what the histories reached
        self.judged = 0  # answers the model judged, and the time it took (the benchmark compares it with the broker's)
        self.judging_s = 0.0
        # how often a history met what no single request shows: bursts, waits past a timeout, the proxy's faults
        self.shapes: Counter = Counter()
        self.reached: Counter = Counter()  # rows of the model's table the judged answers went through, all histories
        self.on_example = None  # called as each history begins: progress while a departure is shrunk, for minutes

    def shrinking(self) -> dict[str, int]:
        """The rules found in the round under way, each with its shortest departing history so far (its length)."""
        return {rule_id: len(history) for rule_id, (history, _) in self.found.items() if rule_id not in self.settled}

    def departed(self, history: list[HistoryStep], departure: RuleDeparture) -> None:
        """Keep ``history`` if it is the shortest departing one of its rule so far."""
        self.departing_examples += 1
        if self.first_departure_s is None:
            self.first_departure_s = time.monotonic() - self.started
        known = self.found.get(departure.rule.id)
        if known is None or len(history) <= len(known[0]):
            self.found[departure.rule.id] = (list(history), departure)


class ExploredTarget:
    """The target as the driver sees it: a cluster connection, the versions to draw from, fresh names."""

    def __init__(self, bootstrap: str, *, security=None, run: str = "explore", create_topic=None, inject=None):
        """``create_topic(name, partitions)`` makes a topic where the target has no CreateTopics (librdkafka's
        mock creates them through its own control API); ``inject(name, **arguments)`` arms a fault of the proxy
        in front of the target (proxy+SPEC), None where there is none."""
        self.create_topic = create_topic
        self.inject = inject
        self.cluster = Cluster(bootstrap, timeout=15.0, security=security, client_id="conformance-explore")
        self.run = run
        self.histories = 0
        self.created: list[str] = []
        self.cluster.api_versions()
        self.versions = {}
        for api in ("InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn", "Produce",
                    "Fetch", "ListOffsets", "OffsetFetch", "DescribeTransactions", "ListTransactions"):
            found = self.cluster.version_range(api)
            if found is None:
                continue
            low, high = max(found[0], FLOORS.get(api, 0)), min(found[1], CAPS.get(api, found[1]))
            if low <= high:
                self.versions[api] = (low, high)
        # Transaction version 2 (KIP-890 part 2) where the target finalizes it and has the versions that speak it
        self.tv2 = self.cluster.finalized_features.get("transaction.version", 0) >= 2 and all(
            (found := self.cluster.version_range(api)) is not None and found[0] <= version <= found[1]
            for api, version in TV2_VERSIONS.items())
        missing = [api for api in REQUIRED if api not in self.versions]
        if missing:
            raise ClusterError(f"the target advertises no usable version of {', '.join(missing)}")
        self.compressions = [name for name in ("none", "gzip", "snappy", "lz4", "zstd") if _works(name)]

    def close(self) -> None:
        """Delete the topics still listed and close the connections."""
        self.delete_topics()
        self.cluster.close()

    def new_names(self) -> Names:
        """Fresh topics (created now), transactional ids and groups for one history."""
        self.histories += 1
        self.cluster.transcript.exchanges.clear()
        if len(self.created) >= 100:  # the topics of earlier histories, never those of the one starting
            self.delete_topics()
        names = Names(f"{self.run}-h{self.histories}", TOPICS)
        wanted = [names.topic(index) for index in range(TOPICS)]
        if self.cluster.version_range("CreateTopics") is None and self.create_topic is not None:
            for name in wanted:
                self.create_topic(name, PARTITIONS)
        else:
            version = self.cluster.best_version("CreateTopics")
            body = {"topics": [{"name": name, "num_partitions": PARTITIONS, "replication_factor": 1,
                                "assignments": [], "configs": []} for name in wanted],
                    "timeout_ms": 30_000, "validate_only": False}
            response = _answered(self.cluster.connection().request("CreateTopics", version, body, step="setup",
                                                                   timeout=35))
            for result in response["topics"]:
                if result["error_code"] not in (0, 36):
                    raise ClusterError(f"creating {result['name']} failed: {error_name(result['error_code'])}")
        self.created += wanted
        names.topic_ids = self._wait_for_leaders(wanted)
        return names

    def _wait_for_leaders(self, wanted: list[str]) -> dict:
        deadline = time.monotonic() + 30
        while True:
            metadata = self.cluster.metadata(wanted)
            ids, ready = {}, True
            for topic in metadata["topics"]:
                ids[wanted.index(topic["name"])] = topic.get("topic_id")
                if topic["error_code"] or len(topic["partitions"]) < PARTITIONS or any(
                        partition["error_code"] or partition["leader_id"] < 0 for partition in topic["partitions"]):
                    ready = False
            if ready and self._leaders_answer(wanted):
                return ids
            if time.monotonic() > deadline:
                raise ClusterError(f"topics {wanted} have no leaders after 30 s")
            time.sleep(0.05)

    def _leaders_answer(self, wanted: list[str]) -> bool:
        """A leader Metadata names may not serve the partition yet: ask it (ListOffsets) before the history."""
        version = self.cluster.best_version("ListOffsets")
        for name in wanted:
            for partition in range(PARTITIONS):
                leader = self.cluster.leaders[(name, partition)]
                body = {"replica_id": -1, "isolation_level": 0, "timeout_ms": 1000, "topics": [
                    {"name": name, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                                   "timestamp": -1}]}]}
                response = _answered(self.cluster.connection(leader).request("ListOffsets", version, body, step="setup"))
                if response["topics"][0]["partitions"][0]["error_code"]:
                    return False
        return True

    def delete_topics(self) -> None:
        """Delete the topics earlier histories created, in one request."""
        names, self.created = self.created, []
        if not names or self.cluster.version_range("DeleteTopics") is None:
            return
        try:
            version = self.cluster.best_version("DeleteTopics")
            body = {"topic_names": names, "topics": [{"name": name} for name in names], "timeout_ms": 5000}
            self.cluster.connection().request("DeleteTopics", version, body, step="cleanup", timeout=6)
        except (ClientError, ClusterError):
            pass  # names never collide: a topic left behind harms nothing

    def destination(self, op: Op, names: Names, resolved) -> int | str:
        """The broker ``op`` goes to: the partition's leader, the group's or transaction's coordinator."""
        if op.kind in ("Produce", "Fetch", "ListOffsets"):
            return self.cluster.leaders.get((resolved.topic, op.partition)) or self.cluster.leader(resolved.topic, op.partition)
        if op.kind in ("TxnOffsetCommit", "OffsetFetch"):
            return self.cluster.coordinator(resolved.group, "group")
        if op.txn is not None and op.kind != "ListTransactions":
            return self.cluster.coordinator(resolved.transactional_id, "transaction")
        return "bootstrap"

    def send(self, op: Op, names: Names, resolved) -> tuple[dict | None, str, int]:
        """The answer to ``op`` once it is no longer a retriable error (or the retries ran out); the client's
        problem when there was no answer; the number of attempts."""
        api, version, body = request(op, resolved)
        deadline, attempts, pause = time.monotonic() + RETRY_FOR_S, 0, 0.02
        fault = op.fault if self.inject is not None else ""
        if fault:  # the next request of this API through the proxy, which is this one
            self.inject(f"proxy.{fault}", api=api, times=1, **({"ms": FAULT_DELAY_MS} if fault == "delay" else {}))
        unanswered = 0
        while True:
            attempts += 1
            connection = None
            try:
                connection = self.cluster.connection(self.destination(op, names, resolved))
                response = _answered(connection.request(api, version, body, step=op.kind,
                                                        timeout=NO_ANSWER_S if fault.startswith("drop") else None))
            except (ClientError, ClusterError) as error:
                if fault.startswith("drop") and unanswered < RESENDS:
                    unanswered += 1  # no answer: the same request again, on a new connection
                    if connection is not None:
                        connection.close()
                    continue
                return None, f"{type(error).__name__}: {error}", attempts
            finally:
                if fault:
                    self.inject("proxy.clear")  # a fault this request did not meet meets no later one
                    fault = ""
            try:
                got = answer(op, resolved, response)
            except (KeyError, IndexError, TypeError) as error:  # no entry for what was asked: nothing to judge
                return None, f"the answer lacks what the request asked for ({type(error).__name__}: {error})", attempts
            if got.get("error") not in RETRIABLE or time.monotonic() > deadline:
                return got, "", attempts
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


    def send_burst(self, sends: list, pipelined: bool) -> list[tuple[dict | None, str, int, float]]:
        """Send every request of ``sends`` ((op, names, resolved) each) before reading any answer: pipelined on
        the destination's connection, or each on a fresh connection of its own (the broker then serves them
        concurrently). A retriable answer is sent again alone, as :meth:`send` does. Per request: the answer, the
        client's problem, the attempts, and when the answer arrived."""
        pending: list[tuple[Connection | None, Exchange | str]] = []
        fresh: list[Connection] = []
        armed = False
        for op, names, resolved in sends:
            api, version, body = request(op, resolved)
            if op.fault and self.inject is not None:
                self.inject(f"proxy.{op.fault}", api=api, times=1,
                            **({"ms": FAULT_DELAY_MS} if op.fault == "delay" else {}))
                armed = True
            try:
                connection = self.cluster.connection(self.destination(op, names, resolved), fresh=not pipelined)
                if not pipelined:
                    fresh.append(connection)
                pending.append((connection, connection.send(api, version, body, step=op.kind)))
            except (ClientError, ClusterError) as error:
                pending.append((None, f"{type(error).__name__}: {error}"))
        results: list[tuple[dict | None, str, int, float]] = []
        try:
            for (op, _, resolved), (used, sent) in zip(sends, pending):
                results.append((*self._received(op, resolved, used, sent), 1, time.monotonic()))
        finally:
            for opened in fresh:
                opened.close()
            if armed:
                self.inject("proxy.clear")
        for index, ((op, names, resolved), (got, _, attempts, _)) in enumerate(zip(sends, results)):
            if got is not None and got.get("error") in RETRIABLE:
                again, problem, more = self.send(op, names, resolved)
                results[index] = (again, problem, attempts + more, time.monotonic())
        return results

    @staticmethod
    def _received(op: Op, resolved, connection: Connection | None, sent: Exchange | str) -> tuple[dict | None, str]:
        """The answer to a request of a burst, or the client's problem."""
        if connection is None or isinstance(sent, str):
            return None, str(sent)
        try:
            return answer(op, resolved, _answered(connection.receive(sent))), ""
        except (ClientError, ClusterError) as error:
            return None, f"{type(error).__name__}: {error}"
        except (KeyError, IndexError, TypeError) as error:
            return None, f"the answer lacks what the request asked for ({type(error).__name__})"


def _answered(exchange) -> dict:
    """The decoded answer of an exchange the client completed (it raises when there is none)."""
    if exchange.response is None:
        raise ClusterError(f"{exchange.api} v{exchange.version}: no answer")
    return exchange.response


def _works(name: str) -> bool:
    try:
        compress(Compression[name.upper()], b"x" * 16)
        return True
    except Exception:  # noqa: BLE001 - a codec whose library is missing is simply not drawn
        return False


def machine_for(target: ExploredTarget, collector: Collector, *, deadline: float | None = None):
    """A state machine class over ``target``'s versions, reporting to ``collector``."""
    versions = target.versions

    def version(api: str):
        """The versions of ``api`` to draw from."""
        low, high = versions[api]
        return st.integers(low, high)

    txn = st.integers(0, TRANSACTIONAL_IDS - 1)
    producer = st.integers(0, PRODUCERS - 1)
    topic = st.integers(0, TOPICS - 1)
    partition = st.integers(0, PARTITIONS - 1)
    group = st.integers(0, GROUPS - 1)
    where = st.tuples(topic, partition)
    # the first value is what hypothesis shrinks to: a history shrinks towards right requests
    mostly_not = st.sampled_from([False, False, False, True])
    sequences = st.sampled_from(["next", "next", "next", "gap", "repeat"])
    compressions = st.sampled_from(target.compressions)
    counts = st.integers(1, 3)
    reads = [api for api in ("Fetch", "ListOffsets", "OffsetFetch", "DescribeTransactions", "ListTransactions")
             if api in versions]

    class Exploration(RuleBasedStateMachine):
        """One history: the rules are the operations hypothesis draws, in any order."""
        def __init__(self):
            super().__init__()
            self.names = None  # created with the first request: an example the budget cut short creates nothing
            self.model = Model(TOPICS, PARTITIONS)
            self.history: list[HistoryStep] = []
            self.stopped = False
            self.next_fault = ""  # the proxy's fault the next request meets
            collector.examples += 1
            if collector.on_example is not None:
                collector.on_example()

        def teardown(self):
            """The history is over: what it reached counts for the exploration."""
            collector.reached.update(self.model.reached)

        @initialize(tv2=st.booleans() if target.tv2 else st.just(False))
        def transaction_version(self, tv2):
            """Each history speaks one transaction version: 1, or 2 where the target finalizes it."""
            self.model.tv2 = tv2

        def prepare(self, op: Op) -> Op | None:
            """``op`` as this history sends it (its transaction version's API version), or None when it makes no
            sense now or the budget is spent."""
            if self.stopped or (deadline is not None and time.monotonic() > deadline):
                return None  # the budget is spent, or the history can no longer be judged: the rest sends nothing
            if self.model.tv2 and op.txn is not None:
                if op.kind in ("AddPartitionsToTxn", "AddOffsetsToTxn"):
                    return None  # a client of transaction version 2 lets Produce and TxnOffsetCommit add them
                if op.kind in TV2_VERSIONS:
                    op = Op(**{**op.__dict__, "version": TV2_VERSIONS[op.kind]})
            if not self.model.can(op):
                return None
            if op.kind == "InitProducerId" and sum(step.op.kind == op.kind for step in self.history) >= MAX_INITS:
                return None  # hypothesis's swarm testing can leave only the init rules enabled: a few are enough
            if self.names is None:
                self.names = target.new_names()
            fault, self.next_fault = self.next_fault, ""
            meets = FAULTS.get(fault, ())
            if fault and (meets is None or op.kind in meets):
                op = Op(**{**op.__dict__, "fault": fault})
            return op

        def new_step(self, op: Op) -> HistoryStep:
            """The step of ``op``, resolved against the model as it is now."""
            resolved = self.model.resolve(op, self.names)
            resolved.names.update({("txn", index): self.names.txn(index) for index in range(TRANSACTIONAL_IDS)})
            return HistoryStep(op, resolved, outcome=self.model.expect(op, resolved).outcome)

        def run(self, op: Op) -> None:
            """Send ``op`` (when it makes sense now), judge the answer, fail the example on a departure."""
            prepared = self.prepare(op)
            if prepared is None:
                return
            op = prepared
            if op.kind == "Wait":  # no request: time passes, as the model knows
                self.history.append(HistoryStep(op, Resolved(), answer={"error": 0}, outcome="either"))
                collector.shapes["waits past a transaction timeout"] += 1
                time.sleep(WAIT_MS / 1000)
                return
            step = self.new_step(op)
            self.history.append(step)
            if op.fault:
                collector.shapes[f"proxy.{op.fault}"] += 1
            sent_at = time.monotonic()
            got, problem, step.attempts = target.send(op, self.names, step.resolved)
            answered_at = time.monotonic()
            if not self.answered(step, got, problem):
                return
            judging = time.perf_counter()
            try:
                step.departures = self.model.step(op, step.resolved, got, sent_at=sent_at, answered_at=answered_at)
            except Inconclusive as why:
                self.give_up(step, str(why))
                return
            finally:
                collector.judged += 1
                collector.judging_s += time.perf_counter() - judging
            self.report(step)

        def answered(self, step: HistoryStep, got, problem: str) -> bool:
            """Count ``step``'s answer; False (and the history stops) when there was none."""
            collector.requests += step.attempts
            if got is None:
                self.give_up(step, problem)
                return False
            step.answer = got
            collector.answers[(step.op.kind, error_name(got.get("error", 0)))] += 1
            return True

        def give_up(self, step: HistoryStep, why: str) -> None:
            """The history can no longer be judged: it sends nothing more."""
            step.error = why
            collector.inconclusive += 1
            self.stopped = True

        def report(self, step: HistoryStep) -> None:
            """Fail the example when ``step`` departed (so that hypothesis shrinks it)."""
            if step.departures:
                collector.departed(self.history, step.departures[0])
                if step.departures[0].rule.id in collector.settled:
                    self.stopped = True  # found and shrunk in an earlier round: this history adds nothing
                    return
                raise DepartureFound(f"{step.departures[0].rule.id}: {step.departures[0].message}")

        def run_burst(self, ops: list[Op], pipelined: bool) -> None:
            """Send ``ops`` at once (pipelined on one connection, or each on a connection of its own), then judge
            their answers in every order the target may have served them: a departure only if every order
            departs (:meth:`Model.step_concurrently`)."""
            ops = [prepared for prepared in map(self.prepare, ops) if prepared is not None]
            # in a burst only the proxy's faults that leave every request an answer: each is answered once
            ops = [op if op.fault in ("", "delay", "reorder") else Op(**{**op.__dict__, "fault": ""}) for op in ops]
            if len(ops) < 2:
                for op in ops:
                    self.run(op)
                return
            steps = [self.new_step(op) for op in ops]
            destinations = [target.destination(step.op, self.names, step.resolved) for step in steps]
            for index, step in enumerate(steps):  # a response goes behind the next one on its connection only
                if step.op.fault == "reorder" and not (pipelined and destinations[index] in destinations[index + 1:]):
                    step.op = Op(**{**step.op.__dict__, "fault": ""})
            collector.shapes[f"bursts ({'pipelined' if pipelined else 'on connections of their own'})"] += 1
            for op in ops:
                if op.fault:
                    collector.shapes[f"proxy.{op.fault}"] += 1
            for step in steps:
                step.burst = len(steps)
            sent_at = time.monotonic()
            answers = target.send_burst([(step.op, self.names, step.resolved) for step in steps], pipelined)
            self.history.extend(steps)
            judged = []
            for step, (got, problem, step.attempts, answered_at) in zip(steps, answers):
                if not self.answered(step, got, problem):
                    return
                judged.append((step.op, step.resolved, got, sent_at, answered_at))
            judging = time.perf_counter()
            try:
                order, departures = self.model.step_concurrently(judged)
            except Inconclusive as why:
                self.give_up(steps[-1], str(why))
                return
            finally:
                collector.judged += len(judged)
                collector.judging_s += time.perf_counter() - judging
            if departures:  # every order departs: the history as sent, up to the member that departed first
                departing = steps[order[-1]]
                departing.departures = departures
                del self.history[len(self.history) - len(steps):]
                self.history.extend(steps[index] for index in order)
                self.report(departing)

        @rule(where=where, actors=st.lists(st.sampled_from(BURST_ACTORS), min_size=2, max_size=3, unique=True),
              pipelined=st.booleans(), data=st.data())
        def burst(self, where, actors, pipelined, data):
            """Two or three requests in flight at once to the partition's leader and the coordinators, one per
            actor (a transactional id, an idempotent producer, a reader): every order they may be served in is
            allowed."""
            ops = []
            for actor in actors:
                if actor.startswith("txn"):
                    index = int(actor[3:])
                    kind = data.draw(st.sampled_from(["Produce", "EndTxn", "InitProducerId"]), label=actor)
                    if kind == "Produce":
                        ops.append(Op("Produce", data.draw(version("Produce")), txn=index, topic=where[0],
                                      partition=where[1]))
                    elif kind == "EndTxn":
                        ops.append(Op("EndTxn", data.draw(version("EndTxn")), txn=index,
                                      commit=data.draw(st.booleans(), label="commit")))
                    else:
                        ops.append(Op("InitProducerId", data.draw(version("InitProducerId")), txn=index))
                elif actor.startswith("producer"):
                    ops.append(Op("Produce", data.draw(version("Produce")), producer=int(actor[8:]), topic=where[0],
                                  partition=where[1]))
                else:
                    read = data.draw(st.sampled_from(["Fetch", "ListOffsets"]), label="read")
                    ops.append(Op(read, data.draw(version(read)), topic=where[0], partition=where[1],
                                  isolation=data.draw(st.sampled_from([READ_COMMITTED, READ_UNCOMMITTED]))))
            self.run_burst(ops, pipelined)

        if target.inject is not None:
            @rule(fault=st.sampled_from(sorted(FAULTS)))
            def proxy_fault(self, fault):
                """On proxy+SPEC: the proxy's fault on the next request that may meet it."""
                self.next_fault = fault

        @rule(txn=txn, short_timeout=mostly_not, version=version("InitProducerId"))
        def init_transactional(self, txn, short_timeout, version):
            """InitProducerId for a transactional id, now and then with a short transaction timeout."""
            self.run(Op("InitProducerId", version, txn=txn, short_timeout=short_timeout))

        @rule()
        def wait_past_timeout(self):
            """Let a transaction of a short timeout outlive it (only when one is open: otherwise nothing to wait
            for). The coordinator may abort it; the model allows that from here on."""
            if any(producer.timeout_ms <= SHORT_TRANSACTION_TIMEOUT_MS and producer.transaction is not None
                   and producer.transaction.outcome is None for producer in self.model.transactional.values()):
                self.run(Op("Wait", 0))

        @rule(producer=producer, version=version("InitProducerId"))
        def init_idempotent(self, producer, version):
            """InitProducerId for an idempotent producer."""
            self.run(Op("InitProducerId", version, producer=producer))

        @rule(txn=txn, partitions=st.lists(where, min_size=1, max_size=2, unique=True), stale=mostly_not,
              version=version("AddPartitionsToTxn"))
        def add_partitions(self, txn, partitions, stale, version):
            """AddPartitionsToTxn (transaction version 1)."""
            self.run(Op("AddPartitionsToTxn", version, txn=txn, partitions=tuple(sorted(partitions)), stale=stale))

        @rule(txn=txn, pick=st.integers(0, 3), sequence=sequences, compression=compressions, count=counts,
              version=version("Produce"))
        def produce_in_transaction(self, txn, pick, sequence, compression, count, version):
            """A write to a partition the transaction has (most writes of a real producer)."""
            transaction = self.model.transactional.get(txn) and self.model.transactional[txn].transaction
            added = sorted(transaction.partitions) if transaction is not None else []
            topic_, partition_ = added[pick % len(added)] if added else (0, 0)
            self.produce(Op("Produce", version, txn=txn, topic=topic_, partition=partition_, sequence=sequence,
                            compression=compression, count=count))

        @rule(txn=txn, where=where, stale=mostly_not, sequence=sequences, compression=compressions, count=counts,
              version=version("Produce"))
        def produce_transactional(self, txn, where, stale, sequence, compression, count, version):
            """A write to any partition: one not added, or of an older generation."""
            self.produce(Op("Produce", version, txn=txn, topic=where[0], partition=where[1], stale=stale,
                            sequence=sequence, compression=compression, count=count))

        @rule(producer=producer, where=where, sequence=sequences, compression=compressions, count=counts,
              version=version("Produce"))
        def produce_idempotent(self, producer, where, sequence, compression, count, version):
            """An idempotent write, in sequence or not."""
            self.produce(Op("Produce", version, producer=producer, topic=where[0], partition=where[1],
                            sequence=sequence, compression=compression, count=count))

        def produce(self, op: Op) -> None:
            """Send a Produce whose compression its version can carry."""
            if op.compression == "zstd" and op.version < 7:  # zstd needs Produce v7 (KIP-110)
                op = Op(**{**op.__dict__, "compression": "none"})
            self.run(op)

        @rule(txn=txn, commit=st.booleans(), stale=mostly_not, version=version("EndTxn"))
        def end_transaction(self, txn, commit, stale, version):
            """EndTxn, commit or abort."""
            self.run(Op("EndTxn", version, txn=txn, commit=commit, stale=stale))

        if "AddOffsetsToTxn" in versions and "TxnOffsetCommit" in versions:
            @rule(txn=txn, group=group, stale=mostly_not, version=version("AddOffsetsToTxn"))
            def add_offsets(self, txn, group, stale, version):
                """AddOffsetsToTxn (transaction version 1)."""
                self.run(Op("AddOffsetsToTxn", version, txn=txn, group=group, stale=stale))

            @rule(txn=txn, group=group, where=where, offset=st.integers(0, 20), stale=mostly_not,
                  version=version("TxnOffsetCommit"))
            def txn_offset_commit(self, txn, group, where, offset, stale, version):
                """TxnOffsetCommit of one partition's offset."""
                self.run(Op("TxnOffsetCommit", version, txn=txn, group=group, topic=where[0], partition=where[1],
                            offset=offset, stale=stale))

        @rule(read=st.sampled_from(reads), where=where, isolation=st.sampled_from([READ_COMMITTED, READ_UNCOMMITTED]),
              txn=txn, group=group, require_stable=st.booleans(), data=st.data())
        def observe(self, read, where, isolation, txn, group, require_stable, data):
            """One read: Fetch, ListOffsets, OffsetFetch, DescribeTransactions or ListTransactions."""
            low, high = versions[read]
            version = data.draw(st.integers(low, high), label="version")
            if read == "ListTransactions" and len(target.cluster.brokers) > 1:
                return  # one broker lists only the transactions it coordinates: the model would miss the others
            self.run(Op(read, version, topic=where[0], partition=where[1], isolation=isolation,
                        txn=txn if read == "DescribeTransactions" else None,
                        group=group if read == "OffsetFetch" else None,
                        require_stable=require_stable and read == "OffsetFetch" and version >= 7))

    return Exploration
