"""What the pytest plugin keeps for one pytest session beside the run's :class:`~conformance.session.RunSession`:
targets, runners, markers, which targets are down. Results, sinks, plugins and verdicts are the session's."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

import pytest

from ..session import RunSession
from ..targets.base import Capability
from ..targets.pool import TargetPool

if TYPE_CHECKING:
    from ..runner.runner import Runner
    from ..suite.components import Components
    from ..suite.model import CaseResult


@dataclass
class RunState:
    """Everything the plugin keeps for one session (in ``config.stash``, never in globals)."""

    config: pytest.Config
    session: RunSession  # the run: plugins, results file, sinks, verdicts, summary
    pool: TargetPool
    suite_roots: list[Path]
    explicit_files: set[Path]
    runner_factory: Callable  # (target, run_id=, strict=, components=) -> a Runner
    runners: dict[str, Runner] = field(default_factory=dict)
    markers: set[str] = field(default_factory=set)
    down: dict[str, str] = field(default_factory=dict)  # target spec -> why it could not be used
    ran: set[str] = field(default_factory=set)  # targets that ran at least one item
    restart_command: str | None = None  # brings back an attached target that stopped answering

    @property
    def strict(self) -> bool:
        return self.session.strict

    @property
    def run_id(self) -> str:
        return self.session.run_id

    @property
    def results_path(self) -> Path:
        return self.session.results_path

    @property
    def components(self) -> Components:
        return self.session.components

    @property
    def recorded(self) -> set[str]:
        """Node ids with a result line from this process."""
        return self.session.recorded

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
        """The item's result to the session (sinks, hook), and its outcome to pytest's user properties."""
        self.session.record(result, nodeid=item.nodeid)
        item.user_properties.append(("outcome", result.outcome.value))

    def finish(self) -> None:
        for spec, runner in self.runners.items():
            try:
                runner.close(keep_topics=self.pool.discards(spec))
            except Exception as error:  # noqa: BLE001 - every target must still be stopped
                warnings.warn(f"closing the runner of {spec!r} failed: {error}", stacklevel=1)
        for problem in self.pool.stop_all(down=self.down):  # kept up for the next session unless down
            warnings.warn(problem, stacklevel=1)


def brings_itself_back(target) -> bool:
    """Whether the harness can bring the target back itself after a crash (it started it): restart or revive."""
    return bool({Capability.RESTART, Capability.REVIVE} & set(target.capabilities))
