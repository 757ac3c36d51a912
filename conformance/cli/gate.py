"""``conformance gate``: fail (exit 1) when results regressed against a baseline (:mod:`conformance.report.gate`).

Exit 0 when the gate passes (or a baseline was saved), 1 when it fails, 2 for a usage error or
empty results.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def register(commands) -> None:
    """Add ``conformance gate RESULTS --baseline FILE`` and its options to ``commands``."""
    gate = commands.add_parser("gate", help="fail (exit 1) when results regressed against a baseline")
    gate.add_argument("--baseline", action="append", metavar="BASE.jsonl",
                      help="results of the reference run (repeatable)")
    gate.add_argument("--results", action="append", required=True, metavar="NEW.jsonl",
                      help="results of the run to judge (repeatable)")
    gate.add_argument("--known-failures", action="append", default=[], metavar="FILE.yaml",
                      help="known failures and flaky items to tolerate (repeatable)")
    gate.add_argument("--reruns", type=int, default=0, metavar="N",
                      help="rerun each regressed item N times against its target; one that passes is flaky")
    gate.add_argument("--client-config", metavar="FILE", help="for reruns on HOST:PORT targets (TLS, SASL)")
    gate.add_argument("--strict", action="store_true",
                      help="stale known failures and items missing from the results fail the gate too")
    gate.add_argument("--show-new", action="store_true",
                      help="list every item only one side has (by default, many are summed per suite)")
    gate.add_argument("--json", metavar="FILE", help="also write the verdict and every change as JSON")
    gate.add_argument("--save-baseline", metavar="BASE.jsonl",
                      help="instead of judging, write the results as a baseline to commit (no transcripts)")
    gate.set_defaults(handler=command_gate)


def command_gate(arguments) -> int:
    """Compare results with a baseline and fail (exit 1) on a regression; the exit status."""
    from ..report import known_failures
    from ..report.gate import compare, render, rerun, save_baseline, to_json
    from ..results.store import read_records

    try:
        entries = known_failures.load(arguments.known_failures)
    except known_failures.KnownFailuresError as error:
        print(f"gate: {error}", file=sys.stderr)
        return 2
    results = [row for path in arguments.results for row in read_records(path)]
    if arguments.save_baseline:
        count = save_baseline(results, arguments.save_baseline)
        print(f"wrote {arguments.save_baseline} ({count} items)")
        return 0 if count else 2
    if not arguments.baseline:
        print("gate: --baseline is required (or --save-baseline to make one)", file=sys.stderr)
        return 2
    baseline = [row for path in arguments.baseline for row in read_records(path)]
    for name, rows, paths in (("baseline", baseline, arguments.baseline), ("results", results, arguments.results)):
        if not rows:
            print(f"gate: no records in the {name} ({', '.join(paths)})", file=sys.stderr)
            return 2
    report = compare(baseline, results, entries)
    rerun(report, arguments.reruns,
          pytest_arguments=["--client-config", arguments.client_config] if arguments.client_config else [])
    print(render(report, strict=arguments.strict, show_new=arguments.show_new), end="")
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(to_json(report, strict=arguments.strict), indent=1) + "\n",
                                        encoding="utf-8")
    return 0 if report.passed(strict=arguments.strict) else 1
