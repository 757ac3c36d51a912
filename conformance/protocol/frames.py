"""Whole frames: the int32 size prefix, request and response headers, and deliberate malformations.

Header versions follow the API's flexibility: request header v2 (tagged fields) for flexible
versions and v1 otherwise; response header v1 for flexible versions and v0 otherwise, except
ApiVersions, whose response always has header v0 so a client can read it before it knows which
versions the broker speaks. ClientId keeps its int16 length in every header version (its spec
says ``flexibleVersions: none``).
"""

from __future__ import annotations

from typing import Any

import struct
from dataclasses import dataclass, field

from .codec import REQUEST, RESPONSE, Codec
from .exceptions import DecodeError

API_VERSIONS_KEY = 18
SIZE = struct.Struct(">i")
HEADER_PREFIX = struct.Struct(">hhi")  # api_key, api_version, correlation_id


def request_header_version(codec: Codec, api_key: int, version: int) -> int:
    try:
        return 2 if codec.is_flexible(api_key, version, REQUEST) else 1
    except Exception:
        return 1  # an API or version the codec does not know: the oldest header that carries a client id


def response_header_version(codec: Codec, api_key: int, version: int) -> int:
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if codec.is_flexible(api_key, version, RESPONSE) else 0


@dataclass
class Malformation:
    """Ways to break a well-formed frame on purpose (robustness cases).

    ``header``: header fields to write instead of the real ones (``api_key``, ``api_version``,
    ``correlation_id``, ``client_id``); ``size_delta``: added to the size prefix; ``truncate``:
    keep only this many bytes of the frame (prefix included); ``trailing``: bytes appended to the
    body (the size prefix counts them).
    """

    header: dict[str, Any] = field(default_factory=dict)
    size_delta: int = 0
    truncate: int | None = None
    trailing: bytes = b""

    def apply(self, payload: bytes) -> bytes:
        payload += self.trailing
        frame = SIZE.pack(len(payload) + self.size_delta) + payload
        return frame if self.truncate is None else frame[: self.truncate]


def encode_request(codec: Codec, api: str | int, version: int, correlation_id: int, body: dict[str, Any],
                   client_id: str | None = "kafka-conformance", *, malleable: bool = False,
                   malformation: Malformation | None = None) -> bytes:
    """A complete request frame, size prefix included."""
    api_key, header_version = _plan(codec, REQUEST, api, version)
    header = {"request_api_key": api_key, "request_api_version": version,
              "correlation_id": correlation_id, "client_id": client_id}
    if malformation and malformation.header:
        header.update(_header_aliases(malformation.header))
    payload = codec.encode_message("RequestHeader", header_version, header, malleable) \
        + codec.encode(api, version, REQUEST, body, malleable)
    if malformation:
        return malformation.apply(payload)
    return SIZE.pack(len(payload)) + payload


def _plan(codec: Codec, direction: str, api: str | int, version: int) -> tuple[int, int]:
    """(API key, header version) of one API version's frames, worked out once per codec and spec
    generation: looking them up each time was a fifth of the client's own cost per exchange."""
    key = (direction, api, version)
    found = codec.frame_plans.get(key)
    if found is None or found[0] != codec.registry.generation:
        api_key = codec.registry.api(api).api_key
        header = request_header_version if direction == REQUEST else response_header_version
        found = codec.frame_plans[key] = (codec.registry.generation, (api_key, header(codec, api_key, version)))
    plan: tuple[int, int] = found[1]
    return plan


def _header_aliases(overrides: dict[str, Any]) -> dict[str, Any]:
    names = {"api_key": "request_api_key", "api_version": "request_api_version"}
    return {names.get(key, key): value for key, value in overrides.items()}


def encode_response(codec: Codec, api: str | int, version: int, correlation_id: int, body: dict[str, Any]) -> bytes:
    api_key = codec.registry.api(api).api_key
    header_version = response_header_version(codec, api_key, version)
    payload = codec.encode_message("ResponseHeader", header_version, {"correlation_id": correlation_id}) \
        + codec.encode(api, version, RESPONSE, body)
    return SIZE.pack(len(payload)) + payload


def peek_request_header(payload: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) of a request payload (no size prefix)."""
    try:
        return HEADER_PREFIX.unpack_from(payload, 0)
    except struct.error:
        raise DecodeError(f"request header needs 8 bytes, frame has {len(payload)}", 0, "RequestHeader") from None


def peek_correlation_id(payload: bytes) -> int:
    try:
        correlation_id: int = SIZE.unpack_from(payload, 0)[0]
        return correlation_id
    except struct.error:
        raise DecodeError(f"response header needs 4 bytes, frame has {len(payload)}", 0, "ResponseHeader") from None


def decode_request_header(codec: Codec, payload: bytes) -> tuple[dict[str, Any], int]:
    """The header of a request payload (the frame without its size prefix) and the offset its body starts at."""
    api_key, version, _ = peek_request_header(payload)
    return codec.decode_message("RequestHeader", request_header_version(codec, api_key, version), payload)


def decode_request(codec: Codec, payload: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and body of a request payload (the frame without its size prefix)."""
    api_key, version, _ = peek_request_header(payload)
    header, offset = decode_request_header(codec, payload)
    body, end = codec.decode(api_key, version, REQUEST, payload, offset)
    _no_trailing(payload, end, "request")
    return header, body


def decode_response(codec: Codec, api: str | int, version: int,
                    payload: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and body of a response payload; the API and version come from the request it answers."""
    header, body, tail = decode_response_with_tail(codec, api, version, payload)
    _no_trailing(payload, len(payload) - tail, "response")
    return header, body


def decode_response_with_tail(codec: Codec, api: str | int, version: int,
                              payload: bytes) -> tuple[dict[str, Any], dict[str, Any], int]:
    """Like :func:`decode_response`, but bytes after the body are counted instead of refused."""
    api_key, header_version = _plan(codec, RESPONSE, api, version)
    header, offset = codec.decode_message("ResponseHeader", header_version, payload)
    body, end = codec.decode(api_key, version, RESPONSE, payload, offset)
    return header, body, len(payload) - end


def _no_trailing(payload: bytes, end: int, what: str) -> None:
    if end != len(payload):
        raise DecodeError(f"{len(payload) - end} bytes left over after the {what} body", end, f"({what} end)")


def split_frames(buffer: bytes | bytearray) -> tuple[list[bytes], int]:
    """Complete size-prefixed frames at the start of a buffer, and how many bytes they took."""
    frames = []
    offset = 0
    while len(buffer) - offset >= 4:
        size = SIZE.unpack_from(buffer, offset)[0]
        if size < 0:
            raise DecodeError(f"negative frame size {size}", offset)
        if len(buffer) - offset - 4 < size:
            break
        frames.append(bytes(buffer[offset + 4: offset + 4 + size]))
        offset += 4 + size
    return frames, offset
