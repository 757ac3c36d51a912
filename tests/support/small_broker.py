"""A small broker of the kind found in package registries, scripted on :class:`fake_kafka.FakeKafka`: librdkafka and
kafka-python produce to it and consume from it, yet it knows ApiVersions v0-v4 only and closes the connection on
v5 (where KIP-511 asks for an UNSUPPORTED_VERSION answer in a v0 body), and it has no transaction API and no
CreateTopics. Any other request it does not advertise (an API, a version) closes the connection too, as Kafka's
socket server does.

Its traits are those of a broker a run once gave no verdict at all: the harness stopped at the closed ApiVersions
connection and called it down.
"""

from __future__ import annotations

from conformance.protocol import frames

from fake_kafka import CLOSE, CODEC, FakeKafka

API_VERSIONS_KEY = CODEC.registry.api("ApiVersions").api_key

# what it advertises: the versions a client needs to produce and consume, and nothing of transactions
SMALL_BROKER_APIS = {"ApiVersions": (0, 4), "Metadata": (0, 8), "Produce": (0, 7), "Fetch": (0, 11),
                     "ListOffsets": (0, 5), "FindCoordinator": (0, 2), "DeleteTopics": (0, 3)}


def small_broker() -> FakeKafka:
    """The broker, listening on loopback (stop it with ``stop()``)."""

    return FakeKafka(_advertised_only, apis=SMALL_BROKER_APIS)


def _advertised_only(api: str, version: int, body: dict):
    """Closes the connection on what it does not advertise; anything else gets FakeKafka's default answer."""
    low, high = SMALL_BROKER_APIS.get(api, (0, -1))
    return None if low <= version <= high else CLOSE


def small_broker_without_transactions() -> FakeKafka:
    """The small broker made to handle the protocol as it must, still with no transaction API and no CreateTopics:
    an ApiVersions request at a version beyond v4 gets KIP-511's answer (UNSUPPORTED_VERSION in a v0 body, with its
    ApiVersions range) instead of a closed connection, and having no way to create topics it has none: Produce to
    any topic is refused with UNKNOWN_TOPIC_OR_PARTITION. What a vendor of such a broker certifies with a
    capabilities file that claims no transactions."""
    return _RobustSmallBroker(_without_topics, apis=SMALL_BROKER_APIS)


UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION = 3, 35


def _without_topics(api: str, version: int, body: dict):
    if api == "Produce" and _advertised_only(api, version, body) is None:
        return {"responses": [{"name": topic["name"], "partition_responses": [
            {"index": partition["index"], "error_code": UNKNOWN_TOPIC_OR_PARTITION, "base_offset": -1}
            for partition in topic["partition_data"]]} for topic in body["topic_data"]]}
    return _advertised_only(api, version, body)


class _RobustSmallBroker(FakeKafka):
    def _answer(self, payload: bytes, state: dict | None = None):
        api_key, version, correlation = frames.peek_request_header(payload)
        low, high = SMALL_BROKER_APIS["ApiVersions"]
        if api_key == API_VERSIONS_KEY and version > high:  # KIP-511: a v0 body, whatever version was asked
            self.requests.append(("ApiVersions", version))
            return frames.encode_response(CODEC, "ApiVersions", 0, correlation, {
                "error_code": UNSUPPORTED_VERSION,
                "api_keys": [{"api_key": API_VERSIONS_KEY, "min_version": low, "max_version": high}]})
        return super()._answer(payload, state)
