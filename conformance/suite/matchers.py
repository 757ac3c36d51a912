"""Compare what a broker answered with what a suite expects.

A matcher returns ``None`` on a match and a short explanation otherwise. Field paths are dotted,
with ``[n]`` for an index, ``[*]`` for every element (all must match) and ``[name=value]`` for the
element whose field has that value (responses need not keep the request's order). Values at paths that end
in ``error_code`` may be written as error names (``PRODUCER_FENCED``); a list there means any of.
"""

from __future__ import annotations

import re

from ..protocol.errors import error_code, error_name
from ..protocol.schema import VersionRange
from .versioned import is_version_map

_MISSING = object()
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\*|-?\d+|[^\]=]+=[^\]]*)\]")


class PathError(Exception):
    pass


def lookup(value, path: str):
    """Values at ``path`` (a list when the path has ``[*]``)."""
    results = [value]
    spread = False
    for name, index in _TOKEN.findall(path):
        next_results = []
        for item in results:
            if name:
                if not isinstance(item, dict) or name not in item:
                    raise PathError(f"{path}: no field {name!r} (have {sorted(item) if isinstance(item, dict) else type(item).__name__})")
                next_results.append(item[name])
            elif "=" in index:  # [field=value]: the elements whose field has that value
                key, wanted = index.split("=", 1)
                if not isinstance(item, list):
                    raise PathError(f"{path}: [{index}] on a {type(item).__name__}")
                chosen = [element for element in item if isinstance(element, dict) and str(element.get(key)) == wanted]
                if not chosen:
                    raise PathError(f"{path}: no element with {key} = {wanted!r}")
                next_results.append(chosen[0])
            elif index == "*":
                spread = True
                if not isinstance(item, list):
                    raise PathError(f"{path}: [*] on a {type(item).__name__}")
                next_results.extend(item)
            else:
                if not isinstance(item, list) or not -len(item) <= int(index) < len(item):
                    raise PathError(f"{path}: no element [{index}] (length {len(item) if isinstance(item, list) else 'n/a'})")
                next_results.append(item[int(index)])
        results = next_results
    return results if spread else results[0]


def for_version(expected, version: int | None):
    """Pick the entry of a per-version map (``{"0-1": X, "2+": Y}``) that covers ``version``."""
    if not is_version_map(expected):
        return expected
    for key, value in expected.items():
        if version is not None and version in VersionRange.parse(str(key)):
            return value
    return _MISSING


def _codes(expected) -> set[int]:
    values = expected if isinstance(expected, list) else [expected]
    return {error_code(value) for value in values}


def match_error(actual: int, expected) -> str | None:
    allowed = _codes(expected)
    if actual in allowed:
        return None
    values = expected if isinstance(expected, list) else [expected]
    # A bare number is a code Kafka's table may name differently (a draft KIP's): show the number first.
    wanted = " or ".join(sorted(f"{value} (Kafka: {error_name(value)})" if isinstance(value, int) else
                                error_name(error_code(value)) for value in values))
    return f"expected {wanted}, got {error_name(actual)} ({actual})"


# The names a suite may use in ``expect.fields`` besides plugin matchers (the loader checks them).
BUILTIN_MATCHERS = ("eq", "ne", "gt", "ge", "lt", "le", "any_of", "not_null", "len", "contains", "matches", "present")


def _compare(operator: str, actual, argument) -> str | None:
    checks = {
        "eq": lambda: actual == argument, "ne": lambda: actual != argument,
        "gt": lambda: actual > argument, "ge": lambda: actual >= argument,
        "lt": lambda: actual < argument, "le": lambda: actual <= argument,
        "any_of": lambda: actual in argument, "not_null": lambda: (actual is not None) == bool(argument),
        "len": lambda: len(actual) == argument, "contains": lambda: argument in actual,
        "matches": lambda: re.search(str(argument), str(actual)) is not None,
    }
    if operator not in checks:
        raise PathError(f"unknown matcher {operator!r} (known: {', '.join(sorted(checks))}, present)")
    try:
        return None if checks[operator]() else f"{operator} {argument!r} failed for {actual!r}"
    except TypeError as error:
        return f"{operator} {argument!r} cannot apply to {actual!r}: {error}"


def match_value(actual, expected, is_error: bool, extra_matchers: dict | None = None) -> str | None:
    if is_error and not isinstance(expected, dict):
        return match_error(actual, expected)
    if isinstance(expected, dict):
        for operator, argument in expected.items():
            if extra_matchers and operator in extra_matchers:
                problem = extra_matchers[operator](actual, argument)
            elif is_error and operator == "any_of":
                problem = match_error(actual, argument)
            elif is_error and operator in ("eq", "ne"):
                same = match_error(actual, argument) is None
                problem = None if same == (operator == "eq") else f"{operator} {argument} failed for {error_name(actual)}"
            else:
                problem = _compare(operator, actual, argument)
            if problem:
                return problem
        return None
    return None if actual == expected else f"expected {expected!r}, got {actual!r}"


def match_field(message: dict, path: str, expected, version: int | None,
                extra_matchers: dict | None = None) -> str | None:
    expected = for_version(expected, version)
    if expected is _MISSING:
        return None  # no expectation at this version
    wants_absent = isinstance(expected, dict) and expected.get("present") is False
    try:
        actual = lookup(message, path)
    except PathError as error:
        return None if wants_absent else str(error)
    if wants_absent:
        return f"{path}: expected absent, found {actual!r}"
    if isinstance(expected, dict) and "present" in expected:
        expected = {key: value for key, value in expected.items() if key != "present"}
    is_error = path.split(".")[-1].split("[")[0].endswith("error_code")
    values = actual if "[*]" in path else [actual]
    for value in values:
        problem = match_value(value, expected, is_error, extra_matchers)
        if problem:
            return f"{path}: {problem}"
    return None


def error_codes(message, found: list | None = None) -> list[int]:
    """Every ``*error_code`` value in a message, top level first, then depth first."""
    found = [] if found is None else found
    if isinstance(message, dict):
        nested = []
        for key, value in message.items():
            if key.endswith("error_code") and isinstance(value, int):
                found.append(value)
            elif isinstance(value, (dict, list)):
                nested.append(value)
        for value in nested:
            error_codes(value, found)
    elif isinstance(message, list):
        for item in message:
            error_codes(item, found)
    return found


def primary_error(message: dict) -> int:
    """The error a step's ``error_code`` expectation checks.

    The top-level ``error_code`` when the response has one; otherwise the first non-zero error code
    found anywhere (per-partition errors of AddPartitionsToTxn, Produce ...), or 0 when all are zero.
    """
    if "error_code" in message:
        return message["error_code"]
    return next((code for code in error_codes(message) if code), 0)
