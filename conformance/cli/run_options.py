"""The options ``conformance run`` takes, and the pytest arguments they become.

``conformance flaky`` takes the same options (it runs the same selection N times), so both commands
add them from here and turn them into pytest arguments the same way.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from ..defaults import DEFAULT_ALLUREDIR, DEFAULT_RESULTS, DEFAULT_TARGET
from ..report.invocation import SUITE_PATHS_HELP, plugin_arguments, suite_paths
from ..runner.parallel import DEFAULT_JOBS


def add_run_arguments(parser, *, results: str = DEFAULT_RESULTS, alluredir: str = DEFAULT_ALLUREDIR,
                      results_flags: tuple[str, ...] = ("--results",)) -> None:
    """Paths and --item, --target, --jobs, --strict, --client-config, --principal, --restart-command, --node-control, --drafts, --long, --transcripts,
    --transcripts-on-console, --results, --alluredir."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help=SUITE_PATHS_HELP)
    parser.add_argument("--item", action="append", metavar="ID",
                        help="run only this item, by the id reports print (suite::case@vN; suite::case for every "
                             "version of the case; repeatable): a rerun that works in any folder")
    parser.add_argument("--target", action="append", metavar="SPEC",
                        help="target spec, repeatable for a matrix; PRODUCT[:VERSION]@HOST:PORT names a broker the "
                             f"harness attaches to (default: {DEFAULT_TARGET})")
    # default None, resolved in pytest_options: the help (and docs/reference/cli.md) must not show one machine's count
    parser.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                        help="items of a target work N at a time on the one broker the run uses (an item asleep "
                             "on a timer lends its place), serial cases alone; 1: one after another (default: four "
                             "per core, at most 16)")
    parser.add_argument("--strict", action="store_true", help="SHOULD and MAY deviations fail too")
    parser.add_argument("--client-config", metavar="FILE",
                        help="Kafka client properties for HOST:PORT targets (TLS, mutual TLS, SASL PLAIN or SCRAM)")
    parser.add_argument("--principal", action="append", metavar="NAME=FILE",
                        help="client config of a principal the authorization cases run as on HOST:PORT targets "
                             "(--principal guest=guest.properties --principal nobody=nobody.properties), or one "
                             "YAML/properties file mapping them; the Kafka principal is a principal=User:... key, "
                             "or User:<sasl.username> for PLAIN and SCRAM")
    parser.add_argument("--restart-command", metavar="COMMAND",
                        help="shell command that brings a HOST:PORT target back once it stops answering (the way "
                             "its supervisor restarts it: 'systemctl restart mybroker'); the run goes on, and the "
                             "items under way at the crash run again one at a time to find the one that did it")
    parser.add_argument("--node-control", metavar="FILE",
                        help="YAML file of the commands that stop, start and move leadership on the nodes of a "
                             "HOST:PORT cluster (templates such as 'systemctl stop kafka@{node}'); the failover "
                             "cases then run on it as on kafka,nodes=3")
    parser.add_argument("--drafts", action="store_true", help="run the cases graded against draft KIP texts too")
    parser.add_argument("--long", action="store_true",
                        help="run the cases tagged long too: the end of the producer epoch space, where each case "
                             "first takes its producer through some 32,000 epochs, and idle waits past a broker's "
                             "expiry around a restart (skipped by default)")
    parser.add_argument("--transcripts", choices=["failures", "all", "none"], default="failures",
                        help="which items keep their exchanges in the results file and the Allure results "
                             "(default: failures)")
    parser.add_argument("--transcripts-on-console", action="store_true",
                        help="pytest's full report of every item that does not pass, transcripts included "
                             "(default: a progress line, then one compact entry per departing case; "
                             "-- -v does the same)")
    parser.add_argument(*results_flags, dest="results", default=results, metavar="FILE",
                        help=f"JSONL results file, appended (default: {results})")
    parser.add_argument("--alluredir", default=alluredir, metavar="DIR",
                        help=f"Allure results folder, emptied first ('' for none; default: {alluredir or 'none'})")


# A run tests brokers, not Python. Without these, pytest rewrites the asserts of every harness module it
# imports (about 2 s of a run's start where bytecode is not cached), hypothesis's plugin imports hypothesis
# for its summary line (1.7 s at the end), and the unraisable-exception plugin collects garbage over the
# whole run's results before exiting (1 s); Python still prints an unraisable exception itself.
LEAN = ["--assert=plain", "-p", "no:hypothesispytest", "-p", "no:unraisableexception"]


def pytest_options(arguments, run_id: str, *, clean_alluredir: bool = True) -> list[str]:
    """The pytest arguments of one run of the selection ``arguments`` describe (those after ``--`` not included)."""
    # -W default: a run from the harness's own checkout must not inherit the test suite's "warnings are errors"
    # (pyproject.toml): there a warning is a failed self-test, here it would be a run ended by an INTERNALERROR.
    # Paths go as --option=PATH, one argument: pytest finds its rootdir and ini file before it knows the plugins'
    # options, and took the PATH of "--suite PATH" for a test path; a suite and a results file outside the
    # checkout it was run from then left it without the checkout's ini, and the checkout's tests/conftest.py
    # failed to import ("No module named 'worker_groups'") unless an Allure folder inside it pointed it back.
    options = [*plugin_arguments(), "-W", "default", "--conformance-run-id", run_id, f"--results={arguments.results}",
               "--conformance-jobs", str(_jobs_of(arguments)), *LEAN]
    for target in arguments.target or [DEFAULT_TARGET]:
        options += ["--target", target]
    from ..extension import Extensions  # here: the plugins load only when a run is made

    # No paths: the suites the plugins contribute (the bundled ones, or suites/ here in their place).
    for path in suite_paths(arguments.paths, None if arguments.paths else Extensions.for_run().suite_dirs()):
        options.append(f"--suite={path}")
    for item in getattr(arguments, "item", None) or []:
        options.append(f"--conformance-item={item}")
    if arguments.strict:
        options.append("--conformance-strict")
    if arguments.drafts:
        options.append("--conformance-drafts")
    if getattr(arguments, "long", False):
        options.append("--conformance-long")
    console = "pytest" if getattr(arguments, "transcripts_on_console", False) else "compact"
    options += ["--transcripts", arguments.transcripts, "--conformance-console", console]
    if arguments.client_config:
        options.append(f"--client-config={arguments.client_config}")
    if getattr(arguments, "node_control", None):
        options.append(f"--node-control={arguments.node_control}")
    if getattr(arguments, "restart_command", None):
        options += ["--conformance-restart-command", arguments.restart_command]
    for principal in getattr(arguments, "principal", None) or []:
        options.append(f"--principal={principal}")
    if arguments.alluredir:
        options.append(f"--alluredir={arguments.alluredir}")
        if clean_alluredir:  # one run, one Allure report: results left from an earlier run would show up as retries
            options.append("--clean-alluredir")
    return options


def add_output_arguments(parser) -> None:
    """The options of every output the run's plugins register (``--junit``, ``--sarif``, a plugin's own)."""
    from ..report.sinks import add_output_options

    add_output_options(parser, outputs())


def output_arguments(arguments) -> list[str]:
    """The outputs' options given to a command, as pytest arguments (``conformance run`` passes them on)."""
    from ..report.sinks import forwarded_output_options

    return forwarded_output_options(arguments, outputs())


def print_written_outputs(arguments) -> None:
    """Names each file an output's option asked for (``--junit FILE``), once the run that writes it ended."""
    for output in outputs():
        for option in output.options:
            written = getattr(arguments, option.dest, None)
            if written and Path(written).exists():
                print(f"wrote {written}")


@functools.cache
def outputs() -> tuple:
    """The outputs the installed plugins register (asked once per process: the parsers are built once)."""
    from ..extension import Extensions

    return tuple(Extensions.for_run().outputs().values())


def _jobs_of(arguments) -> int:
    """--jobs as given, else DEFAULT_JOBS; 1 for commands that have no --jobs."""
    if not hasattr(arguments, "jobs"):
        return 1
    return DEFAULT_JOBS if arguments.jobs is None else arguments.jobs


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a whole number of at least 1, not {text!r}")
    return jobs


def principal_problem(arguments) -> str | None:
    """Why the ``--principal`` options cannot be used (one line, no secret), found before any run starts."""
    options = getattr(arguments, "principal", None) or []
    if not options:
        return None
    from ..targets.principals import PrincipalConfigError, read_principals

    try:
        read_principals(options)
    except PrincipalConfigError as error:
        return str(error)
    return None
