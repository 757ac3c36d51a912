"""The built-in plugin: the harness's own target kinds, step kinds, outputs and suites.

It uses only the public hooks, as a third party's plugin would, so what a plugin can do the harness
does the same way (a test unregisters it and finds none of them). The manager registers it first,
under the name ``builtin``; ``CONFORMANCE_DISABLE_PLUGINS=builtin`` leaves a harness with no targets.
Each hook imports what it registers: pytest asks for the outputs' options of every session, the
harness's own unit tests included, and those need neither the targets nor the step kinds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .hookspecs import hookimpl

if TYPE_CHECKING:
    from .registries import OutputRegistry, StepKindRegistry, TargetRegistry


@hookimpl
def conformance_register_targets(registry: TargetRegistry) -> None:
    from ..targets.command import CommandTarget
    from ..targets.container import ContainerTarget
    from ..targets.hostport import HostPortTarget
    from ..targets.kafka.broker import KafkaTarget
    from ..targets.kafka.cluster_target import KafkaClusterTarget
    from ..targets.rdkafka_mock import RdkafkaMockTarget
    from ..targets.tansu import TansuTarget

    # HOST:PORT is marked fallback, so it is tried last whatever this order is; proxy+ and emulate:
    # are put around these and every plugin's kinds by conformance.extension.compose.
    for target in (KafkaTarget, KafkaClusterTarget, TansuTarget, RdkafkaMockTarget, CommandTarget, ContainerTarget,
                   HostPortTarget):
        registry.add(target)


@hookimpl
def conformance_register_step_kinds(registry: StepKindRegistry) -> None:
    from ..runner.steps import BUILTIN_STEP_KINDS

    for kind in BUILTIN_STEP_KINDS.values():
        registry.add(kind)


@hookimpl(tryfirst=True)  # the results file has each line before a plugin's output sees the result
def conformance_register_outputs(registry: OutputRegistry) -> None:
    from ..report.junit import JunitOutput
    from ..report.sarif import SarifOutput
    from ..report.sinks import AllureSink, JsonlSink

    for output in (JsonlSink, AllureSink, JunitOutput, SarifOutput):
        registry.add(output)


@hookimpl
def conformance_suite_dirs() -> list[Path]:
    from .. import resources

    return [resources.suites()]
