"""A diff as one self-contained HTML page: each differing exchange as a side-by-side table.

Rows are the normalised fields of both sides, aligned the way the diff aligned them (lists of
structs by their identity field), with differing rows highlighted. Differences common to most
cases (the targets' ApiVersions answers) are listed once, and their exchanges start folded. Everything that came from
the wire or a results file is escaped: topic names and error messages are attacker-controlled
text as far as a browser is concerned.
"""

from __future__ import annotations

import json
from html import escape

from ..protocol.errors import error_name
from .diff import AlignedPair, RunDiff, identity_field
from .render import by_weight, common_differences, identity, summary

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-family: ui-monospace, monospace; font-size: 12px; }
td, th { border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; text-align: left; }
th { background: #f3f3f3; }
tr.differs td { background: #ffe9e6; } tr.differs td.path { font-weight: bold; }
td.value { max-width: 40em; overflow-wrap: anywhere; white-space: pre-wrap; }
.kind { display: inline-block; min-width: 6em; color: #a33; }
ul.differences { font-family: ui-monospace, monospace; font-size: 12px; }
.same { color: #383; } .only { color: #a33; }
"""


ROWS_IN_FULL = 80  # larger exchanges show their differing rows only


def render_html(result: RunDiff) -> str:
    common = common_differences(result)
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             f"<title>Wire diff: {escape(result.a_name)} vs {escape(result.b_name)}</title>",
             f"<style>{STYLE}</style></head><body>",
             "<h1>Wire diff</h1>",
             f"<p>A: <code>{escape(result.a_name)}</code><br>B: <code>{escape(result.b_name)}</code></p>",
             f"<p><strong>{escape(summary(result))}</strong></p>"]
    if common:
        parts.append(f"<h2>Common to at least half the cases ({len(common)})</h2><ul class='differences'>")
        parts.extend(_item(difference, f"in {cases} cases: ") for difference, cases in common.values())
        parts.append("</ul>")
    for side, keys in (("A", result.only_in_a), ("B", result.only_in_b)):
        if keys:
            parts.append(f"<h2 class='only'>Only in {side} ({len(keys)})</h2><ul>")
            parts.extend(f"<li>{escape(key)}</li>" for key in keys)
            parts.append("</ul>")
    same = [case.label for case in result.cases if case.same]
    for case in result.cases:
        if case.same:
            continue
        own = by_weight([difference for difference in case.differences if identity(difference) not in common])
        parts.append(f"<h2>{escape(case.label)}</h2>")
        if len(own) < len(case.differences):
            parts.append(f"<p>and {len(case.differences) - len(own)} of the common differences</p>")
        parts.append("<ul class='differences'>")
        parts.extend(_item(difference) for difference in own)
        parts.append("</ul>")
        for pair in case.pairs:
            if pair.differences:
                telling = any(identity(difference) not in common for difference in pair.differences)
                parts.append(_pair_table(pair, telling))
    if same:
        parts.append(f"<h2 class='same'>Identical after normalisation ({len(same)})</h2><ul>")
        parts.extend(f"<li>{escape(label)}</li>" for label in same)
        parts.append("</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _item(difference, prefix: str = "") -> str:
    where = f"{difference.key}: " if difference.key else ""
    return (f"<li><span class='kind'>{escape(difference.kind)}</span> "
            f"{escape(prefix + where + difference.describe())}</li>")


def _pair_table(pair: AlignedPair, opened: bool) -> str:
    title = escape(pair.key)
    if pair.a is None or pair.b is None or pair.a_view is None or pair.b_view is None:
        present = pair.a or pair.b
        side = "A" if pair.a else "B"
        what = f"{escape(present.api)} v{present.version}, correlation {present.correlation_id}" if present else ""
        return f"<h3>{title}</h3><p class='only'>only in {side}: {what}</p>"
    rows = []
    for part in ("request", "response", "problems"):
        rows.extend(_rows(pair.a_view.get(part), pair.b_view.get(part), part))
    shown = rows if len(rows) <= ROWS_IN_FULL else [row for row in rows if row[1] != row[2]]
    body = "".join(
        f"<tr class='{'differs' if left != right else ''}'><td class='path'>{escape(path)}</td>"
        f"<td class='value'>{escape(_cell(path, left))}</td><td class='value'>{escape(_cell(path, right))}</td></tr>"
        for path, left, right in shown)
    hidden = f" ({len(rows) - len(shown)} equal rows not shown)" if len(shown) < len(rows) else ""
    heading = (f"{title} &mdash; A: {escape(pair.a.api)} v{pair.a.version} (correlation {pair.a.correlation_id}), "
               f"B: v{pair.b.version} (correlation {pair.b.correlation_id}){hidden}")
    return (f"<details{' open' if opened else ''}><summary>{heading}</summary><table><tr><th>field</th><th>A</th>"
            f"<th>B</th></tr>{body}</table></details>")


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
