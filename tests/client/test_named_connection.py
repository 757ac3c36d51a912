"""A named connection: one of its own beside the shared one, kept under its name, opened again once broken."""

from __future__ import annotations

from conformance.client.cluster import Cluster

from fake_kafka import FakeKafka


def test_a_named_connection_is_its_own_kept_and_reopened_and_closed_with_the_cluster():
    fake = FakeKafka()
    cluster = Cluster(fake.address)
    try:
        shared = cluster.connection()
        second = cluster.named_connection("second")
        assert second is not shared and cluster.named_connection("second") is second
        assert cluster.named_connection("third") is not second
        second.close()
        again = cluster.named_connection("second")
        assert again is not second and again.connected
        cluster.close()
        assert not again.connected and not shared.connected
    finally:
        fake.stop()
