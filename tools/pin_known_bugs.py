"""Write fixtures/known-bugs/evidence.jsonl from the results of ``conformance releases --known-bugs``.

Usage: python tools/pin_known_bugs.py RESULTS.jsonl [RESULTS.jsonl ...]
Keeps, for each case of the known-bugs ledger on each target it is checked on, the latest run's items of that case
(a few fields each). The evidence already pinned counts as one more results file, so a run of some cases or
releases replaces their evidence and keeps the rest. tools/build_docs.py makes
docs/generated/known-bugs.md from the ledger and this file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.report.known_bugs import evidence_lines  # noqa: E402
from conformance.results.store import read_lines as read_results  # noqa: E402

EVIDENCE = ROOT / "fixtures" / "known-bugs" / "evidence.jsonl"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    pinned = read_results(str(EVIDENCE)) if EVIDENCE.is_file() else []
    lines = evidence_lines(pinned + [record for path in argv for record in read_results(path)])
    EVIDENCE.parent.mkdir(parents=True, exist_ok=True)
    EVIDENCE.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines), encoding="utf-8")
    print(f"wrote {EVIDENCE}: {len(lines)} items")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
