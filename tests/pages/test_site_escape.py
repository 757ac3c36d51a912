"""The interop site's pages and pictures are inert to what they show, like every other page (see test_pages_escape).

The site is written twice from the same facts (as Spark would hand them over), once with plain text in every
string field and once with hostile text (markup, quotes, an entity, a CDATA end, a template expression). Each
page must have exactly the elements and attributes of the plain one, the text pages must show the hostile text
literally, the JSON the script reads must give it back unchanged, and the script must never parse data as
markup.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from collections import Counter
from datetime import datetime
from html import unescape
from html.parser import HTMLParser

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import Row  # noqa: E402

from conformance import pages  # noqa: E402
from conformance.analysis.interop import build, facts  # noqa: E402
from conformance.analysis.outcomes import OUTCOMES  # noqa: E402

HOSTILE = "<script>alert(1)</script>\"'><img src=x onerror=alert(1)>&amp; ]]> <!-- {{ 7 * 7 }}"
PLAIN = "plain text"


class Elements(HTMLParser):
    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.found: Counter = Counter()
        self.shown: list[str] = []
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.found[(tag, tuple(sorted(name for name, _ in attrs)))] += 1
        self.shown.extend(value for _, value in attrs if value is not None)

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.shown.append(data)

    def handle_comment(self, data):
        self.found[("<!-- comment -->", ())] += 1


def the_facts(text: str) -> tuple[facts.Facts, dict]:
    when = datetime(2026, 11, 24, 1, 0)
    cells = []
    for target, outcome in (("a" + text, "failed"), ("b" + text, "passed")):
        values = {name: text for name in facts.CELL_FIELDS}
        values.update(target=target, outcome=outcome, api_version=3, draft=False, requirement="MUST",
                      run_id="r" + text, item=text + "@v3", step="2", pcap=text, run_started=when)
        cells.append(Row(**values))
    runs = []
    for position, target in enumerate(("a" + text, "b" + text)):
        counts = {name: 1 for name in OUTCOMES}
        runs.append(Row(target=target, run_id="r" + text, run_started=when, target_version=text + str(position),
                        harness_version=text + str(position), total=len(OUTCOMES), pass_rate=0.5, **counts))
        runs.append(Row(target=target, run_id="s" + text, run_started=when, target_version=text,
                        harness_version=text, total=len(OUTCOMES), pass_rate=0.5, **counts))
    changes = [Row(target="a" + text, run_id="s" + text, change="regression", count=1)]
    changed = [Row(target="a" + text, previous_run="r" + text, run_id="s" + text, item=text, previous_outcome=text,
                   outcome=text, change="regression")]
    flaky = [Row(target="a" + text, item=text, target_version=text, harness_version=text, runs=3, flips=2,
                 flaky_rate=0.33)]
    shown = {f"r{text}|a{text}|{text}@v3": {
        "outcome": "failed", "message": text, "cites": text, "expected": text, "observed": text, "step": text,
        "step_role": text, "reproduce": text, "pcap": text,
        "exchanges": [{"step": text, "api": text, "version": 3, "connection": text, "correlation_id": 1,
                       "elapsed_ms": 1.0, "request": text, "response": text, "problem": text}]}}
    return facts.Facts(cells, runs, changes, changed, flaky), shown


def write(folder, text: str) -> dict:
    found, shown = the_facts(text)
    build.write_site(folder, found, shown, command=text,
                     grade=lambda records, suites: [{"name": text, "status": text, "label": text, "passed": 1,
                                                     "counted": 2, "reasons": [text]}])
    return {path.name: path.read_text(encoding="utf-8") for path in folder.iterdir() if path.is_file()}


def test_every_page_of_the_site_is_inert(tmp_path):
    plain = write(tmp_path / "plain", PLAIN)
    hostile = write(tmp_path / "hostile", HOSTILE)
    assert sorted(hostile) == sorted([*build.PAGES, *build.PICTURES])
    # Every page links the register of certification bundles; until one is built there, a page says how.
    assert "href='certified/index.html'>Certification bundles</a>" in hostile["index.html"]
    assert "No certification bundle is registered yet" in (tmp_path / "hostile" / "certified" / "index.html").read_text()
    for name, markup in hostile.items():
        assert Elements(markup).found == Elements(plain[name]).found, f"{name}: the input added elements"
        if name.endswith(".svg"):
            ElementTree.fromstring(markup)  # still well-formed XML
    for name in ("index.html", "scores.html", "history.html", "history.svg", "matrix.svg"):
        assert any(HOSTILE in text for text in Elements(hostile[name]).shown), f"{name} does not show the text"
    for name in ("matrix.html", "compare.html"):
        data = json.loads(unescape(re.search(r"data-site='([^']*)'", hostile[name]).group(1)))
        # every cell field holds the text, target_name too: a named target reads "name version (address)"
        assert data["columns"][0]["label"] == f"{HOSTILE} {HOSTILE} (a{HOSTILE})"
        assert data["cases"][0]["case"] == HOSTILE
        assert next(iter(data["evidence"].values()))["exchanges"][0]["request"] == HOSTILE
        assert data["messages"] == [HOSTILE]


def test_the_script_never_reads_data_as_markup():
    script = pages.render("site_script.js.j2")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("):
        assert sink not in script, f"the site's script uses {sink}"
    assert "</script" not in script.lower()
