"""The certification page as a person sees it: rendered by headless chromium, matrix drawn, departures listed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from report_records import record, write_jsonl
from headless_chromium import colour_count, dump_dom, screenshot

from conformance.cli import main

pytestmark = pytest.mark.broker  # starts chromium (and, below, a broker)


def check_page_as_seen(folder: Path, tmp_path: Path, *, departure: str | None) -> str:
    url = (folder / "index.html").as_uri()
    dom = dump_dom(url, virtual_time_ms=1000)
    assert re.search(r"<svg[^>]*class=\"matrix\"", dom), "the matrix SVG is not in the rendered page"
    assert len(re.findall(r"<rect class=\"(passed|failed|blocked|error|unsupported|skipped)\"", dom)) >= 2
    assert "class=\"level\"" in dom and "data-status=" in dom  # the level cards with their badges
    if departure is not None:
        assert departure in dom
        assert re.search(r"class=\"reproduce\">conformance run --target \S+ --item [\w.-]+::[\w.-]+@v\d+<", dom)
    shot = screenshot(url, tmp_path / "page.png", height=1400)
    assert colour_count(shot) > 50, "the screenshot is (nearly) blank"
    return dom


def test_page_from_hand_made_results_renders(tmp_path):
    rows = [record("dup", version, "passed", suite="kip98.idempotence", api="Produce") for version in range(3, 12)]
    rows += [record("commit", 3, "failed"), record("commit", 4, "passed"), record("abort", 3, "blocked")]
    results = write_jsonl(tmp_path / "r.jsonl", rows)
    assert main(["certify", "--results", str(results), "-o", str(tmp_path / "cert")]) == 0
    dom = check_page_as_seen(next((tmp_path / "cert").glob("kafka-*")), tmp_path,
                             departure="kip98.transactions::commit@v3")
    assert "Without a verdict (blocked or error)" in dom
    assert "kip98.transactions::abort@v3" in dom


def test_certify_runs_a_real_target_and_asks_it_for_its_fingerprint(tmp_path):
    """End to end on librdkafka's mock cluster (in-process, seconds): run, fingerprint, grade, render."""
    from conformance.extension import Extensions

    reason = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches("rdkafka-mock")).availability()
    if reason:
        pytest.skip(f"rdkafka-mock: {reason}")
    suite = Path(__file__).resolve().parents[2] / "suites" / "kip98" / "transactions.yaml"
    main(["certify", "--target", "rdkafka-mock", str(suite), "-o", str(tmp_path / "cert")])
    folder = next((tmp_path / "cert").glob("rdkafka-mock-*"))
    import json

    facts = json.loads((folder / "certification.json").read_text())
    assert facts["fingerprint"]["source"].startswith("ApiVersions v")
    assert "asked of 127.0.0.1:" in facts["fingerprint"]["source"]  # asked of the running target, not the results
    assert any(api["name"] == "EndTxn" for api in facts["fingerprint"]["apis"])
    assert facts["departures"], "the mock departs from KIP-98 in this suite (see docs/generated/findings.md)"
    check_page_as_seen(folder, tmp_path, departure=facts["departures"][0]["item"])
