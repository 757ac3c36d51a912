"""Benchmark: the time to a verdict against its floor, serial and concurrent, per target.

``python -m conformance.bench.suite [--target kafka --target rdkafka-mock] [--workers N] [--drafts] [PATHS]``
starts each target once and runs every item three ways: one at a time; ``--workers`` at a time with the
serial items after the others; and ``--workers`` at a time with the serial items beside them on a second
target of the same spec (what ``conformance run`` does where the harness provisions the target). Each wall
time, the target's start included, is compared with the critical path: the start plus the longest item,
which no scheduling can beat. It also counts the items whose outcome differs from the serial run. Machines
are noisy, so the ratios measured in one run are the numbers to compare, not the seconds.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from .. import resources
from ..targets.base import Capability
from ..targets.registry import resolve
from ..extension import Extensions
from ..suite.loader import load_suites
from ..runner.parallel import DEFAULT_JOBS, RunAhead, items_of
from ..runner.runner import Runner


def main(argv: list[str] | None = None) -> int:
    """Run the bundled suites on each target at each worker count and print how long each took; the exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.suite", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[str(resources.suites())])
    parser.add_argument("--target", action="append", help="repeatable (default: kafka and rdkafka-mock)")
    parser.add_argument("--workers", type=int, default=DEFAULT_JOBS, help=f"default: {DEFAULT_JOBS}, as conformance run")
    parser.add_argument("--drafts", action="store_true", help="include draft-KIP cases (skipped by default, as in a run)")
    parser.add_argument("--long", action="store_true", help="include cases tagged long (skipped by default, as in a run)")
    arguments = parser.parse_args(argv)

    extensions = Extensions.for_run()  # a benchmark is a run of its own: its own plugin manager
    parts = extensions.components()
    suites, errors = load_suites(arguments.paths, components=parts)
    for error in errors:
        print(error)
    cases = [case for suite in suites for case in suite.cases
             if (arguments.drafts or not case.draft) and (arguments.long or not case.long)]
    for spec in arguments.target or ["kafka", "rdkafka-mock"]:
        measure(spec, lambda spec=spec: resolve(spec, extensions.target_kinds()), cases, parts, arguments.workers)
    return 0


def measure(spec: str, make_target, cases, parts, workers: int) -> None:
    """Start a target of ``spec``, run ``cases`` on it with ``workers`` items at a time, and print the time taken by
    start, run and stop."""
    target = make_target()
    began = time.monotonic()
    target.start()
    start_s = time.monotonic() - began
    print(f"{spec}: ready in {start_s:.1f} s at {target.bootstrap}")

    def twin():
        """Started before its mode's clock starts, as a run starts it beside the target (whose start is
        ``start_s``)."""
        other = make_target()
        other.start()
        return lambda: (Runner(other, run_id="bench-twin", components=parts), other.stop)

    modes = [("serial", 1, None), (f"{workers} at a time", workers, None)]
    if Capability.TWIN in target.capabilities:
        modes.append((f"{workers} + twin", workers, twin))
    try:
        runs = {}
        for number, (label, count, start_twin) in enumerate(modes):
            # names are made from the run id: each mode gets topics and transactional ids of its own
            runner = Runner(target, run_id=f"bench{number}{count:03d}", components=parts)
            items = items_of(runner, cases)
            twin_factory = start_twin() if start_twin is not None else None
            begin = time.monotonic()
            ahead = RunAhead(runner, items, count, twin=twin_factory)
            try:
                results = [ahead.result(case, version) for case, version in items]
            finally:
                ahead.close()
            runs[label] = (time.monotonic() - begin, results)
            runner.close()
        longest = max(result.duration_s for _, results in runs.values() for result in results)
        floor = start_s + longest
        print(f"  critical path: {floor:.1f} s (start {start_s:.1f} s + longest item {longest:.1f} s)")
        serial_wall, serial = runs["serial"]
        for label, (wall, results) in runs.items():
            outcomes = dict(Counter(result.outcome.value for result in results))
            differing = [f"{a.suite_id}::{a.case_id} v{a.version}: {a.outcome.value} / {b.outcome.value}"
                         for a, b in zip(serial, results) if a.outcome is not b.outcome]
            print(f"  {label:>16}: {start_s + wall:7.1f} s for {len(results)} items, "
                  f"{(start_s + wall) / floor:5.2f}x the critical path, "
                  f"{(start_s + serial_wall) / (start_s + wall):4.2f}x faster than serial, "
                  f"{len(differing)} items with another outcome  {outcomes}")
            for line in differing[:10]:
                print(f"    {line}")
    finally:
        target.stop()


if __name__ == "__main__":
    raise SystemExit(main())
