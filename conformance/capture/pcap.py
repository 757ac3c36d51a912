"""Read pcap and pcapng files, and turn one into Kafka exchanges.

Our own reader, because scapy's readers cut every record at 65535 bytes and loopback captures
hold packets of up to 65549 bytes (MTU 65536 plus the link header); they are also about 100
times slower than reading with ``struct``. Packets are numbered from 1 in file order, as
Wireshark numbers frames, so a number found here opens the same packet there.
"""

from __future__ import annotations

import gc
import mmap
import struct
from collections.abc import Iterator
from pathlib import Path

from ..protocol.codec import Codec
from .kafka_stream import KafkaDecoder
from .tcp import ConnectionTable, parse_segment
from .wire import WireCapture

PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6), b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9), b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
PCAPNG_SECTION = 0x0A0D0D0A
PCAPNG_BYTE_ORDER = 0x1A2B3C4D
INTERFACE_BLOCK, OBSOLETE_PACKET_BLOCK, SIMPLE_PACKET_BLOCK, ENHANCED_PACKET_BLOCK = 1, 2, 3, 6
OPTION_TIME_RESOLUTION, OPTION_TIME_OFFSET = 9, 14


class CaptureFileError(Exception):
    """Not a pcap or pcapng file, or one cut off in a way that cannot be read past."""


Packet = tuple[int, float, bytes]  # (linktype, timestamp in seconds, captured bytes)


def file_kind(path: str | Path) -> str | None:
    """``"pcap"``, ``"pcapng"`` or None, from the first four bytes."""
    with open(path, "rb") as handle:
        head = handle.read(4)
    if head in PCAP_MAGICS:
        return "pcap"
    if head == b"\x0a\x0d\x0d\x0a":
        return "pcapng"
    return None


def iter_packets(path: str | Path) -> Iterator[Packet]:
    """Every packet record of a pcap or pcapng file, in file order."""
    kind = file_kind(path)
    if kind is None:
        raise CaptureFileError(f"{path}: not a pcap or pcapng file")
    with open(path, "rb") as handle:
        if Path(path).stat().st_size == 0:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            reader = _pcap_packets if kind == "pcap" else _pcapng_packets
            yield from reader(data, str(path))


def _pcap_packets(data, name: str) -> Iterator[Packet]:
    order, unit = PCAP_MAGICS[bytes(data[:4])]
    if len(data) < 24:
        raise CaptureFileError(f"{name}: pcap header cut short")
    linktype = struct.unpack_from(order + "I", data, 20)[0] & 0xFFFF  # upper bits: FCS length flags
    record = struct.Struct(order + "IIII")
    position, size = 24, len(data)
    while position + 16 <= size:
        seconds, fraction, captured, _ = record.unpack_from(data, position)
        position += 16
        end = position + captured
        if end > size:  # the writer was stopped mid-record: keep what is whole
            return
        yield linktype, seconds + fraction * unit, data[position:end]
        position = end


class _Interface:
    __slots__ = ("linktype", "offset", "snaplen", "unit")

    def __init__(self, linktype: int, snaplen: int):
        self.linktype, self.snaplen, self.unit, self.offset = linktype, snaplen, 1e-6, 0


def _pcapng_packets(data, name: str) -> Iterator[Packet]:
    size = len(data)
    position = 0
    order = "<"
    interfaces: list[_Interface] = []
    while position + 12 <= size:
        block_type = struct.unpack_from(order + "I", data, position)[0]
        if block_type == PCAPNG_SECTION:
            # Each section states its own byte order; the block type reads the same in both.
            magic = data[position + 8: position + 12]
            order = "<" if magic == struct.pack("<I", PCAPNG_BYTE_ORDER) else ">"
            interfaces = []
        length = struct.unpack_from(order + "I", data, position + 4)[0]
        if position + length > size:
            return  # a block cut off by a writer that was stopped
        if length < 12 or length % 4:
            raise CaptureFileError(f"{name}: bad pcapng block length {length} at byte {position}")
        body = position + 8
        try:
            packet = _packet_block(data, block_type, body, length, order, interfaces)
        except (IndexError, struct.error) as error:
            raise CaptureFileError(f"{name}: unreadable pcapng block at byte {position}: {error}") from None
        if packet is not None:
            yield packet
        position += length


def _packet_block(data, block_type: int, body: int, length: int, order: str,
                  interfaces: list[_Interface]) -> Packet | None:
    """The packet of a packet block; interface blocks are added to ``interfaces``; others skipped."""
    if block_type == ENHANCED_PACKET_BLOCK:
        interface_id, high, low, captured, _ = struct.unpack_from(order + "IIIII", data, body)
        interface = interfaces[interface_id]
        start = body + 20
        return (interface.linktype, ((high << 32) | low) * interface.unit + interface.offset,
                data[start:start + captured])
    if block_type == SIMPLE_PACKET_BLOCK:
        original = struct.unpack_from(order + "I", data, body)[0]
        interface = interfaces[0]
        captured = min(original, interface.snaplen or original, length - 16)
        return interface.linktype, 0.0, data[body + 4: body + 4 + captured]
    if block_type == OBSOLETE_PACKET_BLOCK:
        interface_id, _, high, low, captured, _ = struct.unpack_from(order + "HHIIII", data, body)
        interface = interfaces[interface_id]
        start = body + 20
        return (interface.linktype, ((high << 32) | low) * interface.unit + interface.offset,
                data[start:start + captured])
    if block_type == INTERFACE_BLOCK:
        linktype, _, snaplen = struct.unpack_from(order + "HHI", data, body)
        interface = _Interface(linktype, snaplen)
        _read_interface_options(data, body + 8, body - 8 + length - 4, order, interface)
        interfaces.append(interface)
    return None


def _read_interface_options(data, position: int, end: int, order: str, interface: _Interface) -> None:
    while position + 4 <= end:
        code, length = struct.unpack_from(order + "HH", data, position)
        value = data[position + 4: position + 4 + length]
        if code == 0:
            return
        if code == OPTION_TIME_RESOLUTION and length >= 1:
            exponent = value[0]
            interface.unit = 2.0 ** -(exponent & 0x7F) if exponent & 0x80 else 10.0 ** -exponent
        elif code == OPTION_TIME_OFFSET and length >= 8:
            interface.offset = struct.unpack_from(order + "q", value)[0]
        position += 4 + length + (-length % 4)


# ---------------------------------------------------------------------------------- exchanges
def read_capture(path: str | Path, ports: list[int] | None = None, codec: Codec | None = None, *,
                 bodies: bool = True) -> WireCapture:
    """Kafka exchanges and connection closes in a capture file.

    ``ports``: server ports that carry Kafka; without them every TCP connection whose first
    client bytes read as a Kafka request header is taken. ``bodies=False`` reads only what
    the headers say (API, version, correlation id), about three times faster.
    """
    table = ConnectionTable()
    decoder = KafkaDecoder(codec, set(ports) if ports else None, bodies=bodies)
    number = 0
    collecting = gc.isenabled()
    # Every decoded message is a tree of fresh dicts and lists without cycles; left on, the
    # collector rescans all of them again and again as they pile up (10-20% of a large read).
    gc.disable()
    try:
        for number, (linktype, timestamp, data) in enumerate(iter_packets(path), 1):
            segment = parse_segment(linktype, data)
            if segment is not None:
                table.accept(segment, number, timestamp, decoder)
        table.finish(decoder)
    finally:
        if collecting:
            gc.enable()
    capture = decoder.result()
    capture.packets = number
    capture.notes[:0] = table.notes
    return capture

