"""A draft KIP as a plugin: its specs overlay the bundled ones and its cases run (unsupported on Kafka)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conformance.plugins import codec_with_plugins, plugin_manager
from conformance.protocol import frames
from conformance.suite.loader import load_suites

PLUGIN = Path(__file__).resolve().parents[1] / "plugins" / "kip1309_txn_heartbeat"


@pytest.fixture
def draft_plugin():
    sys.path.insert(0, str(PLUGIN))
    from kip1309_txn_heartbeat import plugin

    manager = plugin_manager()
    manager.register(plugin, name="kip1309-test")
    yield plugin
    manager.unregister(name="kip1309-test")
    sys.path.remove(str(PLUGIN))


def test_overlay_adds_an_api_and_a_version(draft_plugin):
    codec = codec_with_plugins()
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


def test_overlay_leaves_the_bundled_codec_alone(draft_plugin):
    from conformance.protocol.codec import default_codec

    assert "TxnHeartbeat" not in default_codec().registry.api_names()


def test_draft_suite_loads_only_with_the_plugin(draft_plugin):
    suites, errors = load_suites([PLUGIN / "suites"])
    assert errors == []
    assert {case.id for case in suites[0].cases} == {
        "heartbeat-keeps-transaction-alive", "heartbeat-interval-above-timeout", "heartbeat-with-two-phase-commit"}
    assert all(case.draft for case in suites[0].cases)


def test_draft_suite_is_rejected_without_the_plugin():
    _, errors = load_suites([PLUGIN / "suites"])
    assert any("unknown API 'TxnHeartbeat'" in str(error) for error in errors)
