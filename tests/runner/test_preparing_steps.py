"""A set-up step on the API under test is not the step under test.

Tansu's ``kip98.idempotence::older-epoch-rejected`` failed at its produce at epoch+1, which only sets the
epoch the older one is compared with: the runner took it for the step under test because it sends the same
API, and the older-epoch request, the one the case is about, was never sent. A step of the API under test
that demands nothing but success, with a later step of that API after it, prepares: its departure blocks the
item naming it; the verdict is the later step's.
"""

from __future__ import annotations

from conformance.protocol import records
from conformance.suite.model import Outcome

from fake_kafka import FakeKafka
from scripted_runs import bundled_case, run_on, written_case

PRODUCER_FENCED, INVALID_PRODUCER_EPOCH = 90, 47


def epoch_of(body) -> int:
    return records.decode_batches(body["topic_data"][0]["partition_data"][0]["records"])[0].producer_epoch


def produce_answer(body, error_code):
    topic = body["topic_data"][0]
    return {"responses": [{"name": topic["name"], "partition_responses": [
        {"index": topic["partition_data"][0]["index"], "error_code": error_code, "base_offset": -1 if error_code else 0,
         "log_start_offset": 0}]}]}


def tansu_like(api, version, body):
    """Refuses any epoch other than the one InitProducerId gave (0): the epoch+1 produce is refused."""
    if api == "InitProducerId":
        return {"producer_id": 7, "producer_epoch": 0}
    if api == "Produce":
        return produce_answer(body, PRODUCER_FENCED if epoch_of(body) != 0 else 0)
    return None


def epoch_keeping(api, version, body):
    """Kafka's behaviour: a newer epoch is taken, and the older one is then refused."""
    if api == "InitProducerId":
        return {"producer_id": 7, "producer_epoch": 0}
    if api == "Produce":
        return produce_answer(body, INVALID_PRODUCER_EPOCH if epoch_of(body) == 0 else 0)
    return None


def accepting_both(api, version, body):
    """Accepts the older epoch after the newer one: the case's own departure."""
    if api == "InitProducerId":
        return {"producer_id": 7, "producer_epoch": 0}
    if api == "Produce":
        return produce_answer(body, 0)
    return None


CASE = bundled_case("kip98/idempotence.yaml", "older-epoch-rejected")


def test_a_preparing_step_of_the_api_under_test_blocks_and_is_named():
    broker = FakeKafka(tansu_like)
    result = run_on(broker, CASE, 4)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.failure.role == "setup" and result.failure.api == "Produce" and result.failure.step == 2
    assert "the preparing step" in result.message and "not the step under test" in result.message
    assert broker.requests.count(("Produce", 4)) == 1  # the older-epoch request was never sent


def test_the_step_judged_is_the_later_one():
    result = run_on(FakeKafka(accepting_both), CASE, 4)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.failure.step == 3 and result.failure.role == "under_test"


def test_a_broker_that_behaves_passes():
    result = run_on(FakeKafka(epoch_keeping), CASE, 4)
    assert result.outcome is Outcome.PASSED, result.message


def test_where_every_step_of_the_api_only_demands_success_each_is_the_claim():
    # first-batch-any-sequence: the first produce (sequence 17) is the claim, though a second one follows it
    def refuses_a_first_sequence_other_than_zero(api, version, body):
        if api == "InitProducerId":
            return {"producer_id": 7, "producer_epoch": 0}
        if api == "Produce":
            first = records.decode_batches(body["topic_data"][0]["partition_data"][0]["records"])[0].base_sequence
            return produce_answer(body, 45 if first == 17 else 0)  # OUT_OF_ORDER_SEQUENCE_NUMBER
        return None

    result = run_on(FakeKafka(refuses_a_first_sequence_other_than_zero),
                    bundled_case("kip98/idempotence.yaml", "first-batch-any-sequence"), 4)
    assert result.outcome is Outcome.DIFFERS, result.message  # an IMPLEMENTATION case: judged, not blocked
    assert result.failure.step == 2 and result.failure.role == "under_test"


UNTIL_WRAPPED = """\
suite: scripted
title: scripted
spec: KIP-98
topics:
  log: {partitions: 1}
defaults: {api: Produce, versions: "3+"}
cases:
  - id: older-epoch-rejected-in-time
    title: The older epoch is refused, asked until it is
    cites: "KIP-98"
    requirement: IMPLEMENTATION
    steps:
      - use: idempotent.init
      - produce: {topic: "${topics.log}", partition: 0, producer_id: "${pid}", producer_epoch: "${epoch + 1}", base_sequence: 0, records: 1}
        expect: {error_code: NONE}
      - until:
          for_ms: 300
          step:
            produce: {topic: "${topics.log}", partition: 0, producer_id: "${pid}", producer_epoch: "${epoch}", base_sequence: 1, records: 1}
            expect: {error_code: INVALID_PRODUCER_EPOCH}
"""


def test_a_later_claim_inside_an_until_makes_the_earlier_step_a_preparing_one(tmp_path):
    # The claim is the until's one nested step: the walk over the case's steps reaches it through the until's kind
    # (it once looked for nested steps by key and read only plain dicts, so a built until's step went unseen and
    # the epoch+1 produce was judged as the step under test).
    result = run_on(FakeKafka(tansu_like), written_case(tmp_path, UNTIL_WRAPPED), 4)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.failure.role == "setup" and result.failure.step == 2
