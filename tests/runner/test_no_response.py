"""``expect: {no_response: true}`` is proven by order, not by waiting out the timeout.

A broker answers one connection's requests in the order they came, so the answer to an ApiVersions sent
right after the request proves the request will get none. Both directions are checked against scripted
brokers: one that stays silent passes without the timeout elapsing (the transcript shows the later
request answered while the first one has no answer), and one that answers, even late, still fails.
"""

from __future__ import annotations

import time

import pytest

from conformance.suite.loader import load_suite_file
from conformance.results.record import Outcome
from conformance.runner.runner import Runner
from conformance.targets.hostport import HostPortTarget
from conformance.runner.steps import bundled

from fake_kafka import SILENT, FakeKafka

SUITE = """\
suite: local.no-response
title: acks=0
spec: KIP-98
topics:
  log: {partitions: 1}
cases:
  - id: acks-zero
    title: a Produce with acks=0 gets no response
    cites: "a test of the harness"
    under_test: {api: Produce, versions: "3"}
    steps:
      - produce: {topic: "${topics.log}", partition: 0, records: 1, acks: 0}
        timeout_ms: 30000
        expect: {no_response: true}
"""


def run(tmp_path, handler):
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    suite, errors = load_suite_file(path, components=bundled())
    assert not errors, errors
    broker = FakeKafka(handler)
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="no-response", timeout=30.0)
    try:
        return runner.run(suite.cases[0], 3), broker
    finally:
        runner.close()
        broker.stop()


def exchanges(result) -> list:
    return result.transcript_source.exchanges


def test_silence_is_proven_by_the_answer_to_the_request_after_it(tmp_path):
    def silent_to_produce(api, version, body):
        return SILENT if api == "Produce" else None

    result, _ = run(tmp_path, silent_to_produce)
    assert result.outcome is Outcome.PASSED, result.message
    produce = next(exchange for exchange in exchanges(result) if exchange.api == "Produce")
    after = exchanges(result)[exchanges(result).index(produce) + 1]
    assert (after.api, after.version) == ("ApiVersions", 0) and after.response is not None
    assert produce.response is None and produce.problem is None  # not a timeout: nothing more was awaited


def test_a_broker_that_answers_still_fails(tmp_path):
    result, _ = run(tmp_path, lambda api, version, body: None)  # answers Produce with its default body
    assert result.outcome is Outcome.FAILED
    assert "expected the broker to not answer, it answered" in result.message


@pytest.mark.parametrize("delay_s", [0.5, 2.0])
def test_a_slow_broker_that_answers_late_still_fails(tmp_path, delay_s):
    """Its answer comes before the later request's (order), however long it takes: no early pass."""
    def slow(api, version, body):
        if api == "Produce":
            time.sleep(delay_s)
        return None

    result, _ = run(tmp_path, slow)
    assert result.outcome is Outcome.FAILED
    assert "it answered" in result.message
