"""Per-case resources: topics, transactional ids and groups with names unique to one run."""

from __future__ import annotations

import re
import time

from ..client.cluster import Cluster, ClusterError
from ..protocol.errors import error_name
from ..suite.model import Case

TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3
DELETE_PER_REQUEST = 100


def unique_name(*parts: str, limit: int = 200) -> str:
    """A legal topic/transactional-id/group name: letters, digits, '.', '_' and '-'."""
    name = ".".join(re.sub(r"[^A-Za-z0-9._-]+", "-", part) for part in parts if part)
    return name[-limit:]


class TooFewBrokers(Exception):
    """The case needs a cluster: a reason to skip it, not an error."""


class UnknownSetting(Exception):
    """The target does not know a topic setting the case's topics are created with (Kafka 3.5 and
    KIP-937's message.timestamp.before.max.ms): a reason to skip the case, naming the key, not an error."""


INVALID_CONFIG = 40


class CannotCreateTopics(ClusterError):
    """The target cannot make the topics a case needs, which is no harness error: ``unsupported`` where it has no
    way to (no CreateTopics advertised, no control API of its own), else it refused them (CreateTopics answered an
    error: a set-up step departed). The message names CreateTopics."""

    def __init__(self, message: str, *, unsupported: bool):
        super().__init__(message)
        self.unsupported = unsupported


def unknown_setting(topic: str, keys: list[str], message: str | None) -> str:
    """Why a topic with these settings cannot be created here: the keys the target's message names, or all."""
    named = [key for key in keys if key in (message or "")] or keys
    return (f"the target does not know the topic setting {', '.join(named)} this case's topic {topic} is created "
            f"with (CreateTopics: INVALID_CONFIG{': ' + message if message else ''}); a broker setting is not a "
            "protocol rule")


def replicas_needed(case: Case, topics=None) -> int:
    """The most replicas any of ``topics`` (short names; by default those the case's steps name) asks for."""
    return max((int((case.suite.topics.get(short) or {}).get("replication", 1))
                for short in (case.topics_used if topics is None else topics)), default=1)


def too_few_brokers(needed: int, brokers: int) -> str:
    return f"the case's topics need {needed} replicas; the target has {brokers} broker(s)"


class Resources:
    """Creates a case's topics before it runs (``created`` names them, for the runner to delete later);
    hands out unique names."""

    def __init__(self, cluster: Cluster, case: Case, suffix: str, target=None):
        self.cluster = cluster
        self.target = target
        self.case = case
        self.suffix = suffix
        self.created: list[str] = []
        self.topic_ids: dict[str, object] = {}

    def names(self) -> dict:
        case = self.case
        base = (case.suite.id, case.id)
        return {
            "topics": {name: unique_name(*base, name, self.suffix) for name in case.suite.topics},
            "txn_ids": {name: unique_name(*base, name, self.suffix) for name in case.suite.transactional_ids},
            "groups": {name: unique_name(*base, name, self.suffix) for name in case.suite.groups},
            "run": self.suffix,
            "client_id": self.cluster.client_id,  # its own: a proxy fault kept to it (client) picks no other item's
        }

    def create_topics(self, topics: dict[str, str], timeout: float = 30.0) -> None:
        if not topics:
            return
        if self.cluster.version_range("CreateTopics") is None and self.target is not None:
            self._create_through_target(topics)
            self.wait_for_leaders(topics.values(), timeout)
            return
        version = self.cluster.best_version("CreateTopics")
        needed = replicas_needed(self.case, topics)
        if needed > 1 and needed > len(self.cluster.metadata([])["brokers"]):
            raise TooFewBrokers(too_few_brokers(needed, len(self.cluster.brokers)))
        requested = []
        configs: dict[str, list[str]] = {}  # the settings each topic is created with, to name an unknown one
        for short, name in topics.items():
            options = self.case.suite.topics.get(short) or {}
            configs[name] = [str(key) for key in options.get("configs") or {}]
            requested.append({
                "name": name, "num_partitions": int(options.get("partitions", 1)),
                "replication_factor": int(options.get("replication", 1)),
                "assignments": [],
                "configs": [{"name": key, "value": str(value).lower() if isinstance(value, bool) else str(value)}
                            for key, value in (options.get("configs") or {}).items()],
            })
        response = self.cluster.connection().request(
            "CreateTopics", version, {"topics": requested, "timeout_ms": int(timeout * 1000),
                                      "validate_only": False}, step="setup").answer
        answered = response["topics"]
        unknown = [unknown_setting(result["name"], configs[result["name"]], result.get("error_message"))
                   for result in answered if result["error_code"] == INVALID_CONFIG and configs.get(result["name"])]
        for result in answered:
            if unknown and result["error_code"] == INVALID_CONFIG:
                continue
            if result["error_code"] not in (0, TOPIC_ALREADY_EXISTS):
                raise CannotCreateTopics(f"the set-up CreateTopics v{version} refused the case's topic {result['name']}: "
                                         f"{error_name(result['error_code'])} {result.get('error_message') or ''}".rstrip(),
                                         unsupported=False)
            self.created.append(result["name"])
        if unknown:
            raise UnknownSetting(unknown[0])
        self.wait_for_leaders(topics.values(), timeout)

    def _create_through_target(self, topics: dict[str, str]) -> None:
        """Brokers without CreateTopics (librdkafka's mock) create topics through their own control API."""
        from ..targets.base import CapabilityMissing

        for short, name in topics.items():
            options = self.case.suite.topics.get(short) or {}
            try:
                self.target.fault("topic_create", topic=name, partitions=int(options.get("partitions", 1)),
                                  replication=1)
            except CapabilityMissing:
                raise CannotCreateTopics(f"{self.target.spec} advertises no CreateTopics version and cannot create "
                                         f"the topics this case needs another way", unsupported=True) from None

    def wait_for_leaders(self, names, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        wanted = list(names)
        while True:
            metadata = self.cluster.metadata(wanted)
            ready = True
            for topic in metadata["topics"]:
                if topic.get("topic_id") is not None:
                    self.topic_ids[topic["name"]] = topic["topic_id"]
                if topic["error_code"] or not topic["partitions"] or any(
                        partition["error_code"] or partition["leader_id"] < 0 for partition in topic["partitions"]):
                    ready = False
            if ready and self._partitions_answer(metadata["topics"]) and self._every_broker_knows(wanted):
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"topics {wanted} have no leaders after {timeout}s")
            time.sleep(0.05)

    def _every_broker_knows(self, names: list[str]) -> bool:
        """On a cluster each broker learns of a new topic from the metadata log in its own time; until it has,
        it answers a request naming the topic's id with UNKNOWN_TOPIC_ID (seen on Kafka 4.4.0 with three nodes,
        a Produce v13 sent to a follower). A case may send to any broker, so every broker must know the topic."""
        if len(self.cluster.brokers) < 2:
            return True
        version = self.cluster.best_version("Metadata")
        body = {"topics": [{"name": name} for name in names], "allow_auto_topic_creation": False}
        for node in list(self.cluster.brokers):
            response = self.cluster.connection(node).request("Metadata", version, body, step="setup").answer
            if any(topic["error_code"] or not topic["partitions"] for topic in response["topics"]):
                return False
        return True

    def _partitions_answer(self, topics: list[dict]) -> bool:
        """Metadata can name a leader before its replica manager serves the partition: ask each leader."""
        version = self.cluster.best_version("ListOffsets")
        by_leader: dict[int, dict[str, list[int]]] = {}
        for topic in topics:
            for partition in topic["partitions"]:
                by_leader.setdefault(partition["leader_id"], {}).setdefault(topic["name"], []).append(
                    partition["partition_index"])
        for leader, partitions in by_leader.items():
            body = {"replica_id": -1, "isolation_level": 0, "timeout_ms": 1000, "topics": [
                {"name": name, "partitions": [{"partition_index": index, "current_leader_epoch": -1, "timestamp": -1}
                                              for index in indexes]} for name, indexes in partitions.items()]}
            response = self.cluster.connection(leader).request("ListOffsets", version, body, step="setup").answer
            if any(partition["error_code"] for topic in response["topics"] for partition in topic["partitions"]):
                return False
        return True


def delete_topics(cluster: Cluster, names: list[str], per_request: int = DELETE_PER_REQUEST) -> list[str]:
    """Best effort, a few requests for many topics: a target that cannot delete keeps them (names never
    collide anyway), and the first failure ends the attempt rather than waiting on every request. Returns the
    names the target said it deleted."""
    deleted: list[str] = []
    try:
        version = cluster.best_version("DeleteTopics")
        for start in range(0, len(names), per_request):
            chunk = names[start:start + per_request]
            body = {"topic_names": chunk, "topics": [{"name": name} for name in chunk], "timeout_ms": 5000}
            response = cluster.connection().request("DeleteTopics", version, body, step="cleanup", timeout=6).response
            deleted += [answer["name"] for answer in (response or {}).get("responses", []) if answer["error_code"] == 0]
    except Exception:  # noqa: BLE001 - cleanup never turns a verdict into an error
        pass
    return deleted


def wait_until_gone(cluster: Cluster, names: list[str], timeout: float = 5.0) -> None:
    """Best effort: until the broker's Metadata names none of ``names`` (it has applied their deletion), for at
    most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            topics = cluster.metadata(names)["topics"]
            if all(topic["error_code"] == UNKNOWN_TOPIC_OR_PARTITION for topic in topics):
                return
            time.sleep(0.1)
    except Exception:  # noqa: BLE001 - as delete_topics: the wait never turns a verdict into an error
        pass
