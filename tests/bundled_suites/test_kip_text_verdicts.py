"""The bundled cases judge what the KIP text says, not the way Apache Kafka does it.

Each test runs a *bundled* case against a scripted broker that satisfies the KIP another way than Kafka:
it aborts an open transaction at once instead of answering CONCURRENT_TRANSACTIONS, answers another of
the listed errors, or keeps offsets somewhere DescribeTransactions does not show. Before the suites were
reviewed each of these failed or blocked a MUST; the tests also check the verdicts stay precise (a broker
that accepts what it must refuse still fails).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.protocol import records
from conformance.protocol.errors import error_code
from conformance.suite.loader import load_suite_file, load_suites
from conformance.results.record import Outcome, Requirement
from conformance.runner.runner import Runner
from conformance.targets.hostport import HostPortTarget
from conformance.runner.steps import bundled as bundled_components

from fake_kafka import FakeKafka
from transactional_broker import OneTransactionalLog

SUITES = Path(__file__).resolve().parents[2] / "suites"


def bundled(suite_file: str, case_id: str):
    suite, errors = load_suite_file(SUITES / suite_file, components=bundled_components())
    assert not errors, errors
    return next(case for case in suite.cases if case.id == case_id)


def run(broker: FakeKafka, case, version: int):
    target = HostPortTarget(broker.address)
    target.start()
    runner = Runner(target, run_id="kip-text", timeout=2.0)
    try:
        return runner.run(case, version)
    finally:
        runner.close()


class SynchronousAbortBroker(OneTransactionalLog):
    """One partition and one transactional id; InitProducerId on an open transaction aborts it before
    answering NONE, which is what KIP-98 says happens (Kafka answers CONCURRENT_TRANSACTIONS meanwhile)."""


def test_a_coordinator_that_aborts_at_once_meets_the_kip_and_only_differs_from_kafkas_route():
    broker = SynchronousAbortBroker()
    outcome = run(FakeKafka(broker), bundled("kip360/producer-recovery.yaml", "reinit-aborts-open-transaction"), 4)
    assert outcome.outcome is Outcome.PASSED, outcome.message
    route = run(FakeKafka(SynchronousAbortBroker()),
                bundled("kip98/error-paths.yaml", "init-while-ongoing-answers-concurrent-transactions"), 4)
    assert route.outcome is Outcome.DIFFERS, route.message  # Kafka's CONCURRENT_TRANSACTIONS: information only
    assert route.requirement is Requirement.IMPLEMENTATION


def test_a_coordinator_that_never_aborts_still_fails_the_outcome():
    class NeverAborts(SynchronousAbortBroker):
        def _marker(self, commit):
            pass  # forgets the open transaction's records: they stay pending

    outcome = run(FakeKafka(NeverAborts()), bundled("kip360/producer-recovery.yaml", "reinit-aborts-open-transaction"), 4)
    assert outcome.outcome is Outcome.FAILED
    assert outcome.failure.role == "under_test"


def empty_id(body: dict) -> bool:
    """Whether the request names the empty transactional id (the faulty request; the control names a real one)."""
    return "" in (body.get("transactional_id"), body.get("v3_and_below_transactional_id"))


def answering(api: str, code: int):
    """``code`` to the requests of ``api`` that name the empty transactional id; the positive control the case sends
    first, naming an initialised one, is served."""
    def handler(name, version, body):
        if name != api or not empty_id(body):
            return {"producer_id": 7, "producer_epoch": 0} if name == "InitProducerId" else None
        if api == "AddPartitionsToTxn":
            return {"results_by_topic_v3_and_below": [
                {"name": topic["name"], "results_by_partition": [{"partition_index": p, "partition_error_code": code}
                                                                 for p in topic["partitions"]]}
                for topic in body["v3_and_below_topics"]]}
        return {"error_code": code}
    return handler


EMPTY_ID_CASES = [("AddOffsetsToTxn", "add-offsets-empty-transactional-id", 1),
                  ("AddPartitionsToTxn", "add-partitions-empty-transactional-id", 3),
                  ("EndTxn", "end-txn-empty-transactional-id", 3)]


@pytest.mark.parametrize(("api", "case_id", "version"), EMPTY_ID_CASES)
def test_another_listed_error_meets_the_kip_and_differs_only_from_kafkas_code(api, case_id, version):
    other = error_code("INVALID_TXN_STATE")  # listed by the KIP for these APIs' failures, not Kafka's choice here
    must = run(FakeKafka(answering(api, other)), bundled("kip98/error-paths.yaml", case_id), version)
    assert must.outcome is Outcome.PASSED, must.message
    kafka = run(FakeKafka(answering(api, other)), bundled("kip98/error-paths.yaml", f"{case_id}-kafka-answer"), version)
    assert kafka.outcome is Outcome.DIFFERS and "INVALID_REQUEST" in kafka.message


@pytest.mark.parametrize(("api", "case_id", "version"), EMPTY_ID_CASES)
def test_accepting_the_empty_id_still_fails(api, case_id, version):
    must = run(FakeKafka(answering(api, 0)), bundled("kip98/error-paths.yaml", case_id), version)
    assert must.outcome is Outcome.FAILED and "refused" in must.message


def test_closing_the_connection_is_no_refusal():
    """A client retries a closed connection as a network fault (librdkafka does): it never sees a refusal. Tansu
    passed four EndTxn refusals by closing; only a step whose text says the broker closes expects it (disconnect)."""
    from fake_kafka import CLOSE

    case = bundled("kip98/error-paths.yaml", "end-txn-empty-transactional-id")
    result = run(FakeKafka(lambda api, version, body: CLOSE if api == "EndTxn" and empty_id(body) else None), case, 3)
    assert result.outcome is Outcome.FAILED and "connection closed" in str(result.failure.actual), result.message


def offsets_elsewhere(api, version, body):
    """A broker that keeps group offsets in its own store: DescribeTransactions lists the user's partitions only
    and names its states its own way; TxnOffsetCommit after AddOffsetsToTxn works."""
    if api == "DescribeTransactions":
        return {"transaction_states": [{"transactional_id": tid, "transaction_state": "OPEN", "topics": []}
                                       for tid in body["transactional_ids"]]}
    if api == "InitProducerId":
        return {"producer_id": 7, "producer_epoch": 0}
    if api == "TxnOffsetCommit":
        return {"topics": [{"name": topic["name"], "partitions": [{"partition_index": p["partition_index"]}
                                                                  for p in topic["partitions"]]}
                           for topic in body["topics"]]}
    return None


def test_a_broker_that_keeps_offsets_elsewhere_gets_a_verdict_on_add_offsets():
    result = run(FakeKafka(offsets_elsewhere), bundled("kip98/offsets.yaml", "add-offsets-to-txn"), 3)
    assert result.outcome is Outcome.PASSED, result.message
    detail = run(FakeKafka(offsets_elsewhere), bundled("kip98/offsets.yaml", "add-offsets-partition-of-consumer-offsets"), 0)
    assert detail.outcome in (Outcome.DIFFERS, Outcome.BLOCKED) and detail.outcome is not Outcome.FAILED


def test_add_offsets_whose_effect_is_missing_fails_rather_than_blocks():
    def no_effect(api, version, body):
        if api == "TxnOffsetCommit":
            return {"topics": [{"name": topic["name"], "partitions": [
                {"partition_index": p["partition_index"], "error_code": error_code("INVALID_TXN_STATE")}
                for p in topic["partitions"]]} for topic in body["topics"]]}
        return offsets_elsewhere(api, version, body)

    result = run(FakeKafka(no_effect), bundled("kip98/offsets.yaml", "add-offsets-to-txn"), 3)
    assert result.outcome is Outcome.FAILED and result.failure.role == "under_test"


def test_no_protocol_case_names_kafkas_internals():
    """The loader refuses Kafka's state names and internal topics outside IMPLEMENTATION cases, so no bundled
    MUST can block or fail on them; and it does refuse them (the rule is live)."""
    suites, errors = load_suites([SUITES], components=bundled_components())
    assert not errors, errors[:3]
    assert sum(case.requirement is Requirement.IMPLEMENTATION for suite in suites for case in suite.cases) >= 20


def test_the_loader_refuses_kafkas_internals_in_a_must_case(tmp_path):
    path = tmp_path / "internals.yaml"
    path.write_text("""\
suite: internals
title: t
spec: KIP-98
transactional_ids: [main]
cases:
  - id: state-name
    title: t
    cites: c
    under_test: {api: DescribeTransactions}
    steps:
      - send: DescribeTransactions
        fields: {transactional_ids: ["${txn_ids.main}"]}
        expect: {fields: {"transaction_states[0].transaction_state": CompleteAbort}}
  - id: state-filter
    title: t
    cites: c
    under_test: {api: ListTransactions}
    steps:
      - send: ListTransactions
        fields: {state_filters: [Ongoing], producer_id_filters: [], duration_filter: -1, transactional_id_pattern: null}
        expect: {error_code: NONE}
  - id: internal-topic
    title: t
    cites: c
    requirement: SHOULD
    under_test: {api: DescribeTransactions}
    steps:
      - send: DescribeTransactions
        fields: {transactional_ids: ["${txn_ids.main}"]}
        expect: {fields: {"transaction_states[0].topics[0].topic": __consumer_offsets}}
  - id: kafka-detail
    title: t
    cites: c
    requirement: IMPLEMENTATION
    under_test: {api: DescribeTransactions}
    steps:
      - send: DescribeTransactions
        fields: {transactional_ids: ["${txn_ids.main}"]}
        expect: {fields: {"transaction_states[0].transaction_state": CompleteAbort}}
""")
    _, errors = load_suite_file(path, components=bundled_components())
    lines = sorted({error.line for error in errors})
    assert lines == [13, 20, 30], [str(error) for error in errors]
    assert all("IMPLEMENTATION" in error.message for error in errors)


# ---------------------------------------------------------------------- the outcome after a NONE answer
def AcceptsCommitAfterAbort(acts: bool) -> SynchronousAbortBroker:
    """Answers NONE to a commit of a transaction it just aborted; ``acts`` says whether that commit then
    writes a COMMIT marker (a real departure) or changes nothing (the outcome KIP-98 demands, by another route)."""
    return SynchronousAbortBroker(commits_after_abort=acts)


def test_a_commit_after_abort_answered_none_with_no_effect_meets_the_kip():
    case = bundled("kip98/transactions.yaml", "commit-after-abort")
    assert run(FakeKafka(AcceptsCommitAfterAbort(acts=False)), case, 3).outcome is Outcome.PASSED
    acted = run(FakeKafka(AcceptsCommitAfterAbort(acts=True)), case, 3)
    assert acted.outcome is Outcome.FAILED and acted.failure.role == "under_test", acted.message


def offsets_without_add_offsets(commits_outside: bool):
    """TxnOffsetCommit before AddOffsetsToTxn answered NONE: either the offsets join the open transaction
    (invisible until it commits) or, the departure, they are committed at once."""
    committed = {"offset": -1}
    pending: set[str] = set()  # groups with offsets staged in an open transaction (reported UNSTABLE_OFFSET_COMMIT)

    def handler(api, version, body):
        if api == "InitProducerId":
            return {"producer_id": 7, "producer_epoch": 0}
        if api == "TxnOffsetCommit":
            if commits_outside and not body["group_id"].endswith("-observer"):
                committed["offset"] = body["topics"][0]["partitions"][0]["committed_offset"]
            else:
                pending.add(body["group_id"])
            return {"topics": [{"name": topic["name"], "partitions": [{"partition_index": p["partition_index"]}
                                                                      for p in topic["partitions"]]}
                               for topic in body["topics"]]}
        if api == "EndTxn":
            pending.clear()
            return {}
        if api == "OffsetFetch":
            group_id = body["groups"][0]["group_id"] if version >= 8 else body["group_id"]
            unstable = body.get("require_stable") and group_id in pending
            partition = {"partition_index": 0, "committed_offset": committed["offset"], "metadata": "",
                         "error_code": 88 if unstable else 0}  # UNSTABLE_OFFSET_COMMIT (KIP-447)
            if version >= 8:
                group = body["groups"][0]
                topic = group["topics"][0]
                return {"groups": [{"group_id": group["group_id"], "topics": [
                    {"name": topic.get("name"), "topic_id": topic.get("topic_id"), "partitions": [partition]}]}]}
            return {"topics": [{"name": body["topics"][0]["name"], "partitions": [partition]}]}
        return None
    return handler


def test_txn_offset_commit_before_add_offsets_answered_none_is_judged_by_its_effect():
    case = bundled("kip98/offsets.yaml", "txn-offset-commit-without-add-offsets")
    joined = run(FakeKafka(offsets_without_add_offsets(commits_outside=False)), case, 3)
    assert joined.outcome is Outcome.PASSED, joined.message
    outside = run(FakeKafka(offsets_without_add_offsets(commits_outside=True)), case, 3)
    assert outside.outcome is Outcome.FAILED and outside.failure.role == "under_test", outside.message


# ---------------------------------------------------------------------- read the log as a client does
class OneBatchPerFetch(SynchronousAbortBroker):
    """Returns one batch per Fetch, from the offset asked (legal: librdkafka's mock does), so an ABORT
    marker comes in the response after the records it ends."""

    def Fetch(self, version, body):
        topic = body["topics"][0]
        offset = topic["partitions"][0]["fetch_offset"]
        batch = next((batch for batch in self.log if batch.base_offset + len(batch.records) > offset), None)
        stable = self.first if self.open else self.end
        return {"responses": [{"topic": topic.get("topic"), "topic_id": topic.get("topic_id"), "partitions": [
            {"partition_index": 0, "high_watermark": self.end, "last_stable_offset": stable,
             "log_start_offset": 0, "aborted_transactions": None if body["isolation_level"] == 0 else self.aborted,
             "preferred_read_replica": -1, "records": records.encode_batch(batch) if batch else b""}]}]}


def test_a_broker_that_returns_one_batch_per_fetch_is_read_on_to_the_high_watermark():
    result = run(FakeKafka(OneBatchPerFetch()), bundled("kip98/consumers.yaml", "read-uncommitted-no-aborted-list"), 12)
    assert result.outcome is Outcome.PASSED, result.message
    assert "onward from offset 2" in result.rendered_transcript()


# ---------------------------------------------------------------------- check the observer, not another API
class FencesButListsNoAbortedTransactions(SynchronousAbortBroker):
    """Refuses a write at a fenced epoch and appends nothing of it (what KIP-98 demands), but lists no aborted
    transactions in Fetch, so a read_committed consumer would see the aborted record: a departure of
    read_committed Fetch (Tansu's, seen in the audit), not of the fenced Produce."""

    def Produce(self, version, body):
        partition = body["topic_data"][0]["partition_data"][0]
        batch = records.decode_batches(partition["records"])[0]
        if batch.producer_epoch < self.epoch:
            return {"responses": [{"name": body["topic_data"][0]["name"], "partition_responses": [
                {"index": partition["index"], "error_code": error_code("PRODUCER_FENCED"), "base_offset": -1}]}]}
        return super().Produce(version, body)

    def EndTxn(self, version, body):
        return {}

    def Fetch(self, version, body):
        answer = super().Fetch(version, body)
        answer["responses"][0]["partitions"][0]["aborted_transactions"] = []
        return answer


def test_a_fenced_write_refused_and_not_appended_passes_whatever_read_committed_does():
    case = bundled("kip98/transactions-lifecycle.yaml", "produce-after-fence-rejected")
    result = run(FakeKafka(FencesButListsNoAbortedTransactions()), case, 9)
    assert result.outcome is Outcome.PASSED, result.message
    appends = run(FakeKafka(SynchronousAbortBroker()), case, 9)  # accepts and appends the fenced write
    assert appends.outcome is Outcome.FAILED and appends.failure.role == "under_test"
