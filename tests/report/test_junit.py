"""JUnit XML: departures are failures, harness errors and blocked items errors, with KIP/API/version properties."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from report_records import result_record as record

from conformance.report.junit import junit_tree, write_junit


def cases_by_name(tree):
    return {case.get("name"): case for case in tree.getroot().iter("testcase")}


def properties(case):
    return {prop.get("name"): prop.get("value") for prop in case.find("properties")}


def test_outcomes_map_to_what_ci_tells_apart():
    tree = junit_tree([
        record("pass", 3, "passed"), record("depart", 3, "failed"), record("down", 3, "error"),
        record("blocked", 3, "blocked"), record("old", 0, "unsupported"), record("no-fault", 3, "skipped"),
        record("should", 3, "failed", requirement="SHOULD"),
        record("internals", 3, "differs", requirement="IMPLEMENTATION"),
    ])
    cases = cases_by_name(tree)
    assert list(cases["kip98.transactions::pass@v3"]) == [cases["kip98.transactions::pass@v3"].find("properties")]
    failure = cases["kip98.transactions::depart@v3"].find("failure")
    assert failure.get("type") == "departure"
    assert "expected INVALID_TXN_STATE" in failure.get("message")
    assert "reproduce: conformance run --target kafka --item kip98.transactions::depart@v3" in failure.text
    assert cases["kip98.transactions::down@v3"].find("error").get("type") == "error"
    assert cases["kip98.transactions::blocked@v3"].find("error").get("type") == "blocked"
    assert cases["kip98.transactions::old@v0"].find("skipped").get("type") == "unsupported"
    assert cases["kip98.transactions::no-fault@v3"].find("skipped").get("type") == "skipped"
    assert cases["kip98.transactions::should@v3"].find("skipped").get("type") == "not-enforced"  # SHOULD, not --strict
    differs = cases["kip98.transactions::internals@v3"]  # an IMPLEMENTATION case the target does otherwise than Kafka: never a failure
    assert differs.find("failure") is None and differs.find("skipped").get("type") == "differs-from-kafka"
    assert differs.find("skipped").get("message").startswith("differs from Kafka (IMPLEMENTATION): 2 send EndTxn")
    root = tree.getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("8", "1", "2", "4")


def test_properties_carry_kip_api_version_and_requirement():
    case = cases_by_name(junit_tree([record("depart", 3, "failed")]))["kip98.transactions::depart@v3"]
    props = properties(case)
    assert {"kip": "KIP-98", "api": "EndTxn", "api_version": "3", "requirement": "MUST", "target": "kafka",
            "outcome": "failed"}.items() <= props.items()
    assert props["reproduce"].startswith("conformance run --target kafka --item ")
    assert case.get("classname") == "kafka.kip98.transactions"


def test_one_testsuite_per_target_and_suite(tmp_path):
    path = tmp_path / "out" / "junit.xml"
    write_junit([record("a", 1, "passed"), record("a", 1, "failed", target="tansu"),
                 record("b", 1, "passed", suite="kip890.transaction-v2")], path)
    root = ElementTree.parse(path).getroot()
    assert [suite.get("name") for suite in root.iter("testsuite")] == [
        "kafka :: kip98.transactions", "tansu :: kip98.transactions", "kafka :: kip890.transaction-v2"]


def test_control_characters_from_broker_bytes_stay_valid_xml(tmp_path):
    path = tmp_path / "junit.xml"
    write_junit([record("garbage", 1, "failed", message="got \x00\x07 bytes",
                        transcript=[{"step": "1", "api": "Produce", "version": 9, "request": {"v": "\x01"}}])], path)
    case = ElementTree.parse(path).getroot().find(".//testcase")
    assert "\ufffd" in case.find("failure").get("message")
    assert "Produce v9" in case.find("system-out").text


def test_the_junit_output_writes_the_runs_own_records_when_it_ends(tmp_path):
    """``--junit FILE`` is an output: made only when asked, it writes the run's records (only this run's) at its end."""
    from conformance.report.junit import JunitOutput
    from conformance.report.sinks import SinkContext
    from conformance.session import RunSession

    from report_records import write_jsonl

    results = write_jsonl(tmp_path / "r.jsonl", [record("a", 1, "passed", run_id="old").to_line(),
                                                 record("a", 1, "failed", run_id="this").to_line()])
    assert JunitOutput.open(SinkContext(results, "this", options={"junit": None})) is None
    junit = tmp_path / "out" / "junit.xml"
    RunSession(results, run_id="this", harness_version="t", options={"junit": str(junit)}).finish()
    assert ElementTree.parse(junit).getroot().get("tests") == "1"
    assert ElementTree.parse(junit).getroot().get("failures") == "1"
