"""Sub-commands that drive runs and reports (``gate``, ``certify``, ``semantic``, ``flaky``, ``show``,
``report allure``; ``run --junit``).

They sit beside cli.py at the top of the layers: ``certify`` runs pytest with the plugin and reads its
session state. Each registers its parser with a ``handler``; cli.dispatch calls it.
"""

from __future__ import annotations


def register(commands) -> None:
    from ..report import gate, show
    from . import certify, flaky, semantic

    gate.register(commands)
    show.register(commands)
    certify.register(commands)
    semantic.register(commands)
    flaky.register(commands)
    from ..report import allure_html

    report = commands.add_parser("report", help="build reports from results (see: conformance report --help)")
    allure_html.register(report.add_subparsers(dest="report_kind", required=True))


def add_junit_option(run_parser) -> None:
    run_parser.add_argument("--junit", metavar="FILE",
                            help="also write JUnit XML (a departure is a <failure>, a harness error an <error>)")


def write_junit_after_run(arguments, run_id: str) -> None:
    """Called by ``conformance run`` once pytest returns: JUnit from the run's own JSONL records."""
    if not getattr(arguments, "junit", None):
        return
    from ..report.junit import write_junit
    from ..report.results import read_results

    count = write_junit(read_results(arguments.results, run_id=run_id), arguments.junit)
    print(f"wrote {arguments.junit} ({count} test cases)")
