"""SARIF for code scanning, as an output: ``conformance run --sarif FILE`` on the scripted small broker, whose closed
ApiVersions v5 connection is one departure (tests/support/small_broker.py), gives one result at that case's line,
valid against the SARIF 2.1.0 schema (as the ``pydantic-sarif`` package models it) and holding the fields code
scanning reads."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.report.sarif import sarif_log
from conformance.results.record import ResultRecord

from small_broker import small_broker

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "robustness" / "malformed-frames.yaml"
DEPARTING = "api-versions-unknown-version"  # the small broker closes the connection where KIP-511 asks for an answer


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(the SARIF log, the JUnit XML's text, the results' lines) of ``conformance run`` of one suite on the broker."""
    folder = tmp_path_factory.mktemp("sarif")
    broker = small_broker()
    try:
        done = subprocess.run([sys.executable, "-m", "conformance", "run", str(SUITE), "--target", broker.address,
                               "--results", str(folder / "results.jsonl"), "--alluredir", "",
                               "--sarif", str(folder / "run.sarif"), "--junit", str(folder / "junit.xml")],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        broker.stop()
    assert (folder / "run.sarif").is_file(), done.stdout + done.stderr
    assert f"wrote {folder / 'run.sarif'}" in done.stdout and f"wrote {folder / 'junit.xml'}" in done.stdout
    lines = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    return json.loads((folder / "run.sarif").read_text()), (folder / "junit.xml").read_text(), lines, folder


def test_one_result_per_departure_at_the_cases_line_in_its_suite(run):
    log, junit, lines, _ = run
    departed = [line for line in lines if line["outcome"] in ("failed", "differs")]
    [sarif_run] = log["runs"]
    assert [result["ruleId"] for result in sarif_run["results"]] == \
        [f"{line['suite']}/{line['case']}" for line in departed] == [f"robustness.malformed-frames/{DEPARTING}"]
    [result] = sarif_run["results"]
    assert result["level"] == "error"  # a MUST departure
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "suites/robustness/malformed-frames.yaml", "uriBaseId": "SRCROOT"}
    written = next(number for number, text in enumerate(SUITE.read_text().splitlines(), 1)
                   if re.fullmatch(rf"\s*- id: {DEPARTING}", text))
    assert location["region"] == {"startLine": written}
    rule = sarif_run["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == result["ruleId"] and "KIP-511" in rule["fullDescription"]["text"]
    assert sarif_run["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]
    # the same run's JUnit, from the same outcome-to-CI map, fails exactly that item
    assert re.search(r'failures="1"', junit) and DEPARTING in junit.split("<failure")[0].rsplit("<testcase", 1)[1]


def test_the_log_is_valid_sarif_2_1_0(run):
    model = pytest.importorskip("pydantic_sarif.model", reason="pip install pydantic-sarif (the SARIF 2.1.0 schema)")
    log, _, _, _ = run
    parsed = model.StaticAnalysisResultsFormatSarifVersion210JsonSchema.model_validate(log)
    assert parsed.version.value == "2.1.0" and len(parsed.runs[0].results) == 1


def test_the_fields_code_scanning_requires_are_there(run):
    """What GitHub's upload reads (its documented required properties), checked without the schema package."""
    log, _, _, _ = run
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    for sarif_run in log["runs"]:
        driver = sarif_run["tool"]["driver"]
        assert driver["name"] == "kafka-conformance" and driver["rules"]
        assert sarif_run["automationDetails"]["id"].count("/") == 2
        for result in sarif_run["results"]:
            assert result["message"]["text"] and result["ruleId"] == driver["rules"][result["ruleIndex"]]["id"]
            assert result["partialFingerprints"]["conformanceItem/v1"]
            assert result["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1


def _record(outcome: str, verdict: str, requirement: str = "MUST", **fields) -> ResultRecord:
    return ResultRecord(suite="s", case=f"c-{outcome}-{verdict}", target="t", outcome=outcome, verdict=verdict,
                        requirement=requirement, message="why", run_id="r", **fields)


def test_levels_follow_the_ci_map_and_errors_are_notifications_not_results():
    log = sarif_log([_record("failed", "failed"), _record("failed", "xfailed", "SHOULD"),
                     _record("differs", "xfailed", "IMPLEMENTATION"), _record("passed", "passed"),
                     _record("skipped", "skipped"), _record("blocked", "failed"), _record("error", "error")])
    [sarif_run] = log["runs"]
    assert [(result["ruleId"], result["level"]) for result in sarif_run["results"]] == [
        ("s/c-failed-failed", "error"), ("s/c-failed-xfailed", "warning"), ("s/c-differs-xfailed", "note")]
    assert "locations" not in sarif_run["results"][0]  # no suite file (an exactly-once check): no location
    [invocation] = sarif_run["invocations"]
    assert not invocation["executionSuccessful"]
    assert [note["message"]["text"].split(": ")[1] for note in invocation["toolExecutionNotifications"]] == \
        ["blocked", "error"]


def test_conformance_report_writes_the_same_log_from_the_results_file_after_the_run(run, tmp_path):
    log, _, _, folder = run
    again = tmp_path / "again.sarif"
    done = subprocess.run([sys.executable, "-m", "conformance", "report", "sarif", str(again),
                           "--results", str(folder / "results.jsonl")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(again.read_text()) == log
