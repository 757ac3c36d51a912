"""``conformance list``: every case of the suites, one row each (named ``listing``: ``list`` is a builtin)."""

from __future__ import annotations

import sys

from ..report.invocation import SUITE_PATHS_HELP


def register(commands) -> None:
    """Add ``conformance list PATH...`` to ``commands``."""
    command = commands.add_parser("list", help="every case: suite, id, api, versions, requirement, title")
    command.add_argument("paths", nargs="*", metavar="PATH", help=SUITE_PATHS_HELP)
    command.set_defaults(handler=command_list)


def command_list(arguments) -> int:
    """Print the cases of the suites given, one row each; the exit status."""
    from ..extension import Extensions
    from ..report.console.tables import print_table
    from ..report.invocation import suite_paths
    from ..suite.loader import load_suites

    extensions = Extensions.for_run()
    suites, errors = load_suites(suite_paths(arguments.paths, extensions.suite_dirs()),
                                 components=extensions.components())
    for error in errors:
        print(error, file=sys.stderr)
    rows = [[suite.id, case.id, case.api or "-", str(case.versions) if case.api else "-", case.requirement.value,
             case.title] for suite in suites for case in suite.cases]
    print_table(["suite", "case", "api", "versions", "requirement", "title"], rows)
    return 1 if errors else 0
