"""A capture made packet by packet for the analysis tests, so every decoded number is known."""

from __future__ import annotations

from conformance.capture.writer import SyntheticConnection, write_packets
from conformance.protocol import frames
from conformance.protocol.codec import default_codec

CODEC = default_codec()


def write_capture(path) -> None:
    """An InitProducerId exchange and an EndTxn answered INVALID_TXN_STATE (48); the server closes."""
    connection = SyntheticConnection()
    packets = connection.handshake()
    init = frames.encode_request(CODEC, "InitProducerId", 3, 1, {
        "transactional_id": "t", "transaction_timeout_ms": 1000, "producer_id": -1, "producer_epoch": -1})
    init_answer = frames.encode_response(CODEC, "InitProducerId", 3, 1, {
        "throttle_time_ms": 0, "error_code": 0, "producer_id": 7, "producer_epoch": 0})
    end = frames.encode_request(CODEC, "EndTxn", 3, 2, {
        "transactional_id": "t", "producer_id": 7, "producer_epoch": 0, "committed": True})
    end_answer = frames.encode_response(CODEC, "EndTxn", 3, 2, {"throttle_time_ms": 0, "error_code": 48})
    for request, response in ((init, init_answer), (end, end_answer)):
        packets += connection.segments(True, request) + connection.segments(False, response)
    packets += connection.close(by_client=False)
    write_packets(path, packets, format="pcapng", start=1_795_400_000.0, step=0.001)
