"""``conformance releases``: the suites on every Apache Kafka release of the matrix, one after another.

The matrix is the latest patch of each minor line since 3.3 plus the releases the known-bugs ledger checks
its entries on (``--list`` shows it and why each release is in it); ``--releases 3.5.2,4.0.0`` runs
others. Each release is a run of its own on its own broker (started, tested, stopped before the next),
all under one run id in one results file. The summary gives each release's outcomes and every departing
case with the Kafka bug behind it ("KAFKA-14402, fixed in 3.6.0"), or says that no known bug explains it.
A release whose jars cannot be fetched or whose broker cannot start says why in one line.
"""

from __future__ import annotations

import sys

from .run_options import add_run_arguments


def register(commands) -> None:
    command = commands.add_parser(
        "releases", help="run the suites on each Apache Kafka release of the matrix (latest patch of each minor "
                         "since 3.3, plus the releases the known bugs live in)")
    add_run_arguments(command, results="reports/releases.jsonl", alluredir="")
    command.add_argument("--releases", default="matrix", metavar="LIST",
                         help="comma-separated releases (3.5.2,4.0.0) or 'matrix' (default)")
    command.add_argument("--known-bugs", action="store_true",
                         help="only the known-bugs ledger's cases, on the releases each entry is checked on (its last "
                              "affected and its fixed release), long cases included: the evidence of "
                              "docs/generated/known-bugs.md")
    command.add_argument("--list", action="store_true", help="print the releases and why each is run, run nothing")
    command.set_defaults(handler=command_releases)


def command_releases(arguments) -> int:
    from ..targets import kafka_releases

    if arguments.target or arguments.client_config or arguments.principal:
        print("conformance releases: --target, --client-config and --principal are for conformance run; "
              "choose releases with --releases", file=sys.stderr)
        return 2
    try:
        releases = kafka_releases.parse_releases(arguments.releases)
    except ValueError as error:
        print(f"conformance releases: {error}", file=sys.stderr)
        return 2
    if arguments.known_bugs:
        releases, arguments.paths, selection = known_bug_selection(arguments.paths)
        arguments.long = True
        arguments.pytest_arguments = [*arguments.pytest_arguments, "-k", selection]
    if arguments.list:
        reasons = kafka_releases.matrix()
        for release in releases:
            print(f"{release}\t{', '.join(reasons.get(release, ['asked for']))}")
        return 0
    return run_matrix(arguments, releases)


def known_bug_selection(paths: list[str]) -> tuple[list[str], list[str], str]:
    """The releases the ledger checks its entries on, the suite files holding the entries' cases (among
    ``paths``, default the bundled suites) and a pytest ``-k`` expression choosing those cases."""
    from .. import ledger
    from ..report.invocation import suite_paths
    from ..suite.loader import suite_files
    from ..targets import kafka_releases

    import yaml

    checked = [bug for bug in ledger.bugs() if bug.verify]
    releases = [release for release, why in kafka_releases.matrix().items()
                if any(" affected" in reason or " fixed" in reason for reason in why)]
    suites = {case.split("::")[0] for bug in checked for case in bug.cases}
    files = [str(path) for path in suite_files(suite_paths(paths))
             if (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("suite") in suites]
    cases = sorted({case.split("::")[1] for bug in checked for case in bug.cases})
    return releases, files, " or ".join(f"{case}[" for case in cases)


def run_matrix(arguments, releases: list[str]) -> int:
    """Each release in turn under one run id; then the summary. Exit 1 if any release departed or did not run."""
    import pytest

    from .. import ledger
    from ..report import releases as matrix_report
    from ..results.store import new_run_id
    from ..results.store import read_lines as read_results
    from ..targets import kafka_releases
    from .run_options import pytest_options

    run_id = arguments.run_id if getattr(arguments, "run_id", None) else new_run_id()
    unavailable: dict[str, str] = {}
    worst = 0
    for number, release in enumerate(releases, start=1):
        print(f"conformance releases: {number} of {len(releases)}: kafka:{release}", flush=True)
        problem = kafka_releases.fetch(release)
        if problem:
            unavailable[release] = problem
            continue
        arguments.target = [f"kafka:{release}"]
        if arguments.known_bugs:  # entries whose cases need the fault proxy run on proxy+kafka:RELEASE beside it
            needed = {str(bug.verify_target(role)) for bug in ledger.bugs() if bug.verify
                      for role in ("affected", "fixed") if bug.verify[role] == release}
            arguments.target += sorted(needed - {f"kafka:{release}"})
        options = pytest_options(arguments, run_id, clean_alluredir=number == 1)
        worst = max(worst, int(pytest.main([*options, *arguments.pytest_arguments])))
    records = read_results(arguments.results, run_id=run_id)
    for release in releases:
        why = kafka_releases.not_started(records, release)
        if why:
            unavailable[release] = why
    targets = list(dict.fromkeys(f"kafka:{release}" for release in releases))
    targets += sorted({record["target"] for record in records if record.get("target") not in targets})
    table = matrix_report.rows(records, targets, {f"kafka:{release}": why for release, why in unavailable.items()})
    print(f"\nrelease matrix, run {run_id} ({arguments.results}):")
    print(matrix_report.render(table))
    if worst not in (0, 1):
        return worst
    return 1 if unavailable or any(row.departures for row in table) else 0
