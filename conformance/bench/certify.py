"""Benchmark: ``conformance certify --target SPEC`` complete (companions beside it) against the one node alone.

``python -m conformance.bench.certify [SPEC ...] [--semantic-duration S]`` certifies each spec twice, one after
the other: with ``--no-companions`` (the one node: the cluster, proxy and exactly-once levels cannot be reached)
and complete (the three-node cluster, the fault proxy, the exactly-once tier and the long cases beside it). It
prints each wall time, their ratio, the levels each reached, and the critical path of the complete one (the main
run and each lane of companions, the one that ended last first), so the goal (every level but the previews
reached, under ten minutes) is read off one run. ``--complete-only`` certifies complete only; ``--keep DIR`` keeps
the certifications and every run's results there (each item's time: where the critical path's went).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 600.0


def certify(spec: str, out: Path, *extra: str) -> tuple[float, dict, dict]:
    """One ``conformance certify`` in a process of its own, as a person runs it: its wall time, level labels and
    certification.json (its companions and main run, each with its time: which of them is the critical path)."""
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "conformance.cli", "certify", "--target", spec, "-o", str(out), *extra],
                   check=False, stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - began
    facts = json.loads(next(out.glob("*/certification.json")).read_text(encoding="utf-8"))
    return seconds, {level["name"]: level["label"] for level in facts["levels"]}, facts


def critical_path(facts: dict) -> list[str]:
    """The chains a certification ran side by side (the main run; each lane of companions, one after another), each
    with when it ended, the one that ended last first: the critical path, then what ran beside it."""
    chains = []
    main = facts.get("main_run")
    if main:
        chains.append((float(main["seconds"]), f"main run on {main['spec']}: {main['seconds']:.0f} s"))
    for lane in sorted({companion.get("lane", 0) for companion in facts.get("companions", [])}):
        steps = sorted((companion for companion in facts["companions"] if companion.get("lane", 0) == lane),
                       key=lambda companion: companion.get("started_s", 0.0))
        end = max(companion.get("started_s", 0.0) + companion["seconds"] for companion in steps)
        chains.append((end, f"companions' lane {lane}: " + " -> ".join(
            f"{companion['name']} {companion['seconds']:.0f} s" for companion in steps) + f", ended at {end:.0f} s"))
    chains.sort(key=lambda chain: -chain[0])
    return [("critical path: " if index == 0 else "beside it:     ") + text for index, (_, text) in enumerate(chains)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.certify")
    parser.add_argument("specs", nargs="*", default=["kafka"])
    parser.add_argument("--semantic-duration", default="30", metavar="SECONDS")
    parser.add_argument("--complete-only", action="store_true", help="not the one node alone first")
    parser.add_argument("--keep", metavar="DIR", help="write the certifications and their results here, and keep them")
    arguments = parser.parse_args(argv)
    for spec in arguments.specs:
        with tempfile.TemporaryDirectory(prefix="bench-certify-") as temporary:
            folder = str(Path(arguments.keep) / spec.replace(":", "-").replace(",", "_")) if arguments.keep else temporary
            alone, alone_levels = (0.0, {}) if arguments.complete_only else \
                certify(spec, Path(folder) / "alone", "--no-companions")[:2]
            complete, complete_levels, facts = certify(spec, Path(folder) / "complete",
                                                       "--semantic-duration", arguments.semantic_duration)
        print(f"\n{spec}: one node alone {f'{alone:.0f} s' if alone else 'not run'}, complete {complete:.0f} s "
              f"({f'{complete / alone:.1f}x; ' if alone else ''}goal under {GOAL_S:.0f} s: "
              f"{'met' if complete < GOAL_S else 'NOT met'}; load average {os.getloadavg()[0]:.1f} at the end)")
        print(f"{'level':<45} {'alone':<22} complete")
        for name in complete_levels:
            print(f"{name:<45} {alone_levels.get(name, ''):<22} {complete_levels[name]}")
        for companion in facts.get("companions", []):  # beside the main run, in two lanes (cli/certify_complete.py)
            print(f"companion {companion['name']} on {companion['spec']}: {companion['items']} items in "
                  f"{companion['seconds']:.0f} s{' — ' + companion['problem'] if companion['problem'] else ''}")
        for line in critical_path(facts):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
