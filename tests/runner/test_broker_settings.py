"""A broker setting is not a protocol rule.

Kafka 3.5 does not know KIP-937's ``message.timestamp.before.max.ms``: creating the topic of
``protocol.produce-fetch::produce-timestamp-too-old`` there was answered INVALID_CONFIG ("Unknown topic config
name"), and the item ended as a harness error. The scripted broker below answers the same; the item is now
skipped naming the key. The loader refuses a MUST that expects the refusal a topic setting causes.
"""

from __future__ import annotations

import textwrap

from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.suite.model import Outcome, Requirement

from fake_kafka import FakeKafka
from scripted_runs import bundled_case, run_on
INVALID_CONFIG = 40


def kafka_3_5(api, version, body):
    """CreateTopics as Kafka 3.5 answers a topic setting it does not know."""
    if api == "CreateTopics":
        answers = []
        for topic in body["topics"]:
            unknown = [config["name"] for config in topic["configs"] if config["name"] == "message.timestamp.before.max.ms"]
            answers.append({"name": topic["name"], "error_code": INVALID_CONFIG if unknown else 0,
                            "error_message": f"Unknown topic config name: {unknown[0]}" if unknown else None})
        return {"topics": answers}
    return None


def test_a_case_on_a_setting_the_target_does_not_know_is_skipped_naming_the_key():
    case = bundled_case("protocol/produce-fetch.yaml", "produce-timestamp-too-old")
    assert case.requirement is Requirement.IMPLEMENTATION
    broker = FakeKafka(kafka_3_5)
    result = run_on(broker, case, 9)
    assert result.outcome is Outcome.SKIPPED, result.message
    assert "message.timestamp.before.max.ms" in result.message and "Unknown topic config name" in result.message
    assert ("Produce", 9) not in broker.requests


CASE = """\
suite: settings
title: A refusal a topic setting causes
spec: KIP-937
topics: {recent: {partitions: 1, configs: {message.timestamp.before.max.ms: 3600000}}}
cases:
  - id: too-old
    title: A batch older than message.timestamp.before.max.ms is refused
    cites: "KIP-937: a batch older than message.timestamp.before.max.ms is rejected (InvalidTimestampException)"
    requirement: REQUIREMENT
    under_test: {api: Produce, versions: "3+"}
    steps:
      - produce: {topic: "${topics.recent}", partition: 0, records: [old], timestamp: 1000}
        expect: {error_code: INVALID_TIMESTAMP}
"""


def test_the_loader_refuses_a_must_that_expects_a_settings_refusal(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text(textwrap.dedent(CASE).replace("REQUIREMENT", "MUST"))
    _, errors = load_suite_file(path, components=bundled())
    assert [error.key for error in errors] == ["cases[0].requirement"], errors
    assert "message.timestamp.before.max.ms" in errors[0].message and "IMPLEMENTATION" in errors[0].message
    path.write_text(textwrap.dedent(CASE).replace("REQUIREMENT", "IMPLEMENTATION"))
    assert load_suite_file(path, components=bundled())[1] == []
