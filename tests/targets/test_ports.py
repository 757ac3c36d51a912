"""Ports for the servers the harness starts: below the ephemeral range, and never handed out twice at once."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from conformance.targets import ports


@pytest.fixture
def own_reservations(tmp_path, monkeypatch):
    """A reservations file of the test's own, so the run's workers and the test do not see each other's."""
    monkeypatch.setattr(ports, "RESERVATIONS_FOLDER", tmp_path)
    return tmp_path


def test_a_port_comes_from_below_the_ephemeral_range_and_can_be_bound(own_reservations):
    port = ports.free_port()
    assert ports.LOWEST_PORT <= port < ports._ephemeral_low()
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))


def test_a_port_in_use_is_never_given(own_reservations, monkeypatch):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        taken = server.getsockname()[1]
        picks = iter([taken, taken, taken + 1 if taken + 1 < 65536 else taken - 1])
        monkeypatch.setattr(ports, "_ephemeral_low", lambda: 65536)  # so the pool holds the port in use
        monkeypatch.setattr(ports.random, "randrange", lambda low, high: next(picks))
        assert ports.free_port() != taken


def test_a_reserved_port_is_not_given_again_until_its_reservation_ends(own_reservations, monkeypatch):
    monkeypatch.setattr(ports.random, "randrange", lambda low, high: 23456)
    first = ports.free_port()  # nothing listens on it yet: the broker it is for has not bound it
    assert first == 23456
    picks = iter([23456, 23457])
    monkeypatch.setattr(ports.random, "randrange", lambda low, high: next(picks))
    assert ports.free_port() == 23457

    saved = json.loads((own_reservations / ports._Reservations().path.name).read_text())
    saved["23456"] = time.time() - 1  # ended
    (own_reservations / ports._Reservations().path.name).write_text(json.dumps(saved))
    monkeypatch.setattr(ports.random, "randrange", lambda low, high: 23456)
    assert ports.free_port() == 23456


def test_parallel_pickers_never_get_the_same_port(own_reservations, monkeypatch):
    """Eight pickers, 200 ports from a pool of 2,000: without the reservations, two would share one almost surely."""
    monkeypatch.setattr(ports, "LOWEST_PORT", 24000)
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: 24000 + ports._MIN_POOL)
    picked: list[int] = []

    def pick() -> None:
        picked.extend(ports.free_port() for _ in range(25))

    threads = [threading.Thread(target=pick) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(picked) == 200 and len(set(picked)) == 200


def test_a_torn_reservations_file_is_started_afresh(own_reservations):
    (own_reservations / ports._Reservations().path.name).write_text('{"2345')
    assert ports.LOWEST_PORT <= ports.free_port() < ports._ephemeral_low()


def test_with_no_room_below_the_ephemeral_range_the_os_picks(own_reservations, monkeypatch):
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: ports.LOWEST_PORT + 10)
    port = ports.free_port()
    assert not ports.LOWEST_PORT <= port < ports.LOWEST_PORT + 10
    assert not (own_reservations / ports._Reservations().path.name).exists()
