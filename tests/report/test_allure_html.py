"""The Allure HTML report: categories, executor, environment and history added; rendered in headless chromium."""

from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import threading
from pathlib import Path

import pytest
from report_records import record, write_jsonl

from conformance.cli import main
from conformance.report import allure_html

ROOT = Path(__file__).resolve().parents[2]


def test_prepare_adds_categories_executor_environment_and_history(tmp_path):
    results, previous = tmp_path / "results", tmp_path / "previous"
    results.mkdir()
    (results / "1-result.json").write_text("{}")
    (results / "environment.properties").write_text("target.kafka=4.4.0\n")
    (previous / "history").mkdir(parents=True)
    (previous / "history" / "history-trend.json").write_text("[]")
    staging = tmp_path / "staging"
    allure_html.prepare(results, staging, previous_report=previous, executor={"name": "CI"},
                        environment={"features.kafka": "transaction.version=2", "target.kafka": "ignored"})
    names = [category["name"] for category in json.loads((staging / "categories.json").read_text())]
    assert names[:4] == ["Timeout", "Blocked: a set-up or check step on another API departed",
                         "Departure from the spec", "Harness or infrastructure error"]
    assert "Unsupported by the target" in names
    assert json.loads((staging / "executor.json").read_text()) == {"name": "CI"}
    assert (staging / "environment.properties").read_text() == (
        "target.kafka=4.4.0\nfeatures.kafka=transaction.version=2\n")  # the run's own entries win
    assert (staging / "history" / "history-trend.json").is_file()
    assert not (results / "categories.json").exists()  # the input folder is left as it was


def test_categories_tell_departures_from_errors_timeouts_and_unsupported():
    def category(status, message):
        for entry in allure_html.CATEGORIES:
            if status in entry["matchedStatuses"] and re.fullmatch(entry.get("messageRegex", ".*"), message, re.S):
                return entry["name"]
        return None

    assert category("failed", "conformance.pytest_plugin.items.ConformanceFailure: MUST not met: 2 send EndTxn: "
                              "expected X, got Y") == "Departure from the spec"
    assert category("failed", "conformance.pytest_plugin.items.ConformanceFailure: MUST not met: 3 fetch: no response within "
                              "5000 ms") == "Timeout"
    assert category("failed", "conformance.pytest_plugin.items.ConformanceFailure: blocked, no verdict on EndTxn").startswith(
        "Blocked")
    assert category("broken", "ConnectionRefusedError: [Errno 111]") == "Harness or infrastructure error"
    assert category("skipped", "Skipped: unsupported: tansu advertises EndTxn v0-v4, not v5") == \
        "Unsupported by the target"
    differs = ("XFailed: differs from Kafka (IMPLEMENTATION, not a conformance requirement): "
               "2 send Produce: expected INVALID_TOPIC_EXCEPTION")
    assert category("skipped", differs) == "Differs from Kafka (IMPLEMENTATION)"
    assert category("skipped", "XFailed: SHOULD not met: 1 send EndTxn") == "SHOULD/MAY not met (not enforced)"


def test_environment_from_results_gives_versions_and_features(tmp_path):
    transcript = [{"api": "ApiVersions", "version": 4, "response": {
        "error_code": 0, "api_keys": [{"api_key": 26, "min_version": 0, "max_version": 5}],
        "finalized_features": [{"name": "transaction.version", "min_version_level": 2, "max_version_level": 2}]}}]
    results = write_jsonl(tmp_path / "r.jsonl", [record("a", 1, "failed", transcript=transcript),
                                                 record("a", 1, "passed", target="tansu")])
    assert allure_html.environment_from_results([str(results)]) == {
        "target.kafka": "4.4.0", "features.kafka": "transaction.version=2", "target.tansu": "4.4.0"}


def test_no_allure_command_line_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("ALLURE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(allure_html.resources, "source_tree", lambda: None)  # as from a wheel: no checkout
    results = tmp_path / "results"
    results.mkdir()
    (results / "1-result.json").write_text("{}")
    assert main(["report", "allure", str(results), "-o", str(tmp_path / "out")]) == 2
    assert "npm ci" in capsys.readouterr().err


# ------------------------------------------------------------------------------ end to end, in a browser
def allure_or_skip() -> None:
    try:
        allure_html.allure_command()
    except allure_html.AllureUnavailable as missing:
        pytest.skip(str(missing))
    if shutil.which("java") is None:
        pytest.skip("no java for Allure 2")


def serve(folder: Path):
    """The report over HTTP on loopback, as `allure open` serves it (browsers refuse its XHRs from file://)."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *arguments):
        pass


@pytest.mark.broker
def test_report_of_two_real_runs_renders_with_categories_trend_and_attachment(tmp_path):
    """Two runs on librdkafka's mock cluster (it departs from KIP-98), two builds into one folder: the second
    report has a two-point trend, and chromium shows the suites, a failed item and its transcript attachment."""
    from headless_chromium import colour_count, dump_dom, screenshot

    from conformance.extension import Extensions

    allure_or_skip()
    reason = next(kind for kind in Extensions.for_run().target_kinds() if kind.matches("rdkafka-mock")).availability()
    if reason:
        pytest.skip(f"rdkafka-mock: {reason}")
    suite = str(ROOT / "suites" / "kip98" / "transactions.yaml")
    report = tmp_path / "allure-report"
    for run in ("first", "second"):
        alluredir, results = tmp_path / f"allure-{run}", tmp_path / f"{run}.jsonl"
        main(["run", "--target", "rdkafka-mock", "--results", str(results), "--alluredir", str(alluredir), suite,
              "--", "-q", "--tb=no", "-p", "no:cacheprovider", "-k", "commit or end-txn"])
        assert main(["report", "allure", str(alluredir), "-o", str(report), "--results", str(results)]) == 0

    trend = json.loads((report / "history" / "history-trend.json").read_text())
    assert len(trend) == 2, "the second build carries the first one's history"
    categories = {item["name"]: item for item in json.loads((report / "widgets" / "categories.json").read_text())
                  ["items"]}
    assert "Departure from the spec" in categories
    assert "googletagmanager" not in (report / "index.html").read_text()

    failed = _a_failed_case_with_transcript(report)
    server = serve(report)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        # The suites tree opened at the failed item, as a click on it shows it.
        suites_dom = _rendered(dump_dom, f"{base}#suites/{failed['uid']}", "Suites")
        assert "KIP-98" in suites_dom and "'rdkafka-mock'" in suites_dom.replace("&#39;", "'")
        item_dom = _rendered(dump_dom, f"{base}#testresult/{failed['uid']}?attachment={failed['attachment']}",
                             "attachment-preview__text")
        assert failed["name"] in item_dom.replace("&amp;", "&").replace("&#39;", "'")
        assert "not met" in item_dom  # the failure message
        preview = re.search(r'class="attachment-preview__text">(.*?)</pre>', item_dom, re.S)
        assert preview and "ApiVersions" in preview.group(1), "the transcript attachment is not on screen"
        categories_dom = _rendered(dump_dom, f"{base}#categories", "Departure from the spec")
        assert "Unsupported by the target" in categories_dom
        shot = screenshot(f"{base}#suites", tmp_path / "allure.png", virtual_time_ms=8000)
        assert colour_count(shot) > 50
    finally:
        server.shutdown()
        server.server_close()  # its listening socket too


def _rendered(dump_dom, url: str, needle: str, attempts: int = 3) -> str:
    """The DOM once the app rendered ``needle``: on a loaded machine the first load can come back empty."""
    for _ in range(attempts):
        dom = _visible(dump_dom(url, virtual_time_ms=8000))
        if needle in dom:
            return dom
    return dom


def _visible(dom: str) -> str:
    return re.sub(r"<(style|script)\b.*?</\1>", "", dom, flags=re.S)


def _a_failed_case_with_transcript(report: Path) -> dict:
    for path in sorted((report / "data" / "test-cases").glob("*.json")):
        case = json.loads(path.read_text())
        if case["status"] != "failed":
            continue
        for attachment in case.get("testStage", {}).get("attachments", []):
            if attachment["name"] == "transcript":
                return {"uid": case["uid"], "name": case["name"], "attachment": attachment["uid"]}
    pytest.fail("no failed item with a transcript attachment in the report")


def test_environment_properties_keep_one_entry_per_line_whatever_the_values(tmp_path):
    """The Environment widget reads Java .properties: separators, line breaks and comment marks in a name
    or value must not split or hide an entry."""
    from conformance.report.allure import write_environment

    write_environment(tmp_path, {"target kafka=x": "4.4.0\nsecond line", "#not a comment": "a\\b\rc", "empty": ""})
    assert (tmp_path / "environment.properties").read_text().splitlines() == [
        "target\\ kafka\\=x=4.4.0\\nsecond line",
        "\\#not\\ a\\ comment=a\\\\b\\rc",
    ]
