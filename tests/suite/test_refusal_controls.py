"""Every refusal has a positive control (conformance/suite/controls.py): 42 of the 51 cases with a ``refused: true``
step had none, and a broker that refuses every request of an API passed them. Tansu answers UNKNOWN_SERVER_ERROR to
every InitProducerId v3-5 that carries a producer id, the right one included, and so passed
``reinit-with-wrong-producer-id``; its control now shows the request is not served, and the item is blocked."""

from __future__ import annotations

import textwrap

from conformance.runner.steps import bundled
from conformance.suite.loader import load_suite_file
from conformance.suite.model import Outcome

from fake_kafka import FakeKafka
from scripted_runs import bundled_case, run_on

CASE = """\
suite: controlled
title: Controls
spec: KIP-98
topics: {out: {partitions: 1}}
transactional_ids: [main]
cases:
  - id: refused
    title: A refusal
    cites: "KIP-98: Any other transactional messages will report an error if initialization was not performed"
    requirement: SHOULD  # the controls only: the citation checks of a MUST are test_citations.py's
    under_test: {api: API}
    steps:
STEPS
"""

END_TXN = """\
      - send: EndTxn
        fields: {transactional_id: "${txn_ids.main}", producer_id: 99, producer_epoch: 0, committed: true}
"""
PRODUCE = """\
      - produce: {topic: "${topics.out}", partition: 0, records: 1, acks: 5}
"""


def errors(tmp_path, api: str, steps: str) -> list:
    path = tmp_path / "controlled.yaml"
    path.write_text(textwrap.dedent(CASE).replace("API", api).replace("STEPS\n", steps))
    return [(error.key, error.message) for error in load_suite_file(path, components=bundled())[1]]


def test_a_refusal_without_a_control_is_refused_by_the_lint(tmp_path):
    found = errors(tmp_path, "EndTxn", END_TXN + "        expect: {refused: true}\n")
    assert [key for key, _ in found] == ["cases[0].steps[0].expect.refused"], found
    assert "positive control" in found[0][1] and "control: {fields:" in found[0][1]


def test_a_control_on_the_step_or_another_step_served_is_one(tmp_path):
    assert errors(tmp_path, "EndTxn", END_TXN + "        control: {fields: {producer_id: 1}}\n"
                                                "        expect: {refused: true}\n") == []
    accepted = END_TXN.replace("producer_id: 99", "producer_id: 1") + "        expect: {error_code: NONE}\n"
    refused = END_TXN + "        expect: {refused: true}\n"
    assert errors(tmp_path, "EndTxn", accepted + refused) == []
    assert errors(tmp_path, "EndTxn", refused + accepted) == []  # served after it: the fault was the only change


def test_what_is_no_control(tmp_path):
    refused = END_TXN + "        expect: {refused: true}\n"
    # another API served, the same API at a version of its own, or answered with an error: none shows EndTxn served
    others = [
        '      - send: InitProducerId\n        fields: {transactional_id: "${txn_ids.main}", transaction_timeout_ms: 60000,'
        ' producer_id: -1, producer_epoch: -1}\n        expect: {error_code: NONE}\n',
        END_TXN + "        version: 3\n        expect: {error_code: NONE}\n",
        END_TXN + "        expect: {error_code: INVALID_TXN_STATE}\n",
    ]
    for other in others:
        assert [key for key, _ in errors(tmp_path, "EndTxn", other + refused)] == ["cases[0].steps[1].expect.refused"]
    # a produce or fetch step runs no control of its own: it is shown by another step
    found = errors(tmp_path, "Produce", PRODUCE + "        control: {fields: {acks: 1}}\n        expect: {refused: true}\n")
    assert [key for key, _ in found] == ["cases[0].steps[0].expect.refused"], found
    assert errors(tmp_path, "Produce", PRODUCE.replace("acks: 5", "acks: -1") + PRODUCE
                  + "        expect: {refused: true}\n") == []


def test_a_broker_that_refuses_the_control_too_gets_no_pass():
    """The scripted broker refuses every InitProducerId that carries a producer id, as Tansu does at v3-5."""
    def answer(api, version, body):
        if api == "InitProducerId" and body["producer_id"] != -1:
            return {"error_code": -1, "producer_id": -1, "producer_epoch": -1}  # UNKNOWN_SERVER_ERROR
        if api == "InitProducerId":
            return {"producer_id": 7, "producer_epoch": 0}
        return None

    result = run_on(FakeKafka(answer), bundled_case("kip360/producer-recovery.yaml", "reinit-with-wrong-producer-id"), 4)
    assert result.outcome is Outcome.BLOCKED, result
    assert "control" in result.message
