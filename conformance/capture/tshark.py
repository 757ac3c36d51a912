"""What tshark's Kafka dissector sees in a capture: an independent check of our decoder.

Wireshark 4.0 (Debian bookworm) decodes every request and response header, but bodies only
for the API versions in :data:`DISSECTED_VERSIONS` (measured with synthetic headers; see the
tooling notes); beyond them its error codes are garbage, so comparisons must stop there.
When a request's body throws it ("Malformed Packet"), tshark forgets the request, and the
response shows only its correlation id ("Request missing"): no API key, no request frame.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# api_key -> highest version tshark 4.0.17 dissects (all from v0); keys 48 and up are unknown to it.
DISSECTED_VERSIONS = {
    0: 8, 1: 11, 2: 5, 3: 9, 4: 4, 5: 2, 6: 6, 7: 3, 8: 8, 9: 7, 10: 3, 11: 7, 12: 4, 13: 4, 14: 5,
    15: 5, 16: 3, 17: 1, 18: 3, 19: 5, 20: 4, 21: 1, 22: 3, 23: 3, 24: 1, 25: 1, 26: 1, 27: 0, 28: 3,
    29: 2, 30: 2, 31: 2, 32: 2, 33: 1, 36: 2, 37: 2, 42: 2, 44: 1, 45: 0, 46: 0, 47: 0,
}
FIELDS = ["frame.number", "tcp.srcport", "tcp.dstport", "kafka.api_key", "kafka.api_version",
          "kafka.correlation_id", "kafka.request_frame", "kafka.error"]


def tshark_dissects(api_key: int, version: int) -> bool:
    return version <= DISSECTED_VERSIONS.get(api_key, -1)


@dataclass
class TsharkPacket:
    """The Kafka PDUs tshark reports in one packet (it reports a PDU in the packet that ends it)."""

    number: int
    source_port: int
    api_keys: list[int] = field(default_factory=list)  # empty for a response whose request tshark lost
    versions: list[int] = field(default_factory=list)  # requests only: tshark leaves it out of responses
    correlation_ids: list[int] = field(default_factory=list)
    request_frames: list[int] = field(default_factory=list)  # responses only
    errors: list[int] = field(default_factory=list)  # every kafka.error of every PDU, in tree order


def tshark_available() -> str | None:
    return None if shutil.which("tshark") else "no tshark (apt-get install tshark)"


def tshark_packets(path: str | Path, ports: list[int]) -> dict[int, TsharkPacket]:
    """Packets with at least one Kafka PDU, by frame number, with ``ports`` decoded as Kafka."""
    command = [shutil.which("tshark") or "tshark", "-r", str(path), "-T", "fields",
               "-E", "occurrence=a", "-E", "aggregator=;", "-E", "separator=\t"]
    for port in ports:
        command += ["-d", f"tcp.port=={port},kafka"]
    for name in FIELDS:
        command += ["-e", name]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    packets = {}
    for line in result.stdout.splitlines():
        columns = line.split("\t")
        if len(columns) < len(FIELDS) or not columns[5]:  # no correlation id: no Kafka PDU ends here
            continue
        number, source_port = int(columns[0]), int(columns[1])
        packets[number] = TsharkPacket(number, source_port, *(_integers(column) for column in columns[3:]))
    return packets


def _integers(column: str) -> list[int]:
    return [int(value) for value in column.split(";") if value != ""]
