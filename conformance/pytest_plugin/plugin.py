"""The ``pytest11: conformance`` entry point: suites become items, items run through the runner.

Dormant unless asked: it collects suites only with ``--target`` or ``--suite`` (or the
``conformance_target`` ini option, or ``CONFORMANCE_TARGET``), so the harness's own unit tests
and any other project's tests run as if it were not installed.

- ``pytest --target kafka`` runs ``suites/`` of the rootdir (the bundled suites when it has none);
  ``--suite PATH`` picks others; YAML files given as arguments run too. Several ``--target`` give a matrix.
- Targets start when the first selected item needs one and stop at the end of the session.
- Outcomes map to pytest verdicts by the session's one rule (:class:`conformance.results.Verdict`), which
  :func:`conformance.pytest_plugin.items.conclude` raises: a MUST deviation fails;
  a SHOULD/MAY deviation is an xfail unless ``--conformance-strict`` (pytest owns ``--strict``).
- ``--conformance-console compact`` (what ``conformance run`` passes) replaces pytest's report per item
  with a progress line per target and one entry per departing case (:mod:`conformance.report.console.progress`).
- The run's life is a :class:`conformance.session.RunSession`, made here once per run (or handed in by an
  entry point as a plugin object) and kept in ``config.stash`` with the pytest side's state: its plugin
  manager (pytest plugins with ``conformance_*`` hooks, a conftest.py, join it), sinks and verdict rule.
- Every finished item goes through the session to the run's outputs (``conformance_register_outputs``: the JSONL
  ``--results`` file, Allure, ``--junit``, ``--sarif``, a plugin's, whose options this plugin adds to pytest's) and
  reaches the ``conformance_result_recorded`` hook; under pytest-xdist all workers append to the same file and
  share the controller's run id, and the controller alone ends the outputs.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from .. import code_cache
from ..defaults import DEFAULT_CAPTURES, DEFAULT_RESULTS, DEFAULT_TARGET
from ..results.store import new_run_id
from ..targets.pool import TargetPool, TargetStartFailed

if TYPE_CHECKING:  # the rest is imported once the plugin is active: a dormant plugin costs next to nothing
    from .run_state import RunState

TARGET_ENVIRONMENT_VARIABLE = "CONFORMANCE_TARGET"
RUN_ID_ENVIRONMENT_VARIABLE = "CONFORMANCE_RUN_ID"

STATE_KEY = pytest.StashKey["RunState"]()

FIXED_MARKERS = {
    "kip(name)": "the KIP or specification a conformance case checks: -m \"kip(name='KIP-98')\"",
    "api(name)": "the Kafka API a conformance case puts under test: -m \"api(name='EndTxn')\"",
    "requirement(level)": "MUST, SHOULD or MAY: how binding the checked sentence is",
    "must": "conformance cases of MUST requirements",
    "should": "conformance cases of SHOULD requirements",
    "may": "conformance cases of MAY requirements",
    "implementation": "cases of what Apache Kafka does where the KIPs leave it open (never conformance)",
    "draft": "conformance cases that check a draft KIP text",
    "serial": "conformance cases that must not run alongside others",
}


def make_runner(target, *, run_id: str, strict: bool, components=None):
    """The runner for one target (a seam: the plugin's own tests replace it with a fake)."""
    from ..runner.runner import Runner

    return Runner(target, run_id=run_id, strict=strict, components=components)


# ------------------------------------------------------------------------------------ options
def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("conformance", "Kafka transaction protocol conformance")
    group.addoption("--target", action="append", default=[], metavar="SPEC", dest="conformance_targets",
                    help="target to test: kafka, kafka:VERSION, tansu, rdkafka-mock, container:IMAGE, HOST:PORT "
                         "(PRODUCT[:VERSION]@HOST:PORT names the product); repeat for a matrix (`conformance targets` "
                         "lists the kinds)")
    group.addoption("--client-config", metavar="FILE", default=None, dest="conformance_client_config",
                    help="Kafka client properties (security.protocol, sasl.*, ssl.*) for HOST:PORT targets: "
                         "TLS (client certificates too) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
    group.addoption("--principal", action="append", default=[], metavar="NAME=FILE", dest="conformance_principals",
                    help="the client config of a principal the authorization cases run as on HOST:PORT targets "
                         "(guest=guest.properties, nobody=nobody.properties; repeatable), or one YAML or properties "
                         "file mapping names to configs; its Kafka principal is a principal=User:... key, or "
                         "User:<sasl.username> for PLAIN and SCRAM")
    group.addoption("--node-control", metavar="FILE", default=None, dest="conformance_node_control",
                    help="YAML file of the commands that stop, start and move leadership on the nodes of a HOST:PORT "
                         "cluster: its failover cases then run (see docs/how-to/certify.md)")
    group.addoption("--suite", action="append", default=[], metavar="PATH", dest="conformance_suites",
                    help="suite file or folder (repeatable; default: suites/ of the rootdir)")
    group.addoption("--conformance-item", action="append", default=[], metavar="ID", dest="conformance_items",
                    help="run only this item, by its id (suite::case@vN; suite::case for the case at every version; "
                         "repeatable): the same id anywhere, whatever folder the suites are read from")
    group.addoption("--conformance-strict", action="store_true", default=None, dest="conformance_strict",
                    help="SHOULD and MAY deviations fail like MUST ones (default: reported as xfail)")
    group.addoption("--results", metavar="FILE", default=None, dest="conformance_results",
                    help=f"JSONL file every result is appended to (default: {DEFAULT_RESULTS} under the rootdir)")
    group.addoption("--conformance-run-id", metavar="ID", default=None, dest="conformance_run_id",
                    help="id stamped on every result line (default: a new timestamped id)")
    group.addoption("--transcripts", choices=["failures", "all", "none"], default="failures",
                    dest="conformance_transcripts",
                    help="which items keep their decoded exchanges in the results file and the Allure results "
                         "(default: failures; pytest's failure reports always have them)")
    group.addoption("--conformance-console", choices=["pytest", "compact"], default="pytest",
                    dest="conformance_console",
                    help="pytest: pytest's own reports (default); compact: a progress line per target and one "
                         "entry per departing case instead of a report per item (conformance run's console; "
                         "-v shows pytest's reports again)")
    group.addoption("--conformance-jobs", type=int, default=1, metavar="N", dest="conformance_jobs",
                    help="run a target's items N at a time ahead of their reports, serial cases alone "
                         "(default: 1; conformance run --jobs sets it)")
    group.addoption("--conformance-restart-command", metavar="COMMAND", default=None,
                    dest="conformance_restart_command",
                    help="shell command that brings a HOST:PORT target back after it stopped answering (the way "
                         "its supervisor restarts it); the run then goes on, and items that ran beside the crash "
                         "run again one at a time to find the one that took it down")
    group.addoption("--conformance-drafts", action="store_true", default=False, dest="conformance_drafts",
                    help="also run cases that check a draft KIP text (skipped by default)")
    group.addoption("--conformance-long", action="store_true", default=False, dest="conformance_long",
                    help="also run the cases tagged long, which take minutes of the broker's time each "
                         "(skipped by default)")
    group.addoption("--wire-capture", action="store_true", default=False, dest="conformance_capture",
                    help="capture each item's traffic on the target's ports into a pcapng file "
                         "(dumpcap, or scapy; needs root), listed in the results and attached to Allure")
    group.addoption("--wire-capture-dir", metavar="DIR", default=DEFAULT_CAPTURES, dest="conformance_capture_dir",
                    help=f"where --wire-capture writes its files (default: {DEFAULT_CAPTURES})")
    from ..extension import Extensions
    from ..report.sinks import add_output_options
    from ..session import handed_in

    # the outputs' options (--junit, --sarif, a plugin's): those of the session an entry point hands in (it is
    # registered by now), else of the installed plugins
    session = handed_in(pluginmanager.get_plugins())
    extensions = session.extensions if session is not None else Extensions.for_run()
    add_output_options(group, extensions.outputs().values())
    parser.addini("conformance_target", type="linelist", default=[],
                  help="default targets when --target is not given")
    parser.addini("conformance_strict", type="bool", default=False, help="default of --conformance-strict")


def pytest_configure(config: pytest.Config) -> None:
    code_cache.install()  # each worker and each rerun builds the codecs the others built: compiled once
    for signature, description in FIXED_MARKERS.items():
        config.addinivalue_line("markers", f"{signature}: {description}")
    targets = _requested_targets(config)
    suites = config.getoption("conformance_suites")
    if not targets and not suites:
        return
    from ..extension import Extensions
    from ..extension.manager import has_hook_implementations
    from ..report.invocation import default_suites
    from ..session import RunSession, handed_in
    from .run_state import RunState

    # This run's plugins: the installed ones, and pytest plugins (conftest.py, -p) with conformance hooks. An entry
    # point that runs pytest may hand in its session (``pytest.main(..., plugins=[session])``): its plugins, run id
    # and results file are then this run's.
    joining = [plugin for plugin in config.pluginmanager.get_plugins() if has_hook_implementations(plugin)]
    session = handed_in(config.pluginmanager.get_plugins())
    if session is None:
        extensions = Extensions.for_run(plugins=joining)
    else:
        extensions = session.extensions
        for plugin in joining:
            if not extensions.manager.is_registered(plugin):
                extensions.register(plugin)
    invocation_dir = config.invocation_params.dir
    try:
        pool = TargetPool(targets or [DEFAULT_TARGET], extensions.target_kinds())
        _apply_client_config(config, pool, invocation_dir)
    except (ValueError, OSError) as error:
        raise pytest.UsageError(str(error)) from None
    roots = [(invocation_dir / suite).resolve() for suite in suites] or [
        path.resolve() for path in default_suites(config.rootpath, extensions.suite_dirs())]
    explicit_files = {
        (invocation_dir / argument.split("::")[0]).resolve()
        for argument in (config.args if config.args_source is pytest.Config.ArgsSource.ARGS else [])
        if argument.split("::")[0].endswith(".yaml")
    }
    _point_collection_at_suites(config, roots, explicit=bool(suites))
    if session is None:
        results = config.getoption("conformance_results")
        strict = config.getoption("conformance_strict")
        session = RunSession((invocation_dir / results) if results else config.rootpath / DEFAULT_RESULTS,
                             run_id=_run_id(config), extensions=extensions,
                             strict=bool(config.getini("conformance_strict") if strict is None else strict),
                             transcripts=config.getoption("conformance_transcripts"))
    problem = unwritable(session.results_path)
    if problem:
        raise pytest.UsageError(f"cannot write results to {session.results_path}: {problem}")
    session.pool = pool
    session.open(vars(config.option))
    state = RunState(
        config=config, session=session, pool=pool, suite_roots=roots, explicit_files=explicit_files,
        runner_factory=lambda target, **options: make_runner(target, **options),  # looked up late: a test seam
        restart_command=config.getoption("conformance_restart_command"),
    )
    config.stash[STATE_KEY] = state
    _compact_console(config, state)
    _stop_on_sigterm(config)


def _compact_console(config: pytest.Config, state: RunState) -> None:
    """``--conformance-console compact`` (``conformance run``): progress and compact entries, unless ``-v``."""
    if (config.getoption("conformance_console") != "compact" or config.get_verbosity() > 0
            or hasattr(config, "workerinput")):
        return
    from ..report.console.progress import ConsoleReporter

    def status() -> dict:  # what each target's runner says while the run goes on
        return {spec: runner.status() for spec, runner in list(state.runners.items()) if hasattr(runner, "status")}

    config.pluginmanager.register(ConsoleReporter(results_path=state.results_path, run_id=state.run_id,
                                                  default_results=DEFAULT_RESULTS, status=status),
                                  "conformance-console")


def unwritable(path: Path) -> str | None:
    """Why results could not be appended to ``path`` (None when they can), found before the first item."""
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    if path.exists():
        return None if path.is_file() and os.access(path, os.W_OK) else "not a writable file"
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not a writable folder"
    return None


INTERRUPTED_KEY = pytest.StashKey[str]()


def _restorer(signum: int, previous) -> Callable[[], None]:
    """What puts back the handler ``signum`` had before the run's own."""
    def restore() -> None:
        signal.signal(signum, previous)

    return restore


def _stop_on_sigterm(config: pytest.Config) -> None:
    """SIGTERM (what CI runners and timeouts send) ends the run like Ctrl-C (SIGINT): targets stopped,
    results flushed, summary printed. Each signal is also remembered: a KeyboardInterrupt that lands while
    another plugin's old-style hook wrapper tears down (hypothesis's makereport) is turned by pluggy into a
    warning, and the run would go on; :func:`pytest_runtest_teardown` then stops it. Only the main thread may
    install handlers; elsewhere the defaults stay."""
    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum, frame):
        config.stash[INTERRUPTED_KEY] = signal.Signals(signum).name
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    for signum in (signal.SIGTERM, signal.SIGINT):
        config.add_cleanup(_restorer(signum, signal.signal(signum, interrupt)))


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """An interrupt some hook swallowed still ends the run, after this item, as an interrupted run."""
    name = item.config.stash.get(INTERRUPTED_KEY, None)
    if name is not None and not item.session.shouldstop:
        item.session.shouldstop = f"the run was interrupted ({name})"


def _apply_client_config(config: pytest.Config, pool: TargetPool, invocation_dir: Path) -> None:
    _apply_principals(config, pool, invocation_dir)
    _apply_node_control(config, pool, invocation_dir)
    if config.getoption("conformance_restart_command"):
        from .run_state import brings_itself_back

        if all(brings_itself_back(pool.target(spec)) for spec in pool.specs):
            raise ValueError("--restart-command is for HOST:PORT targets (the harness brings back the brokers it "
                             "starts, and restarts the nodes of a cluster given --node-control)")
    option = config.getoption("conformance_client_config")
    if not option:
        return
    from ..targets.kafka.config import read_properties

    settings = read_properties(invocation_dir / option)
    attached = pool.configurable()
    if not attached:
        raise ValueError("--client-config is for HOST:PORT targets (the harness configures the brokers it starts)")
    for target in attached:
        target.configure(client_config=settings)


def _apply_node_control(config: pytest.Config, pool: TargetPool, invocation_dir: Path) -> None:
    """``--node-control``: the commands that control the nodes of HOST:PORT targets, read and checked now."""
    option = config.getoption("conformance_node_control")
    if not option:
        return
    from ..targets.base import CapabilityMissing
    from ..targets.node_control import load

    control = load(invocation_dir / option)
    taken = 0
    for target in pool.configurable():
        try:
            target.configure(node_control=control)
            taken += 1
        except CapabilityMissing:  # proxy+HOST:PORT: one address in front of the cluster
            continue
    if not taken:
        raise ValueError("--node-control is for HOST:PORT targets (the harness controls the nodes it starts)")


def _apply_principals(config: pytest.Config, pool: TargetPool, invocation_dir: Path) -> None:
    """``--principal``: the authorization cases' principals of HOST:PORT targets, read and checked now."""
    options = config.getoption("conformance_principals")
    if not options:
        return
    from ..targets.principals import read_principals

    principals = read_principals(options, invocation_dir)
    attached = pool.configurable()
    if not attached:
        raise ValueError("--principal is for HOST:PORT targets (the harness makes the principals of the brokers "
                         "it starts)")
    for target in attached:
        target.configure(principals=principals)


def _requested_targets(config: pytest.Config) -> list[str]:
    given = config.getoption("conformance_targets") or config.getini("conformance_target")
    if not given:
        given = os.environ.get(TARGET_ENVIRONMENT_VARIABLE, "").split(",")
    return [spec.strip() for spec in given if spec.strip()]


def _point_collection_at_suites(config: pytest.Config, roots: list[Path], *, explicit: bool) -> None:
    """With no path arguments, collect the suites (not the rootdir's Python tests); ``--suite`` adds to paths."""
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        missing = [root for root in roots if not root.exists()]
        if missing:
            raise pytest.UsageError(f"no suites at {', '.join(map(str, missing))}; name suite files or folders "
                                    "(pytest: --suite PATH; conformance run: PATH arguments)")
        config.args[:] = [str(root) for root in roots]
    elif explicit:
        config.args.extend(str(root) for root in roots if str(root) not in config.args)


def _run_id(config: pytest.Config) -> str:
    worker_input = getattr(config, "workerinput", None)
    if worker_input and worker_input.get("conformance_run_id"):
        return worker_input["conformance_run_id"]
    return config.getoption("conformance_run_id") or os.environ.get(RUN_ID_ENVIRONMENT_VARIABLE) or new_run_id()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist: every worker stamps its results with the controller's run id."""
    state = node.config.stash.get(STATE_KEY, None)
    if state is not None:
        node.workerinput["conformance_run_id"] = state.run_id


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return None
    return [f"conformance: targets {', '.join(state.pool.specs)}; run {state.run_id}; "
            f"strict {'on' if state.strict else 'off'}; results {state.results_path}"]


# ------------------------------------------------------------------------------------ collection
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    state = parent.config.stash.get(STATE_KEY, None)
    if state is None or not state.is_suite_file(file_path):
        return None
    from .items import SuiteFile

    return SuiteFile.from_parent(parent, path=file_path, state=state)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The items that send what a broker may not survive (``Case.hazardous``) run, and are reported, after
    every other item of their target, so a crash there costs no other verdict; where items run ahead
    (``--conformance-jobs`` above 1), the serial ones are reported after the others, before those.

    pytest reports items in order, each once its result is there. A serial item waits its turn on the
    twin for most of a run; reported in suite order, it would hold back the report of every item after it,
    which all piled up for the end (0.9 s after the last item, in a Kafka run). Their order is kept otherwise."""
    if config.stash.get(STATE_KEY, None) is None:
        return
    from .items import CaseItem

    _select_items(config, items)
    ahead = (config.getoption("conformance_jobs", 1) or 1) > 1
    items.sort(key=lambda item: (isinstance(item, CaseItem) and item.case.hazardous,
                                 ahead and isinstance(item, CaseItem) and item.case.serial))


def _select_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the items ``--conformance-item`` names (none named: all of them); an id that names no item read is a
    usage error, not an empty run that looks like a pass."""
    wanted = set(config.getoption("conformance_items", None) or ())
    if not wanted:
        return
    from ..results.ids import case_id, item_id
    from .items import CaseItem

    def ids(item: pytest.Item) -> set[str]:
        if not isinstance(item, CaseItem):
            return set()
        return {item_id(item.case.suite.id, item.case.id, item.version), case_id(item.case.suite.id, item.case.id)}

    chosen = {item: ids(item) & wanted for item in items}
    unknown = sorted(wanted.difference(*chosen.values()))
    if unknown:
        items.clear()  # nothing ran: no item gets a "not run" line
        raise pytest.UsageError(f"--item {', '.join(unknown)}: no such item in the suites read "
                                "(an id is suite::case@vN, as reports and `conformance show` print it)")
    config.hook.pytest_deselected(items=[item for item, found in chosen.items() if not found])
    items[:] = [item for item, found in chosen.items() if found]


# ------------------------------------------------------------------------------------ running
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    from .items import CaseItem, TargetDown

    if call.excinfo is not None and isinstance(call.excinfo.value, (TargetStartFailed, TargetDown)):
        report.longrepr = str(call.excinfo.value)  # the diagnosis says it all; the traceback is noise
    state = item.config.stash.get(STATE_KEY, None)
    if (state is not None and isinstance(item, CaseItem) and report.when == "setup" and report.skipped
            and item.nodeid not in state.recorded):
        # skipped by a marker (drafts without --conformance-drafts, -m/skipif): still one line per item
        from ..results.record import Outcome

        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        state.record(item, item.result_without_run(Outcome.SKIPPED, str(reason).removeprefix("Skipped: ")))
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return
    _record_items_not_run(session, state)
    state.finish()
    if hasattr(config, "workerinput"):
        return  # the controller writes run-level files once every worker is done
    state.session.finish(environment=lambda: _environment(state))


def _record_items_not_run(session: pytest.Session, state: RunState) -> None:
    """Every collected item gets a result line: those a stop or an interrupt left unrun say so.
    (Under pytest-xdist each worker knows only its own items, so this is for single-process runs.)"""
    from .items import CaseItem
    from ..results.record import Outcome

    if hasattr(session.config, "workerinput") or getattr(session.config.option, "numprocesses", None):
        return
    why = session.shouldstop or session.shouldfail or "the run was interrupted before it"
    for item in session.items:
        if isinstance(item, CaseItem) and item.nodeid not in state.recorded:
            skip = item.get_closest_marker("skip")
            if skip is not None:  # it would have been skipped anyway, and says why
                state.record(item, item.result_without_run(Outcome.SKIPPED, skip.kwargs.get("reason", "skipped")))
                continue
            down = state.down.get(item.target_spec)
            state.record(item, item.result_without_run(Outcome.ERROR, f"not run: {down or why}"))


@pytest.hookimpl(specname="pytest_terminal_summary", wrapper=True, tryfirst=True)
def pytest_terminal_summary_counting_outcomes(terminalreporter):  # pytest reads pytest_* names only
    """pytest's last line, written after every summary, counts the items per outcome, as the run's table does (the
    compact console counts them so from the start)."""
    try:
        return (yield)
    finally:
        from ..report.console.progress import count_as_outcomes

        count_as_outcomes(terminalreporter.stats)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or hasattr(config, "workerinput"):
        return
    from ..report.console.text import outcome_counts

    # Counted from the results, apart per outcome: pytest's own line sums a SHOULD not met and an
    # IMPLEMENTATION case that differs from Kafka alike as "xfailed".
    counts = state.session.summary()
    for spec in state.pool.specs:  # a matrix says which targets ran
        if spec in state.down:
            terminalreporter.write_line(f"conformance target {spec}: DOWN: {state.down[spec].splitlines()[0]}",
                                        red=True, bold=True)
        elif spec in state.ran:
            found = counts.get(spec)
            crashes = getattr(state.runners.get(spec), "crashes", 0)
            terminalreporter.write_line(f"conformance target {spec}: ran"
                                        + (f": {outcome_counts(found)}" if found else "")
                                        + (f"; {crashes} crash{'' if crashes == 1 else 'es'} attributed to the item "
                                           "that caused it" if crashes else ""))
    if state.results_path.exists():
        terminalreporter.write_line(f"conformance results: {state.results_path} (run {state.run_id})")


def _environment(state: RunState) -> dict[str, object]:
    """The run's description for Allure: the session's, with pytest's version and the suites."""
    return state.session.environment(specs=state.pool.specs, pytest=pytest.__version__, strict=state.strict,
                                     suites=", ".join(map(str, state.suite_roots)))
