"""A Kafka-speaking server on loopback whose answers a test scripts: the misbehaving targets of verdict tests.

It answers what any case needs to get going (ApiVersions, Metadata naming itself as every leader,
FindCoordinator, CreateTopics, DeleteTopics, ListOffsets) and hands every request to
``handler(api, version, body)`` first, which returns a response body (a dict, or bytes written as the body as they are), ``None`` for the default
answer (every field at its default: no error), or one of the behaviours below. ``mode`` makes the
whole server misbehave: ``hang`` (accepts, never answers), ``http`` (answers like a web server),
``truncate`` (sends half of every frame, then closes).

``on_unknown_key`` is what it does with a request whose API key it does not know: ``CLOSE`` (Kafka's
answer) or ``DIE`` (a broker that crashes on it). ``port`` listens on a given port: a test brings a dead
fake back where the harness expects it (:meth:`FakeKafka.revived`). A fake to be brought back is made
``revivable``: its port is then outside the range the kernel hands out to outgoing connections, so that while it
is dead no connection of another process (a full run has thousands) takes its port and the revival's bind fails.

``tls`` (a server ``ssl.SSLContext``) makes it a TLS listener; ``sasl`` (a :class:`Sasl`) makes it
require SASL as Kafka does: before authenticating only ApiVersions and the SASL requests are
answered (anything else closes the connection), PLAIN and SCRAM are checked against the users, and
with a session lifetime (KIP-368) a request after the session ended closes the connection.
"""

from __future__ import annotations

import errno
import random
import socket
import ssl
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

from conformance.protocol import frames
from conformance.protocol.codec import default_codec
from conformance.protocol.exceptions import DecodeError

CODEC = default_codec()
KNOWN_KEYS = frozenset(spec.api_key for spec in CODEC.registry.apis())
CLOSE = "close"  # handler answer: close this connection without answering
SILENT = "silent"  # handler answer: keep the connection, never answer this request
DIE = "die"  # handler answer: close the connection and stop listening, like a crashed broker


@dataclass
class Sasl:
    """What a SASL listener of the fake enables: mechanisms, users and passwords, a session lifetime."""

    users: dict[str, str]
    mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
    lifetime_ms: int = 0
    # OAUTHBEARER: the user a bearer token stands for, or None to refuse it (RFC 7628's JSON error)
    bearer: Callable[[str], str | None] | None = None
    # (connection number, mechanism, user, succeeded) for every authentication, re-authentications included
    log: list[tuple[int, str, str, bool]] = field(default_factory=list)


PRE_AUTHENTICATION = ("ApiVersions", "SaslHandshake", "SaslAuthenticate")


def _listen(port: int, revivable: bool) -> socket.socket:
    """A listening socket on loopback: on ``port`` (retried a moment while the dead fake's connections close), else
    on a free port, below the kernel's range for outgoing connections if ``revivable``."""
    if port:
        deadline = time.monotonic() + 5
        while True:
            try:
                return socket.create_server(("127.0.0.1", port))
            except OSError as error:
                if error.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
    if revivable:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            lowest_outgoing = int(ports.read().split()[0])
        for candidate in random.sample(range(10_000, lowest_outgoing), 50):
            try:
                return socket.create_server(("127.0.0.1", candidate))
            except OSError:
                continue
    return socket.create_server(("127.0.0.1", 0))


class FakeKafka:
    def __init__(self, handler=None, *, mode: str = "answer", apis: dict[str, tuple[int, int]] | None = None,
                 tls: ssl.SSLContext | None = None, sasl: Sasl | None = None, on_unknown_key: str = CLOSE,
                 port: int = 0, revivable: bool = False):
        self.handler = handler or (lambda api, version, body: None)
        self.on_unknown_key = on_unknown_key
        self.mode = mode
        self.apis = apis
        self.tls = tls
        self.sasl = sasl
        self.connections = 0
        self.requests: list[tuple[str, int]] = []
        self.server = _listen(port, revivable)
        self.port = self.server.getsockname()[1]
        self.alive = True
        self._clients: list[socket.socket] = []
        self._topic_ids: dict[str, uuid.UUID] = {}
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def revived(self) -> "FakeKafka":
        """A new fake like this one on the same port, as a supervisor restarts a crashed broker."""
        return FakeKafka(self.handler, mode=self.mode, apis=self.apis, tls=self.tls, sasl=self.sasl,
                         on_unknown_key=self.on_unknown_key, port=self.port, revivable=True)

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
        self.connections += 1
        state = {"connection": self.connections, "authenticated": False, "expires": None}
        if self.tls is not None:
            try:
                client.settimeout(5)
                client = self.tls.wrap_socket(client, server_side=True)
                client.settimeout(None)
            except (OSError, ssl.SSLError):
                client.close()
                return
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
                try:
                    payloads, used = frames.split_frames(buffer)
                except DecodeError:  # a size no frame can have: Kafka closes the connection
                    return
                del buffer[:used]
                for payload in payloads:
                    if self.mode == "hang":
                        continue
                    answer = self._answer(payload, state)
                    if answer == DIE:
                        self.stop()
                        return
                    if answer == CLOSE:
                        return
                    if answer == SILENT:
                        continue
                    if not self.alive:  # it died while this request was handled: a dead broker answers nothing
                        return
                    if self.mode == "truncate":
                        client.sendall(answer[: len(answer) // 2])
                        return
                    try:
                        client.sendall(answer)
                    except OSError:  # closed by stop() meanwhile
                        return

    def _answer(self, payload: bytes, state: dict | None = None):
        api_key, version, correlation = frames.peek_request_header(payload)
        if api_key not in KNOWN_KEYS:
            self.requests.append((f"key {api_key}", version))
            return self.on_unknown_key
        api = CODEC.registry.api(api_key).name
        try:
            _, body = frames.decode_request(CODEC, payload)
        except Exception:  # noqa: BLE001 - a deliberately malformed request: a real broker closes
            return CLOSE
        self.requests.append((api, version))
        if self.sasl is not None and state is not None:
            if state["expires"] is not None and time.monotonic() > state["expires"]:
                return CLOSE  # Kafka closes a connection whose session ended on its next request
            if api in ("SaslHandshake", "SaslAuthenticate"):
                return frames.encode_response(CODEC, api, version, correlation, self._sasl(api, version, body, state))
            if not state["authenticated"] and api not in PRE_AUTHENTICATION:
                return CLOSE
        answer = self.handler(api, version, body)
        if isinstance(answer, str):
            return answer
        if isinstance(answer, bytes):  # the body as bytes: a layout no version of the spec has
            header = CODEC.encode_message("ResponseHeader", frames.response_header_version(CODEC, api_key, version),
                                          {"correlation_id": correlation})
            return frames.SIZE.pack(len(header) + len(answer)) + header + answer
        if answer is None:
            answer = self._default(api, version, body)
        return frames.encode_response(CODEC, api, version, correlation, answer)

    def _sasl(self, api: str, version: int, body: dict, state: dict) -> dict:
        """Kafka's server side of KIP-43/152/368: a handshake names the mechanism, tokens follow."""
        sasl = self.sasl
        if api == "SaslHandshake":
            state["authenticated"] = False
            if body["mechanism"] not in sasl.mechanisms:
                return {"error_code": 33, "mechanisms": list(sasl.mechanisms)}
            state["mechanism"], state["scram"] = body["mechanism"], None
            return {"error_code": 0, "mechanisms": list(sasl.mechanisms)}
        mechanism, token = state.get("mechanism"), bytes(body["auth_bytes"])
        failed = {"error_code": 58, "auth_bytes": b"",
                  "error_message": f"Authentication failed during authentication due to invalid credentials "
                                   f"with SASL mechanism {mechanism}"}
        if mechanism == "OAUTHBEARER":
            if state.get("refused"):  # the client's %x01 after the error challenge ends the exchange
                state["refused"] = False
                return failed
            fields = dict(pair.split("=", 1) for pair in token.decode().split("\x01")[1:] if "=" in pair)
            user = sasl.bearer(fields.get("auth", "").removeprefix("Bearer ")) if sasl.bearer else None
            sasl.log.append((state["connection"], mechanism, user or "?", user is not None))
            if user is None:
                state["refused"] = True
                return {"error_code": 0, "auth_bytes": b'{"status":"invalid_token"}'}
            return self._authenticated(state)
        if mechanism == "PLAIN":
            _, user, password = token.decode().split("\0")
            ok = sasl.users.get(user) == password
            sasl.log.append((state["connection"], mechanism, user, ok))
            return self._authenticated(state) if ok else failed
        from scramp import ScramException, ScramMechanism

        if state["scram"] is None:
            scram = ScramMechanism(mechanism)

            def lookup(user):
                if user not in sasl.users:
                    raise ScramException("unknown user")
                state["user"] = user
                return scram.make_auth_info(sasl.users[user], iteration_count=4096)

            server = state["scram"] = scram.make_server(lookup)
            try:
                server.set_client_first(token.decode())
            except ScramException:
                sasl.log.append((state["connection"], mechanism, "?", False))
                return failed
            return {"error_code": 0, "auth_bytes": server.get_server_first().encode()}
        server, state["scram"] = state["scram"], None
        try:
            server.set_client_final(token.decode())
        except ScramException:
            sasl.log.append((state["connection"], mechanism, state.get("user", "?"), False))
            return failed
        sasl.log.append((state["connection"], mechanism, state["user"], True))
        return {**self._authenticated(state), "auth_bytes": server.get_server_final().encode()}

    def _authenticated(self, state: dict) -> dict:
        state["authenticated"] = True
        lifetime = self.sasl.lifetime_ms
        state["expires"] = time.monotonic() + lifetime / 1000 if lifetime else None
        return {"error_code": 0, "auth_bytes": b"", "session_lifetime_ms": lifetime}

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
