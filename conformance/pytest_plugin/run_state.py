"""What the pytest plugin keeps for one session: plugins, targets, runners, sinks, which targets are down."""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

import pytest

from .. import ledger
from ..extension import Extensions
from ..report.sinks import Sink
from ..suite.components import Components
from ..targets.base import Capability
from ..targets.pool import TargetPool
from .verdicts import verdict

if TYPE_CHECKING:
    from ..suite.model import CaseResult


@dataclass
class RunState:
    """Everything the plugin keeps for one session (in ``config.stash``, never in globals)."""

    config: pytest.Config
    pool: TargetPool
    suite_roots: list[Path]
    explicit_files: set[Path]
    strict: bool
    run_id: str
    results_path: Path
    extensions: Extensions  # this run's plugin manager, behind its typed facade
    sinks: list[Sink]  # where every result goes: the JSONL results file first
    components: Components
    runner_factory: Callable  # (target, run_id=, strict=, components=) -> a Runner
    runners: dict[str, object] = field(default_factory=dict)
    markers: set[str] = field(default_factory=set)
    down: dict[str, str] = field(default_factory=dict)  # target spec -> why it could not be used
    recorded: set[str] = field(default_factory=set)  # node ids with a result line from this process
    ran: set[str] = field(default_factory=set)  # targets that ran at least one item
    harness_version: str = ""  # so analyses tell a harness change from a target's flakiness
    transcripts: str = "failures"  # which items keep their transcript in the results: failures, all or none
    restart_command: str | None = None  # brings back an attached target that stopped answering

    @property
    def verbose(self) -> bool:
        """``-vv`` shows every exchange of a failing item on the terminal; otherwise its departing step's."""
        return self.config.get_verbosity() >= 2

    def target_down(self, spec: str, why: str, session: pytest.Session) -> None:
        """Later items of this target end at once; once no target is left, the run stops."""
        self.down.setdefault(spec, why)
        if all(other in self.down for other in self.pool.specs):
            session.shouldstop = "no target left to test: " + "; ".join(
                reason.splitlines()[0] for reason in self.down.values())

    def runner(self, target_spec: str):
        """Built before its target starts: collection asks it which versions a case expands to."""
        if target_spec not in self.runners:
            target = self.pool.target(target_spec)
            runner = self.runners[target_spec] = self.runner_factory(target, run_id=self.run_id, strict=self.strict,
                                                                     components=self.components)
            if self.restart_command and not brings_itself_back(target):
                from ..runner.runner import command_restart

                runner.bring_back = command_restart(self.restart_command)
        return self.runners[target_spec]

    def is_suite_file(self, path: Path) -> bool:
        from ..suite.loader import TEMPLATE_DIR

        if path.suffix != ".yaml":
            return False
        path = path.resolve()
        if path in self.explicit_files:
            return True
        for root in self.suite_roots:
            if path == root:
                return True
            if root in path.parents:
                return TEMPLATE_DIR not in path.relative_to(root).parts[:-1]
        return False

    def register_markers(self, names: Iterable[str]) -> None:
        """KIP, API and tag markers are only known once suites load; strict markers need them declared."""
        for name in names:
            if name not in self.markers:
                self.markers.add(name)
                self.config.addinivalue_line("markers", f"{name}: conformance cases marked {name}")

    def record(self, item: pytest.Item, result: "CaseResult") -> None:
        line = result_line(result, nodeid=item.nodeid, strict=self.strict, harness_version=self.harness_version,
                           transcripts=self.transcripts)
        for sink in self.sinks:
            sink.record(result, line)
        self.recorded.add(item.nodeid)
        item.user_properties.append(("outcome", result.outcome.value))
        self.extensions.result_recorded(result)

    def finish(self) -> None:
        for spec, runner in self.runners.items():
            try:
                runner.close(keep_topics=self.pool.discards(spec))
            except Exception as error:  # noqa: BLE001 - every target must still be stopped
                warnings.warn(f"closing the runner of {spec!r} failed: {error}", stacklevel=1)
        for problem in self.pool.stop_all(down=self.down):  # kept up for the next session unless down
            warnings.warn(problem, stacklevel=1)


def result_line(result: "CaseResult", *, nodeid: str, strict: bool, harness_version: str,
                transcripts: str = "failures") -> dict:
    """The results file's line for one item (the suites' and the exactly-once tier's alike): the
    result's :class:`~conformance.results.ResultRecord` with what the run knows about it."""
    record = result.record(nodeid=nodeid, verdict=verdict(result, strict=strict), strict=strict,
                           harness_version=harness_version, worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
                           recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    bug = ledger.known_bug({"outcome": record.outcome, "suite": record.suite, "case": record.case,
                            "target": record.target, "target_version": record.target_version})
    if bug:
        record = dataclasses.replace(record, known_bug=bug)
    if not keeps_transcript(transcripts, result):
        # a thousand passing items would otherwise repeat ApiVersions bodies
        record = dataclasses.replace(record, transcript=[])
    return record.to_line()


def keeps_transcript(mode: str, result: "CaseResult") -> bool:
    """``failures`` keeps the transcripts of every item that is not a pass, unsupported or skipped."""
    if mode == "all":
        return True
    if mode == "none":
        return False
    return not result.outcome.uneventful


def brings_itself_back(target) -> bool:
    """Whether the harness can bring the target back itself after a crash (it started it): restart or revive."""
    return bool({Capability.RESTART, Capability.REVIVE} & set(target.capabilities))
