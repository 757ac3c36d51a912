"""A diff as one self-contained HTML page: each differing exchange as a side-by-side table.

Rows are the normalised fields of both sides, aligned the way the diff aligned them (lists of
structs by their identity field), with differing rows highlighted. Differences common to most
cases (the targets' ApiVersions answers) are listed once, and their exchanges start folded.

This module decides what the page shows, as plain text; the markup is the template ``wire_diff.html.j2``
of :mod:`conformance.pages`, which escapes all of it: topic names and error messages from the wire or a
results file are attacker-controlled text as far as a browser is concerned.
"""

from __future__ import annotations

import json

from .. import pages
from ..protocol.errors import error_name
from .diff import AlignedPair, RunDiff, identity_field
from .render import by_weight, common_differences, identity, summary

ROWS_IN_FULL = 80  # larger exchanges show their differing rows only


def render_html(result: RunDiff) -> str:
    common = common_differences(result)
    cases = []
    for case in result.cases:
        if case.same:
            continue
        own = by_weight([difference for difference in case.differences if identity(difference) not in common])
        cases.append({
            "label": case.label, "common": len(case.differences) - len(own),
            "differences": [_item(difference) for difference in own],
            "pairs": [_pair(pair, any(identity(difference) not in common for difference in pair.differences))
                      for pair in case.pairs if pair.differences]})
    return pages.render(
        "wire_diff.html.j2", a_name=result.a_name, b_name=result.b_name, summary=summary(result),
        common=[_item(difference, f"in {count} cases: ") for difference, count in common.values()],
        only=[(side, keys) for side, keys in (("A", result.only_in_a), ("B", result.only_in_b)) if keys],
        cases=cases, same=[case.label for case in result.cases if case.same])


def _item(difference, prefix: str = "") -> tuple[str, str]:
    """A difference as (its kind, what it says)."""
    where = f"{difference.key}: " if difference.key else ""
    return difference.kind, prefix + where + difference.describe()


def _pair(pair: AlignedPair, opened: bool) -> dict:
    """One aligned exchange: both sides' fields in rows, or the one side there is."""
    if pair.a is None or pair.b is None or pair.a_view is None or pair.b_view is None:
        present = pair.a or pair.b
        return {"key": pair.key, "side": "A" if pair.a else "B", "rows": None,
                "present": f"{present.api} v{present.version}, correlation {present.correlation_id}" if present else ""}
    rows = []
    for part in ("request", "response", "problems"):
        rows.extend(_rows(pair.a_view.get(part), pair.b_view.get(part), part))
    shown = rows if len(rows) <= ROWS_IN_FULL else [row for row in rows if row[1] != row[2]]
    return {"key": pair.key, "a": pair.a, "b": pair.b, "opened": opened, "hidden": len(rows) - len(shown),
            "rows": [(path, _cell(path, left), _cell(path, right), left != right) for path, left, right in shown]}


_MISSING = object()


def _rows(a, b, path: str) -> list[tuple[str, object, object]]:
    """Leaf rows (path, A value, B value) of two normalised values, aligned like the diff."""
    if isinstance(a, dict) and isinstance(b, dict):
        rows = []
        for name in [*a, *(name for name in b if name not in a)]:
            rows.extend(_rows(a.get(name, _MISSING), b.get(name, _MISSING), f"{path}.{name}"))
        return rows
    if isinstance(a, list) and isinstance(b, list) and (a or b):
        identity = identity_field(a, b)
        rows = []
        if identity:
            by_a = {item[identity]: item for item in a}
            by_b = {item[identity]: item for item in b}
            for value in [*by_a, *(value for value in by_b if value not in by_a)]:
                rows.extend(_rows(by_a.get(value, _MISSING), by_b.get(value, _MISSING), f"{path}[{identity}={value}]"))
            return rows
        for index in range(max(len(a), len(b))):
            rows.extend(_rows(a[index] if index < len(a) else _MISSING, b[index] if index < len(b) else _MISSING,
                              f"{path}[{index}]"))
        return rows
    return [(path, a, b)]


def _cell(path: str, value) -> str:
    if value is _MISSING:
        return "(absent)"
    if isinstance(value, int) and not isinstance(value, bool) and path.endswith("error_code"):
        return f"{value} {error_name(value)}"
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)
