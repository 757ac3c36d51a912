"""The typed facade: every call into the plugins goes through one method of :class:`Extensions`.

Rules: no other module calls ``manager.hook.<name>`` or looks a hook up by a string; a call site
reads ``extensions.target_kinds()`` and a type checker sees what comes back. Results are made anew
on each call (plugins may have been registered since the last one), and nothing below this package
reaches up to it: the layers get a codec, step kinds, matchers and target kinds handed down.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

import pluggy

from ..suite.components import Components
from ..targets.registry import TargetKind
from .compose import composed_target_kinds
from .manager import make_plugin_manager
from .registries import EmulationRegistry, MatcherRegistry, OutputRegistry, StepKindRegistry, TargetRegistry

if TYPE_CHECKING:
    from ..protocol.codec import Codec
    from ..report.sinks import Output, Sink, SinkContext
    from ..suite.kinds import StepKind
    from ..suite.model import CaseResult


class Extensions:
    """One run's plugins. ``Extensions.for_run()`` loads the installed ones; tests pass their own manager."""

    def __init__(self, manager: pluggy.PluginManager):
        self.manager = manager

    @classmethod
    def for_run(cls, *, builtin: bool = True, load_entry_points: bool = True,
                plugins: Iterable[object] = ()) -> Extensions:
        """The plugins of a run: the built-in one, those installed under the ``conformance`` entry-point group and ``plugins``."""
        return cls(make_plugin_manager(builtin=builtin, load_entry_points=load_entry_points, plugins=plugins))

    def register(self, plugin: object, name: str | None = None) -> str | None:
        """Adds a plugin to this run (a test's, a conftest's); its hooks are asked from the next call on."""
        name = self.manager.register(plugin, name=name)
        self.manager.check_pending()
        return name

    # -------------------------------------------------------------------------- registration
    def registered_target_kinds(self) -> list[TargetKind]:
        """The kinds the plugins register, without the ``proxy+`` and ``emulate:`` wrappers."""
        registry = TargetRegistry()
        self.manager.hook.conformance_register_targets(registry=registry)
        return registry.kinds

    def target_kinds(self) -> list[TargetKind]:
        """Every kind a target spec may name: the registered ones with ``proxy+`` and ``emulate:`` around them."""
        return composed_target_kinds(self.registered_target_kinds(), self.emulations, self.codec)

    def step_kinds(self) -> dict[str, StepKind]:
        """The step kinds the plugins register, by the keyword a suite step starts with."""
        registry = StepKindRegistry()
        self.manager.hook.conformance_register_step_kinds(registry=registry)
        return registry.as_dict()

    def matchers(self) -> dict[str, Callable[[object, object], str | None]]:
        """The ``expect`` matchers the plugins register, by name: each returns None or why a value does not match."""
        registry = MatcherRegistry()
        self.manager.hook.conformance_register_matchers(registry=registry)
        return registry.as_dict()

    def emulations(self) -> dict[str, Callable[..., Any]]:
        """The draft-KIP emulations the plugins register, by the name ``emulate:NAME+`` uses."""
        registry = EmulationRegistry()
        self.manager.hook.conformance_register_emulations(registry=registry)
        return registry.as_dict()

    def outputs(self) -> dict[str, type[Output]]:
        """The outputs the plugins register, by name, in registration order (the built-in JSONL first): each with
        its options (see :meth:`sinks`)."""
        registry = OutputRegistry()
        self.manager.hook.conformance_register_outputs(registry=registry)
        return registry.as_dict()

    def sinks(self, context: SinkContext) -> list[Sink]:
        """The sinks of one run, in registration order; an output its options do not ask for stays out."""
        made = (output.open(context) for output in self.outputs().values())
        return [sink for sink in made if sink is not None]

    # -------------------------------------------------------------------------- contributions
    def spec_dirs(self) -> list[str]:
        """Folders of message-spec overlays (draft KIPs) the plugins provide, in registration order."""
        dirs: list[str] = []
        for provided in reversed(self.manager.hook.conformance_spec_dirs()):  # registration order
            dirs.extend(str(path) for path in provided or [])
        return dirs

    def suite_dirs(self) -> list[Path]:
        """Folders of suites the plugins provide, the bundled suites first."""
        dirs: list[Path] = []
        for provided in reversed(self.manager.hook.conformance_suite_dirs()):  # the built-in suites first
            dirs.extend(Path(path) for path in provided or [])
        return dirs

    def codec(self) -> Codec:
        """A codec over the bundled specs plus every overlay directory the plugins provide (draft KIPs)."""
        from ..protocol.codec import Codec
        from ..protocol.schema import bundled_registry

        return Codec(bundled_registry(self.spec_dirs()))

    def components(self) -> Components:
        """What the suite layer works with: the codec, the step kinds and the matchers of this run."""
        return Components(self.codec(), self.step_kinds(), self.matchers())

    # -------------------------------------------------------------------------- notifications
    def result_recorded(self, result: CaseResult) -> None:
        """Tells the ``conformance_result_recorded`` listeners of one result (after every sink has it)."""
        self._notify(self.manager.hook.conformance_result_recorded, result=result)

    def session_finished(self, results_path: str) -> None:
        """Tells the ``conformance_session_finished`` listeners that the run ended and where its results are."""
        self._notify(self.manager.hook.conformance_session_finished, results_path=results_path)

    @staticmethod
    def _notify(hook: pluggy.HookCaller, **arguments: object) -> None:
        """Tell the listeners; a failing third-party listener is a warning, never a changed verdict."""
        try:
            hook(**arguments)
        except Exception as error:  # noqa: BLE001
            warnings.warn(f"a conformance plugin failed in {hook.name}: {error}", stacklevel=3)
