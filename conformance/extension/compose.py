"""``proxy+SPEC``, ``emulate:DRAFT+SPEC`` and ``perturb:NAME@API:VERSION+SPEC`` around every registered target
kind, a plugin's included.

All are wrappers, not kinds of their own: whatever SPEC names is resolved, when the target is built,
among all the kinds of the run (the wrappers too, so ``proxy+emulate:kip1309+kafka`` works). The
list's order is the one ``conformance targets`` has always shown: ``emulate`` first, the registered
kinds, ``proxy`` and ``perturb`` last; only ``HOST:PORT``, marked fallback, is tried after every other kind.
"""

from __future__ import annotations

from typing import Any, Callable

from ..protocol.codec import Codec
from ..targets.emulated import emulate_target_kind
from ..targets.perturbed import perturb_target_kind
from ..targets.proxied import proxy_target_kind
from ..targets.registry import TargetKind


def composed_target_kinds(registered: list[TargetKind], emulations: Callable[[], dict[str, Any]],
                          codec: Callable[[], Codec]) -> list[TargetKind]:
    """The run's target kinds: ``registered`` with the two wrappers around all of them."""
    kinds: list[TargetKind] = []

    def every_kind() -> list[TargetKind]:  # read when a spec is resolved: the list is complete by then
        return kinds

    kinds.extend([emulate_target_kind(every_kind, emulations, codec), *registered, proxy_target_kind(every_kind),
                  perturb_target_kind(every_kind)])
    return kinds
