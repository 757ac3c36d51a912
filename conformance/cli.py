"""The ``conformance`` command: list targets and cases, lint suites, and run them through pytest.

``run`` is pytest with the plugin and sensible defaults (the pinned Kafka release, the bundled
suites, a results file and an Allure folder), followed by a per-target summary read back from
the results file; anything after ``--`` goes to pytest unchanged.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

from .commands.run_options import DEFAULT_ALLUREDIR, DEFAULT_RESULTS, DEFAULT_TARGET  # noqa: F401
from .report.console import print_table
from .report.invocation import SUITE_PATHS_HELP, suite_paths
from .suite.model import OUTCOME_LABELS, OUTCOME_ORDER


# ------------------------------------------------------------------------------ commands
def command_targets(arguments) -> int:
    from .extension import Extensions

    rows = []
    for kind in Extensions.for_run().target_kinds():
        try:
            reason = kind.availability()
        except Exception as error:  # noqa: BLE001 - one broken kind must not hide the others
            reason = f"availability check failed: {error}"
        rows.append([kind.name, kind.description, "yes" if reason is None else f"no: {reason}"])
    print_table(["kind", "description", "available here"], rows)
    return 0


def command_lint(arguments) -> int:
    from .suite.loader import lint, load_suites

    from .extension import Extensions

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


def command_list(arguments) -> int:
    from .extension import Extensions
    from .suite.loader import load_suites

    extensions = Extensions.for_run()
    suites, errors = load_suites(suite_paths(arguments.paths, extensions.suite_dirs()),
                                 components=extensions.components())
    for error in errors:
        print(error, file=sys.stderr)
    rows = [[suite.id, case.id, case.api or "-", str(case.versions) if case.api else "-", case.requirement.value,
             case.title] for suite in suites for case in suite.cases]
    print_table(["suite", "case", "api", "versions", "requirement", "title"], rows)
    return 1 if errors else 0


def command_run(arguments, pytest_arguments: list[str]) -> int:
    import pytest

    from .commands.run_options import principal_problem, pytest_options
    from .report.results import new_run_id

    problem = principal_problem(arguments)
    if problem:  # one line and exit code 2, before any target starts
        print(f"conformance run: {problem}", file=sys.stderr)
        return 2
    run_id = arguments.run_id or new_run_id()
    exit_code = int(pytest.main([*pytest_options(arguments, run_id), *pytest_arguments]))
    print_summary(arguments.results, run_id)
    from .commands import write_junit_after_run  # JUnit from the JSONL records just written

    write_junit_after_run(arguments, run_id)
    return exit_code


# ------------------------------------------------------------------------------ output
SUMMARY_COLUMNS = list(OUTCOME_ORDER)


def summary_rows(records: list[dict]) -> list[list]:
    """Counts per outcome for each target (in order of first appearance), then a total per target."""
    counts: dict[str, Counter] = {}
    for record in records:
        counts.setdefault(record.get("target", "?"), Counter())[record.get("outcome", "?")] += 1
    return [[target, *(counter[column] for column in SUMMARY_COLUMNS), sum(counter.values())]
            for target, counter in counts.items()]


def print_summary(results_path: str | Path, run_id: str) -> None:
    from .report.results import read_results

    records = read_results(results_path, run_id=run_id)
    if not records:
        print(f"no results recorded for run {run_id} in {results_path}")
        return
    print_table(["target", *(OUTCOME_LABELS[column] for column in SUMMARY_COLUMNS), "total"], summary_rows(records),
                title=f"run {run_id} ({results_path})")


def _write_or_print(text: str, output: str | None) -> None:
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
        print(f"wrote {output}")
    else:
        print(text, end="")


def _suites_or_fail(paths):
    from .extension import Extensions
    from .suite.loader import load_suites

    extensions = Extensions.for_run()
    suites, errors = load_suites(suite_paths(paths, extensions.suite_dirs()), components=extensions.components())
    for error in errors:
        print(error, file=sys.stderr)
    return suites


def command_deviations(arguments) -> int:
    from .report.documents import deviations_markdown

    _write_or_print(deviations_markdown(_suites_or_fail(arguments.paths)), arguments.output)
    return 0


def command_coverage(arguments) -> int:
    from .report.documents import coverage_markdown

    _write_or_print(coverage_markdown(_suites_or_fail(arguments.paths)), arguments.output)
    return 0


def command_findings(arguments) -> int:
    from .report.documents import findings_markdown
    from .report.results import read_results

    from .report.documents import latest_runs

    rows = [row for path in arguments.results for row in read_results(path)]
    if not rows:
        print("no results in " + ", ".join(arguments.results), file=sys.stderr)
        return 1
    _write_or_print(findings_markdown(rows if arguments.all_runs else latest_runs(rows)), arguments.output)
    return 0


def command_analyze(arguments) -> int:
    from .analysis.cli import command_analyze as analyze

    return analyze(arguments)


# ------------------------------------------------------------------------------ parsing
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="conformance", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("targets", help="target kinds, and whether each can run here")
    lint = commands.add_parser("lint", help="check suite files; prints file:line: key: message")
    lint.add_argument("paths", nargs="*", metavar="PATH", help=SUITE_PATHS_HELP)
    listing = commands.add_parser("list", help="every case: suite, id, api, versions, requirement, title")
    listing.add_argument("paths", nargs="*", metavar="PATH", help=SUITE_PATHS_HELP)
    for name, text in (("deviations", "where Apache Kafka departs from the KIP texts, from the suites"),
                       ("coverage", "API x version x error code coverage of the suites")):
        document = commands.add_parser(name, help=text)
        document.add_argument("paths", nargs="*", metavar="PATH", help=SUITE_PATHS_HELP)
        document.add_argument("-o", "--output", metavar="FILE", help="write Markdown here instead of stdout")
    commands.add_parser("decode", help="decode a pcap of Kafka traffic (see: conformance decode --help)")
    commands.add_parser("diff", help="wire-level diff of two runs or captures (see: conformance diff --help)")
    findings = commands.add_parser("findings", help="outcome matrix and departures per target, from results")
    findings.add_argument("results", nargs="+", metavar="RESULTS.jsonl")
    findings.add_argument("-o", "--output", metavar="FILE", help="write Markdown here instead of stdout")
    findings.add_argument("--all-runs", action="store_true",
                          help="count every run in the files (default: each target's latest run only)")
    run = commands.add_parser("run", help="run suites with pytest (arguments after -- go to pytest)")
    from .commands.run_options import add_run_arguments  # the options conformance flaky takes too

    add_run_arguments(run)
    run.add_argument("--run-id", metavar="ID", help="id stamped on every result (default: a new one)")
    from .analysis.cli import register as register_analyze  # no Spark import until the command runs

    register_analyze(commands)
    from . import commands as report_commands  # gate, certify, report allure; run --junit

    report_commands.add_junit_option(run)
    report_commands.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return dispatch(argv)
    except BrokenPipeError:  # `conformance list | head` closed the pipe: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit flush
        return 0


PYTEST_PASS_THROUGH = ("run", "flaky")  # commands that hand the arguments after -- to pytest


def dispatch(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("decode", "diff"):  # wire tools keep their own options
        from .capture import commands

        return (commands.decode_main if argv[0] == "decode" else commands.diff_main)(argv[1:])
    pytest_arguments: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, pytest_arguments = argv[:split], argv[split + 1:]
    arguments = build_parser().parse_args(argv)
    if arguments.command == "run":
        return command_run(arguments, pytest_arguments)
    if pytest_arguments and arguments.command not in PYTEST_PASS_THROUGH:
        build_parser().error("arguments after -- are only for 'conformance run' and 'conformance flaky'")
    arguments.pytest_arguments = pytest_arguments
    if getattr(arguments, "handler", None) is not None:  # commands registered by conformance.commands
        return arguments.handler(arguments)
    commands = {"targets": command_targets, "lint": command_lint, "list": command_list,
                "deviations": command_deviations, "coverage": command_coverage, "findings": command_findings,
                "analyze": command_analyze}
    return commands[arguments.command](arguments)


if __name__ == "__main__":
    sys.exit(main())
