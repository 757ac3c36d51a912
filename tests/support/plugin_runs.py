"""The pytest plugin's test double: a suite, a fake target kind and a runner that never touches a network.

The real loader and the real Runner's version expansion are used; only ``Runner.run`` is replaced, so each
test states the outcomes it wants per case id. The plugin's tests and the console's share it; they take its
fixtures (``outcomes``, ``suites``) by naming them in their own namespace.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import entry_points

import pytest

from conformance.pytest_plugin import plugin as conformance_plugin
# pytester's in-process runs drop every module first imported during a run; PyYAML's C parser keeps the node
# classes of the first import, so a yaml imported again could build no node ("no constructor for the tag
# None") and a test's outcome hung on which test ran first. Imported here, yaml outlives every run.
from conformance.suite import source as _suite_yaml  # noqa: F401
from conformance.extension import Extensions, hookimpl
from conformance.runner.runner import Runner
from conformance.suite.model import CaseResult, StepFailure
from conformance.results.record import Outcome
from conformance.targets.base import Target, TargetUnavailable
from conformance.targets.registry import TargetKind

SUITE = """\
suite: kip98.end-txn
title: EndTxn commits and aborts
spec: KIP-98
tags: [transactions]
cases:
  - id: commit-one-partition
    title: A transaction that wrote to one partition commits
    requirement: MUST
    cites: "EndTxnRequest: Command true(1) means COMMIT"
    under_test: {api: EndTxn, versions: "0-2"}
    steps:
      - send: EndTxn
        fields: {transactional_id: "t", producer_id: 1, producer_epoch: 0, committed: true}
        expect: {error_code: NONE}
  - id: epoch-bump-on-retry
    title: A retried InitProducerId bumps the epoch
    requirement: SHOULD
    cites: "InitProducerId: the coordinator bumps the epoch"
    under_test: {api: InitProducerId, versions: "3"}
    tags: [slow]
    steps:
      - send: InitProducerId
        fields: {transactional_id: "t", transaction_timeout_ms: 1000, producer_id: -1, producer_epoch: -1}
  - id: no-api-case
    title: A case about no single API
    requirement: MAY
    cites: "KIP-98: anything"
    steps:
      - wait: 1
"""

# Case ids in the suite above, as they appear in node ids.
COMMIT = "commit-one-partition"
EPOCH = "epoch-bump-on-retry"
NO_API = "no-api-case"


# ------------------------------------------------------------------------------ fakes
class FakeTarget(Target):
    """``fake*`` specs; ``fake-unavailable`` cannot run here, ``fake-broken`` fails to start."""

    kind = "fake"
    events: list[str] = []

    def start(self) -> None:
        FakeTarget.events.append(f"start {self.spec}")
        if self.spec == "fake-unavailable":
            raise TargetUnavailable("no fake engine on this machine")
        if self.spec == "fake-broken":
            raise RuntimeError("fake broker exited with status 1")

    def stop(self) -> None:
        FakeTarget.events.append(f"stop {self.spec}")

    @property
    def bootstrap(self) -> str:
        return "127.0.0.1:1"

    @property
    def version(self) -> str:
        return "9.9.9"

    def logs(self) -> str:
        return "starting\nERROR fatal: address already in use\n"


class FakeTargetKinds:
    @hookimpl
    def conformance_register_targets(self, registry):
        registry.add(TargetKind(name="fake", description="a test double", matches=lambda spec: spec.startswith("fake"),
                                create=FakeTarget, availability=lambda: None))


class Recorder:
    results: list[CaseResult] = []
    finished: list[str] = []

    @hookimpl
    def conformance_result_recorded(self, result):
        Recorder.results.append(result)

    @hookimpl
    def conformance_session_finished(self, results_path):
        Recorder.finished.append(results_path)


@lru_cache(maxsize=1)
def shared_codec():
    return Extensions.for_run().codec()


class FakeRunner(Runner):
    """The real version expansion; ``run`` answers the outcome the test chose for the case id."""

    outcomes: dict[str, Outcome] = {}

    def run(self, case, version, shared_restart=None, *, rerun_alone=False, alone=None):
        outcome = self.outcomes.get(case.id, Outcome.PASSED)
        result = CaseResult(
            case_id=case.id, suite_id=case.suite.id, title=case.title, kip=case.kip, api=case.api,
            version=version, target=self.target.spec, target_version=self.target.version, outcome=outcome,
            requirement=case.requirement, cites=case.cites, duration_s=0.01, tags=list(case.tags),
            run_id=self.run_id, path=case.suite.path,
            transcript=[{"request": "EndTxn", "version": version}],
            transcript_text=f"-> EndTxn v{version} committed=true\n<- EndTxn error_code=INVALID_TXN_STATE",
        )
        if outcome in (Outcome.FAILED, Outcome.DIFFERS):
            result.failure = StepFailure(step=1, step_label="1 send EndTxn", expected="NONE",
                                         actual="INVALID_TXN_STATE", message="error_code: expected NONE")
            result.message = "1 send EndTxn: error_code: expected NONE, got INVALID_TXN_STATE"
        elif outcome is Outcome.UNSUPPORTED:
            result.message = f"fake advertises {case.api} v0-v0, not v{version}"
        elif outcome is Outcome.ERROR:
            result.message = "infrastructure: connection reset by peer"
        return result


@pytest.fixture
def outcomes(monkeypatch):
    """Outcome per case id for this test; cases not listed pass."""
    chosen: dict[str, Outcome] = {}
    monkeypatch.setattr(FakeRunner, "outcomes", chosen)
    monkeypatch.setattr(conformance_plugin, "make_runner",
                        lambda target, *, run_id, strict, components: FakeRunner(
                            target, run_id=run_id, strict=strict, components=components, codec=shared_codec()))
    return chosen


@pytest.fixture
def suites(pytester, outcomes):
    """A project with ``suites/kip98/end_txn.yaml`` and the fake target kind registered."""
    FakeTarget.events = []
    Recorder.results, Recorder.finished = [], []
    folder = pytester.path / "suites" / "kip98"
    folder.mkdir(parents=True)
    (folder / "end_txn.yaml").write_text(SUITE)
    return pytester


def plugin_arguments() -> list[str]:
    """Load the plugin explicitly only when its entry point is not installed (a bare source tree)."""
    installed = any(entry.value == "conformance.pytest_plugin.plugin" for entry in entry_points(group="pytest11"))
    return [] if installed else ["-p", "conformance.pytest_plugin.plugin"]


def run(pytester, *arguments):
    # pytester drops modules first imported by an inner run, so an unused hypothesis plugin would be
    # imported afresh (about 2 s) by every run.
    # The fake target kind and the recorder join the run as pytest plugins with conformance hooks, as a conftest's do.
    return pytester.runpytest(*plugin_arguments(), "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *arguments,
                              plugins=[FakeTargetKinds(), Recorder()])


def collected_ids(result) -> list[str]:
    return [line for line in result.outlines if "::" in line]
