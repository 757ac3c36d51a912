"""What the ``conformance_register_*`` hooks fill: one small registry per hook, plus the sink contract.

Rules: a registry is made fresh for each hook call (plugins may have been registered since the last
one) and only collects. pluggy asks the newest plugin first, so ``add`` keeps the first entry of a
name: the newest plugin's wins, as a plugin registered after the built-in one expects. Target kinds
are not keyed (several kinds may share a name); their order is the order of the calls.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from ..report.sinks import Output, Sink, SinkContext
from ..suite.kinds import StepKind, as_step_kind
from ..targets.base import Target
from ..targets.registry import TargetKind

Value = TypeVar("Value")


class _Named(Generic[Value]):
    def __init__(self) -> None:
        self._entries: dict[str, Value] = {}

    def _add(self, name: str, value: Value) -> None:
        self._entries.setdefault(name, value)

    def as_dict(self) -> dict[str, Value]:
        return dict(self._entries)


class TargetRegistry:
    def __init__(self) -> None:
        self.kinds: list[TargetKind] = []

    def add(self, kind: TargetKind | type[Target]) -> None:
        """A kind: a :class:`Target` subclass that declares it (``kind``, ``description``, ``matches``,
        ``availability``), or a :class:`TargetKind` made by hand."""
        if isinstance(kind, type) and issubclass(kind, Target):
            kind = TargetKind.of(kind)
        if not isinstance(kind, TargetKind):
            raise TypeError(f"not a TargetKind nor a Target class: {kind!r}")
        self.kinds.append(kind)


class StepKindRegistry(_Named[StepKind]):
    def add(self, kind: StepKind) -> None:
        if not isinstance(kind, StepKind):
            raise TypeError(f"not a StepKind: {kind!r} (add_function registers a plain function)")
        self._add(kind.keyword, kind)

    def add_function(self, keyword: str, function: Callable[..., Any]) -> None:
        """A plain ``function(step, context)`` that gets the step with its expressions resolved."""
        self._add(keyword, as_step_kind(keyword, function))


class MatcherRegistry(_Named[Callable[[object, object], "str | None"]]):
    def add(self, name: str, matcher: Callable[[object, object], str | None]) -> None:
        self._add(name, matcher)


class EmulationRegistry(_Named[Callable[..., Any]]):
    def add(self, name: str, factory: Callable[..., Any]) -> None:
        self._add(name, factory)


# ------------------------------------------------------------------------------ outputs
class OutputRegistry(_Named[type[Output]]):
    def add(self, output: type[Output]) -> None:
        """An :class:`conformance.report.sinks.Output` subclass: its ``name``, ``options`` and ``open``."""
        if not (isinstance(output, type) and issubclass(output, Output)):
            raise TypeError(f"not an Output subclass: {output!r} (add_sink registers a plain sink factory)")
        self._add(output.name, output)

    def add_sink(self, name: str, factory: Callable[[SinkContext], Sink | None]) -> None:
        """A sink with no options of its own: ``factory(context)`` returns it, or None to stay out of the run."""
        self._add(name, type(f"{name}-output", (Output,), {"name": name, "open": staticmethod(factory)}))
