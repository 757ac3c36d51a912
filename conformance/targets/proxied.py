"""``proxy+SPEC``: any other target with the fault proxy in front of it.

``proxy+kafka``, ``proxy+tansu``, ``proxy+rdkafka-mock``, ``proxy+kafka:3.9.1``, ``proxy+HOST:PORT``.
The inner target starts as usual; the harness then talks only to the proxy's listener, and every
broker address the cluster advertises is rewritten to another listener of the proxy, so no request
goes around it. Faults named ``proxy.<fault>`` go to the proxy (``conformance.proxy.rules.FAULTS``,
plus ``proxy.release`` and ``proxy.clear``); every other fault, restarts and principals are the
inner target's, their addresses proxied too. TLS listeners are not proxied (plain TCP and SASL only).

Another target kind can reuse this wrapper with its own proxy, e.g. an emulation of a draft KIP:
``ProxiedTarget(spec, inner, server_factory=lambda bootstrap: ProxyServer(bootstrap, codec,
interceptors=[MyEmulation()]))`` (see :mod:`conformance.proxy.interceptor`).
"""

from __future__ import annotations

from typing import Callable, Iterable

from ..proxy.server import ProxyServer
from .base import CapabilityMissing, Target, TargetInfo
from .registry import TargetKind, resolve

PREFIX = "proxy+"
FAULT_PREFIX = "proxy."


class ProxiedTarget(Target):
    kind = "proxy"

    def __init__(self, spec: str, inner: Target, *, server_factory: Callable[[str], ProxyServer] = ProxyServer):
        super().__init__(spec)
        self.inner = inner
        self.server: ProxyServer | None = None
        self._server_factory = server_factory
        self.capabilities = frozenset(inner.capabilities | {"proxy", "faults"})
        if hasattr(inner, "use_client_config"):   # HOST:PORT behind the proxy still takes client settings
            self.use_client_config = inner.use_client_config
        if hasattr(inner, "use_principals"):   # and the principals of the authorization cases
            self.use_principals = inner.use_principals

    @property
    def security(self):
        return getattr(self.inner, "security", None)

    def start(self) -> None:
        self.inner.start()
        try:
            self.server = self._server_factory(self.inner.bootstrap).start()
        except BaseException:
            self.inner.stop()
            raise

    def stop(self) -> None:
        try:
            if self.server is not None:
                self.server.stop()
                self.server = None
        finally:
            self.inner.stop()

    @property
    def bootstrap(self) -> str:
        if self.server is None:
            raise RuntimeError(f"target {self.spec!r} is not started")
        return self.server.bootstrap

    @property
    def version(self) -> str | None:
        return self.inner.version

    def info(self) -> TargetInfo:
        inner = self.inner.info()
        return TargetInfo(kind=f"{PREFIX}{inner.kind}", spec=self.spec, version=inner.version,
                          bootstrap=self.bootstrap if self.server else None,
                          extra={**inner.extra, "upstream": inner.bootstrap})

    def restart(self) -> None:
        self.inner.restart()
        if self.server is not None:
            self.server.drop_connections()

    def heal(self) -> None:
        """After a case: faults it added and did not use are removed, held responses let go."""
        if self.server is not None:
            self.server.fault("clear")
            self.server.fault("release")
        heal = getattr(self.inner, "heal", None)
        if heal is not None:
            heal()

    def logs(self) -> str | None:
        return self.inner.logs()

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
        local_host, local_port = self.server.local_address(host.strip("[]"), int(port))
        return f"{local_host}:{local_port}", security

    def kafka_principal(self, name: str) -> str | None:
        return self.inner.kafka_principal(name)

    def __getattr__(self, name):
        # Anything else a case or test asks of the target (pid, tracked requests, ...) is the inner one's.
        if name in ("inner", "server"):
            raise AttributeError(name)
        return getattr(self.inner, name)


def parse(spec: str) -> str | None:
    """The inner spec of ``proxy+INNER``, or None."""
    return spec[len(PREFIX):] if spec.startswith(PREFIX) and len(spec) > len(PREFIX) else None


def proxy_target_kind(inner_kinds: Callable[[], Iterable[TargetKind]]) -> TargetKind:
    """The ``proxy+`` kind over the target kinds ``inner_kinds()`` returns (resolved when a spec is built)."""

    def create(spec: str) -> Target:
        inner = parse(spec)
        if inner is None:
            raise ValueError(f"not a proxy+SPEC target: {spec!r}")
        return ProxiedTarget(spec, resolve(inner, inner_kinds()))

    return TargetKind(
        name="proxy",
        description="proxy+SPEC: the fault proxy in front of any other target (proxy+kafka, proxy+HOST:PORT)",
        matches=lambda spec: parse(spec) is not None,
        create=create,
        availability=lambda: None,
    )
