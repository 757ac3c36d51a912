"""What one step of a case is once loaded: a :class:`Step`, built by the loader after templates are expanded and the
step is checked; the steps nested in it (an ``until``'s, a ``parallel`` branch's) are Steps too (:meth:`Step.built`).

What every step has is an attribute: its kind (the keyword that made it one: ``send``, ``until``, a plugin's), the
label the suite gave it, its line in the suite file, its parsed ``when``, whether it ``verifies`` the step under
test, the observer it controls (``observer_control``) and the one a check relies on (``observed_by``). What only its
kind reads (``send: EndTxn``'s ``fields`` and ``expect``, ``until``'s nested steps ...) is :attr:`Step.args`, the
step as the suite wrote it, read-only.

A step is also a read-only mapping of what the suite wrote, the same as :attr:`Step.args`: a kind's ``run`` and the
walkers of steps (``conformance.suite.tree``) read it as they read a step written by a test or a plugin, which stays
a plain dict (:meth:`Step.of` makes one a Step where a reader needs the attributes).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from .kinds import StepKind
from .when import When, parse as parse_when


@dataclass(frozen=True, eq=False)
class Step(Mapping[str, Any]):
    """One step of a case, with what every step has as attributes and the rest in :attr:`args`."""

    kind: str | None  # the keyword of its step kind (``send``); None where no registered kind handles it
    label: str | None  # the label the suite gave it (``label:``), None where it gave none
    line: int  # its line in the suite file; 0 where it was not read from one
    when: When | None  # where it runs (``when:``), parsed; None: everywhere
    verifies: bool  # a check that verifies the step under test: its departure fails the item
    observer_control: str | None  # the observer this step controls (``observer_control:``), else None
    observed_by: str | None  # the observer a check relies on (``observed_by:``, named by a control), else None
    args: Mapping[str, Any]  # the step as the suite wrote it (read-only): its kind's own arguments
    # the kind itself, which declares what the step means (conformance.suite.walk reads it); None as for ``kind``
    step_kind: StepKind | None = field(default=None, repr=False)
    parsed: Any = None  # its kind's arguments parsed at load (StepKind.parse); None for a kind that parses none

    @classmethod
    def of(cls, step: Mapping[str, Any], kinds: Mapping[str, Any]) -> "Step":
        """``step`` itself, or what the suite (or a test, or a plugin) wrote made a Step: its kind is the first of
        its keys that names one of ``kinds``."""
        if isinstance(step, Step):
            return step
        when = step.get("when")
        observer = step.get("observer_control")
        keyword = next((key for key in step if key in kinds), None)
        kind = kinds[keyword] if keyword is not None else None
        return cls(kind=keyword, step_kind=kind, parsed=kind.parse(step) if kind is not None and kind.parse else None,
                   label=str(step["label"]) if "label" in step else None,
                   line=int(getattr(step, "line", 0) or 0),
                   when=parse_when(when) if when else None,
                   verifies=bool(step.get("verifies")),
                   observer_control=None if not observer else str(observer),
                   observed_by=None if not step.get("observed_by") else str(step["observed_by"]),
                   args=MappingProxyType(step if isinstance(step, dict) else dict(step)))

    @classmethod
    def built(cls, step: Mapping[str, Any], kinds: Mapping[str, Any]) -> "Step":
        """``step`` made a Step, and so every step nested in it (an ``until``'s, a ``parallel`` branch's: each kind
        says where its nested steps are), so that a nested ``when`` is parsed at load time as a top-level one is."""
        if isinstance(step, Step):
            return step
        kind = next((kinds[key] for key in step if key in kinds), None)
        nested = kind.nested(step) if kind is not None else []
        if kind is None or not nested:
            return cls.of(step, kinds)
        rebuilt = kind.with_nested(step, [[cls.built(inner, kinds) for inner in body] for _, body in nested])
        return replace(cls.of(rebuilt, kinds), line=int(getattr(step, "line", 0) or 0))

    # ------------------------------------------------------------------------- the mapping of what was written
    def __getitem__(self, key: str) -> Any:
        return self.args[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.args)

    def __len__(self) -> int:
        return len(self.args)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.args) == dict(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping of lists and dicts

    def __repr__(self) -> str:
        return f"Step({dict(self.args)!r})"
