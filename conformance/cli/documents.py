"""``conformance deviations``, ``coverage`` and ``findings``: Markdown documents, on stdout or in ``-o FILE``.

The three are one module because they are one shape: read suites (or results), hand them to a
function of :mod:`conformance.report.documents`, write what it returns. Each is still registered
on its own (``register_deviations``, ``register_coverage``, ``register_findings``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..report.invocation import SUITE_PATHS_HELP

OUTPUT_HELP = "write Markdown here instead of stdout"


def register_deviations(commands) -> None:
    """Add ``conformance deviations`` (the documented deviations of the suites) to ``commands``."""
    _register_suite_document(commands, "deviations", "where Apache Kafka departs from the KIP texts, from the suites",
                             command_deviations)


def register_coverage(commands) -> None:
    """Add ``conformance coverage`` (which KIP sentences and API versions the suites check) to ``commands``."""
    _register_suite_document(commands, "coverage", "API x version x error code coverage of the suites",
                             command_coverage)


def _register_suite_document(commands, name: str, text: str, handler) -> None:
    document = commands.add_parser(name, help=text)
    document.add_argument("paths", nargs="*", metavar="PATH", help=SUITE_PATHS_HELP)
    document.add_argument("-o", "--output", metavar="FILE", help=OUTPUT_HELP)
    document.set_defaults(handler=handler)


def command_deviations(arguments) -> int:
    """Write or print the deviations document; the exit status."""
    from ..report.documents import deviations_markdown

    write_or_print(deviations_markdown(_suites_or_fail(arguments.paths)), arguments.output)
    return 0


def command_coverage(arguments) -> int:
    """Write or print the coverage document; the exit status."""
    from ..report.documents import coverage_markdown

    write_or_print(coverage_markdown(_suites_or_fail(arguments.paths)), arguments.output)
    return 0


def register_findings(commands) -> None:
    """Add ``conformance findings RESULTS...`` (the outcome matrix and departures per target) to ``commands``."""
    findings = commands.add_parser("findings", help="outcome matrix and departures per target, from results")
    findings.add_argument("results", nargs="+", metavar="RESULTS.jsonl")
    findings.add_argument("-o", "--output", metavar="FILE", help=OUTPUT_HELP)
    findings.add_argument("--all-runs", action="store_true",
                          help="count every run in the files (default: each target's latest run only)")
    findings.set_defaults(handler=command_findings)


def command_findings(arguments) -> int:
    """Write or print the findings document of the results files given; the exit status."""
    from ..report.documents import findings_markdown, latest_runs
    from ..results.store import read_records

    rows = [row for path in arguments.results for row in read_records(path)]
    if not rows:
        print("no results in " + ", ".join(arguments.results), file=sys.stderr)
        return 1
    write_or_print(findings_markdown(rows if arguments.all_runs else latest_runs(rows)), arguments.output)
    return 0


def write_or_print(text: str, output: str | None) -> None:
    """Write ``text`` to ``output`` (saying where), or print it when no file is named; 0."""
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output}")
    else:
        print(text, end="")


def _suites_or_fail(paths):
    from ..extension import Extensions
    from ..report.invocation import suite_paths
    from ..suite.loader import load_suites

    extensions = Extensions.for_run()
    suites, errors = load_suites(suite_paths(paths, extensions.suite_dirs()), components=extensions.components())
    for error in errors:
        print(error, file=sys.stderr)
    return suites
