"""Benchmark: the attribution check's matrix, its size and how much of it holds.

``python -m conformance.bench.attribution [--target kafka] [--sample N] [--seed S] [PATHS]`` runs
``conformance attribution`` on a seeded sample of the matrix (every API and version the suites sent × every
perturbation that can change its answers), then prints the whole matrix's size, the sample's perturbations ×
items and how many held, the time per perturbation and the whole matrix's time extrapolated from it. ``--sample 0``
runs the whole matrix (hours on a 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ..defaults import DEFAULT_TARGET


def main(argv: list[str] | None = None) -> int:
    """Run the sample, print the figures; the check's exit status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.attribution",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", metavar="PATH")
    parser.add_argument("--target", default=DEFAULT_TARGET)
    parser.add_argument("--sample", type=int, default=6)
    parser.add_argument("--seed", type=int, default=7)
    arguments = parser.parse_args(argv)

    from ..protocol.codec import default_codec
    from ..report.attribution import candidates
    from ..results.store import read_records

    out = Path(tempfile.mkdtemp(prefix="conformance-attribution-bench-"))
    started = time.monotonic()
    status = subprocess.run([sys.executable, "-m", "conformance", "attribution", "--target", arguments.target,
                             "--sample", str(arguments.sample), "--seed", str(arguments.seed), "--out", str(out),
                             *arguments.paths], check=False).returncode
    seconds = time.monotonic() - started
    summary = json.loads((out / "attribution.json").read_text()) if (out / "attribution.json").exists() else None
    if summary is None:
        return status
    matrix = candidates(read_records(out / "baseline.jsonl"), default_codec())
    checked = summary["perturbations"]
    items = sum(sum(entry["counts"].values()) for entry in checked)
    by_kind = Counter(entry["perturbation"].split("@")[0] for entry in checked)
    per_perturbation = seconds / max(1, len(checked) + 1)  # the baseline is one run more
    print(f"matrix: {len(matrix)} perturbations ({len(set(spec.split('@')[1] for spec in matrix))} API versions sent "
          f"× the perturbations that can change their answers)")
    print(f"sample (seed {arguments.seed}): {len(checked)} perturbations × {items} items compared "
          f"({dict(by_kind)}); {sum(entry['held'] for entry in checked)} held")
    print(f"time: {seconds:.0f} s with the baseline, {per_perturbation:.0f} s a run; the whole matrix "
          f"about {per_perturbation * (len(matrix) + 1) / 3600:.1f} h on this machine")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
