"""``conformance certify``: run the suites on a target (or take earlier results) and write a certification.

When certify runs the suites itself, it makes the run's :class:`~conformance.session.RunSession` (one set of
plugins for the whole certification) and hands it to the pytest run; the fingerprint is asked of the target
while the run still holds it started (a pytest plugin object whose session-finish hook runs before the
conformance plugin stops its targets, reading the session's pool); if the run started nothing in this process (every item deselected, or
xdist workers), certify starts the target once more just to ask it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..extension import Extensions
from ..report import known_failures
from ..session import RunSession
from ..results.record import ResultRecord
from ..results.store import new_run_id, read_records
from ..report.certify import certificate, fingerprint, levels
from . import certify_complete, certify_reproduce
from ..report.certify import bundle, needs, signing
from ..report.certify import register as register_page
from ..report.certify import claims as claim_checks
from ..report.invocation import SUITE_PATHS_HELP
from ..defaults import CERTIFICATION_OUTPUT, REGISTER_OUTPUT


def register(commands) -> None:
    certify = commands.add_parser(
        "certify", help="grade a target against the certification levels; writes a signed bundle (HTML page, JSON, "
                        "badges, evidence)",
        description="Grade a target against the certification levels and write a bundle anyone can verify offline.",
        epilog="actions (each with its own --help):\n"
               "  conformance certify keygen --out DIR\n"
               "      make the Ed25519 key that signs bundles (certify --sign-key FILE)\n"
               "  conformance certify verify BUNDLE --trust KEY\n"
               "      check a bundle offline: its signature, every file, the grades, every exchange judged again\n"
               "  conformance certify reproduce BUNDLE --target SPEC [--sign-key FILE]\n"
               "      run exactly the bundle's items on your own broker and compare them item by item\n"
               "  conformance certify register BUNDLE... --trust KEY [--reproduction DIR...] --out DIR\n"
               "      the static page of verified bundles: product, version, levels, who signed and who reproduced each",
        formatter_class=argparse.RawDescriptionHelpFormatter)
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
    certify.add_argument("--node-control", metavar="FILE.yaml",
                         help="with a HOST:PORT target: the commands that stop, start and move leadership on its "
                              "nodes, so the levels with failover cases are graded on it")
    certify.add_argument("--restart-command", metavar="COMMAND",
                         help="with a HOST:PORT target: the shell command that brings it back once it stops answering "
                              "(as conformance run takes it: 'systemctl restart mybroker'); the certification goes on, "
                              "and the items under way at the crash run again one at a time to find the one that did it")
    certify.add_argument("--known-failures", action="append", default=[], metavar="FILE.yaml",
                         help="waive these departures in the levels that allow it (listed on the page)")
    certify.add_argument("--levels", metavar="FILE", help="levels file (default: the bundled levels.yaml)")
    certify.add_argument("-o", "--output", default=CERTIFICATION_OUTPUT, metavar="DIR",
                         help=f"where the certification folder is created (default: {CERTIFICATION_OUTPUT})")
    certify.add_argument("--sign-key", metavar="FILE.pem",
                         help="sign the bundle with this Ed25519 private key (conformance certify keygen makes one); "
                              "its fingerprint is shown on the page. Unsigned bundles do not verify")
    certify.add_argument("--require", action="append", default=[], metavar="LEVEL",
                         help="exit 1 unless this level (id) is reached (repeatable)")
    certify.add_argument("--claims", metavar="FILE.yaml",
                         help="the vendor's capabilities file: what it does not claim is graded 'not claimed', "
                              "and every claim is checked (see --init)")
    certify.add_argument("--no-companions", action="store_true",
                         help="run on the target alone: none of the companions its kind allows beside it (three-node "
                              "cluster, fault proxy, exactly-once tier, --long cases)")
    certify.add_argument("--semantic-duration", type=float, default=certify_complete.SEMANTIC_SECONDS,
                         metavar="SECONDS", help="how long the exactly-once tier's clients run in each group protocol "
                                                 f"(default: {certify_complete.SEMANTIC_SECONDS:g})")
    certify.add_argument("--init", nargs="?", const="capabilities.yaml", metavar="FILE.yaml",
                         help="write a capabilities file to fill in (default: capabilities.yaml) and exit")
    certify.add_argument("--init-node-control", nargs="?", const="node-control.yaml", metavar="FILE.yaml",
                         help="write a node-control file to fill in (default: node-control.yaml) and exit")
    certify.set_defaults(handler=command_certify)
    certify.nested_commands = nested_commands()  # certify verify, certify register: parsed on their own


NESTED = ("keygen", "verify", "register", "reproduce")
TRUST_HELP = ("a key to trust: its public key file (PEM) or its fingerprint (64 hex digits, as keygen and the page "
              "show it); repeatable. A bundle signed by any other key is reported as 'not a trusted key'")


def nested_commands() -> argparse._SubParsersAction:
    """``conformance certify keygen``, ``certify verify`` and ``certify register``: parsed apart from ``certify``,
    whose first positional arguments are suite paths (:func:`conformance.cli.dispatch` sends them here)."""
    holder = argparse.ArgumentParser(prog="conformance certify")
    nested = holder.add_subparsers(dest="certify_action", required=True)
    keygen = nested.add_parser("keygen", help="make the Ed25519 key pair that signs certification bundles "
                                              "(certify --sign-key) and print its fingerprint")
    keygen.add_argument("--out", required=True, metavar="DIR",
                        help=f"where to write {signing.PRIVATE_KEY} (private, mode 0600) and {signing.PUBLIC_KEY}")
    keygen.set_defaults(handler=command_keygen)
    verify = nested.add_parser("verify", help="check certification bundles offline: the signature, every file, the "
                                              "grades and every recorded exchange judged again; says 'verified, "
                                              "signed by KEY' or what differs (exit 1 unless verified and trusted)")
    verify.add_argument("bundles", nargs="+", metavar="BUNDLE", help="certification folders")
    verify.add_argument("--trust", action="append", default=[], metavar="KEY", help=TRUST_HELP)
    verify.set_defaults(handler=command_verify)
    listing = nested.add_parser("register", help="verify bundles and build a static page listing them (product, "
                                                 "version, levels, date, harness, who signed)")
    listing.add_argument("bundles", nargs="+", metavar="BUNDLE", help="certification folders")
    listing.add_argument("--trust", action="append", default=[], metavar="KEY", help=TRUST_HELP)
    listing.add_argument("--out", default=REGISTER_OUTPUT, metavar="DIR",
                         help=f"the register's folder: index.html and a copy of each bundle (default: {REGISTER_OUTPUT})")
    listing.add_argument("--reproduction", action="append", default=[], metavar="DIR",
                         help="a reproduction record (certify reproduce) of a listed bundle: verified, then shown "
                              "on its row with who reproduced it and how many items agree (repeatable)")
    listing.set_defaults(handler=command_register)
    certify_reproduce.add_parser(nested)
    return nested


def dispatch_nested(argv: list[str]) -> int:
    """Run ``conformance certify ACTION ...`` (``argv`` starts with the action)."""
    nested = nested_commands()
    arguments = nested.choices[argv[0]].parse_args(argv[1:])
    return arguments.handler(arguments)


def _trusted(arguments) -> set[str] | None:
    """The fingerprints of the keys given with --trust; None (after one line on stderr) when one names no key."""
    try:
        return {signing.trusted_fingerprint(given) for given in arguments.trust}
    except signing.SigningKeyError as error:
        print(f"certify: {error}", file=sys.stderr)
        return None


def command_keygen(arguments) -> int:
    try:
        private, public, found = signing.keygen(Path(arguments.out))
    except (signing.SigningKeyError, OSError) as error:
        print(f"certify keygen: {error}", file=sys.stderr)
        return 2
    print(f"wrote {private} (private: keep it; sign with certify --sign-key {private})")
    print(f"wrote {public} (public: hand it to whoever verifies: certify verify BUNDLE --trust {public})")
    print(f"fingerprint {found}")
    return 0


def command_register(arguments) -> int:
    trusted = _trusted(arguments)
    if trusted is None:
        return 2
    from ..runner.rejudge import rejudge

    reproductions = [Path(folder) for folder in arguments.reproduction]
    page, refused = register_page.build([Path(folder) for folder in arguments.bundles], Path(arguments.out),
                                        trusted=trusted, rejudge=rejudge, reproductions=reproductions)
    for folder, problems in refused:
        print(f"{folder}: not verified, not listed:" + "".join(f"\n  - {problem}" for problem in problems),
              file=sys.stderr)
    bundles_refused = sum(1 for folder, _ in refused if folder not in reproductions)
    print(f"wrote {page}: {len(arguments.bundles) - bundles_refused} of {len(arguments.bundles)} bundles listed"
          + (f", {len(reproductions) - len(refused) + bundles_refused} of {len(reproductions)} reproductions shown"
             if reproductions else ""))
    return 1 if refused else 0


def command_verify(arguments) -> int:
    trusted = _trusted(arguments)
    if trusted is None:
        return 2
    from ..runner.rejudge import rejudge

    status = 0
    for folder in arguments.bundles:
        found = bundle.verify(Path(folder), trusted, rejudge)
        if found.problems:
            status = 1
            count = len(found.problems)
            print(f"{folder}: NOT verified ({count} difference{'s' if count != 1 else ''}; {found.signed_by})")
            for problem in found.problems:
                print(f"  - {problem}")
        elif not found.trusted:
            status = 1
            print(f"{folder}: {found.signed_by}" + ("" if trusted else " (no key trusted: give --trust KEY)"))
        else:
            print(f"{folder}: verified, {found.signed_by} (manifest sha256 {bundle.manifest_digest(Path(folder))})")
        for note in found.notes:
            print(f"  {note}")
    return status


def command_certify(arguments) -> int:
    if arguments.init:
        return _write_template(Path(arguments.init))
    if getattr(arguments, "init_node_control", None):
        from ..targets.node_control import TEMPLATE

        return _write_template(Path(arguments.init_node_control), TEMPLATE, "--node-control")
    claims = None
    if arguments.claims:
        try:
            claims = claim_checks.load(arguments.claims)
        except claim_checks.ClaimsError as error:
            print(f"certify: {error}", file=sys.stderr)
            return 2
    if getattr(arguments, "node_control", None):  # checked before any broker starts: one line naming the field
        from ..targets.node_control import NodeControlError, load

        try:
            load(arguments.node_control)
        except NodeControlError as error:
            print(f"certify: {error}", file=sys.stderr)
            return 2
    key = None
    if getattr(arguments, "sign_key", None):  # read before any broker starts; its errors never show the key
        try:
            key = signing.load_private(arguments.sign_key)
        except signing.SigningKeyError as error:
            print(f"certify: {error}", file=sys.stderr)
            return 2
    if not arguments.results and not arguments.target:
        print("certify: give --target SPEC (to run the suites) or --results FILE", file=sys.stderr)
        return 2
    level_list = levels.load_levels(arguments.levels)
    waivers = known_failures.load(arguments.known_failures) + list(claims.deviations if claims else ())
    extensions = Extensions.for_run()  # once for the whole certification: the run, the suites, the fingerprint
    if getattr(arguments, "restart_command", None) and (
            arguments.results or not certify_complete.is_attached(arguments.target, extensions.target_kinds())):
        print("certify: --restart-command is for a HOST:PORT target certify runs the suites on (the harness brings "
              "back the brokers it starts itself)", file=sys.stderr)
        return 2
    if arguments.results:
        records = [row for path in arguments.results for row in bundle.with_transcripts(path, read_records(path))]
        sources, probes = list(arguments.results), dict[str, Any]()
    else:
        records, sources, probes = run_suites(arguments, extensions)
    targets = [arguments.target] if arguments.target else list(dict.fromkeys(row.target for row in records))
    status = 0
    known_suites = _suite_ids(arguments.paths, extensions)
    for target in targets:
        rows = [row for row in records if row.target == target]
        if not rows:
            print(f"certify: no results for target {target!r}", file=sys.stderr)
            status = 2
            continue
        print_found, identity = _fingerprint_for(target, rows, probes, arguments, extensions)
        features = None if print_found is None else print_found.get("finalized_features", {})
        grades = levels.grade(level_list, rows, features, waivers, known_suites=known_suites, claims=claims)
        companions = getattr(arguments, "companions", [])
        # what a level lacks that no companion gave it, in words a vendor can act on
        needs.add_needs(grades, companions, node_control=bool(getattr(arguments, "node_control", None)))
        facts = certificate.build(target, rows, grades, fingerprint=print_found, identity=identity, sources=sources,
                                  levels_file=arguments.levels or "bundled levels.yaml", claims=claims)
        if companions:
            facts["companions"] = [companion.facts() for companion in companions]
            facts["main_run"] = {"spec": target, "seconds": round(getattr(arguments, "main_seconds", 0.0), 1)}
        if key is not None:
            facts["signer"] = signing.signer_of(key)
        folder = certificate.write(facts, grades, rows, Path(arguments.output))
        bundle.write(folder, rows, levels_path=arguments.levels, claims_path=arguments.claims,
                     known_failure_paths=arguments.known_failures, known_suites=known_suites,
                     node_control=bool(getattr(arguments, "node_control", None)), key=key)
        print(f"{target}: " + ", ".join(f"{grade.level.name}: {grade.label}" for grade in grades))
        for grade in grades:  # why each level not reached is not, in the words of the page (a known bug by name)
            if grade.status != levels.REACHED and grade.reasons:
                print(f"  {grade.level.name}: {grade.label}: " + "; ".join(grade.reasons))
        print(f"wrote {folder / 'index.html'} and certification.json")
        if claims is not None:
            false_claims = [row for row in facts["claims"]["checks"] if row["status"] in claim_checks.FALSE_CLAIMS]
            print(f"claims ({claims.path}): {len(facts['claims']['checks'])} checks, "
                  f"{len(false_claims)} of them false claims" + "".join(f"\n  {row['claim']}: {row['status']} ({row['detail']})"
                                                              for row in false_claims))
        for required in arguments.require:
            reached = [grade for grade in grades if grade.level.id == required and grade.status == levels.REACHED]
            if not reached:
                print(f"certify: {target} did not reach the required level {required!r}", file=sys.stderr)
                status = status or 1
            elif reached[0].stale:  # a waiver of a failure that is gone would hide its coming back
                print(f"certify: {target} reached {required!r}, but with stale waivers (the known failures they "
                      "waive pass now; remove them): " + "; ".join(entry.describe() for entry in reached[0].stale),
                      file=sys.stderr)
                status = status or 1
    return status


def _write_template(path: Path, text: str | None = None, flag: str = "--claims") -> int:
    if path.exists():
        print(f"certify: {path} exists; not overwritten", file=sys.stderr)
        return 2
    path.write_text(claim_checks.template() if text is None else text, encoding="utf-8")
    print(f"wrote {path}: fill it in, then conformance certify {flag} {path} ...")
    return 0


def _fingerprint_for(target: str, rows: list[ResultRecord], probes: dict, arguments,
                     extensions: Extensions) -> tuple[dict | None, dict]:
    if target in probes:
        return probes[target]
    identity = fingerprint.identity(rows)
    if arguments.ask_target:
        return _start_and_ask(arguments, rows, extensions, target)
    if arguments.bootstrap:
        try:
            return fingerprint.probe(arguments.bootstrap, identity=None), identity
        except Exception as error:  # noqa: BLE001 - an unreachable target falls back to what the results carry
            print(f"certify: could not ask {arguments.bootstrap} ({error}); using the results' ApiVersions",
                  file=sys.stderr)
    return fingerprint.from_records(rows), identity


def _suite_ids(paths, extensions: Extensions) -> list[str]:
    """Every suite the levels may ask for (drafts excluded: no level counts them)."""
    from ..report.invocation import suite_paths
    from ..suite.loader import load_suites

    suites, _ = load_suites(suite_paths(paths, extensions.suite_dirs()), components=extensions.components())
    return [suite.id for suite in suites if suite.cases and not all(case.draft for case in suite.cases)]


# ------------------------------------------------------------------------------ running the suites
class FingerprintCapture:
    """A pytest plugin object: asks every target the run started, before the conformance plugin stops them."""

    def __init__(self, run: RunSession):
        self.run = run  # the session certify handed to the pytest run
        self.found: dict[str, tuple[dict | None, dict]] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        if self.run.pool is None:
            return
        for target in self.run.pool.started():
            records = read_records(self.run.results_path, run_id=self.run.run_id)
            self.found[target.spec] = _ask(target, [row for row in records if row.target == target.spec])


def _ask(target, rows: list[ResultRecord]) -> tuple[dict | None, dict]:
    identity = fingerprint.identity(rows, target)
    try:
        return fingerprint.probe(target.bootstrap, security=target.security), identity
    except Exception as error:  # noqa: BLE001 - reported on the page; the results' copy is used instead
        identity["fingerprint_problem"] = f"asking {target.bootstrap} failed: {error}"
        return fingerprint.from_records(rows), identity


def run_suites(arguments, extensions: Extensions) -> tuple[list[ResultRecord], list[str], dict]:
    from ..report.invocation import plugin_arguments, suite_paths

    run_id = new_run_id()
    output = Path(arguments.output)
    output.mkdir(parents=True, exist_ok=True)
    results = output / f"results-{run_id}.jsonl"
    # the pytest run runs this session; every item's exchanges kept: verify judges passes again from their bytes too
    session = RunSession(results, run_id=run_id, extensions=extensions, transcripts="all")
    options = [*plugin_arguments(), "-W", "default", "--conformance-run-id", run_id, "--results", str(results),
               "--target", arguments.target]  # -W default: as conformance run (run_options.pytest_options)
    for path in suite_paths(arguments.paths, None if arguments.paths else extensions.suite_dirs()):
        options += ["--suite", str(path)]
    if arguments.client_config:
        options += ["--client-config", arguments.client_config]
    if getattr(arguments, "node_control", None):
        options += ["--node-control", arguments.node_control]
    if getattr(arguments, "restart_command", None):
        options += ["--conformance-restart-command", arguments.restart_command]
    companions, threads = [], None
    if not arguments.no_companions:
        companions = certify_complete.plan(arguments.target, output, run_id, paths=arguments.paths,
                                           semantic_seconds=arguments.semantic_duration,
                                           node_control=getattr(arguments, "node_control", None),
                                           client_config=arguments.client_config, kinds=extensions.target_kinds(),
                                           restart_command=getattr(arguments, "restart_command", None))
    if companions:
        if not arguments.paths:
            options.append("--conformance-long")  # the end of the epoch space: the levels counting it need it
        threads = certify_complete.start(companions)
    capture = FingerprintCapture(session)
    began = time.monotonic()
    try:
        pytest.main(options, plugins=[capture, session])
        arguments.main_seconds = time.monotonic() - began  # beside the companions: a chain of the critical path
        records = read_records(results, run_id=run_id)
        extra = certify_complete.finish(companions, arguments.target, threads)
    finally:
        certify_complete.stop(companions)
    arguments.companions = companions
    records = certify_complete.combine(records, companions, extra)
    if arguments.target not in capture.found and records:
        capture.found[arguments.target] = _start_and_ask(arguments, records, extensions)
    return records, [str(results), *(str(companion.results) for companion in companions)], capture.found


def _start_and_ask(arguments, records: list[ResultRecord], extensions: Extensions,
                   spec: str | None = None) -> tuple[dict | None, dict]:
    """Start (or attach to) the target only to ask it: the run started it elsewhere (xdist workers),
    or the results came from an earlier run (--ask-target)."""
    from ..targets.pool import TargetPool

    spec = spec or arguments.target
    rows = [row for row in records if row.target == spec]
    pool = TargetPool([spec], extensions.target_kinds())
    try:
        if arguments.client_config and pool.target(spec) in pool.configurable():
            from ..targets.kafka.config import read_properties

            pool.target(spec).configure(client_config=read_properties(arguments.client_config))
        return _ask(pool.acquire(spec), rows)
    except Exception as error:  # noqa: BLE001 - reported on the page; the results' copy is used instead
        identity = fingerprint.identity(rows)
        identity["fingerprint_problem"] = f"starting {spec} to ask it failed: {error}"
        return fingerprint.from_records(rows), identity
    finally:
        pool.stop_all()
