"""The record of every exchange a case made: what reports and wire diffs are built from."""

from __future__ import annotations

import base64
import threading
import time
import uuid
from dataclasses import dataclass, field

import orjson


@dataclass
class Exchange:
    """One request and what came back (a response, a timeout, a closed connection or garbage)."""

    connection: str
    api: str
    api_key: int
    version: int
    correlation_id: int
    request: dict
    request_bytes: bytes
    sent_at: float
    response: dict | None = None
    response_header: dict | None = None
    response_bytes: bytes | None = None
    received_at: float | None = None
    problem: str | None = None  # "timeout", "disconnected", "garbage" or None
    diagnosis: str | None = None
    step: str | None = None  # the suite step that made it, when a runner made it
    response_version: int | None = None  # when the answer is decoded as another version
    trailing_bytes: int = 0  # bytes the broker sent after the response body (a deviation of its own)
    # where a response that does not decode broke: the field's path (the same for every item that meets the
    # same fault, unlike the byte offset, so that results can group the items by it)
    decode_path: str | None = None

    @property
    def answer(self) -> dict:
        """The decoded response of an exchange that got one (every exchange :meth:`Connection.receive` returns)."""
        if self.response is None:
            raise ValueError(f"{self.api} v{self.version} has no response ({self.problem or 'none received yet'})")
        return self.response

    @property
    def elapsed_ms(self) -> float | None:
        if self.received_at is None:
            return None
        return round((self.received_at - self.sent_at) * 1000, 3)

    @property
    def shown_response(self) -> dict | None:
        """The response as reports show it: a SASL token from the broker (SCRAM's salt, nonce and
        signature: enough to test password guesses offline) is redacted like the client's."""
        if self.api == "SaslAuthenticate" and isinstance(self.response, dict) and "auth_bytes" in self.response:
            return {**self.response, "auth_bytes": "<redacted>"}
        return self.response

    def to_json(self) -> dict:
        secret = self.api == "SaslAuthenticate"
        return {
            "connection": self.connection, "api": self.api, "api_key": self.api_key,
            "version": self.version, "correlation_id": self.correlation_id, "step": self.step,
            "sent_at": self.sent_at, "received_at": self.received_at, "elapsed_ms": self.elapsed_ms,
            "request": jsonable(self.request), "response": jsonable(self.shown_response),
            "response_header": jsonable(self.response_header),
            "request_bytes": base64.b64encode(self.request_bytes).decode(),
            "response_bytes": None if self.response_bytes is None
            else base64.b64encode(b"<redacted>" if secret else self.response_bytes).decode(),
            "problem": self.problem, "diagnosis": self.diagnosis, "trailing_bytes": self.trailing_bytes,
        }


def jsonable(value):
    """Decoded messages as JSON: bytes become {"base64": ...}, UUIDs strings, anything else unknown its repr.

    Every item's transcript goes through here, so orjson does the walk in C (a round trip through its
    bytes); what it cannot take (an integer beyond 64 bits, a tuple as a key) goes the slower way."""
    try:
        return orjson.loads(orjson.dumps(value, default=_leaf, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:  # orjson.JSONEncodeError is one
        return _walk(value)


def _leaf(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode(), "length": len(value)}
    return repr(value)


def _walk(value):
    if isinstance(value, dict):
        return {str(key): _walk(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(item) for item in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return _leaf(value)


@dataclass
class Transcript:
    """Exchanges in the order they were sent; thread-safe because parallel steps share one."""

    exchanges: list[Exchange] = field(default_factory=list)
    redactions: tuple[str, ...] = ("sasl_auth_bytes", "auth_bytes", "password")

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, exchange: Exchange) -> None:
        for key in self.redactions:  # secrets never reach a transcript
            if key in exchange.request:
                exchange.request = {**exchange.request, key: "<redacted>"}
                exchange.request_bytes = b"<redacted>"
        with self._lock:
            self.exchanges.append(exchange)

    def to_json(self) -> list[dict]:
        with self._lock:
            return [exchange.to_json() for exchange in self.exchanges]

    def render(self, focus: str | None = None) -> str:
        """A human-readable transcript for failure reports and Allure attachments.

        With ``focus`` (a step label), only that step's exchanges show their bodies; the others are one
        line each and ApiVersions negotiations a count: a terminal shows the evidence, the files keep all.
        """
        lines = []
        exchanges = list(self.exchanges)
        origin = exchanges[0].sent_at if exchanges else time.time()
        if focus is not None and not any(exchange.step == focus for exchange in exchanges):
            focus_index = len(exchanges) - 1  # no exchange of that step: the last one is the evidence
        else:
            focus_index = None
        negotiations = 0
        for index, exchange in enumerate(exchanges):
            full = focus is None or exchange.step == focus or index == focus_index
            if not full and exchange.api == "ApiVersions" and not exchange.problem:
                negotiations += 1
                continue
            offset = (exchange.sent_at - origin) * 1000
            status = exchange.problem or f"{exchange.elapsed_ms} ms"
            step = f" [{exchange.step}]" if exchange.step else ""
            lines.append(f"+{offset:8.1f} ms {exchange.connection} {exchange.api} v{exchange.version} "
                         f"corr={exchange.correlation_id}{step} -> {status}")
            if full:
                lines.append(f"    request:  {_short(jsonable(exchange.request))}")
                if exchange.response is not None:
                    lines.append(f"    response: {_short(jsonable(exchange.shown_response))}")
            if exchange.diagnosis:
                lines.append(f"    problem:  {exchange.diagnosis}")
        if negotiations:
            lines.append(f"({negotiations} ApiVersions exchanges not shown)")
        return "\n".join(lines)


def _short(value, limit: int = 2000) -> str:
    import json

    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
