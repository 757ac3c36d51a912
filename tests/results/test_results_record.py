"""The results record owns the line: its fields, its JSON Schema, old versions read, one item id, one provenance."""

from __future__ import annotations

import json

import pytest

from conformance import resources
from conformance.results import (FIELDS, ITEM_FIELDS, RUN_FIELDS, SCHEMA_VERSION, ResultRecord, item_id,
                                 item_id_of, json_schema, provenance)
from conformance.session import result_line
from conformance.suite.model import CaseResult, StepFailure
from conformance.results.record import Outcome, Requirement


def _result(**changes) -> CaseResult:
    settings = dict(case_id="c", suite_id="s", title="t", kip="KIP-98", api="EndTxn", version=3, target="kafka",
                    target_version="4.4.0", outcome=Outcome.FAILED, requirement=Requirement.MUST, cites="...",
                    duration_s=0.123456, tags=["kip98"], artifacts={"pcap": "x.pcap"},
                    transcript=[{"api": "EndTxn"}],
                    failure=StepFailure(step=3, step_label="3 send EndTxn", expected="NONE",
                                        actual=b"\x01", message="m", api="EndTxn"))
    return CaseResult(**(settings | changes))


def test_a_line_has_every_field_of_the_record_in_its_order(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # these tests may run on a worker themselves
    line = result_line(_result(), nodeid="s.yaml::c[kafka-v3]", strict=False, harness_version="0")
    assert list(line) == list(FIELDS) and FIELDS == ITEM_FIELDS + RUN_FIELDS
    assert (line["schema_version"], line["duration_s"], line["api_version"]) == (SCHEMA_VERSION, 0.1235, 3)
    assert line["step_role"] == "under_test" and line["verdict"] == "failed" and line["worker"] == "main"
    json.dumps(line)  # the failure's bytes were made JSON by the record's builder


def test_a_pass_keeps_no_transcript_unless_asked():
    passed = _result(outcome=Outcome.PASSED, failure=None)
    assert result_line(passed, nodeid="n", strict=False, harness_version="0")["transcript"] == []
    assert result_line(passed, nodeid="n", strict=False, harness_version="0", transcripts="all")["transcript"]


def test_the_shipped_json_schema_is_the_records():
    shipped = json.loads(resources.results_schema().read_text(encoding="utf-8"))
    assert shipped == json_schema(), ("conformance/results/schema.json is stale; rewrite it with python -c 'import json; "
                                      "from conformance.results import json_schema; "
                                      "print(json.dumps(json_schema(), indent=1))' > conformance/results/schema.json")
    assert set(shipped["properties"]) == set(FIELDS) and shipped["required"] == list(FIELDS)


def test_a_line_satisfies_the_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    line = result_line(_result(), nodeid="n", strict=True, harness_version="0")
    jsonschema.validate(json.loads(json.dumps(line)), json_schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**line, "outcome": "broken"}, json_schema())


def test_lines_of_older_versions_read_as_records_with_todays_outcomes():
    version_2 = {"schema_version": 2, "run_id": "r", "suite": "s", "case": "c", "api_version": 1,
                 "requirement": "IMPLEMENTATION", "outcome": "failed", "message": "2 send Produce: got NONE"}
    record = ResultRecord.from_line(dict(version_2))
    assert (record.outcome, record.schema_version, record.harness_version, record.step_role) == (
        "differs", 2, None, None)
    current = result_line(_result(), nodeid="n", strict=False, harness_version="0")
    assert ResultRecord.from_line(dict(current)).to_line() == current


def test_an_item_has_one_spelling():
    assert item_id("kip98.end-txn", "fenced", 5) == "kip98.end-txn::fenced@v5"
    assert item_id("kip98.end-txn", "fenced", None) == "kip98.end-txn::fenced"
    assert item_id_of({"suite": "s", "case": "c", "api_version": 0}) == "s::c@v0"


def test_the_known_deviation_pins_use_the_item_id():
    pins = [entry["item"] for path in sorted((resources.source_tree() / "fixtures" / "known-deviations").glob("*.json"))
            for entry in json.loads(path.read_text(encoding="utf-8"))["deviations"]]
    assert pins and all("::" in pin and "[" not in pin for pin in pins)


def test_provenance_is_computed_once():
    assert provenance() is provenance()
    made = provenance()
    assert made.harness_version.startswith(made.package_version or "unknown")
    assert (made.short_commit is None) == (made.commit is None)


def test_a_baseline_keeps_fields_of_the_record_only():
    from conformance.report.gate import BASELINE_FIELDS

    assert set(BASELINE_FIELDS) <= set(FIELDS)


def test_the_spark_schema_is_the_records():
    pytest.importorskip("pyspark")
    from conformance.analysis.layout import NOT_READ, RESULTS_LINE

    assert RESULTS_LINE.fieldNames() == [name for name in FIELDS if name not in NOT_READ]
