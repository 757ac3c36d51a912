"""Every page the harness writes is inert to what it shows: hostile text in any field stays text.

Each page is rendered twice from the same inputs, once with plain text in every string field and once with
:data:`HOSTILE` (markup, quotes, an entity, a CDATA end, a template expression) in every one of them. The
hostile page must have exactly the elements and attributes of the plain one (the input added none: no
``<script>``, no ``<img onerror>``), and every field must show its value literally, neither lost nor
escaped twice. Values that reports print as numbers (feature levels, API version ranges, counts,
digests) get hostile text too: they must be escaped because they are text, not because they happen to be
numbers today.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
import xml.etree.ElementTree as ElementTree
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest

from conformance.capture.diff import AlignedPair, Diff, Difference, RunDiff
from conformance.capture.html_report import render_html
from conformance.capture.wire import WireExchange
from conformance.protocol.schema import VersionRange
from conformance.report import known_failures
from conformance.report.certify import page, svg
from conformance.report.certify.levels import Grade, Level
from conformance.report.itemref import label, reproduce
from conformance.results.record import ResultRecord

HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(1)>&amp; ]]> <!-- {{ 7 * 7 }}"
PLAIN = "plain text"


class Page(HTMLParser):
    """What a browser would build from a page: its elements with their attribute names, and its text and
    attribute values with entities decoded."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.elements: Counter = Counter()
        self.shown: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements[(tag, tuple(sorted(name for name, _ in attrs)))] += 1
        self.shown.extend(value for _, value in attrs if value is not None)

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.shown.append(data)

    def handle_comment(self, data):
        self.elements[("<!-- comment -->", ())] += 1  # a comment the input opened would hide the page after it


def check_inert(render, fields) -> str:
    """Render with plain and with hostile text; the same elements either way, and every field literally shown.

    ``render(text)`` returns the page; ``fields(text)`` the strings it must show (each field's value, or the
    text it is part of).
    """
    plain, hostile = Page(render(PLAIN)), Page(render(HOSTILE))
    assert PLAIN not in HOSTILE and HOSTILE not in PLAIN
    assert hostile.elements == plain.elements, "the input added or removed elements or attributes"
    for tag, attributes in hostile.elements:
        assert tag not in ("script", "img") or tag in {element for element, _ in plain.elements}
        assert not any(name.startswith("on") for name in attributes), (tag, attributes)
    shown = "\n".join(hostile.shown)
    missing = [value for value in fields(HOSTILE) if value not in shown]
    assert not missing, f"not shown literally: {missing}"
    return render(HOSTILE)


def marked(text: str, field: str) -> str:
    """One field's value: the text, and the field's name so that each field is found on its own."""
    return f"{text}#{field}"


# ------------------------------------------------------------------------------ the certification page
def certification(text: str) -> tuple[dict, list[Grade], list[ResultRecord]]:
    """A certificate, grades and records whose every string says ``text``, reaching every part of the page."""
    def item(case: str, version: int | None, outcome: str, **extra) -> ResultRecord:
        row = {"target": marked(text, "record target"), "suite": marked(text, "suite"), "case": marked(text, case),
               "title": marked(text, f"title {case}"), "kip": marked(text, "kip"), "api": marked(text, "api"),
               "api_version": version, "outcome": outcome, "requirement": marked(text, "requirement"),
               "cites": marked(text, f"cites {case}"), "nodeid": marked(text, f"nodeid {case}"),
               "path": marked(text, "path"), "step": marked(text, f"step {case}"),
               "step_label": marked(text, f"step label {case}"), "step_role": marked(text, f"step role {case}"),
               "step_api": marked(text, f"step api {case}"), "expected": marked(text, f"expected {case}"),
               "actual": {marked(text, f"actual key {case}"): marked(text, f"actual {case}")},
               "message": marked(text, f"message {case}") + "\nsecond line"}
        row.update(extra)
        return ResultRecord.from_line(row)

    records = [item("passing", 3, "passed"), item("departing", 4, "failed"), item("blocked", 5, "blocked"),
               item("error", None, "error"), item("differing", 3, "differs"), item("unsupported", 6, "unsupported"),
               item("skipped", 7, "skipped")]
    level = Level(id=marked(text, "level id"), name=marked(text, "level name"), summary=marked(text, "level summary"),
                  requirements=(marked(text, "level requirement"),),
                  demands={marked(text, "demanded api"): None, "Produce": VersionRange(3, 11)},
                  features={marked(text, "demanded feature"): 2})
    waiver = known_failures.Entry("known_failures", "s::c", (), marked(text, "waiver reason"), None, None, "f")
    grades = [Grade(level, marked(text, "status"), counted=marked(text, "counted"), passed=marked(text, "passed"),
                    ungraded=marked(text, "ungraded"), reasons=[marked(text, "reason")],
                    waived=[(records[1], waiver)]),
              Grade(level, "not run")]
    certificate = {
        "target": marked(text, "target"), "generated_at": marked(text, "generated at"),
        "identity": {"target": marked(text, "identity target"), "target_version": marked(text, "target version"),
                     marked(text, "identity key"): marked(text, "identity value")},
        "fingerprint": {
            "apis": [{"api_key": marked(text, "api key"), "name": marked(text, "api name"),
                      "min": marked(text, "min"), "max": marked(text, "max")}],
            "finalized_features": {marked(text, "feature"): marked(text, "feature level")},
            "supported_features": {marked(text, "feature"): marked(text, "supported")},
            "source": marked(text, "fingerprint source")},
        "harness": {"name": "kafka-conformance", "version": marked(text, "harness version")},
        "suites": {"digest": marked(text, "suites digest"), "files": {marked(text, "suite file"): marked(text, "file digest")}},
        "results": {"digest": marked(text, "results digest"), "items": marked(text, "items"),
                    "sources": [marked(text, "results source")]},
        "run_ids": [marked(text, "run id")],
        "levels_file": marked(text, "levels file"),
        "counts": {"by_outcome": {"passed": marked(text, "passed count")},
                   "by_requirement": {marked(text, "counted requirement"): {"failed": marked(text, "failed count")}}},
    }
    return certificate, grades, records


def certification_fields(text: str) -> list[str]:
    certificate, grades, records = certification(text)
    fields = [marked(text, name) for name in (
        "target", "generated at", "harness version", "run id", "identity target", "target version", "identity key",
        "identity value", "api key", "api name", "min", "max", "feature", "feature level", "supported",
        "fingerprint source", "suites digest", "results digest", "items", "results source", "suite file",
        "levels file", "passed count", "counted requirement", "failed count", "level id", "level name",
        "level summary", "level requirement", "demanded api", "demanded feature", "status", "counted", "passed",
        "ungraded", "reason", "waiver reason", "kip", "suite", "api")]
    for row in records:
        case = row.case.split("#")[1]
        fields += [label(row), reproduce(row)] if row.outcome in ("failed", "blocked", "error", "differs") else []
        if row.outcome in ("failed", "differs"):
            fields += [row.step_label, row.expected, json.dumps(row.actual)]  # a value that is not text: JSON
        if row.outcome == "failed":
            fields += [row.title, row.requirement, row.cites, row.step, row.step_role,
                       row.step_api, marked(text, f"message {case}")]
        if row.outcome in ("blocked", "error"):
            fields += [row.step_api, marked(text, f"message {case}")]
    return fields


def test_the_certification_page_is_inert():
    check_inert(lambda text: page.render(*certification(text)), certification_fields)


def test_a_certification_page_without_fingerprint_or_departures_is_inert():
    def render(text: str) -> str:
        certificate, grades, records = certification(text)
        certificate["fingerprint"] = None
        return page.render(certificate, grades, [row for row in records if row.outcome == "passed"])

    check_inert(render, lambda text: [marked(text, "target"), marked(text, "identity target"),
                                      marked(text, "target version")])


def test_badges_are_inert_and_well_formed_xml():
    def render(text: str) -> str:
        badge = svg.badge(marked(text, "level name"), marked(text, "label"))
        ElementTree.fromstring(badge)  # a badge file is served as image/svg+xml: it must parse as XML
        return badge

    badge = check_inert(render, lambda text: [marked(text, "level name"), marked(text, "label")])
    texts = [element.text for element in ElementTree.fromstring(badge).iter() if element.text]
    assert marked(HOSTILE, "level name") in texts and marked(HOSTILE, "label") in texts


# ------------------------------------------------------------------------------ the wire diff page
def wire_diff(text: str) -> RunDiff:
    """Three cases sharing a difference (listed once, as common), one-sided and large exchanges, an identical case."""
    def exchange(side: str) -> WireExchange:
        return WireExchange(marked(text, f"connection {side}"), marked(text, f"api {side}"), 22, 4, 7, b"")

    def view(side: str, rows: int = 3) -> dict:
        return {"request": {marked(text, "field"): marked(text, f"value {side}"), "error_code": 3 if side == "A" else 47,
                            "list": [{"name": marked(text, "element")}]},
                "response": {f"same{index}": index for index in range(rows)}}

    common = Difference(marked(text, "common kind"), marked(text, "common key"), marked(text, "common path"),
                        marked(text, "common a"), marked(text, "common b"))
    cases = []
    for index in range(3):
        own = Difference(marked(text, f"kind {index}"), marked(text, f"key {index}"), marked(text, f"path {index}"),
                         marked(text, f"a {index}"), {marked(text, f"b key {index}"): 1})
        pair = AlignedPair(marked(text, f"pair {index}"), exchange("A"), exchange("B"), view("A", 100 if index else 3),
                           view("B", 100 if index else 3), [own, common])
        one_sided = AlignedPair(marked(text, f"one-sided {index}"), exchange("A"), None, None, None,
                                [Difference("only_in_a", marked(text, f"one-sided {index}"), "", marked(text, "only"))])
        cases.append(Diff(marked(text, f"case {index}"), [pair, one_sided], [own, common, *one_sided.differences]))
    cases.append(Diff(marked(text, "identical case")))
    return RunDiff(marked(text, "A name"), marked(text, "B name"), cases, [marked(text, "only in A")],
                   [marked(text, "only in B")])


def wire_diff_fields(text: str) -> list[str]:
    fields = [marked(text, name) for name in (
        "A name", "B name", "only in A", "only in B", "identical case", "common kind", "common key", "common path",
        "common a", "common b", "field", "value A", "value B", "element", "api A", "only")]
    for index in range(3):
        fields += [marked(text, f"{name} {index}") for name in ("case", "kind", "key", "path", "a", "pair", "one-sided")]
        # a value that is not text is shown as JSON (its quotes escaped the JSON way)
        fields.append(json.dumps({marked(text, f"b key {index}"): 1}, separators=(",", ":")))
    return fields


def test_the_wire_diff_page_is_inert():
    page_text = check_inert(lambda text: render_html(wire_diff(text)), wire_diff_fields)
    assert "47 INVALID_PRODUCER_EPOCH" in page_text  # error codes are named beside their number


# ------------------------------------------------------------------------------ conformance analyze pages
class Frame:
    """The two things the summary page asks of a Spark DataFrame: its columns, and its first rows."""

    def __init__(self, columns: list[str], rows: list[dict]):
        self.columns, self.rows = columns, rows

    def limit(self, count: int) -> Frame:
        return Frame(self.columns, self.rows[:count])

    def collect(self) -> list[dict]:
        return self.rows


def test_the_analysis_pages_are_inert(tmp_path):
    pytest.importorskip("pyspark", reason="pip install -e '.[analysis]'")
    from conformance.analysis import summary
    from conformance.analysis.driver import write_index

    def render_page(text: str) -> str:
        folder = tmp_path / f"page-{len(text)}"
        folder.mkdir(exist_ok=True)
        columns = [marked(text, "column"), "outcome", "count"]
        rows = [{columns[0]: marked(text, f"cell {index}"), "outcome": "failed", "count": None}
                for index in range(summary.TABLE_ROWS + 1)]
        image = folder / (marked(text, "image").replace("/", "|") + ".png")
        return summary.write_page(folder, marked(text, "title"), {marked(text, "table"): Frame(columns, rows)},
                                  [image]).read_text(encoding="utf-8")

    def render_index(text: str) -> str:
        folder = tmp_path / f"index-{len(text)}"
        folder.mkdir(exist_ok=True)
        write_index(folder, [marked(text, "job").replace("/", "|")])
        return (folder / "index.html").read_text(encoding="utf-8")

    shown = check_inert(render_page, lambda text: [marked(text, name) for name in ("title", "table", "column",
                                                                                  "cell 0")]
                        + [marked(text, "image").replace("/", "|")])  # the image's alt text: its file's stem
    assert 'style="color:#c62828"' in shown  # an outcome is shown in its colour
    # and the image's link is its file's name, percent-encoded (a "#" in it would otherwise end the path)
    assert f'src="{quote(marked(HOSTILE, "image").replace("/", "|") + ".png")}"' in shown
    check_inert(render_index, lambda text: [marked(text, "job").replace("/", "|")])


# ------------------------------------------------------------------------------ no markup outside the templates
PACKAGE = Path(__file__).resolve().parents[2] / "conformance"
MARKUP = re.compile(r"<(?:!doctype|html|head|body|div|p|table|tr|td|th|svg|rect|text|tspan|g|title|li|ul|h[1-6]|span|"
                    r"code|pre|img|a|b|details|summary|style|br)[\s>/]", re.IGNORECASE)
HAND_ESCAPING = re.compile(r"\bhtml \. escape\b|\bfrom html import\b|\bimport html\b|\bmarkupsafe\b|\bMarkup \(")
TEXT = {tokenize.STRING, tokenize.COMMENT, *(getattr(tokenize, name) for name in ("FSTRING_START", "FSTRING_MIDDLE",
                                                                                 "FSTRING_END") if hasattr(tokenize, name))}


def test_markup_is_written_in_templates_only():
    """No Python module writes a tag or escapes by hand; no template marks a value safe or turns escaping off."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline))
        offenders += [f"{path.relative_to(PACKAGE)}:{token.start[0]}: {token.string[:80]}" for token in tokens
                      if token.type in TEXT - {tokenize.COMMENT} and MARKUP.search(token.string)
                      and not token.string.lstrip("rbfuRBFU").startswith(('"""', "'''"))]  # docstrings may say <svg>
        code: dict[int, list[str]] = {}  # each line's code, its strings and comments left out
        for token in tokens:
            if token.type not in TEXT:
                code.setdefault(token.start[0], []).append(token.string)
        offenders += [f"{path.relative_to(PACKAGE)}:{number}: {' '.join(words)}" for number, words in code.items()
                      if HAND_ESCAPING.search(" ".join(words))]
    for path in sorted((PACKAGE / "pages" / "templates").glob("*.j2")):
        offenders += [f"{path.relative_to(PACKAGE)}: {found}"
                      for found in re.findall(r"\|\s*safe\b|autoescape\s+false|Markup", path.read_text(encoding="utf-8"))]
    assert not offenders, "markup belongs in conformance/pages/templates:\n" + "\n".join(offenders)
