"""Readers and writers of Kafka's primitive wire types, used by the generated codec functions.

Readers take ``(buffer, offset)`` and return ``(value, new_offset)``; they raise
:class:`DecodeError` (with the offset) on short or impossible input. Writers return bytes.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, NoReturn

from .exceptions import DecodeError, EncodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
UINT32 = struct.Struct(">I")
ZERO_UUID = uuid.UUID(int=0)


class Raw:
    """Bytes written verbatim in place of a field's encoding: the tool for deliberate malformations."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = bytes(data)

    def __repr__(self) -> str:
        return f"Raw({self.data!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Raw) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)


# ---------------------------------------------------------------------------------- varints
def read_uvarint(buffer: bytes, offset: int) -> tuple[int, int]:
    try:
        byte = buffer[offset]
    except IndexError:
        raise DecodeError("need a varint, no bytes left", offset) from None
    if byte < 0x80:
        return byte, offset + 1
    value = byte & 0x7F
    shift = 7
    position = offset + 1
    while True:
        try:
            byte = buffer[position]
        except IndexError:
            raise DecodeError("varint runs past the end", offset) from None
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes", offset)


def write_uvarint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return bytes((value,))
    if value < 0:
        raise EncodeError(f"unsigned varint cannot hold {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(buffer: bytes, offset: int) -> tuple[int, int]:
    """A zigzag-encoded signed varint (records use these)."""
    raw, offset = read_uvarint(buffer, offset)
    return (raw >> 1) ^ -(raw & 1), offset


def write_varint(value: int) -> bytes:
    return write_uvarint((value << 1) ^ (value >> 63))


# ---------------------------------------------------------------------------------- lengths
def _take(buffer: bytes, offset: int, length: int, what: str) -> tuple[bytes, int]:
    end = offset + length
    if end > len(buffer):
        raise DecodeError(f"{what} of {length} bytes, only {len(buffer) - offset} left", offset)
    return buffer[offset:end], end


def _length(buffer: bytes, offset: int, packer: struct.Struct, what: str) -> tuple[int, int]:
    try:
        return packer.unpack_from(buffer, offset)[0], offset + packer.size
    except struct.error:
        raise DecodeError(f"{what} length needs {packer.size} bytes, "
                          f"{max(0, len(buffer) - offset)} left", offset) from None


def read_compact_length(buffer: bytes, offset: int) -> tuple[int, int]:
    """Compact lengths store length + 1 so that 0 means null: returns -1 for null."""
    raw, offset = read_uvarint(buffer, offset)
    return raw - 1, offset


def _text(data: bytes, offset: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DecodeError(f"string is not valid UTF-8 ({error.reason})", offset) from None


def read_string(buffer: bytes, offset: int, nullable: bool, compact: bool) -> tuple[str | None, int]:
    if compact:
        length, position = read_compact_length(buffer, offset)
    else:
        length, position = _length(buffer, offset, INT16, "string")
    if length < 0:
        if length == -1 and nullable:
            return None, position
        raise DecodeError(f"string length {length} is not allowed here", offset)
    data, end = _take(buffer, position, length, "string")
    return _text(data, position), end


def read_bytes(buffer: bytes, offset: int, nullable: bool, compact: bool) -> tuple[bytes | None, int]:
    if compact:
        length, position = read_compact_length(buffer, offset)
    else:
        length, position = _length(buffer, offset, INT32, "bytes")
    if length < 0:
        if length == -1 and nullable:
            return None, position
        raise DecodeError(f"bytes length {length} is not allowed here", offset)
    return _take(buffer, position, length, "bytes")


def read_array_length(buffer: bytes, offset: int, nullable: bool, compact: bool,
                      minimum_item: int) -> tuple[int | None, int]:
    """The element count of an array, checked against the bytes left (each item takes ``minimum_item``).

    A count that could only fit if items took under a byte each is refused here; a count that is merely more
    than the items' minimum sizes allow is returned, so that decoding the items fails at the very field where
    the bytes run out (a response that leaves out one field names that field, not the array around it)."""
    if compact:
        count, position = read_compact_length(buffer, offset)
    else:
        count, position = _length(buffer, offset, INT32, "array")
    if count < 0:
        if count == -1 and nullable:
            return None, position
        raise DecodeError(f"array length {count} is not allowed here", offset)
    room = len(buffer) - position
    if (minimum_item and count > room) or (not minimum_item and count > 1_000_000):
        raise DecodeError(f"array of {count} items cannot fit in the {room} bytes left", offset)
    return count, position


def read_uuid(buffer: bytes, offset: int) -> tuple[uuid.UUID, int]:
    data, end = _take(buffer, offset, 16, "uuid")
    return uuid.UUID(bytes=data), end


def read_fixed_array(buffer: bytes, offset: int, count: int, code: str) -> tuple[list[Any], int]:
    fmt = f">{count}{code}"
    try:
        values = list(struct.unpack_from(fmt, buffer, offset))
    except struct.error:
        raise DecodeError(f"array of {count} items runs past the end", offset) from None
    return values, offset + struct.calcsize(fmt)


# ---------------------------------------------------------------------------------- writers
def _none_not_allowed(what: str) -> NoReturn:
    raise EncodeError(f"null is not allowed for this {what} at this version")


def write_string(value: object, nullable: bool, compact: bool) -> bytes:
    if value is None:
        if not nullable:
            _none_not_allowed("string")
        return b"\x00" if compact else b"\xff\xff"
    if not isinstance(value, str):
        raise EncodeError(f"expected a string, got {type(value).__name__} {value!r}")
    data = value.encode("utf-8")
    if compact:
        return write_uvarint(len(data) + 1) + data
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes is too long for an int16 length")
    return INT16.pack(len(data)) + data


def write_bytes(value: Any, nullable: bool, compact: bool) -> bytes:
    if value is None:
        if not nullable:
            _none_not_allowed("bytes field")
        return b"\x00" if compact else b"\xff\xff\xff\xff"
    if isinstance(value, str):
        raise EncodeError("expected bytes, got a string (encode it first)")
    data = bytes(value)
    if compact:
        return write_uvarint(len(data) + 1) + data
    return INT32.pack(len(data)) + data


def write_array_length(value: Any, nullable: bool, compact: bool) -> bytes:
    if value is None:
        if not nullable:
            _none_not_allowed("array")
        return b"\x00" if compact else b"\xff\xff\xff\xff"
    if compact:
        return write_uvarint(len(value) + 1)
    return INT32.pack(len(value))


def uuid_bytes(value: object) -> bytes:
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        try:
            return uuid.UUID(value).bytes
        except ValueError:
            return _kafka_base64_uuid(value)
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return bytes(value)
    raise EncodeError(f"expected a UUID, got {value!r}")


def _kafka_base64_uuid(text: str) -> bytes:
    """Kafka prints topic ids as 22-character URL-safe base64; accept that spelling too."""
    import base64

    try:
        data = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        data = b""
    if len(data) != 16:
        raise EncodeError(f"expected a UUID, got {text!r}")
    return data
