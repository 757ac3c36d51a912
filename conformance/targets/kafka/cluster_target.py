"""Apache Kafka as a cluster of local KRaft nodes on 127.0.0.1: ``kafka,nodes=3`` or ``kafka:3.9.1,nodes=3``.

Feature levels (``kafka,nodes=3,transaction.version=1``) format every node's storage; a spec with
feature options only (``kafka,transaction.version=1``) is a single node (:mod:`conformance.targets.kafka.broker`).

Every node is a combined broker and controller (a three-voter quorum for three nodes), the internal
topics are replicated to every node and have one partition per node, so transaction and group
coordinators spread over the cluster. ``,min.insync.replicas=N`` sets the brokers' default.

The faults ``fault:`` steps make on the nodes, and the admin requests they use, are in
:mod:`conformance.targets.nodes` (they work on an attached cluster too); the cluster provisions the nodes and heals
them after a case.
"""

from __future__ import annotations

import re
import time

from ...client.security import Security
from ..base import Capability, Target, TargetInfo
from .broker import (FEATURE_OPTIONS, KafkaTarget, feature_levels, is_single_node_spec,
                    random_cluster_id, split_spec)
from ..registry import TargetKind
from ..nodes import FAULTS, NodeFaults

SPEC = re.compile(r"(?P<base>kafka(?::[^,]+)?),(?P<options>.+)")
OPTIONS = {"nodes": int, "min.insync.replicas": int}
DATA_DIRECTORIES = 2  # per node: one can fail while the node lives (the fail_log_dir fault)

def parse(spec: str) -> tuple[str, dict[str, int]]:
    """``kafka:4.4.0,nodes=3`` → (``kafka:4.4.0``, {"nodes": 3}); feature options (``transaction.version=1``)
    are kept under their names. ValueError names what is wrong."""
    if SPEC.fullmatch(spec) is None:
        raise ValueError(f"not a kafka cluster spec: {spec!r} (expected kafka[:VERSION],nodes=N)")
    base, raw = split_spec(spec)
    options: dict[str, int] = {}
    for name, value in raw.items():
        if name not in OPTIONS and name not in FEATURE_OPTIONS or not value.isdigit():
            raise ValueError(f"{spec!r}: unknown or malformed option {name}={value} (options: nodes=N, "
                             f"min.insync.replicas=N, " + ", ".join(f"{feature}=LEVEL" for feature in FEATURE_OPTIONS) + ")")
        options[name] = int(value)
    if options.get("nodes", 1) < 1:
        raise ValueError(f"{spec!r}: nodes must be at least 1")
    return base, options


class KafkaClusterTarget(NodeFaults, Target):
    kind = "kafka-cluster"
    capabilities = frozenset({Capability.RESTART, Capability.LOGS, Capability.PRINCIPALS, Capability.NODES})
    description = ("Apache Kafka as N local KRaft nodes (kafka,nodes=3 or kafka:VERSION,nodes=3[,min.insync.replicas=2]"
                   "[,transaction.version=N])")

    @classmethod
    def matches(cls, spec: str) -> bool:
        return SPEC.fullmatch(spec) is not None and not is_single_node_spec(spec)

    @classmethod
    def availability(cls) -> str | None:
        return KafkaTarget.availability()

    def nodes_by_role(self) -> KafkaClusterTarget:
        """The cluster finds its own nodes by role."""
        return self

    nodes: list[KafkaTarget]

    def __init__(self, spec: str, **node_options):
        super().__init__(spec)
        base, options = parse(spec)
        count = options.get("nodes", 3)
        # A killed node is fenced (and its partitions move) after 3 s instead of Kafka's 9.
        overrides = {"broker.session.timeout.ms": 3000, **dict(node_options.pop("overrides", None) or {})}
        if "min.insync.replicas" in options:
            overrides["min.insync.replicas"] = options["min.insync.replicas"]
        features = {**feature_levels(spec, {name: str(options[name]) for name in FEATURE_OPTIONS if name in options}),
                    **dict(node_options.pop("features", None) or {})}
        self.features = features
        self.nodes = [KafkaTarget(base, overrides=overrides, features=features, **node_options) for _ in range(count)]
        self.startup_seconds: float | None = None
        self._blocked_topics: set[str] = set()  # internal topics block_coordinator_log set min.insync.replicas on
        cluster_id = random_cluster_id()
        for number, node in enumerate(self.nodes, 1):
            node.node_id, node.cluster_id, node.replicas = number, cluster_id, count
            node.log_dirs = DATA_DIRECTORIES

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
            self._wait_until_registered([node.node_id for node in self.nodes])
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
        running = [node.bootstrap for node in self.nodes if node.running]
        return ",".join(running + [node.bootstrap for node in self.nodes if node.bootstrap not in running])

    @property
    def version(self) -> str:
        return self.nodes[0].version

    def info(self) -> TargetInfo:
        information = super().info()
        information.extra.update(nodes=len(self.nodes), startup_seconds=self.startup_seconds)
        if self.features:
            information.extra["features"] = dict(self.features)
        return information

    def principal(self, name: str) -> tuple[str, Security]:
        return self.nodes[0].principal(name)

    def kafka_principal(self, name: str) -> str | None:
        return self.nodes[0].kafka_principal(name)

    def logs(self) -> str | None:
        return "\n".join(f"--- node {node.node_id} ---\n{node.logs() or ''}" for node in self.nodes)

    def known_issues(self) -> list[dict]:
        return [{**issue, "node": node.node_id} for node in self.nodes for issue in node.known_issues()]

    def offers_fault(self, name: str) -> bool:
        return name in FAULTS

    def provisioned_brokers(self) -> int:
        return len(self.nodes)


def kafka_cluster_target_kind() -> TargetKind:
    return TargetKind.of(KafkaClusterTarget)
