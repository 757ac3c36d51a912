"""A request the harness sends for itself (creating topics, reading the broker's settings, finding a coordinator)
that departs blocks the item naming that API and version, never "error: infrastructure"; a broker that died
there is still found by the liveness check, and the crash is that request's finding."""

from __future__ import annotations

import threading

from conformance.results.record import STOPPED_ANSWERING, Outcome, StepRole
from conformance.runner.runner import Runner
from conformance.targets.hostport import HostPortTarget

from fake_kafka import CLOSE, FakeKafka
from scripted_runs import A_TOPIC_CASE, run_on, written_case

A_SETTINGS_CASE = """\
    suite: selftest.setup
    title: a case that reads a broker setting
    spec: Kafka protocol guide
    cases:
      - id: needs-a-setting
        title: a case that runs only where a setting allows it
        cites: "Kafka protocol guide: a hand-made citation"
        requires: {config: {transaction.max.timeout.ms: {le: 2147483647}}}
        steps:
          - send: Metadata
            fields: {topics: [], allow_auto_topic_creation: false}
            expect: {error_code: NONE}
"""

A_COORDINATOR_CASE = """\
    suite: selftest.setup
    title: a case routed to a transaction coordinator
    spec: Kafka protocol guide
    transactional_ids: [main]
    cases:
      - id: init-producer-id
        title: an InitProducerId to the transaction's coordinator
        cites: "Kafka protocol guide: a hand-made citation"
        under_test: {api: InitProducerId, versions: "4"}
        steps:
          - send: InitProducerId
            fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1,
                     producer_epoch: -1}
            expect: {error_code: NONE}
"""


def closing(api_closed: str):
    """A broker that closes the connection on every request of ``api_closed`` and serves the rest."""
    return FakeKafka(lambda api, version, body: CLOSE if api == api_closed else None)


def blocked_naming(result, api: str) -> None:
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.failure is not None and result.failure.api == api, result.failure
    assert result.failure.role is StepRole.SETUP
    assert f"{api} v" in result.message and "infrastructure" not in result.message, result.message


def test_create_topics_closing_the_connection_blocks_the_item_naming_it(tmp_path):
    result = run_on(closing("CreateTopics"), written_case(tmp_path, A_TOPIC_CASE), None)
    blocked_naming(result, "CreateTopics")


def test_describe_configs_closing_the_connection_blocks_the_item_naming_it(tmp_path):
    result = run_on(closing("DescribeConfigs"), written_case(tmp_path, A_SETTINGS_CASE), None)
    blocked_naming(result, "DescribeConfigs")


def test_find_coordinator_answering_unsupported_version_blocks_the_item_naming_it(tmp_path):
    def unsupported(api, version, body):
        if api == "FindCoordinator":  # an advertised version refused, as unsupported@FindCoordinator:6 does
            return {"error_code": 35, "coordinators": [{"key": key, "node_id": -1, "host": "", "port": -1,
                                                        "error_code": 35} for key in body.get("coordinator_keys") or []]}
        return None

    result = run_on(FakeKafka(unsupported), written_case(tmp_path, A_COORDINATOR_CASE), 4)
    blocked_naming(result, "FindCoordinator")
    assert "UNSUPPORTED_VERSION" in result.message


def test_an_api_the_harness_needs_and_the_target_lacks_makes_the_item_unsupported_naming_it(tmp_path):
    apis = {"ApiVersions": (0, 3), "Metadata": (0, 12), "CreateTopics": (0, 7), "InitProducerId": (0, 5)}
    result = run_on(FakeKafka(apis=apis), written_case(tmp_path, A_COORDINATOR_CASE), 4)
    assert result.outcome is Outcome.UNSUPPORTED, result.message
    assert "the harness needs FindCoordinator" in result.message and "InitProducerId v4" in result.message


def test_a_broker_that_dies_on_a_setup_request_is_found_and_the_crash_is_that_requests_finding(tmp_path):
    def dies(api, version, body):
        if api == "CreateTopics":
            threading.Thread(target=broker.stop).start()
            return CLOSE
        return None

    broker = FakeKafka(dies)
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="scripted", timeout=2.0)
    try:
        result = runner.run(written_case(tmp_path, A_TOPIC_CASE), None)
    finally:
        runner.close(keep_topics=True)
        broker.stop()
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.message.startswith(STOPPED_ANSWERING) and "CreateTopics" in result.message, result.message
    assert runner.down is not None  # the liveness check ran: later items end at once


def test_a_target_that_cannot_be_reached_stays_an_infrastructure_error(tmp_path):
    broker = FakeKafka()
    address = broker.address
    broker.stop()
    target = HostPortTarget(address)
    runner = Runner(target, run_id="scripted", timeout=2.0)
    result = runner.run(written_case(tmp_path, A_TOPIC_CASE), None)
    assert result.outcome is Outcome.ERROR, result.message  # no request went out: nothing departed
