"""``conformance certify reproduce BUNDLE --target SPEC``: run exactly a bundle's items on a broker the reader runs
and compare them item by item with what the bundle says (:mod:`conformance.report.certify.reproduction`).

The items are chosen by what names them in the bundle (suite id, case id, API version), never by the paths of the
machine that made it: their suites are this harness's (the bundled ones and the plugins'). The selection runs
``--runs`` times in a row, each run on a target of its own where the harness provisions it, as ``conformance certify`` runs it
(one item at a time). The levels are graded again on the reproduction with the bundle's own
inputs, the target's fingerprint asked of it during the first run; a level counting a flaky item is unstable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ..extension import Extensions
from ..report.certify import bundle, reproduction, signing
from ..report.certify.fingerprint import from_records, identity
from ..results.store import new_run_id, read_records
from ..session import RunSession
from ..suite.model import LONG_TAG
from ..defaults import REPRODUCTION_OUTPUT

RUN_EXIT_CODES_OK = (0, 1)  # pytest: every item ran (1: some did not pass), as conformance flaky reads it
RUNS = 2  # the fewest that can tell a flaky item from one the reproduction contradicts


def add_parser(nested) -> None:
    reproduce = nested.add_parser(
        "reproduce", help="run exactly a bundle's items on your own copy of the product and compare them item by "
                          "item: each agrees, contradicts the bundle, or is flaky (its levels then unstable); "
                          "writes a reproduction record a register shows (exit 1 unless every item agrees)")
    reproduce.add_argument("bundle", metavar="BUNDLE", help="the certification folder to reproduce")
    reproduce.add_argument("--target", required=True, metavar="SPEC",
                           help="the broker to run the items on (your copy of the product, the same version): any "
                                "target spec, PRODUCT:VERSION@HOST:PORT for one you run")
    reproduce.add_argument("--runs", type=int, default=RUNS, metavar="N",
                           help=f"run the items N times (default: {RUNS}); an item whose outcome changes between "
                                "runs is flaky")
    reproduce.add_argument("--restart-command", metavar="COMMAND",
                           help="shell command that brings a HOST:PORT target back once it stops answering")
    reproduce.add_argument("--client-config", metavar="FILE", help="Kafka client properties for HOST:PORT targets")
    reproduce.add_argument("--node-control", metavar="FILE.yaml",
                           help="with a HOST:PORT cluster: the commands that stop and start its nodes (failover cases)")
    reproduce.add_argument("--trust", action="append", default=[], metavar="KEY",
                           help="a key to trust for the bundle's signature (public key file or fingerprint); "
                                "repeatable")
    reproduce.add_argument("--sign-key", metavar="FILE.pem",
                           help="sign the reproduction record with this Ed25519 private key (certify keygen)")
    reproduce.add_argument("-o", "--output", default=REPRODUCTION_OUTPUT, metavar="DIR",
                           help=f"where the record's folder is created (default: {REPRODUCTION_OUTPUT})")
    reproduce.set_defaults(handler=command_reproduce)


def command_reproduce(arguments) -> int:
    folder = Path(arguments.bundle)
    if arguments.runs < 1:
        print("certify reproduce: --runs needs at least 1", file=sys.stderr)
        return 2
    try:
        key = signing.load_private(arguments.sign_key) if arguments.sign_key else None
        trusted = {signing.trusted_fingerprint(given) for given in arguments.trust}
    except signing.SigningKeyError as error:
        print(f"certify reproduce: {error}", file=sys.stderr)
        return 2
    if not (folder / bundle.RESULTS).is_file() or not (folder / "certification.json").is_file():
        print(f"certify reproduce: {folder}: no {bundle.RESULTS} and certification.json: not a certification bundle",
              file=sys.stderr)
        return 2
    from ..runner.rejudge import rejudge

    verification = bundle.verify(folder, trusted, rejudge)
    try:
        claimed = reproduction.bundle_records(folder)
    except (OSError, ValueError) as error:
        print(f"certify reproduce: {folder / bundle.RESULTS}: unreadable ({error})", file=sys.stderr)
        return 2
    extensions = Extensions.for_run()
    files, skipped = suite_files(claimed, extensions)
    run_id = new_run_id()
    out = Path(arguments.output) / f"{folder.name}-reproduced-{run_id}"
    out.mkdir(parents=True, exist_ok=True)
    run_ids, runs, probe, stopped = run_items(arguments, claimed, skipped, files, out, run_id, extensions)
    rows = reproduction.compare(claimed, runs, skipped)
    certificate = json.loads((folder / "certification.json").read_text(encoding="utf-8"))
    found, who = probe or (None, identity(reproduction.reproduced_records(runs)))
    try:  # graded with the reproduction's fingerprint: its finalized features are the customer's broker's
        grades, _ = bundle.grade_again(folder, certificate, reproduction.reproduced_records(runs),
                                       fingerprint=found, flaky=reproduction.flaky_items(rows))
    except (OSError, ValueError) as error:
        print(f"certify reproduce: cannot grade the reproduction with the bundle's inputs: {error}", file=sys.stderr)
        grades = []
    level_rows = reproduction.levels(grades, certificate)
    made = reproduction.facts(folder, verification, arguments.target, who, run_ids, rows, level_rows, key)
    if stopped:
        made["stopped"] = stopped  # the record says its runs are fewer than asked, and why
    record = reproduction.write(out, made, key)
    print(summary(folder, verification, made))
    print(f"wrote {record}" + (f", signed by {signing.signer_of(key)['fingerprint']}" if key is not None else
                               " (not signed: give --sign-key FILE for a register to name who reproduced it)"))
    if stopped:
        print(f"certify reproduce: {stopped}", file=sys.stderr)
        return 2
    # trust is the reader's to give: a bundle whose signature holds and whose every compared item agrees passes
    agreed = bool(made["compared"]) and made["counts"][reproduction.AGREES] == made["compared"]
    return 0 if agreed and not verification.problems else 1


def suite_files(claimed, extensions: Extensions) -> tuple[list[Path], dict[str, str]]:
    """The suite files holding the bundle's items (by suite id, in this harness's suites), and the items that are
    not run here, each with why."""
    from ..suite.loader import load_suites

    suites, _ = load_suites(extensions.suite_dirs(), components=extensions.components())
    by_id = {suite.id: Path(suite.path) for suite in suites}
    files: dict[Path, None] = {}
    skipped: dict[str, str] = {}
    for record in claimed:
        companion = reproduction.companion_of(record)
        if companion:
            skipped[record.item_id] = (f"made by the companion run on {companion}, which certify reproduce does not "
                                       "start")
        elif record.suite not in by_id:
            skipped[record.item_id] = f"suite {record.suite} is not among this harness's suites"
        else:
            files[by_id[record.suite]] = None
    return list(files), skipped


class Selection:
    """A pytest plugin object: keeps the items the bundle holds (suite id, case id, API version), deselects the rest."""

    def __init__(self, wanted: set[tuple]):
        self.wanted = wanted

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        kept, dropped = [], []
        for item in items:
            case = getattr(item, "case", None)
            chosen = case is not None and (case.suite.id, case.id, getattr(item, "version", None)) in self.wanted
            (kept if chosen else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def ran_long(claimed) -> bool:
    """Whether the bundle's run had ``--long``: one of its items tagged long has an outcome but skipped. Without it
    they were skipped, and run here they would contradict the bundle by running (34 items of a mock bundle did)."""
    return any(LONG_TAG in (record.tags or ()) and record.outcome != "skipped" for record in claimed)


def run_items(arguments, claimed, skipped: dict[str, str], files: list[Path], out: Path, run_id: str,
              extensions: Extensions):
    """Run the items ``arguments.runs`` times on the target: the run ids, each run's records, what the target said
    it is (its fingerprint and identity, asked during the first run; None when no run started it), and why the runs
    stopped early ("" when they did not)."""
    from ..report.invocation import plugin_arguments
    from .certify import FingerprintCapture

    wanted = {(record.suite, record.case, record.api_version) for record in claimed if record.item_id not in skipped}
    results = out / reproduction.RUNS  # every run's lines, as the runs wrote them
    run_ids, runs, probe, stopped = [], [], None, ""
    if not files:
        return [], [], None, ""
    long = ran_long(claimed)
    # each run on a target of its own where the harness provisions it: what one run leaves (its topics) is not
    # the next run's problem; an attached broker is the same one every run
    for number in range(1, arguments.runs + 1):
        this_run = f"{run_id}-run{number}"
        print(f"certify reproduce: run {number} of {arguments.runs} on {arguments.target} ({len(wanted)} items)",
              flush=True)
        session = RunSession(results, run_id=this_run, extensions=extensions, transcripts="failures")
        options = [*plugin_arguments(), "-W", "default", "-q", "--tb=no", "-rN", "--conformance-run-id", this_run,
                   f"--results={results}", "--target", arguments.target, *(f"--suite={path}" for path in files)]
        options += ["--conformance-long"] if long else []
        if arguments.client_config:
            options.append(f"--client-config={arguments.client_config}")
        if arguments.node_control:
            options.append(f"--node-control={arguments.node_control}")
        if arguments.restart_command:
            options += ["--conformance-restart-command", arguments.restart_command]
        capture = FingerprintCapture(session)
        code = int(pytest.main(options, plugins=[capture, session, Selection(wanted)]))
        records = read_records(results, run_id=this_run)
        run_ids.append(this_run)
        runs.append(records)
        if probe is None and capture.found:
            probe = capture.found.get(arguments.target) or next(iter(capture.found.values()))
        if code not in RUN_EXIT_CODES_OK:  # interrupted (Ctrl-C, SIGTERM), a usage or internal error: stop here
            stopped = (f"run {number} of {arguments.runs} ended with pytest exit code {code} (interrupted, "
                                 "a usage error or no target left); runs after it not made")
            break
    if probe is None and runs and runs[0]:
        probe = (from_records(runs[0]), identity(runs[0]))
    return run_ids, runs, probe, stopped


def summary(folder: Path, verification: bundle.Verification, made: dict) -> str:
    """What the terminal shows: the bundle's verification, the counts, every item that does not agree, the levels."""
    lines = []
    if verification.problems:
        lines.append(f"{folder}: bundle NOT verified ({len(verification.problems)} differences; "
                     f"{verification.signed_by}):")
        lines += [f"  - {problem}" for problem in verification.problems]
    else:
        lines.append(f"{folder}: bundle verified, {verification.signed_by}")
    found = made["counts"]
    who = made["identity"] or {}
    version = f" ({who.get('target_version')})" if who.get("target_version") else ""
    lines.append(f"reproduced on {made['target']}{version}, {made['runs']} run{'s' if made['runs'] != 1 else ''}: "
                 f"{made['compared']} items compared: {found[reproduction.AGREES]} agree, "
                 f"{found[reproduction.CONTRADICTS]} contradict the bundle, {found[reproduction.FLAKY]} flaky; "
                 f"{found[reproduction.NOT_REPRODUCED]} not reproduced")
    theirs = (made["bundle"]["identity"] or {}).get("target_version")
    if theirs and who.get("target_version") and theirs != who["target_version"]:
        lines.append(f"  note: the bundle is of version {theirs}, this target says {who['target_version']}: a "
                     "difference may be the versions', not the bundle's")
    for status in (reproduction.CONTRADICTS, reproduction.FLAKY, reproduction.NOT_REPRODUCED):
        rows = [row for row in made["items"] if row["status"] == status]
        for row in rows[:50]:
            runs = ", ".join(str(outcome) for outcome in row["runs"])
            lines.append(f"  {status}: {row['item']}: the bundle says {row['bundle']}, the runs {runs}"
                         + (f" ({row['why']})" if row["why"] else ""))
        if len(rows) > 50:
            lines.append(f"  ... and {len(rows) - 50} more {status} items (all in {reproduction.RECORD})")
    differing = [level for level in made["levels"] if level["bundle"] != level["reproduced"]]
    lines.append(f"levels: {len(made['levels']) - len(differing)} of {len(made['levels'])} graded as the bundle says"
                 + (", these otherwise:" if differing else ""))
    for level in differing:
        lines.append(f"  {level['name']}: the bundle says {level['bundle']}, the reproduction {level['reproduced']}: "
                     + "; ".join(level["reasons"][:2]))
    return "\n".join(lines)
