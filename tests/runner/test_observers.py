"""A check that cannot observe does not judge, against a scripted broker that advertises Fetch v13
but gives every topic the all-zero topic id, so Fetch v13 answers UNKNOWN_TOPIC_ID for a topic it has.

Before observe.py, the produce case below failed on Produce: its verifying fetch went out at v13 and its
error was read as evidence. Now the check goes on at Fetch v12, says so, and the Fetch v13 departure is
one note on Fetch v13; a case whose step under test *is* Fetch v13 is blocked by one root cause on the Metadata
version that gave the zero id; and where no version that names topics is advertised the item is blocked, naming
the check. An answer about another topic than the one asked is no evidence either.
"""

from __future__ import annotations

import textwrap
import uuid

from conformance.protocol import records
from conformance.runner.steps.send import requests
from conformance.suite.model import Outcome

from fake_kafka import CODEC, FakeKafka
from scripted_runs import run_on, written_case

ZERO = uuid.UUID(int=0)
UNKNOWN_TOPIC_ID = 100

HEADER = """\
suite: observers
title: Checks that cannot observe
spec: KIP-98
topics: {out: {partitions: 1}}
cases:
"""

PRODUCE_THEN_READ = """\
- id: produce-then-read
  title: A produced record is read back
  cites: KIP-98
  under_test: {api: Produce, versions: "3"}
  steps:
    - produce: {topic: "${topics.out}", partition: 0, records: [a]}
    - fetch: {topic: "${topics.out}", partition: 0, isolation: read_uncommitted}
      expect: {records: 1}
      verifies: true
"""

FETCH_UNDER_TEST = """\
- id: fetch-reads
  title: A fetch reads a produced record
  cites: KIP-98
  under_test: {api: Fetch, versions: "13"}
  steps:
    - produce: {topic: "${topics.out}", partition: 0, records: [a]}
    - fetch: {topic: "${topics.out}", partition: 0, isolation: read_uncommitted}
      expect: {records: 1}
"""


class ZeroIdBroker:
    """One partition that keeps what is produced; every topic has the all-zero id, so a Fetch that names a
    topic by id (v13+) is answered UNKNOWN_TOPIC_ID, and one that names it (v12-) is served."""

    def __init__(self):
        self.log: list[records.RecordBatch] = []
        self.fake: FakeKafka | None = None

    def __call__(self, api, version, body):
        if api == "Metadata":
            answer = self.fake._default(api, version, body)
            for topic in answer["topics"]:
                topic["topic_id"] = ZERO
            return answer
        if api == "Produce":
            topic = body["topic_data"][0]
            partition = topic["partition_data"][0]
            base = sum(len(batch.records) for batch in self.log)
            for batch in records.decode_batches(partition["records"]):
                batch.base_offset = base
                self.log.append(batch)
            return {"responses": [{"name": topic["name"], "partition_responses": [
                {"index": partition["index"], "base_offset": base, "log_start_offset": 0}]}]}
        if api == "Fetch":
            topic = body["topics"][0]
            if version >= 13:
                return {"responses": [{"topic_id": topic["topic_id"], "partitions": [
                    {"partition_index": 0, "error_code": UNKNOWN_TOPIC_ID, "high_watermark": -1,
                     "last_stable_offset": -1, "log_start_offset": -1, "records": b""}]}]}
            end = sum(len(batch.records) for batch in self.log)
            return {"responses": [{"topic": topic["topic"], "partitions": [
                {"partition_index": 0, "high_watermark": end, "last_stable_offset": end, "log_start_offset": 0,
                 "preferred_read_replica": -1,
                 "records": b"".join(records.encode_batch(batch) for batch in self.log)}]}]}
        return None


# everything the codec knows, Fetch only up to v13 (the broker of the issue)
ADVERTISED = {spec.name: (spec.versions()[0], spec.versions()[-1]) for spec in CODEC.registry.apis()
              if spec.versions()} | {"Fetch": (4, 13)}


def run(tmp_path, case_yaml: str, version: int, apis=None, script=None):
    script = script or ZeroIdBroker()
    broker = FakeKafka(script, apis=apis or ADVERTISED)
    script.fake = broker
    case = written_case(tmp_path, HEADER + textwrap.indent(textwrap.dedent(case_yaml), "  "))
    return run_on(broker, case, version), broker


def test_a_check_fetch_that_cannot_address_its_topic_by_id_goes_on_by_name_and_the_item_is_judged(tmp_path):
    result, broker = run(tmp_path, PRODUCE_THEN_READ, 3)
    assert result.outcome is Outcome.PASSED, result.message
    assert ("Fetch", 12) in broker.requests and ("Fetch", 13) not in broker.requests
    assert "finding on Fetch v13" in result.message and "all-zero topic id" in result.message
    assert "at Fetch v12" in result.rendered_transcript()


def test_a_check_told_its_topic_does_not_exist_at_an_id_version_goes_on_by_name(tmp_path, monkeypatch):
    # the id is not zero, but the target still answers UNKNOWN_TOPIC_ID at v13 (a version advertised, not served)
    monkeypatch.setattr("conformance.runner.observe.has_no_id", lambda topic_id: False)
    result, broker = run(tmp_path, PRODUCE_THEN_READ, 3)
    assert result.outcome is Outcome.PASSED, result.message
    assert broker.requests.index(("Fetch", 13)) < broker.requests.index(("Fetch", 12))
    assert "finding on Fetch v13" in result.message and "UNKNOWN_TOPIC_ID" in result.message


def test_a_check_with_no_version_that_can_observe_blocks_the_item_naming_the_check(tmp_path):
    result, _ = run(tmp_path, PRODUCE_THEN_READ, 3, apis=ADVERTISED | {"Fetch": (13, 17)})
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.failure.api == "Fetch" and result.failure.role == "check"
    assert "cannot observe" in result.message


def test_a_check_whose_own_request_errors_blocks_even_where_it_verifies(tmp_path):
    class Erring(ZeroIdBroker):
        def __call__(self, api, version, body):
            if api == "Fetch":
                return {"responses": [{"topic": body["topics"][0]["topic"], "partitions": [
                    {"partition_index": 0, "error_code": 6, "high_watermark": -1}]}]}  # NOT_LEADER_OR_FOLLOWER
            return super().__call__(api, version, body)

    result, _ = run(tmp_path, PRODUCE_THEN_READ, 3, script=Erring())
    assert result.outcome is Outcome.BLOCKED, result.message
    assert "could not observe" in result.message


def test_the_step_under_test_at_an_id_version_is_blocked_by_metadata_s_root_cause_and_never_sent(tmp_path):
    # the broker itself said the topic has no id: no Fetch by id can name it, which is no evidence on Fetch v13 but
    # one finding on the Metadata version that gave the zero id (the same words for every item it touches)
    result, broker = run(tmp_path, FETCH_UNDER_TEST, 13)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.failure.api == "Metadata"
    assert result.root_cause.startswith("Metadata v") and "all-zero topic id" in result.root_cause
    assert ("Fetch", 13) not in broker.requests
    elsewhere, _ = run(tmp_path, FETCH_UNDER_TEST, 12)   # by name, the same broker is judged on Fetch
    assert elsewhere.outcome is not Outcome.BLOCKED, elsewhere.message


class ElsewhereBroker(ZeroIdBroker):
    """Topics have ids, but every Fetch by id is answered about the all-zero id (a broker that echoes its own)."""

    def __call__(self, api, version, body):
        if api == "Metadata":
            return self.fake._default(api, version, body)
        if api == "Fetch" and version >= 13:
            end = sum(len(batch.records) for batch in self.log)
            return {"responses": [{"topic_id": ZERO, "partitions": [
                {"partition_index": 0, "high_watermark": end, "last_stable_offset": end, "log_start_offset": 0,
                 "preferred_read_replica": -1, "records": b"".join(records.encode_batch(batch) for batch in self.log)}]}]}
        return super().__call__(api, version, body)


def test_an_answer_about_another_topic_fails_the_fetch_under_test_and_moves_a_check_by_name(tmp_path):
    under_test, _ = run(tmp_path, FETCH_UNDER_TEST, 13, script=ElsewhereBroker())
    assert under_test.outcome is Outcome.FAILED, under_test.message
    assert under_test.failure.api == "Fetch" and "not the topic_id asked" in under_test.message
    checked, broker = run(tmp_path, PRODUCE_THEN_READ, 3, script=ElsewhereBroker())
    assert checked.outcome is Outcome.PASSED, checked.message
    assert broker.requests.index(("Fetch", 13)) < broker.requests.index(("Fetch", 12))


TXN_OFFSET_COMMIT = """\
- id: commit-offsets
  title: A transactional offset commit names its topic
  cites: KIP-98
  under_test: {api: TxnOffsetCommit, versions: "5-6"}
  steps:
    - send: TxnOffsetCommit
      fields:
        transactional_id: t
        group_id: g
        producer_id: 1
        producer_epoch: 0
        topics: [{name: "${topics.out}", topic_id: "${topic_ids.out}", partitions: [{partition_index: 0, committed_offset: 7}]}]
      expect: {error_code: NONE}
"""


class ZeroIdCommits(ZeroIdBroker):
    """Commits offsets of a topic it knows by name, or by an id; the all-zero id names no topic."""

    def __call__(self, api, version, body):
        if api == "TxnOffsetCommit":
            topic = body["topics"][0]
            unknown = version >= 6 and topic["topic_id"] == ZERO
            return {"topics": [{"name": topic["name"], "topic_id": topic.get("topic_id"), "partitions": [
                {"partition_index": 0, "error_code": UNKNOWN_TOPIC_ID if unknown else 0}]}]}
        return super().__call__(api, version, body)


def test_a_send_step_that_names_its_topic_by_a_zero_id_is_blocked_by_metadata_s_root_cause_and_never_sent(tmp_path):
    # the same finding as the Fetch under test above, for a request whose fields substitute ${topic_ids...}: before,
    # TxnOffsetCommit v6 failed on the UNKNOWN_TOPIC_ID that the zero id Metadata gave made certain
    result, broker = run(tmp_path, TXN_OFFSET_COMMIT, 6, script=ZeroIdCommits())
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.failure.api == "Metadata"
    assert result.root_cause.startswith("Metadata v") and "all-zero topic id" in result.root_cause
    assert ("TxnOffsetCommit", 6) not in broker.requests
    # v5 names the topic, so the zero id is not sent and the same broker is judged on TxnOffsetCommit
    by_name, broker = run(tmp_path, TXN_OFFSET_COMMIT, 5, script=ZeroIdCommits())
    assert by_name.outcome is Outcome.PASSED, by_name.message
    assert ("TxnOffsetCommit", 5) in broker.requests


def test_the_send_kind_declares_each_topic_its_fields_name_by_a_learnt_id_once():
    step = {"send": "TxnOffsetCommit", "fields": {"group_id": "${groups.app}", "topics": [
        {"name": "${topics.in}", "topic_id": "${topic_ids.in}"}, {"topic_id": "${topic_ids.out}"},
        {"topic_id": "${topic_ids.in}"}]}}
    assert requests(step)[0].topic_ids == ("in", "out")
    assert requests({"send": "EndTxn", "fields": {"transactional_id": "${txn_ids.main}"}})[0].topic_ids == ()
