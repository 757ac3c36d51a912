"""What a broker lacks costs the items that need it a named outcome, never a harness error: no CreateTopics (and no
other way to make topics) makes them unsupported, a refused CreateTopics blocks them; either names CreateTopics."""

from __future__ import annotations

from conformance.results.record import Outcome

from fake_kafka import FakeKafka
from scripted_runs import A_TOPIC_CASE, run_on, written_case
from small_broker import small_broker

def test_a_broker_without_create_topics_makes_the_item_unsupported_naming_it(tmp_path):
    result = run_on(small_broker(), written_case(tmp_path, A_TOPIC_CASE), None)
    assert result.outcome is Outcome.UNSUPPORTED, result.message
    assert "advertises no CreateTopics version" in result.message


def test_a_refused_create_topics_blocks_the_item_naming_it(tmp_path):
    def refuse(api, version, body):
        if api == "CreateTopics":
            return {"topics": [{"name": topic["name"], "error_code": 44, "error_message": "no topics here"}
                               for topic in body["topics"]]}
        return None

    result = run_on(FakeKafka(refuse), written_case(tmp_path, A_TOPIC_CASE), None)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "CreateTopics" in result.message and "POLICY_VIOLATION no topics here" in result.message
