"""Draft KIPs as plugins: their specs overlay the bundled ones and their cases load only with them."""

from __future__ import annotations

import pytest

from conformance.extension import Extensions
from conformance.protocol import frames
from conformance.protocol.exceptions import SpecError
from conformance.suite.loader import load_suites
from conformance.results.record import Outcome
from conformance.runner.runner import Runner

from draft_plugins import KIP447, KIP1309, registered


def test_kip1309_adds_an_api_and_a_version():
    with registered(KIP1309) as extensions:
        codec = extensions.codec()
    assert "TxnHeartbeat" in codec.registry.api_names()
    assert codec.registry.api("InitProducerId").versions()[-1] == 7
    body = {"transactional_id": "t", "transaction_timeout_ms": 60000, "transaction_heartbeat_interval_ms": 1000,
            "producer_id": -1, "producer_epoch": -1, "enable2_pc": False, "keep_prepared_txn": False}
    frame = frames.encode_request(codec, "InitProducerId", 7, 3, body)
    header, decoded = frames.decode_request(codec, frame[4:])
    assert header["request_api_version"] == 7 and decoded == body
    heartbeat = frames.encode_request(codec, "TxnHeartbeat", 0, 4, {"transactional_id": "t", "producer_id": 5,
                                                                     "producer_epoch": 1})
    assert frames.decode_request(codec, heartbeat[4:])[1]["producer_id"] == 5


def test_kip447_draft_carries_the_group_assignment_in_init_producer_id():
    with registered(KIP447) as extensions:
        codec = extensions.codec()
    body = {"transactional_id": "t", "transaction_timeout_ms": 60000, "consumer_group_id": "g",
            "consumer_group_generation": 3, "assigned_partitions": [{"name": "in", "partitions": [0, 2]}],
            "producer_id": -1, "producer_epoch": -1, "enable2_pc": False, "keep_prepared_txn": False}
    frame = frames.encode_request(codec, "InitProducerId", 7, 9, body)
    assert frames.decode_request(codec, frame[4:])[1] == body
    # Versions Kafka released keep their layout: v6 has none of the draft's fields.
    v6 = {key: value for key, value in body.items() if not key.startswith(("consumer_group", "assigned"))}
    assert frames.encode_request(codec, "InitProducerId", 6, 9, v6) == \
        frames.encode_request(Extensions.for_run().codec(), "InitProducerId", 6, 9, v6)


def test_two_drafts_of_one_message_are_refused_by_name():
    with registered(KIP1309, KIP447) as extensions, pytest.raises(SpecError, match="InitProducerIdRequest is redefined by two"):
        extensions.codec()


def test_overlays_leave_the_bundled_codec_alone():
    from conformance.protocol.codec import default_codec

    with registered(KIP1309, KIP447):
        names = default_codec().registry.api_names()
        versions = default_codec().registry.api("InitProducerId").versions()
    assert "TxnHeartbeat" not in names and versions[-1] == 6


@pytest.mark.parametrize("folder, cases", [
    (KIP1309, {"heartbeat-keeps-transaction-alive", "heartbeat-interval-above-timeout",
               "heartbeat-with-two-phase-commit"}),
    (KIP447, {"group-aware-init-gives-a-producer", "group-aware-init-may-repeat", "previous-generation-refused",
              "takeover-aborts-transaction-on-assigned-partition"}),
])
def test_draft_suite_loads_only_with_its_plugin(folder, cases):
    with registered(folder) as extensions:
        suites, errors = load_suites([folder / "suites"], components=extensions.components())
    assert errors == []
    assert {case.id for case in suites[0].cases} == cases and all(case.draft for case in suites[0].cases)
    _, errors = load_suites([folder / "suites"], components=Extensions.for_run().components())
    assert errors and all("TxnHeartbeat" in str(error) or "no version 7+" in str(error) for error in errors)


class AdvertisesUpToV6:
    """A target stand-in for the runner's version gate; no case gets past it."""
    spec, version, bootstrap, name = "fake", "0", "127.0.0.1:9", None


def test_draft_versions_are_unsupported_where_not_advertised(monkeypatch):
    with registered(KIP447) as extensions:
        suites, _ = load_suites([KIP447 / "suites"], components=extensions.components())
        runner = Runner(AdvertisesUpToV6(), run_id="draft-test", components=extensions.components())
        monkeypatch.setattr(runner, "advertised", lambda api: (0, 6))
        case = suites[0].cases[0]
        assert runner.case_versions(case) == [7]
        result = runner.run(case, 7)
    assert result.outcome is Outcome.UNSUPPORTED and "InitProducerId v0-v6, not v7" in result.message
