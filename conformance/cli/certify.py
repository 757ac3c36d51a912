"""``conformance certify``: run the suites on a target (or take earlier results) and write a certification.

When certify runs the suites itself, the fingerprint is asked of the target while the run still
holds it started (a pytest plugin object whose session-finish hook runs before the conformance
plugin stops its targets); if the run started nothing in this process (every item deselected, or
xdist workers), certify starts the target once more just to ask it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ..report import known_failures
from ..results.store import new_run_id, read_lines
from ..report.certify import certificate, fingerprint, levels
from ..report.invocation import SUITE_PATHS_HELP
from ..defaults import CERTIFICATION_OUTPUT


def register(commands) -> None:
    certify = commands.add_parser("certify", help="grade a target against the certification levels; "
                                                  "writes an HTML page, JSON and badges")
    certify.add_argument("paths", nargs="*", metavar="PATH", help=SUITE_PATHS_HELP)
    certify.add_argument("--target", metavar="SPEC",
                         help="the target to run the suites on; with --results, the target to take from them "
                              "(default there: every target the results hold)")
    certify.add_argument("--results", action="append", metavar="FILE",
                         help="certify earlier results instead of running the suites (repeatable)")
    certify.add_argument("--bootstrap", metavar="HOST:PORT",
                         help="with --results: ask the running target at this address for its fingerprint")
    certify.add_argument("--ask-target", action="store_true",
                         help="with --results: start (or attach to) the target only to ask it for its fingerprint")
    certify.add_argument("--client-config", metavar="FILE", help="Kafka client properties for HOST:PORT targets")
    certify.add_argument("--known-failures", action="append", default=[], metavar="FILE.yaml",
                         help="waive these departures in the levels that allow it (listed on the page)")
    certify.add_argument("--levels", metavar="FILE", help="levels file (default: the bundled levels.yaml)")
    certify.add_argument("-o", "--output", default=CERTIFICATION_OUTPUT, metavar="DIR",
                         help=f"where the certification folder is created (default: {CERTIFICATION_OUTPUT})")
    certify.add_argument("--require", action="append", default=[], metavar="LEVEL",
                         help="exit 1 unless this level (id) is reached (repeatable)")
    certify.set_defaults(handler=command_certify)


def command_certify(arguments) -> int:
    if not arguments.results and not arguments.target:
        print("certify: give --target SPEC (to run the suites) or --results FILE", file=sys.stderr)
        return 2
    level_list = levels.load_levels(arguments.levels)
    waivers = known_failures.load(arguments.known_failures)
    if arguments.results:
        records = [row for path in arguments.results for row in read_lines(path)]
        sources, probes = list(arguments.results), {}
    else:
        records, sources, probes = run_suites(arguments)
    targets = [arguments.target] if arguments.target else list(dict.fromkeys(row.get("target") for row in records))
    status = 0
    for target in targets:
        rows = [row for row in records if row.get("target") == target]
        if not rows:
            print(f"certify: no results for target {target!r}", file=sys.stderr)
            status = 2
            continue
        print_found, identity = _fingerprint_for(target, rows, probes, arguments)
        features = None if print_found is None else print_found.get("finalized_features", {})
        grades = levels.grade(level_list, rows, features, waivers, known_suites=_suite_ids(arguments.paths))
        facts = certificate.build(target, rows, grades, fingerprint=print_found, identity=identity, sources=sources,
                                  levels_file=arguments.levels or "bundled levels.yaml")
        folder = certificate.write(facts, grades, rows, Path(arguments.output))
        print(f"{target}: " + ", ".join(f"{grade.level.name}: {grade.label}" for grade in grades))
        print(f"wrote {folder / 'index.html'} and certification.json")
        for required in arguments.require:
            if not any(grade.level.id == required and grade.status == levels.REACHED for grade in grades):
                print(f"certify: {target} did not reach the required level {required!r}", file=sys.stderr)
                status = status or 1
    return status


def _fingerprint_for(target: str, rows: list[dict], probes: dict, arguments) -> tuple[dict | None, dict]:
    if target in probes:
        return probes[target]
    identity = fingerprint.identity(rows)
    if arguments.ask_target:
        return _start_and_ask(arguments, rows, target)
    if arguments.bootstrap:
        try:
            return fingerprint.probe(arguments.bootstrap, identity=None), identity
        except Exception as error:  # noqa: BLE001 - an unreachable target falls back to what the results carry
            print(f"certify: could not ask {arguments.bootstrap} ({error}); using the results' ApiVersions",
                  file=sys.stderr)
    return fingerprint.from_records(rows), identity


def _suite_ids(paths) -> list[str]:
    """Every suite the levels may ask for (drafts excluded: no level counts them)."""
    from ..report.invocation import suite_paths
    from ..extension import Extensions
    from ..suite.loader import load_suites

    extensions = Extensions.for_run()
    suites, _ = load_suites(suite_paths(paths, extensions.suite_dirs()), components=extensions.components())
    return [suite.id for suite in suites if suite.cases and not all(case.draft for case in suite.cases)]


# ------------------------------------------------------------------------------ running the suites
class FingerprintCapture:
    """A pytest plugin object: asks every target the run started, before the conformance plugin stops them."""

    def __init__(self):
        self.found: dict[str, tuple[dict | None, dict]] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        from ..pytest_plugin.plugin import STATE_KEY

        state = session.config.stash.get(STATE_KEY, None)
        if state is None:
            return
        for target in state.pool.started():
            records = read_lines(state.results_path, run_id=state.run_id)
            self.found[target.spec] = _ask(target, [row for row in records if row.get("target") == target.spec])


def _ask(target, rows: list[dict]) -> tuple[dict | None, dict]:
    identity = fingerprint.identity(rows, target)
    try:
        return fingerprint.probe(target.bootstrap, security=target.security), identity
    except Exception as error:  # noqa: BLE001 - reported on the page; the results' copy is used instead
        identity["fingerprint_problem"] = f"asking {target.bootstrap} failed: {error}"
        return fingerprint.from_records(rows), identity


def run_suites(arguments) -> tuple[list[dict], list[str], dict]:
    from ..extension import Extensions
    from ..report.invocation import plugin_arguments, suite_paths

    run_id = new_run_id()
    output = Path(arguments.output)
    output.mkdir(parents=True, exist_ok=True)
    results = output / f"results-{run_id}.jsonl"
    options = [*plugin_arguments(), "-W", "default", "--conformance-run-id", run_id, "--results", str(results),
               "--target", arguments.target]  # -W default: as conformance run (run_options.pytest_options)
    for path in suite_paths(arguments.paths, None if arguments.paths else Extensions.for_run().suite_dirs()):
        options += ["--suite", str(path)]
    if arguments.client_config:
        options += ["--client-config", arguments.client_config]
    capture = FingerprintCapture()
    pytest.main(options, plugins=[capture])
    records = read_lines(results, run_id=run_id)
    if arguments.target not in capture.found and records:
        capture.found[arguments.target] = _start_and_ask(arguments, records)
    return records, [str(results)], capture.found


def _start_and_ask(arguments, records: list[dict], spec: str | None = None) -> tuple[dict | None, dict]:
    """Start (or attach to) the target only to ask it: the run started it elsewhere (xdist workers),
    or the results came from an earlier run (--ask-target)."""
    from ..extension import Extensions
    from ..targets.pool import TargetPool

    spec = spec or arguments.target
    rows = [row for row in records if row.get("target") == spec]
    pool = TargetPool([spec], Extensions.for_run().target_kinds())
    try:
        if arguments.client_config and pool.target(spec) in pool.configurable():
            from ..targets.kafka_config import read_properties

            pool.target(spec).configure(client_config=read_properties(arguments.client_config))
        return _ask(pool.acquire(spec), rows)
    except Exception as error:  # noqa: BLE001 - reported on the page; the results' copy is used instead
        identity = fingerprint.identity(rows)
        identity["fingerprint_problem"] = f"starting {spec} to ask it failed: {error}"
        return fingerprint.from_records(rows), identity
    finally:
        pool.stop_all()
