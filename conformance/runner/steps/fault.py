"""The ``fault`` step: ask the target for a fault (``restart``, a named fault with ``args``), or drop the
harness's connections (``disconnect``). A target without the capability skips the case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...suite import expressions
from ...suite.kinds import Fault, StepKind, detail_from
from ...targets.base import CapabilityMissing
from ..context import Context, Skip


@dataclass(frozen=True)
class FaultArguments:
    """``fault: NAME`` or ``fault: {name: NAME, args: {...}}``, parsed at load; expressions stay as written."""

    name: Any
    args: Mapping = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def parse(cls, step: Mapping) -> "FaultArguments":
        fault = step["fault"]  # its shape is the schema's to check
        if not isinstance(fault, Mapping):
            return cls(fault)
        return cls(fault.get("name"), MappingProxyType(dict(fault.get("args") or {})))


def fault_step(context: Context, step: dict, index: str, name: str) -> None:
    fault: FaultArguments = KIND.parsed(step)
    name = expressions.resolve(fault.name, context.variables)
    arguments = dict(expressions.resolve(dict(fault.args), context.variables))
    try:
        if name == "restart":
            context.restart_target()
        elif name != "disconnect" and context.shared_fault is not None:  # made once for the versions sharing it
            context.shared_fault.fault(name, arguments)
        elif name != "disconnect":
            context.target.fault(name, **arguments)
        context.cluster.close()  # connections to a node a fault took down are dead: reopen on demand
    except CapabilityMissing as error:
        raise Skip(str(error)) from None


def faults(step) -> tuple[Fault, ...]:
    """The fault asked for, as written."""
    fault: FaultArguments = KIND.parsed(step)
    return (Fault(fault.name, fault.args),)


# a fault is rough on the target by definition: it is checked to still answer after the case
KIND = StepKind("fault", fault_step, describe=detail_from("fault"), parse=FaultArguments.parse, faults=faults,
                rough=lambda step: True)
