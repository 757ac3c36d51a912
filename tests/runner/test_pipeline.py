"""The ``pipeline`` step against a scripted broker: its requests leave on one connection before any answer is read,
each answer is judged in order, and a departure names the pipelined request it comes from."""

from __future__ import annotations

import time

from conformance.report.documents import case_expectations
from conformance.protocol.codec import default_codec
from conformance.results.record import Outcome
from conformance.runner import policy
from conformance.runner.steps import BUILTIN_STEP_KINDS

from fake_kafka import CLOSE, FakeKafka
from scripted_runs import run_on, written_case

INVALID_TXN_STATE = 48

SUITE = """\
suite: pipelined
title: pipelined
spec: KIP-98
transactional_ids: [main]
cases:
  - id: commit-and-abort-in-flight
    title: A commit and an abort of one transaction, both in flight
    cites: "KIP-98"
    requirement: SHOULD
    under_test: {api: EndTxn, versions: "3"}
    steps:
      - send: InitProducerId
        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1}
        save: {pid: producer_id, epoch: producer_epoch}
      - pipeline:
          - send: EndTxn
            fields: {transactional_id: "${txn_ids.main}", producer_id: "${pid}", producer_epoch: "${epoch}", committed: true}
            expect: {error_code: NONE}
          - label: the abort behind it
            send: EndTxn
            fields: {transactional_id: "${txn_ids.main}", producer_id: "${pid}", producer_epoch: "${epoch}", committed: false}
            expect: {error_code: INVALID_TXN_STATE}
"""


def broker(second):
    """Answers the first EndTxn with NONE after a pause (the second is in flight meanwhile), the second with ``second``."""
    seen = []

    def handler(api, version, body):
        if api == "InitProducerId":
            return {"producer_id": 7, "producer_epoch": 0}
        if api == "EndTxn":
            seen.append(body["committed"])
            if len(seen) == 1:
                time.sleep(0.3)
                return {"error_code": 0}
            return second if isinstance(second, str) else {"error_code": second}
        return None
    return FakeKafka(handler)


def test_the_requests_leave_before_any_answer_and_each_answer_is_judged(tmp_path):
    result = run_on(broker(INVALID_TXN_STATE), written_case(tmp_path, SUITE), 3)
    assert result.outcome is Outcome.PASSED, result.message
    pipelined = [exchange for exchange in result.transcript if exchange["api"] == "EndTxn"]
    assert [exchange["step"] for exchange in pipelined] == ["2.1 send EndTxn", "2.2 the abort behind it"]
    assert pipelined[1]["sent_at"] < pipelined[0]["received_at"]  # sent while the first was being handled


def test_a_departing_answer_names_its_request_and_fails_the_item(tmp_path):
    result = run_on(broker(0), written_case(tmp_path, SUITE), 3)  # the abort accepted after the commit
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.role == "under_test" and result.failure.step == 2
    assert result.failure.step_label == "2.2 the abort behind it" and "INVALID_TXN_STATE" in str(result.failure.expected)


def test_a_closed_connection_is_a_departure_of_the_request_it_left_unanswered(tmp_path):
    result = run_on(broker(CLOSE), written_case(tmp_path, SUITE), 3)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.step_label == "2.2 the abort behind it" and result.failure.actual == "connection closed"


def test_the_pipelined_requests_are_seen_by_the_walkers_through_the_send_kind(tmp_path):
    case = written_case(tmp_path, SUITE)
    assert policy.sends(case.steps[1], "EndTxn", BUILTIN_STEP_KINDS) and policy.claims_more(case.steps[1], BUILTIN_STEP_KINDS)
    assert case_expectations(case, 3, default_codec().registry) == [{"NONE"}, {"INVALID_TXN_STATE"}]


def test_the_loader_refuses_a_pipeline_of_one_and_a_request_with_a_key_it_cannot_honour(tmp_path):
    from conformance.runner.steps import bundled
    from conformance.suite.loader import load_suite_file

    path = tmp_path / "bad.yaml"
    path.write_text(SUITE.replace("          - label: the abort behind it\n", "          - label: the abort behind it\n"
                                  "            connection: other\n"))
    _, errors = load_suite_file(path, components=bundled())
    assert [str(error).split(": ", 1)[1].split(":")[0] for error in errors] == ["cases[0].steps[1].pipeline[1].connection"]
