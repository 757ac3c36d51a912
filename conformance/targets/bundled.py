"""The harness's own target kinds, registered through the same hook a third-party plugin uses."""

from __future__ import annotations

from conformance.hookspecs import hookimpl

from .container import container_target_kind
from .hostport import hostport_target_kind
from .kafka import kafka_target_kind
from .kafka_cluster import kafka_cluster_target_kind
from .proxied import proxy_target_kind
from .rdkafka_mock import rdkafka_mock_target_kind
from .tansu import tansu_target_kind


@hookimpl
def conformance_target_kinds():
    # HOST:PORT is marked fallback, so registry.resolve tries it last whatever this order is.
    return [
        kafka_target_kind(),
        kafka_cluster_target_kind(),
        tansu_target_kind(),
        rdkafka_mock_target_kind(),
        container_target_kind(),
        hostport_target_kind(),
        proxy_target_kind(conformance_target_kinds),  # proxy+SPEC wraps any kind listed here
    ]
