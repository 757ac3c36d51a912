"""Benchmark: start-up and stop times of every target kind that can run here.

``python -m conformance.bench.targets [SPEC ...] [--repeat N]`` starts each target N times (jars and
binaries are resolved before timing) and prints the median time until it serves requests. Each Kafka spec
runs a second time without the class archive (``CONFORMANCE_CLASS_ARCHIVE=off``), and the ratio of the two
medians says what the archive saves on this machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from unittest import mock

from ..extension import Extensions
from ..targets.registry import resolve

DEFAULT_SPECS = ["kafka", "kafka:3.9.1", "kafka,nodes=3", "tansu", "rdkafka-mock"]


def main(argv: list[str] | None = None) -> int:
    """Start and stop each target spec given several times and print the median and range of both; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.targets")
    parser.add_argument("specs", nargs="*", default=DEFAULT_SPECS)
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args(argv)
    kinds = Extensions.for_run().target_kinds()
    print(f"{'target':<16} {'start (median)':>15} {'min':>8} {'max':>8} {'stop':>8}")
    for spec in arguments.specs:
        kind = next((kind for kind in kinds if kind.matches(spec)), None)
        reason = kind.availability() if kind else "unknown kind"
        if reason:
            print(f"{spec:<16} unavailable: {reason}")
            continue
        warm = resolve(spec, kinds)  # first start resolves jars or binaries (and writes Kafka's class archive)
        warm.start()
        warm.stop()
        starts, stops = timed(spec, kinds, arguments.repeat)
        row(spec, starts, stops)
        if spec.startswith("kafka"):
            with mock.patch.dict(os.environ, {"CONFORMANCE_CLASS_ARCHIVE": "off"}):
                cold, cold_stops = timed(spec, kinds, arguments.repeat)
            row("  no archive", cold, cold_stops)
            print(f"  the class archive: starts {statistics.median(cold) / statistics.median(starts):.2f}x as fast")
    return 0


def timed(spec, kinds, repeat: int) -> tuple[list[float], list[float]]:
    """``(start seconds, stop seconds)`` of ``repeat`` starts and stops of a target of ``spec``."""
    starts, stops = [], []
    for _ in range(repeat):
        target = resolve(spec, kinds)
        began = time.monotonic()
        target.start()
        starts.append(time.monotonic() - began)
        began = time.monotonic()
        target.stop()
        stops.append(time.monotonic() - began)
    return starts, stops


def row(name: str, starts: list[float], stops: list[float]) -> None:
    """Print one target's row: median, fastest and slowest start, and median stop."""
    print(f"{name:<16} {statistics.median(starts):>14.2f}s {min(starts):>7.2f}s {max(starts):>7.2f}s "
          f"{statistics.median(stops):>7.2f}s")


if __name__ == "__main__":
    raise SystemExit(main())
