"""Link, IP and TCP headers, and TCP reassembly: packets in, each direction's bytes in order out.

Checksums are not checked: on loopback the kernel leaves them to an offload that never happens,
so every captured TCP checksum is wrong. The IP total length is trusted over the captured
length, which may carry Ethernet padding.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

ETHERNET, NULL_LOOPBACK, RAW_IP, LINUX_SLL, LINUX_SLL2 = 1, 0, 101, 113, 276
RAW_IP_ALIASES = {12, 14, RAW_IP}  # DLT_RAW differs between BSDs; 101 is the pcap linktype
IPV4_ONLY, IPV6_ONLY, LOOP = 228, 229, 108  # LOOP: OpenBSD's NULL with a big-endian family
ETHERTYPE_IPV4, ETHERTYPE_IPV6 = 0x0800, 0x86DD
VLAN_TAGS = {0x8100, 0x88A8, 0x9100}
IPV6_FAMILIES = {10, 24, 28, 30}  # AF_INET6 on Linux, NetBSD/OpenBSD, FreeBSD, macOS
IPV6_EXTENSIONS = {0, 43, 60}  # hop-by-hop, routing, destination options (fragments are skipped)
TCP_PROTOCOL = 6
FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10

_TCP = struct.Struct(">HHIIH")
_IPV4 = struct.Struct(">B1xH2xH1xB2x4s4s")  # version+length, total, fragment, protocol, addresses
_SEQUENCE_SPACE = 1 << 32
_HALF_SPACE = 1 << 31


def parse_segment(linktype: int, data: bytes) -> tuple | None:
    """(source, source port, destination, destination port, sequence, flags, payload) of a TCP
    packet, addresses as raw bytes; None for anything else (ARP, UDP, fragments, cut-off headers)."""
    try:
        if linktype == ETHERNET:
            ethertype = (data[12] << 8) | data[13]
            offset = 14
            while ethertype in VLAN_TAGS:
                ethertype = (data[offset + 2] << 8) | data[offset + 3]
                offset += 4
        elif linktype == LINUX_SLL:
            ethertype, offset = (data[14] << 8) | data[15], 16
        elif linktype == LINUX_SLL2:
            ethertype, offset = (data[0] << 8) | data[1], 20
        elif linktype in RAW_IP_ALIASES or linktype == IPV4_ONLY or linktype == IPV6_ONLY:
            ethertype, offset = (ETHERTYPE_IPV4 if data[0] >> 4 == 4 else ETHERTYPE_IPV6), 0
        elif linktype == NULL_LOOPBACK or linktype == LOOP:
            family = int.from_bytes(data[:4], "little")
            if family > 0xFFFF:  # written on a big-endian machine
                family = int.from_bytes(data[:4], "big")
            ethertype, offset = (ETHERTYPE_IPV4 if family == 2 else ETHERTYPE_IPV6 if family in IPV6_FAMILIES
                                 else 0), 4
        else:
            return None
        if ethertype == ETHERTYPE_IPV4:
            version_length, total, fragment, protocol, source, destination = _IPV4.unpack_from(data, offset)
            if protocol != TCP_PROTOCOL or fragment & 0x3FFF:
                return None  # not TCP, or a fragment (offset or more-fragments set)
            end = offset + total if total else len(data)  # 0: a TSO packet captured before segmentation
            offset += (version_length & 0x0F) * 4
        elif ethertype == ETHERTYPE_IPV6:
            next_header = data[offset + 6]
            payload_length = (data[offset + 4] << 8) | data[offset + 5]
            end = offset + 40 + payload_length if payload_length else len(data)  # 0: a jumbogram
            source, destination = data[offset + 8: offset + 24], data[offset + 24: offset + 40]
            offset += 40
            while next_header in IPV6_EXTENSIONS:
                next_header, offset = data[offset], offset + (data[offset + 1] + 1) * 8
            if next_header != TCP_PROTOCOL:
                return None
        else:
            return None
        source_port, destination_port, sequence, _, offset_flags = _TCP.unpack_from(data, offset)
    except (IndexError, struct.error):
        return None
    return (source, source_port, destination, destination_port, sequence, offset_flags & 0x1FF,
            data[offset + (offset_flags >> 12) * 4: end])


class HalfStream:
    """One direction of a connection: segments in any order, bytes out in sequence order.

    Bytes already delivered are dropped (retransmissions, duplicates, the old part of an
    overlapping segment); segments ahead of the next expected byte wait in ``pending``.
    """

    __slots__ = ("next_sequence", "pending")

    def __init__(self) -> None:
        self.next_sequence: int | None = None
        self.pending: dict[int, bytes] = {}

    def accept(self, sequence: int, payload: bytes) -> bytes:
        if self.next_sequence is None:  # capture began mid-stream: start where it starts
            self.next_sequence = sequence
        expected: int = self.next_sequence
        ahead = (sequence - expected) % _SEQUENCE_SPACE
        if ahead >= _HALF_SPACE:  # behind: keep only the part not delivered yet
            behind = _SEQUENCE_SPACE - ahead
            if behind >= len(payload):
                return b""
            payload = payload[behind:]
        elif ahead:
            if len(payload) > len(self.pending.get(sequence, b"")):
                self.pending[sequence] = payload
            return b""
        self.next_sequence = (expected + len(payload)) % _SEQUENCE_SPACE
        if not self.pending:
            return payload
        return payload + self._drain(self.next_sequence)

    def _drain(self, expected: int) -> bytes:
        parts = []
        progressed = True
        while progressed and self.pending:
            progressed = False
            for sequence in list(self.pending):
                ahead = (sequence - expected) % _SEQUENCE_SPACE
                if ahead and ahead < _HALF_SPACE:
                    continue
                payload = self.pending.pop(sequence)
                behind = (_SEQUENCE_SPACE - ahead) % _SEQUENCE_SPACE
                if behind < len(payload):
                    payload = payload[behind:]
                    parts.append(payload)
                    expected = (expected + len(payload)) % _SEQUENCE_SPACE
                progressed = True
        self.next_sequence = expected
        return b"".join(parts)

    @property
    def missing(self) -> str | None:
        """Why the rest of this direction could not be read, if bytes never arrived."""
        expected = self.next_sequence
        if not self.pending or expected is None:
            return None
        waiting = sum(len(payload) for payload in self.pending.values())
        first = min(self.pending, key=lambda sequence: (sequence - expected) % _SEQUENCE_SPACE)
        gap = (first - expected) % _SEQUENCE_SPACE
        return f"{gap} bytes never captured after sequence {expected}; {waiting} bytes after them unread"


class TcpConnection:
    """Both directions of one connection; side 0 is whoever sent the first packet seen."""

    __slots__ = ("client_side", "closed", "endpoints", "kafka", "number", "raw_endpoints", "streams")

    def __init__(self, number: int, source: bytes, source_port: int, destination: bytes, destination_port: int):
        self.number = number
        self.raw_endpoints = ((source, source_port), (destination, destination_port))
        family = socket.AF_INET if len(source) == 4 else socket.AF_INET6
        self.endpoints = ((socket.inet_ntop(family, source), source_port),
                          (socket.inet_ntop(family, destination), destination_port))
        self.streams = (HalfStream(), HalfStream())
        self.client_side: int | None = None  # known once a SYN or SYN-ACK is seen
        self.closed: list[str | None] = [None, None]  # per side: "FIN" or "RST" once it ended the connection
        self.kafka: Any = None  # the Kafka layer's state for this connection


class ConnectionTable:
    """Routes segments to connections and their ordered bytes to a consumer.

    The consumer has ``data(connection, side, payload, packet, timestamp)``,
    ``closed(connection, side, how, packet, timestamp)`` and ``finished(connection)``.
    """

    def __init__(self) -> None:
        self.connections: dict[tuple, tuple[TcpConnection, int]] = {}  # both directions' keys
        self.notes: list[str] = []
        self._count = 0

    def accept(self, segment: tuple, packet: int, timestamp: float, consumer) -> None:
        source, source_port, destination, destination_port, sequence, flags, payload = segment
        key = (source, source_port, destination, destination_port)
        found = self.connections.get(key)
        if found is None:
            connection, side = self._open(key, consumer), 0
        else:
            connection, side = found
        if flags & SYN:
            if any(connection.closed):  # the 4-tuple is reused by a new connection
                connection, side = self._open(key, consumer, replace=connection), 0
            stream = connection.streams[side]
            if stream.next_sequence is None:
                stream.next_sequence = (sequence + 1) % _SEQUENCE_SPACE
            connection.client_side = side if not flags & ACK else 1 - side
            sequence = (sequence + 1) % _SEQUENCE_SPACE  # data on a SYN (TCP Fast Open) follows it
        if payload:
            data = connection.streams[side].accept(sequence, payload)
            if data:
                consumer.data(connection, side, data, packet, timestamp)
        if flags & (FIN | RST) and not any(connection.closed):
            how = "RST" if flags & RST else "FIN"
            connection.closed[side] = how
            consumer.closed(connection, side, how, packet, timestamp)

    def _open(self, key: tuple, consumer, replace: TcpConnection | None = None) -> TcpConnection:
        if replace is not None:
            self._finish_one(replace, consumer)
        self._count += 1
        connection = TcpConnection(self._count, *key)
        self.connections[key] = (connection, 0)
        self.connections[(key[2], key[3], key[0], key[1])] = (connection, 1)
        return connection

    def finish(self, consumer) -> None:
        for connection, side in list(self.connections.values()):
            if side == 0:
                self._finish_one(connection, consumer)
        self.connections.clear()

    def _finish_one(self, connection: TcpConnection, consumer) -> None:
        for side, stream in enumerate(connection.streams):
            missing = stream.missing
            if missing:
                (client, server) = connection.endpoints[side], connection.endpoints[1 - side]
                self.notes.append(f"{client[0]}:{client[1]} -> {server[0]}:{server[1]}: {missing}")
        consumer.finished(connection)
