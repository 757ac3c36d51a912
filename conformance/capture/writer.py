"""Write pcap and pcapng files of made-up TCP traffic (for tests and the benchmark).

Packets are built byte by byte so a test controls every segment boundary, sequence number and
retransmission. Checksums are left at zero, as loopback captures have them wrong anyway.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import Self

from .tcp import ACK, ETHERNET, FIN, LINUX_SLL, LINUX_SLL2, NULL_LOOPBACK, RAW_IP, RST, SYN

PSH = 0x08
SNAPLEN = 262144  # what dumpcap and tshark use; more than loopback's largest packet


class PcapWriter:
    """``format`` is ``"pcap"`` or ``"pcapng"``; ``nanoseconds`` picks the timestamp resolution."""

    def __init__(self, path: str | Path, linktype: int = ETHERNET, *, format: str = "pcap",
                 nanoseconds: bool = False, snaplen: int = SNAPLEN):
        self.linktype, self.format, self.nanoseconds, self.snaplen = linktype, format, nanoseconds, snaplen
        self.file = open(path, "wb")  # noqa: SIM115 - a writer outlives this call; close() or `with` ends it
        if format == "pcap":
            magic = 0xA1B23C4D if nanoseconds else 0xA1B2C3D4
            self.file.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
        elif format == "pcapng":
            self.file.write(_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
            options = (struct.pack("<HHB3x", 9, 1, 9) if nanoseconds else b"") + b"\0\0\0\0"
            self.file.write(_block(1, struct.pack("<HHI", linktype, 0, snaplen) + options))
        else:
            raise ValueError(f"format must be 'pcap' or 'pcapng', not {format!r}")

    def write(self, timestamp: float, data: bytes) -> None:
        captured = data[: self.snaplen]
        if self.format == "pcap":
            seconds = int(timestamp)
            fraction = round((timestamp - seconds) * (1e9 if self.nanoseconds else 1e6))
            self.file.write(struct.pack("<IIII", seconds, fraction, len(captured), len(data)) + captured)
        else:
            ticks = round(timestamp * (1e9 if self.nanoseconds else 1e6))
            body = struct.pack("<IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, len(captured), len(data))
            self.file.write(_block(6, body + captured + b"\0" * (-len(captured) % 4)))

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _block(block_type: int, body: bytes) -> bytes:
    length = 12 + len(body)
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


# ---------------------------------------------------------------------------------- packets
def link_frame(linktype: int, ip_packet: bytes) -> bytes:
    """An IP packet wrapped in the link-layer header of ``linktype``."""
    version6 = ip_packet[0] >> 4 == 6
    ethertype = 0x86DD if version6 else 0x0800
    if linktype == ETHERNET:
        return b"\0" * 12 + struct.pack(">H", ethertype) + ip_packet
    if linktype == LINUX_SLL:
        return struct.pack(">HHH8sH", 0, 772, 6, b"", ethertype) + ip_packet
    if linktype == LINUX_SLL2:
        return struct.pack(">HHIHBB8s", ethertype, 0, 1, 772, 0, 6, b"") + ip_packet
    if linktype == RAW_IP:
        return ip_packet
    if linktype == NULL_LOOPBACK:
        return struct.pack("<I", 10 if version6 else 2) + ip_packet
    raise ValueError(f"no writer for linktype {linktype}")


def tcp_packet(source: tuple[str, int], destination: tuple[str, int], sequence: int, acknowledgement: int,
               flags: int, payload: bytes = b"") -> bytes:
    """An IPv4 or IPv6 packet (by the address) carrying one TCP segment."""
    tcp = struct.pack(">HHIIHHHH", source[1], destination[1], sequence % (1 << 32), acknowledgement % (1 << 32),
                      (5 << 12) | flags, 65535, 0, 0) + payload
    if ":" in source[0]:
        header = struct.pack(">IHBB16s16s", 6 << 28, len(tcp), 6, 64,
                             socket.inet_pton(socket.AF_INET6, source[0]),
                             socket.inet_pton(socket.AF_INET6, destination[0]))
        return header + tcp
    total = 20 + len(tcp)
    header = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total if total <= 0xFFFF else 0, 0, 0x4000, 64, 6, 0,
                         socket.inet_aton(source[0]), socket.inet_aton(destination[0]))
    return header + tcp


class SyntheticConnection:
    """One TCP connection's packets, with sequence numbers kept right unless a test says otherwise."""

    def __init__(self, client: tuple[str, int] = ("127.0.0.1", 50000), server: tuple[str, int] = ("127.0.0.1", 9092),
                 client_sequence: int = 1000, server_sequence: int = 5000):
        self.client, self.server = client, server
        self.next = {True: client_sequence, False: server_sequence}  # keyed by "from the client"

    def packet(self, from_client: bool, sequence: int, payload: bytes = b"", flags: int = ACK | PSH) -> bytes:
        source, destination = (self.client, self.server) if from_client else (self.server, self.client)
        return tcp_packet(source, destination, sequence, self.next[not from_client], flags, payload)

    def handshake(self) -> list[bytes]:
        syn = self.packet(True, self.next[True], flags=SYN)
        self.next[True] += 1
        syn_ack = self.packet(False, self.next[False], flags=SYN | ACK)
        self.next[False] += 1
        return [syn, syn_ack, self.packet(True, self.next[True], flags=ACK)]

    def segments(self, from_client: bool, data: bytes, size: int = 65483) -> list[bytes]:
        """``data`` cut into segments of ``size`` bytes (65483: the most an IPv4 packet holds)."""
        packets = []
        for start in range(0, len(data), size):
            packets.append(self.packet(from_client, self.next[from_client], data[start:start + size]))
            self.next[from_client] += len(data[start:start + size])
        return packets

    def close(self, by_client: bool = True, *, reset: bool = False) -> list[bytes]:
        if reset:
            return [self.packet(by_client, self.next[by_client], flags=RST | ACK)]
        first = self.packet(by_client, self.next[by_client], flags=FIN | ACK)
        self.next[by_client] += 1
        second = self.packet(not by_client, self.next[not by_client], flags=FIN | ACK)
        self.next[not by_client] += 1
        return [first, second]


def write_packets(path: str | Path, packets: list[bytes], *, linktype: int = ETHERNET, format: str = "pcap",
                  start: float = 1_700_000_000.0, step: float = 0.000_1) -> None:
    """IP packets to a capture file, one ``step`` seconds apart."""
    with PcapWriter(path, linktype, format=format) as writer:
        for number, packet in enumerate(packets):
            writer.write(start + number * step, link_frame(linktype, packet))
