"""The run session owns a run's life outside pytest: one set of plugins, every result to every sink and the
``conformance_result_recorded`` hook, one verdict rule, the run's end and its summary."""

from __future__ import annotations

import plugin_runs
import pytest

from conformance.extension import Extensions, hookimpl
from conformance.results import Outcome, Requirement, Verdict
from conformance.results.store import read_records
from conformance.semantic import checks
from conformance.semantic.history import History
from conformance.semantic.eos_run import SemanticRun, results
from conformance.session import RunSession, handed_in
from conformance.suite.model import CaseResult

pytest_plugins = ["pytester"]


class Listener:
    """A third party's plugin: a sink of its own and both notifications."""

    def __init__(self):
        self.sunk, self.heard, self.finished, self.ended = [], [], [], []

    @hookimpl
    def conformance_register_outputs(self, registry):
        listener = self

        class Sink:
            def record(self, result, line):
                listener.sunk.append(line["case"])

            def finish(self, end):
                listener.ended.append(end.environment()["run_id"])

        registry.add_sink("listener", lambda context: Sink())

    @hookimpl
    def conformance_result_recorded(self, result):
        self.heard.append(result.case_id)

    @hookimpl
    def conformance_session_finished(self, results_path):
        self.finished.append(results_path)


def session_with(tmp_path, listener: Listener, **options) -> RunSession:
    extensions = Extensions.for_run(load_entry_points=False, plugins=[listener])
    return RunSession(tmp_path / "results.jsonl", run_id="r1", extensions=extensions, harness_version="t", **options)


def _result(outcome: Outcome, requirement: Requirement = Requirement.MUST, case: str = "c") -> CaseResult:
    return CaseResult(case_id=case, suite_id="s", title="t", kip="KIP-98", api="EndTxn", version=3, target="kafka",
                      target_version="4.4.0", outcome=outcome, requirement=requirement, cites="...", duration_s=0.0,
                      run_id="r1")


def test_exactly_once_results_reach_the_results_file_every_sink_and_the_hook(tmp_path):
    listener = Listener()
    session = session_with(tmp_path, listener)
    run = SemanticRun("kafka", "4.4.0", History(), verdicts=checks.judge([]), stats={})
    made = results(run, run_id=session.run_id, history_file=None)
    for result in made:
        session.record(result, nodeid=f"semantic::{result.case_id}[kafka]")
    session.finish()
    names = [result.case_id for result in made]
    assert names and listener.sunk == names and listener.heard == names
    assert [record.case for record in read_records(session.results_path, run_id="r1")] == names
    assert listener.ended == ["r1"] and listener.finished == [str(session.results_path)]


def test_the_plugins_are_made_once_per_session(tmp_path, monkeypatch):
    made = []
    original = Extensions.for_run.__func__

    def counted(cls, **options):
        made.append(options)
        return original(cls, **options)

    monkeypatch.setattr(Extensions, "for_run", classmethod(counted))
    session = RunSession(tmp_path / "results.jsonl")
    session.targets(["kafka"])
    assert session.components is session.components
    session.record(_result(Outcome.PASSED), nodeid="n")
    assert len(made) == 1


@pytest.mark.parametrize("outcome, requirement, strict, verdict", [
    (Outcome.PASSED, Requirement.MUST, False, Verdict.PASSED),
    (Outcome.FAILED, Requirement.MUST, False, Verdict.FAILED),
    (Outcome.BLOCKED, Requirement.MUST, False, Verdict.FAILED),
    (Outcome.FAILED, Requirement.SHOULD, False, Verdict.XFAILED),
    (Outcome.FAILED, Requirement.SHOULD, True, Verdict.FAILED),
    (Outcome.FAILED, Requirement.IMPLEMENTATION, True, Verdict.XFAILED),
    (Outcome.DIFFERS, Requirement.IMPLEMENTATION, True, Verdict.XFAILED),
    (Outcome.UNSUPPORTED, Requirement.MUST, False, Verdict.SKIPPED),
    (Outcome.SKIPPED, Requirement.MUST, False, Verdict.SKIPPED),
    (Outcome.ERROR, Requirement.MUST, False, Verdict.ERROR),
])
def test_one_rule_decides_the_verdict_and_the_line_records_it(tmp_path, outcome, requirement, strict, verdict):
    session = session_with(tmp_path, Listener(), strict=strict)
    result = _result(outcome, requirement)
    assert session.verdict(result) is verdict
    assert session.record(result, nodeid="n")["verdict"] == verdict.value


def test_the_summary_counts_each_targets_outcomes_from_the_results(tmp_path):
    session = session_with(tmp_path, Listener())
    for number, outcome in enumerate([Outcome.PASSED, Outcome.PASSED, Outcome.FAILED]):
        session.record(_result(outcome, case=f"c{number}"), nodeid=f"n{number}")
    assert session.summary() == {"kafka": {"passed": 2, "failed": 1}}
    assert session.recorded == {"n0", "n1", "n2"}


def test_an_entry_point_hands_its_session_to_a_pytest_run(tmp_path):
    session = session_with(tmp_path, Listener())
    assert handed_in([object(), session]) is session and handed_in([object()]) is None


# ------------------------------------------------------------------------------ a session handed to pytest
outcomes, suites = plugin_runs.outcomes, plugin_runs.suites  # the plugin tests' fake target and runner, as fixtures


def test_a_pytest_run_runs_the_session_an_entry_point_hands_in(suites, monkeypatch):
    """As ``conformance certify`` does: the run uses the session's plugins (made once), run id and results file,
    and the entry point reads the targets the run started from the session, not from the plugin's state."""
    session = RunSession(suites.path / "handed.jsonl", run_id="handed",
                         extensions=Extensions.for_run(load_entry_points=False))
    plugin_runs.shared_codec()  # the fake runner's codec, made (once per process) before plugins are counted
    made = []
    monkeypatch.setattr(Extensions, "for_run", classmethod(lambda cls, **options: made.append(options)))
    result = suites.runpytest(*plugin_runs.plugin_arguments(), "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                              "--target", "fake", plugins=[plugin_runs.FakeTargetKinds(), session])
    assert result.ret == 0 and made == []  # no plugins made beside the session's
    assert session.pool is not None and session.pool.specs == ["fake"]
    records = read_records(session.results_path, run_id="handed")
    assert len(records) == 5 and {record.nodeid for record in records} == session.recorded
