"""A set-up ConsumerGroupHeartbeat answered UNSUPPORTED_VERSION skips the case (the target does not serve KIP-848
groups, as Kafka 3.x by default), while the same answer to the API under test stays a verdict."""

from __future__ import annotations

import textwrap

from conformance.runner.runner import Runner
from conformance.runner.steps import bundled as bundled_components
from conformance.suite.loader import load_suite_file
from conformance.results.record import Outcome
from conformance.targets.hostport import HostPortTarget

from fake_kafka import FakeKafka

HEARTBEAT = """
      - send: ConsumerGroupHeartbeat
        fields: {group_id: g, member_id: m, member_epoch: 0, instance_id: null, rack_id: null, rebalance_timeout_ms: 30000,
                 subscribed_topic_names: [t], subscribed_topic_regex: null, server_assignor: null, topic_partitions: []}
        expect: {error_code: NONE}
"""


def run_case(tmp_path, under_test: str, answer: int, version: int = 0):
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(f"""\
        suite: selftest.not-served
        title: a set-up heartbeat
        spec: KIP-848
        cases:
          - id: heartbeat-then-fetch
            title: a case that joins a consumer group first
            cites: "KIP-848: a hand-made citation"
            under_test: {{api: {under_test}, versions: "{version}"}}
            steps:
        """) + HEARTBEAT + ("""      - send: ListGroups
        fields: {}
        expect: {error_code: NONE}
""" if under_test == "ListGroups" else ""))
    suite, errors = load_suite_file(path, components=bundled_components())
    assert not errors, errors
    broker = FakeKafka(lambda api, version, body: {"error_code": answer} if api == "ConsumerGroupHeartbeat" else None)
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="not-served", timeout=2.0)
    try:
        return runner.run(suite.cases[0], version)
    finally:
        runner.close()
        broker.stop()


def test_a_setup_heartbeat_answered_unsupported_version_skips_saying_why(tmp_path):
    result = run_case(tmp_path, "ListGroups", 35)
    assert result.outcome is Outcome.SKIPPED
    assert "does not serve KIP-848's consumer group protocol" in result.message


def test_the_same_answer_to_the_api_under_test_is_a_departure(tmp_path):
    assert run_case(tmp_path, "ConsumerGroupHeartbeat", 35, version=1).outcome is Outcome.FAILED


def test_a_served_heartbeat_goes_on(tmp_path):
    assert run_case(tmp_path, "ListGroups", 0).outcome is Outcome.PASSED
