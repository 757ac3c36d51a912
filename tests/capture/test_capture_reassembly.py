"""TCP reassembly and Kafka framing on generated captures: every frame comes back byte for byte."""

from __future__ import annotations

import os
import random

import pytest

from conformance.capture.pcap import CaptureFileError, iter_packets, read_capture
from conformance.capture.tcp import ETHERNET, LINUX_SLL, LINUX_SLL2, NULL_LOOPBACK, RAW_IP, HalfStream
from conformance.capture.writer import PcapWriter, SyntheticConnection, write_packets
from conformance.protocol import frames
from conformance.protocol.codec import default_codec
from conformance.protocol.records import Record, RecordBatch, encode_batch

CODEC = default_codec()


def exchange_pair(correlation_id: int, value_size: int = 16) -> tuple[bytes, bytes]:
    """A Produce v9 request carrying one batch, and its response."""
    batch = encode_batch(RecordBatch(producer_id=7, producer_epoch=0, base_sequence=0,
                                     records=[Record(value=os.urandom(value_size))]))
    request = frames.encode_request(CODEC, "Produce", 9, correlation_id, {
        "transactional_id": None, "acks": -1, "timeout_ms": 30000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": batch}]}]})
    response = frames.encode_response(CODEC, "Produce", 9, correlation_id, {
        "responses": [{"name": "t", "partition_responses": [{
            "index": 0, "error_code": 0, "base_offset": correlation_id, "log_append_time_ms": -1,
            "log_start_offset": 0, "record_errors": [], "error_message": None}]}], "throttle_time_ms": 0})
    return request, response


def pairs(count: int) -> list[tuple[bytes, bytes]]:
    return [exchange_pair(correlation_id) for correlation_id in range(1, count + 1)]


def cut(connection: SyntheticConnection, from_client: bool, data: bytes, sizes: list[int]) -> list[tuple[int, bytes]]:
    """(sequence, payload) pieces of ``data`` with the given sizes, cycling; advances the connection."""
    pieces, position, index = [], 0, 0
    while position < len(data):
        size = sizes[index % len(sizes)]
        piece = data[position:position + size]
        pieces.append((connection.next[from_client] + position, piece))
        position += len(piece)
        index += 1
    connection.next[from_client] += len(data)
    return pieces


def packets_of(connection: SyntheticConnection, from_client: bool, pieces: list[tuple[int, bytes]]) -> list[bytes]:
    return [connection.packet(from_client, sequence, payload) for sequence, payload in pieces]


def read_back(tmp_path, packets: list[bytes], **options):
    path = tmp_path / "generated.pcap"
    write_packets(path, packets, linktype=options.pop("linktype", ETHERNET), format=options.pop("format", "pcap"))
    return read_capture(path, **options)


def assert_frames(capture, expected: list[tuple[bytes, bytes]]) -> None:
    assert [exchange.request_bytes for exchange in capture.exchanges] == [request for request, _ in expected]
    assert [exchange.response_bytes for exchange in capture.exchanges] == [response for _, response in expected]
    assert all(not exchange.problems for exchange in capture.exchanges), [e.problems for e in capture.exchanges]
    assert capture.notes == []


def test_tiny_segments(tmp_path):
    expected = pairs(5)
    connection = SyntheticConnection()
    packets = connection.handshake()
    for request, response in expected:
        packets += packets_of(connection, True, cut(connection, True, request, [1, 3, 2, 7]))
        packets += packets_of(connection, False, cut(connection, False, response, [5, 1]))
    assert_frames(read_back(tmp_path, packets, ports=[9092]), expected)


def test_many_frames_coalesced_in_one_segment(tmp_path):
    expected = pairs(200)
    connection = SyntheticConnection()
    requests = b"".join(request for request, _ in expected)
    responses = b"".join(response for _, response in expected)
    # A frame boundary falls inside the second segment of each direction, not at its edges.
    packets = connection.handshake() + connection.segments(True, requests, len(requests) // 2 + 3) \
        + connection.segments(False, responses, len(responses) // 3 + 1)
    capture = read_back(tmp_path, packets, ports=[9092])
    assert_frames(capture, expected)
    assert {exchange.request_packet for exchange in capture.exchanges} == {4, 5}  # the packets completing them


def test_reordered_segments(tmp_path):
    expected = pairs(30)
    connection = SyntheticConnection()
    handshake = connection.handshake()
    shuffler = random.Random(98)
    client = cut(connection, True, b"".join(request for request, _ in expected), [37, 11, 90])
    server = cut(connection, False, b"".join(response for _, response in expected), [23, 64])
    shuffler.shuffle(client)
    shuffler.shuffle(server)
    packets = handshake + packets_of(connection, True, client) + packets_of(connection, False, server)
    assert_frames(read_back(tmp_path, packets, ports=[9092]), expected)


def test_duplicated_and_retransmitted_segments(tmp_path):
    expected = pairs(20)
    connection = SyntheticConnection()
    handshake = connection.handshake()
    client = cut(connection, True, b"".join(request for request, _ in expected), [50])
    server = cut(connection, False, b"".join(response for _, response in expected), [40])
    doubled = [piece for piece in client for _ in range(2)]  # every segment twice in a row
    retransmitted = server + server[3:9]  # a burst sent again after everything arrived
    keepalive = [(client[-1][0] + len(client[-1][1]) - 1, client[-1][1][-1:])]  # one old byte, as probes do
    packets = (handshake + packets_of(connection, True, doubled + keepalive)
               + packets_of(connection, False, retransmitted))
    assert_frames(read_back(tmp_path, packets, ports=[9092]), expected)


def test_overlapping_retransmission(tmp_path):
    expected = pairs(12)
    connection = SyntheticConnection()
    handshake = connection.handshake()
    data = b"".join(request for request, _ in expected)
    start = connection.next[True]
    connection.next[True] += len(data)
    # [0,100) arrives, [150,300) arrives early, then a retransmission re-cut as [50,200) fills the gap
    # overlapping both, then the rest with one more overlap.
    pieces = [(0, 100), (150, 300), (50, 200), (250, 700), (600, len(data))]
    client = [(start + low, data[low:high]) for low, high in pieces]
    response_data = b"".join(response for _, response in expected)
    packets = handshake + packets_of(connection, True, client) + connection.segments(False, response_data, 333)
    assert_frames(read_back(tmp_path, packets, ports=[9092]), expected)


@pytest.mark.parametrize("file_format", ["pcap", "pcapng"])
def test_multi_megabyte_frame(tmp_path, file_format):
    request, response = exchange_pair(1, value_size=3 * 1024 * 1024)
    assert len(request) > 3_000_000
    connection = SyntheticConnection()
    handshake = connection.handshake()
    segments = cut(connection, True, request, [65483])  # loopback's largest IPv4 segments
    segments[4], segments[5] = segments[5], segments[4]
    packets = handshake + packets_of(connection, True, segments) + connection.segments(False, response)
    capture = read_back(tmp_path, packets, ports=[9092], format=file_format)
    assert_frames(capture, [(request, response)])
    assert max(len(data) for _, _, data in iter_packets(tmp_path / "generated.pcap")) > 65535
    partition = capture.exchanges[0].request["topic_data"][0]["partition_data"][0]
    assert len(partition["records"]) > 3 * 1024 * 1024


@pytest.mark.parametrize("linktype", [ETHERNET, LINUX_SLL, LINUX_SLL2, RAW_IP, NULL_LOOPBACK])
@pytest.mark.parametrize("address", ["127.0.0.1", "::1"])
def test_link_types_and_ip_versions(tmp_path, linktype, address):
    expected = pairs(3)
    connection = SyntheticConnection(client=(address, 51000), server=(address, 9092))
    packets = connection.handshake()
    for request, response in expected:
        packets += connection.segments(True, request, 40) + connection.segments(False, response)
    capture = read_back(tmp_path, packets, ports=[9092], linktype=linktype, format="pcapng")
    assert_frames(capture, expected)
    assert capture.exchanges[0].endpoints == ((address, 51000), (address, 9092))
    shown = f"[{address}]" if ":" in address else address
    assert capture.exchanges[0].connection == f"{shown}:51000>{shown}:9092"


def test_decoded_bodies_match_the_protocol_core(tmp_path):
    expected = pairs(2)
    connection = SyntheticConnection()
    packets = connection.handshake()
    for request, response in expected:
        packets += connection.segments(True, request) + connection.segments(False, response)
    capture = read_back(tmp_path, packets, ports=[9092])
    for exchange, (request, response) in zip(capture.exchanges, expected):
        assert (exchange.request_header, exchange.request) == frames.decode_request(CODEC, request[4:])
        assert (exchange.response_header, exchange.response) == frames.decode_response(CODEC, "Produce", 9, response[4:])
        assert (exchange.api, exchange.version, exchange.correlation_id) == ("Produce", 9, exchange.request_header["correlation_id"])


def test_kafka_found_without_ports_even_without_the_handshake(tmp_path):
    expected = pairs(4)
    kafka = SyntheticConnection(client=("127.0.0.1", 52000), server=("127.0.0.1", 45000))
    other = SyntheticConnection(client=("127.0.0.1", 52001), server=("127.0.0.1", 8080))
    packets = []  # no SYN: the capture began after both connections opened; the server speaks first on one
    packets += other.segments(False, b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
    for request, response in expected:
        packets += kafka.segments(True, request) + kafka.segments(False, response)
    packets += other.segments(True, b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
    capture = read_back(tmp_path, packets)
    assert [exchange.request_bytes for exchange in capture.exchanges] == [request for request, _ in expected]
    assert [exchange.response_bytes for exchange in capture.exchanges] == [response for _, response in expected]
    assert all(exchange.connection == "127.0.0.1:52000>127.0.0.1:45000" for exchange in capture.exchanges)
    assert any("8080" in note and "not" in note for note in capture.notes)


def test_closes_and_unanswered_requests(tmp_path):
    (request, response), (unanswered, _) = pairs(2)
    connection = SyntheticConnection()
    packets = (connection.handshake() + connection.segments(True, request) + connection.segments(False, response)
               + connection.segments(True, unanswered) + connection.close(by_client=False, reset=True))
    capture = read_back(tmp_path, packets, ports=[9092])
    assert [(event.by, event.how) for event in capture.events] == [("server", "RST")]
    assert capture.exchanges[0].problems == []
    assert capture.exchanges[1].response_bytes is None
    assert capture.exchanges[1].problems == ["no response: the server closed the connection (RST)"]


def test_unknown_api_and_orphan_response_are_kept_raw(tmp_path):
    unknown = frames.SIZE.pack(14) + bytes.fromhex("2710 0000 00000005 0002") + b"id" + b"\x00\x00"
    orphan = frames.SIZE.pack(8) + bytes.fromhex("00000063 00000000")
    connection = SyntheticConnection()
    packets = connection.handshake() + connection.segments(True, unknown) + connection.segments(False, orphan)
    capture = read_back(tmp_path, packets, ports=[9092])
    first, second = capture.exchanges
    assert (first.api, first.api_key, first.correlation_id, first.request_bytes) == ("Unknown(10000)", 10000, 5, unknown)
    assert first.request is None and "cannot decode Unknown(10000) v0" in first.problems[0]
    assert (second.correlation_id, second.response_bytes) == (99, orphan)
    assert second.problems == ["response with correlation id 99 matches no request"]


def test_sequence_numbers_wrap_around(tmp_path):
    expected = pairs(10)
    connection = SyntheticConnection(client_sequence=(1 << 32) - 300, server_sequence=(1 << 32) - 5)
    packets = connection.handshake()
    for request, response in expected:
        packets += connection.segments(True, request, 64) + connection.segments(False, response, 64)
    assert_frames(read_back(tmp_path, packets, ports=[9092]), expected)


def test_lost_bytes_are_reported(tmp_path):
    expected = pairs(3)
    connection = SyntheticConnection()
    handshake = connection.handshake()
    client = cut(connection, True, b"".join(request for request, _ in expected), [60])
    del client[2]  # never captured
    capture = read_back(tmp_path, handshake + packets_of(connection, True, client), ports=[9092])
    assert any("60 bytes never captured" in note for note in capture.notes)


def test_half_stream_drops_what_it_already_delivered():
    stream = HalfStream()
    stream.next_sequence = 100
    assert stream.accept(110, b"klm") == b""
    assert stream.accept(100, b"abcde") == b"abcde"
    assert stream.accept(103, b"defghij") == b"fghijklm"  # overlap trimmed, then the waiting segment
    assert stream.accept(100, b"abc") == b""
    assert stream.missing is None


def test_not_a_capture_file(tmp_path):
    path = tmp_path / "text.pcap"
    path.write_text("hello")
    with pytest.raises(CaptureFileError):
        list(iter_packets(path))


def test_a_file_cut_mid_record_keeps_the_whole_records(tmp_path):
    expected = pairs(3)
    connection = SyntheticConnection()
    packets = connection.handshake()
    for request, response in expected:
        packets += connection.segments(True, request) + connection.segments(False, response)
    path = tmp_path / "cut.pcap"
    write_packets(path, packets)
    path.write_bytes(path.read_bytes()[:-10])
    assert len(list(iter_packets(path))) == len(packets) - 1


@pytest.mark.parametrize("file_format", ["pcap", "pcapng"])
@pytest.mark.parametrize("nanoseconds", [False, True])
def test_timestamps_in_every_format_and_resolution(tmp_path, file_format, nanoseconds):
    path = tmp_path / "times.cap"
    moments = [1_700_000_000.123456, 1_700_000_001.5]
    with PcapWriter(path, format=file_format, nanoseconds=nanoseconds) as writer:
        for moment in moments:
            writer.write(moment, b"\0" * 60)
    read = [timestamp for _, timestamp, _ in iter_packets(path)]
    assert read == pytest.approx(moments, abs=1e-6)
