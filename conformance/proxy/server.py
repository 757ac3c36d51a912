"""The proxy's I/O: one thread, one selector, non-blocking sockets, a timer heap.

One listening port on 127.0.0.1 per upstream broker address (made the first time a response
advertises that address); each accepted client connection gets its own connection to the broker it
stands for and a :class:`~conformance.proxy.pipe.Pipe` that decides what crosses. A single thread keeps
the proxy cheap on a busy machine and makes shutdown simple: ``stop()`` wakes it, it closes every
socket it owns and exits, and ``stop()`` joins it.

In front of a TLS listener (``tls``), both sides of every connection go through a
:class:`~conformance.proxy.tls.TlsEnd`: the loop reads and writes TLS records, the pipe sees Kafka frames.
A listener may stand for one principal (``identity``): its connections reach the broker with that
principal's client certificate, and the broker addresses their responses carry lead to listeners of the
same principal.

Why one module of over 400 lines: everything here runs on the loop's thread and touches the same socket
state; the decisions (what crosses, TLS, address rewriting) already live in the pipe and its helpers.
"""

from __future__ import annotations

import heapq
import logging
import itertools
import queue
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ..protocol.codec import Codec, default_codec
from .addresses import Rewriter
from .interceptor import Action, Call, Interceptor
from .pipe import CLIENT, CLOSE, DEFER, SEND, UPSTREAM, Effect, Pipe
from .rules import CONTROL, FaultRules
from .tls import ProxyTls, TlsEnd

log = logging.getLogger(__name__)
READ_SIZE = 64 * 1024   # larger reads cost an mmap per recv (CPython allocates the full size first)
EVENT_LOG = 10_000
AWAIT_HELD_MS = 20_000  # await_held's default patience: a request held under a key arrives within a case's timeouts
AWAIT_POLL_S = 0.01


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.split(",")[0].strip().rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


class _Connection:
    def __init__(self, number: int, client: socket.socket, pipe: Pipe):
        self.number = number
        self.client = client
        self.upstream: socket.socket | None = None
        self.pipe = pipe
        self.out = {CLIENT: bytearray(), UPSTREAM: bytearray()}
        self.connecting = True
        self.masks = {CLIENT: selectors.EVENT_READ, UPSTREAM: selectors.EVENT_WRITE}   # as registered
        self.last_at = {CLIENT: 0.0, UPSTREAM: 0.0}
        self.timed = {CLIENT: 0, UPSTREAM: 0}       # sends waiting on a timer, per direction
        self.tls: dict[str, TlsEnd | None] = {CLIENT: None, UPSTREAM: None}
        self.closed = False

    def sock(self, side: str) -> socket.socket:
        found = self.client if side == CLIENT else self.upstream
        assert found is not None, "the upstream socket is made before either side is registered"
        return found


class ProxyServer:
    """A Kafka-aware proxy in front of the broker(s) reachable at ``upstream`` (``host:port``).

    ``fault(name, **args)`` adds a fault (see :mod:`conformance.proxy.rules`); ``interceptors`` (and
    :meth:`add_interceptor`) extend it (see :mod:`conformance.proxy.interceptor`). Faults are consulted
    first, then interceptors in the order given.
    """

    def __init__(self, upstream: str, codec: Codec | None = None, *, host: str = "127.0.0.1",
                 interceptors: list[Interceptor] | tuple = (), tls: ProxyTls | None = None):
        self.upstream = split_address(upstream)
        self.codec = codec or default_codec()
        self.host = host
        self.faults = FaultRules(self.codec)
        self.interceptors: list[Interceptor] = [self.faults, *interceptors]
        self.events: deque[tuple[float, str, str, int, int]] = deque(maxlen=EVENT_LOG)
        self._api_names: dict[int, str] = {}
        self.tls = tls
        self.latency_s = 0.0  # every frame to a client is held back this long (a broker across a network)
        self._rewriters: dict[str | None, Rewriter] = {}   # per identity: rewritten addresses keep to it
        self._selector = selectors.DefaultSelector()
        self._listeners: dict[tuple[str, int, str | None], socket.socket] = {}
        self._upstream_of: dict[socket.socket, tuple[str, int, str | None]] = {}
        self._connections: dict[int, _Connection] = {}
        self._numbers = itertools.count(1)
        self._timers: list = []
        self._timer_ids = itertools.count()
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._running = False
        self._workers: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------------------ public
    def start(self) -> "ProxyServer":
        self._selector.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self.local_address(*self.upstream)
        self._running = True
        self._workers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="proxy-defer")
        self._thread = threading.Thread(target=self._loop, name="kafka-proxy", daemon=True)
        self._thread.start()
        return self

    @property
    def bootstrap(self) -> str:
        host, port = self.local_address(*self.upstream)
        return f"{host}:{port}"

    def local_address(self, host: str, port: int, identity: str | None = None) -> tuple[str, int]:
        """The proxy's listener standing for the broker at ``host:port`` (made on first use), for the
        principal ``identity`` (None: the harness's own) where the proxy speaks TLS to the broker."""
        with self._lock:
            listener = self._listeners.get((host, port, identity))
            if listener is None:
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind((self.host, 0))
                listener.listen(64)
                listener.setblocking(False)
                self._listeners[(host, port, identity)] = listener
                self._upstream_of[listener] = (host, port, identity)
                self._run_soon(lambda: self._selector.register(listener, selectors.EVENT_READ, ("accept", listener)))
            return self.host, listener.getsockname()[1]

    def listeners(self) -> dict[tuple[str, int], tuple[str, int]]:
        """``{upstream address: proxy address}`` for every broker seen so far (the harness's own listeners)."""
        with self._lock:
            return {(host, port): (self.host, sock.getsockname()[1])
                    for (host, port, identity), sock in self._listeners.items() if identity is None}

    def fault(self, name: str, **arguments) -> None:
        """Add a fault (``delay``, ``drop_response``, ...), or ``release`` held requests and responses, or ``clear`` all."""
        if name == "release":
            key = arguments.pop("key", None)
            self.call(lambda: self._release(key))
        elif name == "await_held":
            self._await_held(str(arguments["key"]), float(arguments.get("ms", AWAIT_HELD_MS)) / 1000)
        elif name == "clear":
            self.faults.clear(arguments.get("client"))
        else:
            self.faults.add(name, **arguments)

    def _await_held(self, key: str, timeout: float) -> None:
        """Until something held under ``key`` is in a connection's pipe; TimeoutError after ``timeout`` seconds (the
        request the case holds never came, or was not picked: the case cannot go on as written)."""
        deadline = time.monotonic() + timeout
        while not self.call(lambda: any(connection.pipe.holds(key) for connection in self._connections.values())):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"the proxy held nothing under key {key!r} within {timeout:.0f} s")
            time.sleep(AWAIT_POLL_S)

    def heal(self) -> None:
        """After a case, what it left that could reach the next one goes: the rules kept to no client, and what
        is held under a key no case's own hold uses. A case's own rules (``client``) pick no other case's
        requests, and what its holds keep ends with its connections, so cases running beside it keep theirs."""
        self.faults.clear_shared()
        keep = self.faults.own_keys
        self.call(lambda: self._release(None, keep))

    def add_interceptor(self, interceptor: Interceptor) -> None:
        self.call(lambda: self._add_interceptor(interceptor))

    def drop_connections(self) -> None:
        """Close every proxied connection (after the broker behind restarted, say); listeners stay."""
        def close_all() -> None:
            for connection in list(self._connections.values()):
                self._close(connection)

        self.call(close_all)

    def connection_count(self) -> int:
        return self.call(lambda: len(self._connections))

    def call(self, function: Callable, timeout: float = 10.0):
        """Run ``function`` on the proxy's thread and return its result (its state is only touched there)."""
        if not self._running or threading.current_thread() is self._thread:
            return function()
        done = threading.Event()
        box: list = []

        def run():
            try:
                box.append((True, function()))
            except BaseException as error:  # noqa: BLE001 - handed back to the caller
                box.append((False, error))
            done.set()

        self._run_soon(run)
        if not done.wait(timeout):
            raise TimeoutError("the proxy's thread did not answer")
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        if self._thread is not None:
            self._running = False
            self._wake()
            self._thread.join(10)
            self._thread = None
        if self._workers is not None:
            self._workers.shutdown(wait=True, cancel_futures=True)
            self._workers = None
        for connection in list(self._connections.values()):
            self._close(connection)
        with self._lock:
            for listener in self._listeners.values():
                listener.close()
            self._listeners.clear()
        for sock in (self._wake_r, self._wake_w):
            sock.close()
        self._selector.close()

    def __enter__(self) -> "ProxyServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------------------ loop
    def _run_soon(self, function: Callable) -> None:
        self._inbox.put(function)
        self._wake()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _loop(self) -> None:
        while self._running:
            timeout = None
            if self._timers:
                timeout = max(0.0, self._timers[0][0] - time.monotonic())
            for key, mask in self._selector.select(timeout):
                what, subject = key.data
                try:
                    if what == "wake":
                        self._drain_wake()
                    elif what == "accept":
                        self._accept(subject)
                    else:
                        self._ready(subject, what, mask)
                except OSError:
                    if what in (CLIENT, UPSTREAM):
                        self._close(subject)
            self._run_inbox()
            self._run_timers()

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass

    def _run_inbox(self) -> None:
        while not self._inbox.empty():
            try:
                function = self._inbox.get_nowait()
            except queue.Empty:
                return
            function()

    def _run_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, function = heapq.heappop(self._timers)
            function()

    def _later(self, at: float, function: Callable) -> None:
        heapq.heappush(self._timers, (at, next(self._timer_ids), function))

    # ------------------------------------------------------------------------------ connections
    def _accept(self, listener: socket.socket) -> None:
        try:
            client, _ = listener.accept()
        except BlockingIOError:
            return
        client.setblocking(False)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        host, port, identity = self._upstream_of[listener]
        upstream_address = (host, port)
        number = next(self._numbers)
        local_address = self._local_address_for(identity)
        pipe = Pipe(number, upstream_address, self.codec, self.interceptors, local_address, self._event,
                    self._rewriter_for(identity, local_address))
        connection = _Connection(number, client, pipe)
        if self.tls is not None:
            connection.tls[CLIENT] = TlsEnd(self.tls.server, server_side=True)
            upstream_tls = TlsEnd(self.tls.client_for(identity), server_side=False,
                                  server_hostname=self.tls.server_hostname or host)
            connection.tls[UPSTREAM] = upstream_tls
            connection.out[UPSTREAM] += upstream_tls.outgoing()  # its hello, sent once connected
        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        upstream.setblocking(False)
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.upstream = upstream
        self._connections[number] = connection
        self._selector.register(client, selectors.EVENT_READ, (CLIENT, connection))
        try:
            upstream.connect(upstream_address)
        except BlockingIOError:
            pass
        except OSError:
            self._close(connection)
            return
        self._selector.register(upstream, selectors.EVENT_WRITE, (UPSTREAM, connection))

    def _ready(self, connection: _Connection, side: str, mask: int) -> None:
        if connection.closed:
            return
        sock = connection.sock(side)
        if side == UPSTREAM and connection.connecting and mask & selectors.EVENT_WRITE:
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self._close(connection)
                return
            connection.connecting = False
        if mask & selectors.EVENT_READ:
            data = sock.recv(READ_SIZE)
            if not data:
                self._flush_then_close(connection)
                return
            tls = connection.tls[side]
            if tls is not None:
                try:
                    data = tls.receive(data)
                except ssl.SSLError as error:  # an untrusted certificate, a broken record: as a broker would, cut
                    log.info("proxy: TLS with the %s of connection %d failed: %s", side, connection.number, error)
                    self._close(connection)
                    return
                connection.out[side] += tls.outgoing()  # the handshake's answers, and what it let go
                self._write(connection, side)
                if tls.closed:
                    self._flush_then_close(connection)
                    return
                if not data:
                    return
            pipe = connection.pipe
            try:
                effects = pipe.from_client(data) if side == CLIENT else pipe.from_upstream(data)
            except Exception:  # noqa: BLE001 - one connection's trouble must not stop the proxy for the others
                log.exception("proxy: cutting connection %d, whose bytes from the %s failed", connection.number, side)
                self._close(connection)
                return
            self._apply(connection, effects)
        if not connection.closed and mask & selectors.EVENT_WRITE:   # what a full socket buffer kept back
            self._write(connection, side)

    def _interest(self, connection: _Connection, side: str) -> None:
        sock = connection.sock(side)
        if sock is None or connection.closed:
            return
        mask = selectors.EVENT_READ
        if connection.out[side] or (side == UPSTREAM and connection.connecting):
            mask |= selectors.EVENT_WRITE
        if side == UPSTREAM and connection.connecting:
            mask = selectors.EVENT_WRITE
        if mask != connection.masks[side]:   # an epoll_ctl per frame would cost more than the frame
            connection.masks[side] = mask
            self._selector.modify(sock, mask, (side, connection))

    def _write(self, connection: _Connection, side: str) -> None:
        buffer = connection.out[side]
        if buffer and not (side == UPSTREAM and connection.connecting):
            try:
                sent = connection.sock(side).send(buffer)
            except BlockingIOError:
                sent = 0
            del buffer[:sent]
        self._interest(connection, side)

    def _apply(self, connection: _Connection, effects: list[Effect]) -> None:
        for effect in effects:
            if connection.closed:
                return
            if effect.kind == SEND:
                self._send(connection, effect.to, effect.data, effect.delay_s)
            elif effect.kind == CLOSE:
                self._close(connection)
            elif effect.kind == DEFER:
                assert effect.call is not None and effect.work is not None, "a DEFER effect carries both"
                self._defer(connection, effect.call, effect.work)

    def _send(self, connection: _Connection, side: str, data: bytes, delay_s: float) -> None:
        if side == CLIENT:
            delay_s += self.latency_s
        now = time.monotonic()
        at = max(now + delay_s, connection.last_at[side])   # never overtake an earlier delayed frame
        connection.last_at[side] = at
        if at <= now and not connection.timed[side]:
            connection.out[side] += self._encoded(connection, side, data)
            self._write(connection, side)
            return
        connection.timed[side] += 1

        def due():
            connection.timed[side] -= 1
            if not connection.closed:
                connection.out[side] += self._encoded(connection, side, data)
                self._write(connection, side)

        self._later(at, due)

    @staticmethod
    def _encoded(connection: _Connection, side: str, data: bytes) -> bytes:
        """``data`` as it goes on the wire to ``side``: as is, or TLS records (in the order sent)."""
        tls = connection.tls[side]
        if tls is None:
            return data
        tls.send(data)
        return tls.outgoing()

    def _local_address_for(self, identity: str | None) -> Callable[[str, int], tuple[str, int]]:
        if identity is None:
            return self.local_address
        return lambda host, port: self.local_address(host, port, identity)

    def _rewriter_for(self, identity: str | None, local_address: Callable[[str, int], tuple[str, int]]) -> Rewriter:
        rewriter = self._rewriters.get(identity)
        if rewriter is None:
            rewriter = self._rewriters[identity] = Rewriter(self.codec, local_address)
        return rewriter

    def _defer(self, connection: _Connection, call: Call, work: Callable[[], Action]) -> None:
        def finished(future):
            try:
                action = future.result()
            except Exception:  # noqa: BLE001 - an interceptor that failed cuts the connection, as a broker bug would
                log.exception("proxy: deferred work for %s failed; cutting connection %d", call.api, connection.number)
                action = None
                failed = True
            else:
                failed = False

            def resume():
                if connection.closed:
                    return
                if failed:
                    self._close(connection)
                else:
                    self._apply(connection, connection.pipe.deferred_done(call, action))

            self._run_soon(resume)

        assert self._workers is not None, "deferred work only arrives while the proxy runs (start made the pool)"
        self._workers.submit(work).add_done_callback(finished)

    def _release(self, key: str | None, keep: frozenset = frozenset()) -> None:
        for connection in list(self._connections.values()):
            self._apply(connection, connection.pipe.release(key, keep))

    def _add_interceptor(self, interceptor: Interceptor) -> None:
        self.interceptors.append(interceptor)
        for connection in self._connections.values():
            connection.pipe.interceptors.append(interceptor)

    def _flush_then_close(self, connection: _Connection) -> None:
        for side in (CLIENT, UPSTREAM):
            sock = connection.sock(side)
            if connection.out[side] and sock is not None and not connection.connecting:
                try:
                    sock.setblocking(True)
                    sock.settimeout(1.0)
                    sock.sendall(connection.out[side])
                except OSError:
                    pass
        self._close(connection)

    def _close(self, connection: _Connection) -> None:
        if connection.closed:
            return
        connection.closed = True
        connection.pipe.closed = True
        for sock in (connection.client, connection.upstream):
            if sock is None:
                continue
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError):
                pass
            sock.close()
        self._connections.pop(connection.number, None)

    def _event(self, what: str, call: Call) -> None:
        """``events``: (time, what happened, API name, connection, position), the last EVENT_LOG of them."""
        name = self._api_names.get(call.api_key)
        if name is None:
            name = self._api_names[call.api_key] = call.api
        self.events.append((time.time(), what, name, call.connection, call.index))


__all__ = ["ProxyServer", "CONTROL"]
