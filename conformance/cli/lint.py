"""``conformance lint``: check suite files; one ``file:line: key: message`` line per problem, exit 1 if any."""

from __future__ import annotations

from ..report.invocation import SUITE_PATHS_HELP


def register(commands) -> None:
    """Add ``conformance lint PATH...`` to ``commands``."""
    command = commands.add_parser("lint", help="check suite files; prints file:line: key: message")
    command.add_argument("paths", nargs="*", metavar="PATH", help=SUITE_PATHS_HELP)
    command.set_defaults(handler=command_lint)


def command_lint(arguments) -> int:
    """Load the suites given and print every problem with its file, line and field; 1 when there is one."""
    from ..extension import Extensions
    from ..report.invocation import suite_paths
    from ..suite.loader import lint, load_suites

    extensions = Extensions.for_run()
    paths = suite_paths(arguments.paths, extensions.suite_dirs())
    components = extensions.components()
    errors = lint(paths, components)
    for error in errors:
        print(error)
    if errors:
        return 1
    suites, _ = load_suites(paths, components=components)
    print(f"{len(suites)} suites, {sum(len(suite.cases) for suite in suites)} cases OK")
    return 0
