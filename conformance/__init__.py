"""kafka-conformance: a conformance harness for Apache Kafka's transaction protocol.

The names in ``__all__`` are the package's public API, for plugin authors: ``from conformance import hookimpl,
Target, TargetKind``. They stay where they are across releases; every other module is the harness's own and may
move. They are imported when first asked for, so ``import conformance`` stays cheap (the command line and pytest
import it before they know what a run needs).

PYTEST_DONT_REWRITE: ``conformance run`` imports this package before it starts pytest, which then finds
it among its plugins' packages (entry point ``pytest11``) and would warn that it cannot rewrite it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> (module, attribute); None: the module itself
_PUBLIC: dict[str, tuple[str, str | None]] = {
    # the plugin seam: hook implementations, and the typed calls of a run's plugins
    "hookimpl": ("conformance.extension", "hookimpl"),
    "Extensions": ("conformance.extension", "Extensions"),
    # targets: the interface, what one can do, its kind's registration, the life of a broker run as a local process,
    # and finding the target of a spec
    "Target": ("conformance.targets.base", "Target"),
    "TargetInfo": ("conformance.targets.base", "TargetInfo"),
    "Capability": ("conformance.targets.base", "Capability"),
    "CapabilityMissing": ("conformance.targets.base", "CapabilityMissing"),
    "TargetUnavailable": ("conformance.targets.base", "TargetUnavailable"),
    "TargetRefused": ("conformance.targets.base", "TargetRefused"),
    "TargetKind": ("conformance.targets.registry", "TargetKind"),
    "ProcessTarget": ("conformance.targets.process", "ProcessTarget"),
    "resolve_target": ("conformance.targets.registry", "resolve"),
    # step kinds: the contract, what the loader tells a check, and how a step departs or skips
    "StepKind": ("conformance.suite.kinds", "StepKind"),
    "Facts": ("conformance.suite.kinds", "Facts"),
    "Request": ("conformance.suite.kinds", "Request"),
    "Fault": ("conformance.suite.kinds", "Fault"),
    "Departure": ("conformance.runner.context", "Departure"),
    "Skip": ("conformance.runner.context", "Skip"),
    "StepRole": ("conformance.results.record", "StepRole"),
    # the raw client: a connection to a cluster, and how it authenticates
    "Cluster": ("conformance.client.cluster", "Cluster"),
    "Security": ("conformance.client.security", "Security"),
    # emulating a draft KIP in the proxy: the base class and the actions an interceptor answers with
    "Emulation": ("conformance.proxy.emulation", "Emulation"),
    "interceptor": ("conformance.proxy.interceptor", None),
    # record batches (encode and decode), for requests that carry records
    "records": ("conformance.protocol.records", None),
    # outputs: where a run's results go, with their options (conformance_register_outputs)
    "Output": ("conformance.report.sinks", "Output"),
    "FileOutput": ("conformance.report.sinks", "FileOutput"),
    "OutputOption": ("conformance.report.sinks", "OutputOption"),
    "ci_result": ("conformance.report.ci", "ci_result"),
    # results, as sinks receive them and the results file holds them
    "CaseResult": ("conformance.suite.model", "CaseResult"),
    "ResultRecord": ("conformance.results.record", "ResultRecord"),
    "Outcome": ("conformance.results.record", "Outcome"),
    "Requirement": ("conformance.results.record", "Requirement"),
}

# Written out for linters and type checkers; the same names as _PUBLIC (tests/project/test_public_api.py).
__all__ = [
    "__version__", "hookimpl", "Extensions", "Target", "TargetInfo", "Capability", "CapabilityMissing",
    "TargetUnavailable", "TargetRefused", "TargetKind", "ProcessTarget", "resolve_target", "StepKind", "Facts",
    "Request", "Fault", "Departure", "Skip", "StepRole", "Cluster", "Security", "Emulation", "interceptor", "records",
    "Output", "FileOutput", "OutputOption", "ci_result", "CaseResult", "ResultRecord", "Outcome", "Requirement",
]

if TYPE_CHECKING:  # what a type checker and an editor see; at run time __getattr__ imports on first use
    from .client.cluster import Cluster
    from .client.security import Security
    from .extension import Extensions, hookimpl
    from .protocol import records
    from .proxy import interceptor
    from .proxy.emulation import Emulation
    from .report.ci import ci_result
    from .report.sinks import FileOutput, Output, OutputOption
    from .results.record import Outcome, Requirement, ResultRecord, StepRole
    from .runner.context import Departure, Skip
    from .suite.kinds import Facts, Fault, Request, StepKind
    from .suite.model import CaseResult
    from .targets.base import (Capability, CapabilityMissing, Target, TargetInfo, TargetRefused,
                               TargetUnavailable)
    from .targets.process import ProcessTarget
    from .targets.registry import TargetKind
    from .targets.registry import resolve as resolve_target


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    module, attribute = _PUBLIC[name]
    found = importlib.import_module(module)
    value = found if attribute is None else getattr(found, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
