"""Capturing loopback traffic: both backends, big segments, and the no-privilege path."""

from __future__ import annotations

import logging
import os
import socket
import threading

import pytest

from conformance.capture import sniffer
from conformance.capture.pcap import iter_packets
from conformance.capture.scapy_sniffer import availability as scapy_availability
from conformance.capture.sniffer import Capture, capture_available
from conformance.capture.tcp import SYN, HalfStream, parse_segment


def sink_server():
    """A server that reads everything a client sends, on a free port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve():
        connection, _ = server.accept()
        with connection:
            while connection.recv(1 << 20):
                pass
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server.getsockname()[1], thread


def client_bytes(path, port: int) -> bytes:
    """The client-to-server byte stream of the one connection to ``port`` in a capture."""
    stream = HalfStream()
    received = []
    for linktype, _, data in iter_packets(path):
        segment = parse_segment(linktype, data)
        if segment is None or segment[3] != port:
            continue
        if segment[5] & SYN:
            stream.next_sequence = segment[4] + 1
        elif segment[6]:
            received.append(stream.accept(segment[4], segment[6]))
    return b"".join(received)


@pytest.mark.parametrize("backend", [pytest.param("dumpcap", marks=pytest.mark.broker), "scapy"])
def test_backend_captures_a_4_mib_stream_completely(tmp_path, backend):
    reason = capture_available()
    if reason:
        pytest.skip(reason)
    if backend == "dumpcap" and sniffer.backend_name() != "dumpcap":
        pytest.skip("no usable dumpcap here")
    if backend == "scapy" and scapy_availability():
        pytest.skip(scapy_availability())
    port, thread = sink_server()
    payload = os.urandom(4 << 20)
    path = tmp_path / f"{backend}.pcapng"
    with Capture([port], path, backend=backend) as capture:
        assert capture.active
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(payload)
        thread.join(10)
    assert capture.warnings == []
    assert client_bytes(path, port) == payload
    assert max(len(data) for _, _, data in iter_packets(path)) > 65535  # loopback's big segments, not cut


def test_without_a_backend_capture_is_off_and_says_so_once(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(sniffer, "backend_name", lambda: None)
    monkeypatch.setattr(sniffer, "capture_available", lambda: "no dumpcap (apt-get install tshark); and no scapy")
    monkeypatch.setattr(sniffer, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="conformance.capture.sniffer"):
        for attempt in range(3):
            capture = Capture([9092], tmp_path / f"off-{attempt}.pcapng")
            assert capture.start() is False
            assert capture.stop() is None
    assert capture.unavailable == "no dumpcap (apt-get install tshark); and no scapy"
    assert [record.getMessage() for record in caplog.records] == [
        "wire capture is off: no dumpcap (apt-get install tshark); and no scapy"]
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("dumpcap, scapy, backend, reason", [
    (None, None, "dumpcap", None),
    (None, "no scapy", "dumpcap", None),  # dumpcap first: it captures in its own process
    ("no dumpcap", None, "scapy", None),
    ("no dumpcap", "no scapy", None, "no dumpcap; and no scapy"),
])
def test_the_backend_is_dumpcap_then_scapy_and_none_says_why(monkeypatch, dumpcap, scapy, backend, reason):
    from conformance.capture import scapy_sniffer

    monkeypatch.setattr(sniffer, "_dumpcap_reason", lambda: dumpcap)
    monkeypatch.setattr(scapy_sniffer, "availability", lambda: scapy)
    monkeypatch.setattr(sniffer.sys, "platform", "linux")
    assert sniffer.backend_name() == backend
    assert capture_available() == reason
    monkeypatch.setattr(sniffer.sys, "platform", "darwin")
    assert capture_available() == "capturing loopback traffic is implemented for Linux only, not darwin"
