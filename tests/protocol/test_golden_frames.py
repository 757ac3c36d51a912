"""Frames captured from Apache Kafka 4.4.0 (tools/capture_golden.py) decode and re-encode unchanged.

The responses were written by the Java broker, and some requests by librdkafka and by the broker
itself (transaction markers, AddPartitionsToTxn verification): bytes our codec did not write, so
they check it against the real thing rather than against itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.protocol import frames
from conformance.protocol.codec import default_codec
from conformance.protocol.compression import Compression
from conformance.protocol.records import decode_batches, encode_batch

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden" / "kafka-4.4.0.json"
CODEC = default_codec()
EXCHANGES = json.loads(GOLDEN.read_text(encoding="utf-8"))["exchanges"]
IDS = [f"{index:03d}-{entry['api']}-v{entry['version']}-{entry['source'].split()[-1]}"
       for index, entry in enumerate(EXCHANGES)]


def payload(frame_hex: str) -> bytes:
    frame = bytes.fromhex(frame_hex)
    assert frames.SIZE.unpack_from(frame)[0] == len(frame) - 4
    return frame[4:]


def record_fields(message):
    """Every ``records`` value anywhere in a decoded message."""
    if isinstance(message, dict):
        for key, value in message.items():
            if key == "records" and isinstance(value, bytes):
                yield value
            else:
                yield from record_fields(value)
    elif isinstance(message, list):
        for item in message:
            yield from record_fields(item)


@pytest.mark.parametrize("entry", EXCHANGES, ids=IDS)
def test_request_decodes_and_encodes_to_the_same_bytes(entry):
    request = payload(entry["request"])
    header, body = frames.decode_request(CODEC, request)
    assert (header["request_api_key"], header["request_api_version"]) == (entry["api_key"], entry["version"])
    header_version = frames.request_header_version(CODEC, entry["api_key"], entry["version"])
    encoded = CODEC.encode_message("RequestHeader", header_version, header) \
        + CODEC.encode(entry["api"], entry["version"], "request", body)
    assert encoded == request


@pytest.mark.parametrize("entry", EXCHANGES, ids=IDS)
def test_response_decodes_and_encodes_to_the_same_bytes(entry):
    response = payload(entry["response"])
    header, body = frames.decode_response(CODEC, entry["api"], entry["version"], response)
    assert header["correlation_id"] == frames.peek_request_header(payload(entry["request"]))[2]
    header_version = frames.response_header_version(CODEC, entry["api_key"], entry["version"])
    header_bytes = CODEC.encode_message("ResponseHeader", header_version, header)
    assert response.startswith(header_bytes)
    assert CODEC.encode(entry["api"], entry["version"], "response", body) == response[len(header_bytes):]


@pytest.mark.parametrize("entry", [e for e in EXCHANGES if e["api"] in ("Produce", "Fetch")],
                         ids=[i for i, e in zip(IDS, EXCHANGES) if e["api"] in ("Produce", "Fetch")])
def test_record_batches_have_valid_crcs_and_encode_to_the_same_bytes(entry):
    if entry["api"] == "Produce":
        message = frames.decode_request(CODEC, payload(entry["request"]))[1]
    else:
        message = frames.decode_response(CODEC, entry["api"], entry["version"], payload(entry["response"]))[1]
    for records in record_fields(message):
        batches = decode_batches(records)
        assert batches.truncated_tail == 0
        assert all(batch.crc_valid for batch in batches)
        if all(batch.compression == Compression.NONE for batch in batches):
            assert b"".join(encode_batch(batch) for batch in batches) == records


def test_the_capture_covers_a_whole_transaction_from_several_writers():
    apis = {entry["api"] for entry in EXCHANGES}
    assert {"ApiVersions", "Metadata", "CreateTopics", "FindCoordinator", "InitProducerId",
            "AddPartitionsToTxn", "Produce", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn",
            "WriteTxnMarkers", "Fetch", "ListOffsets", "DescribeTransactions", "ListTransactions",
            "OffsetFetch"} <= apis
    sources = {entry["source"] for entry in EXCHANGES}
    assert {"client id librdkafka-producer", "client id broker-1-txn-marker-sender"} <= sources
    fetched = [frames.decode_response(CODEC, "Fetch", entry["version"], payload(entry["response"]))[1]
               for entry in EXCHANGES if entry["api"] == "Fetch"]
    partitions = [partition for body in fetched for topic in body["responses"] for partition in topic["partitions"]]
    assert any(partition["aborted_transactions"] for partition in partitions)
    batches = [batch for partition in partitions for batch in decode_batches(partition["records"] or b"")]
    assert any(batch.is_control for batch in batches) and any(batch.is_transactional for batch in batches)
