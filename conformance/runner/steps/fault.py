"""The ``fault`` step: ask the target for a fault (``restart``, a named fault with ``args``), or drop the
harness's connections (``disconnect``). A target without the capability skips the case.
"""

from __future__ import annotations

from ...suite import expressions
from ...suite.kinds import Fault, StepKind, detail_from
from ...targets.base import CapabilityMissing
from ..context import Context, Skip


def fault_step(context: Context, step: dict, index: str, name: str) -> None:
    fault = expressions.resolve(step["fault"], context.variables)
    name, arguments = (fault, {}) if isinstance(fault, str) else (fault["name"], dict(fault.get("args") or {}))
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
    """The fault asked for, as written: ``fault: NAME`` or ``fault: {name: NAME, args: {...}}``."""
    fault = step["fault"]
    if isinstance(fault, dict):
        return (Fault(fault.get("name"), fault.get("args") or {}),)
    return (Fault(fault),)


# a fault is rough on the target by definition: it is checked to still answer after the case
KIND = StepKind("fault", fault_step, describe=detail_from("fault"), faults=faults, rough=lambda step: True)
