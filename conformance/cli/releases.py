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
                              "affected and its fixed release; with --releases, those only), each on the target its "
                              "cases need (the fault proxy, a three-node cluster), long cases included: the evidence "
                              "of docs/generated/known-bugs.md")
    command.add_argument("--list", action="store_true", help="print the releases and why each is run, run nothing")
    command.set_defaults(handler=command_releases)


def command_releases(arguments) -> int:
    from ..targets.kafka import releases as kafka_releases

    if arguments.target or arguments.client_config or arguments.principal:
        print("conformance releases: --target, --client-config and --principal are for conformance run; "
              "choose releases with --releases", file=sys.stderr)
        return 2
    try:
        releases = kafka_releases.parse_releases(arguments.releases)
    except ValueError as error:
        print(f"conformance releases: {error}", file=sys.stderr)
        return 2
    plan = None
    if arguments.known_bugs:
        asked = None if arguments.releases.strip() == "matrix" else releases
        plan = known_bug_plan(asked)
        releases = list(plan)
        arguments.long = True
    if arguments.list:
        reasons = kafka_releases.matrix()
        for release in releases:
            where = f"\t{', '.join(plan[release])}" if plan else ""
            print(f"{release}\t{', '.join(reasons.get(release, ['asked for']))}{where}")
        return 0
    return run_matrix(arguments, releases, plan)


def known_bug_plan(asked: list[str] | None = None, entries=None) -> dict[str, dict[str, list[str]]]:
    """Release → target spec → the ledger's cases (``suite::case``) to run there, for ``--known-bugs``.

    By default the releases each entry with cases is checked on (``verify``: its last affected release and its
    fixed one), each on the target its cases need (``kafka:3.5.2``, ``proxy+kafka:3.9.2``,
    ``kafka:4.4.0,nodes=3``) with only that entry's cases. ``asked`` (``--releases``) keeps those releases
    only; an asked release no entry is checked on runs every entry's cases, each on the target its cases need."""
    from .. import ledger

    entries = [bug for bug in (ledger.bugs() if entries is None else entries) if bug.verify and bug.cases]
    plan: dict[str, dict[str, list[str]]] = {}
    for bug in entries:
        for role in bug.verify_roles():
            release = bug.verify[role]
            if asked is None or release in asked:
                cases = plan.setdefault(release, {}).setdefault(str(bug.verify_target(role)), [])
                cases += [case for case in bug.cases if case not in cases]
    for release in asked or []:
        if release not in plan:
            for bug in entries:
                cases = plan.setdefault(release, {}).setdefault(ledger.release_target(
                    bug.verify.get("target", "kafka"), release), [])
                cases += [case for case in bug.cases if case not in cases]
    order = {release: number for number, release in enumerate(asked or [])}
    return {release: dict(sorted(plan[release].items()))
            for release in sorted(plan, key=lambda release: (order.get(release, -1), ledger.release_key(release)))}


def known_bug_selection(paths: list[str], cases: list[str]) -> tuple[list[str], list[str]]:
    """The suite files holding ``cases`` (``suite::case``, among ``paths``, default the bundled suites) and the
    pytest arguments (``-k``) choosing those cases."""
    from ..report.invocation import suite_paths
    from ..suite.loader import suite_files

    import yaml

    suites = {case.split("::")[0] for case in cases}
    files = [str(path) for path in suite_files(suite_paths(paths))
             if (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("suite") in suites]
    names = sorted({case.split("::")[1] for case in cases})
    return files, ["-k", " or ".join(f"{name}[" for name in names)]


def run_matrix(arguments, releases: list[str], plan: dict[str, dict[str, list[str]]] | None = None) -> int:
    """Each release in turn under one run id (``plan``: the targets and cases of ``--known-bugs`` per release);
    then the summary. Exit 1 if any release departed or did not run."""
    import pytest

    from ..report import releases as matrix_report
    from ..results.store import new_run_id
    from ..results.store import read_records
    from ..targets.kafka import releases as kafka_releases
    from .run_options import pytest_options

    run_id = arguments.run_id if getattr(arguments, "run_id", None) else new_run_id()
    unavailable: dict[str, str] = {}
    worst, first = 0, True
    paths = list(arguments.paths)
    for number, release in enumerate(releases, start=1):
        print(f"conformance releases: {number} of {len(releases)}: kafka:{release}", flush=True)
        problem = kafka_releases.fetch(release)
        if problem:
            unavailable[release] = problem
            continue
        # --known-bugs: one run per target the entries checked on this release need, with their cases only
        runs = [([f"kafka:{release}"], paths, [])] if plan is None else \
            [([target], *known_bug_selection(paths, cases)) for target, cases in plan[release].items()]
        for arguments.target, arguments.paths, selection in runs:
            options = pytest_options(arguments, run_id, clean_alluredir=first)
            first = False
            worst = max(worst, int(pytest.main([*options, *arguments.pytest_arguments, *selection])))
    records = read_records(arguments.results, run_id=run_id)
    for release in releases:
        why = kafka_releases.not_started(records, release)
        if why:
            unavailable[release] = why
    targets = list(dict.fromkeys(f"kafka:{release}" for release in releases)) if plan is None else \
        list(dict.fromkeys(target for release in releases for target in plan[release]))
    targets += sorted({record.target for record in records if record.target not in targets})
    table = matrix_report.rows(records, targets, {f"kafka:{release}": why for release, why in unavailable.items()})
    print(f"\nrelease matrix, run {run_id} ({arguments.results}):")
    print(matrix_report.render(table))
    if worst not in (0, 1):
        return worst
    return 1 if unavailable or any(row.departures for row in table) else 0
