"""Items that share a root cause are one entry on the console, the findings page and the certification page
(the mock's one Produce v5 layout fault was 21 entries, one per case)."""

from __future__ import annotations

import json

from conformance.cli import main
from conformance.report import documents
from conformance.report.console import compact
from conformance.report.root_causes import root_causes

from report_records import result_record as record, write_jsonl

CAUSE = "Produce v5 response does not decode at ProduceResponse.responses[].partition_responses[].log_start_offset"


def rows() -> list[dict]:
    """Three Produce cases failed at v5 by the fault, one Fetch case blocked by it, one departure of its own."""
    found = [record(case, 5, "failed", suite="kip98.idempotence", api="Produce", root_cause=CAUSE)
             for case in ("in-order", "epoch-bump", "gzip")]
    found += [record("fetch-reads", 11, "blocked", suite="kip98.consumers", api="Fetch", root_cause=CAUSE),
              record("fetch-reads", 12, "blocked", suite="kip98.consumers", api="Fetch", root_cause=CAUSE),
              record("end-commits", 3, "failed"), record("in-order", 6, "passed", suite="kip98.idempotence",
                                                          api="Produce")]
    return found


def test_items_sharing_a_root_cause_are_one_group():
    (cause,) = root_causes(rows())
    assert cause.title == "Produce v5 response: 5 items in 4 cases"
    assert cause.outcomes == "3 failed, 2 blocked"


def test_the_console_lists_a_root_cause_once_and_its_items_not_again():
    text = compact.render(rows())
    assert text.startswith("--- ROOT CAUSES: 1 fault of one API version each, 5 items")
    assert "ROOT CAUSE Produce v5 response: 5 items in 4 cases  [kafka; 3 failed, 2 blocked]" in text
    assert f"    cause:     {CAUSE}" in text
    assert "kip98.consumers::fetch-reads v11-12" in text
    assert "--- FAILED: 1 case, 1 item" in text and "FAILED kip98.transactions::end-commits" in text
    assert "FAILED kip98.idempotence::in-order" not in text and "--- BLOCKED" not in text


def test_the_findings_page_has_one_row_per_root_cause():
    page = documents.findings_markdown(rows())
    section = page[page.index("## Root causes"):page.index("## Departures")]
    assert section.count("| kafka |") == 1 and "Produce v5 response: 5 items in 4 cases" in section
    departures = page[page.index("## Departures"):]
    assert "kip98.idempotence::gzip" not in departures and "kip98.transactions::end-commits" in departures
    assert "1 failed items in 1 target × case pairs." in departures


def test_the_certification_page_groups_them_and_escapes_the_cause(tmp_path):
    marked = [dict(row.evidence(), root_cause=row.root_cause + " <b>x</b>") if row.root_cause else row
              for row in rows()]
    out = tmp_path / "cert"
    main(["certify", "--results", str(write_jsonl(tmp_path / "r.jsonl", marked)), "-o", str(out)])
    folder = next(out.glob("kafka-*"))
    html = (folder / "index.html").read_text()
    assert "<h2 id='root-causes'>Root causes (1)</h2>" in html
    [row] = html.split("<tr class='root-cause'>")[1:]  # one row for the root cause, its items folded in it
    assert "<b>Produce v5 response: 5 items in 4 cases</b>" in row and "&lt;b&gt;x&lt;/b&gt;" in row
    assert "<td class='count'>5</td>" in row and row.count("class='folded-item'") == 5
    assert "Departures (1 items, 1 cases)" in html
    facts = json.loads((folder / "certification.json").read_text())
    assert facts["root_causes"][0]["items"][0] == "kip98.idempotence::in-order@v5"


def test_versions_set_up_went_around_are_one_noted_finding_each_even_on_passing_items():
    note = "finding on JoinGroup v6 (not this item's verdict): connection closed; the step went on at JoinGroup v5"
    found = [record(case, 3, "passed", suite="kip447.group-generation", api="TxnOffsetCommit", message=note)
             for case in ("current-member-commits", "stale-generation-fenced")]
    found.append(record("unknown-member-fenced", 3, "failed", suite="kip447.group-generation", api="TxnOffsetCommit",
                        message=f"4 send TxnOffsetCommit: expected a refusal, got NONE\n{note}"))
    text = compact.render(found)
    assert ("NOTED JoinGroup v6: 3 items in 3 cases [kafka]: connection closed; the step went on at JoinGroup v5"
            in text)
    assert "FAILED kip447.group-generation::unknown-member-fenced" in text  # its own departure stays listed
    page = documents.findings_markdown(found)
    assert "| kafka | JoinGroup v6 | 3 |" in page[page.index("## Noted by set-up and check steps"):]
