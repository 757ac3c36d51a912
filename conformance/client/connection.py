"""One TCP connection to one broker: correlation ids, pipelining, timeouts, precise diagnoses.

Blocking sockets with deadlines keep this simple; parallel suite branches use their own
connections from threads. Encoding and decoding come from the sans-IO protocol core.
"""

from __future__ import annotations

import itertools
import random
import socket
import ssl
import threading
import time
from typing import Callable, NoReturn

from ..protocol import frames
from ..protocol.codec import Codec
from ..protocol.exceptions import DecodeError, ProtocolError
from .transcript import Exchange, Transcript

MAX_FRAME = 256 * 1024 * 1024
# CPython allocates the whole size before each recv; 1 MiB meant an mmap per read (a fifth of an exchange)
READ_SIZE = 64 * 1024


class ClientError(Exception):
    """A request got no usable answer; ``exchange`` holds what was sent and what came back."""

    problem = "error"

    def __init__(self, message: str, exchange: Exchange | None = None):
        super().__init__(message)
        self.exchange = exchange


class ResponseTimeout(ClientError):
    problem = "timeout"


class Disconnected(ClientError):
    problem = "disconnected"


class GarbageResponse(ClientError):
    problem = "garbage"


class SecurityFailure(ClientError):
    """The connection could not be secured or authenticated (TLS handshake, certificates, SASL); the
    message says which in one line and holds no secret."""

    problem = "security"


# KIP-368: like Kafka's clients, re-authenticate at a random point between 85% and 95% of the session.
REAUTHENTICATE_AT = (0.85, 0.95)


class Connection:
    """A connection to ``host:port``; ``name`` labels it in transcripts (``bootstrap``, ``node-1``)."""

    def __init__(self, host: str, port: int, codec: Codec, transcript: Transcript, *,
                 name: str | None = None, client_id: str = "kafka-conformance",
                 timeout: float = 10.0, ssl_context: ssl.SSLContext | None = None,
                 authenticate: Callable[["Connection", str], int] | None = None):
        """``authenticate(connection, step)`` runs after every (re)connect, e.g. a SASL exchange, and
        returns the session lifetime in ms the broker granted (0: none); before it ends the connection
        authenticates again on the same socket (KIP-368)."""
        self.host, self.port = host, port
        self.codec = codec
        self.transcript = transcript
        self.name = name or f"{host}:{port}"
        self.client_id = client_id
        self.timeout = timeout
        self.ssl_context = ssl_context
        self._socket: socket.socket | None = None
        self._buffer = bytearray()
        self._correlation = itertools.count(1)
        self._pending: dict[int, Exchange] = {}
        self._lock = threading.RLock()
        self.closed_by_peer = False
        self._authenticate = authenticate
        self._authenticating = False
        self._session_started: float | None = None  # monotonic time the current session began (or earlier)
        self._session_ends: float | None = None  # when the broker ends it; None: no limit
        self._reauthenticate_at: float | None = None
        self._timer: threading.Timer | None = None
        self.reauthentications = 0

    # ---------------------------------------------------------------------- socket
    def connect(self) -> None:
        with self._lock:
            if self._socket is not None:
                return
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except OSError as error:
                raise Disconnected(f"cannot connect to {self.host}:{self.port}: {error}") from None
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.ssl_context is not None:
                try:
                    sock = self.ssl_context.wrap_socket(sock, server_hostname=self.host)
                except (OSError, ssl.SSLError) as error:
                    sock.close()
                    raise SecurityFailure(f"{self.host}:{self.port}: {tls_diagnosis(error, self.host, self.ssl_context)}") from None
            self._socket = sock
            self.closed_by_peer = False
            if self._authenticate is not None:
                self._login("sasl")

    def _login(self, step: str) -> None:
        """Authenticates on the open socket; a failure closes it and raises."""
        self._authenticating = True
        began = time.monotonic()  # before the request: the broker's clock for the session starts later
        assert self._authenticate is not None, "a login only where a SASL mechanism is configured"
        try:
            lifetime_ms = self._authenticate(self, step)
        except BaseException:
            self.close()
            raise
        finally:
            self._authenticating = False
        self._schedule_reauthentication(began, lifetime_ms)

    def _schedule_reauthentication(self, began: float, lifetime_ms: int) -> None:
        self._cancel_timer()
        if not lifetime_ms or lifetime_ms <= 0:
            self._session_started = self._session_ends = self._reauthenticate_at = None
            return
        lifetime = lifetime_ms / 1000
        self._session_started, self._session_ends = began, began + lifetime
        self._reauthenticate_at = began + lifetime * random.uniform(*REAUTHENTICATE_AT)
        # an idle connection must not outlive its session either: a timer re-authenticates it
        timer = threading.Timer(max(0.0, self._reauthenticate_at - time.monotonic()), self._reauthenticate_when_idle)
        timer.daemon = True
        self._timer = timer
        timer.start()

    def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _reauthenticate_when_idle(self) -> None:
        """On the timer's thread: re-authenticate once no request is in flight, before the session ends."""
        timer = self._timer
        while self._socket is not None and self._timer is timer and self._session_ends is not None:
            if time.monotonic() >= self._session_ends:
                return  # too late for this socket: the next request reconnects
            if self._lock.acquire(timeout=0.05):
                try:
                    if self._timer is not timer or self._socket is None:
                        return
                    if not self._pending:
                        try:
                            self._reauthenticate()
                        except (ClientError, OSError):
                            self.close()  # the next request reconnects and authenticates afresh
                        return
                finally:
                    self._lock.release()
            time.sleep(0.05)

    def _reauthenticate(self) -> None:
        self.reauthentications += 1
        self._login("reauthenticate")

    def _keep_session(self) -> None:
        """Before a request: re-authenticate when due; a session already over means a new connection (the
        broker closes one whose session ended on its next request)."""
        if self._session_ends is None or self._authenticating:
            return
        now = time.monotonic()
        if now >= self._session_ends and not self._pending:
            self.close()
            self.connect()
        elif self._reauthenticate_at is not None and now >= self._reauthenticate_at:
            self._reauthenticate()

    def _tls_alert(self) -> str | None:
        """Why the broker ended a TLS connection, when an alert it sent before closing says (a refused
        client certificate arrives after the handshake in TLS 1.3, often before the first write fails)."""
        if not isinstance(self._socket, ssl.SSLSocket):
            return None
        try:
            self._socket.settimeout(1.0)
            self._socket.recv(1)
        except ssl.SSLError as error:
            if getattr(error, "reason", None) and "ALERT" in error.reason.upper():
                return f"TLS error: {tls_diagnosis(error, self.host, self.ssl_context)}"
        except OSError:
            pass
        return None

    def close(self) -> None:
        self._cancel_timer()
        self._session_started = self._session_ends = self._reauthenticate_at = None
        sock = self._socket
        if sock is not None:  # wakes a thread blocked in recv (it holds the lock): closing never waits for a timeout
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self._lock:
            if self._socket is not None:
                try:
                    self._socket.close()
                finally:
                    self._socket = None
            self._buffer.clear()
            self._pending.clear()

    @property
    def connected(self) -> bool:
        return self._socket is not None

    @property
    def local_port(self) -> int | None:
        return self._socket.getsockname()[1] if self._socket else None

    # ---------------------------------------------------------------------- requests
    def send(self, api: str | int, version: int, body: dict, *, step: str | None = None,
             malformation: frames.Malformation | None = None, malleable: bool = False,
             correlation_id: int | None = None, expect_response: bool = True,
             response_version: int | None = None) -> Exchange:
        """Send one request without waiting (pipelining); ``receive`` collects the answer.

        ``response_version`` decodes the answer as another version than the request's (a broker
        answers an ApiVersions version it does not know with a v0 body).
        """
        with self._lock:
            self.connect()
            self._keep_session()
            correlation = next(self._correlation) if correlation_id is None else correlation_id
            api_specs = self.codec.registry.api(api)
            frame = frames.encode_request(self.codec, api, version, correlation, body, self.client_id,
                                          malleable=malleable, malformation=malformation)
            exchange = Exchange(connection=self.name, api=api_specs.name, api_key=api_specs.api_key,
                                version=version, correlation_id=correlation, request=body,
                                request_bytes=frame, sent_at=time.time(), step=step)
            exchange.response_version = response_version
            self.transcript.add(exchange)
            try:
                self._open_socket().sendall(frame)
            except OSError as error:
                self._fail(exchange, Disconnected, f"sending failed: {self._tls_alert() or error}")
            if expect_response:
                self._pending[correlation] = exchange
            return exchange

    def _open_socket(self) -> socket.socket:
        """The connection's socket; Disconnected where it was closed (by :meth:`close`, or a failure)."""
        if self._socket is None:
            raise Disconnected(f"{self.name}: the connection is closed")
        return self._socket

    def receive(self, exchange: Exchange, timeout: float | None = None) -> Exchange:
        """Wait for the response to ``exchange`` (others that arrive first are kept for their callers)."""
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        with self._lock:
            while exchange.response is None:
                if exchange.problem:
                    raise _ERRORS[exchange.problem](exchange.diagnosis or exchange.problem, exchange)
                self._read_frame(exchange, deadline, limit)
            return exchange

    def request(self, api: str | int, version: int, body: dict, *, timeout: float | None = None,
                **options) -> Exchange:
        return self.receive(self.send(api, version, body, **options), timeout)

    # ---------------------------------------------------------------------- reading
    def _read_frame(self, waiting: Exchange, deadline: float, limit: float) -> None:
        while True:
            payloads, used = self._split(waiting)
            if payloads:
                del self._buffer[:used]
                for payload in payloads:
                    self._dispatch(payload, waiting)
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail(waiting, ResponseTimeout,
                           f"no response within {limit:.1f}s "
                           f"({len(self._buffer)} bytes of a partial frame received)")
            sock = self._open_socket()
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(READ_SIZE)
            except socket.timeout:
                continue
            except ssl.SSLError as error:  # an alert after the handshake: TLS 1.3 refuses a client certificate here
                self._fail(waiting, Disconnected, f"TLS error while waiting: {tls_diagnosis(error, self.host, self.ssl_context)}")
            except OSError as error:
                self._fail(waiting, Disconnected, f"connection error while waiting: {error}")
            if not chunk:
                self.closed_by_peer = True
                partial = f" after {len(self._buffer)} bytes of a partial frame" if self._buffer else ""
                self._fail(waiting, Disconnected, f"broker closed the connection{partial} "
                                                  "without answering")
            self._buffer += chunk

    def _split(self, waiting: Exchange) -> tuple[list[bytes], int]:
        if len(self._buffer) >= 4:
            size = frames.SIZE.unpack_from(self._buffer, 0)[0]
            if size < 0 or size > MAX_FRAME:
                self._fail(waiting, GarbageResponse, f"impossible frame size {size} "
                                                     f"(first bytes {bytes(self._buffer[:16]).hex()})"
                                                     f"{_tls_hint(self._buffer, self.ssl_context)}"
                                                     f"{_text_hint(self._buffer)}")
        return frames.split_frames(self._buffer)

    def _dispatch(self, payload: bytes, waiting: Exchange) -> None:
        try:
            correlation = frames.peek_correlation_id(payload)
        except DecodeError as error:
            self._fail(waiting, GarbageResponse, f"unreadable response header: {error}")
        exchange = self._pending.pop(correlation, None)
        if exchange is None:
            self._fail(waiting, GarbageResponse,
                       f"response with correlation id {correlation} matches no request in flight "
                       f"(waiting for {waiting.correlation_id}); {len(payload)} bytes: {payload[:32].hex()}")
        exchange.received_at = time.time()
        exchange.response_bytes = frames.SIZE.pack(len(payload)) + payload
        try:
            exchange.response_header, exchange.response, exchange.trailing_bytes = frames.decode_response_with_tail(
                self.codec, exchange.api_key,
                exchange.version if exchange.response_version is None else exchange.response_version, payload)
        except ProtocolError as error:
            exchange.problem = "garbage"
            exchange.decode_path = getattr(error, "path", None) or None
            exchange.diagnosis = (f"{exchange.api} v{exchange.version} response does not decode: {error}; "
                                  f"{len(payload)} bytes: {payload[:64].hex()}")

    def _fail(self, exchange: Exchange, error_type: type[ClientError], diagnosis: str) -> NoReturn:
        """Mark every request in flight as failed, drop the connection and raise for ``exchange``."""
        for pending in [exchange, *self._pending.values()]:
            if pending.response is None and pending.problem is None:
                pending.problem = error_type.problem
                pending.diagnosis = diagnosis
        self.close()
        raise error_type(f"{exchange.api} v{exchange.version} (correlation {exchange.correlation_id}) "
                         f"on {self.name}: {diagnosis}", exchange)


_ERRORS = {"timeout": ResponseTimeout, "disconnected": Disconnected, "garbage": GarbageResponse}


# OpenSSL's verification codes (X509_V_ERR_*) for the broker's certificate
_EXPIRED, _NOT_YET_VALID = 10, 9
_UNTRUSTED = {2, 18, 19, 20, 21}
_WRONG_NAME = {62, 64}
_CA_HINT = "ssl.ca.location or ssl.truststore.location"
_CLIENT_CERTIFICATE = "ssl.certificate.location and ssl.key.location, or ssl.keystore.location"


def tls_diagnosis(error: BaseException, host: str, context: ssl.SSLContext | None = None) -> str:
    """One line saying why TLS failed: the broker's certificate (expired, untrusted, another name), the
    client's (required, refused, expired), or no TLS at all on the other end. ``context`` says whether the
    client showed a certificate (``client_certificate``, set where one was loaded): brokers refuse a missing
    one with various alerts (Java's: bad_certificate)."""
    if isinstance(error, ssl.SSLCertVerificationError):
        code = error.verify_code
        if code == _EXPIRED:
            return "untrusted certificate: the broker's certificate has expired"
        if code == _NOT_YET_VALID:
            return "untrusted certificate: the broker's certificate is not valid yet"
        if code in _UNTRUSTED:
            return (f"untrusted certificate: the broker's certificate is not signed by a CA this client trusts "
                    f"({_CA_HINT})")
        if code in _WRONG_NAME:
            return (f"untrusted certificate: the broker's certificate does not name {host} "
                    "(ssl.endpoint.identification.algorithm=none skips this check)")
        return f"untrusted certificate: {error.verify_message}"
    reason = (getattr(error, "reason", None) or "").upper()
    refused = ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA", "UNSUPPORTED_CERTIFICATE", "HANDSHAKE_FAILURE",
               "CERTIFICATE_UNKNOWN")
    shown = getattr(context, "client_certificate", False)
    if "CERTIFICATE_REQUIRED" in reason or (not shown and "ALERT" in reason and any(name in reason for name in refused)):
        return f"client certificate required: the broker asks for a client certificate ({_CLIENT_CERTIFICATE})"
    if "CERTIFICATE_EXPIRED" in reason:
        return "client certificate refused: the broker says this client's certificate has expired"
    if "ALERT" in reason and any(name in reason for name in refused):
        return "client certificate refused: the broker does not trust this client's certificate (not signed by its CA)"
    if "WRONG_VERSION_NUMBER" in reason or "RECORD_LAYER_FAILURE" in reason or "PACKET_LENGTH_TOO_LONG" in reason:
        return ("TLS on a plaintext port: the other end does not speak TLS "
                "(a PLAINTEXT or SASL_PLAINTEXT listener? check security.protocol)")
    if isinstance(error, (ssl.SSLEOFError, ConnectionResetError, BrokenPipeError, ssl.SSLZeroReturnError)):
        return ("TLS on a plaintext port: the connection was closed during the TLS handshake "
                "(a PLAINTEXT or SASL_PLAINTEXT listener? check security.protocol)")
    if isinstance(error, (socket.timeout, TimeoutError)):
        return ("TLS on a plaintext port: no answer to the TLS handshake "
                "(a PLAINTEXT or SASL_PLAINTEXT listener? check security.protocol)")
    return f"TLS failed: {error}"


def _tls_hint(received: bytes | bytearray, ssl_context) -> str:
    """A TLS record (alert 0x15 or handshake 0x16, version 3.x) where a Kafka frame was due."""
    if ssl_context is None and len(received) >= 2 and received[0] in (0x15, 0x16) and received[1] == 3:
        return ": the broker speaks TLS on this port (security.protocol=SSL or SASL_SSL in --client-config)"
    return ""


def _text_hint(received: bytes | bytearray) -> str:
    """Readable text where a Kafka frame was due: another protocol (an HTTP server, a banner) on this port."""
    head = bytes(received[:40])
    if len(head) >= 4 and all(32 <= byte < 127 or byte in (9, 10, 13) for byte in head):
        first_line = head.decode("ascii").splitlines()[0]
        kind = "an HTTP server" if first_line.startswith("HTTP/") else "not a Kafka broker"
        return f": the answer is text ({first_line!r}): {kind} listens on this port"
    return ""
