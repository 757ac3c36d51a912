"""What ``fault:`` steps do to the nodes of a cluster, for a cluster the harness provisions
(:mod:`conformance.targets.kafka.cluster_target`) and for one a vendor attaches with node-control commands
(:mod:`conformance.targets.node_control`), and the admin requests they use. Nothing here knows how a node runs:
the nodes are found by role through the cluster's own answers and driven through :class:`Node`.

Faults (``fault:`` steps) act on one node, named by id or by role:
``stop_node``/``kill_node``/``pause_node``/``resume_node``/``start_node``/``restart_node`` take
``node: N``, or ``coordinator: TRANSACTIONAL_ID`` (the node coordinating it), or
``group_coordinator: GROUP``, or ``leader: {topic, partition}``, or ``follower: {topic, partition}``
(a replica that does not lead it), or ``other_than: [NAME, ...]`` (a running node none of those names is). ``start_stopped_nodes`` brings back every node a fault took down,
and the runner calls :meth:`heal` after each case with faults, so the next case finds the whole cluster.

``fail_log_dir`` fails the data directory holding ``topic: T, partition: P`` on its leader as a dead disk
(a provisioned Kafka node's: :mod:`conformance.targets.kafka.disks`), and waits until the controller knows (the node no longer leads
it); :meth:`heal` repairs the disk and restarts the node.

``block_coordinator_log`` makes the coordinator of ``coordinator: TRANSACTIONAL_ID`` (or ``group_coordinator:
GROUP``) unable to write its log while it stays the coordinator: its internal-topic partition is set to need
every replica in sync (``min.insync.replicas`` on the topic, by IncrementalAlterConfigs) and one follower stops
cleanly, so each write the coordinator makes is refused with NOT_ENOUGH_REPLICAS. :meth:`heal` starts the
follower and removes the setting.

``move_leader`` moves the leadership of one partition to another live in-sync replica without stopping
anything, as Kafka's own tools do: AlterPartitionReassignments puts the chosen node first in the replica
list (the same replicas, a new order), ListPartitionReassignments until that is done, then ElectLeaders
with election type PREFERRED, until Metadata on every live broker names the new leader. It takes
``topic: T, partition: P``, or ``coordinator: TRANSACTIONAL_ID`` (the ``__transaction_state`` partition
that coordinates the id: its coordinator moves) or ``group_coordinator: GROUP`` (the ``__consumer_offsets``
partition), and ``to: N`` (default: the first in-sync follower; a node that leads already is left as it is), or
``away_from:`` a node named as node faults name it (moved only if that node leads it)::

    fault: {name: move_leader, args: {topic: "${topics.out}", partition: 0, to: 2}}
    fault: {name: move_leader, args: {coordinator: "${txn_ids.main}"}}
    fault: {name: move_leader, args: {topic: "${topics.out}", partition: 0, away_from: {coordinator: "${txn_ids.main}"}}}

By default it also waits until the move took effect on both ends (``settle: false`` skips this, to test
the window): the old leader refuses ListOffsets and the new one answers it, or for a coordinator, the old
broker answers DescribeTransactions with NOT_COORDINATOR and the new one has loaded the partition. A move
that cannot be made (the node is not a live in-sync replica, no follower is, the partition does not exist)
raises ValueError naming why; one that does not finish in ``timeout_s`` (30) raises TimeoutError.
"""

from __future__ import annotations

import time
from typing import Protocol, Sequence

from ..client.cluster import Cluster
from ..client.security import Security
from ..protocol.errors import error_name
from .base import CapabilityMissing

NODE_FAULTS = ("stop_node", "kill_node", "pause_node", "resume_node", "start_node", "restart_node",
               "start_stopped_nodes")
LEADERSHIP_FAULTS = ("move_leader",)
FAULTS = NODE_FAULTS + LEADERSHIP_FAULTS + ("fail_log_dir", "block_coordinator_log")
TRANSACTION_TOPIC, GROUP_TOPIC = "__transaction_state", "__consumer_offsets"
PREFERRED = 0  # ElectLeaders election type
NONE, ELECTION_NOT_NEEDED, COORDINATOR_LOAD_IN_PROGRESS = 0, 84, 14
ELECTION_RETRIABLE = {80, 83}  # PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE
NOT_SERVING = {6, 14, 15, 16}  # NOT_LEADER_OR_FOLLOWER, COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


class Disks(Protocol):
    """A node's data directories, where the harness can reach them (a provisioned Kafka node's)."""

    def fail(self, topic: str, partition: int) -> None: ...  # the directory holding it dies as a disk does
    def failed(self) -> bool: ...
    def repair(self) -> None: ...  # the node is stopped: a broker takes a directory back only when it starts


class Node(Protocol):
    """A node of a cluster as the faults drive it: a provisioned Kafka node
    (:class:`~conformance.targets.kafka.broker.KafkaTarget`) or an attached one run by the user's commands
    (:class:`~conformance.targets.node_control.AttachedNode`)."""

    @property
    def node_id(self) -> int: ...
    @property
    def running(self) -> bool: ...
    @property
    def disks(self) -> Disks | None: ...  # None where the harness cannot reach them (then no disk faults)

    def terminate(self) -> None: ...  # a clean shutdown
    def kill(self) -> None: ...  # as a crash
    def pause(self, paused: bool) -> None: ...
    def launch(self) -> None: ...  # start it again, without waiting
    def wait_until_ready(self, began: float) -> None: ...
    def wait_until_restarted(self, began: float) -> None: ...  # ready, after what a crash left is repaired
    def restart(self) -> None: ...


class NodeFaults:
    """The faults of a cluster whose nodes the harness can stop and start one by one, and the leadership moves:
    those of the module docstring. Found by role through the cluster's own answers (FindCoordinator, Metadata),
    so they work the same on the nodes the harness provisioned (:class:`KafkaClusterTarget`) and on those of an
    attached cluster it controls through the user's commands (:mod:`conformance.targets.node_control`).

    The class using it has ``spec``, ``bootstrap``, ``security``, ``_blocked_topics`` (a set) and ``nodes``
    (each a :class:`Node`), and says which faults it offers (``offers_fault``)."""

    spec: str
    nodes: Sequence[Node]
    _blocked_topics: set[str]
    security: Security

    @property
    def bootstrap(self) -> str:
        raise NotImplementedError

    def offers_fault(self, name: str) -> bool:
        raise NotImplementedError

    def _admin(self, timeout: float) -> Cluster:
        """A client of the cluster for the faults' own requests, over its running nodes."""
        return Cluster(self.bootstrap, timeout=timeout, security=self.security)

    def _make_leader(self, cluster: Cluster, topic: str, partition: int, to: int, replicas: list[int],
                     deadline: float) -> None:
        """Make live in-sync replica ``to`` the leader of the partition, as Kafka's own tools do."""
        _reorder_replicas(cluster, topic, partition, [to] + [node for node in replicas if node != to], deadline)
        _elect_preferred(cluster, topic, partition, deadline)

    def coordinating_partition(self, key: str, kind: str = "transaction") -> tuple[str, int]:
        """The internal topic and partition that coordinate transactional id (or group, ``kind="group"``) ``key`` now."""
        cluster = self._admin(10.0)
        try:
            cluster.api_versions()
            return (TRANSACTION_TOPIC if kind == "transaction" else GROUP_TOPIC), _coordinating_partition(cluster, key, kind)
        finally:
            cluster.close()

    # faults --------------------------------------------------------------------------------
    def fault(self, name: str, **arguments) -> None:
        if not self.offers_fault(name):
            offered = ", ".join(fault for fault in FAULTS if self.offers_fault(fault))
            raise CapabilityMissing(f"target {self.spec!r} has no fault {name!r} (it has {offered})")
        if name == "move_leader":
            self.move_leader(**arguments)
            return
        if name == "start_stopped_nodes":
            self.heal()
            return
        if name == "fail_log_dir":
            self.fail_log_dir(**arguments)
            return
        if name == "block_coordinator_log":
            self.block_coordinator_log(**arguments)
            return
        settle = arguments.pop("settle", True)
        node = self.node(**arguments)
        if name in ("stop_node", "kill_node"):
            if name == "stop_node":
                node.terminate()  # a clean shutdown: SIGTERM
            else:
                node.kill()
            if settle:
                self._wait_until_fenced(node.node_id)
        elif name in ("pause_node", "resume_node"):
            node.pause(name == "pause_node")
        elif name == "start_node":
            began = time.monotonic()
            node.launch()
            node.wait_until_ready(began)
        else:
            node.restart()

    def _wait_until_fenced(self, node_id: int, timeout: float = 30.0) -> None:
        """Until the controller has fenced the node (it leaves Metadata), so its partitions and the
        coordinators it held have moved; ``settle: false`` on the fault skips this to test the window."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cluster = self._admin(5.0)
            try:
                cluster.api_versions()
                cluster.metadata([])
                if node_id not in cluster.brokers:
                    return
            except Exception:  # noqa: BLE001 - a node on its way down may refuse or drop us: ask again
                pass
            finally:
                cluster.close()
            time.sleep(0.25)
        raise TimeoutError(f"node {node_id} of {self.spec} was still in Metadata {timeout:.0f} s after it stopped")

    def _wait_until_registered(self, node_ids: list[int], timeout: float = 60.0) -> None:
        """Until Metadata lists every node: a node answers before the controller has unfenced it, and a case
        whose topics need every replica would be skipped for a broker that is still joining (seen under load)."""
        deadline = time.monotonic() + timeout
        while True:
            cluster = self._admin(5.0)
            try:
                cluster.api_versions()
                cluster.metadata([])
                if set(node_ids) <= set(cluster.brokers):
                    return
            except Exception:  # noqa: BLE001 - a node still starting may refuse or drop us: ask again
                pass
            finally:
                cluster.close()
            if time.monotonic() > deadline:
                raise TimeoutError(f"nodes {sorted(node_ids)} of {self.spec} were not all in Metadata "
                                   f"{timeout:.0f} s after they answered")
            time.sleep(0.25)

    def heal(self) -> None:
        """Resumes paused nodes, repairs failed disks (restarting their nodes) and starts stopped ones, then
        waits until every one is ready."""
        began = time.monotonic()
        for node in self.nodes:
            if node.disks is not None and node.disks.failed():
                node.terminate()
                node.disks.repair()
        down = [node for node in self.nodes if not node.running]
        for node in self.nodes:
            if node.running:
                node.pause(False)
        for node in down:
            node.launch()
        for node in down:
            node.wait_until_restarted(began)
        if down:
            self._wait_until_registered([node.node_id for node in down])
        if self._blocked_topics:
            cluster = self._admin(10.0)
            try:
                cluster.api_versions()
                for topic in sorted(self._blocked_topics):
                    _set_topic_config(cluster, topic, "min.insync.replicas", None)
            finally:
                cluster.close()
            self._blocked_topics.clear()

    def node(self, *, node: int | None = None, coordinator: str | None = None, group_coordinator: str | None = None,
             leader: dict | None = None, follower: dict | None = None,
             other_than: list[dict] | None = None) -> Node:
        """The node a fault names: by id, or as the coordinator, leader or a follower of something right now, or
        (``other_than``: a list of such names) the first running node that is none of them."""
        return self._node_by_id(self.candidates(node=node, coordinator=coordinator, group_coordinator=group_coordinator,
                                                leader=leader, follower=follower, other_than=other_than)[0])

    def candidates(self, *, node: int | None = None, coordinator: str | None = None, group_coordinator: str | None = None,
                   leader: dict | None = None, follower: dict | None = None,
                   other_than: list[dict] | None = None) -> list[int]:
        """Every node a fault's name could mean right now, the one :meth:`node` takes first: ``follower:`` is any
        replica that does not lead, ``other_than:`` any running node none of those names is; the other names
        mean one node. Items sharing a fault (:mod:`conformance.runner.shared_fault`) take one that most can."""
        if other_than is not None:
            taken = {self.node(**named).node_id for named in other_than}
            free = [candidate.node_id for candidate in self.nodes if candidate.node_id not in taken and candidate.running]
            if not free:
                raise ValueError(f"no running node of {self.spec} is other than nodes {sorted(taken)}")
            return free
        if node is not None:
            return [self._node_by_id(int(node)).node_id]
        return self._look_up(coordinator, group_coordinator, leader, follower)

    def _node_by_id(self, node: int) -> Node:
        for candidate in self.nodes:
            if candidate.node_id == node:
                return candidate
        raise ValueError(f"no node {node} in {self.spec} (nodes 1-{len(self.nodes)})")

    def _look_up(self, coordinator, group_coordinator, leader, follower) -> list[int]:
        cluster = self._admin(10.0)
        try:
            cluster.api_versions()
            if coordinator is not None:
                return [cluster.coordinator(str(coordinator), "transaction")]
            if group_coordinator is not None:
                return [cluster.coordinator(str(group_coordinator), "group")]
            if leader is not None:
                return [cluster.leader(leader["topic"], int(leader.get("partition", 0)))]
            if follower is not None:
                topic, partition = follower["topic"], int(follower.get("partition", 0))
                lead = cluster.leader(topic, partition)
                metadata = cluster.metadata([topic])
                replicas = next(entry["replica_nodes"] for entry in metadata["topics"][0]["partitions"]
                                if entry["partition_index"] == partition)
                followers = [replica for replica in replicas if replica != lead]
                if not followers:
                    raise ValueError(f"{topic}-{partition} has no follower (replicas {replicas}, leader {lead})")
                return followers
        finally:
            cluster.close()
        raise ValueError("a node fault names node:, coordinator:, group_coordinator:, leader: or follower:")

    def fail_log_dir(self, *, topic: str, partition: int = 0, timeout_s: float = 30.0) -> int:
        """Fails the data directory holding a partition on its leader (see the module docstring); returns
        the node."""
        cluster = self._admin(10.0)
        try:
            cluster.api_versions()
            topic, partition = str(topic), int(partition)
            leader = _partition_state(cluster, topic, partition)[0]
            node = self.node(node=leader)
            if node.disks is None:
                raise CapabilityMissing(f"target {self.spec!r}: the disks of node {leader} are out of the harness's reach")
            node.disks.fail(topic, partition)
            _wait_until(lambda: _partition_state(cluster, topic, partition)[0] != leader, "fail_log_dir",
                        f"the controller did not move {topic}-{partition} off node {leader}", timeout_s)
            return leader
        finally:
            cluster.close()

    def blocking_followers(self, *, coordinator: str | None = None,
                           group_coordinator: str | None = None) -> tuple[str, list[int]]:
        """The internal topic and the followers ``block_coordinator_log`` may stop for this coordinator now (every
        in-sync follower of its partition; alone, it stops the first)."""
        kind, key, topic = _blocked(coordinator, group_coordinator)
        cluster = self._admin(10.0)
        try:
            cluster.api_versions()
            partition = _coordinating_partition(cluster, str(key), kind)
            return topic, _in_sync_followers(*_partition_state(cluster, topic, partition), f"{topic}-{partition}")
        finally:
            cluster.close()

    def block_coordinator_log(self, *, coordinator: str | None = None, group_coordinator: str | None = None,
                              follower: int | None = None, timeout_s: float = 30.0) -> int:
        """The coordinator can no longer write its log (see the module docstring); returns the stopped follower.
        ``follower``: the follower to stop, one :meth:`blocking_followers` named (several coordinators whose
        partitions it follows are blocked by one stop: it may be down already)."""
        kind, key, topic = _blocked(coordinator, group_coordinator)
        cluster = self._admin(10.0)
        try:
            cluster.api_versions()
            partition = _coordinating_partition(cluster, str(key), kind)
            leader, replicas, isr = _partition_state(cluster, topic, partition)
            if follower is None:
                follower = _in_sync_followers(leader, replicas, isr, f"{topic}-{partition}")[0]
            elif follower == leader or follower not in replicas:
                raise ValueError(f"block_coordinator_log: node {follower} does not follow {topic}-{partition} "
                                 f"(leader {leader}, replicas {replicas})")
            followers = [follower]
            self._blocked_topics.add(topic)
            _set_topic_config(cluster, topic, "min.insync.replicas", str(len(replicas)))
            if self.node(node=follower).running:
                self.fault("stop_node", node=follower)
            cluster.close()  # its bootstrap connection may have been to the stopped node
            _wait_until(lambda: followers[0] not in _partition_state(cluster, topic, partition)[2],
                        "block_coordinator_log", f"node {followers[0]} did not leave the in-sync replicas of {topic}-{partition}",
                        timeout_s)
            # The fault is in place once the coordinator serves the key: a request must meet the blocked log, not
            # a partition still loading (a node that a heal just restarted may lead it again and load it).
            _wait_until(lambda: _coordinator_answer(cluster, leader, kind, str(key)) != COORDINATOR_LOAD_IN_PROGRESS,
                        "block_coordinator_log", f"the coordinator (node {leader}) of {kind} {key!r} did not load {topic}-{partition}",
                        timeout_s)
            return followers[0]
        finally:
            cluster.close()

    # leadership ------------------------------------------------------------------------------
    def move_leader(self, *, topic: str | None = None, partition: int | None = None, coordinator: str | None = None,
                    group_coordinator: str | None = None, to: int | None = None, away_from: dict | None = None,
                    settle: bool = True, timeout_s: float = 30.0) -> tuple[int, int]:
        """Moves the leadership of a partition to replica ``to`` (default: the first in-sync follower);
        returns (old leader, new leader). ``away_from`` (a node as node faults name it: ``{coordinator: ID}``)
        instead moves it only if that node leads it, to another in-sync replica. See the module docstring."""
        if away_from is not None:
            if to is not None:
                raise ValueError("move_leader: to: and away_from: do not go together")
            avoided = self.node(**away_from).node_id
            return self._move_away(avoided, topic=topic, partition=partition, coordinator=coordinator,
                                   group_coordinator=group_coordinator, settle=settle, timeout_s=timeout_s)
        named = [key for key, value in (("topic", topic), ("coordinator", coordinator),
                                        ("group_coordinator", group_coordinator)) if value is not None]
        if len(named) != 1:
            raise ValueError(f"move_leader names exactly one of topic: (with partition:), coordinator: or "
                             f"group_coordinator:, not {named or 'none'}")
        if topic is None and partition is not None:
            raise ValueError("move_leader: partition: goes with topic:; coordinator: and group_coordinator: "
                             "find their own partition")
        deadline = time.monotonic() + float(timeout_s)
        cluster = self._admin(10.0)
        try:
            cluster.api_versions()
            probe = None  # a transactional id the moved __transaction_state partition coordinates
            if coordinator is not None:
                probe = str(coordinator)
                topic, partition = TRANSACTION_TOPIC, _coordinating_partition(cluster, probe, "transaction")
            elif group_coordinator is not None:
                topic, partition = GROUP_TOPIC, _coordinating_partition(cluster, str(group_coordinator), "group")
            topic, partition = str(topic), int(partition or 0)
            where = f"{topic}-{partition}"
            wanted = None if to is None else int(to)
            leader, replicas, isr, live = _once_another_can_lead(
                cluster, topic, partition, lambda leader: leader if wanted is None else None, deadline,
                lambda node: wanted is None or node == wanted)
            if to is None:
                candidates = [node for node in replicas if node != leader and node in isr and node in live]
                if not candidates:
                    raise ValueError(f"move_leader: {where} has no live in-sync replica besides its leader "
                                     f"{leader} (replicas {replicas}, in sync {isr})")
                to = candidates[0]
            to = int(to)
            if to not in replicas:
                raise ValueError(f"move_leader: node {to} is not a replica of {where} (replicas {replicas}); "
                                 "the move keeps the replica set")
            if to == leader:
                return leader, to  # already where it was asked to be: nothing to move
            if to not in live or to not in isr:
                raise ValueError(f"move_leader: node {to} cannot lead {where}: it is not "
                                 f"{'live' if to not in live else 'in sync'} (live {sorted(live)}, in sync {isr})")
            if topic == TRANSACTION_TOPIC and probe is None:
                probe = _transactional_id_for(partition, _partition_count(cluster, topic))
            self._make_leader(cluster, topic, partition, to, replicas, deadline)
            _wait_for_leader_everywhere(cluster, topic, partition, to, deadline)
            if settle:
                _wait_until_served(cluster, topic, partition, leader, to, probe, deadline)
            return leader, to
        finally:
            cluster.close()

    def _move_away(self, avoided: int, *, topic, partition, coordinator, group_coordinator, settle,
                   timeout_s) -> tuple[int, int]:
        """move_leader's ``away_from``: the partition keeps a leader other than node ``avoided``."""
        cluster = self._admin(10.0)
        try:
            cluster.api_versions()
            if coordinator is not None:
                where = (TRANSACTION_TOPIC, _coordinating_partition(cluster, str(coordinator), "transaction"))
            elif group_coordinator is not None:
                where = (GROUP_TOPIC, _coordinating_partition(cluster, str(group_coordinator), "group"))
            else:
                where = (str(topic), int(partition or 0))
            leader, replicas, isr, live = _once_another_can_lead(
                cluster, *where, lambda leader: avoided, time.monotonic() + float(timeout_s),
                lambda node: True)
        finally:
            cluster.close()
        if leader != avoided:
            return leader, leader
        others = [node for node in replicas if node != avoided and node in isr and node in live]
        if not others:
            raise ValueError(f"move_leader: {where[0]}-{where[1]} has no live in-sync replica besides node {avoided} "
                             f"(replicas {replicas}, in sync {isr})")
        return self.move_leader(topic=topic, partition=partition, coordinator=coordinator,
                                group_coordinator=group_coordinator, to=others[0], settle=settle, timeout_s=timeout_s)


def _blocked(coordinator: str | None, group_coordinator: str | None) -> tuple[str, str, str]:
    """(kind, key, internal topic) of a ``block_coordinator_log``."""
    if (coordinator is None) == (group_coordinator is None):
        raise ValueError("block_coordinator_log names coordinator: or group_coordinator:")
    if coordinator is not None:
        return "transaction", str(coordinator), TRANSACTION_TOPIC
    return "group", str(group_coordinator), GROUP_TOPIC


def _in_sync_followers(leader: int, replicas: list, isr: list, where: str) -> list[int]:
    followers = [node for node in isr if node != leader]
    if not followers:
        raise ValueError(f"block_coordinator_log: {where} has no in-sync follower to stop "
                         f"(replicas {replicas}, in sync {isr})")
    return followers


def _request(cluster: Cluster, destination, api: str, body: dict) -> dict:
    response = cluster.connection(destination).request(api, cluster.best_version(api), body, step="fault").response
    if response is None:  # only a Produce with acks 0 goes unanswered; a fault's admin requests all are answered
        raise RuntimeError(f"{api} to {destination} was not answered")
    return response


def _wait_until(condition, fault: str, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        _left(deadline, f"{what} within {timeout_s:.0f} s", fault)


def _left(deadline: float, what: str, fault: str = "move_leader") -> None:
    if time.monotonic() > deadline:
        raise TimeoutError(f"{fault}: {what}")
    time.sleep(0.1)


def _once_another_can_lead(cluster: Cluster, topic: str, partition: int, avoided, deadline: float,
                           acceptable) -> tuple[int, list, list, set]:
    """(leader, replicas, in-sync replicas, live nodes) of a partition once one of its live in-sync replicas other
    than ``avoided(leader)`` is ``acceptable``, or as it is at ``deadline``: a node a heal just started again
    catches up before it is back in sync, and a move made at once would find no replica to lead."""
    while True:
        leader, replicas, isr = _partition_state(cluster, topic, partition)
        live = set(cluster.brokers)
        excluded = avoided(leader)
        candidates = [node for node in replicas if node != excluded and acceptable(node)]
        if not candidates or any(node in isr and node in live for node in candidates) or time.monotonic() >= deadline:
            return leader, replicas, isr, live  # (no candidate at all: waiting cannot make one)
        time.sleep(0.2)


def _partition_state(cluster: Cluster, topic: str, partition: int, destination="bootstrap") -> tuple[int, list, list]:
    """(leader, replicas, in-sync replicas) of a partition, as ``destination`` sees it; refreshes the brokers."""
    body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    response = _request(cluster, destination, "Metadata", body)
    if destination == "bootstrap":
        cluster.brokers = {broker["node_id"]: (broker["host"], broker["port"]) for broker in response["brokers"]}
    [entry] = response["topics"]
    if entry["error_code"]:
        raise ValueError(f"move_leader: no topic {topic!r} ({error_name(entry['error_code'])})")
    for state in entry["partitions"]:
        if state["partition_index"] == partition:
            return state["leader_id"], list(state["replica_nodes"]), list(state["isr_nodes"])
    raise ValueError(f"move_leader: {topic!r} has no partition {partition} ({len(entry['partitions'])} partitions)")


def _set_topic_config(cluster: Cluster, topic: str, name: str, value: str | None) -> None:
    """IncrementalAlterConfigs on one topic: SET ``name`` to ``value``, or DELETE it (back to the default) for None."""
    body = {"validate_only": False, "resources": [{
        "resource_type": 2, "resource_name": topic,  # TOPIC
        "configs": [{"name": name, "config_operation": 0 if value is not None else 1, "value": value}]}]}
    [result] = _request(cluster, "bootstrap", "IncrementalAlterConfigs", body)["responses"]
    if result["error_code"]:
        raise ValueError(f"IncrementalAlterConfigs {name}={value} on {topic} refused: "
                         f"{error_name(result['error_code'])} ({result.get('error_message')})")


def _partition_count(cluster: Cluster, topic: str) -> int:
    body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    [entry] = _request(cluster, "bootstrap", "Metadata", body)["topics"]
    if entry["error_code"] or not entry["partitions"]:
        raise ValueError(f"move_leader: no topic {topic!r} ({error_name(entry['error_code'])})")
    return len(entry["partitions"])


def java_hash(text: str) -> int:
    """Java's ``String.hashCode``, over UTF-16 code units."""
    value, data = 0, text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[index:index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partition_for(key: str, partitions: int) -> int:
    """The internal-topic partition Kafka keeps a transactional id or group in: ``Utils.abs(hashCode) % n``."""
    value = java_hash(key)
    return (0 if value == -(1 << 31) else abs(value)) % partitions


def _coordinating_partition(cluster: Cluster, key: str, key_type: str) -> int:
    """The internal-topic partition that coordinates ``key``, checked against FindCoordinator (which also
    creates the internal topic on first use): its leader must be the coordinator the cluster names."""
    topic = TRANSACTION_TOPIC if key_type == "transaction" else GROUP_TOPIC
    coordinator = cluster.coordinator(key, key_type)
    partition = partition_for(key, _partition_count(cluster, topic))
    leader = _partition_state(cluster, topic, partition)[0]
    if leader != coordinator:
        raise ValueError(f"move_leader: FindCoordinator names node {coordinator} for {key_type} {key!r}, but the "
                         f"leader of {topic}-{partition} (its partition by Kafka's hash) is {leader}")
    return partition


def _coordinator_answer(cluster: Cluster, node: int, kind: str, key: str) -> int:
    """The error code of a read the coordinator answers without writing (DescribeTransactions, DescribeGroups)."""
    if kind == "transaction":
        [state] = _request(cluster, node, "DescribeTransactions", {"transactional_ids": [key]})["transaction_states"]
    else:
        [state] = _request(cluster, node, "DescribeGroups", {"groups": [key], "include_authorized_operations": False})["groups"]
    return state["error_code"]


def _transactional_id_for(partition: int, partitions: int) -> str:
    """A transactional id that ``__transaction_state-partition`` coordinates (to probe its loading)."""
    for number in range(100_000):
        candidate = f"kafka-conformance-probe-{number}"
        if partition_for(candidate, partitions) == partition:
            return candidate
    raise ValueError(f"no probe transactional id for {TRANSACTION_TOPIC}-{partition}")


def _reorder_replicas(cluster: Cluster, topic: str, partition: int, replicas: list[int], deadline: float) -> None:
    """AlterPartitionReassignments to ``replicas`` (the same set, the new leader first), until it is done."""
    where = f"{topic}-{partition}"
    body = {"timeout_ms": 10000, "allow_replication_factor_change": False,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "replicas": replicas}]}]}
    response = _request(cluster, "bootstrap", "AlterPartitionReassignments", body)
    errors = [(response["error_code"], response["error_message"])]
    errors += [(entry["error_code"], entry["error_message"])
               for topic_entry in response["responses"] for entry in topic_entry["partitions"]]
    for code, message in errors:
        if code:
            raise ValueError(f"move_leader: AlterPartitionReassignments of {where} to {replicas} refused: "
                             f"{error_name(code)}{f' ({message})' if message else ''}")
    listing = {"timeout_ms": 10000, "topics": [{"name": topic, "partition_indexes": [partition]}]}
    while True:
        ongoing = _request(cluster, "bootstrap", "ListPartitionReassignments", listing)
        if ongoing["error_code"]:
            raise ValueError(f"move_leader: ListPartitionReassignments failed: {error_name(ongoing['error_code'])}")
        pending = any(entry["partition_index"] == partition for topic_entry in ongoing["topics"]
                      for entry in topic_entry["partitions"])
        if not pending and _partition_state(cluster, topic, partition)[1] == replicas:
            return
        _left(deadline, f"the reassignment of {where} to {replicas} did not finish")


def _elect_preferred(cluster: Cluster, topic: str, partition: int, deadline: float) -> None:
    """ElectLeaders PREFERRED for the partition, retried while the preferred replica cannot lead yet."""
    where = f"{topic}-{partition}"
    body = {"election_type": PREFERRED, "topic_partitions": [{"topic": topic, "partitions": [partition]}],
            "timeout_ms": 10000}
    while True:
        response = _request(cluster, "bootstrap", "ElectLeaders", body)
        codes = [(response.get("error_code", NONE), None)]
        codes += [(entry["error_code"], entry["error_message"]) for result in response["replica_election_results"]
                  for entry in result["partition_result"]]
        bad = [(code, message) for code, message in codes if code not in (NONE, ELECTION_NOT_NEEDED)]
        if not bad:
            return
        code, message = bad[0]
        reason = f"{error_name(code)}{f' ({message})' if message else ''}"
        if code not in ELECTION_RETRIABLE:
            raise ValueError(f"move_leader: ElectLeaders PREFERRED for {where} refused: {reason}")
        _left(deadline, f"ElectLeaders PREFERRED for {where} kept answering {reason}")


def _wait_for_leader_everywhere(cluster: Cluster, topic: str, partition: int, leader: int, deadline: float) -> None:
    for node in sorted(cluster.brokers):
        while _partition_state(cluster, topic, partition, node)[0] != leader:
            _left(deadline, f"node {node}'s Metadata did not name {leader} as the leader of {topic}-{partition}")


def _wait_until_served(cluster: Cluster, topic: str, partition: int, old: int, new: int, probe: str | None,
                       deadline: float) -> None:
    """Until the old leader refuses the partition and the new one serves it (a coordinator: has loaded it)."""
    def answer(node: int) -> int:
        if probe is not None:
            response = _request(cluster, node, "DescribeTransactions", {"transactional_ids": [probe]})
            return response["transaction_states"][0]["error_code"]
        body = {"replica_id": -1, "isolation_level": 0, "timeout_ms": 1000, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}]}]}
        return _request(cluster, node, "ListOffsets", body)["topics"][0]["partitions"][0]["error_code"]

    while answer(old) not in NOT_SERVING:
        _left(deadline, f"node {old} still serves {topic}-{partition} after the move")
    while answer(new) in NOT_SERVING:
        _left(deadline, f"node {new} does not serve {topic}-{partition} after the move")


# Kafka 3.7.0 (KAFKA-16814, fixed in 3.7.1) writes a new replica's topic id to disk a moment after it creates the
# replica, and refuses to start again if it was killed in between: "The log dir Log(dir=D, ...) does not have a
# topic ID". 3.7.1 deletes such a replica as stray; the heal does the same for an empty one, so that a node a
# case killed right after a topic was created comes back (the replica is fetched again from the leader).
