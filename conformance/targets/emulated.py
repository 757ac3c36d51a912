"""``emulate:DRAFT+SPEC``: a draft KIP emulated by the proxy in front of any other target.

``emulate:kip1309+kafka`` starts ``kafka`` and puts the proxy in front of it with the interceptor the
draft's plugin registers (the ``conformance_register_emulations`` hook: ``registry.add(name, factory)``,
``factory(target) -> Interceptor``).
Everything a ``proxy+`` target offers (faults, restarts, principals) works the same.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ..protocol.codec import Codec
from ..proxy.server import ProxyServer
from .base import Capability, TargetInfo
from .proxied import ProxiedTarget
from .registry import TargetKind, resolve

PREFIX = "emulate:"


class EmulatedTarget(ProxiedTarget):
    kind = "emulate"

    def __init__(self, spec: str, draft: str, inner, factory: Callable, codec: Callable[[], Codec]):
        super().__init__(spec, inner, server_factory=self._server)
        self.draft = draft
        self.capabilities = frozenset(self.capabilities | {Capability.EMULATE})
        self._factory, self._codec = factory, codec
        self.emulation = None

    def _server(self, bootstrap: str, tls=None) -> ProxyServer:
        # The codec must know the draft's messages (the plugin's spec overlays), or the proxy could not read them.
        emulation = self.emulation = self._factory(self)
        return ProxyServer(bootstrap, self._codec(), interceptors=[emulation], tls=tls)

    def stop(self) -> None:
        try:
            close = getattr(self.emulation, "close", None)
            if close is not None:
                close()
            self.emulation = None
        finally:
            super().stop()

    def info(self) -> TargetInfo:
        info = super().info()
        inner_kind = info.kind.removeprefix("proxy+")
        return TargetInfo(kind=f"{PREFIX}{self.draft}+{inner_kind}", spec=info.spec, version=info.version,
                          bootstrap=info.bootstrap, name=info.name, extra={**info.extra, "emulates": self.draft})


def parse(spec: str) -> tuple[str, str] | None:
    """``(draft, inner spec)`` of ``emulate:DRAFT+INNER``, or None."""
    if not spec.startswith(PREFIX):
        return None
    draft, plus, inner = spec[len(PREFIX):].partition("+")
    return (draft, inner) if draft and plus and inner else None


def emulate_target_kind(inner_kinds: Callable[[], Iterable[TargetKind]], emulations: Callable[[], dict],
                        codec: Callable[[], Codec]) -> TargetKind:
    """The ``emulate:`` kind; ``emulations()`` and ``codec()`` come from the run's plugins (conformance.extension)."""

    def create(spec: str):
        parsed = parse(spec)
        if parsed is None:
            raise ValueError(f"not an emulate:DRAFT+SPEC target: {spec!r}")
        draft, inner = parsed
        known = emulations()
        if draft not in known:
            names = ", ".join(sorted(known)) or "none: install a draft KIP's plugin"
            raise ValueError(f"no emulation named {draft!r} (known: {names})")
        return EmulatedTarget(spec, draft, resolve(inner, inner_kinds()), known[draft], codec)

    return TargetKind(
        name="emulate",
        description="emulate:DRAFT+SPEC: a draft KIP's plugin emulating it in a proxy in front of SPEC "
                    "(emulate:kip1309+kafka)",
        matches=lambda spec: parse(spec) is not None,
        create=create,
        availability=lambda: None,
    )
