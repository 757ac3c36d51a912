"""``conformance show ITEM``: one item's whole record from a results file (:mod:`conformance.report.console.show`).

Exit 0 when ITEM names one item, 1 when it names none or several (listed), 2 when there is no
results file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..defaults import DEFAULT_RESULTS
from ..report.console import show as report_show


def register(commands) -> None:
    """Add ``conformance show ITEM`` and its options to ``commands``."""
    show = commands.add_parser("show", help="one item's full record and exchanges, from a results file",
                               description=report_show.__doc__.split("\n\n")[0])
    show.add_argument("item", metavar="ITEM",
                      help="suite::case@vN (the id reports and their reproduce commands print), the pytest node "
                           "id suites/FILE.yaml::case[target-vN], or a substring that names one item")
    show.add_argument("--results", default=DEFAULT_RESULTS, metavar="FILE",
                      help=f"JSONL results file (default: {DEFAULT_RESULTS})")
    show.add_argument("--target", metavar="SPEC", help="only this target's items (when ITEM names several)")
    show.add_argument("--run-id", metavar="ID", help="only this run's records (default: each item's latest)")
    show.add_argument("--json", action="store_true", help="print the record as JSON")
    show.set_defaults(handler=command_show)


def command_show(arguments) -> int:
    """Print one item's full record and exchanges from a results file; the exit status."""
    from ..results.store import read_records

    path = Path(arguments.results)
    if not path.is_file():
        print(f"conformance show: no results file at {path}", file=sys.stderr)
        return 2
    records = [record for record in read_records(path, run_id=arguments.run_id)
               if not arguments.target or record.target == arguments.target]
    found = report_show.find(records, arguments.item)
    if len(found) != 1:
        print(report_show.not_one(arguments.item, found, path), file=sys.stderr)
        return 1
    [record] = found
    if arguments.json:
        print(json.dumps(record.to_line(), indent=1, default=str))
    else:
        print(report_show.render(record), end="")
    return 0
