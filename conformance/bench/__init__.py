"""Benchmarks of the harness's own machinery, one module each: ``python -m conformance.bench.NAME``.

The rules: this package is a top layer beside ``conformance.cli`` (the import contract in
pyproject.toml), so a benchmark may import any part of the harness it measures, the extension seam
included, and nothing below imports a benchmark. Each module has a ``main(argv)`` and prints ratios
measured side by side in one run; ``python -m conformance.bench NAME`` runs the same. The suite,
target, proxy and exactly-once benchmarks start brokers; the codec one needs the ``oracles`` extra,
the analysis one PySpark.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# module name -> what it measures
BENCHMARKS = {
    "attribution": "the attribution check's matrix: its size, a seeded sample's perturbations x items held, the whole matrix's time",
    "analysis": "the Spark jobs and the capture decode on a corpus grown from real results",
    "capture": "decoding pcaps, against tshark",
    "certify": "conformance certify --target kafka complete (cluster, proxy, exactly-once tier beside it) against one node",
    "crash": "a broker that crashes on an unknown API key: the default run's time and verdicts against no crash and one at a time",
    "codec": "this codec against kio and kafka-python, encoding and decoding",
    "explore": "exploration's answers judged per second (and the model alone), and the time to the first departure on Kafka 3.5.2",
    "epochs": "the fast_forward step's re-initialisations per second, one at a time and pipelined, and the end of the space",
    "releases": "the release matrix: a run of the default suites per Apache Kafka release, measured on a subset and extrapolated",
    "proxy": "per exchange: the harness's client and the proxy against a bare socket",
    "semantic": "the exactly-once tier's transactions per second against confluent-kafka alone",
    "site": "conformance analyze site on 100 runs of six targets grown from real results, on local[2]",
    "suite": "the bundled suites serial and concurrent, against the critical path",
    "targets": "how long every target takes to start and stop",
}


def timed(action: Callable[[], T], digits: int | None = None) -> tuple[float, T]:
    """``(seconds, value)`` of calling ``action``; the seconds rounded to ``digits`` where given."""
    started = time.perf_counter()
    value = action()
    seconds = time.perf_counter() - started
    return (seconds if digits is None else round(seconds, digits)), value
