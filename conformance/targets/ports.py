"""Ports for the servers the harness starts as other processes (brokers, their controllers, Spark).

Such a port is picked here and bound later, by a child process, seconds after. A port the OS picks with
``bind(0)`` comes from the ephemeral range, the range every outgoing connection on the machine takes its own
local port from: a run opens thousands (the workers' clients, the brokers' own links to each other), and one
of them taking the port in between kills the child with "Address already in use" (a cluster node exited
with status 1 while starting, once in a CI run). So the port comes from below the ephemeral range, where
``connect()`` never goes, and is reserved for a while in a file that every process of the harness reads under
a lock, since parallel workers pick at the same moment.
"""

from __future__ import annotations

import json
import os
import random
import socket
import tempfile
import time
from pathlib import Path

LOWEST_PORT = 20000
"""Below this, the ports people configure their own servers on (9092, 8080, ...)."""

RESERVED_SECONDS = 600.0
"""How long a picked port is kept from other pickers: longer than any child takes to bind it."""

RESERVATIONS_FOLDER = Path("/tmp") if Path("/tmp").is_dir() else Path(tempfile.gettempdir())
"""Where the reservations are kept: one place for the whole machine, as its ports are. Not TMPDIR, which differs
between processes (a test gives the run it starts one of its own)."""

_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_MIN_POOL = 2000  # fewer ports than this below the ephemeral range: let the OS pick, as before


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on, no outgoing connection takes, and no other caller
    of this function in the last :data:`RESERVED_SECONDS` was given."""
    top = _ephemeral_low()
    if top - LOWEST_PORT < _MIN_POOL or not _can_lock():
        return _os_pick(host)
    with _Reservations() as reservations:
        for _ in range(200):
            port = random.randrange(LOWEST_PORT, top)
            if port not in reservations and _bindable(host, port):
                reservations.add(port)
                return port
    return _os_pick(host)  # the pool is crowded beyond belief: the old way beats no port


def _ephemeral_low() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # the usual Linux default, and below macOS's 49152


def _can_lock() -> bool:
    try:
        import fcntl  # noqa: F401  (POSIX only)
    except ImportError:
        return False
    return True


def _os_pick(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: TIME_WAIT is no owner
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


class _Reservations:
    """The ports handed out lately, by every process of this user: one JSON file, read and written under
    an exclusive lock, with expired entries dropped on each write."""

    def __init__(self) -> None:
        self.path = RESERVATIONS_FOLDER / f"conformance-ports-{os.getuid()}.json"
        self._ports: dict[int, float] = {}

    def __enter__(self) -> _Reservations:
        import fcntl

        self._file = open(self.path, "a+", encoding="utf-8")
        fcntl.flock(self._file, fcntl.LOCK_EX)
        self._file.seek(0)
        now = time.time()
        try:
            saved = json.loads(self._file.read() or "{}")
            self._ports = {int(port): until for port, until in saved.items() if float(until) > now}
        except (ValueError, TypeError, AttributeError):
            self._ports = {}  # a torn or foreign file: start afresh rather than fail a run over it
        return self

    def __contains__(self, port: int) -> bool:
        return port in self._ports

    def add(self, port: int) -> None:
        self._ports[port] = time.time() + RESERVED_SECONDS

    def __exit__(self, *exc) -> None:
        try:
            self._file.seek(0)
            self._file.truncate()
            json.dump(self._ports, self._file)
            self._file.flush()
        finally:
            self._file.close()  # closing releases the lock
