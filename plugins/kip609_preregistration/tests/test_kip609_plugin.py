"""The KIP-609 draft plugin: its overlays, its suite, and its cases against a target without the draft."""

from __future__ import annotations

import uuid

import pytest

from conformance.extension import Extensions
from conformance.protocol import frames
from conformance.protocol.codec import default_codec
from conformance.protocol.exceptions import SpecError
from conformance.suite.loader import lint, load_suites
from conformance.results.record import Outcome
from conformance.runner.runner import Runner
from conformance.targets.hostport import HostPortTarget

from fake_kafka import FakeKafka
from draft_plugins import KIP447, KIP609, KIP1309, registered

CASES = {
    "add-partitions-blocks-until-markers-written": "AddPartitionsToTxn",
    "partitions-and-group-in-one-call": "AddPartitionsToTxn",
    "produce-to-unregistered-partition": "AddPartitionsToTxn",
    "txn-offset-commit-for-unregistered-group": "AddPartitionsToTxn",
    "markers-only-to-named-partitions": "EndTxn",
    "null-partitions-mark-every-registered-one": "EndTxn",
    "old-client-add-partitions-blocks-too": "AddPartitionsToTxn",
    "old-client-transaction-not-restricted": "AddPartitionsToTxn",
}


def roundtrip(codec, api, version, body):
    frame = frames.encode_request(codec, api, version, 7, body)
    header, decoded = frames.decode_request(codec, frame[4:])
    assert header["request_api_version"] == version
    return decoded


def test_overlay_adds_v6_of_add_partitions_and_end_txn():
    with registered(KIP609) as extensions:
        codec = extensions.codec()
    assert codec.registry.api("AddPartitionsToTxn").versions()[-1] == 6
    assert codec.registry.api("EndTxn").versions()[-1] == 6
    bundled = default_codec()
    assert bundled.registry.api("AddPartitionsToTxn").versions()[-1] == 5  # the bundled codec is left alone


@pytest.mark.parametrize("group", ["app", None])
def test_add_partitions_v6_carries_a_nullable_group_per_transaction(group):
    with registered(KIP609) as extensions:
        codec = extensions.codec()
    body = {"transactions": [{"transactional_id": "t", "producer_id": 4, "producer_epoch": 2, "verify_only": False,
                              "group_id": group, "topics": [{"name": "out", "partitions": [0, 3]}]}]}
    assert roundtrip(codec, "AddPartitionsToTxn", 6, body) == body
    response = {"throttle_time_ms": 0, "error_code": 0, "results_by_transaction": [{"transactional_id": "t", "topic_results": [
        {"name": "out", "results_by_partition": [{"partition_index": 0, "partition_error_code": 0}]}]}]}
    frame = frames.encode_response(codec, "AddPartitionsToTxn", 6, 7, response)
    assert frames.decode_response(codec, "AddPartitionsToTxn", 6, frame[4:])[1] == response


@pytest.mark.parametrize("topics", [None, [], [{"name": "out", "partitions": [1]}]])
def test_end_txn_v6_carries_the_written_partitions_or_null(topics):
    with registered(KIP609) as extensions:
        codec = extensions.codec()
    body = {"transactional_id": "t", "producer_id": 4, "producer_epoch": 2, "committed": True, "topics": topics}
    assert roundtrip(codec, "EndTxn", 6, body) == body


def test_end_txn_v6_topics_default_to_null_meaning_every_registered_partition():
    with registered(KIP609) as extensions:
        codec = extensions.codec()
    body = {"transactional_id": "t", "producer_id": 4, "producer_epoch": 2, "committed": False}
    assert roundtrip(codec, "EndTxn", 6, body)["topics"] is None


@pytest.mark.parametrize("api, body", [
    ("AddPartitionsToTxn", {"transactions": [{"transactional_id": "t", "producer_id": 4, "producer_epoch": 2,
                                              "verify_only": True, "topics": [{"name": "out", "partitions": [0]}]}]}),
    ("EndTxn", {"transactional_id": "t", "producer_id": 4, "producer_epoch": 2, "committed": True}),
])
def test_released_versions_keep_their_layout(api, body):
    with registered(KIP609) as extensions:
        codec = extensions.codec()
    assert frames.encode_request(codec, api, 5, 7, body) == frames.encode_request(default_codec(), api, 5, 7, body)


@pytest.mark.parametrize("other", [KIP1309, KIP447])
def test_installs_beside_either_other_draft(other):
    """KIP-609 overlays AddPartitionsToTxn and EndTxn, the others InitProducerId: no message in common."""
    with registered(KIP609, other) as extensions:
        codec = extensions.codec()
    assert codec.registry.api("EndTxn").versions()[-1] == 6
    assert codec.registry.api("InitProducerId").versions()[-1] == 7


def test_the_other_two_drafts_still_exclude_each_other():
    with registered(KIP609, KIP1309, KIP447) as extensions, pytest.raises(SpecError, match="InitProducerIdRequest is redefined"):
        extensions.codec()


def test_suite_lints_with_the_plugin_and_names_the_missing_versions_without():
    with registered(KIP609) as extensions:
        assert lint([KIP609 / "suites"], extensions.components()) == []
        suites, _ = load_suites([KIP609 / "suites"], components=extensions.components())
    assert {case.id: case.api for case in suites[0].cases} == CASES
    assert all(case.draft and case.cites.startswith("KIP-609") for case in suites[0].cases)
    errors = lint([KIP609 / "suites"], Extensions.for_run().components())
    assert len(errors) == len(CASES)
    assert all("has no version 6+ in the loaded specs (v0-v5)" in str(error) for error in errors)


def test_every_case_is_unsupported_on_a_target_advertising_only_released_versions():
    broker = FakeKafka()  # advertises the bundled (released) versions: AddPartitionsToTxn and EndTxn up to v5
    target = HostPortTarget(broker.address)
    target.start()
    broker.requests.clear()  # the start's own check (ApiVersions, Metadata) is no case's
    try:
        with registered(KIP609) as extensions:
            components = extensions.components()
            suites, _ = load_suites([KIP609 / "suites"], components=components)
            runner = Runner(target, run_id="kip609-test", components=components, timeout=2.0)
            try:
                results = {}
                for case in suites[0].cases:
                    assert runner.case_versions(case) == [6]
                    results[case.id] = runner.run(case, 6)
            finally:
                runner.close()
    finally:
        broker.stop()
    for case_id, result in results.items():
        assert result.outcome is Outcome.UNSUPPORTED, (case_id, result.message)
        assert f"{CASES[case_id]} v0-v5, not v6" in result.message
    assert {api for api, _ in broker.requests} == {"ApiVersions"}  # no case sent anything else


def partition_results(topics, error=0):
    return [{"name": topic["name"], "results_by_partition": [{"partition_index": partition, "partition_error_code": error}
                                                             for partition in topic["partitions"]]} for topic in topics]


def test_a_target_advertising_v6_that_acts_like_adopted_kafka_fails_the_cases(monkeypatch):
    """Released behaviour behind the draft's versions: the draft's checks fail, on the step under test or
    on the step that verifies it, and nothing in the steps crashes."""
    import fake_kafka

    sent = []
    with registered(KIP609) as extensions:
        components = extensions.components()
        monkeypatch.setattr(fake_kafka, "CODEC", components.codec)
        ended, topic_ids = {"commits": 0}, {}

        def handler(api, version, body):
            sent.append((api, version, body))
            if api == "InitProducerId":
                return {"producer_id": 42, "producer_epoch": 0}
            if api == "EndTxn":
                ended["commits"] += 1
                return {"producer_id": 42, "producer_epoch": 0}
            # Right after a commit, Kafka answers CONCURRENT_TRANSACTIONS (51) until the markers are written.
            error = 51 if ended["commits"] else 0
            if api == "AddPartitionsToTxn" and version >= 4:
                return {"results_by_transaction": [{"transactional_id": txn["transactional_id"],
                                                    "topic_results": partition_results(txn["topics"], error)}
                                                   for txn in body["transactions"]]}
            if api == "AddPartitionsToTxn":
                return {"results_by_topic_v3_and_below": partition_results(body["v3_and_below_topics"], error)}
            if api == "Metadata":  # two partitions per topic, this broker leading both
                node = {"node_id": 1, "host": "127.0.0.1", "port": broker.port, "rack": None}
                return {"brokers": [node], "cluster_id": "fake", "controller_id": 1, "topics": [
                    {"name": topic["name"], "topic_id": topic_ids.setdefault(topic["name"], uuid.uuid4()),
                     "partitions": [{"partition_index": index, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
                                    for index in (0, 1)]} for topic in body.get("topics") or []]}
            if api == "Produce":  # the partition is added implicitly (KIP-890)
                return {"responses": [{"name": topic.get("name"), "topic_id": topic.get("topic_id"), "partition_responses": [
                    {"index": partition["index"], "base_offset": 0} for partition in topic["partition_data"]]}
                    for topic in body["topic_data"]]}
            return None

        broker = FakeKafka(handler, apis={spec.name: (spec.versions()[0], spec.versions()[-1])
                                          for spec in components.codec.registry.apis() if spec.versions()})
        target = HostPortTarget(broker.address)
        target.start()
        suites, _ = load_suites([KIP609 / "suites"], components=components)
        cases = {case.id: case for case in suites[0].cases}
        runner = Runner(target, run_id="kip609-test", components=components, timeout=2.0)
        try:
            results = {}
            for case_id in ("add-partitions-blocks-until-markers-written", "old-client-add-partitions-blocks-too",
                            "produce-to-unregistered-partition", "txn-offset-commit-for-unregistered-group"):
                ended["commits"] = 0
                results[case_id] = runner.run(cases[case_id], 6)
        finally:
            runner.close()
            broker.stop()
    assert {case_id: result.outcome for case_id, result in results.items()} == dict.fromkeys(results, Outcome.FAILED)
    assert "CONCURRENT_TRANSACTIONS" in results["add-partitions-blocks-until-markers-written"].message
    assert "CONCURRENT_TRANSACTIONS" in results["old-client-add-partitions-blocks-too"].message
    assert "expected UNKNOWN_TOPIC_OR_PARTITION, got NONE" in results["produce-to-unregistered-partition"].message
    assert "expected INVALID_GROUP_ID, got NONE" in results["txn-offset-commit-for-unregistered-group"].message
    registrations = [body for api, version, body in sent if (api, version) == ("AddPartitionsToTxn", 6)]
    assert {txn["group_id"] for body in registrations for txn in body["transactions"]} >= {None}
    assert any(txn["group_id"] for body in registrations for txn in body["transactions"])
