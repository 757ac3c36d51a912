"""Benchmark: ``conformance certify --target SPEC`` complete (companions beside it) against the one node alone.

``python -m conformance.bench.certify [SPEC ...] [--semantic-duration S]`` certifies each spec twice, one after
the other: with ``--no-companions`` (the one node: the cluster, proxy and exactly-once levels cannot be reached)
and complete (the three-node cluster, the fault proxy, the exactly-once tier and the long cases beside it). It
prints each wall time, their ratio, and the levels each reached, so the goal (every level but the previews
reached, under five minutes) is read off one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 300.0


def certify(spec: str, out: Path, *extra: str) -> tuple[float, dict, list[dict]]:
    """One ``conformance certify`` in a process of its own, as a person runs it: its wall time, level labels and
    companions (each with its time and items: which of them is the critical path)."""
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "conformance.cli", "certify", "--target", spec, "-o", str(out), *extra],
                   check=False, stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - began
    facts = json.loads(next(out.glob("*/certification.json")).read_text(encoding="utf-8"))
    return seconds, {level["name"]: level["label"] for level in facts["levels"]}, facts.get("companions", [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.certify")
    parser.add_argument("specs", nargs="*", default=["kafka"])
    parser.add_argument("--semantic-duration", default="30", metavar="SECONDS")
    arguments = parser.parse_args(argv)
    for spec in arguments.specs:
        with tempfile.TemporaryDirectory(prefix="bench-certify-") as folder:
            alone, alone_levels, _ = certify(spec, Path(folder) / "alone", "--no-companions")
            complete, complete_levels, companions = certify(spec, Path(folder) / "complete",
                                                            "--semantic-duration", arguments.semantic_duration)
        print(f"\n{spec}: one node alone {alone:.0f} s, complete {complete:.0f} s "
              f"({complete / alone:.1f}x; goal under {GOAL_S:.0f} s: {'met' if complete < GOAL_S else 'NOT met'})")
        print(f"{'level':<45} {'alone':<22} complete")
        for name in complete_levels:
            print(f"{name:<45} {alone_levels.get(name, ''):<22} {complete_levels[name]}")
        for companion in companions:  # beside the main run, in two lanes (cli/certify_complete.py)
            print(f"companion {companion['name']} on {companion['spec']}: {companion['items']} items in "
                  f"{companion['seconds']:.0f} s{' — ' + companion['problem'] if companion['problem'] else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
