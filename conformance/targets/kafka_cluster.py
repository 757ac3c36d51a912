"""Apache Kafka as a cluster of local KRaft nodes on 127.0.0.1: ``kafka,nodes=3`` or ``kafka:3.9.1,nodes=3``.

Every node is a combined broker and controller (a three-voter quorum for three nodes), the internal
topics are replicated to every node and have one partition per node, so transaction and group
coordinators spread over the cluster. ``,min.insync.replicas=N`` sets the brokers' default.

Faults (``fault:`` steps) act on one node, named by id or by role:
``stop_node``/``kill_node``/``pause_node``/``resume_node``/``start_node``/``restart_node`` take
``node: N``, or ``coordinator: TRANSACTIONAL_ID`` (the node coordinating it), or
``group_coordinator: GROUP``, or ``leader: {topic, partition}``, or ``follower: {topic, partition}``
(a replica that does not lead it). ``start_stopped_nodes`` brings back every node a fault took down,
and the runner calls :meth:`heal` after each case with faults, so the next case finds the whole cluster.
"""

from __future__ import annotations

import re
import time

from ..client.cluster import Cluster
from ..client.security import Security
from .base import CapabilityMissing, Target, TargetInfo
from .kafka import KafkaTarget, random_cluster_id, version_in_spec
from .registry import TargetKind

SPEC = re.compile(r"(?P<base>kafka(?::[^,]+)?),(?P<options>.+)")
OPTIONS = {"nodes": int, "min.insync.replicas": int}
NODE_FAULTS = ("stop_node", "kill_node", "pause_node", "resume_node", "start_node", "restart_node",
               "start_stopped_nodes")


def parse(spec: str) -> tuple[str, dict[str, int]]:
    """``kafka:4.4.0,nodes=3`` → (``kafka:4.4.0``, {"nodes": 3}); ValueError names what is wrong."""
    match = SPEC.fullmatch(spec)
    if match is None:
        raise ValueError(f"not a kafka cluster spec: {spec!r} (expected kafka[:VERSION],nodes=N)")
    version_in_spec(match["base"])
    options: dict[str, int] = {}
    for part in match["options"].split(","):
        name, _, value = part.partition("=")
        if name not in OPTIONS or not value.isdigit():
            raise ValueError(f"{spec!r}: unknown or malformed option {part!r} (options: nodes=N, min.insync.replicas=N)")
        options[name] = OPTIONS[name](value)
    if options.get("nodes", 1) < 1:
        raise ValueError(f"{spec!r}: nodes must be at least 1")
    return match["base"], options


class KafkaClusterTarget(Target):
    kind = "kafka-cluster"
    capabilities = frozenset({"restart", "logs", "principals", "nodes"})

    def __init__(self, spec: str, **node_options):
        super().__init__(spec)
        base, options = parse(spec)
        count = options.get("nodes", 3)
        # A killed node is fenced (and its partitions move) after 3 s instead of Kafka's 9.
        overrides = {"broker.session.timeout.ms": 3000, **dict(node_options.pop("overrides", None) or {})}
        if "min.insync.replicas" in options:
            overrides["min.insync.replicas"] = options["min.insync.replicas"]
        self.nodes = [KafkaTarget(base, overrides=overrides, **node_options) for _ in range(count)]
        self.startup_seconds: float | None = None
        cluster_id = random_cluster_id()
        for number, node in enumerate(self.nodes, 1):
            node.node_id, node.cluster_id, node.replicas = number, cluster_id, count

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        began = time.monotonic()
        for node in self.nodes:
            node.reserve_ports()
        voters = ",".join(node.controller_address for node in self.nodes)
        try:
            for node in self.nodes:
                node.voters = voters
                node.provision()
            for node in self.nodes:  # a quorum forms only once every voter runs
                node.launch()
            for node in self.nodes:
                node.wait_until_ready(began)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def restart(self) -> None:
        for node in self.nodes:
            node.restart()

    @property
    def bootstrap(self) -> str:
        """Every node, running ones first: clients fall back along the list when a node is down."""
        running = [node.bootstrap for node in self.nodes if node.pid is not None]
        return ",".join(running + [node.bootstrap for node in self.nodes if node.bootstrap not in running])

    @property
    def version(self) -> str:
        return self.nodes[0].version

    def info(self) -> TargetInfo:
        information = super().info()
        information.extra.update(nodes=len(self.nodes), startup_seconds=self.startup_seconds)
        return information

    def principal(self, name: str) -> tuple[str, Security]:
        return self.nodes[0].principal(name)

    def logs(self) -> str | None:
        return "\n".join(f"--- node {node.node_id} ---\n{node.logs() or ''}" for node in self.nodes)

    # faults --------------------------------------------------------------------------------
    def fault(self, name: str, **arguments) -> None:
        if name not in NODE_FAULTS:
            raise CapabilityMissing(f"target {self.spec!r} has no fault {name!r} (it has {', '.join(NODE_FAULTS)})")
        if name == "start_stopped_nodes":
            self.heal()
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
            cluster = Cluster(self.bootstrap, timeout=5.0)
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

    def heal(self) -> None:
        """Resumes paused nodes and starts stopped ones, then waits until every one is ready."""
        began = time.monotonic()
        down = [node for node in self.nodes if node.pid is None]
        for node in self.nodes:
            if node.pid is not None:
                node.pause(False)
        for node in down:
            node.launch()
        for node in down:
            node.wait_until_ready(began)

    def node(self, *, node: int | None = None, coordinator: str | None = None, group_coordinator: str | None = None,
             leader: dict | None = None, follower: dict | None = None) -> KafkaTarget:
        """The node a fault names: by id, or as the coordinator, leader or a follower of something right now."""
        if node is None:
            node = self._look_up(coordinator, group_coordinator, leader, follower)
        for candidate in self.nodes:
            if candidate.node_id == int(node):
                return candidate
        raise ValueError(f"no node {node} in {self.spec} (nodes 1-{len(self.nodes)})")

    def _look_up(self, coordinator, group_coordinator, leader, follower) -> int:
        cluster = Cluster(self.bootstrap, timeout=10.0)
        try:
            cluster.api_versions()
            if coordinator is not None:
                return cluster.coordinator(str(coordinator), "transaction")
            if group_coordinator is not None:
                return cluster.coordinator(str(group_coordinator), "group")
            if leader is not None:
                return cluster.leader(leader["topic"], int(leader.get("partition", 0)))
            if follower is not None:
                topic, partition = follower["topic"], int(follower.get("partition", 0))
                lead = cluster.leader(topic, partition)
                metadata = cluster.metadata([topic])
                replicas = next(entry["replica_nodes"] for entry in metadata["topics"][0]["partitions"]
                                if entry["partition_index"] == partition)
                return next(replica for replica in replicas if replica != lead)
        finally:
            cluster.close()
        raise ValueError("a node fault names node:, coordinator:, group_coordinator:, leader: or follower:")


def kafka_cluster_target_kind() -> TargetKind:
    from .kafka import _availability

    return TargetKind(
        name="kafka-cluster",
        description="Apache Kafka as N local KRaft nodes (kafka,nodes=3 or kafka:VERSION,nodes=3[,min.insync.replicas=2])",
        matches=lambda spec: SPEC.fullmatch(spec) is not None,
        create=KafkaClusterTarget,
        availability=_availability,
    )
