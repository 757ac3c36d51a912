"""Record batches (magic 2): the bytes inside a Produce or Fetch ``records`` field.

Layout of one batch, byte offsets from its start::

    0 base_offset int64      8 batch_length int32 (bytes after this field)
   12 partition_leader_epoch int32   16 magic int8   17 crc uint32
   21 attributes int16      23 last_offset_delta int32   27 base_timestamp int64
   35 max_timestamp int64   43 producer_id int64   51 producer_epoch int16
   53 base_sequence int32   57 record count int32   61 records (compressed as one stream)

The CRC is CRC-32C over bytes 21 to the end, so it does not cover the offset, the leader epoch
(both rewritten by brokers) or itself. Each record is a zig-zag varint length, then an int8
attributes, varlong timestamp delta, varint offset delta, key and value (varint length, -1 for
null) and varint-counted headers (string key, nullable value).

Decoding never raises on a wrong CRC (``crc_valid`` says so, because conformance cases check
it) nor on a partial batch at the end (Fetch may cut the last batch at its byte limit); every
other malformation raises :class:`DecodeError` with the byte offset and field path.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum

from crc32c import crc32c

from .compression import Compression, compress, decompress
from .exceptions import DecodeError, EncodeError

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

NO_TIMESTAMP = -1
LOG_OVERHEAD = 12  # base_offset + batch_length: what batch_length does not count
BATCH_OVERHEAD = 61  # a batch with no records
LEGACY_MINIMUM_LENGTH = 14  # the smallest batch_length of a magic 0 message

_LOG_PREFIX = struct.Struct(">qi")
_HEADER = struct.Struct(">qiibIhiqqqhii")  # the whole 61-byte header
_BEFORE_CRC = struct.Struct(">qiibI")
_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. record count: the start of the CRC span
_CRC_START = _BEFORE_CRC.size
CRC_OFFSET = _CRC_START - 4  # where a batch's CRC-32C starts
_CONTROL_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")

_INT8 = (-(1 << 7), (1 << 7) - 1)
_INT16 = (-(1 << 15), (1 << 15) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_CODECS = frozenset(Compression)


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlType(IntEnum):
    """Control record types; 2 and up are KRaft-internal and never reach a data partition."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(slots=True)
class Record:
    offset_delta: int = 0
    timestamp_delta: int = 0
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0  # unused by Kafka; kept so odd bytes round-trip


@dataclass(slots=True, kw_only=True)
class RecordBatch:
    """One magic-2 batch. Fields left None are computed by :func:`encode_batch`."""

    base_offset: int = 0
    partition_leader_epoch: int = -1
    magic: int = 2
    crc: int | None = field(default=None, compare=False)  # as decoded; encoding computes it
    attributes: int = 0
    last_offset_delta: int | None = None
    base_timestamp: int = NO_TIMESTAMP
    max_timestamp: int | None = None
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    records: list[Record] = field(default_factory=list)
    crc_valid: bool | None = field(default=None, compare=False)  # None until decoded

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType((self.attributes & TIMESTAMP_TYPE_FLAG) >> 3)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        """Set by compaction; base_timestamp then holds the delete horizon."""
        return bool(self.attributes & DELETE_HORIZON_FLAG)


@dataclass(slots=True)
class LegacyMessageSet:
    """One magic 0 or 1 entry (a message, or a compressed wrapper of messages), kept as bytes."""

    offset: int
    magic: int
    raw: bytes


class DecodedBatches(list["RecordBatch | LegacyMessageSet"]):
    """The batches of a ``records`` field, plus the size of a cut-off batch at its end."""

    truncated_tail: int = 0


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A control record's key (version, type) and, for transaction markers, its value.

    ``coordinator_epoch`` is None for the KRaft types, whose values are something else.
    """

    type: int
    coordinator_epoch: int | None = None
    version: int = 0
    value_version: int = 0

    @property
    def is_marker(self) -> bool:
        return self.type in (ControlType.ABORT, ControlType.COMMIT)

    def encode_key(self) -> bytes:
        return _pack(_CONTROL_KEY, "control_record.key", (self.version, self.type))

    def encode_value(self) -> bytes:
        if self.coordinator_epoch is None:
            raise EncodeError("a transaction marker needs a coordinator epoch",
                              "control_record.coordinator_epoch")
        return _pack(_MARKER_VALUE, "control_record.value",
                     (self.value_version, self.coordinator_epoch))

    def to_record(self, offset_delta: int = 0, timestamp_delta: int = 0) -> Record:
        value = self.encode_value() if self.is_marker else None
        return Record(offset_delta, timestamp_delta, self.encode_key(), value)

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> ControlRecord:
        # Kafka reads only the fields it knows and ignores longer keys and values (newer versions).
        if key is None or len(key) < _CONTROL_KEY.size:
            raise DecodeError(f"control key needs 4 bytes, has {_size(key)}", 0,
                              "control_record.key")
        version, control_type = _CONTROL_KEY.unpack_from(key)
        if version < 0:
            raise DecodeError(f"negative control key version {version}", 0,
                              "control_record.key.version")
        if control_type not in (ControlType.ABORT, ControlType.COMMIT):
            return cls(control_type, None, version)
        if value is None or len(value) < _MARKER_VALUE.size:
            raise DecodeError(f"transaction marker value needs 6 bytes, has {_size(value)}", 0,
                              "control_record.value")
        value_version, coordinator_epoch = _MARKER_VALUE.unpack_from(value)
        return cls(control_type, coordinator_epoch, version, value_version)

    @classmethod
    def from_record(cls, record: Record) -> ControlRecord:
        return cls.decode(record.key, record.value)


def control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                  base_offset: int = 0, timestamp: int = NO_TIMESTAMP,
                  partition_leader_epoch: int = -1) -> RecordBatch:
    """The transaction marker batch a partition leader writes when a transaction ends."""
    marker = ControlRecord(ControlType.COMMIT if commit else ControlType.ABORT, coordinator_epoch)
    return RecordBatch(
        base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
        attributes=TRANSACTIONAL_FLAG | CONTROL_FLAG, last_offset_delta=0,
        base_timestamp=timestamp, max_timestamp=timestamp, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=-1, records=[marker.to_record()],
    )


# ---- encoding -------------------------------------------------------------------------------


class _Unencodable(Exception):
    """A field value that does not fit; the caller adds where it was."""


def encode_batch(batch: RecordBatch, compression: int | None = None, *,
                 snappy_framing: str = "xerial") -> bytes:
    """The bytes of ``batch``: lengths and CRC computed, ``crc`` ignored.

    ``compression`` (a :class:`Compression`) replaces the codec bits of ``batch.attributes``.
    ``last_offset_delta`` defaults to the last record's offset delta and ``max_timestamp`` to
    the largest record timestamp (``base_timestamp`` for an empty batch).
    """
    if batch.magic != 2:
        raise EncodeError(f"only magic 2 batches can be encoded, not magic {batch.magic}", "magic")
    attributes = batch.attributes
    if compression is not None:
        if compression not in _CODECS:
            raise EncodeError(f"unknown compression codec {compression} (Kafka knows 0-4)",
                              "compression")
        attributes = (attributes & ~COMPRESSION_MASK) | int(compression)
    records = batch.records
    body = bytes(_encode_records(records))
    codec = attributes & COMPRESSION_MASK
    if codec != Compression.NONE:
        try:
            body = compress(codec, body, snappy_framing=snappy_framing)
        except EncodeError as error:
            raise EncodeError(error.reason, "attributes") from None
    last_offset_delta = batch.last_offset_delta
    if last_offset_delta is None:
        last_offset_delta = records[-1].offset_delta if records else 0
    max_timestamp = batch.max_timestamp
    if max_timestamp is None:
        max_timestamp = batch.base_timestamp + max(
            (record.timestamp_delta for record in records), default=0)
    header = {
        "base_offset": (batch.base_offset, _INT64),
        "partition_leader_epoch": (batch.partition_leader_epoch, _INT32),
        "attributes": (attributes, _INT16),
        "last_offset_delta": (last_offset_delta, _INT32),
        "base_timestamp": (batch.base_timestamp, _INT64),
        "max_timestamp": (max_timestamp, _INT64),
        "producer_id": (batch.producer_id, _INT64),
        "producer_epoch": (batch.producer_epoch, _INT16),
        "base_sequence": (batch.base_sequence, _INT32),
    }
    for name, (value, bounds) in header.items():
        try:
            _check(value, bounds)
        except (_Unencodable, TypeError) as error:
            raise EncodeError(str(error), name) from None
    after_crc = _AFTER_CRC.pack(
        attributes, last_offset_delta, batch.base_timestamp, max_timestamp, batch.producer_id,
        batch.producer_epoch, batch.base_sequence, len(records),
    ) + body
    batch_length = len(after_crc) + _CRC_START - LOG_OVERHEAD
    before_crc = _BEFORE_CRC.pack(
        batch.base_offset, batch_length, batch.partition_leader_epoch, 2, crc32c(after_crc),
    )
    return before_crc + after_crc


def _encode_records(records: list[Record]) -> bytearray:
    out = bytearray()
    for index, record in enumerate(records):
        part = "attributes"
        try:
            body = bytearray()
            _check(record.attributes, _INT8)
            body.append(record.attributes & 0xFF)
            part = "timestamp_delta"
            _write_varint(body, record.timestamp_delta, _INT64)
            part = "offset_delta"
            _write_varint(body, record.offset_delta, _INT32)
            part = "key"
            _write_bytes(body, record.key)
            part = "value"
            _write_bytes(body, record.value)
            part = "headers"
            _write_varint(body, len(record.headers), _INT32)
            for header_index, (header_key, header_value) in enumerate(record.headers):
                part = f"headers[{header_index}].key"
                if not isinstance(header_key, str):
                    raise _Unencodable(f"header keys are str, not {type(header_key).__name__}")
                _write_bytes(body, header_key.encode("utf-8", "surrogateescape"))
                part = f"headers[{header_index}].value"
                _write_bytes(body, header_value)
            part = "length"
            _write_varint(out, len(body), _INT32)
            out += body
        except (_Unencodable, TypeError, ValueError) as error:
            raise EncodeError(str(error), f"records[{index}].{part}") from None
    return out


def _check(value: int, bounds: tuple[int, int]) -> None:
    if not bounds[0] <= value <= bounds[1]:
        raise _Unencodable(f"{value} is outside {bounds[0]}..{bounds[1]}")


def _write_varint(out: bytearray, value: int, bounds: tuple[int, int]) -> None:
    _check(value, bounds)
    zigzag = (value << 1) ^ (value >> 63)  # same as >> 31 for values that fit 32 bits
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def _write_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out.append(0x01)  # zig-zag -1
        return
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise _Unencodable(f"expected bytes or None, not {type(value).__name__}")
    _write_varint(out, len(value), _INT32)
    out += value


def _pack(layout: struct.Struct, path: str, values: tuple[int, ...]) -> bytes:
    try:
        return layout.pack(*values)
    except struct.error as error:
        raise EncodeError(f"value out of range for a fixed-width field: {error}", path) from None


# ---- decoding -------------------------------------------------------------------------------


class _Malformed(Exception):
    """Raised inside the record loop; the loop's handler adds the offset and path."""


def decode_batches(data: bytes) -> DecodedBatches:
    """Every batch in a ``records`` field; a cut-off last batch is skipped and its size kept
    in ``truncated_tail``. Magic 0 and 1 entries come back as :class:`LegacyMessageSet`."""
    if not isinstance(data, bytes):
        data = bytes(data)
    batches = DecodedBatches()
    size = len(data)
    position = 0
    while position < size:
        left = size - position
        if left < LOG_OVERHEAD:
            batches.truncated_tail = left
            break
        base_offset, batch_length = _LOG_PREFIX.unpack_from(data, position)
        where = f"batches[{len(batches)}]"
        # Checked before truncation, as Kafka does: a length this small is corruption, not a cut.
        if batch_length < LEGACY_MINIMUM_LENGTH:
            raise DecodeError(f"batch_length {batch_length} is below the minimum of "
                              f"{LEGACY_MINIMUM_LENGTH}", position + 8, f"{where}.batch_length")
        end = position + LOG_OVERHEAD + batch_length
        if end > size:
            batches.truncated_tail = left
            break
        magic = data[position + 16]
        if magic == 2:
            batches.append(_decode_batch(data, position, end, where))
        elif magic in (0, 1):
            batches.append(LegacyMessageSet(base_offset, magic, data[position:end]))
        else:
            raise DecodeError(f"unknown magic {magic - 256 if magic > 127 else magic}",
                              position + 16, f"{where}.magic")
        position = end
    return batches


def _decode_batch(data: bytes, start: int, end: int, where: str) -> RecordBatch:
    if end - start < BATCH_OVERHEAD:
        raise DecodeError(f"a magic 2 batch needs {BATCH_OVERHEAD} bytes, this one has "
                          f"{end - start}", start + 8, f"{where}.batch_length")
    (base_offset, _, partition_leader_epoch, magic, crc, attributes, last_offset_delta,
     base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
     count) = _HEADER.unpack_from(data, start)
    crc_valid = crc32c(memoryview(data)[start + _CRC_START:end]) == crc
    if count < 0:
        raise DecodeError(f"negative record count {count}", start + 57, f"{where}.records")
    codec = attributes & COMPRESSION_MASK
    body_start = start + BATCH_OVERHEAD
    body = data[body_start:end]
    records_path = f"{where}.records"
    if codec != Compression.NONE:
        try:
            body = decompress(codec, body)
        except DecodeError as error:
            raise DecodeError(_with_crc_note(error.reason, crc_valid), body_start,
                              records_path) from None
        # Offsets inside a decompressed stream count from the stream's start.
        body_start = 0
        records_path = f"{where}.decompressed_records"
    records = _decode_records(body, count, body_start, records_path, crc_valid)
    return RecordBatch(
        base_offset=base_offset, partition_leader_epoch=partition_leader_epoch, magic=magic,
        crc=crc, attributes=attributes, last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp, max_timestamp=max_timestamp, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, records=records,
        crc_valid=crc_valid,
    )


def _with_crc_note(reason: str, crc_valid: bool) -> str:
    return reason if crc_valid else f"{reason} (and the batch CRC does not match)"


def _decode_records(body: bytes, count: int, base: int, path: str,
                    crc_valid: bool) -> list[Record]:
    # The hot loop. ``body`` ends where the records end, so reading past the end raises
    # IndexError rather than needing a check per byte. Most varints are one byte, so those are
    # decoded inline; anything else (and every error) goes through the general readers.
    records: list[Record] = []
    append = records.append
    size = len(body)
    position = 0
    index = 0
    part = "length"
    try:
        for index in range(count):  # noqa: B007 - read by the error path below, to name the record
            part = "length"
            byte = body[position]
            if byte < 0x80:
                length = (byte >> 1) ^ -(byte & 1)
                position += 1
            else:
                length, position = _read_varint(body, position)
            record_start = position
            record_end = position + length
            if length < 0 or record_end > size:
                raise _Malformed(f"record length {length}, {size - position} bytes left")
            part = "attributes"
            attributes = body[position]
            if attributes > 127:
                attributes -= 256
            position += 1
            part = "timestamp_delta"
            byte = body[position]
            if byte < 0x80:
                timestamp_delta = (byte >> 1) ^ -(byte & 1)
                position += 1
            else:
                timestamp_delta, position = _read_varlong(body, position)
            part = "offset_delta"
            byte = body[position]
            if byte < 0x80:
                offset_delta = (byte >> 1) ^ -(byte & 1)
                position += 1
            else:
                offset_delta, position = _read_varint(body, position)
            part = "key"
            key: bytes | None
            value: bytes | None
            byte = body[position]
            if byte < 0x80 and not byte & 1 and position + 1 + (byte >> 1) <= record_end:
                key = body[position + 1:position + 1 + (byte >> 1)]
                position += 1 + (byte >> 1)
            else:
                key, position = _read_bytes(body, position, record_end)
            part = "value"
            byte = body[position]
            if byte < 0x80 and not byte & 1 and position + 1 + (byte >> 1) <= record_end:
                value = body[position + 1:position + 1 + (byte >> 1)]
                position += 1 + (byte >> 1)
            else:
                value, position = _read_bytes(body, position, record_end)
            part = "headers"
            header_count, position = _read_varint(body, position)
            if header_count < 0:
                raise _Malformed(f"negative header count {header_count}")
            headers = []
            for header_index in range(header_count):
                part = f"headers[{header_index}].key"
                header_key, position = _read_bytes(body, position, record_end)
                if header_key is None:
                    raise _Malformed("header key is null")
                part = f"headers[{header_index}].value"
                header_value, position = _read_bytes(body, position, record_end)
                headers.append((header_key.decode("utf-8", "surrogateescape"), header_value))
            if position != record_end:
                part = "length"
                raise _Malformed(f"record length {length} but its fields take "
                                 f"{position - record_start} bytes")
            append(Record(offset_delta, timestamp_delta, key, value, headers, attributes))
    except _Malformed as problem:
        reason = str(problem)
    except IndexError:
        reason = "the records end inside this field"
    else:
        if position != size:
            raise DecodeError(_with_crc_note(f"{size - position} bytes left after the {count} "
                                             f"records the batch declares", crc_valid),
                              base + position, path)
        return records
    raise DecodeError(_with_crc_note(reason, crc_valid), base + position,
                      f"{path}[{index}].{part}")


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    byte = data[position]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), position + 1
    raw = byte & 0x7F
    shift = 7
    while True:
        byte = data[position + shift // 7]
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 28:
            raise _Malformed("varint longer than 5 bytes")
    raw &= 0xFFFFFFFF  # Java keeps the low 32 bits of an over-long fifth byte
    return (raw >> 1) ^ -(raw & 1), position + shift // 7 + 1


def _read_varlong(data: bytes, position: int) -> tuple[int, int]:
    byte = data[position]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), position + 1
    raw = byte & 0x7F
    shift = 7
    while True:
        byte = data[position + shift // 7]
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 63:
            raise _Malformed("varlong longer than 10 bytes")
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), position + shift // 7 + 1


def _read_bytes(data: bytes, position: int, limit: int) -> tuple[bytes | None, int]:
    length, position = _read_varint(data, position)
    if length < 0:
        if length != -1:
            raise _Malformed(f"length {length} (only -1 means null)")
        return None, position
    end = position + length
    if end > limit:
        raise _Malformed(f"need {length} bytes, {max(limit - position, 0)} left in the record")
    return data[position:end], end


def _size(value: bytes | None) -> str:
    return "null" if value is None else str(len(value))
