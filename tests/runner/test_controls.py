"""A refusal needs a positive control, a malformation a control, against scripted brokers.

- Tansu answered UNKNOWN_SERVER_ERROR to every InitProducerId at v0-2, so
  ``kip98.transactions::init-producer-id-timeout-zero`` "passed" there: a refusal of everything. The case now
  sends the same request with a timeout it can honour first; not served, the item is blocked.
- A broker whose Metadata returns every topic for an empty list failed
  ``robustness.malformed-frames::trailing-bytes-in-request``, though the trailing bytes changed nothing. The
  well-formed request now goes first; it departs, so the item is blocked and only the difference is judged.
"""

from __future__ import annotations

import uuid
from conformance.protocol import frames
from conformance.suite.model import Outcome

from fake_kafka import CODEC, FakeKafka
from scripted_runs import bundled_case, run_on

UNKNOWN_SERVER_ERROR, INVALID_TRANSACTION_TIMEOUT = -1, 50


bundled = bundled_case
run = run_on


def refuses_every_init(api, version, body):
    return {"error_code": UNKNOWN_SERVER_ERROR} if api == "InitProducerId" else None


def refuses_zero_timeout(api, version, body):
    if api == "InitProducerId":
        if body["transaction_timeout_ms"] <= 0:
            return {"error_code": INVALID_TRANSACTION_TIMEOUT}
        return {"producer_id": 7, "producer_epoch": 0}
    return None


def test_a_refusal_of_every_request_is_no_evidence_of_a_refusal_of_the_fault():
    result = run(FakeKafka(refuses_every_init), bundled("kip98/transactions.yaml", "init-producer-id-timeout-zero"), 1)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "control" in result.message and "UNKNOWN_SERVER_ERROR" in result.message


def test_a_refusal_of_the_fault_alone_passes():
    broker = FakeKafka(refuses_zero_timeout)
    result = run(broker, bundled("kip98/transactions.yaml", "init-producer-id-timeout-zero"), 1)
    assert result.outcome is Outcome.PASSED, result.message
    assert broker.requests.count(("InitProducerId", 1)) == 2  # the control, then the fault


class TolerantFake(FakeKafka):
    """Reads a request with bytes after its body as if they were not there (what the case expects), and
    answers Metadata as the fake does, plus the topics ``metadata(body, trailing)`` names."""

    def __init__(self, metadata):
        super().__init__()
        self.metadata = metadata

    def _answer(self, payload, state=None):
        api_key, version, correlation = frames.peek_request_header(payload)
        api = CODEC.registry.api(api_key).name
        header_version = frames.request_header_version(CODEC, api_key, version)
        _, offset = CODEC.decode_message("RequestHeader", header_version, payload)
        body, end = CODEC.decode(api_key, version, frames.REQUEST, payload, offset)
        self.requests.append((api, version))
        if api != "Metadata":
            return frames.encode_response(CODEC, api, version, correlation, self._default(api, version, body))
        answer = self._default(api, version, body)
        extra = self.metadata(body, end < len(payload))
        answer["topics"] += [{"name": name, "topic_id": self._topic_ids.setdefault(name, uuid.uuid4()), "partitions": []}
                             for name in extra]
        return frames.encode_response(CODEC, api, version, correlation, answer)


def every_topic_for_an_empty_list(body, trailing):
    return [] if body.get("topics") else ["someone-elses-topic"]


def test_a_malformation_whose_well_formed_request_departs_blocks_when_it_changes_nothing():
    result = run(TolerantFake(every_topic_for_an_empty_list),
                 bundled("robustness/malformed-frames.yaml", "trailing-bytes-in-request"), None)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "well-formed request already departs" in result.message and "changed nothing" in result.message
    # the case has no API under test: the message names the case, not "None vNone"
    assert "no verdict on this case (trailing-bytes-in-request)" in result.message and "None vNone" not in result.message


def test_a_malformation_that_changes_the_answer_fails_on_the_difference():
    def trailing_bytes_add_a_topic(body, trailing):
        return [] if body.get("topics") else (["phantom", "another"] if trailing else ["someone-elses-topic"])

    result = run(TolerantFake(trailing_bytes_add_a_topic),
                 bundled("robustness/malformed-frames.yaml", "trailing-bytes-in-request"), None)
    assert result.outcome is Outcome.FAILED, result.message
    assert "malformation changed the answer" in result.message


def test_a_malformation_on_a_broker_that_serves_the_well_formed_request_is_judged_as_before():
    result = run(TolerantFake(lambda body, trailing: []), bundled("robustness/malformed-frames.yaml", "trailing-bytes-in-request"), None)
    assert result.outcome is Outcome.PASSED, result.message
