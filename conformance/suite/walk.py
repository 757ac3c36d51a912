"""One walk over a case's steps, through each step's kind: every step, nested ones included, with its place and
what its kind declares it means (the requests it sends and judges, the faults it asks for, its traits).

Whatever reads a case's steps for what they mean walks them here: the runner's preparing-step roles
(``conformance.runner.policy``), the coverage document (``conformance.report.documents``), the citation checks
(:mod:`conformance.suite.citations`), scheduling (:class:`conformance.suite.model.Case`: rough, hazardous, faults)
and the fault checks. None of them knows a kind by its keyword, so a new kind is seen by all of them once it
declares what it sends, nests and does (:class:`conformance.suite.kinds.StepKind`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

from .kinds import Fault, Request, StepKind
from .step import Step


@dataclass(frozen=True)
class Visit:
    """One step met on the walk."""

    step: Mapping
    kind: StepKind | None  # None where no registered kind handles it (the loader reports such a step)
    # its place among the case's steps, as the loader's checks name it: (3,), (3, "until", "steps", 0),
    # (2, "parallel", 0, 1), and (3, "until", "step", 0) for a lone nested step
    where: tuple
    conditional: bool  # a ``when`` on it, or on a step it is nested in, may leave it out

    @property
    def top(self) -> bool:
        """One of the case's own steps, not one nested in another."""
        return len(self.where) == 1

    @property
    def requests(self) -> Sequence[Request]:
        return self._declared(lambda kind: kind.requests(self.step), ())

    @property
    def faults(self) -> Sequence[Fault]:
        return self._declared(lambda kind: kind.faults(self.step), ())

    @property
    def rough(self) -> bool:
        return self._declared(lambda kind: kind.rough(self.step), False)

    @property
    def hazard(self) -> bool:
        return self._declared(lambda kind: kind.hazard(self.step), False)

    def _declared(self, read: Callable[[StepKind], Any], nothing: Any) -> Any:
        if self.kind is None:
            return nothing
        try:
            return read(self.kind)
        except ValueError:  # arguments its kind cannot parse (a suite being checked): the loader reports them
            return nothing


def kind_of(step: Mapping, kinds: Mapping[str, StepKind] | None) -> StepKind | None:
    """The kind of ``step``: a built Step's own, else the first of its keys that names one of ``kinds``."""
    if isinstance(step, Step) and step.step_kind is not None:
        return step.step_kind
    return next((kinds[key] for key in step if key in kinds), None) if kinds else None


def walk(steps, kinds: Mapping[str, StepKind] | None = None, where: tuple = (),
         conditional: bool = False) -> Iterator[Visit]:
    """Every step of ``steps`` and every step nested in one, each before those nested in it. Steps the loader
    built know their kind; plain mappings (a suite being checked, a test's, a plugin's) need ``kinds``."""
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, Mapping):
            continue
        kind = kind_of(step, kinds)
        place = (*where, index)
        guarded = conditional or "when" in step
        yield Visit(step, kind, place, guarded)
        for inner, body in kind.nested(step) if kind is not None else ():
            yield from walk(body, kinds, (*place, *inner), guarded)
