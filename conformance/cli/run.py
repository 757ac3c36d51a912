"""``conformance run``: pytest with the plugin and sensible defaults, then a summary per target.

The defaults are the pinned Kafka release, the bundled suites, a results file and an Allure folder
(:mod:`.run_options`, shared with ``conformance flaky``); anything after ``--`` goes to pytest
unchanged, and so do the outputs' options (``--junit``, ``--sarif``, a plugin's): the run's outputs write
their files when pytest's session ends. Once pytest returns, the run's own records are read back from the
results file for the summary table.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from ..results.record import OUTCOME_LABELS, OUTCOME_ORDER, ResultRecord
from .run_options import add_output_arguments, add_run_arguments

SUMMARY_COLUMNS = list(OUTCOME_ORDER)


def register(commands) -> None:
    """Add ``conformance run`` and its options to ``commands``."""
    run = commands.add_parser("run", help="run suites with pytest (arguments after -- go to pytest)")
    add_run_arguments(run)
    run.add_argument("--run-id", metavar="ID", help="id stamped on every result (default: a new one)")
    add_output_arguments(run)
    run.set_defaults(handler=command_run)


def command_run(arguments) -> int:
    """Run the suites on the targets through pytest with the harness's plugin, then print the summary per target;
    pytest's exit status."""
    import pytest

    from ..results.store import new_run_id
    from .run_options import output_arguments, principal_problem, print_written_outputs, pytest_options

    problem = principal_problem(arguments)
    if problem:  # one line and exit code 2, before any target starts
        print(f"conformance run: {problem}", file=sys.stderr)
        return 2
    run_id = arguments.run_id or new_run_id()
    exit_code = int(pytest.main([*pytest_options(arguments, run_id), *output_arguments(arguments),
                                 *arguments.pytest_arguments]))
    print_summary(arguments.results, run_id)
    print_written_outputs(arguments)
    return exit_code


def summary_rows(records: list[ResultRecord]) -> list[list]:
    """Counts per outcome for each target (in order of first appearance), then a total per target."""
    counts: dict[str, Counter] = {}
    for record in records:
        target, outcome = record.target, record.outcome  # a line without them reads None
        counts.setdefault("?" if target is None else target, Counter())["?" if outcome is None else outcome] += 1
    return [[target, *(counter[column] for column in SUMMARY_COLUMNS), sum(counter.values())]
            for target, counter in counts.items()]


def print_summary(results_path: str | Path, run_id: str) -> None:
    """Print one row per target of the run ``run_id``: its count of each outcome and the total."""
    from ..report.console.tables import print_table
    from ..results.store import read_records

    records = read_records(results_path, run_id=run_id)
    if not records:
        print(f"no results recorded for run {run_id} in {results_path}")
        return
    print_table(["target", *(OUTCOME_LABELS[column] for column in SUMMARY_COLUMNS), "total"], summary_rows(records),
                title=f"run {run_id} ({results_path})")

