"""Per-exchange time of the harness's client and of the fault proxy against a bare socket round trip.

``python -m conformance.bench.proxy [--target kafka] [--exchanges 2000] [--api ApiVersions|Metadata]``
starts the target once, then alternates rounds of the same request: a ready-made frame over a bare
socket to the broker (direct), the harness's own client (encoding, decoding and the transcript included),
a bare socket through the proxy (in this process, as the harness runs it; no fault installed) and, for
scale, through a bare byte relay. It prints the median time per exchange of each and the ratios to the
direct path, measured side by side in one run.
"""

from __future__ import annotations

import argparse
import selectors
import socket
import statistics
import threading
import time
from typing import Any, Protocol

from ..client.connection import Connection
from ..client.transcript import Transcript
from ..protocol import frames
from ..protocol.codec import default_codec
from ..proxy.server import ProxyServer, split_address

REQUESTS: dict[str, tuple[int, dict[str, Any]]] = {
    "ApiVersions": (3, {"client_software_name": "bench", "client_software_version": "1"}),
    "Metadata": (12, {"topics": [], "allow_auto_topic_creation": False}),
}


class _Relay:
    """A byte relay with nothing Kafka-aware in it (one thread, one selector, like the proxy): the floor
    any Python proxy in this process pays, so the proxy's own cost can be told from the extra hop's."""

    def __init__(self, upstream: str):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.upstream = split_address(upstream)
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._run, name="bench-relay", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        client, _ = self.listener.accept()
        broker = socket.create_connection(self.upstream)
        for sock in (client, broker):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = {client: broker, broker: client}
        with selectors.DefaultSelector() as selector:
            for sock in peer:
                selector.register(sock, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    ready = key.fileobj
                    assert isinstance(ready, socket.socket)
                    data = ready.recv(65536)
                    if not data:
                        for sock in peer:
                            sock.close()
                        self.listener.close()
                        return
                    peer[ready].sendall(data)


class _Socket:
    def __init__(self, address: str):
        self.sock = socket.create_connection(split_address(address), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray()

    def exchange(self, frame: bytes) -> None:
        self.sock.sendall(frame)
        while True:
            found, used = frames.split_frames(self.buffer)
            if found:
                del self.buffer[:used]
                return
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


class _Path(Protocol):
    def exchange(self, frame: bytes) -> None: ...
    def close(self) -> None: ...


def per_exchange(connection: _Path, frame: bytes, count: int) -> float:
    """Seconds per request-response exchange over ``connection``, averaged over ``count``."""
    started = time.perf_counter()
    for _ in range(count):
        connection.exchange(frame)
    return (time.perf_counter() - started) / count


class _Harness:
    """The harness's own client: encode the body, send, read, decode, keep the exchange in a transcript
    (cleared between rounds, as a case's transcript ends with the case)."""

    def __init__(self, address: str, api: str, version: int, body: dict):
        host, port = split_address(address)
        self.connection = Connection(host, port, default_codec(), Transcript())
        self.request = (api, version, body)

    def exchange(self, frame: bytes) -> None:
        self.connection.request(*self.request)

    def close(self) -> None:
        self.connection.close()
        self.connection.transcript.exchanges.clear()


def measure(bootstrap: str, exchanges: int, api: str, rounds: int = 10) -> dict:
    """Median seconds per exchange over ``rounds`` alternating rounds: a bare socket sending a ready frame
    (direct), the harness's client (encode, send, decode, transcript), a bare byte relay and the proxy."""
    version, body = REQUESTS[api]
    frame = frames.encode_request(default_codec(), api, version, 1, body)
    with ProxyServer(bootstrap) as proxy:
        relay = _Relay(bootstrap)
        harness = _Harness(bootstrap, api, version, body)
        paths: dict[str, _Path] = {"direct": _Socket(bootstrap), "harness": harness,
                                   "relay": _Socket(relay.address), "proxied": _Socket(proxy.bootstrap)}
        try:
            for path in paths.values():
                per_exchange(path, frame, 50)    # warm every path up (connection set-up, broker caches)
            each = max(1, exchanges // rounds)
            times: dict[str, list[float]] = {name: [] for name in paths}
            for _ in range(rounds):
                for name, path in paths.items():
                    times[name].append(per_exchange(path, frame, each))
                harness.connection.transcript.exchanges.clear()
        finally:
            for path in paths.values():
                path.close()
            relay.thread.join(5)
    median = {name: statistics.median(values) for name, values in times.items()}
    return {"api": api, "exchanges": each * rounds, **{f"{name}_us": value * 1e6 for name, value in median.items()},
            "ratio": median["proxied"] / median["direct"], "relay_ratio": median["relay"] / median["direct"],
            "harness_ratio": median["harness"] / median["direct"]}


def _target(spec: str):
    """The target named ``spec``, from the target kinds the plugins register (a run's own plugin manager)."""
    from ..extension import Extensions
    from ..targets.registry import resolve

    return resolve(spec, Extensions.for_run().target_kinds())


def main(argv: list[str] | None = None) -> int:
    """Time exchanges with the broker directly and through the fault proxy, and print the cost the proxy adds; the exit
    status."""
    parser = argparse.ArgumentParser(prog="python -m conformance.bench.proxy", description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="kafka", help="target spec to start, or HOST:PORT of a running broker")
    parser.add_argument("--exchanges", type=int, default=2000)
    parser.add_argument("--api", choices=sorted(REQUESTS), action="append")
    arguments = parser.parse_args(argv)
    target = _target(arguments.target)
    target.start()
    try:
        print(f"target {arguments.target} at {target.bootstrap}; {arguments.exchanges} exchanges per path, "
              "alternating rounds, median per exchange")
        print(f"{'request':<12} {'direct µs':>10} {'harness µs':>11} {'ratio':>6}   {'proxied µs':>11} {'ratio':>6}   "
              f"{'bare relay µs':>13} {'ratio':>6}")
        for api in arguments.api or ["ApiVersions", "Metadata"]:
            result = measure(target.bootstrap, arguments.exchanges, api)
            print(f"{api:<12} {result['direct_us']:>10.1f} {result['harness_us']:>11.1f} {result['harness_ratio']:>5.2f}x   "
                  f"{result['proxied_us']:>11.1f} {result['ratio']:>5.2f}x   "
                  f"{result['relay_us']:>13.1f} {result['relay_ratio']:>5.2f}x")
    finally:
        target.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
