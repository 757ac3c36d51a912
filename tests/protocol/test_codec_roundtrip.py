"""The codec against the specs: spec-driven round trips, unknown tagged fields, headers, malformations."""

from __future__ import annotations

import copy
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from message_strategies import UNKNOWN_TAGGED, message_strategy, normalize, present_fields

from conformance.protocol import frames
from conformance.protocol.codec import Codec, default_codec
from conformance.protocol.exceptions import DecodeError, EncodeError
from conformance.protocol.primitives import Raw
from conformance.protocol.schema import FieldSpec, VersionRange, bundled_registry

REGISTRY = bundled_registry()
CODEC = default_codec()
SPECS = {(api.name, direction): getattr(api, direction)
         for api in REGISTRY.apis() for direction in ("request", "response")}
FLEXIBLE = [(name, direction, version) for (name, direction), spec in SPECS.items()
            for version in spec.versions() if version in spec.flexible_versions]
QUICK = settings(max_examples=25, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_strategies: dict[tuple[str, int], st.SearchStrategy] = {}


def strategy_for(spec, version: int) -> st.SearchStrategy[dict]:
    key = (spec.name, version)
    if key not in _strategies:
        _strategies[key] = message_strategy(spec, version)
    return _strategies[key]


@pytest.mark.parametrize("api, direction", sorted(SPECS), ids=[f"{a}-{d}" for a, d in sorted(SPECS)])
@QUICK
@given(data=st.data())
def test_every_version_round_trips(api, direction, data):
    spec = SPECS[api, direction]
    for version in spec.versions():
        message = data.draw(strategy_for(spec, version), label=f"v{version}")
        encoded = CODEC.encode(api, version, direction, message)
        decoded, end = CODEC.decode(api, version, direction, encoded)
        assert end == len(encoded), f"v{version}: decoding stopped at {end} of {len(encoded)} bytes"
        assert decoded == normalize(spec, version, message), f"v{version}"
        assert CODEC.encode(api, version, direction, decoded) == encoded, f"v{version}"


@pytest.mark.parametrize("api, direction", sorted(SPECS), ids=[f"{a}-{d}" for a, d in sorted(SPECS)])
def test_an_empty_message_decodes_as_every_default(api, direction):
    spec = SPECS[api, direction]
    for version in spec.versions():
        decoded, _ = CODEC.decode(api, version, direction, CODEC.encode(api, version, direction, {}))
        assert decoded == normalize(spec, version, {}), f"v{version}"


def test_decoded_defaults_are_not_shared_between_messages():
    encoded = CODEC.encode("Fetch", 18, "response", {"responses": [{"partitions": [{}]}]})
    first, _ = CODEC.decode("Fetch", 18, "response", encoded)
    first["node_endpoints"].append({"node_id": 1})
    first["responses"][0]["partitions"][0]["current_leader"]["leader_id"] = 5
    second, _ = CODEC.decode("Fetch", 18, "response", encoded)
    assert second["node_endpoints"] == []
    assert second["responses"][0]["partitions"][0]["current_leader"] == {"leader_id": -1, "leader_epoch": -1}


def test_a_tagged_struct_equal_to_its_default_is_left_out():
    spelt_out = {"responses": [{"partitions": [{"current_leader": {"leader_id": -1, "leader_epoch": -1}}]}]}
    left_out = {"responses": [{"partitions": [{}]}]}
    assert CODEC.encode("Fetch", 18, "response", spelt_out) == CODEC.encode("Fetch", 18, "response", left_out)
    changed = {"responses": [{"partitions": [{"current_leader": {"leader_id": 3}}]}]}
    assert len(CODEC.encode("Fetch", 18, "response", changed)) > len(CODEC.encode("Fetch", 18, "response", left_out))


def test_a_spec_replaced_at_run_time_is_used_by_the_next_call():
    registry = bundled_registry()
    codec = Codec(registry)
    message = {"transactional_id": "t", "transaction_timeout_ms": 1}
    before = codec.encode("InitProducerId", 1, "request", message)
    codec.decode("InitProducerId", 1, "request", before)  # both directions now cached
    changed = copy.deepcopy(registry.message("InitProducerIdRequest"))
    changed.fields.append(FieldSpec(name="DraftFlag", type="int8", versions=VersionRange.parse("1+"), default="7"))
    registry.add(changed)
    assert codec.encode("InitProducerId", 1, "request", message) == before + b"\x07"
    assert codec.decode("InitProducerId", 1, "request", before + b"\x07")[0]["draft_flag"] == 7


# ------------------------------------------------------------------------------ unknown tagged fields
def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(data: bytes, offset: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, offset


def read_tagged_section(data: bytes, offset: int) -> list[tuple[int, bytes]]:
    count, offset = read_uvarint(data, offset)
    entries = []
    for _ in range(count):
        tag, offset = read_uvarint(data, offset)
        size, offset = read_uvarint(data, offset)
        entries.append((tag, data[offset: offset + size]))
        offset += size
    assert offset == len(data)
    return entries


def write_tagged_section(entries: list[tuple[int, bytes]]) -> bytes:
    return uvarint(len(entries)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in entries)


@pytest.mark.parametrize("api, direction, version", FLEXIBLE, ids=[f"{a}-{d}-v{v}" for a, d, v in FLEXIBLE])
def test_unknown_top_level_tagged_field_survives_decode_and_encode(api, direction, version):
    spec = SPECS[api, direction]
    known = {field.tag for field, tagged in present_fields(spec, version, spec.fields) if tagged}
    unknown_tag = 300 + max(known, default=0)  # two-byte varint, after every known tag
    plain = CODEC.encode(api, version, direction, {})
    assert plain.endswith(b"\x00")  # the top-level tagged section comes last, empty here
    injected = plain[:-1] + write_tagged_section([(unknown_tag, b"\x07kept")])
    decoded, end = CODEC.decode(api, version, direction, injected)
    assert end == len(injected)
    assert decoded[UNKNOWN_TAGGED] == {unknown_tag: b"\x07kept"}
    assert CODEC.encode(api, version, direction, decoded) == injected


def test_unknown_tagged_field_is_written_back_between_known_ones_in_tag_order():
    message = {"cluster_id": "cluster", "replica_state": {"replica_id": 4, "replica_epoch": 9}}
    encoded = CODEC.encode("Fetch", 15, "request", message)
    prefix_length = len(CODEC.encode("Fetch", 15, "request", {})) - 1
    known = read_tagged_section(encoded, prefix_length)
    assert [tag for tag, _ in known] == [0, 1]
    unknown = CODEC.encode("Fetch", 15, "request", {**message, UNKNOWN_TAGGED: {5: b"x", 0x81: b"yz"}})
    injected = encoded[:prefix_length] + write_tagged_section([*known, (5, b"x"), (0x81, b"yz")])
    assert unknown == injected
    decoded, _ = CODEC.decode("Fetch", 15, "request", injected)
    assert decoded["cluster_id"] == "cluster"
    assert decoded[UNKNOWN_TAGGED] == {5: b"x", 0x81: b"yz"}


def test_unknown_tagged_field_in_a_nested_struct_is_kept():
    message = {"transactions": [{"transactional_id": "t", "producer_id": 1, "producer_epoch": 2,
                                 "verify_only": False, "topics": [], UNKNOWN_TAGGED: {9: b"\x01\x02"}}]}
    encoded = CODEC.encode("AddPartitionsToTxn", 4, "request", message)
    # transactions: 02 (one item); transactional_id: 02 't'; producer_id int64; producer_epoch int16;
    # verify_only 00; topics: 01 (empty); the item's tagged section; then the top level's: 00
    item = b"\x02t" + struct.pack(">qh", 1, 2) + b"\x00" + b"\x01" + b"\x01\x09\x02\x01\x02"
    assert encoded == b"\x02" + item + b"\x00"
    decoded, _ = CODEC.decode("AddPartitionsToTxn", 4, "request", encoded)
    assert decoded["transactions"][0][UNKNOWN_TAGGED] == {9: b"\x01\x02"}


# ------------------------------------------------------------------------------ headers
def test_request_header_v1_for_a_non_flexible_version():
    frame = frames.encode_request(CODEC, "InitProducerId", 1, 7, {"transactional_id": None,
                                                                  "transaction_timeout_ms": 60000})
    header = struct.pack(">hhih", 22, 1, 7, 17) + b"kafka-conformance"
    body = b"\xff\xff" + struct.pack(">i", 60000)
    assert frame == struct.pack(">i", len(header + body)) + header + body


def test_request_header_v2_keeps_an_int16_client_id_and_adds_tagged_fields():
    frame = frames.encode_request(CODEC, "InitProducerId", 4, 7, {"transactional_id": "t",
                                                                  "transaction_timeout_ms": 5},
                                  client_id="me")
    header = struct.pack(">hhih", 22, 4, 7, 2) + b"me" + b"\x00"
    body = b"\x02t" + struct.pack(">iqh", 5, -1, -1) + b"\x00"
    assert frame == struct.pack(">i", len(header + body)) + header + body
    decoded_header, decoded_body = frames.decode_request(CODEC, frame[4:])
    assert decoded_header == {"request_api_key": 22, "request_api_version": 4, "correlation_id": 7,
                              "client_id": "me"}
    assert decoded_body["transactional_id"] == "t"


def test_request_header_null_client_id_is_minus_one():
    frame = frames.encode_request(CODEC, "ApiVersions", 3, 1, {}, client_id=None)
    assert frame[4:15] == struct.pack(">hhihb", 18, 3, 1, -1, 0)
    assert frames.decode_request(CODEC, frame[4:])[0]["client_id"] is None


def test_request_header_v0_does_not_exist_in_kafka_4():
    # v0 (no client id) served only ControlledShutdown v0, which Kafka 4 removed
    assert {frames.request_header_version(CODEC, api.api_key, version)
            for api in REGISTRY.apis() for version in api.versions()} == {1, 2}
    with pytest.raises(EncodeError):
        CODEC.encode_message("RequestHeader", 0, {})
    with pytest.raises(DecodeError):
        CODEC.decode_message("RequestHeader", 0, b"\x00" * 8)


def test_unknown_api_gets_header_v1():
    assert frames.request_header_version(CODEC, 999, 0) == 1


@pytest.mark.parametrize("version", [0, 3, 4])
def test_api_versions_response_always_has_header_v0(version):
    body = {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 12}]}
    frame = frames.encode_response(CODEC, "ApiVersions", version, 42, body)
    assert frame[4:8] == struct.pack(">i", 42)
    assert frame[8:] == CODEC.encode("ApiVersions", version, "response", body)
    header, decoded = frames.decode_response(CODEC, "ApiVersions", version, frame[4:])
    assert header == {"correlation_id": 42}
    assert decoded["api_keys"][0]["max_version"] == 12


def test_flexible_response_has_header_v1_and_older_ones_v0():
    body = {"error_code": 0, "producer_id": 5, "producer_epoch": 1}
    flexible = frames.encode_response(CODEC, "InitProducerId", 4, 9, body)
    assert flexible[4:9] == struct.pack(">i", 9) + b"\x00"
    assert flexible[9:] == CODEC.encode("InitProducerId", 4, "response", body)
    older = frames.encode_response(CODEC, "InitProducerId", 1, 9, body)
    assert older[4:8] == struct.pack(">i", 9)
    assert older[8:] == CODEC.encode("InitProducerId", 1, "response", body)
    assert frames.decode_response(CODEC, "InitProducerId", 4, flexible[4:])[1]["producer_id"] == 5


def test_response_header_tagged_fields_are_kept():
    payload = struct.pack(">i", 9) + write_tagged_section([(3, b"ab")]) \
        + CODEC.encode("InitProducerId", 4, "response", {})
    header, _ = frames.decode_response(CODEC, "InitProducerId", 4, payload)
    assert header == {"correlation_id": 9, UNKNOWN_TAGGED: {3: b"ab"}}


# ------------------------------------------------------------------------------ malformations
BODY = {"transactional_id": None, "transaction_timeout_ms": 1000}


def well_formed() -> bytes:
    return frames.encode_request(CODEC, "InitProducerId", 1, 3, BODY)


def test_size_delta_changes_only_the_size_prefix():
    frame = frames.encode_request(CODEC, "InitProducerId", 1, 3, BODY,
                                  malformation=frames.Malformation(size_delta=-5))
    assert frame[4:] == well_formed()[4:]
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4 - 5


def test_truncate_keeps_that_many_bytes_of_the_frame():
    frame = frames.encode_request(CODEC, "InitProducerId", 1, 3, BODY,
                                  malformation=frames.Malformation(truncate=6))
    assert frame == well_formed()[:6]


def test_trailing_bytes_are_counted_by_the_size_prefix_and_refused_on_decode():
    frame = frames.encode_request(CODEC, "InitProducerId", 1, 3, BODY,
                                  malformation=frames.Malformation(trailing=b"\xde\xad"))
    assert frame[4:] == well_formed()[4:] + b"\xde\xad"
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    with pytest.raises(DecodeError, match="2 bytes left over"):
        frames.decode_request(CODEC, frame[4:])


def test_header_overrides_write_an_unknown_api_key_and_version():
    frame = frames.encode_request(CODEC, "InitProducerId", 1, 3, BODY,
                                  malformation=frames.Malformation(header={"api_key": 999, "api_version": 77}))
    assert frame[4:8] == struct.pack(">hh", 999, 77)
    assert frame[8:] == well_formed()[8:]
    with pytest.raises(DecodeError):
        frames.decode_request(CODEC, frame[4:])


def test_raw_header_override_is_written_verbatim():
    frame = frames.encode_request(CODEC, "InitProducerId", 1, 3, BODY, malleable=True,
                                  malformation=frames.Malformation(header={"client_id": Raw(b"\x7f\xffx")}))
    assert frame[12:15] == b"\x7f\xffx"
    assert frame[15:] == CODEC.encode("InitProducerId", 1, "request", BODY)


def test_raw_body_field_is_written_verbatim():
    body = {**BODY, "transaction_timeout_ms": Raw(b"\x01")}
    assert CODEC.encode("InitProducerId", 1, "request", body, malleable=True) == b"\xff\xff\x01"

