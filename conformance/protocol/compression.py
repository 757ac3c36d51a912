"""The compression codecs of record batches, in the stream formats Kafka's own code reads.

A batch's attributes name its codec (bits 0-2); the records after the record count are one
compressed stream. The codec libraries are optional and imported on first use, so a missing
package only matters to batches that use its codec.

Formats, as Apache Kafka 4.2.1 reads them:

* gzip: gzip members (Java's ``GZIPInputStream`` also reads concatenated members).
* snappy: the Java client writes snappy-java's stream format (an 8-byte magic ``\\x82SNAPPY\\x00``,
  two big-endian int32 versions, then chunks of big-endian int32 length + raw snappy block).
  The reader falls back to one raw snappy block when that magic is absent, which is what
  librdkafka writes, so both reach brokers and come back in Fetch responses.
* lz4: the LZ4 frame format, but Kafka rejects frames whose blocks depend on earlier blocks and
  reads only the first frame. The ``lz4`` package links blocks by default, so we turn that off.
* zstd: zstd frames, one after another.
"""

from __future__ import annotations

import gzip
import importlib
import struct
import zlib
from enum import IntEnum
from types import ModuleType

from .exceptions import DecodeError, EncodeError


class Compression(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, minimum compatible version
_XERIAL_VERSION = 1
_XERIAL_CHUNK_SIZE = 32 * 1024  # snappy-java's default block size
_CHUNK_LENGTH = struct.Struct(">i")

_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_LEVEL = 6  # what Java's Deflater uses by default
_ZSTD_LEVEL = 3  # zstd's own default, which Kafka keeps

_PACKAGES = {"snappy": ("cramjam", "cramjam"), "lz4": ("lz4.frame", "lz4"),
             "zstd": ("zstandard", "zstandard")}
_modules: dict[str, ModuleType] = {}


def _library(codec: str) -> ModuleType:
    module = _modules.get(codec)
    if module is None:
        module_name, package = _PACKAGES[codec]
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise ModuleNotFoundError(
                f"{codec} compression needs the {package!r} package (pip install {package})",
                name=package,
            ) from error
        _modules[codec] = module
    return module


def compress(codec: int, data: bytes, *, snappy_framing: str = "xerial") -> bytes:
    """Compress ``data`` as codec ``codec``; ``snappy_framing`` is ``"xerial"`` or ``"raw"``."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec == Compression.GZIP:
        return gzip.compress(data, compresslevel=_GZIP_LEVEL, mtime=0)
    if codec == Compression.SNAPPY:
        return _snappy_compress(data, snappy_framing)
    if codec == Compression.LZ4:
        frame = _library("lz4")
        compressed: bytes = frame.compress(data, block_size=frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                           content_checksum=False, store_size=False)
        return compressed
    if codec == Compression.ZSTD:
        zstd_compressed: bytes = _library("zstd").ZstdCompressor(level=_ZSTD_LEVEL).compress(data)
        return zstd_compressed
    raise EncodeError(f"unknown compression codec {codec} (Kafka knows 0-4)")


def decompress(codec: int, data: bytes) -> bytes:
    """Inverse of :func:`compress`; raises :class:`DecodeError` (without a location) on bad data."""
    if codec == Compression.NONE:
        return bytes(data)
    if codec not in _READERS:
        raise DecodeError(f"unknown compression codec {codec} (Kafka knows 0-4)")
    try:
        return _READERS[Compression(codec)](data)
    except (DecodeError, ModuleNotFoundError):
        raise
    except Exception as error:  # each library has its own error types; callers need one
        name = Compression(codec).name.lower()
        raise DecodeError(f"{name} data does not decompress: {error}") from error


def _gunzip(data: bytes) -> bytes:
    parts = []
    while True:
        member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip wrapper, not zlib
        parts.append(member.decompress(data))
        if not member.eof:
            raise DecodeError("gzip data ends inside a member")
        data = member.unused_data
        # Java stops quietly at trailing bytes that do not start another member.
        if not data.startswith(_GZIP_MAGIC):
            return b"".join(parts)


def _snappy_compress(data: bytes, framing: str) -> bytes:
    snappy = _library("snappy").snappy
    if framing == "raw":
        return bytes(snappy.compress_raw(data))
    if framing != "xerial":
        raise EncodeError(f"unknown snappy framing {framing!r} (expected 'xerial' or 'raw')")
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_VERSION)]
    view = memoryview(data)
    for start in range(0, len(view), _XERIAL_CHUNK_SIZE):
        block = bytes(snappy.compress_raw(view[start:start + _XERIAL_CHUNK_SIZE]))
        parts.append(_CHUNK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: bytes) -> bytes:
    snappy = _library("snappy").snappy
    if len(data) < _XERIAL_HEADER.size or not data.startswith(XERIAL_MAGIC):
        return bytes(snappy.decompress_raw(data))
    _, version, _ = _XERIAL_HEADER.unpack_from(data)
    if version < _XERIAL_VERSION:
        raise DecodeError(f"snappy-java stream version {version} is older than 1")
    parts = []
    position = _XERIAL_HEADER.size
    while position < len(data):
        if len(data) - position < _CHUNK_LENGTH.size:
            raise DecodeError("snappy-java stream ends inside a chunk length")
        (length,) = _CHUNK_LENGTH.unpack_from(data, position)
        position += _CHUNK_LENGTH.size
        if length < 0 or position + length > len(data):
            raise DecodeError(f"snappy-java chunk of {length} bytes, {len(data) - position} left")
        parts.append(bytes(snappy.decompress_raw(data[position:position + length])))
        position += length
    return b"".join(parts)


def _lz4_decompress(data: bytes) -> bytes:
    # The library, like Kafka, stops after the first frame.
    decompressed: bytes = _library("lz4").decompress(data)
    return decompressed


def _zstd_decompress(data: bytes) -> bytes:
    decompressor = _library("zstd").ZstdDecompressor()
    parts = []
    while True:
        # One frame at a time: the library's multi-frame mode cannot tell a cut-off frame.
        frame = decompressor.decompressobj()
        parts.append(frame.decompress(data))
        if not frame.eof:
            raise DecodeError("zstd data ends inside a frame")
        data = frame.unused_data
        if not data:
            return b"".join(parts)


_READERS = {Compression.GZIP: _gunzip, Compression.SNAPPY: _snappy_decompress,
            Compression.LZ4: _lz4_decompress, Compression.ZSTD: _zstd_decompress}
