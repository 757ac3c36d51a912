"""What a capture says happened: Kafka exchanges and connection closes, as the wire saw them.

A :class:`~conformance.client.transcript.Exchange` is the client's view of one request; a
:class:`WireExchange` is the same thing read back from packets, so it also knows the TCP
endpoints, the packet numbers (to find the frame in Wireshark) and what went wrong on the wire.
Results files are loaded into this model too, so a diff never cares where its input came from.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from ..client.transcript import jsonable

Endpoint = tuple[str, int]  # (address, port)


@dataclass(slots=True)
class WireExchange:
    """One request frame and the response frame with its correlation id (if any came)."""

    connection: str  # "client:port>server:port" from a capture, the transcript's name from a results file
    api: str  # the spec name, or "Unknown(<key>)" for an API no spec defines
    api_key: int
    version: int
    correlation_id: int
    request_bytes: bytes  # the whole frame, size prefix included (as in a transcript)
    response_bytes: bytes | None = None
    request_header: dict | None = None
    request: dict | None = None  # the decoded body; None when it did not decode
    response_header: dict | None = None
    response: dict | None = None
    sent_at: float | None = None  # time of the request's first byte
    received_at: float | None = None  # time of the response's last byte
    request_packet: int | None = None  # 1-based number of the packet that completed the frame
    response_packet: int | None = None
    step: str | None = None
    problems: list[str] = field(default_factory=list)
    endpoints: tuple[Endpoint, Endpoint] | None = None  # (client, server) from a capture

    @property
    def elapsed_ms(self) -> float | None:
        if self.received_at is None or self.sent_at is None:
            return None
        return round((self.received_at - self.sent_at) * 1000, 3)

    def to_json(self, *, with_bytes: bool = True) -> dict:
        record = {
            "kind": "exchange", "connection": self.connection, "api": self.api, "api_key": self.api_key,
            "version": self.version, "correlation_id": self.correlation_id, "step": self.step,
            "sent_at": self.sent_at, "received_at": self.received_at, "elapsed_ms": self.elapsed_ms,
            "request_packet": self.request_packet, "response_packet": self.response_packet,
            "request_header": jsonable(self.request_header), "request": jsonable(self.request),
            "response_header": jsonable(self.response_header), "response": jsonable(self.response),
            "problems": list(self.problems),
            "client": list(self.endpoints[0]) if self.endpoints else None,
            "server": list(self.endpoints[1]) if self.endpoints else None,
        }
        if with_bytes and self.api_key == 36:  # SaslAuthenticate: its frames carry secrets
            record["request_bytes"] = record["response_bytes"] = "<redacted>"
        elif with_bytes:
            record["request_bytes"] = base64.b64encode(self.request_bytes).decode()
            record["response_bytes"] = (None if self.response_bytes is None
                                        else base64.b64encode(self.response_bytes).decode())
        return record


@dataclass
class ConnectionEvent:
    """A connection ending: who ended it and how (``FIN``, ``RST``, or ``unknown`` from a transcript)."""

    connection: str
    at: float | None
    by: str  # "client" or "server"
    how: str
    packet: int | None = None

    def to_json(self) -> dict:
        return {"kind": "close", "connection": self.connection, "at": self.at, "by": self.by,
                "how": self.how, "packet": self.packet}


@dataclass
class WireCapture:
    """Everything read from one capture file."""

    exchanges: list[WireExchange] = field(default_factory=list)
    events: list[ConnectionEvent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # connections that were not Kafka, lost bytes ...
    packets: int = 0
    frames: int = 0

    def timeline(self) -> list[WireExchange | ConnectionEvent]:
        """Exchanges and closes in time order (what a diff compares)."""
        def moment(item) -> float:
            value = (item.sent_at or item.received_at) if isinstance(item, WireExchange) else item.at
            return value if value is not None else 0.0

        return sorted([*self.exchanges, *self.events], key=moment)


def connection_label(client: Endpoint, server: Endpoint) -> str:
    return f"{_host(client)}>{_host(server)}"


def _host(endpoint: Endpoint) -> str:
    address, port = endpoint
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
