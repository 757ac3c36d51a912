"""Record batch v2 encoding and decoding: properties, kio as an oracle, known answers, fuzzing."""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import struct

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.protocol.compression import XERIAL_MAGIC, Compression, compress
from conformance.protocol.exceptions import DecodeError, EncodeError
from conformance.protocol.records import (
    CONTROL_FLAG,
    TRANSACTIONAL_FLAG,
    ControlRecord,
    ControlType,
    LegacyMessageSet,
    Record,
    RecordBatch,
    TimestampType,
    control_batch,
    decode_batches,
    encode_batch,
)

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_LIBRARIES = {Compression.SNAPPY: "cramjam", Compression.LZ4: "lz4.frame",
              Compression.ZSTD: "zstandard"}


def _available(codec: Compression) -> bool:
    try:
        importlib.import_module(_LIBRARIES[codec]) if codec in _LIBRARIES else None
    except ImportError:
        return False
    return True


CODECS = [codec for codec in Compression if _available(codec)]


def _signed(bits: int) -> st.SearchStrategy[int]:
    return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


maybe_bytes = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3)
records = st.builds(
    Record,
    offset_delta=_signed(32),
    timestamp_delta=st.integers(-(1 << 61), 1 << 61),
    key=maybe_bytes,
    value=maybe_bytes,
    headers=headers,
    attributes=_signed(8),
)
batches = st.builds(
    RecordBatch,
    base_offset=_signed(64),
    partition_leader_epoch=_signed(32),
    attributes=_signed(16),
    last_offset_delta=st.none() | _signed(32),
    base_timestamp=st.integers(-(1 << 61), 1 << 61),
    max_timestamp=st.none() | _signed(64),
    producer_id=_signed(64),
    producer_epoch=_signed(16),
    base_sequence=_signed(32),
    records=st.lists(records, max_size=6),
)


def _as_encoded(batch: RecordBatch, codec: int) -> RecordBatch:
    """What decoding the encoding of ``batch`` must give."""
    last_offset_delta = batch.last_offset_delta
    if last_offset_delta is None:
        last_offset_delta = batch.records[-1].offset_delta if batch.records else 0
    max_timestamp = batch.max_timestamp
    if max_timestamp is None:
        max_timestamp = batch.base_timestamp + max(
            (record.timestamp_delta for record in batch.records), default=0)
    return dataclasses.replace(batch, attributes=(batch.attributes & ~7) | codec,
                               last_offset_delta=last_offset_delta, max_timestamp=max_timestamp)


# ---- round trips ----------------------------------------------------------------------------


@FAST
@given(batch=batches, codec=st.sampled_from(CODECS))
def test_round_trip(batch, codec):
    encoded = encode_batch(batch, codec)
    decoded = decode_batches(encoded)
    assert decoded.truncated_tail == 0
    assert decoded == [_as_encoded(batch, codec)]
    assert decoded[0].crc_valid
    assert decoded[0].crc == struct.unpack_from(">I", encoded, 17)[0]
    assert encode_batch(decoded[0]) == encoded


@FAST
@given(many=st.lists(batches, min_size=1, max_size=4), codec=st.sampled_from(CODECS))
def test_batches_back_to_back(many, codec):
    decoded = decode_batches(b"".join(encode_batch(batch, codec) for batch in many))
    assert decoded == [_as_encoded(batch, codec) for batch in many]


@pytest.mark.parametrize("codec", CODECS)
def test_large_batch_spans_many_compression_blocks(codec):
    batch = RecordBatch(records=[Record(i, i, b"key%d" % i, bytes(range(256)) * 20)
                                 for i in range(100)])
    assert decode_batches(encode_batch(batch, codec)) == [_as_encoded(batch, codec)]


def test_attribute_properties():
    batch = RecordBatch(attributes=0b0111_1011)
    assert batch.compression == Compression.LZ4
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.is_transactional and batch.is_control and batch.has_delete_horizon
    plain = RecordBatch()
    assert plain.compression == Compression.NONE
    assert plain.timestamp_type is TimestampType.CREATE_TIME
    assert not (plain.is_transactional or plain.is_control or plain.has_delete_horizon)


# ---- kio as an independent oracle (uncompressed only: kio does not decompress) --------------

try:
    from kio.records import readers as kio_readers
    from kio.records import schema as kio_schema
    from kio.records import writers as kio_writers
    from kio.static import primitive as kio_primitive
except ImportError:
    kio_readers = kio_schema = kio_writers = kio_primitive = None
needs_kio = pytest.mark.skipif(kio_readers is None, reason="kio (an oracle) is not installed")

# kio turns timestamps into datetimes (whole seconds), so keep them in datetime's range.
plain_records = st.builds(
    Record,
    offset_delta=st.integers(0, 1000),
    timestamp_delta=st.integers(0, 10**6),
    key=maybe_bytes,
    value=maybe_bytes,
    headers=headers,
)
plain_batches = st.builds(
    RecordBatch,
    base_offset=st.integers(0, 1 << 40),
    partition_leader_epoch=_signed(32),
    attributes=_signed(16).map(lambda attributes: attributes & ~7),
    base_timestamp=st.integers(0, 4 * 10**12),
    producer_id=_signed(64),
    producer_epoch=_signed(16),
    base_sequence=_signed(32),
    records=st.lists(plain_records, max_size=6),
)


@needs_kio
@FAST
@given(batch=plain_batches)
def test_kio_reads_what_we_write(batch):
    encoded = encode_batch(batch)
    theirs, size = kio_readers.read_batch(encoded, 0)
    assert size == len(encoded)
    assert theirs.crc == struct.unpack_from(">I", encoded, 17)[0]
    assert (theirs.base_offset, theirs.partition_leader_epoch, theirs.attributes,
            theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (
        batch.base_offset, batch.partition_leader_epoch, batch.attributes,
        batch.producer_id, batch.producer_epoch, batch.base_sequence)
    assert [(record.offset, record.key, record.value) for record in theirs.records] == [
        (batch.base_offset + record.offset_delta, record.key, record.value)
        for record in batch.records]
    assert [[(header.key, header.value) for header in record.headers]
            for record in theirs.records] == [
        [(key.encode(), value) for key, value in record.headers] for record in batch.records]


def _kio_record(offset: int, seconds: int, key, value, record_headers):
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return kio_schema.Record(
        attributes=kio_primitive.i8(0),
        timestamp=kio_primitive.TZAwareMicros.parse(moment),
        offset=kio_primitive.i64(offset),
        key=key,
        value=value,
        headers=tuple(kio_schema.RecordHeader(key=header_key.encode(), value=header_value)
                      for header_key, header_value in record_headers),
    )


kio_new_batches = st.nothing() if kio_schema is None else st.builds(
    lambda producer, epoch, sequence, attributes, leader_epoch, first_offset, rows: (
        kio_schema.NewRecordBatch(
            producer_id=kio_primitive.i64(producer),
            producer_epoch=kio_primitive.i16(epoch),
            base_sequence=kio_primitive.i32(sequence),
            attributes=kio_primitive.i16(attributes & ~7),
            partition_leader_epoch=kio_primitive.i32(leader_epoch),
            records=tuple(_kio_record(first_offset + index, *row)
                          for index, row in enumerate(rows)),
        )),
    _signed(64), _signed(16), _signed(32), _signed(16), _signed(32), st.integers(0, 1 << 40),
    st.lists(st.tuples(st.integers(0, 4 * 10**9), maybe_bytes, maybe_bytes, headers),
             min_size=1, max_size=6),
)


@needs_kio
@FAST
@given(theirs=kio_new_batches)
def test_we_read_what_kio_writes(theirs):
    buffer = io.BytesIO()
    kio_writers.write_new_batch(buffer, theirs)
    encoded = buffer.getvalue()
    (ours,) = decode_batches(encoded)
    assert ours.crc_valid
    assert (ours.producer_id, ours.producer_epoch, ours.base_sequence, ours.attributes,
            ours.partition_leader_epoch) == (
        theirs.producer_id, theirs.producer_epoch, theirs.base_sequence, theirs.attributes,
        theirs.partition_leader_epoch)
    assert [(ours.base_offset + record.offset_delta,
             ours.base_timestamp + record.timestamp_delta, record.key, record.value,
             [(key.encode(), value) for key, value in record.headers])
            for record in ours.records] == [
        (record.offset, int(record.timestamp.timestamp()) * 1000, record.key, record.value,
         [(header.key, header.value) for header in record.headers])
        for record in theirs.records]
    assert encode_batch(ours) == encoded


# ---- a known answer, built by hand from the format description ------------------------------


def _hand_built_batch() -> bytes:
    record = bytes([
        0x10,  # record length 8, zig-zag
        0x00,  # attributes
        0x00,  # timestamp delta 0
        0x00,  # offset delta 0
        0x01,  # key length -1: null key
        0x04, 0x68, 0x69,  # value length 2, "hi"
        0x00,  # no headers
    ])
    return b"".join([
        (0).to_bytes(8, "big"),  # base offset                        @0
        (58).to_bytes(4, "big"),  # batch length: 70 - 12             @8
        (5).to_bytes(4, "big"),  # partition leader epoch             @12
        bytes([2]),  # magic                                          @16
        (0x337874D8).to_bytes(4, "big"),  # CRC-32C of bytes 21..70   @17
        (0x0010).to_bytes(2, "big"),  # attributes: transactional     @21
        (0).to_bytes(4, "big"),  # last offset delta                  @23
        (1_700_000_000_000).to_bytes(8, "big"),  # base timestamp     @27
        (1_700_000_000_000).to_bytes(8, "big"),  # max timestamp      @35
        (0x1234).to_bytes(8, "big"),  # producer id                   @43
        (1).to_bytes(2, "big"),  # producer epoch                     @51
        (0).to_bytes(4, "big"),  # base sequence                      @53
        (1).to_bytes(4, "big"),  # record count                       @57
        record,  #                                                    @61
    ])


def test_crc32c_is_castagnoli():
    assert crc32c.crc32c(b"123456789") == 0xE3069283


def test_known_answer_batch():
    expected = _hand_built_batch()
    assert len(expected) == 70
    assert crc32c.crc32c(expected[21:]) == 0x337874D8
    batch = RecordBatch(base_offset=0, partition_leader_epoch=5, attributes=TRANSACTIONAL_FLAG,
                        base_timestamp=1_700_000_000_000, producer_id=0x1234, producer_epoch=1,
                        base_sequence=0, records=[Record(0, 0, None, b"hi")])
    assert encode_batch(batch) == expected
    (decoded,) = decode_batches(expected)
    assert decoded == _as_encoded(batch, Compression.NONE)
    assert decoded.crc == 0x337874D8 and decoded.crc_valid
    assert decoded.is_transactional and not decoded.is_control


# ---- CRC, truncation, legacy and malformed input --------------------------------------------


@pytest.mark.parametrize("position, covered", [
    (0, False),  # base offset: brokers rewrite it, so the CRC leaves it out
    (14, False),  # partition leader epoch, likewise
    (18, True),  # the stored CRC itself
    (21, True),  # attributes (an unused bit)
    (50, True),  # producer id
    (67, True),  # a byte of the value
])
def test_crc_mismatch_is_reported_not_raised(position, covered):
    corrupted = bytearray(_hand_built_batch())
    corrupted[position] ^= 0x01
    (decoded,) = decode_batches(bytes(corrupted))
    assert decoded.crc_valid is (not covered)


@FAST
@given(many=st.lists(plain_batches, min_size=1, max_size=3), data=st.data())
def test_cut_off_tail_is_skipped_and_measured(many, data):
    encoded = [encode_batch(batch) for batch in many]
    whole = b"".join(encoded)
    cut = data.draw(st.integers(0, len(whole)))
    decoded = decode_batches(whole[:cut])
    complete, used = 0, 0
    while complete < len(encoded) and used + len(encoded[complete]) <= cut:
        used += len(encoded[complete])
        complete += 1
    assert len(decoded) == complete
    assert decoded.truncated_tail == cut - used


def _legacy_message(offset: int, magic: int, value: bytes) -> bytes:
    body = bytes([magic, 0])  # magic, attributes
    if magic == 1:
        body += (1_700_000_000_000).to_bytes(8, "big")
    body += (-1).to_bytes(4, "big", signed=True) + len(value).to_bytes(4, "big") + value
    message = crc32c.crc32c(body).to_bytes(4, "big") + body  # legacy uses CRC-32; not checked
    return offset.to_bytes(8, "big") + len(message).to_bytes(4, "big") + message


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_are_kept_as_bytes(magic):
    legacy = _legacy_message(7, magic, b"old")
    current = _hand_built_batch()
    decoded = decode_batches(legacy + current)
    assert decoded[0] == LegacyMessageSet(7, magic, legacy)
    assert isinstance(decoded[1], RecordBatch) and decoded[1].producer_id == 0x1234


def test_unknown_magic_is_a_decode_error():
    corrupted = bytearray(_hand_built_batch())
    corrupted[16] = 3
    with pytest.raises(DecodeError) as caught:
        decode_batches(bytes(corrupted))
    assert caught.value.offset == 16 and caught.value.path == "batches[0].magic"


def test_decode_error_names_byte_and_field():
    batch = RecordBatch(records=[Record(0, 0, b"k", b"v"), Record(1, 0, b"key", None,
                                                                  [("header", b"12345")])])
    encoded = encode_batch(batch)
    # The second record ends with a 5-byte header value: cut 3 bytes and shorten the record.
    value_length = encoded.rindex(bytes([0x0A]) + b"12345")
    corrupted = bytearray(encoded[:value_length + 3])
    record_start = 61 + 1 + encoded[61] // 2  # after the first record (its length is one byte)
    corrupted[record_start] -= 6  # zig-zag: 3 bytes less
    corrupted[8:12] = (len(corrupted) - 12).to_bytes(4, "big")
    with pytest.raises(DecodeError) as caught:
        decode_batches(bytes(corrupted))
    error = caught.value
    assert error.path == "batches[0].records[1].headers[0].value"
    assert error.offset == value_length
    assert str(error) == (f"at byte {value_length} (batches[0].records[1].headers[0].value): "
                          "need 5 bytes, 2 left in the record (and the batch CRC does not match)")


def test_trailing_bytes_after_declared_records():
    encoded = bytearray(encode_batch(RecordBatch(records=[Record(value=b"x")] * 2)))
    encoded[57:61] = (1).to_bytes(4, "big")
    with pytest.raises(DecodeError, match="bytes left after the 1 records"):
        decode_batches(bytes(encoded))


def test_batch_length_below_minimum_is_corruption_not_truncation():
    with pytest.raises(DecodeError, match="below the minimum"):
        decode_batches((0).to_bytes(8, "big") + (3).to_bytes(4, "big"))


def test_corrupt_compressed_payload():
    encoded = bytearray(encode_batch(RecordBatch(records=[Record(value=b"x" * 100)]),
                                     Compression.GZIP))
    encoded[61:63] = b"\x00\x00"
    with pytest.raises(DecodeError) as caught:
        decode_batches(bytes(encoded))
    assert caught.value.path == "batches[0].records" and caught.value.offset == 61
    assert "gzip" in caught.value.reason


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300))
def test_random_bytes_raise_only_decode_errors(data):
    try:
        decode_batches(data)
    except DecodeError:
        pass


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches, codec=st.sampled_from(CODECS), data=st.data())
def test_damaged_batches_raise_only_decode_errors(batch, codec, data):
    damaged = bytearray(encode_batch(batch, codec))
    for _ in range(data.draw(st.integers(1, 4))):
        damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    try:
        decode_batches(bytes(damaged))
    except DecodeError:
        pass


# ---- encoding errors ------------------------------------------------------------------------


@pytest.mark.parametrize("batch, path", [
    (RecordBatch(producer_epoch=1 << 15), "producer_epoch"),
    (RecordBatch(base_sequence=1 << 31), "base_sequence"),
    (RecordBatch(records=[Record(offset_delta=1 << 31)]), "records[0].offset_delta"),
    (RecordBatch(records=[Record(key="text")]), "records[0].key"),
    (RecordBatch(records=[Record(headers=[(b"bytes", None)])]), "records[0].headers[0].key"),
    (RecordBatch(magic=1), "magic"),
])
def test_encode_errors_name_the_field(batch, path):
    with pytest.raises(EncodeError) as caught:
        encode_batch(batch)
    assert caught.value.path == path


def test_unknown_compression_is_an_encode_error():
    with pytest.raises(EncodeError):
        encode_batch(RecordBatch(), 5)


# ---- compression formats Kafka reads --------------------------------------------------------

needs_snappy = pytest.mark.skipif(Compression.SNAPPY not in CODECS, reason="cramjam missing")


@needs_snappy
def test_snappy_uses_snappy_java_framing():
    encoded = encode_batch(RecordBatch(records=[Record(value=b"v")]), Compression.SNAPPY)
    assert encoded[61:69] == XERIAL_MAGIC


@needs_snappy
def test_snappy_raw_block_decodes_too():
    batch = RecordBatch(records=[Record(value=b"librdkafka" * 50)])
    encoded = encode_batch(batch, Compression.SNAPPY, snappy_framing="raw")
    assert not encoded[61:].startswith(XERIAL_MAGIC)
    assert decode_batches(encoded) == [_as_encoded(batch, Compression.SNAPPY)]


@pytest.mark.skipif(Compression.LZ4 not in CODECS, reason="lz4 missing")
def test_lz4_frames_have_independent_blocks():
    frame = compress(Compression.LZ4, b"x" * 200_000)
    assert frame[:4] == b"\x04\x22\x4d\x18"
    flags = frame[4]
    assert flags & 0x20, "Kafka rejects LZ4 frames with dependent blocks"
    assert flags >> 6 == 1


# ---- transaction markers --------------------------------------------------------------------


@pytest.mark.parametrize("commit, control_type", [(True, ControlType.COMMIT),
                                                  (False, ControlType.ABORT)])
def test_control_batches(commit, control_type):
    batch = control_batch(producer_id=4000, producer_epoch=7, commit=commit,
                          coordinator_epoch=3, base_offset=42, timestamp=1_700_000_000_000)
    (decoded,) = decode_batches(encode_batch(batch))
    assert decoded.is_control and decoded.is_transactional
    assert decoded.attributes == TRANSACTIONAL_FLAG | CONTROL_FLAG
    assert (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == (4000, 7, -1)
    assert decoded.base_offset == 42 and decoded.last_offset_delta == 0
    (record,) = decoded.records
    assert record.key == bytes([0, 0, 0, control_type])
    assert record.value == bytes([0, 0, 0, 0, 0, 3])
    marker = ControlRecord.from_record(record)
    assert marker == ControlRecord(control_type, coordinator_epoch=3)
    assert marker.is_marker


def test_control_record_with_newer_versions_and_longer_fields():
    marker = ControlRecord.decode(b"\x00\x01\x00\x01extra", b"\x00\x02\x00\x00\x00\x09more")
    assert marker == ControlRecord(ControlType.COMMIT, 9, version=1, value_version=2)


def test_kraft_control_records_have_no_marker_value():
    marker = ControlRecord.decode(b"\x00\x00\x00\x02", b"anything")
    assert marker.type == ControlType.LEADER_CHANGE and marker.coordinator_epoch is None


@pytest.mark.parametrize("key, value, path", [
    (None, b"\x00" * 6, "control_record.key"),
    (b"\x00\x00\x00", b"\x00" * 6, "control_record.key"),
    (b"\xff\xff\x00\x01", b"\x00" * 6, "control_record.key.version"),
    (b"\x00\x00\x00\x01", b"\x00" * 5, "control_record.value"),
])
def test_malformed_control_records(key, value, path):
    with pytest.raises(DecodeError) as caught:
        ControlRecord.decode(key, value)
    assert caught.value.path == path


def test_header_keys_that_are_not_utf8_round_trip():
    batch = RecordBatch(records=[Record(headers=[("\udcff\udcfe", b"v")])])
    encoded = encode_batch(batch)
    assert b"\x04\xff\xfe\x02v" in encoded  # key length 2, raw bytes, value length 1, "v"
    assert decode_batches(encoded) == [_as_encoded(batch, Compression.NONE)]


def test_decoding_accepts_any_bytes_like_input():
    encoded = _hand_built_batch()
    assert decode_batches(bytearray(encoded)) == decode_batches(memoryview(encoded))
