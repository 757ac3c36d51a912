"""``proxy+SPEC``: any other target with the fault proxy in front of it.

``proxy+kafka``, ``proxy+tansu``, ``proxy+rdkafka-mock``, ``proxy+kafka:3.9.1``, ``proxy+HOST:PORT``;
``proxy:latency_ms=20+kafka`` also holds every response back 20 ms (a broker across a network), for a run's
whole length, faults or not.
The inner target starts as usual; the harness then talks only to the proxy's listener, and every
broker address the cluster advertises is rewritten to another listener of the proxy, so no request
goes around it. Faults named ``proxy.<fault>`` go to the proxy (``conformance.proxy.rules.FAULTS``,
plus ``proxy.release`` and ``proxy.clear``); every other fault, restarts and principals are the
inner target's, their addresses proxied too.

In front of a TLS listener the proxy terminates TLS with a certificate of its own, from a CA it makes at
start; the harness's clients (the raw client, and the client properties the exactly-once tier uses) are
made to trust that CA instead of the broker's, and the proxy opens its own TLS to the broker with the
broker's trust settings. SASL crosses unchanged. Each principal of the authorization cases gets listeners
of its own, so that with mutual TLS the broker sees that principal's certificate, not the harness's.

Another target kind can reuse this wrapper with its own proxy, e.g. an emulation of a draft KIP:
``ProxiedTarget(spec, inner, server_factory=lambda bootstrap, tls: ProxyServer(bootstrap, codec,
interceptors=[MyEmulation()], tls=tls))`` (see :mod:`conformance.proxy.interceptor`).
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import ssl
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from ..client.security import Security
from ..proxy import rules
from ..proxy.server import ProxyServer
from ..proxy.tls import ProxyTls
from .base import Capability, CapabilityMissing, Target, TargetInfo
from .certificates import Authority
from .registry import TargetKind, resolve

if TYPE_CHECKING:
    from .nodes import NodeFaults

PREFIX = "proxy+"
FAULT_PREFIX = "proxy."


class ProxiedTarget(Target):
    kind = "proxy"

    def __init__(self, spec: str, inner: Target, *,
                 server_factory: Callable[..., ProxyServer] = ProxyServer, latency_ms: int = 0):
        super().__init__(spec)
        self.inner = inner
        self.latency_ms = latency_ms
        self.server: ProxyServer | None = None
        self._server_factory = server_factory  # factory(upstream address, tls=ProxyTls or None)
        self._authority: Authority | None = None  # the proxy's own CA, in front of a TLS listener
        # not revive: a revived inner target listens on new ports the proxy would not know
        self.capabilities = frozenset(inner.capabilities - {Capability.REVIVE} | {Capability.PROXY, Capability.FAULTS})

    @property
    def security(self) -> Security:
        return self._trusting_proxy(self.inner.security)

    def configure(self, *, client_config: dict[str, str] | None = None, principals: dict | None = None,
                  node_control=None) -> None:
        """HOST:PORT behind the proxy still takes the user's client settings and principals; not node control: the
        proxy stands in front of one address, which a stopped node would take away."""
        if node_control is not None:
            raise CapabilityMissing(f"target {self.spec!r} takes no node control (the fault proxy forwards to one "
                                    "address): give --node-control to HOST:PORT itself")
        self.inner.configure(client_config=client_config, principals=principals)

    def start(self) -> None:
        self.inner.start()
        try:
            self.server = self._server_factory(self.inner.bootstrap, tls=self._tls()).start()
            self.server.latency_s = self.latency_ms / 1000
        except BaseException:
            self.inner.stop()
            self._forget_authority()
            raise

    def stop(self) -> None:
        try:
            if self.server is not None:
                self.server.stop()
                self.server = None
        finally:
            self._forget_authority()
            self.inner.stop()

    # ------------------------------------------------------------------------ TLS in front of a TLS listener
    def _tls(self) -> ProxyTls | None:
        inner_security = self.inner.security
        if not inner_security.tls:
            return None
        self._authority = Authority(Path(tempfile.mkdtemp(prefix="conformance-proxy-tls-")),
                                    name="kafka-conformance fault proxy CA")
        issued = self._authority.issue("proxy", "kafka-conformance fault proxy", hosts=("127.0.0.1", "localhost"))
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.minimum_version = ssl.TLSVersion.TLSv1_2
        server.load_cert_chain(issued.certificate, issued.key)

        @functools.cache
        def client_for(identity: str | None) -> ssl.SSLContext:
            security = inner_security if identity is None else self.inner.principal(identity)[1]
            context = security.ssl_context()
            assert context is not None, "the proxy opens TLS to the broker only in front of a TLS listener"
            return context

        return ProxyTls(server=server, client_for=client_for)

    def _trusting_proxy(self, security: Security) -> Security:
        """``security`` for a client of the proxy: it trusts the proxy's CA instead of the broker's."""
        if self._authority is None:
            return security
        return dataclasses.replace(security, tls_ca_file=str(self._authority.path), tls_ca_pem=None,
                                   tls_ca_folder=None, tls_verify=True)

    def client_config(self) -> dict[str, str]:
        """The inner target's librdkafka settings, for the proxy: its address, and its CA to trust."""
        settings = {**self.inner.client_config(), "bootstrap.servers": self.bootstrap}
        if self._authority is not None:
            for key in ("ssl.ca.pem", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type"):
                settings.pop(key, None)
            settings["ssl.ca.location"] = str(self._authority.path)
        return settings

    def _forget_authority(self) -> None:
        if self._authority is not None:
            shutil.rmtree(self._authority.directory, ignore_errors=True)
            self._authority = None

    @property
    def bootstrap(self) -> str:
        if self.server is None:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return self.server.bootstrap

    @property
    def version(self) -> str | None:
        return self.inner.version

    @property
    def name(self) -> str | None:
        return self.inner.name

    def info(self) -> TargetInfo:
        inner = self.inner.info()
        return TargetInfo(kind=f"{PREFIX}{inner.kind}", spec=self.spec, version=inner.version, name=inner.name,
                          bootstrap=self.bootstrap if self.server else None,
                          extra={**inner.extra, "upstream": inner.bootstrap})

    def restart(self) -> None:
        self.inner.restart()
        if self.server is not None:
            self.server.drop_connections()

    def heal(self) -> None:
        """After a case: the faults it added and did not use that could reach the next case are removed, and what
        they held let go (:meth:`ProxyServer.heal`)."""
        if self.server is not None:
            self.server.heal()
        self.inner.heal()

    def logs(self) -> str | None:
        return self.inner.logs()

    def known_issues(self) -> list[dict]:
        return self.inner.known_issues()

    def ended(self, wait: float = 0.0) -> str | None:
        return self.inner.ended(wait)

    def offers_fault(self, name: str) -> bool:
        if name.startswith(FAULT_PREFIX):
            return name[len(FAULT_PREFIX):] in {*rules.FAULTS, *rules.CONTROL}
        return self.inner.offers_fault(name)

    def provisioned_brokers(self) -> int | None:
        return self.inner.provisioned_brokers()  # the proxy stands in for each broker behind it

    def nodes_by_role(self) -> NodeFaults | None:
        return self.inner.nodes_by_role()  # node ids are the cluster's: the proxy keeps them in every answer

    def fault(self, name: str, **arguments) -> None:
        if not name.startswith(FAULT_PREFIX):
            self.inner.fault(name, **arguments)
            return
        if self.server is None:
            raise CapabilityMissing(f"target {self.spec!r} is not started")
        self.server.fault(name[len(FAULT_PREFIX):], **arguments)

    def principal(self, name: str):
        address, security = self.inner.principal(name)
        host, _, port = address.rpartition(":")
        # over TLS, listeners of the principal's own: the proxy shows the broker that principal's certificate
        identity = name if self._authority is not None else None
        if self.server is None:
            raise RuntimeError(f"target {self.spec!r} is not started: the proxy starts with it")
        local_host, local_port = self.server.local_address(host.strip("[]"), int(port), identity)
        return f"{local_host}:{local_port}", self._trusting_proxy(security)

    def kafka_principal(self, name: str) -> str | None:
        return self.inner.kafka_principal(name)


OPTIONS = {"latency_ms": "milliseconds every response is held back"}


def parse(spec: str) -> tuple[dict[str, int], str] | None:
    """``(options, inner spec)`` of ``proxy+INNER`` or ``proxy:KEY=VALUE,...+INNER``, or None; ValueError
    for an option the proxy does not know or a value that is not a whole number of at least 0."""
    if spec.startswith(PREFIX):
        return ({}, spec[len(PREFIX):]) if len(spec) > len(PREFIX) else None
    if not spec.startswith("proxy:") or "+" not in spec:
        return None
    written, _, inner = spec[len("proxy:"):].partition("+")
    options = {}
    for option in filter(None, written.split(",")):
        key, _, value = option.partition("=")
        if key not in OPTIONS:
            raise ValueError(f"{spec!r}: the proxy has no option {key!r} (it has: "
                             f"{', '.join(f'{name} ({meaning})' for name, meaning in OPTIONS.items())})")
        if not value.isdigit():
            raise ValueError(f"{spec!r}: {key} takes a whole number of at least 0, not {value!r}")
        options[key] = int(value)
    return (options, inner) if inner else None


def proxy_target_kind(inner_kinds: Callable[[], Iterable[TargetKind]]) -> TargetKind:
    """The ``proxy+`` kind over the target kinds ``inner_kinds()`` returns (resolved when a spec is built)."""

    def create(spec: str) -> Target:
        parsed = parse(spec)
        if parsed is None:
            raise ValueError(f"not a proxy+SPEC target: {spec!r}")
        options, inner = parsed
        return ProxiedTarget(spec, resolve(inner, inner_kinds()), latency_ms=options.get("latency_ms", 0))

    return TargetKind(
        name="proxy",
        description="proxy+SPEC: the fault proxy in front of any other target (proxy+kafka, proxy+HOST:PORT; "
                    "proxy:latency_ms=20+kafka holds every response back 20 ms)",
        matches=lambda spec: spec.startswith((PREFIX, "proxy:")),
        create=create,
        availability=lambda: None,
    )
