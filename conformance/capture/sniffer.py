"""Capture a target's broker ports on loopback into a pcap, one file per case.

``dumpcap`` (from Wireshark's tshark package) is preferred: it captures in its own process,
whereas sniffing inside the harness competes with the code under test for the GIL (a Python
sender managed about 2.9k sends a second with an in-process sniffer). Without dumpcap, scapy's
``L2Socket`` captures in a thread (see :mod:`.scapy_sniffer`).

A capture is live once its socket is open and filtered: dumpcap writes the file header only
after that, so the header's appearance is the signal (its first flush of packets comes much
later, after about 0.7 s). Stopping is confirmed with a marker: a UDP datagram with a fresh
nonce to a port the filter also admits, sent after the last Kafka bytes; once the marker is in
the file, so is everything before it (loopback hands packets to the capture in sending order),
and only then is the capture process stopped.
"""

from __future__ import annotations

import logging
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Protocol, Self

from ..targets.base import stop_process

log = logging.getLogger(__name__)

INTERFACE = "lo"
KERNEL_BUFFER_MIB = 64  # dumpcap's default 2 MiB drops packets during a multi-megabyte produce
SNAPLEN = 262144
MARKER_PREFIX = b"kafka-conformance-capture-marker:"

START_TIMEOUT = 5.0
STOP_TIMEOUT = 5.0
_warned: set[str] = set()


def capture_available() -> str | None:
    """None if a capture can run here, else the reason it cannot."""
    if not sys.platform.startswith("linux"):
        return f"capturing loopback traffic is implemented for Linux only, not {sys.platform}"
    dumpcap_reason = _dumpcap_reason()
    if dumpcap_reason is None:
        return None
    from . import scapy_sniffer

    scapy_reason = scapy_sniffer.availability()
    if scapy_reason is None:
        return None
    return f"{dumpcap_reason}; and {scapy_reason}"


def backend_name() -> str | None:
    """``"dumpcap"`` or ``"scapy"``: what :class:`Capture` will use here, or None."""
    if _dumpcap_reason() is None:
        return "dumpcap"
    from . import scapy_sniffer

    return "scapy" if scapy_sniffer.availability() is None else None


@lru_cache(maxsize=1)
def _dumpcap_reason() -> str | None:
    binary = shutil.which("dumpcap")
    if binary is None:
        return "no dumpcap (apt-get install tshark)"
    # Listing lo's link types opens it: the cheapest real test of the capture privilege.
    try:
        result = subprocess.run([binary, "-L", "-i", INTERFACE], capture_output=True, text=True, timeout=20,
                                check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"dumpcap does not run: {error}"
    if result.returncode != 0:
        detail = " ".join(result.stderr.split())[:300]
        return f"dumpcap cannot capture on {INTERFACE} (needs root or CAP_NET_RAW): {detail}"
    return None


def target_ports(target) -> list[int]:
    """The ports a target's clients talk to (its bootstrap list)."""
    ports = []
    for address in target.bootstrap.split(","):
        port = int(address.rsplit(":", 1)[1])
        if port not in ports:
            ports.append(port)
    return ports


class Capture:
    """Captures TCP traffic on ``ports`` into ``path`` between ``start()`` and ``stop()``.

    Where capture cannot run, ``start()`` logs the reason once per process and returns False;
    the code under test runs as if no capture had been asked for. A ``.pcap`` path gets a pcap
    file, anything else pcapng (dumpcap's own format; Wireshark and :mod:`.pcap` read both).
    """

    def __init__(self, ports: list[int], path: Path | str, *, backend: str | None = None,
                 start_timeout: float = START_TIMEOUT, stop_timeout: float = STOP_TIMEOUT):
        self.ports = list(ports)
        self.path = Path(path)
        self.backend = backend
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self.active = False
        self.unavailable: str | None = None
        self.dropped: int | None = None  # packets the kernel dropped, when the backend says
        self.warnings: list[str] = []
        self._sniffer: Sniffer | None = None
        self._marker: socket.socket | None = None

    def start(self) -> bool:
        if self.active:
            return True
        backend = self.backend or backend_name()
        if backend is None:
            self.unavailable = capture_available() or "no capture backend"
            _warn_once(f"wire capture is off: {self.unavailable}")
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        self.warnings, self.dropped = [], None
        self._marker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._marker.bind(("127.0.0.1", 0))  # bound, so markers are received rather than refused with ICMP
        marker_port = self._marker.getsockname()[1]
        capture_filter = " or ".join([*(f"tcp port {port}" for port in self.ports), f"udp port {marker_port}"])
        sniffer: Sniffer
        if backend == "dumpcap":
            sniffer = DumpcapSniffer(capture_filter, self.path)
        elif backend == "scapy":
            from .scapy_sniffer import ScapySniffer

            sniffer = ScapySniffer(capture_filter, self.ports, marker_port, self.path)
        else:
            raise ValueError(f"unknown capture backend {backend!r} (dumpcap or scapy)")
        self._sniffer = sniffer
        sniffer.start()
        deadline = time.monotonic() + self.start_timeout
        while not sniffer.ready():
            if not sniffer.running() or time.monotonic() > deadline:
                problem = sniffer.stop()
                self._close_marker()
                raise CaptureError(f"{backend} did not start capturing within {self.start_timeout}s: {problem}")
            time.sleep(0.005)
        self.active = True
        return True

    def stop(self) -> Path | None:
        """Stop once everything sent so far is in the file; the file's path, or None if nothing ran."""
        sniffer = self._sniffer
        if not self.active or sniffer is None:
            return None
        self.active = False
        try:
            if not self._confirm(sniffer, self.stop_timeout):
                self.warnings.append(f"the stop marker did not reach the capture within {self.stop_timeout}s; "
                                     "the last packets may be missing")
        finally:
            problem = sniffer.stop()
            self._close_marker()
        self.dropped = sniffer.dropped
        if problem:
            self.warnings.append(problem)
        if self.dropped:
            self.warnings.append(f"the kernel dropped {self.dropped} packets: the capture is incomplete")
        for warning in self.warnings:
            log.warning("capture %s: %s", self.path, warning)
        return self.path

    def _confirm(self, sniffer: Sniffer, timeout: float) -> bool:
        """Send a marker and wait until the sniffer has written it."""
        nonce = MARKER_PREFIX + secrets.token_hex(8).encode()
        if self._marker is None:
            return False
        self._marker.sendto(nonce, self._marker.getsockname())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sniffer.has_seen(nonce):
                return True
            if not sniffer.running():
                return False
            time.sleep(0.005)
        return False

    def _close_marker(self) -> None:
        if self._marker is not None:
            self._marker.close()
            self._marker = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class Sniffer(Protocol):
    """A capture backend: a process or thread writing ``path`` while it runs."""

    dropped: int | None

    def start(self) -> None: ...
    def ready(self) -> bool: ...
    def running(self) -> bool: ...
    def has_seen(self, nonce: bytes) -> bool: ...
    def stop(self) -> str | None: ...


class CaptureError(RuntimeError):
    """A capture that could run here failed to start."""


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


class DumpcapSniffer:
    """dumpcap in its own process; markers are found by reading what it has written so far."""

    def __init__(self, capture_filter: str, path: Path):
        self.capture_filter, self.path = capture_filter, path
        self.dropped: int | None = None
        self._process: subprocess.Popen | None = None
        self._stderr_path = path.with_name(path.name + ".dumpcap.log")
        self._read_offset = 0
        self._tail = b""  # the end of the last read, in case a marker straddles two reads

    def start(self) -> None:
        command = [shutil.which("dumpcap") or "dumpcap", "-q", "-i", INTERFACE, "-f", self.capture_filter,
                   "-s", str(SNAPLEN), "-B", str(KERNEL_BUFFER_MIB), "-w", str(self.path)]
        if self.path.suffix == ".pcap":
            command.insert(1, "-P")
        with open(self._stderr_path, "wb") as stderr:
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=stderr, start_new_session=True)

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def ready(self) -> bool:
        """The file has its header: dumpcap writes it once the capture socket is open and filtered."""
        try:
            return self.path.stat().st_size > 0
        except FileNotFoundError:
            return False

    def has_seen(self, nonce: bytes) -> bool:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._read_offset)
                fresh = handle.read()
        except FileNotFoundError:
            return False
        self._read_offset += len(fresh)
        window = self._tail + fresh
        self._tail = window[-len(nonce):]
        return nonce in window

    def stop(self) -> str | None:
        """Stop dumpcap (it flushes and closes the file on SIGINT); what went wrong, if anything."""
        process, self._process = self._process, None
        if process is None:
            return None
        stop_process(process, signal.SIGINT, STOP_TIMEOUT)
        output = self._stderr_path.read_text(errors="replace") if self._stderr_path.exists() else ""
        self._stderr_path.unlink(missing_ok=True)
        dropped = re.search(r"received/dropped on interface .*: \d+/(\d+)", output)
        self.dropped = int(dropped.group(1)) if dropped else None
        if process.returncode not in (0, -signal.SIGINT):
            return f"dumpcap exited with {process.returncode}: {' '.join(output.split())[-500:]}"
        return None
