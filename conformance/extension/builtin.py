"""The built-in plugin: the harness's own target kinds, step kinds, sinks and suites.

It uses only the public hooks, as a third party's plugin would, so what a plugin can do the harness
does the same way (a test unregisters it and finds none of them). The manager registers it first,
under the name ``builtin``; ``CONFORMANCE_DISABLE_PLUGINS=builtin`` leaves a harness with no targets.
"""

from __future__ import annotations

from pathlib import Path

from .. import resources
from ..report.sinks import AllureSink, JsonlSink
from ..runner.steps import BUILTIN_STEP_KINDS
from ..targets.container import ContainerTarget
from ..targets.hostport import HostPortTarget
from ..targets.kafka.broker import KafkaTarget
from ..targets.kafka.cluster import KafkaClusterTarget
from ..targets.rdkafka_mock import RdkafkaMockTarget
from ..targets.tansu import TansuTarget
from .hookspecs import hookimpl
from .registries import SinkRegistry, StepKindRegistry, TargetRegistry


@hookimpl
def conformance_register_targets(registry: TargetRegistry) -> None:
    # HOST:PORT is marked fallback, so it is tried last whatever this order is; proxy+ and emulate:
    # are put around these and every plugin's kinds by conformance.extension.compose.
    for target in (KafkaTarget, KafkaClusterTarget, TansuTarget, RdkafkaMockTarget, ContainerTarget, HostPortTarget):
        registry.add(target)


@hookimpl
def conformance_register_step_kinds(registry: StepKindRegistry) -> None:
    for kind in BUILTIN_STEP_KINDS.values():
        registry.add(kind)


@hookimpl(tryfirst=True)  # the results file has each line before a plugin's sink sees the result
def conformance_register_sinks(registry: SinkRegistry) -> None:
    registry.add("jsonl", JsonlSink)
    registry.add("allure", AllureSink.when_enabled)


@hookimpl
def conformance_suite_dirs() -> list[Path]:
    return [resources.suites()]
