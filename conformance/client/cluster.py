"""A view of a cluster through raw requests: versions, brokers, partition leaders and coordinators."""

from __future__ import annotations

import time

from ..protocol import frames
from ..protocol.codec import Codec, default_codec
from ..protocol.errors import error_name
from . import sasl
from .connection import ClientError, Connection, Disconnected, GarbageResponse, SecurityFailure
from .security import Security
from .transcript import Exchange, Transcript

UNSUPPORTED_VERSION = 35
API_VERSIONS_KEY = 18
COORDINATOR_RETRIABLE = {14, 15, 16}  # load in progress, not available, not coordinator


class ClusterError(Exception):
    """The cluster did not give the routing information a case needs. ``exchange``: the request whose answer
    said so; ``lacking``: the API the cluster does not offer at all."""

    def __init__(self, message: str, *, exchange: Exchange | None = None, lacking: str | None = None):
        super().__init__(message)
        self.exchange, self.lacking = exchange, lacking


def split_host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


class Cluster:
    """Connections to one cluster, opened on demand, all recording into one transcript."""

    def __init__(self, bootstrap: str, codec: Codec | None = None, transcript: Transcript | None = None,
                 *, client_id: str = "kafka-conformance", timeout: float = 10.0,
                 security: Security | None = None):
        self.bootstrap = bootstrap
        self.codec = codec or default_codec()
        self.transcript = transcript if transcript is not None else Transcript()
        self.client_id = client_id
        self.timeout = timeout
        self.security = security or Security()
        self._connections: dict[str, Connection] = {}
        self.brokers: dict[int, tuple[str, int]] = {}
        self.supported: dict[int, tuple[int, int]] | None = None
        self.finalized_features: dict[str, int] = {}
        self.leaders: dict[tuple[str, int], int] = {}

    # ---------------------------------------------------------------------- connections
    def connection(self, destination: str | int = "bootstrap", *, fresh: bool = False) -> Connection:
        """``bootstrap``, a node id, or ``host:port``; ``fresh`` opens a new connection every time."""
        key = str(destination)
        is_node = isinstance(destination, int) or key.lstrip("-").isdigit()
        if is_node:
            key = f"node-{int(destination)}"
        existing = self._connections.get(key)
        if existing is not None and existing.connected and not fresh:
            return existing
        if destination == "bootstrap":
            # every bootstrap address in turn, then any broker Metadata named: a cluster that lost a node
            # is still reachable, as Kafka's clients find it
            addresses = [split_host_port(address) for address in self.bootstrap.split(",")]
            addresses += [address for address in self.brokers.values() if address not in addresses]
        elif is_node:
            if int(destination) not in self.brokers:
                self.metadata([])
            try:
                addresses = [self.brokers[int(destination)]]
            except KeyError:
                raise ClusterError(f"no broker with node id {destination}; known: {sorted(self.brokers)}") from None
        else:
            addresses = [split_host_port(key)]
        connection = self._connect(addresses, key)
        if not fresh:
            old = self._connections.get(key)
            if old is not None:
                old.close()
            self._connections[key] = connection
        return connection

    def named_connection(self, name: str, destination: str | int = "bootstrap") -> Connection:
        """A connection of its own to ``destination``, kept under ``name`` beside the shared one (a second
        producer's, say) and opened again once broken; :meth:`close` closes it with the others."""
        key = f"{name}@{destination}"
        existing = self._connections.get(key)
        if existing is not None and existing.connected:
            return existing
        connection = self.connection(destination, fresh=True)
        self._connections[key] = connection
        return connection

    def _connect(self, addresses: list[tuple[str, int]], name: str) -> Connection:
        """A connection (authenticated where the cluster needs it) to the first address that accepts."""
        security = self.security
        authenticate = None
        if security.mechanism is not None:
            def authenticate(connection: Connection, step: str) -> int:
                return sasl.authenticate(connection, security, step=step)
        for number, (host, port) in enumerate(addresses, 1):
            connection = Connection(host, port, self.codec, self.transcript, name=name,
                                    client_id=self.client_id, timeout=self.timeout,
                                    ssl_context=security.ssl_context(), authenticate=authenticate)
            try:
                connection.connect()  # TLS, then SASL where the cluster needs it
            except SecurityFailure:
                raise  # the next address would refuse the same credentials or certificate
            except ClientError:
                if number == len(addresses):
                    raise
                continue
            return connection
        raise ClusterError(f"no address to connect to for {name}")

    def close(self) -> None:
        """Closes every connection this client opened."""
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    # ---------------------------------------------------------------------- versions
    def api_versions(self, refresh: bool = False) -> dict[int, tuple[int, int]]:
        """{api_key: (min, max)} the bootstrap broker advertises, negotiating the ApiVersions version as Kafka's
        clients do: from the newest version the codec knows, down to the broker's newest on UNSUPPORTED_VERSION
        (KIP-511: it answers in a v0 body with its ranges), one version down on a closed connection (a broker that
        closes on a version it does not know: librdkafka and the Java client reconnect one version lower)."""
        if self.supported is not None and not refresh:
            return self.supported
        versions = self.codec.registry.api("ApiVersions").versions()
        version = versions[-1]
        body = {"client_software_name": "kafka-conformance", "client_software_version": "0.1.0"}
        for _ in range(len(versions) + 1):
            connection = self.connection()
            try:
                response = connection.request("ApiVersions", version, body, step="negotiate").answer
            except GarbageResponse as error:
                response = self._unsupported_version_answer(error)
                connection.close()
            except Disconnected:
                lower = [known for known in versions if known < version]
                if not connection.closed_by_peer or not lower:
                    raise
                version = lower[-1]
                continue
            if response["error_code"] == UNSUPPORTED_VERSION:
                advertised = {entry["api_key"]: entry["max_version"] for entry in response["api_keys"]}
                # never the same version again: a broker that refuses it and advertises it would loop
                version = min(advertised.get(API_VERSIONS_KEY, 0), version - 1)
                if version < versions[0]:
                    break
                continue
            if response["error_code"]:
                raise ClusterError(f"ApiVersions failed: {error_name(response['error_code'])}")
            self.supported = {entry["api_key"]: (entry["min_version"], entry["max_version"])
                              for entry in response["api_keys"]}
            self.finalized_features = {feature["name"]: feature["max_version_level"]
                                       for feature in response.get("finalized_features") or []}
            return self.supported
        raise ClusterError("ApiVersions negotiation did not converge")

    def _unsupported_version_answer(self, error: GarbageResponse) -> dict:
        """KIP-511: a broker answers an ApiVersions version it does not know with a v0 body.

        Some implementations send a body that is neither v0 nor the version asked for; like
        Kafka's own clients, fall back to v0 when the error code up front says UNSUPPORTED_VERSION.
        """
        payload = ((error.exchange.response_bytes if error.exchange else None) or b"")[4:]
        try:
            return frames.decode_response(self.codec, "ApiVersions", 0, payload)[1]
        except Exception:  # noqa: BLE001 - judged by the error code below
            pass
        if len(payload) >= 6 and int.from_bytes(payload[4:6], "big", signed=True) == UNSUPPORTED_VERSION:
            return {"error_code": UNSUPPORTED_VERSION, "api_keys": [{"api_key": API_VERSIONS_KEY, "max_version": 0}]}
        raise ClusterError(f"ApiVersions answer is unreadable: {error}") from None

    def version_range(self, api: str | int) -> tuple[int, int] | None:
        """Versions both the broker and the codec support, or None."""
        specs = self.codec.registry.api(api)
        broker = self.api_versions().get(specs.api_key)
        if broker is None:
            return None
        codec_versions = specs.versions()
        low, high = max(broker[0], codec_versions[0]), min(broker[1], codec_versions[-1])
        return (low, high) if low <= high else None

    def best_version(self, api: str | int) -> int:
        """The newest version of ``api`` that both the broker and the codec speak; :class:`ClusterError` if none."""
        found = self.version_range(api)
        if found is None:
            raise ClusterError(f"the broker and the codec share no version of {api}",
                               lacking=self.codec.registry.api(api).name)
        return found[1]

    # ---------------------------------------------------------------------- routing
    def metadata(self, topics: list[str] | None) -> dict:
        """Metadata for ``topics`` (None: all); refreshes brokers and partition leaders."""
        version = self.best_version("Metadata")
        request = {"topics": None if topics is None else [{"name": topic} for topic in topics],
                   "allow_auto_topic_creation": False}
        response = self.connection().request("Metadata", version, request, step="route").answer
        self.brokers = {broker["node_id"]: (broker["host"], broker["port"]) for broker in response["brokers"]}
        for topic in response["topics"]:
            for partition in topic["partitions"]:
                if partition["error_code"] == 0:
                    self.leaders[(topic["name"], partition["partition_index"])] = partition["leader_id"]
        return response

    def leader(self, topic: str, partition: int, *, wait: float = 10.0) -> int:
        """The node id leading ``topic``-``partition``, asking Metadata again until one leads or ``wait`` seconds pass."""
        deadline = time.monotonic() + wait
        while True:
            self.metadata([topic])
            leader = self.leaders.get((topic, partition), -1)
            if leader >= 0:
                return leader
            if time.monotonic() > deadline:
                raise ClusterError(f"no leader for {topic}-{partition} after {wait}s")
            time.sleep(0.1)

    def coordinator(self, key: str, key_type: str = "transaction", *, wait: float = 15.0) -> int:
        """Node id of the group or transaction coordinator for ``key``, retrying while it loads."""
        key_types = {"group": 0, "transaction": 1}
        version = self.best_version("FindCoordinator")
        if version >= 4:
            request = {"key_type": key_types[key_type], "coordinator_keys": [key]}
        else:
            request = {"key_type": key_types[key_type], "key": key}
        deadline = time.monotonic() + wait
        while True:
            exchanged = self.connection().request("FindCoordinator", version, request, step="route")
            response = exchanged.answer
            entry = response["coordinators"][0] if version >= 4 else response
            if entry["error_code"] == 0:
                self.brokers[entry["node_id"]] = (entry["host"], entry["port"])
                return entry["node_id"]
            if entry["error_code"] not in COORDINATOR_RETRIABLE or time.monotonic() > deadline:
                raise ClusterError(f"FindCoordinator({key_type} {key!r}) failed: "
                                   f"{error_name(entry['error_code'])}", exchange=exchanged)
            time.sleep(0.1)
