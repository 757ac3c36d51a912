"""The exactly-once tier's consume-transform-produce group as a KIP-848 consumer group (no broker)."""

from __future__ import annotations

from conformance.semantic.history import History
from conformance.semantic.eos_run import SUITE, SemanticRun, results
from conformance.semantic.workload import Plan
from conformance.results.record import Outcome


def test_classic_processors_keep_the_session_settings():
    config = Plan("127.0.0.1:9092", run="r").processor_config()
    assert "group.protocol" not in config and config["session.timeout.ms"] == 10000


def test_consumer_group_processors_leave_session_timing_to_the_broker():
    config = Plan("127.0.0.1:9092", run="r", group_protocol="consumer").processor_config()
    assert config["group.protocol"] == "consumer"
    assert "session.timeout.ms" not in config and "heartbeat.interval.ms" not in config
    assert config["group.id"] == "semantic-ctp-r" and config["isolation.level"] == "read_committed"


def test_each_group_protocol_reports_under_a_suite_of_its_own():
    def suites(protocol):
        run = SemanticRun("kafka", "4.4.0", History(), problem=(Outcome.ERROR, "not started"), group_protocol=protocol)
        return {(result.suite_id, tuple(result.tags)) for result in results(run, run_id="r", history_file=None)}

    assert suites("classic") == {(SUITE, ("semantic",))}
    assert suites("consumer") == {("semantic.exactly-once.consumer-group", ("semantic", "kip848"))}
