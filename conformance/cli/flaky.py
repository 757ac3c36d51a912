"""``conformance flaky``: run the same selection N times and list every item whose outcome changed.

The N runs go one after another through pytest in this process, each with its own run id, into one
results file. Targets are provisioned once for all of them (:func:`..targets.pool.kept_started`);
one a run found down is started afresh for the next run; with pytest-xdist (``-- -n N``) each
run's workers start their own. ``--from FILE...`` judges results already written (CI artefacts).

The judge is the Spark job of ``conformance analyze flaky`` when PySpark is importable, else the
same judgement in plain Python (:mod:`..analysis.flakiness`); either way the findings are
described from the records: outcomes run by run, the flaky rate, the message of a non-pass and
the command that reruns the item. Exit 0 when no item changed, 1 when one did, 2 on a usage or
infrastructure error (a run that could not run its items, files holding fewer than two runs).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..analysis import flakiness
from ..report.itemref import label, reproduce
from ..results.record import ResultRecord
from ..results.store import new_run_id, read_records
from ..results.record import OUTCOME_ORDER
from ..defaults import FLAKY_RESULTS
from .run_options import add_run_arguments, principal_problem, pytest_options

# Each run's own terminal output stays short: the judgement at the end is what this command is for.
QUIET_PYTEST = ["-q", "--tb=no", "-rN"]
RUN_EXIT_CODES_OK = (0, 1)  # pytest: every item ran (1: some did not pass); others mean the run itself failed
MESSAGE_CHARS = 300
OUTCOMES = list(OUTCOME_ORDER)  # the order run lines list outcomes in

DESCRIPTION = """\
Run the same selection N times in a row, each run with its own run id, into one results file, and
list every item whose outcome was not the same in all runs. The targets are provisioned once for
all N runs (with -- -n, each run's workers start their own). Arguments after -- go to pytest
(-k, -m, -n, ...). --from judges results files already written instead.
"""
EPILOG = """\
examples:
  conformance flaky --runs 5                                   # every bundled suite, 5 times, on Kafka 4.4.0
  conformance flaky --runs 3 --target rdkafka-mock suites/kip98/coordinator.yaml -- -k find-coordinator
  conformance flaky --from reports/nightly-*.jsonl             # judge runs already written (no broker)

An item is one target x suite::case x API version. It is listed when its outcome was not the same
in every run: its outcomes (passed x4, failed x1, then run by run), its flaky rate (the share of its
runs that disagree with its most common outcome), flips (changes from one run to the next), the
message of a non-pass and a command that reruns it. skipped and unsupported are outcomes like any
other; IMPLEMENTATION items are listed too, labelled (they describe Kafka's own behaviour).
Exit status: 0 no item changed, 1 some did, 2 usage or infrastructure error.
"""


def register(commands) -> None:
    """Add ``conformance flaky`` and its options to ``commands``."""
    flaky = commands.add_parser(
        "flaky", help="run a selection N times (or judge results files) and list every item whose outcome changed",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(flaky, results=FLAKY_RESULTS, alluredir="", results_flags=("-o", "--results"))
    flaky.add_argument("--runs", type=int, metavar="N", help="run the selection N times (at least 2)")
    flaky.add_argument("--from", dest="sources", action="extend", nargs="+", metavar="FILE",
                       help="judge these results files instead of running anything (every run they hold; "
                            "with --target, only those targets' items)")
    flaky.add_argument("--judge", choices=["auto", "spark", "python"], default="auto",
                       help="auto: the Spark job when PySpark is installed, else plain Python (default: auto)")
    flaky.add_argument("--report", metavar="FILE", help="also write the judgement printed here to FILE")
    flaky.add_argument("--json", metavar="FILE", help="also write the judgement as JSON")
    flaky.set_defaults(handler=command_flaky)


@dataclass
class Finding:
    """One item whose outcome changed between runs that changed nothing: its history and how often it flipped."""
    history: flakiness.History
    flaky_rate: float
    flips: int


class UsageError(Exception):
    """Options that cannot go together; the message says which."""
    pass


def command_flaky(arguments) -> int:
    """Run the suites several times (or read earlier runs) and report the items whose outcome flips; the exit status."""
    problem = principal_problem(arguments)
    if problem:
        print(f"conformance flaky: {problem}", file=sys.stderr)
        return 2
    try:
        files, run_ids, problem = _records_to_judge(arguments)
    except UsageError as error:
        print(f"conformance flaky: {error}", file=sys.stderr)
        return 2
    targets = set(arguments.target) if arguments.sources and arguments.target else None
    records = [record for path in files for record in read_records(path)
               if (run_ids is None or record.run_id in run_ids) and (targets is None or record.target in targets)]
    runs = flakiness.run_order(records)
    if len(runs) < 2:
        print(f"conformance flaky: {', '.join(map(str, files))} hold{'s' if len(files) == 1 else ''} "
              f"{len(runs)} run{'' if len(runs) == 1 else 's'} of the selection: nothing to compare",
              file=sys.stderr)
        return 2
    try:
        judge, findings = judge_records(records, files, arguments.judge, run_ids=run_ids, targets=targets)
    except UsageError as error:
        print(f"conformance flaky: {error}", file=sys.stderr)
        return 2
    found = flakiness.histories(records)
    text = render(records, found, findings, judge)
    print(text, end="")
    if arguments.report:
        _write(arguments.report, text)
    if arguments.json:
        _write(arguments.json, json.dumps(to_json(records, found, findings, judge), indent=2) + "\n")
    if problem:
        print(f"conformance flaky: {problem}", file=sys.stderr)
        return 2
    return 1 if findings else 0


# ------------------------------------------------------------------------------ running
def _records_to_judge(arguments) -> tuple[list[str], set[str] | None, str | None]:
    """(files, run ids to keep or None for all, a problem that makes the exit code 2)."""
    if arguments.sources:
        if arguments.runs is not None or arguments.paths or arguments.pytest_arguments:
            raise UsageError("--from judges existing results: give no --runs, paths or pytest arguments with it")
        missing = [path for path in arguments.sources if not Path(path).is_file()]
        if missing:
            raise UsageError(f"no results file at {', '.join(missing)}")
        return list(arguments.sources), None, None
    if arguments.runs is None:
        raise UsageError("give --runs N (run the selection N times) or --from FILE... (judge results files)")
    if arguments.runs < 2:
        raise UsageError("--runs needs at least 2 runs to compare")
    run_ids, problem = run_selection(arguments)
    if problem and len(run_ids) < 2:
        raise UsageError(problem)
    return [arguments.results], set(run_ids), problem


def run_selection(arguments) -> tuple[list[str], str | None]:
    """Runs the selection ``arguments.runs`` times; the run ids that ran, and why the runs stopped early."""
    import pytest

    from ..targets.pool import kept_started

    base = new_run_id()
    width = len(str(arguments.runs))
    run_ids: list[str] = []
    with kept_started():
        for number in range(1, arguments.runs + 1):
            run_id = f"{base}-run{number:0{width}d}"  # sorts in run order even within one second
            print(f"conformance flaky: run {number} of {arguments.runs} ({run_id})", flush=True)
            # One Allure folder for the N runs: Allure shows them as retries and marks the items that flipped.
            options = pytest_options(arguments, run_id, clean_alluredir=number == 1)
            exit_code = int(pytest.main([*options, *QUIET_PYTEST, *arguments.pytest_arguments]))
            if exit_code == 5:
                return run_ids, "the selection holds no items (pytest exit code 5)"
            run_ids.append(run_id)
            if exit_code not in RUN_EXIT_CODES_OK:
                return run_ids, (f"run {number} of {arguments.runs} ended with pytest exit code {exit_code} "
                                 f"(interrupted, a usage error or no target left); runs after it not made")
    return run_ids, None


# ------------------------------------------------------------------------------ judging
def judge_records(records: list[ResultRecord], files: list[str], choice: str, *, run_ids: set[str] | None = None,
                  targets: set[str] | None = None) -> tuple[str, list[Finding]]:
    """(which judge, the items that changed in ``records``): the Spark job when it can run, else plain Python.

    Spark reads ``files`` itself, keeping the rows of ``run_ids`` and ``targets`` (all when None),
    which must be the ``records``."""
    found = flakiness.histories(records)
    if choice in ("auto", "spark"):
        try:
            import pyspark  # noqa: F401
        except ImportError:
            if choice == "spark":
                raise UsageError("--judge spark needs PySpark: pip install 'kafka-conformance[analysis]'") from None
        else:
            try:
                version, rows = spark_judgement(files, run_ids=run_ids, targets=targets)
            except Exception as error:  # noqa: BLE001 - no JVM, no Java: judge without Spark
                if choice == "spark":
                    raise UsageError(f"the Spark judge failed: {error}") from None
                print(f"conformance flaky: Spark did not run ({type(error).__name__}: {str(error)[:200]}); "
                      "judging in plain Python", file=sys.stderr)
            else:
                findings = [Finding(found[key], rate, flips) for key, rate, flips in rows if key in found]
                return f"Spark {version} (the job of `conformance analyze flaky`)", findings
    findings = [Finding(history, history.flaky_rate, history.flips) for history in flakiness.changed(found)]
    why = "; PySpark is not installed" if choice == "auto" and not _has_pyspark() else ""
    return f"plain Python (conformance.analysis.flakiness{why})", findings


def _has_pyspark() -> bool:
    from importlib.util import find_spec

    return find_spec("pyspark") is not None


def spark_judgement(files: list[str], *, run_ids: set[str] | None = None,
                    targets: set[str] | None = None) -> tuple[str, list[tuple[tuple, float, int]]]:
    """The flaky job over the files' rows of ``run_ids`` and ``targets`` (all when None): Spark's
    version, and a (key, flaky rate, flips) row per item that changed."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from ..analysis import warehouse
    from ..analysis.inputs import collect
    from ..analysis.jobs import flaky
    from ..analysis.spark_session import spark_session

    embedded = SparkSession.getActiveSession() is not None  # a caller's session (a test) stays up
    spark = spark_session(None)
    try:
        tables = warehouse.build(spark, collect(files), transcripts=False, decode=False)
        items = tables.items
        if run_ids is not None:
            items = items.where(F.col("run_id").isin(sorted(run_ids)))
        if targets is not None:
            items = items.where(F.col("target").isin(sorted(targets)))
        tables = warehouse.Tables(items, tables.exchanges)
        rows = flaky.run(tables)["flaky"].collect()
        version = spark.version
    finally:
        if not embedded:
            spark.stop()
    return version, [((row.target, row.target_version, row.harness_version, row.item), row.flaky_rate, row.flips)
                     for row in rows]


# ------------------------------------------------------------------------------ output
def outcome_counts(outcomes: list[str]) -> str:
    """``passed ×4, failed ×1``: most common first, ties in order of first appearance."""
    counts = Counter(outcomes)
    return ", ".join(f"{outcome} ×{count}" for outcome, count in counts.most_common())


def _non_pass(history: flakiness.History) -> ResultRecord:
    """The latest record that is not a pass (its message and node id describe the item); else the latest."""
    return next((record for record in reversed(history.records) if record.outcome != "passed"),
                history.records[-1])


def _message(record: ResultRecord) -> str:
    text = " ".join(str(record.message or "").split())
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS - 1] + "…"


def _requirement_note(history: flakiness.History) -> str:
    requirement = history.requirement or "?"
    if requirement == "IMPLEMENTATION":
        return "IMPLEMENTATION: Kafka's own behaviour, for information"
    return requirement


def run_lines(records: list[ResultRecord]) -> list[str]:
    """One line per run: its targets and counts per outcome."""
    by_run: dict[str, Counter] = {}
    targets: dict[str, dict] = {}
    for record in records:
        by_run.setdefault(str(record.run_id), Counter())[str(record.outcome)] += 1
        targets.setdefault(str(record.run_id), {})[record.target] = None
    lines = []
    for run_id in flakiness.run_order(records):
        counts = by_run[run_id]
        order = [outcome for outcome in OUTCOMES if counts[outcome]] + sorted(set(counts) - set(OUTCOMES))
        lines.append(f"  run {run_id} on {', '.join(map(str, targets[run_id]))}: "
                     f"{', '.join(f'{outcome} {counts[outcome]}' for outcome in order)} ({sum(counts.values())} items)")
    return lines


def partial_items(records: list[ResultRecord], found: dict[tuple, flakiness.History]) -> list[flakiness.History]:
    """Items missing from some run of their target (a selection that is not the same in every run)."""
    runs_of: dict[object, set] = {}
    for record in records:
        runs_of.setdefault(record.target, set()).add(record.run_id)
    return [history for history in found.values() if history.runs < len(runs_of[history.key[0]])]


def render(records: list[ResultRecord], found: dict[tuple, flakiness.History], findings: list[Finding], judge: str) -> str:
    """The findings as text for the terminal, flakiest first."""
    runs = flakiness.run_order(records)
    judged = flakiness.judged(found)
    lines = [f"conformance flaky: {len(runs)} runs, {len(judged)} items judged, by {judge}", *run_lines(records)]
    partial = partial_items(records, found)
    if partial:
        lines.append(f"{len(partial)} items are not in every run of their target (not listed as changed), e.g. "
                     + ", ".join(f"{history.key[0]} {history.key[3]} ({history.runs} runs)" for history in partial[:5]))
    if not findings:
        lines.append(f"STABLE: each of the {len(judged)} items had the same outcome in every run")
        return "\n".join(lines) + "\n"
    lines.append(f"CHANGED: {len(findings)} of {len(judged)} items did not have the same outcome in every run")
    for finding in findings:
        history, record = finding.history, _non_pass(finding.history)
        target, target_version = history.key[0], history.key[1]
        lines.append(f"  {target}{f' ({target_version})' if target_version else ''} {label(record)} "
                     f"[{_requirement_note(history)}]")
        lines.append(f"    outcomes: {outcome_counts(history.outcomes)} in {history.runs} runs "
                     f"(run by run: {', '.join(history.outcomes)})")
        lines.append(f"    flaky rate {finding.flaky_rate:g} (share of runs off its most common outcome), "
                     f"{finding.flips} flip{'' if finding.flips == 1 else 's'}")
        if record.outcome != "passed":
            lines.append(f"    {record.outcome} in run {record.run_id}: "
                         f"{_message(record) or '(no message)'}")
        lines.append(f"    reproduce: {reproduce(record)}")
    return "\n".join(lines) + "\n"


def to_json(records: list[ResultRecord], found: dict[tuple, flakiness.History], findings: list[Finding], judge: str) -> dict:
    """The findings as the JSON ``--json`` writes."""
    return {
        "judge": judge, "runs": flakiness.run_order(records), "items_judged": len(flakiness.judged(found)),
        "stable": not findings,
        "changed": [{
            "target": finding.history.key[0], "target_version": finding.history.key[1],
            "harness_version": finding.history.key[2], "item": label(_non_pass(finding.history)),
            "requirement": finding.history.requirement, "outcomes": dict(Counter(finding.history.outcomes)),
            "run_by_run": [[record.run_id, record.outcome] for record in finding.history.records],
            "flaky_rate": finding.flaky_rate, "flips": finding.flips,
            "message": str(_non_pass(finding.history).message or ""),
            "reproduce": reproduce(_non_pass(finding.history)),
        } for finding in findings],
    }


def _write(path: str, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text, encoding="utf-8")
    print(f"wrote {path}")
