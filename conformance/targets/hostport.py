"""``HOST:PORT``: a broker someone else runs; the harness only attaches to it.

Matches any ``host:port`` with a numeric port, so it must be tried after every other kind
(``rdkafka-mock:3`` and ``kafka:4`` look like host:port too); its kind is marked ``fallback``.

``PRODUCT@HOST:PORT`` or ``PRODUCT:VERSION@HOST:PORT`` (``acme-streams:2.1@127.0.0.1:19092``) names what runs
there: an address says nothing of the product, and two products tried on one port at different times would
otherwise read as one target. The name is the target's :attr:`~conformance.targets.base.Target.name` (the
results' ``target_name``), the version its ``version``; the spec, address included, stays the evidence.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..client.security import Security
from .base import (Capability, CapabilityMissing, ControlFailed, Target, TargetInfo, TargetRefused, TargetUnavailable,
                   wait_for_port)
from .registry import TargetKind

if TYPE_CHECKING:
    from .node_control import AttachedCluster, NodeControl
    from .principals import Principal

_SPEC = re.compile(r"(?:(?P<product>[A-Za-z0-9][A-Za-z0-9_.+-]*)(?::(?P<version>[A-Za-z0-9][A-Za-z0-9_.+-]*))?@)?"
                   r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})")
CONNECT_TIMEOUT = 5.0

# Client settings that may be shown in reports; every other security setting (passwords, keys,
# user names, tokens) stays out of info() and repr().
_SHOWABLE_SECURITY = ("security.protocol", "sasl.mechanism", "sasl.mechanisms", "ssl.endpoint.identification.algorithm")


def parse(spec: str) -> tuple[str, int] | None:
    """``(host, port)`` for a valid ``host:port`` spec (IPv6 in brackets), named or not, else None."""
    match = _SPEC.fullmatch(spec)
    if not match or not 0 < int(match["port"]) < 65536:
        return None
    return match["host"].strip("[]"), int(match["port"])


def product_of(spec: str) -> tuple[str | None, str | None]:
    """``(product, version)`` the user named in ``PRODUCT[:VERSION]@HOST:PORT``; None for what was not named."""
    match = _SPEC.fullmatch(spec)
    return (match["product"], match["version"]) if match else (None, None)


class HostPortTarget(Target):
    kind = "host:port"
    capabilities = frozenset({Capability.CONFIGURE})
    description = "an already running broker given as HOST:PORT, or PRODUCT[:VERSION]@HOST:PORT to name it (attach only)"
    fallback = True

    @classmethod
    def matches(cls, spec: str) -> bool:
        return parse(spec) is not None

    def __init__(self, spec: str, security: dict[str, str] | None = None, connect_timeout: float = CONNECT_TIMEOUT):
        """``security`` holds client settings for SASL (PLAIN, SCRAM) and TLS (client certificates too), e.g.
        ``{"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": ...,
        "sasl.password": ..., "ssl.ca.location": ...}``; clients get them from :meth:`client_config`."""
        super().__init__(spec)
        address = parse(spec)
        if address is None:
            raise ValueError(f"not a HOST:PORT spec: {spec!r}")
        self.host, self.port = address
        self.product, self.product_version = product_of(spec)
        self.connect_timeout = connect_timeout
        self.principals: dict[str, Principal] = {}
        self.node_control: NodeControl | None = None
        self.cluster: AttachedCluster | None = None  # its nodes, once started with node control
        self._take(security or {})

    def configure(self, *, client_config: dict[str, str] | None = None,
                  principals: dict[str, Principal] | None = None, node_control: NodeControl | None = None) -> None:
        """``client_config``: a client config's security settings; a setting the raw client cannot honour (or
        a file, key or password it cannot read) raises now, naming the key. ``principals``: those the
        authorization cases run as (``--principal guest=FILE``), name -> :class:`Principal`, each with its own
        client config. ``node_control``: the user's commands that stop and start the cluster's nodes
        (``--node-control FILE``, :mod:`conformance.targets.node_control`): the target then has the cluster's
        faults, found and waited for as on a cluster the harness provisions."""
        if client_config is not None:
            self._take(client_config)
            self._client_security.check()
        if principals is not None:
            self.principals = dict(principals)
        if node_control is not None:
            from .node_control import CAPABILITIES

            self.node_control = node_control
            self.capabilities = HostPortTarget.capabilities | CAPABILITIES

    @property
    def security(self) -> Security:
        return self._client_security

    def principal(self, name: str) -> tuple[str, Security]:
        if name not in self.principals:
            raise CapabilityMissing(f"target {self.spec!r} has no principal {name!r}: name its client config "
                                    f"with --principal {name}=FILE (its Kafka principal in a principal=User:... "
                                    "key, or its SASL user name)")
        return self.bootstrap, self.principals[name].security

    def kafka_principal(self, name: str) -> str | None:
        found = self.principals.get(name)
        return found.kafka_principal if found is not None else None

    def _take(self, settings: dict[str, str]) -> None:
        self._client_security = Security.from_client_config(settings)
        self._security = dict(settings)

    def start(self) -> None:
        """The broker must accept TCP connections, then answer as configured (TLS, SASL): whatever stops
        it is said in one line before any case runs."""
        if not wait_for_port(self.host, self.port, self.connect_timeout):
            raise TargetUnavailable(
                f"nothing accepts TCP connections on {self.spec} within {self.connect_timeout:g}s; "
                "is the broker running and is this its advertised listener?"
            )
        from ..client.reach import why_unreachable
        from ..client.security import SecurityConfigError

        try:
            self.security.check()
        except SecurityConfigError as error:
            raise TargetRefused(str(error)) from None
        secured = self.security.tls or self.security.mechanism is not None
        problem = why_unreachable(self.address, self.security, timeout=10.0 if secured else 2.0)
        if problem is not None:
            raise TargetRefused(problem)
        if self.node_control is not None:
            from .node_control import AttachedCluster

            cluster = AttachedCluster(self.spec, self.address, self.security, self.node_control)
            try:
                cluster.discover()
            except ControlFailed as failed:
                raise TargetUnavailable(str(failed)) from None
            self.cluster = cluster

    def stop(self) -> None:
        """The broker is not ours to stop (a fault's nodes were brought back after each case)."""

    @property
    def address(self) -> str:
        """The address the user gave."""
        return self.spec.rpartition("@")[2]

    @property
    def bootstrap(self) -> str:
        """The address the user gave; with node control, the running nodes' first (one may be stopped)."""
        return self.cluster.bootstrap if self.cluster is not None else self.address

    # the cluster's nodes, under the user's commands (--node-control) ---------------------------------
    def nodes_by_role(self) -> AttachedCluster | None:
        """The cluster the user's node control drives, once started with it."""
        return self.cluster

    def _nodes(self, what: str) -> AttachedCluster:
        if self.cluster is None:
            raise CapabilityMissing(f"target {self.spec!r} {what}: give the commands that stop and start its "
                                    "nodes with --node-control FILE")
        return self.cluster

    def offers_fault(self, name: str) -> bool:
        from .node_control import offers

        return self.node_control is not None and offers(self.node_control, name)

    def why_no_fault(self, name: str) -> str:
        from .node_control import why_not

        return f"target {self.spec!r} has no fault {name!r}" + why_not(self.node_control, name)

    def fault(self, name: str, **arguments) -> None:
        self._nodes(f"has no fault {name!r}").fault(name, **arguments)

    def heal(self) -> None:
        if self.cluster is not None:
            self.cluster.heal()

    def restart(self) -> None:
        self._nodes("cannot restart its broker").restart()

    @property
    def name(self) -> str | None:
        return self.product

    @property
    def version(self) -> str | None:
        return self.product_version

    def client_config(self) -> dict[str, str]:
        """librdkafka settings to reach this broker, secrets included: never log the result."""
        return {"bootstrap.servers": self.bootstrap, **self._security}

    def _showable_security(self) -> dict[str, str]:
        return {key: self._security[key] for key in _SHOWABLE_SECURITY if key in self._security}

    def info(self) -> TargetInfo:
        info = super().info()
        info.extra.update(self._showable_security())
        if self.node_control is not None:  # which commands drove its nodes (never their text: it may hold a secret)
            info.extra["node_control"] = {"file": self.node_control.path, "commands": sorted(self.node_control.commands),
                                          "nodes": [node.node_id for node in self.cluster.nodes] if self.cluster else None}
        return info

    def __repr__(self) -> str:
        shown = "".join(f", {key}={value}" for key, value in self._showable_security().items())
        return f"HostPortTarget({self.spec!r}{shown})"


def hostport_target_kind() -> TargetKind:
    return TargetKind.of(HostPortTarget)
