"""tools/twin_codes.py: a Kafka-answer twin may list only the codes Apache Kafka was seen to send. Tansu passed
produce-after-fence-rejected-kafka-answer with PRODUCER_FENCED, which its list held though Kafka 4.4.0 answers
INVALID_PRODUCER_EPOCH at every Produce version."""

from __future__ import annotations

import importlib.util
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "twin_codes.py"
spec = importlib.util.spec_from_file_location("twin_codes", TOOL)
twin_codes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(twin_codes)


def _row(version: int, code: int, release: str = "4.4.0") -> dict:
    setup = {"api": "Produce", "version": version, "response": {"responses": [{"partition_responses": [{"error_code": 0}]}]}}
    refusal = {"api": "Produce", "version": version, "response": {"responses": [{"partition_responses": [{"error_code": code}]}]}}
    return {"suite": "kip98.transactions-lifecycle", "case": "produce-after-fence-rejected-kafka-answer", "api": "Produce",
            "api_version": version, "outcome": "passed", "target_version": release,
            "transcript": [setup, {"api": "InitProducerId", "version": 5, "response": {"error_code": 0}}, refusal]}


def test_the_code_of_the_step_under_test_is_measured_per_version_and_release():
    measured = twin_codes.seen([_row(3, 47), _row(3, 47, "3.9.1"), _row(13, 47)])
    assert measured["kip98.transactions-lifecycle::produce-after-fence-rejected-kafka-answer"] == {
        3: {"INVALID_PRODUCER_EPOCH": {"4.4.0", "3.9.1"}}, 13: {"INVALID_PRODUCER_EPOCH": {"4.4.0"}}}


def test_a_listed_code_no_release_sent_is_reported_and_a_sent_one_is_not():
    codes = twin_codes.seen([_row(3, 47), _row(4, 47)])["kip98.transactions-lifecycle::produce-after-fence-rejected-kafka-answer"]
    assert twin_codes.unseen(["INVALID_PRODUCER_EPOCH", "PRODUCER_FENCED"], codes) == ["v3: PRODUCER_FENCED", "v4: PRODUCER_FENCED"]
    assert twin_codes.unseen("INVALID_PRODUCER_EPOCH", codes) == []
    assert twin_codes.unseen({"3": "INVALID_PRODUCER_EPOCH", "4+": "PRODUCER_FENCED"}, codes) == ["v4: PRODUCER_FENCED"]


def test_the_bundled_twins_list_what_they_expect():
    expected = twin_codes.listed([Path(__file__).resolve().parents[2] / "suites" / "kip98" / "transactions-lifecycle.yaml"])
    assert expected["kip98.transactions-lifecycle::produce-after-fence-rejected-kafka-answer"] == "INVALID_PRODUCER_EPOCH"
