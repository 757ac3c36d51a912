"""``perturb:NAME@API:VERSION+SPEC``: any target behind the proxy, one API at one version perturbed.

``perturb:close@EndTxn:3+kafka`` starts ``kafka`` behind the proxy, which closes the connection on every EndTxn
v3 instead of forwarding it (the perturbations: :mod:`conformance.proxy.perturb`). The attribution check runs
the items that send that API on it, beside a run on ``proxy+SPEC``, and asks whether the harness blamed what it
should. Everything a ``proxy+`` target offers (faults, restarts, principals) works the same.
"""

from __future__ import annotations

from typing import Iterable

from ..protocol.codec import default_codec
from ..proxy.perturb import Perturber, parse as parse_perturbation
from ..proxy.server import ProxyServer
from .base import TargetInfo
from .proxied import ProxiedTarget
from .registry import TargetKind, resolve

PREFIX = "perturb:"


class PerturbedTarget(ProxiedTarget):
    kind = "perturb"

    def __init__(self, spec: str, perturbation: str, inner):
        codec = default_codec()
        self.perturbation = parse_perturbation(perturbation, codec)
        perturber = Perturber(self.perturbation, codec)
        super().__init__(spec, inner, server_factory=lambda bootstrap, tls=None: ProxyServer(
            bootstrap, codec, interceptors=[perturber], tls=tls))

    def info(self) -> TargetInfo:
        info = super().info()
        return TargetInfo(kind=f"{PREFIX}{self.perturbation.spec}+{info.kind.removeprefix('proxy+')}", spec=info.spec,
                          version=info.version, bootstrap=info.bootstrap, name=info.name,
                          extra={**info.extra, "perturbed": self.perturbation.spec})


def parse(spec: str) -> tuple[str, str] | None:
    """``(perturbation, inner spec)`` of ``perturb:NAME@API:VERSION+INNER``, or None."""
    if not spec.startswith(PREFIX):
        return None
    perturbation, plus, inner = spec[len(PREFIX):].partition("+")
    return (perturbation, inner) if perturbation and plus and inner else None


def perturb_target_kind(inner_kinds) -> TargetKind:
    """The ``perturb:`` kind over the target kinds ``inner_kinds()`` returns (resolved when a spec is built)."""

    def create(spec: str) -> PerturbedTarget:
        parsed = parse(spec)
        if parsed is None:
            raise ValueError(f"not a perturb:NAME@API:VERSION+SPEC target: {spec!r}")
        perturbation, inner = parsed
        kinds: Iterable[TargetKind] = inner_kinds()
        return PerturbedTarget(spec, perturbation, resolve(inner, kinds))

    return TargetKind(
        name="perturb",
        description="perturb:NAME@API:VERSION+SPEC: SPEC behind the proxy with one API at one version perturbed, "
                    "for the attribution check (perturb:close@EndTxn:3+kafka; conformance attribution)",
        matches=lambda spec: parse(spec) is not None,
        create=create,
        availability=lambda: None,
    )
