"""Benchmark: the bundled suites against one provisioned target, one item at a time and concurrently.

``python -m conformance.suite.bench [--target kafka] [--workers 4] [--drafts] [PATHS]`` starts the target once,
runs every item sequentially and then with a thread pool, and prints both wall times and their
ratio. Machines are noisy, so the ratio measured in one run is the number to compare, not the
seconds.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from .. import resources
from ..targets.registry import resolve
from ..extension import Extensions
from .loader import load_suites
from .parallel import items_of, run_items
from .runner import Runner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.suite.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[str(resources.suites())])
    parser.add_argument("--target", default="kafka")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--drafts", action="store_true", help="include draft-KIP cases (skipped by default, as in a run)")
    arguments = parser.parse_args(argv)

    extensions = Extensions.for_run()  # a benchmark is a run of its own: its own plugin manager
    parts = extensions.components()
    suites, errors = load_suites(arguments.paths, components=parts)
    for error in errors:
        print(error)
    target = resolve(arguments.target, extensions.target_kinds())
    started = time.monotonic()
    target.start()
    print(f"{arguments.target} ready in {time.monotonic() - started:.1f} s at {target.bootstrap}")
    try:
        rows = []
        for label, workers in (("sequential", 1), (f"{arguments.workers} workers", arguments.workers)):
            runner = Runner(target, run_id=f"bench{workers:03d}", components=parts)
            items = items_of(runner, [case for suite in suites for case in suite.cases
                                      if arguments.drafts or not case.draft])
            begin = time.monotonic()
            results = run_items(runner, items, workers)
            elapsed = time.monotonic() - begin
            runner.close()
            outcomes = Counter(result.outcome.value for result in results)
            rows.append((label, elapsed, len(items), dict(outcomes)))
            for result in [r for r in results if r.outcome.value not in ("passed", "unsupported")][:10]:
                print(f"  {label}: {result.outcome.value} {result.suite_id}::{result.case_id} v{result.version}: "
                      f"{result.message[:200]}")
        for label, elapsed, count, outcomes in rows:
            print(f"{label:>12}: {elapsed:6.1f} s for {count} items  {outcomes}")
        print(f"speed-up: {rows[0][1] / rows[1][1]:.2f}x")
    finally:
        target.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
