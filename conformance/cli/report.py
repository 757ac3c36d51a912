"""``conformance report KIND``: reports built from a run's output after it ended.

``conformance report allure RESULTS_DIR -o OUT`` builds the Allure HTML report offline
(:func:`conformance.report.allure_html.build`). Exit 0 when written, 2 when Allure, Java or the
results are missing.

Every output written at a run's end (a :class:`conformance.report.sinks.FileOutput`: ``junit``, ``sarif``, a
plugin's) is a kind too: ``conformance report sarif FILE --results RESULTS`` writes it from a results file, the
last run's records (or ``--run-id``'s), as ``--sarif FILE`` would have during the run. Exit 2 when the file holds no
such run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..defaults import ALLURE_REPORT, DEFAULT_RESULTS
from .run_options import outputs


def register(commands) -> None:
    """Add ``conformance report`` (the Allure report of a run's results) to ``commands``."""
    report = commands.add_parser("report", help="build reports from results (see: conformance report --help)")
    kinds = report.add_subparsers(dest="report_kind", required=True)
    allure = kinds.add_parser("allure", help="build the Allure HTML report offline (Allure 2 via npm, Java)")
    allure.add_argument("results_dir", metavar="RESULTS_DIR", help="Allure results folder (conformance run --alluredir)")
    allure.add_argument("-o", "--output", default=ALLURE_REPORT, metavar="OUT",
                        help="report folder, replaced; its history/ carries trends to the next build "
                             f"(default: {ALLURE_REPORT})")
    allure.add_argument("--history-from", metavar="REPORT", help="take the trend history from this earlier report "
                                                                 "(default: OUT itself)")
    allure.add_argument("--results", action="append", default=[], metavar="FILE.jsonl",
                        help="JSONL results of the same run: target versions and finalized features for the "
                             "Environment widget")
    allure.add_argument("--single-file", action="store_true", help="one index.html with everything inlined")
    # The executor and build name default to what a CI system sets in the environment.
    allure.add_argument("--executor-name", default=os.environ.get("CI_NAME") or ("CI" if os.environ.get("CI")
                                                                                 else "local"))
    allure.add_argument("--build-name", default=os.environ.get("GITHUB_RUN_ID") or "", metavar="NAME")
    allure.add_argument("--build-url", default="", metavar="URL")
    allure.set_defaults(handler=command_allure)
    from ..report.sinks import FileOutput

    for output in outputs():
        if issubclass(output, FileOutput):
            written = kinds.add_parser(output.name, help=f"from a results file, what {output.options[0].flag} writes "
                                                         f"during a run: {output.description or output.name}")
            written.add_argument("file", metavar="FILE", help="the file written")
            written.add_argument("--results", default=DEFAULT_RESULTS, metavar="FILE",
                                 help=f"JSONL results file (default: {DEFAULT_RESULTS})")
            written.add_argument("--run-id", metavar="ID", help="the run (default: the file's last)")
            written.set_defaults(handler=command_file_output, output=output)


def command_allure(arguments) -> int:
    """Build the Allure HTML report from an Allure results folder; the exit status."""
    from ..report.allure_html import AllureUnavailable, build, environment_from_results, harness_version

    executor = {"name": arguments.executor_name, "type": "kafka-conformance",
                "buildName": arguments.build_name or f"conformance {harness_version()}",
                "reportName": "Kafka transaction protocol conformance"}
    if arguments.build_url:
        executor["buildUrl"] = arguments.build_url
    try:
        output = build(Path(arguments.results_dir), Path(arguments.output), executor=executor,
                       environment=environment_from_results(arguments.results),
                       previous_report=Path(arguments.history_from) if arguments.history_from else None,
                       single_file=arguments.single_file)
    except (AllureUnavailable, FileNotFoundError, RuntimeError) as error:
        print(f"report allure: {error}", file=sys.stderr)
        return 2
    print(f"wrote {output / 'index.html'}")
    return 0


def command_file_output(arguments) -> int:
    """Write an end-of-run output from a results file's run; the exit status."""
    from ..report.sinks import RunEnd, SinkContext
    from ..results.store import read_records

    try:
        records = read_records(arguments.results)
    except OSError as error:
        print(f"report {arguments.output.name}: cannot read {arguments.results}: {error}", file=sys.stderr)
        return 2
    run_id: str = arguments.run_id or (records[-1].run_id if records else "")
    records = [record for record in records if record.run_id == run_id]
    if not records:
        print(f"report {arguments.output.name}: no results of run {run_id or '(none)'} in {arguments.results}",
              file=sys.stderr)
        return 2
    # the output as the run would have made it, given its option, and ended on these records
    results = Path(arguments.results)
    context = SinkContext(results, run_id, options={arguments.output.options[0].dest: arguments.file})
    arguments.output.open(context).finish(RunEnd(results, run_id, environment=dict, records=lambda: records))
    print(f"wrote {arguments.file} ({len(records)} results of run {run_id})")
    return 0
