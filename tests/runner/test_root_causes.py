"""One fault of one API version is one finding, grouped by its root cause.

librdkafka's mock writes its Produce v5 responses without LogStartOffset, which ProduceResponse.json has
from v5 on (it writes it from v6). That single layout fault failed 21 cases one by one, and each said only
"does not decode". Now the item records the root cause, naming the field where decoding broke; an item
whose step under test is Produce v5 fails there, once per item, with the cause named; an item that meets
it on another step (set-up, or a check, even one that verifies) is blocked naming it, not failed.
"""

from __future__ import annotations

import textwrap

from conformance.protocol import records
from conformance.suite.model import Outcome

from fake_kafka import CODEC, FakeKafka
from scripted_runs import run_on, written_case

CAUSE = "Produce v5 response does not decode at ProduceResponse.responses[].partition_responses[].log_start_offset"

HEADER = """\
suite: root-causes
title: One fault of one API version
spec: KIP-98
topics: {out: {partitions: 1}}
cases:
"""

PRODUCE_UNDER_TEST = """\
- id: produce-appends
  title: A produced record is appended
  cites: KIP-98
  under_test: {api: Produce, versions: "5"}
  steps:
    - produce: {topic: "${topics.out}", partition: 0, records: [a]}
      expect: {error_code: NONE}
"""

FETCH_UNDER_TEST_SETUP = """\
- id: fetch-reads
  title: A fetch reads what a set-up produce wrote
  cites: KIP-98
  under_test: {api: Fetch, versions: "11"}
  steps:
    - produce: {topic: "${topics.out}", partition: 0, records: [a], version: 5}
    - fetch: {topic: "${topics.out}", partition: 0, isolation: read_uncommitted}
      expect: {records: 1}
"""

VERIFYING_CHECK = """\
- id: metadata-then-produce
  title: A topic that metadata names takes a record
  cites: KIP-98
  under_test: {api: Metadata, versions: "9"}
  steps:
    - send: Metadata
      fields: {topics: [{name: "${topics.out}"}], allow_auto_topic_creation: false,
               include_topic_authorized_operations: false}
      expect: {error_code: NONE}
    - produce: {topic: "${topics.out}", partition: 0, records: [a], version: 5}
      expect: {error_code: NONE}
      verifies: true
"""


class MockLike:
    """Keeps what is produced; answers Produce v5 without log_start_offset, like librdkafka's mock."""

    def __init__(self):
        self.log: list[records.RecordBatch] = []

    def __call__(self, api, version, body):
        if api == "Produce":
            topic = body["topic_data"][0]
            partition = topic["partition_data"][0]
            base = sum(len(batch.records) for batch in self.log)
            for batch in records.decode_batches(partition["records"]):
                batch.base_offset = base
                self.log.append(batch)
            answer = {"responses": [{"name": topic["name"], "partition_responses": [
                {"index": partition["index"], "base_offset": base, "log_start_offset": 0}]}]}
            if version != 5:
                return answer
            whole = CODEC.encode("Produce", 5, "response", answer)
            return whole[:-12] + whole[-4:]  # log_start_offset (8 bytes before throttle_time_ms) left out
        if api == "Fetch":
            topic = body["topics"][0]
            end = sum(len(batch.records) for batch in self.log)
            return {"responses": [{"topic": topic["topic"], "partitions": [
                {"partition_index": 0, "high_watermark": end, "last_stable_offset": end, "log_start_offset": 0,
                 "preferred_read_replica": -1,
                 "records": b"".join(records.encode_batch(batch) for batch in self.log)}]}]}
        return None


def run(tmp_path, case_yaml: str, version: int):
    case = written_case(tmp_path, HEADER + textwrap.indent(textwrap.dedent(case_yaml), "  "))
    return run_on(FakeKafka(MockLike()), case, version)


def test_the_fault_on_the_step_under_test_fails_there_naming_the_field(tmp_path):
    result = run(tmp_path, PRODUCE_UNDER_TEST, 5)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.root_cause == CAUSE
    assert "log_start_offset (int64) needs 8 bytes, 4 left" in result.message
    assert result.record().root_cause == CAUSE


def test_the_same_api_at_another_version_is_judged(tmp_path):
    result = run(tmp_path, PRODUCE_UNDER_TEST.replace('versions: "5"', 'versions: "6"'), 6)
    assert result.outcome is Outcome.PASSED, result.message
    assert result.root_cause == ""


def test_a_set_up_step_that_meets_it_blocks_the_item_naming_the_root_cause(tmp_path):
    result = run(tmp_path, FETCH_UNDER_TEST_SETUP, 11)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.root_cause == CAUSE and result.failure.role == "setup"
    assert result.message.startswith(f"blocked by a root cause on another request: {CAUSE}")


def test_a_verifying_check_that_meets_it_blocks_rather_than_fails(tmp_path):
    result = run(tmp_path, VERIFYING_CHECK, 9)
    assert result.outcome is Outcome.BLOCKED, result.message
    assert result.root_cause == CAUSE and result.failure.role == "check"


PREPARED = """\
- id: second-produce-follows
  title: A second record follows the first
  cites: KIP-98
  under_test: {api: Produce, versions: "5"}
  steps:
    - produce: {topic: "${topics.out}", partition: 0, records: [a]}
    - produce: {topic: "${topics.out}", partition: 0, records: [b]}
      expect: {error_code: NONE, fields: {base_offset: 1}}
"""


def test_a_step_preparing_the_version_under_test_that_meets_its_fault_fails_the_item(tmp_path):
    # the preparing produce is set-up, but the fault is the very API version under test's: it fails there
    result = run(tmp_path, PREPARED, 5)
    assert result.outcome is Outcome.FAILED, result.message
    assert result.root_cause == CAUSE and result.failure.step == 1 and result.failure.role == "under_test"
