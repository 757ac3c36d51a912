"""A TCP proxy in front of a Kafka broker that records each request frame with its response frame.

Bytes pass through unchanged and at once; a copy of each direction is cut into size-prefixed
frames, and responses are paired with requests by correlation id per connection. Pointing a
broker's ``advertised.listeners`` at the proxy routes every client, and the broker's own
broker-to-broker requests (transaction markers), through it.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass

SIZE = struct.Struct(">i")
HEADER = struct.Struct(">hhih")  # api key, api version, correlation id, client id length


@dataclass
class RecordedExchange:
    client_id: str | None
    api_key: int
    version: int
    request: bytes  # whole frames, size prefix included
    response: bytes


class FrameRecorder:
    """Listens on 127.0.0.1 (``port``); ``upstream()`` names the broker when a client connects."""

    def __init__(self, upstream: Callable[[], tuple[str, int]]):
        self.upstream = upstream
        self.exchanges: list[RecordedExchange] = []
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._server.close()
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                broker = socket.create_connection(self.upstream())
            except OSError:
                client.close()
                continue
            self._sockets += [client, broker]
            pending: dict[int, tuple[bytes, int, int, str | None]] = {}
            threading.Thread(target=self._pump, args=(client, broker, self._on_request, pending), daemon=True).start()
            threading.Thread(target=self._pump, args=(broker, client, self._on_response, pending), daemon=True).start()

    def _pump(self, source: socket.socket, destination: socket.socket, on_frame, pending: dict) -> None:
        buffer = bytearray()
        try:
            while chunk := source.recv(1 << 16):
                destination.sendall(chunk)
                buffer += chunk
                while len(buffer) >= 4 and len(buffer) >= 4 + SIZE.unpack_from(buffer)[0]:
                    end = 4 + SIZE.unpack_from(buffer)[0]
                    on_frame(bytes(buffer[:end]), pending)
                    del buffer[:end]
        except OSError:
            pass
        finally:
            for sock in (source, destination):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    @staticmethod
    def _on_request(frame: bytes, pending: dict) -> None:
        if len(frame) < 4 + HEADER.size:
            return
        api_key, version, correlation, client_id_length = HEADER.unpack_from(frame, 4)
        start = 4 + HEADER.size
        client_id = None if client_id_length < 0 else \
            frame[start: start + client_id_length].decode("utf-8", "replace")
        pending[correlation] = (frame, api_key, version, client_id)

    def _on_response(self, frame: bytes, pending: dict) -> None:
        if len(frame) < 8:
            return
        request = pending.pop(SIZE.unpack_from(frame, 4)[0], None)
        if request is None:
            return
        request_frame, api_key, version, client_id = request
        with self._lock:
            self.exchanges.append(RecordedExchange(client_id, api_key, version, request_frame, frame))
