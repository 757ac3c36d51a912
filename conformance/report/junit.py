"""JUnit XML from results records, so any CI shows a run the way it shows unit tests.

CI systems tell ``<failure>`` (the test ran and found a problem) from ``<error>`` (it could not
run properly), and the harness's distinctions map to them as :mod:`conformance.report.ci` says: a binding
departure is a ``<failure type="departure">``, a binding blocked item or a harness error an ``<error>``, and
everything that does not bind (not enforced, differs from Kafka, unsupported, skipped) a ``<skipped>`` whose
``type`` names which. :class:`JunitOutput` writes it when a run ends (``--junit FILE``).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

from ..results.record import ResultRecord
from .ci import CiState, ci_result
from .itemref import label, reproduce
from .sinks import FileOutput, OutputOption

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
PROPERTY_FIELDS = ("target", "target_version", "kip", "api", "api_version", "requirement", "outcome", "verdict",
                   "cites", "nodeid", "run_id")


def element_for(record: ResultRecord) -> tuple[ElementTree.Element, str]:
    """The ``<testcase>`` of one record, and what it counts as: passed, failure, error or skipped."""
    case = ElementTree.Element("testcase", {
        "classname": f"{record.target}.{record.suite}",
        "name": label(record),  # the item id every report uses
        "time": f"{float(record.duration_s or 0):.3f}",
        "file": str(record.path or ""),
    })
    properties = ElementTree.SubElement(case, "properties")
    for name in PROPERTY_FIELDS:
        value = getattr(record, name)
        if value is not None:
            ElementTree.SubElement(properties, "property", {"name": name, "value": _clean(str(value))})
    ElementTree.SubElement(properties, "property", {"name": "reproduce", "value": reproduce(record)})

    ci = ci_result(record)
    message, kind = _clean(ci.message), ci.state.value
    if ci.state is CiState.FAILURE or ci.state is CiState.ERROR:
        ElementTree.SubElement(case, kind, {"type": ci.type, "message": message}).text = _clean(_details(record))
    elif ci.state is CiState.SKIPPED:
        skipped = ElementTree.SubElement(case, "skipped", {"type": ci.type, "message": message})
        if ci.type == "differs-from-kafka":
            skipped.text = _clean(_details(record))
    if kind != "passed" and record.transcript:
        ElementTree.SubElement(case, "system-out").text = _clean(_transcript_text(record.transcript))
    return case, kind


def _clean(text: str) -> str:
    """XML 1.0 cannot carry most control characters, even escaped; decoded broker bytes may hold some."""
    return _CONTROL.sub("\ufffd", text)


def _details(record: ResultRecord) -> str:
    lines = [f"{label(record)} on {record.target} {record.target_version or ''}".rstrip(),
             f"requirement: {record.requirement} ({record.kip}): {record.cites}"]
    if record.step is not None:
        lines.append(f"step {record.step} ({record.step_role}, {record.step_api}): {record.step_label}")
    if record.expected is not None or record.actual is not None:
        lines += [f"expected: {json.dumps(record.expected, default=str)}",
                  f"actual:   {json.dumps(record.actual, default=str)}"]
    lines += [f"message: {record.message}", f"reproduce: {reproduce(record)}"]
    return "\n".join(lines)


def _transcript_text(transcript) -> str:
    if isinstance(transcript, str):
        return transcript
    lines = []
    for exchange in transcript:
        lines.append(f"{exchange.get('step')}: {exchange.get('api')} v{exchange.get('version')} "
                     f"-> {exchange.get('connection')}")
        lines.append("  request:  " + json.dumps(exchange.get("request"), default=str)[:2000])
        lines.append("  response: " + json.dumps(exchange.get("response"), default=str)[:2000])
    return "\n".join(lines)


def junit_tree(records: list[ResultRecord]) -> ElementTree.ElementTree:
    """One ``<testsuite>`` per target and suite, in order of first appearance."""
    root = ElementTree.Element("testsuites", {"name": "kafka-conformance"})
    groups: dict[tuple[str, str], list[ResultRecord]] = {}
    for record in records:
        groups.setdefault((record.target, record.suite), []).append(record)
    totals: Counter = Counter()
    for (target, suite_id), rows in groups.items():
        suite = ElementTree.SubElement(root, "testsuite", {"name": f"{target} :: {suite_id}"})
        properties = ElementTree.SubElement(suite, "properties")
        for name in ("target", "target_version", "run_id"):
            ElementTree.SubElement(properties, "property", {"name": name, "value": str(getattr(rows[0], name))})
        counts: Counter = Counter()
        for record in rows:
            case, kind = element_for(record)
            suite.append(case)
            counts[kind] += 1
        _set_counts(suite, counts, sum(float(row.duration_s or 0) for row in rows))
        totals.update(counts)
    _set_counts(root, totals, sum(float(row.duration_s or 0) for row in records))
    ElementTree.indent(root)
    return ElementTree.ElementTree(root)


def _set_counts(element: ElementTree.Element, counts: Counter, seconds: float) -> None:
    element.set("tests", str(sum(counts.values())))
    element.set("failures", str(counts["failure"]))
    element.set("errors", str(counts["error"]))
    element.set("skipped", str(counts["skipped"]))
    element.set("time", f"{seconds:.3f}")


def write_junit(records: list[ResultRecord], path: str | Path) -> int:
    """The JUnit XML of ``records`` (as :func:`conformance.results.store.read_records` reads them) at ``path``;
    how many test cases it holds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_tree(records).write(path, encoding="utf-8", xml_declaration=True)
    return len(records)


class JunitOutput(FileOutput):
    """``--junit FILE``: the run's JUnit XML, written when it ends."""

    name = "junit"
    description = "JUnit XML of the run, for any CI's test report"
    options = (OutputOption("--junit", "also write JUnit XML (a departure is a <failure>, a harness error an "
                                       "<error>)"),)
    write = staticmethod(write_junit)
