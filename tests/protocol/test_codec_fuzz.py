"""Fuzzing the decoders: whatever the bytes, decoding gives a message or a located DecodeError.

Random bytes rarely get past the first length field, so most inputs are valid encodings of
spec-generated messages with bits flipped, bytes inserted or deleted, or the end cut off. Anything
that does decode must also encode again, and decode to the same message from its new encoding.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from message_strategies import message_strategy

from conformance.protocol import frames
from conformance.protocol.codec import default_codec
from conformance.protocol.exceptions import DecodeError
from conformance.protocol.schema import bundled_registry

REGISTRY = bundled_registry()
CODEC = default_codec()
SPECS = {(api.name, direction): getattr(api, direction)
         for api in REGISTRY.apis() for direction in ("request", "response")}
IDS = [f"{api}-{direction}" for api, direction in SPECS]
QUICK = settings(max_examples=25, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_messages: dict[tuple[str, int], st.SearchStrategy] = {}


def valid_encoding(api: str, direction: str, version: int) -> st.SearchStrategy[bytes]:
    key = (f"{api}{direction}", version)
    if key not in _messages:
        spec = SPECS[api, direction]
        _messages[key] = message_strategy(spec, version).map(
            lambda message: CODEC.encode(api, version, direction, message))
    return _messages[key]


@st.composite
def mutated(draw, original: bytes) -> bytes:
    """``original`` with bits flipped, bytes inserted or deleted, or its end cut off."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        position = draw(st.integers(0, len(data)))
        if kind == "flip" and position < len(data):
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[position: position + draw(st.integers(1, 4))]
        else:
            del data[position:]
    return bytes(data)


def check_body(api: str, version: int, direction: str, data: bytes) -> None:
    try:
        decoded, end = CODEC.decode(api, version, direction, data)
    except DecodeError as error:
        assert_located(error, data)
        assert error.path, f"no field path in {error!r}"
        return
    assert end <= len(data)
    encoded = CODEC.encode(api, version, direction, decoded)
    assert CODEC.decode(api, version, direction, encoded) == (decoded, len(encoded))


def assert_located(error: DecodeError, data: bytes) -> None:
    assert isinstance(error.offset, int) and 0 <= error.offset <= len(data), f"offset of {error!r}"


@pytest.mark.parametrize("api, direction", list(SPECS), ids=IDS)
@QUICK
@given(data=st.data())
def test_random_bytes_into_every_body_decoder(api, direction, data):
    for version in SPECS[api, direction].versions():
        check_body(api, version, direction, data.draw(st.binary(max_size=80), label=f"v{version}"))


@pytest.mark.parametrize("api, direction", list(SPECS), ids=IDS)
@QUICK
@given(data=st.data())
def test_mutated_encodings_into_every_body_decoder(api, direction, data):
    for version in SPECS[api, direction].versions():
        original = data.draw(valid_encoding(api, direction, version), label=f"v{version} original")
        check_body(api, version, direction, data.draw(mutated(original), label=f"v{version} mutated"))


@pytest.mark.parametrize("api, direction", list(SPECS), ids=IDS)
@QUICK
@given(data=st.data())
def test_fast_code_agrees_with_careful_code(api, direction, data):
    """The fast decoder and encoder give what the careful ones give, or fail where they fail."""
    spec = SPECS[api, direction]
    for version in spec.versions():
        compiled = CODEC.compiled(spec, version)
        original = data.draw(valid_encoding(api, direction, version), label=f"v{version} original")
        buffer = data.draw(st.one_of(st.just(original), mutated(original)), label=f"v{version} input")
        fast, careful = outcome(compiled.decode, buffer, 0, False), outcome(compiled.careful_decode, buffer, 0)
        assert fast == careful, f"v{version}"
        if careful is not FAILED:
            message = careful[0]
            assert compiled.encode(message, False) == compiled.careful_encode(message), f"v{version}"


FAILED = "failed"


def outcome(function, *arguments):
    """What a call returns, or FAILED if it raises (the fast code's exceptions say nothing)."""
    try:
        return function(*arguments)
    except Exception:  # noqa: BLE001 - any failure counts as failing
        return FAILED


def check_frame(decode, data: bytes) -> None:
    try:
        decode(data)
    except DecodeError as error:
        assert_located(error, data)
        assert error.path, f"no field path in {error!r}"


API_VERSIONS = [(api.name, version) for api in REGISTRY.apis() for version in api.versions()]


@st.composite
def request_payload(draw) -> bytes:
    api, version = draw(st.sampled_from(API_VERSIONS))
    body = draw(message_strategy(SPECS[api, "request"], version))
    frame = frames.encode_request(CODEC, api, version, draw(st.integers(-(1 << 31), (1 << 31) - 1)), body,
                                  client_id=draw(st.none() | st.text(max_size=8)))
    return frame[4:]


@st.composite
def response_payload(draw) -> tuple[str, int, bytes]:
    api, version = draw(st.sampled_from(API_VERSIONS))
    body = draw(message_strategy(SPECS[api, "response"], version))
    return api, version, frames.encode_response(CODEC, api, version, draw(st.integers(0, 1 << 20)), body)[4:]


@settings(QUICK, max_examples=300)
@given(data=st.data())
def test_request_frames_random_and_mutated(data):
    check_frame(lambda payload: frames.decode_request(CODEC, payload), data.draw(st.binary(max_size=80)))
    payload = data.draw(request_payload())
    check_frame(lambda payload: frames.decode_request(CODEC, payload), data.draw(mutated(payload)))


@settings(QUICK, max_examples=300)
@given(data=st.data())
def test_response_frames_random_and_mutated(data):
    api, version, payload = data.draw(response_payload())
    def decode(payload):
        return frames.decode_response(CODEC, api, version, payload)

    check_frame(decode, data.draw(st.binary(max_size=80)))
    check_frame(decode, data.draw(mutated(payload)))


def test_decode_errors_say_which_field_and_where():
    data = CODEC.encode("InitProducerId", 5, "request", {"transactional_id": "abc", "transaction_timeout_ms": 1})
    with pytest.raises(DecodeError) as caught:
        CODEC.decode("InitProducerId", 5, "request", data[:6])
    assert caught.value.path.startswith("InitProducerIdRequest.transaction_timeout_ms")
    assert caught.value.offset == 4  # where the fields that did not fit begin


def test_a_field_left_out_is_named_where_the_bytes_run_out():
    # librdkafka's mock writes Produce v5 responses without LogStartOffset, which ProduceResponse.json has from
    # v5 on: the error names that field and its offset, not the array around it
    body = {"responses": [{"name": "t", "partition_responses": [{
        "index": 0, "error_code": 0, "base_offset": 5, "log_append_time_ms": -1, "log_start_offset": 0}]}],
        "throttle_time_ms": 0}
    data = CODEC.encode("Produce", 5, "response", body)
    without = data[:-12] + data[-4:]  # the 8 bytes of log_start_offset before throttle_time_ms left out
    with pytest.raises(DecodeError) as caught:
        CODEC.decode("Produce", 5, "response", without)
    assert caught.value.path == "ProduceResponse.responses[].partition_responses[].log_start_offset"
    assert caught.value.offset == len(without) - 4
    assert "log_start_offset (int64) needs 8 bytes, 4 left" in str(caught.value)


def test_an_impossible_array_count_is_refused_before_allocating():
    # AddPartitionsToTxn v4: transactions, compact array: a count of 2**31 in a 6-byte message
    data = b"\x80\x80\x80\x80\x08\x00"
    with pytest.raises(DecodeError, match="cannot fit"):
        CODEC.decode("AddPartitionsToTxn", 4, "request", data)


def test_an_over_long_varint_is_refused():
    with pytest.raises(DecodeError, match="varint"):
        CODEC.decode("InitProducerId", 5, "request", b"\xff" * 11)


def test_unknown_api_key_in_a_request_header_is_a_decode_error():
    payload = frames.encode_request(CODEC, "InitProducerId", 1, 1, {}, malformation=frames.Malformation(
        header={"api_key": 999}))[4:]
    with pytest.raises(DecodeError):
        frames.decode_request(CODEC, payload)


def test_left_over_bytes_error_names_where_it_is():
    payload = frames.encode_request(CODEC, "InitProducerId", 1, 1, {}, malformation=frames.Malformation(
        trailing=b"\x00"))[4:]
    with pytest.raises(DecodeError) as caught:
        frames.decode_request(CODEC, payload)
    assert caught.value.path == "(request end)"
    assert str(caught.value) == "at byte 33 ((request end)): 1 bytes left over after the request body"
