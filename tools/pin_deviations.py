"""Write fixtures/known-deviations/KIND.json from a results file of a run against that target.

Usage: python tools/pin_deviations.py RESULTS.jsonl KIND SUITE_PATH... (relative to suites/)
The pin lists every failed, differing (IMPLEMENTATION), blocked or errored item with what was expected and what the target did, so
tests/bundled_suites/test_suites_on_brokers.py notices any change in the target's behaviour.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.results.store import read_lines  # noqa: E402


def main(argv: list[str]) -> int:
    results_path, kind, *suites = argv
    rows = read_lines(results_path)
    root = Path(__file__).resolve().parents[1] / "suites"
    wanted = [(root / name).resolve() for name in suites]
    deviations = []
    for row in rows:
        if row["outcome"] not in ("failed", "differs", "blocked", "error"):
            continue
        path = Path(row["path"]).resolve()
        if not any(path == folder or folder in path.parents for folder in wanted):
            continue
        deviations.append({
            "item": f"{row['suite']}::{row['case']}@v{row['api_version']}", "outcome": row["outcome"],
            "expected": row.get("expected"), "observed": (row.get("message") or "")[:400],
            "target_version": row.get("target_version"),
        })
    deviations.sort(key=lambda entry: entry["item"])
    output = Path(__file__).resolve().parents[1] / "fixtures" / "known-deviations" / f"{kind}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({"target": kind, "suites": suites, "deviations": deviations}, indent=1) + "\n")
    print(f"wrote {output}: {len(deviations)} departures")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
