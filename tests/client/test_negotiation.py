"""ApiVersions is negotiated as Kafka's clients negotiate it: from the newest version the codec knows, down to the
broker's newest on UNSUPPORTED_VERSION (KIP-511's v0 answer), one version down on a closed connection."""

from __future__ import annotations

import pytest

from conformance.client.cluster import Cluster
from conformance.client.connection import Disconnected
from conformance.protocol.codec import default_codec

from fake_kafka import CLOSE, FakeKafka
from small_broker import SMALL_BROKER_APIS, small_broker

CODEC = default_codec()
NEWEST = CODEC.registry.api("ApiVersions").versions()[-1]


@pytest.fixture
def brokers():
    started: list[FakeKafka] = []
    yield started
    for broker in started:
        broker.stop()


def negotiations(cluster: Cluster) -> list[tuple[int, str]]:
    """(version, how it ended) of each ApiVersions request the cluster sent."""
    return [(exchange.version, exchange.problem or f"error_code {exchange.response['error_code']}")
            for exchange in cluster.transcript.exchanges if exchange.api == "ApiVersions"]


def test_a_broker_that_closes_the_connection_on_a_newer_version_is_asked_one_version_lower(brokers):
    broker = small_broker()
    brokers.append(broker)
    cluster = Cluster(broker.address, CODEC, timeout=2.0)
    try:
        advertised = cluster.api_versions()
    finally:
        cluster.close()
    assert advertised[CODEC.registry.api("Produce").api_key] == SMALL_BROKER_APIS["Produce"]
    assert CODEC.registry.api("EndTxn").api_key not in advertised
    assert negotiations(cluster) == [(version, "disconnected") for version in range(NEWEST, 4, -1)] + \
        [(4, "error_code 0")]
    assert cluster.version_range("Metadata") == SMALL_BROKER_APIS["Metadata"]  # every request at a version it serves


def test_an_unsupported_version_answer_gives_the_version_to_ask_next(brokers):
    def handler(api, version, body):
        if api == "ApiVersions" and version > 2:  # KIP-511: the v0 body, its ApiVersions range in it
            return {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 2}]}
        return None

    broker = FakeKafka(handler, apis={"ApiVersions": (0, 2), "Metadata": (0, 9)})
    brokers.append(broker)
    cluster = Cluster(broker.address, CODEC, timeout=2.0)
    try:
        assert cluster.api_versions()[CODEC.registry.api("Metadata").api_key] == (0, 9)
    finally:
        cluster.close()
    assert [version for version, _ in negotiations(cluster)] == [NEWEST, 2]


def test_a_broker_that_closes_on_every_version_is_not_a_kafka_broker(brokers):
    broker = FakeKafka(lambda api, version, body: CLOSE)
    brokers.append(broker)
    cluster = Cluster(broker.address, CODEC, timeout=2.0)
    try:
        with pytest.raises(Disconnected, match="ApiVersions v0"):
            cluster.api_versions()
    finally:
        cluster.close()
    assert [version for version, _ in negotiations(cluster)] == list(range(NEWEST, -1, -1))  # each once, down to v0
