"""A step's ``when``: the conditions under which it runs, parsed once when the suite loads.

``when: {versions: "3-11", feature: {transaction.version: ">=2"}, target: kafka}`` holds where the version under
test is in the range, each finalized feature level compares as written, and the target's spec starts with the
text. ``saved: {join_error: MEMBER_ID_REQUIRED}`` holds where an earlier step of the item saved that value under
that name (an error's name stands for its code): a step that only some answers call for, as KIP-394's second
JoinGroup after MEMBER_ID_REQUIRED. :func:`parse` reads what the suite wrote, or says which field is malformed (the loader reports it with file
and line, like any suite error); the runner then only asks :meth:`When.holds`.

A parsed ``When`` is a mapping of what the suite wrote (so a step stays the mapping every walker of steps reads)
with the parsed conditions beside it.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..protocol.errors import error_by_name
from ..protocol.exceptions import SpecError
from ..protocol.schema import VersionRange

# Longest first: ">=2" is not ">" followed by "=2".
COMPARISONS: tuple[tuple[str, Callable[[int, int], bool]], ...] = (
    (">=", operator.ge), ("<=", operator.le), ("==", operator.eq), ("<", operator.lt), (">", operator.gt))


class WhenError(ValueError):
    """A malformed ``when``: ``field`` is the path of the faulty key inside it (``["feature", "x"]``)."""

    def __init__(self, field: list[str], message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class FeatureLevel:
    """One ``feature:`` condition: the finalized level of ``name`` compared with ``level``."""

    name: str
    symbol: str  # ">=", "<=", "==", "<", ">"; a bare level is "=="
    level: int

    def holds(self, finalized: Mapping[str, int]) -> bool:
        """Whether the target's finalized level (0 where it does not finalize the feature) compares as written."""
        compare = dict(COMPARISONS)[self.symbol]
        return compare(finalized.get(self.name, 0), self.level)


class When(dict):  # type: ignore[type-arg]  # a mapping of what the suite wrote
    """The parsed conditions of a step's ``when``; as a mapping, what the suite wrote."""

    versions: VersionRange | None
    features: tuple[FeatureLevel, ...]
    target: str | None
    saved: tuple[tuple[str, Any], ...] = ()

    def holds(self, version: int | None, finalized: Mapping[str, int], target_spec: str,
              variables: Mapping[str, Any] | None = None) -> bool:
        """Whether the step runs: at ``version`` under test, with the target's ``finalized`` feature levels, on the
        target of ``target_spec``, with the item's saved ``variables`` (None, before the item runs: a ``saved``
        condition may hold)."""
        if self.versions is not None and (version is None or version not in self.versions):
            return False
        if not all(feature.holds(finalized) for feature in self.features):
            return False
        if variables is not None and any(variables.get(name, _UNSAVED) != value for name, value in self.saved):
            return False
        return self.target is None or target_spec.startswith(self.target)


_UNSAVED = object()


def parse(raw: Mapping[str, Any]) -> When:
    """The ``when`` a suite wrote, parsed; :class:`WhenError` names the first malformed field."""
    if isinstance(raw, When):
        return raw
    if not isinstance(raw, Mapping):
        raise WhenError([], "when is a mapping of versions, feature and target")
    when = When(raw)
    when.versions = None
    if "versions" in raw:
        try:
            when.versions = VersionRange.parse(str(raw["versions"]))
        except SpecError:
            raise WhenError(["versions"], f"bad version range {raw['versions']!r} (use N, N+, N-M or none)") from None
    features = raw.get("feature") or {}
    if not isinstance(features, Mapping):
        raise WhenError(["feature"], "feature maps finalized feature names to a level (2) or a comparison (>=2)")
    when.features = tuple(_feature(str(name), condition) for name, condition in features.items())
    target = raw.get("target")
    if target is not None and not isinstance(target, str):
        raise WhenError(["target"], "target is the text a target's spec starts with")
    when.target = target
    saved = raw.get("saved") or {}
    if not isinstance(saved, Mapping):
        raise WhenError(["saved"], "saved maps names an earlier step saved to the value each must have")
    when.saved = tuple((str(name), _value(value)) for name, value in saved.items())
    return when


def _value(value: object) -> object:
    """A ``saved`` value as compared: an error's name (MEMBER_ID_REQUIRED) is its code, as a response carries it."""
    if isinstance(value, str) and value.isupper():
        try:
            return error_by_name(value).code
        except KeyError:
            pass
    return value


def _feature(name: str, condition: object) -> FeatureLevel:
    text = str(condition).strip()
    symbol = next((symbol for symbol, _ in COMPARISONS if text.startswith(symbol)), "==")
    number = text[len(symbol):].strip() if text.startswith(symbol) else text
    try:
        return FeatureLevel(name, symbol, int(number))
    except ValueError:
        raise WhenError(["feature", name], f"{text!r} is not a level (2) or a comparison (>=2, <2)") from None
