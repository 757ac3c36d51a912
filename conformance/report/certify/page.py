"""The certification page: one self-contained HTML file (inline CSS and SVG; no script, font or image fetched)."""

from __future__ import annotations

import json
from collections import Counter
from html import escape

from ...suite.model import OUTCOME_LABELS, OUTCOME_ORDER
from ..itemref import label, reproduce
from . import svg
from .levels import Grade

CSS = """
body{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;margin:24px auto;max-width:1180px;color:#1f2328;
  padding:0 16px;line-height:1.4}
h1{margin-bottom:4px} h2{border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:32px}
.meta{color:#57606a;font-size:13px} table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa} code,pre{font-family:'DejaVu Sans Mono',monospace;font-size:12px}
pre{background:#f6f8fa;padding:6px;white-space:pre-wrap;word-break:break-all;margin:2px 0}
.levels{display:flex;flex-wrap:wrap;gap:12px} .level{border:1px solid #d0d7de;border-radius:6px;padding:10px;
  width:360px} .level p{font-size:13px;margin:6px 0} .reasons{font-size:12px;color:#57606a}
.status-missed{color:#cf222e} .status-incomplete{color:#9a6700} .status-reached{color:#1a7f37}
.departure{border-left:4px solid #d73a49;padding-left:10px;margin:14px 0}
.incomplete{border-left:4px solid #e36209;padding-left:10px;margin:14px 0}
div.differs{border-left:4px solid #0969da;padding-left:10px;margin:14px 0}
.matrix-box{overflow-x:auto;border:1px solid #d0d7de;padding:8px}
.apis{columns:4 220px;font-size:12px} .api{break-inside:avoid;padding:1px 0}
"""


def render(certificate: dict, grades: list[Grade], records: list[dict]) -> str:
    target = certificate["target"]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Certification of {escape(target)}</title><style>{CSS}</style></head><body>",
        f"<h1>Transaction protocol certification: {escape(target)}</h1>",
        f"<p class='meta'>{escape(certificate['generated_at'])} · harness {escape(certificate['harness']['version'])}"
        f" · suites digest <code>{certificate['suites']['digest'][:16]}</code> · results digest "
        f"<code>{certificate['results']['digest'][:16]}</code> · run {escape(', '.join(certificate['run_ids']))}</p>",
        _summary(certificate), _levels(grades), _counts(certificate["counts"]),
        "<h2 id='matrix'>Outcome matrix</h2><p class='meta'>One row per KIP, suite and API under test; one column "
        "per API version. A cell stacks the outcomes of the cases it holds, worst on top (hover for counts).</p>",
        f"<div class='matrix-box'>{svg.matrix(records)}</div>",
        _departures(records), _incomplete(records), _differs(records),
        _fingerprint(certificate["fingerprint"], certificate["identity"]),
        _provenance(certificate),
        "</body></html>",
    ]
    return "\n".join(parts)


def _summary(certificate: dict) -> str:
    """What the target says it is, up front; the full fingerprint is at the end of the page."""
    identity, found = certificate["identity"], certificate["fingerprint"]
    said = f"{identity.get('target')} {identity.get('target_version') or ''}".strip()
    if found is None:
        return f"<p id='summary'>Target <b>{escape(said)}</b>; no ApiVersions answer available.</p>"
    features = ", ".join(f"{name}={level}" for name, level in sorted(found.get("finalized_features", {}).items()))
    return (f"<p id='summary'>Target <b>{escape(said)}</b> advertises {len(found.get('apis', []))} APIs; "
            f"finalized features: <b>{escape(features or 'none')}</b> (<a href='#fingerprint'>fingerprint</a>).</p>")


def _levels(grades: list[Grade]) -> str:
    cards = []
    for grade in grades:
        level = grade.level
        reasons = "".join(f"<li>{escape(reason)}</li>" for reason in grade.reasons)
        waived = "".join(f"<li>waived: {escape(label(record))} — {escape(entry.reason)}</li>"
                         for record, entry in grade.waived)
        cards.append(
            f"<div class='level' id='level-{escape(level.id)}' data-status='{escape(grade.status)}'>"
            f"{svg.badge(level.name, grade.label)}"
            f"<p><b class='status-{grade.status.replace(' ', '-')}'>{escape(grade.label.upper())}</b>: "
            f"{grade.passed} of {grade.counted} graded items passed"
            f"{f', {grade.ungraded} undemanded versions not advertised' if grade.ungraded else ''}.</p>"
            f"<p>{escape(level.summary)}</p>"
            f"<p class='reasons'>Counts {escape('/'.join(level.requirements))}; demands "
            f"{escape(level.describe_demands())}.</p><ul class='reasons'>{reasons}{waived}</ul></div>")
    return "<h2 id='levels'>Levels</h2><div class='levels'>" + "".join(cards) + "</div>"


def _counts(counts: dict) -> str:
    outcomes = list(OUTCOME_ORDER)
    rows = "".join(f"<tr><th>{escape(requirement)}</th>" + "".join(f"<td>{row.get(outcome, 0)}</td>"
                                                                  for outcome in outcomes) + "</tr>"
                   for requirement, row in counts["by_requirement"].items())
    total = "".join(f"<td><b>{counts['by_outcome'].get(outcome, 0)}</b></td>" for outcome in outcomes)
    return ("<h2 id='counts'>Counts</h2><table><tr><th>requirement</th>"
            + "".join(f"<th class='{outcome}'>{escape(OUTCOME_LABELS[outcome])}</th>" for outcome in outcomes)
            + f"</tr>{rows}<tr><th>all</th>{total}</tr>"
            "</table><p class='meta'>IMPLEMENTATION items describe Kafka internals: shown, never graded; one "
            "that <i>differs from Kafka</i> is information about the target, not a departure from a KIP. "
            "Blocked items had a setup or check step on another API depart; errors are harness or "
            "infrastructure failures: neither is a verdict on the API under test.</p>")


def _value(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _departures(records: list[dict]) -> str:
    failed = [record for record in records if record.get("outcome") == "failed"]
    if not failed:
        return "<h2 id='departures'>Departures</h2><p>None: no item departed from the spec.</p>"
    by_case: dict[str, list[dict]] = {}
    for record in failed:
        by_case.setdefault(f"{record.get('suite')}::{record.get('case')}", []).append(record)
    sections = [f"<h2 id='departures'>Departures ({len(failed)} items, {len(by_case)} cases)</h2>"]
    for case, rows in by_case.items():
        first = rows[0]
        items = "".join(
            f"<tr class='departure-item'><td>{escape(label(row))}</td><td>"
            f"{escape(str(row.get('step_label') or ''))}</td><td><pre>{escape(_value(row.get('expected')))}</pre></td>"
            f"<td><pre>{escape(_value(row.get('actual')))}</pre></td>"
            f"<td><pre class='reproduce'>{escape(reproduce(row))}</pre></td></tr>" for row in rows)
        sections.append(
            f"<div class='departure' id='{escape(case)}'><h3>{escape(first.get('title') or case)}</h3>"
            f"<p><code>{escape(case)}</code> · {escape(str(first.get('requirement')))} · "
            f"{escape(str(first.get('api') or ''))} · {escape(str(first.get('kip')))}</p>"
            f"<p><i>{escape(str(first.get('cites') or ''))}</i></p>"
            f"<p>First departing step: {escape(str(first.get('step')))} "
            f"({escape(str(first.get('step_role') or 'under_test'))}, {escape(str(first.get('step_api') or ''))}): "
            f"{escape(str(first.get('message') or '').splitlines()[0] if first.get('message') else '')}</p>"
            "<table><tr><th>item</th><th>step</th><th>expected</th><th>observed</th><th>reproduce</th></tr>"
            f"{items}</table></div>")
    return "".join(sections)


def _incomplete(records: list[dict]) -> str:
    rows = [record for record in records if record.get("outcome") in ("blocked", "error")]
    if not rows:
        return ""
    body = "".join(
        f"<tr><td>{escape(row.get('outcome'))}</td><td>{escape(label(row))}</td>"
        f"<td>{escape(str(row.get('step_api') or ''))}</td><td>{escape(str(row.get('message') or '')[:400])}</td>"
        f"<td><pre class='reproduce'>{escape(reproduce(row))}</pre></td></tr>" for row in rows)
    return ("<h2 id='incomplete'>Without a verdict (blocked or error)</h2><div class='incomplete'><p>Not departures "
            "of the API under test: a setup or check step on another API departed (blocked), or the harness or "
            "infrastructure failed (error). Levels holding them are <b>incomplete</b>, not reached.</p>"
            "<table><tr><th>outcome</th><th>item</th><th>departing API</th><th>message</th><th>reproduce</th></tr>"
            f"{body}</table></div>")


def _differs(records: list[dict]) -> str:
    rows = [record for record in records if record.get("outcome") == "differs"]
    if not rows:
        return ""
    body = "".join(
        f"<tr class='differs-item'><td>{escape(label(row))}</td><td>{escape(str(row.get('step_label') or ''))}</td>"
        f"<td><pre>{escape(_value(row.get('expected')))}</pre></td><td><pre>{escape(_value(row.get('actual')))}</pre>"
        f"</td><td><pre class='reproduce'>{escape(reproduce(row))}</pre></td></tr>" for row in rows)
    return ("<h2 id='differs'>Differs from Kafka (IMPLEMENTATION)</h2><div class='differs'><p>What Apache Kafka "
            "does where the KIPs leave it open, and this target does otherwise: information about the target, "
            "never a departure from a KIP, and never counted towards a level.</p>"
            "<table><tr><th>item</th><th>step</th><th>Kafka does</th><th>observed</th><th>reproduce</th></tr>"
            f"{body}</table></div>")


def _fingerprint(fingerprint: dict | None, identity: dict) -> str:
    said = "".join(f"<tr><th>{escape(str(name))}</th><td>{escape(str(value))}</td></tr>"
                   for name, value in identity.items() if value not in (None, "", {}))
    if fingerprint is None:
        return (f"<h2 id='fingerprint'>Target fingerprint</h2><table>{said}</table><p>No ApiVersions answer was "
                "available (none recorded in the results, and the target was not reachable).</p>")
    features = "".join(f"<tr><td>{escape(name)}</td><td>{level}</td><td>"
                       f"{escape(str(fingerprint.get('supported_features', {}).get(name, '')))}</td></tr>"
                       for name, level in sorted(fingerprint.get("finalized_features", {}).items()))
    apis = "".join(f"<div class='api'><code>{entry['api_key']:>3}</code> {escape(entry['name'])} "
                   f"<b>v{entry['min']}–v{entry['max']}</b></div>" for entry in fingerprint.get("apis", []))
    return (f"<h2 id='fingerprint'>Target fingerprint</h2><table>{said}</table>"
            f"<p class='meta'>Source: {escape(fingerprint.get('source', ''))}</p>"
            "<h3>Finalized features</h3>"
            + (f"<table><tr><th>feature</th><th>finalized level</th><th>supported</th></tr>{features}</table>"
               if features else "<p>None reported.</p>")
            + "<h3>Advertised API versions</h3><p class='meta'>API key, name (a key the bundled specs do not "
            f"describe is shown by number), version range.</p><div class='apis'>{apis}</div>")


def _provenance(certificate: dict) -> str:
    suites = certificate["suites"]
    files = "".join(f"<li><code>{escape(name)}</code> <code>{digest[:12]}</code></li>"
                    for name, digest in suites["files"].items())
    return ("<h2 id='provenance'>Provenance</h2><table>"
            f"<tr><th>harness</th><td>{escape(json.dumps(certificate['harness']))}</td></tr>"
            f"<tr><th>suites digest (sha256)</th><td><code>{suites['digest']}</code></td></tr>"
            f"<tr><th>results digest (sha256)</th><td><code>{certificate['results']['digest']}</code> over "
            f"{certificate['results']['items']} items from {escape(', '.join(certificate['results']['sources']))}"
            "</td></tr>"
            f"<tr><th>levels</th><td><code>{escape(certificate['levels_file'])}</code></td></tr></table>"
            f"<details><summary>suite files</summary><ul>{files}</ul></details>")


def outcome_counts(records: list[dict]) -> dict:
    by_outcome = Counter(record.get("outcome") for record in records)
    by_requirement: dict[str, Counter] = {}
    for record in records:
        by_requirement.setdefault(record.get("requirement") or "?", Counter())[record.get("outcome")] += 1
    order = ["MUST", "SHOULD", "MAY", "IMPLEMENTATION"]
    return {"by_outcome": dict(by_outcome),
            "by_requirement": {name: dict(by_requirement[name]) for name in
                               sorted(by_requirement, key=lambda name: order.index(name) if name in order else 9)}}
