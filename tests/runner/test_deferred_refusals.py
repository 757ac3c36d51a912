"""A retriable "not now" answer is no refusal, against scripted brokers.

CONCURRENT_TRANSACTIONS (and COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE) tell a client to send the
request again: Kafka answers it while a transaction completes. A step that expects a refusal counted it as one, so
a broker that answers it to the faulty request, and would accept that request once retried, passed. Such a step
now retries those answers as a client does and judges the final answer; one still deferred when its retries run
out fails, as a closed connection does: no refusal a client sees.
"""

from __future__ import annotations

import textwrap

from conformance.suite.model import Outcome

from fake_kafka import FakeKafka
from scripted_runs import run_on, written_case

CONCURRENT_TRANSACTIONS, INVALID_TRANSACTION_TIMEOUT = 51, 50

CASE = """\
suite: deferrals
title: Refusals that are only deferred
spec: KIP-98
cases:
  - id: zero-timeout-refused
    title: A transaction timeout of zero is refused
    cites: KIP-98
    requirement: SHOULD
    under_test: {api: InitProducerId, versions: "1"}
    steps:
      - send: InitProducerId
        fields: {transactional_id: t, transaction_timeout_ms: 0}
        control: {fields: {transaction_timeout_ms: 60000}}
        retry: {on: [COORDINATOR_NOT_AVAILABLE], for_ms: 300}  # the deferrals are retried for as long
        expect: {refused: true}
"""


class Deferring:
    """Serves InitProducerId with a timeout it can honour; answers one with a zero timeout CONCURRENT_TRANSACTIONS
    ``deferrals`` times (None: always), then INVALID_TRANSACTION_TIMEOUT."""

    def __init__(self, deferrals: int | None):
        self.deferrals = deferrals

    def __call__(self, api, version, body):
        if api != "InitProducerId":
            return None
        if body["transaction_timeout_ms"] > 0:
            return {"producer_id": 7, "producer_epoch": 0}
        if self.deferrals is None or self.deferrals > 0:
            self.deferrals = None if self.deferrals is None else self.deferrals - 1
            return {"error_code": CONCURRENT_TRANSACTIONS}
        return {"error_code": INVALID_TRANSACTION_TIMEOUT}


def run(tmp_path, script):
    broker = FakeKafka(script)
    return run_on(broker, written_case(tmp_path, textwrap.dedent(CASE)), 1), broker


def test_a_request_deferred_until_the_retries_run_out_is_not_refused(tmp_path):
    result, _ = run(tmp_path, Deferring(None))
    assert result.outcome is Outcome.FAILED, result.message
    assert "CONCURRENT_TRANSACTIONS" in result.message and "no refusal a client sees" in result.message


def test_a_deferred_request_is_sent_again_and_its_final_refusal_judged(tmp_path):
    result, broker = run(tmp_path, Deferring(2))
    assert result.outcome is Outcome.PASSED, result.message
    assert broker.requests.count(("InitProducerId", 1)) == 4  # the control, two deferrals, the refusal
