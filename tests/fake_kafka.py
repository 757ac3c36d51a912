"""A Kafka-speaking server on loopback whose answers a test scripts: the misbehaving targets of verdict tests.

It answers what any case needs to get going (ApiVersions, Metadata naming itself as every leader,
FindCoordinator, CreateTopics, DeleteTopics, ListOffsets) and hands every request to
``handler(api, version, body)`` first, which returns a response body, ``None`` for the default
answer (every field at its default: no error), or one of the behaviours below. ``mode`` makes the
whole server misbehave: ``hang`` (accepts, never answers), ``http`` (answers like a web server),
``truncate`` (sends half of every frame, then closes).
"""

from __future__ import annotations

import socket
import threading
import uuid

from conformance.protocol import frames
from conformance.protocol.codec import default_codec

CODEC = default_codec()
CLOSE = "close"  # handler answer: close this connection without answering
SILENT = "silent"  # handler answer: keep the connection, never answer this request
DIE = "die"  # handler answer: close the connection and stop listening, like a crashed broker


class FakeKafka:
    def __init__(self, handler=None, *, mode: str = "answer", apis: dict[str, tuple[int, int]] | None = None):
        self.handler = handler or (lambda api, version, body: None)
        self.mode = mode
        self.apis = apis
        self.requests: list[tuple[str, int]] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.alive = True
        self._clients: list[socket.socket] = []
        self._topic_ids: dict[str, uuid.UUID] = {}
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop listening and drop every connection: from the client's side, the broker died."""
        self.alive = False
        for connection in [self.server, *self._clients]:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()

    def _accept(self) -> None:
        while self.alive:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self._clients.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        buffer = bytearray()
        with client:
            while self.alive:
                try:
                    chunk = client.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                if self.mode == "http":
                    client.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                buffer += chunk
                payloads, used = frames.split_frames(buffer)
                del buffer[:used]
                for payload in payloads:
                    if self.mode == "hang":
                        continue
                    answer = self._answer(payload)
                    if answer == DIE:
                        self.stop()
                        return
                    if answer == CLOSE:
                        return
                    if answer == SILENT:
                        continue
                    if self.mode == "truncate":
                        client.sendall(answer[: len(answer) // 2])
                        return
                    client.sendall(answer)

    def _answer(self, payload: bytes):
        api_key, version, correlation = frames.peek_request_header(payload)
        api = CODEC.registry.api(api_key).name
        try:
            _, body = frames.decode_request(CODEC, payload)
        except Exception:  # noqa: BLE001 - a deliberately malformed request: a real broker closes
            return CLOSE
        self.requests.append((api, version))
        answer = self.handler(api, version, body)
        if isinstance(answer, str):
            return answer
        if answer is None:
            answer = self._default(api, version, body)
        return frames.encode_response(CODEC, api, version, correlation, answer)

    def _default(self, api: str, version: int, body: dict) -> dict:
        node = {"node_id": 1, "host": "127.0.0.1", "port": self.port, "rack": None}
        if api == "ApiVersions":
            apis = self.apis or {spec.name: (spec.versions()[0], spec.versions()[-1])
                                 for spec in CODEC.registry.apis() if spec.versions()}
            return {"api_keys": [{"api_key": CODEC.registry.api(name).api_key, "min_version": low, "max_version": high}
                                 for name, (low, high) in apis.items()]}
        if api == "Metadata":
            names = [topic["name"] for topic in body.get("topics") or []]
            return {"brokers": [node], "cluster_id": "fake", "controller_id": 1, "topics": [
                {"name": name, "topic_id": self._topic_ids.setdefault(name, uuid.uuid4()),
                 "partitions": [{"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}]}
                for name in names]}
        if api == "FindCoordinator":
            keys = body.get("coordinator_keys") or [body.get("key")]
            return {**node, "coordinators": [{"key": key, **node} for key in keys]}
        if api == "CreateTopics":
            return {"topics": [{"name": topic["name"]} for topic in body["topics"]]}
        if api == "ListOffsets":
            return {"topics": [{"name": topic["name"], "partitions": [
                {"partition_index": partition["partition_index"]} for partition in topic["partitions"]]}
                for topic in body["topics"]]}
        return {}
