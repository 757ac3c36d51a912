"""The raw client against fake brokers on loopback: timeouts, closes and garbage are diagnosed."""

from __future__ import annotations

import socket
import threading

import pytest

from conformance.client.connection import Connection, Disconnected, GarbageResponse, ResponseTimeout
from conformance.client.transcript import Transcript
from conformance.protocol import frames
from conformance.protocol.codec import default_codec

CODEC = default_codec()
METADATA = {"topics": [], "allow_auto_topic_creation": False}
OPENED: list["FakeBroker"] = []  # the fake brokers of the running test


class FakeBroker:
    """Accepts one connection and answers each request frame with ``respond(payload) -> bytes | None``."""

    def __init__(self, respond):
        self.respond = respond
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections: list[Connection] = []
        OPENED.append(self)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self) -> None:
        for connection in self.connections:
            connection.close()
        self.server.close()

    def _serve(self):
        try:
            client, _ = self.server.accept()
        except OSError:  # closed by the test before anything connected
            return
        buffer = bytearray()
        with client:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                payloads, used = frames.split_frames(buffer)
                del buffer[:used]
                for payload in payloads:
                    answer = self.respond(payload)
                    if answer == b"CLOSE":
                        return
                    if answer:
                        client.sendall(answer)

    def connection(self, timeout=1.0) -> Connection:
        self.connections.append(Connection("127.0.0.1", self.port, CODEC, Transcript(), timeout=timeout))
        return self.connections[-1]


@pytest.fixture(autouse=True)
def close_fake_brokers():
    """Every fake broker a test starts is closed after it, with the client's connections to it."""
    yield
    while OPENED:
        OPENED.pop().close()


def metadata_answer(payload: bytes, correlation_shift: int = 0) -> bytes:
    _, version, correlation = frames.peek_request_header(payload)
    body = {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}], "topics": [],
            "cluster_id": "c", "controller_id": 1}
    return frames.encode_response(CODEC, "Metadata", version, correlation + correlation_shift, body)


def test_a_silent_broker_times_out_with_a_diagnosis():
    broker = FakeBroker(lambda payload: None)
    with pytest.raises(ResponseTimeout) as caught:
        broker.connection(timeout=0.3).request("Metadata", 12, METADATA)
    assert "no response within 0.3s" in str(caught.value)
    assert caught.value.exchange.problem == "timeout"


def test_a_broker_that_closes_is_reported_as_disconnected():
    broker = FakeBroker(lambda payload: b"CLOSE")
    with pytest.raises(Disconnected, match="closed the connection"):
        broker.connection().request("Metadata", 12, METADATA)


def test_garbage_is_reported_with_the_bytes_that_came_back():
    broker = FakeBroker(lambda payload: b"\x00\x00\x00\x06" + payload[4:8] + b"\xff\xff")
    with pytest.raises(GarbageResponse) as caught:
        broker.connection().request("Metadata", 12, METADATA)
    assert "does not decode" in str(caught.value)
    assert caught.value.exchange.response_bytes.endswith(b"\xff\xff")


def test_an_impossible_frame_size_is_garbage():
    broker = FakeBroker(lambda payload: b"\xff\xff\xff\xf0rest")
    with pytest.raises(GarbageResponse, match="impossible frame size"):
        broker.connection().request("Metadata", 12, METADATA)


def test_a_response_to_no_request_is_garbage():
    broker = FakeBroker(lambda payload: metadata_answer(payload, correlation_shift=100))
    with pytest.raises(GarbageResponse, match="matches no request in flight"):
        broker.connection().request("Metadata", 12, METADATA)


def test_pipelined_requests_are_matched_by_correlation_id():
    held: list[bytes] = []

    def answer_in_reverse(payload):
        held.append(payload)
        if len(held) == 3:
            return b"".join(metadata_answer(p) for p in reversed(held))
        return None

    connection = FakeBroker(answer_in_reverse).connection()
    sent = [connection.send("Metadata", 12, METADATA) for _ in range(3)]
    for exchange in sent:
        connection.receive(exchange)
        assert exchange.response["brokers"][0]["node_id"] == 1
    assert [e.correlation_id for e in connection.transcript.exchanges] == [1, 2, 3]


def test_transcripts_never_hold_sasl_secrets():
    transcript = Transcript()
    from conformance.client.transcript import Exchange

    transcript.add(Exchange("c", "SaslAuthenticate", 36, 2, 1, {"auth_bytes": b"\0user\0secret"},
                            b"...secret...", 0.0))
    text = str(transcript.to_json())
    assert "secret" not in text and "<redacted>" in text
