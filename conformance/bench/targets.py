"""Benchmark: start-up and stop times of every target kind that can run here.

``python -m conformance.bench.targets [SPEC ...] [--repeat N]`` starts each target N times (jars and
binaries are resolved before timing) and prints the median time until it serves requests.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ..extension import Extensions
from ..targets.registry import resolve

DEFAULT_SPECS = ["kafka", "kafka:3.9.1", "kafka,nodes=3", "tansu", "rdkafka-mock"]


def main(argv: list[str] | None = None) -> int:
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
        warm = resolve(spec, kinds)  # first start resolves jars or binaries; not timed
        warm.start()
        warm.stop()
        starts, stops = [], []
        for _ in range(arguments.repeat):
            target = resolve(spec, kinds)
            began = time.monotonic()
            target.start()
            starts.append(time.monotonic() - began)
            began = time.monotonic()
            target.stop()
            stops.append(time.monotonic() - began)
        print(f"{spec:<16} {statistics.median(starts):>14.2f}s {min(starts):>7.2f}s {max(starts):>7.2f}s "
              f"{statistics.median(stops):>7.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
