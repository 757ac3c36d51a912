"""Suite files as pytest collectors and cases as pytest items: the adapter between pytest and the runner.

One item per case × target × API version, named ``case-id[target-vN]``. Items are plain
``pytest.Item``\\ s: the runner needs no fixtures, and the plugin owns the target lifecycle.
The run's session decides an item's verdict; :func:`conclude` raises it as pytest's.

With ``--conformance-jobs N`` (``conformance run --jobs``) a target's items run N at a time ahead of
pytest's order (:class:`~conformance.runner.parallel.RunAhead`), on the one target the run started; each
item still reports in order, as soon as its own result is there. Serial cases run alone: beside the others
on a second target of the same spec where the harness provisions it, else after them. Wire captures
and pytest-xdist workers run items one at a time (a capture is per item; a worker holds only its share).
"""

from __future__ import annotations

import re
import threading
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..report import allure as allure_report
from ..report.console import text
from ..suite.loader import SuiteError, load_suites
from ..suite.model import Case, CaseResult
from ..results.record import Outcome, Verdict
from ..runner.parallel import RunAhead
from ..targets.base import Capability, TargetUnavailable
from ..targets.pool import TargetStartFailed

if TYPE_CHECKING:
    from .run_state import RunState

# Cases tagged long (the end of the epoch space: tens of thousands of requests each) would take a run from
# seconds to many minutes of the broker's time: they run when asked for.
LONG_REASON = "takes minutes of the broker's time (tagged long); run with --long (conformance run) or --conformance-long"

CODEC_WARMED = pytest.StashKey[bool]()
RUN_AHEAD = pytest.StashKey[dict]()  # target spec -> its RunAhead, for the session
TWIN_STARTS = pytest.StashKey[dict]()  # target spec -> the start of its twin under way (a Future), or None


class ConformanceFailure(AssertionError):
    """The target departed from the suite's expectation. An AssertionError so Allure says *failed*."""

    def __init__(self, result: CaseResult):
        super().__init__(text.headline(result))
        self.result = result


class HarnessError(Exception):
    """The harness or the infrastructure failed: no verdict on the target (Allure says *broken*)."""

    def __init__(self, result: CaseResult):
        super().__init__(text.headline(result))
        self.result = result


class TargetDown(Exception):
    """The item's target could not be used (unavailable, failed to start, stopped answering): no verdict.
    Its message is the whole report: the first item of a target carries the diagnosis, later ones one line."""


class SuiteLoadFailed(Exception):
    def __init__(self, errors: list[SuiteError]):
        super().__init__("\n".join(map(str, errors)))
        self.errors = errors


# --------------------------------------------------------------------------------- markers
def marker_name(text: str) -> str:
    """``KIP-447 (draft)`` → ``kip447``, ``EndTxn`` → ``endtxn``: names ``-m`` expressions can use."""
    kip = re.match(r"\s*KIP-(\d+)", text, re.IGNORECASE)
    if kip:
        return f"kip{kip.group(1)}"
    return re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")


def case_markers(case: Case) -> list[tuple[str, dict]]:
    """(name, keyword arguments) of every marker a case's items carry; bare markers have none.

    Keyword arguments rather than positional ones because ``-m`` can match only those:
    ``-m "api(name='EndTxn')"``.
    """
    markers: list[tuple[str, dict]] = [("kip", {"name": case.kip}),
                                       ("requirement", {"level": case.requirement.value})]
    bare = [marker_name(case.kip), case.requirement.value.lower()]
    if case.api:
        markers.append(("api", {"name": case.api}))
        bare.append(marker_name(case.api))
    if case.draft:
        bare.append("draft")
    if case.serial:
        bare.append("serial")
    bare += [marker_name(tag) for tag in case.tags]
    markers += [(name, {}) for name in dict.fromkeys(bare) if name]
    return markers


# --------------------------------------------------------------------------------- collection
class SuiteFile(pytest.File):
    def __init__(self, *, state: "RunState", **kwargs):
        super().__init__(**kwargs)
        self.state = state

    def collect(self):
        suites, errors = load_suites([self.path], components=self.state.components)
        if errors:
            raise SuiteLoadFailed(errors)
        for suite in suites:
            for case in suite.cases:
                markers = case_markers(case)
                self.state.register_markers(name for name, arguments in markers if not arguments)
                for target_spec in self.state.pool.specs:
                    for version in self.state.runner(target_spec).case_versions(case):
                        item = CaseItem.from_parent(self, name=item_name(case, target_spec, version),
                                                    state=self.state, case=case, version=version,
                                                    target_spec=target_spec)
                        for name, arguments in markers:
                            item.add_marker(getattr(pytest.mark, name)(**arguments) if arguments else name)
                        if case.draft and not self.config.getoption("conformance_drafts", False):
                            # graded against a draft text that Kafka (rightly) does not implement
                            item.add_marker(pytest.mark.skip(reason="checks a draft KIP text; run with --conformance-drafts"))
                        elif case.long and not self.config.getoption("conformance_long", False):
                            item.add_marker(pytest.mark.skip(reason=LONG_REASON))
                        yield item

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, SuiteLoadFailed):
            return f"malformed suite file ({len(excinfo.value.errors)} problems):\n{excinfo.value}"
        return super().repr_failure(excinfo)


def item_name(case: Case, target_spec: str, version: int | None) -> str:
    return f"{case.id}[{target_spec}]" if version is None else f"{case.id}[{target_spec}-v{version}]"


# --------------------------------------------------------------------------------- items
class CaseItem(pytest.Item):
    def __init__(self, *, state: "RunState", case: Case, version: int | None, target_spec: str, **kwargs):
        super().__init__(**kwargs)
        self.state, self.case, self.version, self.target_spec = state, case, version, target_spec
        self.result: CaseResult | None = None
        if case.api:
            self.extra_keyword_matches.add(case.api)  # -k EndTxn, whatever the marker spelling
        self.user_properties += [("kip", case.kip), ("api", case.api or ""), ("api_version", "" if version is None else version),
                                 ("target", target_spec), ("requirement", case.requirement.value)]

    def setup(self) -> None:
        if allure_report.enabled(self.config):
            allure_report.label_case(self.case, self.version, self.target_spec)
        down = self.state.down.get(self.target_spec)
        if down is not None and self.run_ahead() is None:  # running ahead, the item's result may be there already
            self.state.record(self, self.result_without_run(Outcome.ERROR, f"not run: {down}"))
            raise TargetDown(f"not run: {down.splitlines()[0]}")
        self.warm_codec()
        self.head_start_twin()
        try:
            self.state.pool.acquire(self.target_spec)
        except (TargetUnavailable, TargetStartFailed) as problem:
            what = (getattr(problem, "what", "cannot run here") if isinstance(problem, TargetUnavailable)
                    else "did not start")
            text = str(problem) if isinstance(problem, TargetStartFailed) else f"target {self.target_spec!r} {what}: {problem}"
            self.state.target_down(self.target_spec, text, self.session)
            self.state.record(self, self.result_without_run(Outcome.ERROR, text))
            raise TargetDown(text) from None

    def runtest(self) -> None:
        if allure_report.enabled(self.config):
            allure_report.describe_case(self.case, self.case_location())
        capture = self.start_capture()
        try:
            result = self.run_case(capture is not None)
        except Exception:  # noqa: BLE001 - the runner promises not to raise; if it does, that is a harness error
            result = self.result_without_run(Outcome.ERROR, "the runner raised:\n" + traceback.format_exc())
        finally:
            path = capture.stop() if capture is not None else None
        if path is not None:
            result.artifacts["pcap"] = str(path)
        self.result = result
        self.state.ran.add(self.target_spec)
        self.state.record(self, result)
        runner_down = getattr(self.state.runner(self.target_spec), "down", None)
        if runner_down and self.target_spec not in self.state.down:
            if self.run_ahead() is not None:
                # Not the end of the target's items: those running ahead may have ended before it went down (the
                # hazardous ones run last, ahead of their reports), and each of the others is "not run" at once.
                self.state.down[self.target_spec] = runner_down
            else:
                self.state.target_down(self.target_spec, runner_down, self.session)
        conclude(result, self.state.session.verdict(result))

    def run_case(self, capturing: bool) -> CaseResult:
        runner = self.state.runner(self.target_spec)
        if capturing or not self.runs_ahead():
            return runner.run(self.case, self.version)
        aheads = self.config.stash.setdefault(RUN_AHEAD, {})
        ahead = aheads.get(self.target_spec)
        if ahead is None:  # the target has started (setup): its items from here on run ahead
            ahead = aheads[self.target_spec] = RunAhead(runner, self.items_from_here(), self.jobs(),
                                                        twin=self.twin_factory())
            self.config.add_cleanup(ahead.close)
        return ahead.result(self.case, self.version)

    def run_ahead(self) -> RunAhead | None:
        """The RunAhead of this item's target, once its first item made it."""
        return self.config.stash.get(RUN_AHEAD, {}).get(self.target_spec)

    def jobs(self) -> int:
        return self.config.getoption("conformance_jobs", 1) or 1

    def runs_ahead(self) -> bool:
        """Whether this target's items run concurrently (wire captures and xdist workers run them one by one)."""
        return (self.jobs() > 1 and not self.config.getoption("conformance_capture", False)
                and not hasattr(self.config, "workerinput"))

    def items_from_here(self) -> list[tuple[Case, int | None]]:
        """This target's items from this one on; those a marker skips never run, so they are left out."""
        later = self.session.items[self.session.items.index(self):]
        return [(item.case, item.version) for item in later
                if isinstance(item, CaseItem) and item.target_spec == self.target_spec
                and not any(item.iter_markers("skip")) and not any(item.iter_markers("skipif"))]

    def head_start_twin(self) -> None:
        """Once per target, where its items will run ahead and some are serial: the twin they run on starts now,
        beside the target, not once the target is up. Those items are a run's longest chain; under the others'
        load the twin took 4 s to start after the target's 2."""
        starts = self.config.stash.setdefault(TWIN_STARTS, {})
        if self.target_spec in starts:
            return
        serial = self.runs_ahead() and any(case.serial for case, _ in self.items_from_here())
        starts[self.target_spec] = self.state.pool.start_twin(self.target_spec) if serial else None

    def warm_codec(self) -> None:
        """Once a session, as the first target starts (seconds in which the harness only waits): compile in
        the background the codecs of every item's version, and of every API at its newest version (set-up
        requests), instead of one by one as items first use them."""
        if self.config.stash.get(CODEC_WARMED, False):
            return
        self.config.stash[CODEC_WARMED] = True
        codec = self.state.components.codec
        pairs = {(item.case.api, item.version) for item in self.session.items
                 if isinstance(item, CaseItem) and item.case.api is not None and item.version is not None}
        pairs |= {(spec.name, spec.versions()[-1]) for spec in codec.registry.apis() if spec.versions()}
        threading.Thread(target=codec.warm, args=(sorted(pairs),), name="codec-warm", daemon=True).start()

    def twin_factory(self):
        """How to start a second target of this spec for the serial items, where the harness provisions it
        (None for a broker it only attaches to)."""
        if Capability.TWIN not in self.state.pool.target(self.target_spec).capabilities:
            return None

        def start_twin():
            starting = self.config.stash.get(TWIN_STARTS, {}).get(self.target_spec)
            if starting is not None:
                twin = starting.result()  # raises what its start raised
            else:
                twin = self.state.pool.twin(self.target_spec)
                twin.start()
            runner = self.state.runner_factory(twin, run_id=self.state.run_id, strict=self.state.strict,
                                               components=self.state.components)
            return runner, twin.stop

        return start_twin

    def start_capture(self):
        """A running capture of this item's traffic when --wire-capture asks for one (None otherwise)."""
        if not self.config.getoption("conformance_capture", False):
            return None
        from ..capture.sniffer import Capture, target_ports

        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{self.case.suite.id}.{self.name}")
        path = Path(str(self.config.rootpath)) / self.config.getoption("conformance_capture_dir") / self.state.run_id / f"{safe}.pcapng"
        capture = Capture(target_ports(self.state.pool.target(self.target_spec)), path)
        return capture if capture.start() else None

    def result_without_run(self, outcome: Outcome, message: str) -> CaseResult:
        target = self.state.pool.target(self.target_spec)
        try:
            target_version = target.version
        except Exception:  # noqa: BLE001 - a version is nice to have in a result, never worth a crash
            target_version = None
        target_name = target.name
        return CaseResult.for_case(self.case, self.version, target=self.target_spec, target_version=target_version,
                                   outcome=outcome, run_id=self.state.run_id, message=message,
                                   target_name=target_name)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (ConformanceFailure, HarnessError)):
            return text.render(excinfo.value.result, location=self.case_location(), brief=not self.state.verbose)
        if isinstance(excinfo.value, TargetDown):
            return str(excinfo.value)
        if isinstance(excinfo.value, pytest.xfail.Exception):  # a finding conclude() gave as an xfail: its headline
            # is the report's reason; pytest's traceback would show this plugin's source, parsed anew for every
            # xfail (a run's CLI commands spent more CPU there than in their codecs)
            return f"{self.case_location()}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def case_location(self) -> str:
        """``path:line`` of the case, the path relative to the rootdir as pytest shows it."""
        return f"{self.location[0]}:{self.case.line}"

    def reportinfo(self):
        label = self.target_spec if self.version is None else f"{self.target_spec} v{self.version}"
        return self.path, max(self.case.line - 1, 0), f"{self.case.full_id} [{label}]"


def conclude(result: CaseResult, verdict: Verdict) -> None:
    """Raise the pytest verdict the run's session decided (:class:`~conformance.results.Verdict`; returns normally
    for a pass).

    A SHOULD or MAY deviation without ``--conformance-strict`` is an *xfail*: visible as ``x`` and
    listed by ``-rx`` with its reason, in the JSONL file as ``failed`` and in Allure as skipped with the
    category "SHOULD/MAY not met" — a finding to read, not a broken build. An IMPLEMENTATION case whose
    step under test departs (DIFFERS) is an xfail too, even under strict: in the JSONL file as
    ``differs`` and in Allure as skipped with the category "Differs from Kafka (IMPLEMENTATION)".
    BLOCKED is never a pass: it fails (or xfails) like a departure, under its own headline.
    """
    if verdict is Verdict.PASSED:
        return
    if verdict is Verdict.XFAILED:
        pytest.xfail(text.headline(result))
    if verdict is Verdict.FAILED:
        raise ConformanceFailure(result)
    if result.outcome is Outcome.UNSUPPORTED:
        pytest.skip(f"unsupported: {result.message or 'the target does not advertise this API version'}")
    if verdict is Verdict.SKIPPED:
        pytest.skip(result.message or "skipped by the runner")
    raise HarnessError(result)
