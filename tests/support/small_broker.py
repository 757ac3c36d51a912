"""A small broker of the kind found in package registries, scripted on :class:`fake_kafka.FakeKafka`: librdkafka and
kafka-python produce to it and consume from it, yet it knows ApiVersions v0-v4 only and closes the connection on
v5 (where KIP-511 asks for an UNSUPPORTED_VERSION answer in a v0 body), and it has no transaction API and no
CreateTopics. Any other request it does not advertise (an API, a version) closes the connection too, as Kafka's
socket server does.

Its traits are those of a broker a run once gave no verdict at all: the harness stopped at the closed ApiVersions
connection and called it down.
"""

from __future__ import annotations

from fake_kafka import CLOSE, FakeKafka

# what it advertises: the versions a client needs to produce and consume, and nothing of transactions
SMALL_BROKER_APIS = {"ApiVersions": (0, 4), "Metadata": (0, 8), "Produce": (0, 7), "Fetch": (0, 11),
                     "ListOffsets": (0, 5), "FindCoordinator": (0, 2), "DeleteTopics": (0, 3)}


def small_broker() -> FakeKafka:
    """The broker, listening on loopback (stop it with ``stop()``)."""

    def handler(api: str, version: int, body: dict):
        low, high = SMALL_BROKER_APIS.get(api, (0, -1))
        if not low <= version <= high:
            return CLOSE
        return None  # FakeKafka's default answer: no error

    return FakeKafka(handler, apis=SMALL_BROKER_APIS)
