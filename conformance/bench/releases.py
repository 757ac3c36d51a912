"""Benchmark: how long the release matrix (``conformance releases``) takes on this machine.

``python -m conformance.bench.releases [--releases 3.3.2,3.9.2,4.4.0] [--jobs N]`` runs the default suites
once per release named (each a ``conformance run`` of its own, as the matrix runs them, jars fetched first
and outside the clock), prints each run's wall time beside the pinned release's (the ratio says what a
release costs against the run people know), and extrapolates the whole matrix: the releases measured
count as measured, every other release of the matrix at the median of the measured ones. The default
measures three releases (the oldest line, the last 3.x and the pinned one), not the whole matrix, so that
a loaded machine gives a number in minutes; ``--releases matrix`` measures every release.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ..resources import UPSTREAM_KAFKA
from ..targets.kafka import releases as kafka_releases

DEFAULT_SAMPLE = "3.3.2,3.9.2," + UPSTREAM_KAFKA


def run_release(release: str, results: Path, jobs: int | None) -> tuple[float, Counter]:
    """One ``conformance run`` of the default suites on ``kafka:RELEASE``: wall seconds and outcomes."""
    command = [sys.executable, "-m", "conformance.cli", "run", "--target", f"kafka:{release}", "--alluredir", "",
               "--results", str(results)] + (["--jobs", str(jobs)] if jobs else [])
    began = time.monotonic()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    seconds = time.monotonic() - began
    outcomes = Counter(json.loads(line)["outcome"] for line in results.read_text(encoding="utf-8").splitlines()
                       if f'"kafka:{release}"' in line) if results.exists() else Counter()
    return seconds, outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.releases")
    parser.add_argument("--releases", default=DEFAULT_SAMPLE, help=f"releases to measure (default {DEFAULT_SAMPLE})")
    parser.add_argument("--jobs", type=int, default=None, help="conformance run --jobs (default: its own)")
    arguments = parser.parse_args(argv)
    measured_releases = kafka_releases.parse_releases(arguments.releases)
    if UPSTREAM_KAFKA not in measured_releases:
        measured_releases.append(UPSTREAM_KAFKA)  # the reference every ratio is against
    for release in measured_releases:  # outside the clock, as a second matrix run finds them cached
        problem = kafka_releases.fetch(release)
        if problem:
            print(f"kafka:{release}: {problem}")
            return 1
    seconds: dict[str, float] = {}
    outcomes: dict[str, Counter] = {}
    print(f"{'release':<10} {'wall s':>8} {'x ' + UPSTREAM_KAFKA:>10}  outcomes")
    with tempfile.TemporaryDirectory(prefix="bench-releases-") as folder:
        for release in measured_releases:
            seconds[release], outcomes[release] = run_release(release, Path(folder) / f"{release}.jsonl", arguments.jobs)
        for release in measured_releases:
            counts = ", ".join(f"{count} {name}" for name, count in sorted(outcomes[release].items()))
            print(f"{release:<10} {seconds[release]:>8.1f} {seconds[release] / seconds[UPSTREAM_KAFKA]:>10.2f}  {counts}")
    matrix = list(kafka_releases.matrix())
    typical = statistics.median(seconds.values())
    estimate = sum(seconds.get(release, typical) for release in matrix)
    unmeasured = [release for release in matrix if release not in seconds]
    print(f"matrix: {len(matrix)} releases; measured {len(matrix) - len(unmeasured)}, the other {len(unmeasured)} "
          f"at the median {typical:.1f} s: about {estimate / 60:.1f} min "
          f"({estimate / seconds[UPSTREAM_KAFKA]:.1f}x one run on {UPSTREAM_KAFKA})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
