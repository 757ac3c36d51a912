"""Target kinds and how a spec string picks one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from .base import Target


@dataclass(frozen=True)
class TargetKind:
    """A family of targets: ``name`` is shown by ``conformance targets``.

    ``matches(spec)`` says whether a spec string belongs to this kind, ``create(spec)`` builds the
    target (not started), ``availability()`` returns ``None`` when it can run here, else the reason.
    ``fallback`` marks a catch-all kind (``HOST:PORT``) that is tried only after all the others.
    """

    name: str
    description: str
    matches: Callable[[str], bool]
    create: Callable[[str], Target]
    availability: Callable[[], str | None]
    fallback: bool = False

    @classmethod
    def of(cls, target: type[Target]) -> TargetKind:
        """The entry of a target class, from what it declares: ``kind``, ``description``, ``matches``,
        ``availability`` and ``fallback`` (:class:`~conformance.targets.base.Target`)."""
        return cls(name=target.kind, description=target.description, matches=target.matches, create=target,
                   availability=target.availability, fallback=target.fallback)


def resolve(spec: str, kinds: Iterable[TargetKind]) -> Target:
    """Build (not start) the target of the first kind that matches ``spec``, specific kinds first."""
    ordered = sorted(kinds, key=lambda kind: kind.fallback)  # stable: plugin order kept otherwise
    for kind in ordered:
        if kind.matches(spec):
            return kind.create(spec)
    known = "; ".join(f"{kind.name}: {kind.description}" for kind in ordered)
    raise ValueError(f"no target kind matches {spec!r}. Known kinds: {known}")
