"""Target kinds and how a spec string picks one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .base import Target


@dataclass(frozen=True)
class TargetKind:
    """A family of targets: ``name`` is shown by ``conformance targets``.

    ``matches(spec)`` says whether a spec string belongs to this kind, ``create(spec)`` builds the
    target (not started), ``availability()`` returns ``None`` when it can run here, else the reason.
    """

    name: str
    description: str
    matches: Callable[[str], bool]
    create: Callable[[str], Target]
    availability: Callable[[], str | None]
