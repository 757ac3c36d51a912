"""Kafka frames out of reassembled TCP streams, requests paired with responses by correlation id.

Frames are decoded with the protocol core. The compiled decoders for each (API key, version)
are looked up once per capture, not once per frame: resolving an API by key scans the spec
registry, which would cost more than decoding a small frame.
"""

from __future__ import annotations

import struct
from collections import deque

from ..protocol import frames
from ..protocol.codec import REQUEST, RESPONSE, Codec, default_codec
from .tcp import TcpConnection
from .wire import ConnectionEvent, WireCapture, WireExchange, connection_label

MAX_FRAME = 256 * 1024 * 1024  # more than any broker accepts: beyond it the stream is not Kafka
SIZE = struct.Struct(">i")
REQUEST_PREFIX = struct.Struct(">ihhi")  # size, api_key, api_version, correlation_id
RESPONSE_PREFIX = struct.Struct(">ii")  # size, correlation_id
API_VERSIONS = 18


class _Side:
    """Framing state of one direction."""

    __slots__ = ("broken", "buffer", "early", "needed", "started_at")

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.needed = 4  # bytes the buffer must hold before a frame can be complete
        self.started_at = 0.0  # time of the first byte of the frame being assembled
        self.broken: str | None = None  # why this direction is no longer read
        self.early: list[tuple[bytes, int, float]] | None = []  # bytes kept until roles are known; then None


class _Conversation:
    __slots__ = ("client_side", "closes", "ended", "endpoints", "ignored", "label", "pending", "sides")

    def __init__(self) -> None:
        self.label = ""
        self.endpoints: tuple | None = None  # (client, server) once roles are known
        self.client_side: int | None = None  # decided: which TCP side sends requests
        self.sides = (_Side(), _Side())
        self.pending: dict[int, deque[WireExchange]] = {}
        self.closes: list[tuple[int, str, int, float]] = []  # not yet reported (roles unknown)
        self.ended: dict[int, str] = {}  # side -> "FIN" or "RST"
        self.ignored = False


class _Decoders:
    """Compiled header and body decoders per (API key, version), or why there are none."""

    def __init__(self, codec: Codec):
        self.codec = codec
        self.requests: dict[tuple[int, int], tuple] = {}
        self.responses: dict[tuple[int, int], tuple] = {}
        self.names: dict[int, str] = {}

    def name(self, api_key: int) -> str:
        found = self.names.get(api_key)
        if found is None:
            try:
                found = self.codec.registry.api(api_key).request.api_name
            except Exception:  # noqa: BLE001 - an API key no spec defines
                found = f"Unknown({api_key})"
            self.names[api_key] = found
        return found

    def request(self, api_key: int, version: int) -> tuple:
        key = (api_key, version)
        found = self.requests.get(key)
        if found is None:
            found = self.requests[key] = self._compile(api_key, version, REQUEST)
        return found

    def response(self, api_key: int, version: int) -> tuple:
        key = (api_key, version)
        found = self.responses.get(key)
        if found is None:
            found = self.responses[key] = self._compile(api_key, version, RESPONSE)
        return found

    def _compile(self, api_key: int, version: int, direction: str) -> tuple:
        """(header decoder, body decoder, None) or (None, None, reason)."""
        codec = self.codec
        try:
            if direction == REQUEST:
                header_name, header_version = "RequestHeader", frames.request_header_version(codec, api_key, version)
            else:
                header_name, header_version = "ResponseHeader", frames.response_header_version(codec, api_key, version)
            header = codec.compiled(codec.registry.message(header_name), header_version).decode
            body = codec.compiled(codec.message_spec(api_key, direction), version).decode
        except Exception as error:  # noqa: BLE001 - unknown API or version: the frame stays raw
            return None, None, f"cannot decode {self.name(api_key)} v{version} {direction}s: {error}"
        return header, body, None


class KafkaDecoder:
    """The consumer a :class:`~.tcp.ConnectionTable` feeds; ``result()`` is the capture's exchanges.

    ``ports``: server ports known to carry Kafka; None to recognise Kafka connections by their
    first request (a connection without a SYN is recognised by whichever side's first frame
    decodes as a request).
    """

    def __init__(self, codec: Codec | None = None, ports: set[int] | None = None, *, bodies: bool = True):
        self.decoders = _Decoders(codec or default_codec())
        self.ports = ports
        self.bodies = bodies  # False: headers and pairing only; decode_bodies() can follow
        self.capture = WireCapture()

    def result(self) -> WireCapture:
        return self.capture

    # ---------------------------------------------------------------------- consumer interface
    def data(self, connection: TcpConnection, side: int, payload: bytes, packet: int, timestamp: float) -> None:
        conversation = connection.kafka
        if conversation is None:
            conversation = connection.kafka = self._open(connection)
        if conversation.ignored:
            return
        early = conversation.sides[side].early
        if conversation.client_side is None and early is not None:
            early.append((payload, packet, timestamp))
            self._decide(connection, conversation)
            return
        self._feed(conversation, side, payload, packet, timestamp)

    def closed(self, connection: TcpConnection, side: int, how: str, packet: int, timestamp: float) -> None:
        conversation = connection.kafka
        if conversation is None:
            conversation = connection.kafka = self._open(connection)
        if conversation.ignored:
            return
        conversation.closes.append((side, how, packet, timestamp))
        conversation.ended[side] = how
        if conversation.client_side is not None:
            self._emit_closes(conversation)

    def finished(self, connection: TcpConnection) -> None:
        conversation = connection.kafka
        if conversation is None or conversation.ignored:
            return
        if conversation.client_side is None:
            if any(side.early for side in conversation.sides):
                self.capture.notes.append(f"{_endpoints(connection)}: not recognised as Kafka "
                                          "(or the capture began in the middle of a frame)")
            return
        closed_by = conversation.ended
        for queue in conversation.pending.values():
            for exchange in queue:
                if conversation.client_side ^ 1 in closed_by:
                    exchange.problems.append(f"no response: the server closed the connection "
                                             f"({closed_by[conversation.client_side ^ 1]})")
                elif conversation.client_side in closed_by:
                    exchange.problems.append("no response: the client closed the connection first")
                else:
                    exchange.problems.append("no response before the capture ended")
        for index, side in enumerate(conversation.sides):
            role = "client" if index == conversation.client_side else "server"
            if side.broken:
                self.capture.notes.append(f"{conversation.label}: {role} bytes not read on: {side.broken}")
            elif side.buffer:
                self.capture.notes.append(f"{conversation.label}: {len(side.buffer)} bytes of an incomplete "
                                          f"{role} frame at the end")

    # ---------------------------------------------------------------------- roles
    def _open(self, connection: TcpConnection) -> _Conversation:
        conversation = _Conversation()
        if self.ports is not None:
            serving = [side for side in (0, 1) if connection.endpoints[side][1] in self.ports]
            if not serving:
                conversation.ignored = True
            else:
                client = connection.client_side
                if client is None:
                    client = 1 - serving[-1]  # both sides on Kafka ports: the first packet's receiver serves
                self._assign(connection, conversation, client)
        return conversation

    def _assign(self, connection: TcpConnection, conversation: _Conversation, client_side: int) -> None:
        conversation.client_side = client_side
        conversation.endpoints = (connection.endpoints[client_side], connection.endpoints[1 - client_side])
        conversation.label = connection_label(*conversation.endpoints)
        for side in conversation.sides:
            side.early = None

    def _decide(self, connection: TcpConnection, conversation: _Conversation) -> None:
        """Pick the client side once a side's first frame is complete; replay what was kept."""
        verdicts = {}
        for index, side in enumerate(conversation.sides):
            first = _first_frame(side.early or [])
            if first is not None:
                verdicts[index] = self._is_request(first)
        known = connection.client_side
        if known is not None:
            if known not in verdicts:
                return
            client = known if verdicts[known] else None
        elif any(verdicts.values()):
            client = next(index for index, verdict in verdicts.items() if verdict)
        elif len(verdicts) == 2:
            client = None
        else:
            return
        if client is None:
            conversation.ignored = True
            self.capture.notes.append(f"{_endpoints(connection)}: not Kafka (the first client frame is not "
                                      "a request this codec decodes)")
            return
        early = [side.early or [] for side in conversation.sides]
        self._assign(connection, conversation, client)
        for index in (client, 1 - client):  # requests first, so every response finds its request
            for payload, packet, timestamp in early[index]:
                self._feed(conversation, index, payload, packet, timestamp)
        self._emit_closes(conversation)

    def _is_request(self, frame: bytes) -> bool:
        if len(frame) < REQUEST_PREFIX.size:
            return False
        _, api_key, version, _ = REQUEST_PREFIX.unpack_from(frame)
        header, body, reason = self.decoders.request(api_key, version)
        if reason:
            return False
        try:
            _, offset = header(frame, 4)
            _, end = body(frame, offset)
        except Exception:  # noqa: BLE001 - not a request
            return False
        return end == len(frame)

    def _emit_closes(self, conversation: _Conversation) -> None:
        for side, how, packet, timestamp in conversation.closes:
            by = "client" if side == conversation.client_side else "server"
            self.capture.events.append(ConnectionEvent(conversation.label, timestamp, by, how, packet))
        conversation.closes = []

    # ---------------------------------------------------------------------- framing
    def _feed(self, conversation: _Conversation, index: int, payload: bytes, packet: int, timestamp: float) -> None:
        side = conversation.sides[index]
        if side.broken:
            return
        buffer = side.buffer
        data: bytes | bytearray
        if not buffer and len(payload) >= 4 and SIZE.unpack_from(payload)[0] + 4 == len(payload):
            # One whole frame in one segment, the usual case: no buffering at all.
            if index == conversation.client_side:
                self._request(conversation, payload, timestamp, packet)
            else:
                self._response(conversation, payload, timestamp, packet)
            return
        if buffer:
            buffer += payload
            if len(buffer) < side.needed:
                return
            data = buffer
        else:
            side.started_at = timestamp
            data = payload
        is_request = index == conversation.client_side
        position, total = 0, len(data)
        needed = 4
        while total - position >= 4:
            size = SIZE.unpack_from(data, position)[0]
            if size < 0 or size > MAX_FRAME:
                side.broken = (f"impossible frame size {size} in packet {packet} "
                               f"(bytes {bytes(data[position:position + 16]).hex()})")
                buffer.clear()
                return
            end = position + 4 + size
            if end > total:
                needed = end - position
                break
            frame = bytes(data[position:end])
            if is_request:
                self._request(conversation, frame, side.started_at, packet)
            else:
                self._response(conversation, frame, timestamp, packet)
            side.started_at = timestamp
            position = end
        side.needed = needed
        if data is buffer:
            del buffer[:position]
        elif position < total:
            buffer += data[position:]

    def _request(self, conversation: _Conversation, frame: bytes, started: float, packet: int) -> None:
        self.capture.frames += 1
        if len(frame) < REQUEST_PREFIX.size:
            exchange = WireExchange(conversation.label, "?", -1, -1, -1, frame, sent_at=started, request_packet=packet,
                                    problems=[f"request frame of {len(frame) - 4} bytes has no header"],
                                    endpoints=conversation.endpoints)
            self.capture.exchanges.append(exchange)
            return
        _, api_key, version, correlation_id = REQUEST_PREFIX.unpack_from(frame)
        exchange = WireExchange(conversation.label, self.decoders.name(api_key), api_key, version, correlation_id,
                                frame, sent_at=started, request_packet=packet, endpoints=conversation.endpoints)
        if self.bodies:
            self._decode_request(exchange)
        self.capture.exchanges.append(exchange)
        conversation.pending.setdefault(correlation_id, deque()).append(exchange)

    def decode_bodies(self, exchanges: list[WireExchange], *, response_version: int | None = None) -> None:
        """Decode what a ``bodies=False`` read left as bytes (or a transcript's frames);
        ``response_version`` when answers were read as another version than the request's."""
        for exchange in exchanges:
            if exchange.api_key < 0:
                continue
            if exchange.request is None and exchange.request_bytes:
                self._decode_request(exchange)
            if exchange.response is None and exchange.response_bytes is not None:
                self._decode_response(exchange, exchange.response_bytes, response_version)

    def _decode_request(self, exchange: WireExchange) -> None:
        frame = exchange.request_bytes
        header, body, reason = self.decoders.request(exchange.api_key, exchange.version)
        if reason:
            exchange.problems.append(reason)
            return
        try:
            exchange.request_header, offset = header(frame, 4)
            exchange.request, end = body(frame, offset)
        except Exception as error:  # noqa: BLE001 - whatever the bytes are, they are kept and reported
            exchange.problems.append(f"request does not decode: {error}")
            return
        if end != len(frame):
            exchange.problems.append(f"{len(frame) - end} bytes left over after the request body")
        _redact_sasl(exchange, "request")

    def _response(self, conversation: _Conversation, frame: bytes, completed: float, packet: int) -> None:
        self.capture.frames += 1
        if len(frame) < RESPONSE_PREFIX.size:
            self._orphan(conversation, frame, completed, packet, -1, "response frame has no correlation id")
            return
        correlation_id = RESPONSE_PREFIX.unpack_from(frame)[1]
        queue = conversation.pending.get(correlation_id)
        if not queue:
            self._orphan(conversation, frame, completed, packet, correlation_id,
                         f"response with correlation id {correlation_id} matches no request")
            return
        exchange = queue.popleft()
        if not queue:
            del conversation.pending[correlation_id]
        exchange.response_bytes, exchange.received_at, exchange.response_packet = frame, completed, packet
        if self.bodies:
            self._decode_response(exchange, frame)

    def _decode_response(self, exchange: WireExchange, frame: bytes, version: int | None = None) -> None:
        header, body, reason = self.decoders.response(exchange.api_key, exchange.version if version is None else version)
        if reason:
            exchange.problems.append(reason)
            return
        try:
            exchange.response_header, offset = header(frame, 4)
            exchange.response, end = body(frame, offset)
        except Exception as error:  # noqa: BLE001 - kept raw, with the reason
            if exchange.api_key == API_VERSIONS and exchange.version and self._api_versions_v0(exchange, frame):
                return
            exchange.problems.append(f"response does not decode: {error}")
            return
        if end != len(frame):
            exchange.problems.append(f"{len(frame) - end} bytes left over after the response body")
        _redact_sasl(exchange, "response")

    def _api_versions_v0(self, exchange: WireExchange, frame: bytes) -> bool:
        """KIP-511: a broker answers an ApiVersions version it does not know with a v0 body."""
        header, body, _ = self.decoders.response(API_VERSIONS, 0)
        try:
            exchange.response_header, offset = header(frame, 4)
            response, end = body(frame, offset)
        except Exception:  # noqa: BLE001 - not a v0 body either
            return False
        if end != len(frame):
            return False
        exchange.response = response
        exchange.problems.append(f"answered with an ApiVersions v0 body (error {response['error_code']})")
        return True

    def _orphan(self, conversation: _Conversation, frame: bytes, completed: float, packet: int,
                correlation_id: int, problem: str) -> None:
        self.capture.exchanges.append(WireExchange(
            conversation.label, "?", -1, -1, correlation_id, b"", response_bytes=frame, received_at=completed,
            response_packet=packet, problems=[problem], endpoints=conversation.endpoints))


SASL_AUTHENTICATE = 36


def _redact_sasl(exchange: WireExchange, side: str) -> None:
    """SASL tokens (a PLAIN password, SCRAM proofs and signatures) are never shown in a decoded capture."""
    body = getattr(exchange, side)
    if exchange.api_key == SASL_AUTHENTICATE and isinstance(body, dict) and "auth_bytes" in body:
        setattr(exchange, side, {**body, "auth_bytes": "<redacted>"})


def _first_frame(chunks: list[tuple[bytes, int, float]]) -> bytes | None:
    """The first complete frame of kept chunks, None if it is not complete yet; for an impossible
    size, just that size (which no request decoder accepts)."""
    total = sum(len(chunk) for chunk, _, _ in chunks)
    if total < 4:
        return None
    head = chunks[0][0] if len(chunks[0][0]) >= 4 else b"".join(chunk for chunk, _, _ in chunks)
    size = SIZE.unpack_from(head)[0]
    if size < 8 or size > MAX_FRAME:
        return head[:4]
    if total < 4 + size:  # joined only once the frame is whole: a big first frame stays linear
        return None
    return b"".join(chunk for chunk, _, _ in chunks)[: 4 + size]


def _endpoints(connection: TcpConnection) -> str:
    (first, first_port), (second, second_port) = connection.endpoints
    return f"{first}:{first_port} <-> {second}:{second_port}"
