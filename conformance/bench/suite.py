"""Benchmark: the time to a verdict against its floor, serial and concurrent, per target.

``python -m conformance.bench.suite [--target kafka --target rdkafka-mock] [--workers N] [--drafts] [PATHS]``
starts each target once, runs every item one at a time and then ``--workers`` at a time (what
``conformance run --jobs`` does), and compares each wall time, the target's start included, with the
critical path: the start plus the longest item, which no scheduling can beat. It also counts the items whose
outcome differs between the two runs. Machines are noisy, so the ratios measured in one run are the numbers
to compare, not the seconds.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from .. import resources
from ..targets.registry import resolve
from ..extension import Extensions
from ..suite.loader import load_suites
from ..runner.parallel import DEFAULT_JOBS, items_of, run_items
from ..runner.runner import Runner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.suite", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[str(resources.suites())])
    parser.add_argument("--target", action="append", help="repeatable (default: kafka and rdkafka-mock)")
    parser.add_argument("--workers", type=int, default=DEFAULT_JOBS, help=f"default: {DEFAULT_JOBS}, as conformance run")
    parser.add_argument("--drafts", action="store_true", help="include draft-KIP cases (skipped by default, as in a run)")
    arguments = parser.parse_args(argv)

    extensions = Extensions.for_run()  # a benchmark is a run of its own: its own plugin manager
    parts = extensions.components()
    suites, errors = load_suites(arguments.paths, components=parts)
    for error in errors:
        print(error)
    cases = [case for suite in suites for case in suite.cases if arguments.drafts or not case.draft]
    for spec in arguments.target or ["kafka", "rdkafka-mock"]:
        measure(spec, resolve(spec, extensions.target_kinds()), cases, parts, arguments.workers)
    return 0


def measure(spec: str, target, cases, parts, workers: int) -> None:
    began = time.monotonic()
    target.start()
    start_s = time.monotonic() - began
    print(f"{spec}: ready in {start_s:.1f} s at {target.bootstrap}")
    try:
        runs = {}
        for label, count in (("serial", 1), (f"{workers} at a time", workers)):
            runner = Runner(target, run_id=f"bench{count:03d}", components=parts)
            items = items_of(runner, cases)
            begin = time.monotonic()
            results = run_items(runner, items, count)
            runs[label] = (time.monotonic() - begin, results)
            runner.close()
        longest = max(result.duration_s for _, results in runs.values() for result in results)
        floor = start_s + longest
        print(f"  critical path: {floor:.1f} s (start {start_s:.1f} s + longest item {longest:.1f} s)")
        for label, (wall, results) in runs.items():
            outcomes = dict(Counter(result.outcome.value for result in results))
            print(f"  {label:>14}: {start_s + wall:7.1f} s for {len(results)} items, "
                  f"{(start_s + wall) / floor:5.2f}x the critical path  {outcomes}")
        (serial_wall, serial), (concurrent_wall, concurrent) = runs.values()
        differing = [f"{a.suite_id}::{a.case_id} v{a.version}: {a.outcome.value} / {b.outcome.value}"
                     for a, b in zip(serial, concurrent) if a.outcome is not b.outcome]
        print(f"  concurrent vs serial: {(start_s + serial_wall) / (start_s + concurrent_wall):.2f}x faster; "
              f"{len(differing)} items with another outcome")
        for line in differing[:10]:
            print(f"    {line}")
    finally:
        target.stop()


if __name__ == "__main__":
    raise SystemExit(main())
